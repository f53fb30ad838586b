package fleet

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// openHostFleet is the live view's fleet source (the processes of the host
// open on screen only) over fp.
func openHostFleet(t *testing.T, fp *fakeProm) (*Source, *sampler.Sampler, *clock) {
	t.Helper()
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	src, err := Open(context.Background(), Config{URL: srv.URL, Interval: time.Hour, Timeout: 5 * time.Second, Now: clk.now, OpenHostProcesses: true})
	if err != nil {
		t.Fatal(err)
	}
	src.WaitFirst(context.Background())
	s, err := sampler.New(src, sampler.Config{Interval: 5 * time.Second, History: time.Hour, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return src, s, clk
}

// asked are the queries fp was asked since the last call.
func (f *fakeProm) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queries
	f.queries = nil
	return q
}

// processQueries are those of qs that read per-process series.
func processQueries(qs []string) []string {
	var out []string
	for _, q := range qs {
		if strings.Contains(q, "vramtop_process_gpu_memory") {
			out = append(out, q)
		}
	}
	return out
}

// procsOfHostA are the process series of fp.fleet's hostA, answered to the
// query of hostA's processes alone.
func procsOfHostA(fp *fakeProm) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.series[ProcsQuery(`hostname="hostA"`)] = fp.series[QueryProcs]
}

// TestFleetOverviewReadsNoProcesses: the list of hosts asks Prometheus for
// no per-process series, and its devices say their processes are not read
// (not that they have none); opening a host asks for that host's
// processes alone, at once and on each round while it stays open; going
// back to the list stops asking.
func TestFleetOverviewReadsNoProcesses(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	procsOfHostA(fp)
	src, s, clk := openHostFleet(t, fp)
	snap, _ := next(src, s, clk)
	if q := processQueries(fp.asked()); len(q) != 0 {
		t.Fatalf("the list of hosts asked for process series: %q", q)
	}
	a0, _ := snap.Device("hostA:0")
	if !a0.ProcessesNotRead || len(a0.Processes) != 0 || a0.Unattributed != nil || a0.MemoryUsed != 20*gib {
		t.Errorf("hostA:0 on the list of hosts: not read %v, %d processes, unattributed %v, used %d; want not read, none, unknown, 20 GiB",
			a0.ProcessesNotRead, len(a0.Processes), a0.Unattributed, a0.MemoryUsed)
	}
	if b0, _ := snap.Device("hostB:0"); b0.ProcessesNotRead || !b0.NoProcessList {
		t.Errorf("hostB:0 (dcgm-exporter): not read %v, no process list %v; want it said it has no list", b0.ProcessesNotRead, b0.NoProcessList)
	}

	// Opened: a round at once, the host's processes only, and the
	// sampler woken for it.
	src.SetOpenHost("hostA")
	select {
	case <-src.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("no round within 10 s of opening a host (the interval is an hour)")
	}
	want := []string{ProcsQuery(`hostname="hostA"`)}
	if q := processQueries(fp.asked()); fmt.Sprint(q) != fmt.Sprint(want) {
		t.Fatalf("on opening hostA the process queries were %q, want %q", q, want)
	}
	snap, _ = next(src, s, clk)
	a0, _ = snap.Device("hostA:0")
	if a0.ProcessesNotRead || len(a0.Processes) != 2 || a0.Unattributed == nil || *a0.Unattributed != 10*gib {
		t.Errorf("hostA:0 opened: not read %v, %d processes, unattributed %v; want read, 2, 10 GiB", a0.ProcessesNotRead, len(a0.Processes), a0.Unattributed)
	}
	// Refreshed while open.
	fp.asked()
	next(src, s, clk)
	if q := processQueries(fp.asked()); fmt.Sprint(q) != fmt.Sprint(want) {
		t.Errorf("a round while hostA is open asked %q, want %q", q, want)
	}

	src.SetOpenHost("")
	snap, _ = next(src, s, clk)
	if q := processQueries(fp.asked()); len(q) != 0 {
		t.Errorf("back on the list of hosts, process queries %q", q)
	}
	if a0, _ := snap.Device("hostA:0"); !a0.ProcessesNotRead || len(a0.Processes) != 0 {
		t.Errorf("hostA:0 closed: not read %v, %+v; want not read, none (and none exited)", a0.ProcessesNotRead, a0.Processes)
	}
}

// TestFleetOpenHostDown: in the live view a host that goes down while it
// is open keeps its last processes, not exited, with their age; one that
// went down while it was not open has its processes read back, as they
// were when it was last seen, once it is opened.
func TestFleetOpenHostDown(t *testing.T) {
	for _, openFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("open before it went down %v", openFirst), func(t *testing.T) {
			fp := newFakeProm()
			fp.fleet(20 * gib)
			procsOfHostA(fp)
			fp.mu.Lock()
			fp.prefixed[lookBackProcs] = fp.series[QueryProcs]
			fp.mu.Unlock()
			src, s, clk := openHostFleet(t, fp)
			if openFirst {
				src.SetOpenHost("hostA")
				<-src.Wake()
			}
			next(src, s, clk)
			seenAt := clk.t

			dropHost(fp, "hostA")
			fp.set(QueryTargets, fakeSeries{map[string]string{"__name__": "up", "job": "vramtop", "instance": "10.0.0.1:9400"}, 0})
			snap, _ := next(src, s, clk)
			a0, _ := snap.Device("hostA:0")
			if !IsHostDown(a0) || a0.MemoryUsed != 20*gib {
				t.Fatalf("hostA:0 down: error %q, used %d", a0.Err, a0.MemoryUsed)
			}
			if !openFirst {
				if !a0.ProcessesNotRead || len(a0.Processes) != 0 || a0.Unattributed != nil {
					t.Fatalf("hostA:0 down, never opened: not read %v, %+v, unattributed %v; want not read", a0.ProcessesNotRead, a0.Processes, a0.Unattributed)
				}
				src.SetOpenHost("hostA")
				<-src.Wake()
				snap, _ = next(src, s, clk)
				a0, _ = snap.Device("hostA:0")
			}
			var pids []string
			for _, p := range a0.Processes {
				pids = append(pids, fmt.Sprintf("%d exited=%v", p.PID, p.Exited))
			}
			if got := strings.Join(pids, ", "); got != "4242 exited=false, 77 exited=false" || a0.ProcessesNotRead {
				t.Errorf("hostA:0 down and open: processes %s (not read %v); want its last two, live", got, a0.ProcessesNotRead)
			}
			if a0.Unattributed == nil || *a0.Unattributed != 10*gib || !a0.ListedAt.Equal(seenAt) {
				t.Errorf("hostA:0 down and open: unattributed %v, listed at %v; want 10 GiB, when last seen (%v)", a0.Unattributed, a0.ListedAt, seenAt)
			}

			// Back: each process once, live.
			fp.fleet(30 * gib)
			procsOfHostA(fp)
			fp.set(QueryTargets)
			snap, _ = next(src, s, clk)
			if a0, _ := snap.Device("hostA:0"); a0.Err != "" || len(a0.Processes) != 2 || a0.Processes[0].Exited || a0.Processes[1].Exited {
				t.Errorf("hostA:0 back: error %q, processes %+v; want its 2, live", a0.Err, a0.Processes)
			}
		})
	}
}

// TestFleetFreeIsWhatIsLeft: a round asks for used memory, not free; the
// total and reserved memory come with the devices' labels, and free memory
// is what is left, as NVML counts it.
func TestFleetFreeIsWhatIsLeft(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	drop(fp, func(l map[string]string) bool {
		n := l["__name__"]
		return n == "vramtop_gpu_memory_free_bytes" || n == "vramtop_gpu_memory_reserved_bytes" ||
			n == "vramtop_gpu_memory_total_bytes" && l["UUID"] == "" // in the values; QueryDevices' have labels
	})
	fp.set(QueryReserved, fakeSeries{map[string]string{"hostname": "hostA", "gpu": "0"}, 616 * mib})
	srv := httptest.NewServer(fp)
	defer srv.Close()
	_, s, _ := newFleet(t, srv.URL, 0)
	snap := s.Once()
	d, _ := snap.Device("hostA:0")
	if d.MemoryTotal != 80*gib || d.MemoryReserved == nil || *d.MemoryReserved != 616*mib || d.MemoryFree != 80*gib-616*mib-20*gib {
		t.Errorf("hostA:0 total %d, reserved %v, free %d; want 80 GiB, 616 MiB, 80 GiB - 616 MiB - 20 GiB", d.MemoryTotal, d.MemoryReserved, d.MemoryFree)
	}
	if d, _ := snap.Device("hostA:1/2"); d.MemoryTotal != 40*gib || d.MemoryFree != 30*gib || d.MemoryReserved != nil {
		t.Errorf("hostA:1/2 total %d, free %d, reserved %v; want 40 GiB, 30 GiB, none", d.MemoryTotal, d.MemoryFree, d.MemoryReserved)
	}
	if d, _ := snap.Device("hostB:0"); d.MemoryFree != 14000*mib {
		t.Errorf("hostB:0 (dcgm-exporter) free %d, want its own 14000 MiB", d.MemoryFree)
	}
}

// dcgmQueries are those of qs that read dcgm-exporter's memory series.
func dcgmQueries(qs []string) []string {
	var out []string
	for _, q := range qs {
		if strings.Contains(q, "DCGM_FI_DEV_FB_(") {
			out = append(out, q)
		}
	}
	return out
}

// TestFleetDCGMOfHostsRunningBothNotReadEachRound: dcgm-exporter's series
// of the hosts that run vramtop too are not asked for on every round: the
// rounds between those that read the devices' labels ask for those of the
// scrape targets with GPUs that only dcgm-exporter exports, and none when
// there are none; those GPUs' figures are read each round all the same.
func TestFleetDCGMOfHostsRunningBothNotReadEachRound(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	src, s, clk := openHostFleet(t, fp)
	fp.asked()
	fp.mu.Lock()
	for i, x := range fp.series[QueryDCGM] {
		if x.labels["hostname"] == "hostB" && x.labels["__name__"] == "DCGM_FI_DEV_FB_USED" {
			fp.series[QueryDCGM][i].value = 4097
		}
	}
	fp.mu.Unlock()
	snap, _ := next(src, s, clk)
	want := []string{DCGMQuery(`instance=~"10\\.0\\.0\\.2:9400"`)}
	if q := dcgmQueries(fp.asked()); fmt.Sprint(q) != fmt.Sprint(want) {
		t.Errorf("a round asked %q for dcgm-exporter's series, want those of hostB's target only: %q", q, want)
	}
	if b0, _ := snap.Device("hostB:0"); b0.MemoryUsed != 4097*mib {
		t.Errorf("hostB:0 used %d, want this round's 4097 MiB", b0.MemoryUsed)
	}
	if a0, _ := snap.Device("hostA:0"); a0.NoProcessList || a0.MemoryUsed != 20*gib {
		t.Errorf("hostA:0 (vramtop and dcgm-exporter): no process list %v, used %d; want vramtop's 20 GiB", a0.NoProcessList, a0.MemoryUsed)
	}

	// No host left with GPUs of dcgm-exporter's only: no such query.
	fp2 := newFakeProm()
	fp2.fleet(20 * gib)
	drop(fp2, func(l map[string]string) bool { return l["hostname"] == "hostB" })
	src2, s2, clk2 := openHostFleet(t, fp2)
	fp2.asked()
	next(src2, s2, clk2)
	if q := dcgmQueries(fp2.asked()); len(q) != 0 {
		t.Errorf("with every GPU exported by vramtop a round asked %q", q)
	}
}
