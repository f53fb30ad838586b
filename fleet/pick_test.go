package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

func choiceLines(cs []Choice) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return strings.Join(out, " ")
}

// The fake fleet: hostA:0 (an H100, 59.4 GiB free, 42% busy, two
// processes), hostA:1 in MIG mode with instance 2 (MIG-a1-2, 30 GiB free),
// hostB:0 seen through dcgm-exporter alone (13.7 GiB free, 73% busy).
func TestChooseAcrossHosts(t *testing.T) {
	_, src, s, _ := fakeFleet(t)
	snap := s.Once()
	half := 50.0
	for _, c := range []struct {
		name string
		opt  advisor.PickOptions
		uuid bool
		want string
		err  string
	}{
		{"the freest GPU of any host", advisor.PickOptions{}, false, "hostA:0", ""},
		{"freest first, a MIG instance by its UUID, never its parent", advisor.PickOptions{Count: 3}, false, "hostA:0 hostA:MIG-a1-2 hostB:0", ""},
		{"--uuid", advisor.PickOptions{Count: 2}, true, "hostA:GPU-a0 hostA:MIG-a1-2", ""},
		{"--min-free", advisor.PickOptions{MinFree: 20 * gib, Count: 2}, false, "hostA:0 hostA:MIG-a1-2", ""},
		{"--min-free too much for --count", advisor.PickOptions{MinFree: 40 * gib, Count: 2}, false, "", "2 GPUs asked, only 1 has at least 40 GiB free"},
		{"--max-util leaves the busy host out", advisor.PickOptions{Count: 3, MaxUtil: &half}, false, "", "only 2 have free memory and at most 50% utilization; 1 more with the memory is busier"},
		{"four asked, three there", advisor.PickOptions{Count: 4}, false, "", "4 GPUs asked, only 3 have free memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(snap, src.Claims(), c.opt, c.uuid)
			if c.err != "" {
				if !errors.Is(err, advisor.ErrTooFewGPUs) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || choiceLines(got) != c.want {
				t.Fatalf("chose %q (%v), want %q", choiceLines(got), err, c.want)
			}
		})
	}
}

// A GPU its host's serve says is claimed is skipped, and a pick that comes
// short says who claimed it.
func TestChooseSkipsClaimed(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	fp.set(QueryClaims,
		fakeSeries{lbl("vramtop_gpu_claimed", "hostname", "hostA", "gpu", "0", "user", "alice"), 1},
		fakeSeries{lbl("vramtop_gpu_claimed_bytes", "hostname", "hostA", "gpu", "0", "user", "alice"), 40 * gib},
		// A GPU no host lists: nothing to skip.
		fakeSeries{lbl("vramtop_gpu_claimed", "hostname", "hostC", "gpu", "0"), 1},
	)
	snap, _ := next(src, s, clk)
	cl := src.Claims()
	if len(cl) != 1 || cl["hostA:0"] != (Claim{User: "alice", Bytes: 40 * gib}) {
		t.Fatalf("claims %+v, want hostA:0's", cl)
	}
	got, err := Choose(snap, cl, advisor.PickOptions{Count: 2}, false)
	if err != nil || choiceLines(got) != "hostA:MIG-a1-2 hostB:0" {
		t.Errorf("chose %q (%v), want the claimed hostA:0 skipped", choiceLines(got), err)
	}
	_, err = Choose(snap, cl, advisor.PickOptions{Count: 3}, false)
	if err == nil || !strings.HasSuffix(err.Error(), "3 GPUs asked, only 2 have free memory; hostA:0 claimed by alice (40 GiB)") {
		t.Errorf("error %v, want it to say hostA:0 is claimed, by whom", err)
	}
	// The live view says who claimed it, and how much; nothing of the others.
	for _, d := range snap.Devices {
		want := ""
		if d.ID == "hostA:0" {
			want = "alice, 40 GiB"
		}
		if got := src.ClaimText(d); got != want {
			t.Errorf("the live view says %q of %s, want %q", got, d.ID, want)
		}
	}
	// The claim ends: the GPU is back.
	fp.set(QueryClaims)
	snap, _ = next(src, s, clk)
	if got := src.ClaimText(snap.Devices[0]); got != "" {
		t.Errorf("after the claim the live view says %q of %s", got, snap.Devices[0].ID)
	}
	if got, err := Choose(snap, src.Claims(), advisor.PickOptions{}, false); err != nil || choiceLines(got) != "hostA:0" {
		t.Errorf("after the claim: %q (%v), want hostA:0", choiceLines(got), err)
	}
}

// A host that is down keeps its last values in the fleet, but none of
// its GPUs is picked, however free it was.
func TestChooseNeverPicksDownHosts(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	dropHost(fp, "hostA")
	fp.set(QueryTargets, fakeSeries{map[string]string{"__name__": "up", "job": "vramtop", "instance": "10.0.0.1:9400"}, 0})
	snap, _ := next(src, s, clk)
	if d, ok := snap.Device("hostA:0"); !ok || !IsHostDown(d) || d.MemoryFree < 50*gib {
		t.Fatalf("hostA:0 %+v: want it listed, down, with its last 59 GiB free", d)
	}
	got, err := Choose(snap, src.Claims(), advisor.PickOptions{}, false)
	if err != nil || choiceLines(got) != "hostB:0" {
		t.Errorf("chose %q (%v), want hostB:0: hostA is down", choiceLines(got), err)
	}
	_, err = Choose(snap, src.Claims(), advisor.PickOptions{Count: 2}, false)
	if err == nil || !strings.Contains(err.Error(), "only 1 has free memory; 1 host down (hostA)") {
		t.Errorf("error %v, want it to say hostA is down", err)
	}
	// The exporter of a host says it has no recent sample (vramtop_up 0):
	// its values are old, its GPUs not picked either.
	fp.fleet(20 * gib)
	fp.set(QueryTargets)
	fp.mu.Lock()
	for i, x := range fp.series[QueryValues] {
		if x.labels["__name__"] == "vramtop_up" {
			fp.series[QueryValues][i].value = 0
		}
	}
	fp.mu.Unlock()
	snap, _ = next(src, s, clk)
	if got, err := Choose(snap, src.Claims(), advisor.PickOptions{}, false); err != nil || choiceLines(got) != "hostB:0" {
		t.Errorf("with hostA's vramtop_up 0: chose %q (%v), want hostB:0", choiceLines(got), err)
	}
}

// While Prometheus cannot be read, the fleet's values are the last ones:
// nothing is picked, and the error says why.
func TestChooseWhilePrometheusFails(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	fp.fail(QueryValues, true)
	snap, _ := next(src, s, clk)
	if len(snap.Devices) == 0 || snap.Err == "" {
		t.Fatalf("want the last devices and an error, got %d devices, error %q", len(snap.Devices), snap.Err)
	}
	_, err := Choose(snap, src.Claims(), advisor.PickOptions{}, false)
	if err == nil || !strings.Contains(err.Error(), "query timed out") {
		t.Errorf("error %v, want Prometheus's", err)
	}
	if src.Err() == nil {
		t.Error("Err is nil after a failed round")
	}
}

// A Prometheus that scrapes no GPU exporter: one error that says so.
func TestChooseNoGPUs(t *testing.T) {
	srv := httptest.NewServer(newFakeProm())
	defer srv.Close()
	src, s, _ := newFleet(t, srv.URL, 0)
	src.WaitFirst(context.Background())
	_, err := Choose(s.Once(), src.Claims(), advisor.PickOptions{}, false)
	if !errors.Is(err, ErrNoGPUs) || !strings.Contains(err.Error(), "does it scrape them?") {
		t.Errorf("error %v", err)
	}
}

// Pickable's note is bounded, whatever the size of the fleet.
func TestPickableNoteIsBounded(t *testing.T) {
	snap := sampler.Snapshot{}
	claimed := map[string]Claim{}
	for i := range 1000 {
		host := "host" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		id := host + ":" + string(rune('0'+i%10))
		d := sampler.Device{ID: id, Hostname: host, MemoryTotal: 80 * gib, MemoryFree: gib}
		switch i % 2 {
		case 0:
			d.Err = HostDownPrefix + "no series since 12:00:00"
		default:
			claimed[id] = Claim{User: "u"}
		}
		snap.Devices = append(snap.Devices, d)
	}
	view, note := Pickable(snap, claimed)
	if len(view.Devices) != 0 || len(note) > 1000 || !strings.Contains(note, "more GPUs not free to pick") || !strings.Contains(note, "hosts down (") {
		t.Errorf("%d devices left, note of %d bytes: %s", len(view.Devices), len(note), note)
	}
}

// Where ProcessesMatter names no host, the processes not read cannot
// change a pick: the same GPUs, or the same error, as with every
// process known; where it names hosts, reading theirs is enough.
func TestProcessesMatterIsEnough(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	util := []*float64{nil, sampler.Ptr(10.0), sampler.Ptr(90.0)}
	for round := range 3000 {
		n := 2 + rng.IntN(10)
		var known, unread sampler.Snapshot
		for i := range n {
			d := sampler.Device{ID: fmt.Sprintf("h%d:%d", i/3, i%3), Hostname: fmt.Sprintf("h%d", i/3), Index: i % 3,
				MemoryTotal: 80 * gib, MemoryFree: uint64(rng.IntN(4)) * 10 * gib, UtilizationPercent: util[rng.IntN(3)]}
			for range rng.IntN(3) {
				d.Processes = append(d.Processes, sampler.Process{PID: uint32(rng.IntN(1000))})
			}
			known.Devices = append(known.Devices, d)
			d.Processes, d.ProcessesNotRead = nil, true
			unread.Devices = append(unread.Devices, d)
		}
		opt := advisor.PickOptions{Count: 1 + rng.IntN(3), MinFree: uint64(rng.IntN(3)) * 10 * gib, AllHosts: true}
		if rng.IntN(2) == 0 {
			opt.MaxUtil = sampler.Ptr(50.0)
		}
		hosts := ProcessesMatter(unread, opt)
		// What a pick reads: the processes of those hosts.
		for i := range unread.Devices {
			if slices.Contains(hosts, unread.Devices[i].Hostname) {
				unread.Devices[i].Processes, unread.Devices[i].ProcessesNotRead = known.Devices[i].Processes, false
			}
		}
		want, wantErr := advisor.PickDevices(known, opt)
		got, gotErr := advisor.PickDevices(unread, opt)
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("round %d, %+v, hosts read %v: picked %v (%v), want %v (%v)", round, opt, hosts, got, gotErr, want, wantErr)
		}
	}
}
