package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

// fakeProm answers /api/v1/query and /api/v1/query_range from canned
// series, as Prometheus's HTTP API does.
type fakeProm struct {
	mu      sync.Mutex
	series  map[string][]fakeSeries // by query
	ranges  map[string][]fakeRange  // by query
	failing map[string]bool         // queries answered with an error
	// prefixed answers the queries that start with a key, when no
	// exact one matches.
	prefixed map[string][]fakeSeries
	queries  []string
}

type fakeSeries struct {
	labels map[string]string
	value  float64
}

type fakeRange struct {
	labels map[string]string
	points [][2]float64 // unix seconds, value
}

func newFakeProm() *fakeProm {
	return &fakeProm{series: map[string][]fakeSeries{}, ranges: map[string][]fakeRange{}, failing: map[string]bool{}, prefixed: map[string][]fakeSeries{}}
}

func (f *fakeProm) set(q string, s ...fakeSeries) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series[q] = s
}

func (f *fakeProm) fail(q string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing[q] = on
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	w.Header().Set("Content-Type", "application/json")
	dcgm, dcgmOf := f.dcgmOf(q)
	if f.failing[q] || dcgm && f.failing[QueryDCGM] {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`)
		return
	}
	type res struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value,omitempty"`
		Values [][]any           `json:"values,omitempty"`
	}
	out := []res{}
	kind := "vector"
	switch r.URL.Path {
	case "/api/v1/query":
		answer, ok := f.series[q]
		if dcgm {
			answer, ok = dcgmOf, true
		}
		for p, ss := range f.prefixed {
			if !ok && strings.HasPrefix(q, p) {
				answer = ss
			}
		}
		for _, s := range answer {
			out = append(out, res{Metric: s.labels, Value: []any{1764417600.5, fmt.Sprint(s.value)}})
		}
	case "/api/v1/query_range":
		kind = "matrix"
		for _, s := range f.ranges[q] {
			rr := res{Metric: s.labels}
			for _, p := range s.points {
				rr.Values = append(rr.Values, []any{p[0], fmt.Sprint(p[1])})
			}
			out = append(out, rr)
		}
	default:
		http.NotFound(w, r)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": kind, "result": out}})
}

// dcgmOf answers DCGMQuery(`instance=~"…"`) as Prometheus would: the
// series of QueryDCGM's answer of those scrape targets.
func (f *fakeProm) dcgmOf(q string) (bool, []fakeSeries) {
	prefix := strings.TrimSuffix(DCGMQuery(`instance=~`), "}")
	if !strings.HasPrefix(q, prefix) || !strings.HasSuffix(q, "}") {
		return false, nil
	}
	re, err := strconv.Unquote(strings.TrimSuffix(q[len(prefix):], "}"))
	if err != nil {
		return false, nil
	}
	insts := regexp.MustCompile("^(?:" + re + ")$")
	var out []fakeSeries
	for _, x := range f.series[QueryDCGM] {
		if insts.MatchString(x.labels["instance"]) {
			out = append(out, x)
		}
	}
	return true, out
}

func lbl(name string, kv ...string) map[string]string {
	m := map[string]string{"__name__": name, "job": "vramtop", "instance": "10.0.0.1:9400"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// hostA runs vramtop: an H100 with two processes and an A100 in MIG mode
// with one instance. hostB runs only dcgm-exporter.
// vramtop's own families name the model model_name, its DCGM_* ones
// modelName.
func (f *fakeProm) fleet(usedA uint64) {
	h100 := []string{"hostname", "hostA", "gpu", "0", "UUID", "GPU-a0", "pci_bus_id", "00000000:18:00.0", "device", "nvidia0", "model_name", "NVIDIA H100 80GB HBM3"}
	a100 := []string{"hostname", "hostA", "gpu", "1", "UUID", "GPU-a1", "device", "nvidia1", "model_name", "NVIDIA A100-SXM4-80GB"}
	mig := append(append([]string{}, a100...), "GPU_I_ID", "2", "GPU_I_PROFILE", "3g.40gb", "UUID", "MIG-a1-2")
	f.setDevices(
		fakeSeries{lbl("vramtop_gpu_memory_total_bytes", h100...), 80 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_used_bytes", h100...), float64(usedA)},
		fakeSeries{lbl("vramtop_gpu_memory_free_bytes", h100...), float64(80*gib - 616*mib - usedA)},
		fakeSeries{lbl("vramtop_gpu_memory_reserved_bytes", h100...), 616 * mib},
		fakeSeries{lbl("vramtop_gpu_utilization_ratio", h100...), 0.42},
		fakeSeries{lbl("vramtop_gpu_memory_total_bytes", a100...), 80 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_used_bytes", a100...), 10 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_free_bytes", a100...), 70 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_total_bytes", mig...), 40 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_used_bytes", mig...), 10 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_free_bytes", mig...), 30 * gib},
		fakeSeries{lbl("vramtop_up", "hostname", "hostA"), 1},
	)
	f.set(QueryProcs,
		fakeSeries{lbl("vramtop_process_gpu_memory_bytes", "hostname", "hostA", "gpu", "0", "UUID", "GPU-a0", "pid", "4242", "user", "alice", "command", "python3 train.py", "type", "compute"), 9 * gib},
		fakeSeries{lbl("vramtop_process_gpu_memory_bytes", "hostname", "hostA", "gpu", "0", "UUID", "GPU-a0", "pid", "77", "user", "bob", "command", "jupyter", "type", "compute"), 1 * gib},
		fakeSeries{lbl("vramtop_process_gpu_memory_unknown", "hostname", "hostA", "gpu", "1", "pid", "600", "user", "erin", "command", "Xorg", "type", "graphics"), 1},
		fakeSeries{lbl("vramtop_process_gpu_memory_bytes", "hostname", "hostA", "gpu", "1", "GPU_I_ID", "2", "UUID", "MIG-a1-2", "pid", "5000", "user", "dave", "command", "serve", "type", "compute"), 10 * gib},
	)
	b0 := []string{"hostname", "hostB", "gpu", "0", "UUID", "GPU-b0", "pci_bus_id", "00000000:3B:00.0", "device", "nvidia0", "modelName", "Tesla V100-SXM2-16GB", "instance", "10.0.0.2:9400", "job", "dcgm"}
	f.set(QueryDCGM,
		// vramtop exports these too; its own series win.
		fakeSeries{lbl("DCGM_FI_DEV_FB_USED", append(slices.Clone(h100[:len(h100)-2]), "modelName", "NVIDIA H100 80GB HBM3")...), 1},
		fakeSeries{lbl("DCGM_FI_DEV_FB_USED", b0...), 2049},
		fakeSeries{lbl("DCGM_FI_DEV_FB_FREE", b0...), 14000},
		fakeSeries{lbl("DCGM_FI_DEV_FB_RESERVED", b0...), 335},
		fakeSeries{lbl("DCGM_FI_DEV_GPU_UTIL", b0...), 73},
	)
}

// setDevices answers the totals query with the totals among s and the
// values query with the rest.
func (f *fakeProm) setDevices(s ...fakeSeries) {
	var totals, values []fakeSeries
	for _, x := range s {
		if x.labels["__name__"] == "vramtop_gpu_memory_total_bytes" {
			totals = append(totals, x)
		} else {
			values = append(values, x)
		}
	}
	f.set(QueryDevices, totals...)
	f.set(QueryValues, append(totals, values...)...)
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// fakeFleet is the fleet source, without history, over a fake Prometheus
// holding fp.fleet's hosts A and B (hostA's GPU 0 at 20 GiB used).
func fakeFleet(t *testing.T) (*fakeProm, *Source, *sampler.Sampler, *clock) {
	t.Helper()
	fp := newFakeProm()
	fp.fleet(20 * gib)
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	src, s, clk := newFleet(t, srv.URL, 0)
	return fp, src, s, clk
}

func newFleet(t *testing.T, url string, history time.Duration) (*Source, *sampler.Sampler, *clock) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	src, err := Open(context.Background(), Config{URL: url, Interval: 5 * time.Second, History: history, Timeout: 5 * time.Second, Now: clk.now})
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

// next is the next round: the clock 5 s on, a round of queries, a tick.
func next(src *Source, s *sampler.Sampler, clk *clock) (sampler.Snapshot, bool) {
	clk.t = clk.t.Add(5 * time.Second)
	src.Refresh(context.Background())
	return s.Tick(clk.t)
}

func deviceIDs(snap sampler.Snapshot) []string {
	var ids []string
	for _, d := range snap.Devices {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestFleetVramtopAndDCGMHosts(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	srv := httptest.NewServer(fp)
	defer srv.Close()
	_, s, _ := newFleet(t, srv.URL, 0)
	snap := s.Once()

	if snap.Err != "" {
		t.Fatalf("snapshot error %q", snap.Err)
	}
	if snap.Source != "fleet" {
		t.Errorf("source %q, want fleet", snap.Source)
	}
	if got, want := strings.Join(deviceIDs(snap), " "), "hostA:0 hostA:1 hostA:1/2 hostB:0"; got != want {
		t.Fatalf("devices %q, want %q", got, want)
	}
	h100, _ := snap.Device("hostA:0")
	if h100.Hostname != "hostA" || h100.Name != "NVIDIA H100 80GB HBM3" || h100.UUID != "GPU-a0" || h100.PCIBusID != "00000000:18:00.0" {
		t.Errorf("H100 identity: %+v", h100)
	}
	if h100.MemoryTotal != 80*gib || h100.MemoryUsed != 20*gib || h100.MemoryReserved == nil || *h100.MemoryReserved != 616*mib {
		t.Errorf("H100 memory: total %d used %d reserved %v", h100.MemoryTotal, h100.MemoryUsed, h100.MemoryReserved)
	}
	if h100.UtilizationPercent == nil || *h100.UtilizationPercent != 42 {
		t.Errorf("H100 utilization %v, want 42%%", h100.UtilizationPercent)
	}
	if len(h100.Processes) != 2 || h100.Processes[0].PID != 4242 || h100.Processes[0].User != "alice" ||
		h100.Processes[0].Command != "python3 train.py" || h100.Processes[0].Used() != 9*gib {
		t.Errorf("H100 processes: %+v", h100.Processes)
	}
	if h100.Unattributed == nil || *h100.Unattributed != 10*gib {
		t.Errorf("H100 unattributed %v, want 10 GiB (20 used, 10 by processes)", h100.Unattributed)
	}

	parent, _ := snap.Device("hostA:1")
	if len(parent.Processes) != 1 || parent.Processes[0].PID != 600 || parent.Processes[0].UsedBytes != nil {
		t.Errorf("A100 processes %+v, want Xorg with unknown memory", parent.Processes)
	}
	inst, _ := snap.Device("hostA:1/2")
	if !parent.MIGEnabled || inst.MIG == nil || inst.MIG.ParentIndex != 1 || inst.MIG.GPUInstanceID != 2 || inst.MIG.Profile != "3g.40gb" {
		t.Errorf("MIG: parent enabled %v, instance %+v", parent.MIGEnabled, inst.MIG)
	}
	if len(inst.Processes) != 1 || inst.Processes[0].PID != 5000 {
		t.Errorf("MIG instance processes: %+v", inst.Processes)
	}

	v100, _ := snap.Device("hostB:0")
	if v100.Hostname != "hostB" || v100.Name != "Tesla V100-SXM2-16GB" {
		t.Errorf("dcgm-only device identity: %+v", v100)
	}
	if v100.MemoryUsed != 2049*mib || v100.MemoryFree != 14000*mib || v100.MemoryTotal != (2049+14000+335)*mib {
		t.Errorf("dcgm-only device memory: used %d free %d total %d", v100.MemoryUsed, v100.MemoryFree, v100.MemoryTotal)
	}
	if v100.UtilizationPercent == nil || *v100.UtilizationPercent != 73 {
		t.Errorf("dcgm-only utilization %v, want 73", v100.UtilizationPercent)
	}
	if len(v100.Processes) != 0 {
		t.Errorf("dcgm-only device has processes: %+v", v100.Processes)
	}
	// Without a process list nobody knows who holds the memory: unattributed
	// is unknown, not all of the used memory.
	if !v100.NoProcessList || v100.Unattributed != nil {
		t.Errorf("dcgm-only device: no_process_list %v, unattributed %v; want true and absent", v100.NoProcessList, v100.Unattributed)
	}

	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"id":"hostB:0","index":0,"hostname":"hostB"`) {
		t.Errorf("JSON lacks the device's hostname:\n%s", b)
	}
}

func TestFleetQueryFailingKeepsLastValues(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	s.Once()

	// One of the three queries fails: the error shows, nothing changes.
	fp.fleet(30 * gib)
	fp.fail(QueryDCGM, true)
	snap, ok := next(src, s, clk)
	if !ok {
		t.Fatal("no snapshot published")
	}
	if !strings.Contains(snap.Err, "timeout") || !strings.Contains(snap.Err, "DCGM") {
		t.Errorf("snapshot error %q, want the failing query's", snap.Err)
	}
	if got := strings.Join(deviceIDs(snap), " "); got != "hostA:0 hostA:1 hostA:1/2 hostB:0" {
		t.Errorf("devices during the failure: %q", got)
	}
	if d, _ := snap.Device("hostA:0"); d.MemoryUsed != 20*gib || len(d.Processes) != 2 {
		t.Errorf("during the failure hostA:0 shows used %d, %d processes; want the last known 20 GiB, 2", d.MemoryUsed, len(d.Processes))
	}
	if d, _ := snap.Device("hostB:0"); d.MemoryUsed != 2049*mib {
		t.Errorf("during the failure hostB:0 shows used %d, want the last known", d.MemoryUsed)
	}

	// Prometheus answers again: the next tick recovers.
	fp.fail(QueryDCGM, false)
	snap, _ = next(src, s, clk)
	if snap.Err != "" {
		t.Errorf("error %q after recovery", snap.Err)
	}
	if d, _ := snap.Device("hostA:0"); d.MemoryUsed != 30*gib {
		t.Errorf("after recovery hostA:0 shows used %d, want 30 GiB", d.MemoryUsed)
	}
}

func TestFleetPrometheusUnreachable(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	srv := httptest.NewServer(fp)
	src, s, clk := newFleet(t, srv.URL, time.Hour)
	first := s.Once()
	if len(first.Devices) != 4 {
		t.Fatalf("%d devices, want 4", len(first.Devices))
	}
	srv.Close()
	for i := range 3 {
		snap, _ := next(src, s, clk)
		if snap.Err == "" || !strings.Contains(snap.Err, "cannot reach Prometheus at") {
			t.Fatalf("tick %d: error %q, want Prometheus unreachable", i, snap.Err)
		}
		if d, _ := snap.Device("hostA:0"); d.MemoryUsed != 20*gib || d.Hostname != "hostA" {
			t.Fatalf("tick %d: hostA:0 %+v, want its last known values", i, d)
		}
	}

	// Unreachable from the start: an error, no devices, no crash.
	_, s2, _ := newFleet(t, srv.URL, time.Hour)
	snap := s2.Once()
	if snap.Err == "" || len(snap.Devices) != 0 {
		t.Errorf("unreachable from the start: error %q, %d devices", snap.Err, len(snap.Devices))
	}
	if len(snap.Warnings) == 0 || !strings.Contains(snap.Warnings[0], "history not read back") {
		t.Errorf("warnings %q, want the history one", snap.Warnings)
	}
}

func TestFleetBackfillsHistory(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	start := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC).Unix()
	fp.ranges["max_over_time(vramtop_gpu_memory_used_bytes[5s])"] = []fakeRange{
		{labels: lbl("", "hostname", "hostA", "gpu", "0"), points: [][2]float64{{float64(start), 1 * gib}, {float64(start + 5), 25 * gib}, {float64(start + 10), 3 * gib}}},
	}
	fp.ranges["max_over_time(DCGM_FI_DEV_FB_USED[5s]) * 1048576"] = []fakeRange{
		// Also exported by vramtop for hostA:0; vramtop's wins.
		{labels: lbl("", "hostname", "hostA", "gpu", "0"), points: [][2]float64{{float64(start), 1}}},
		{labels: lbl("", "hostname", "hostB", "gpu", "0"), points: [][2]float64{{float64(start), 100 * mib}, {float64(start + 5), 200 * mib}}},
	}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	_, s, _ := newFleet(t, srv.URL, time.Hour)
	snap := s.Once()
	a, _ := snap.Device("hostA:0")
	if a.History.Len() != 4 || a.PeakUsed != 25*gib {
		t.Errorf("hostA:0 history has %d samples, peak %d; want 3 backfilled + 1, peak 25 GiB", a.History.Len(), a.PeakUsed)
	}
	if ts, v := a.History.At(1); !ts.Equal(time.Unix(start+5, 0)) || v != 25*gib {
		t.Errorf("hostA:0 sample 1: %v %d", ts, v)
	}
	b, _ := snap.Device("hostB:0")
	if b.History.Len() != 3 {
		t.Errorf("hostB:0 history has %d samples, want 2 backfilled + 1", b.History.Len())
	}
}

func TestFleetStaleExporter(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	fp.series[QueryValues] = append(fp.series[QueryValues][:len(fp.series[QueryValues])-1],
		fakeSeries{lbl("vramtop_up", "hostname", "hostA"), 0})
	srv := httptest.NewServer(fp)
	defer srv.Close()
	_, s, _ := newFleet(t, srv.URL, 0)
	snap := s.Once()
	seen := map[string]int{}
	for _, d := range snap.Devices {
		seen[d.Hostname]++
		if d.Hostname == "hostA" && !strings.Contains(d.Err, "no recent GPU sample") {
			t.Errorf("%s: error %q, want the stale exporter's", d.ID, d.Err)
		}
		if d.Hostname == "hostB" && d.Err != "" {
			t.Errorf("%s: error %q on a healthy host", d.ID, d.Err)
		}
	}
	if seen["hostA"] == 0 || seen["hostB"] == 0 {
		t.Errorf("devices per host %v: both hosts must be listed for the checks to mean anything", seen)
	}
}

func TestFleetHostAppears(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	dcgm := fp.series[QueryDCGM]
	fp.set(QueryDCGM)
	srv := httptest.NewServer(fp)
	defer srv.Close()
	src, s, clk := newFleet(t, srv.URL, 0)
	if snap := s.Once(); len(snap.Devices) != 3 {
		t.Fatalf("%d devices before hostB appears, want 3", len(snap.Devices))
	}
	// Its exporter is a new scrape target.
	fp.set(QueryDCGM, dcgm...)
	fp.set(QueryTargets, fakeSeries{map[string]string{"__name__": "up", "job": "dcgm", "instance": "10.0.0.2:9400"}, 1})
	snap, _ := next(src, s, clk)
	if _, ok := snap.Device("hostB:0"); !ok || len(snap.Devices) != 4 {
		t.Errorf("devices after hostB appears: %q", deviceIDs(snap))
	}
}

func TestHostOf(t *testing.T) {
	for _, tc := range []struct {
		m    Labels
		want string
	}{
		{Labels{{"Hostname", "a"}, {"hostname", "b"}, {"instance", "c:1"}}, "b"},
		{Labels{{"Hostname", "a"}, {"instance", "c:1"}}, "a"},
		{Labels{{"instance", "node3:9400"}}, "node3"},
		{Labels{{"instance", "[::1]:9400"}}, "[::1]:9400"},
	} {
		if got := HostOf(tc.m); got != tc.want {
			t.Errorf("HostOf(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:9090", "ftp://x"} {
		if _, err := Open(context.Background(), Config{URL: u}); err == nil {
			t.Errorf("Open(%q) succeeded, want an error", u)
		}
	}
}

// TestFleetUnexportedProcesses: the processes a host's exporter leaves out
// (over serve's --max-process-series) are one row with their memory, not
// unattributed memory; from an exporter that does not say how much memory
// they use, the row's memory and the unattributed memory are unknown.
func TestFleetUnexportedProcesses(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	fp.mu.Lock()
	fp.series[QueryProcs] = append(fp.series[QueryProcs],
		fakeSeries{lbl("vramtop_gpu_processes_unexported", "hostname", "hostA", "gpu", "0"), 3},
		fakeSeries{lbl("vramtop_gpu_memory_unexported_bytes", "hostname", "hostA", "gpu", "0"), 6 * gib},
		// hostA:1/2: an older exporter, the count alone.
		fakeSeries{lbl("vramtop_gpu_processes_unexported", "hostname", "hostA", "gpu", "1", "GPU_I_ID", "2"), 1})
	fp.mu.Unlock()
	snap, _ := next(src, s, clk)

	h100, _ := snap.Device("hostA:0")
	if len(h100.Processes) != 2 || h100.OmittedProcesses != 3 || h100.OmittedBytes == nil || *h100.OmittedBytes != 6*gib {
		t.Fatalf("hostA:0: %d processes, %d omitted using %v; want its 2 listed and 3 omitted using 6 GiB",
			len(h100.Processes), h100.OmittedProcesses, h100.OmittedBytes)
	}
	if h100.Unattributed == nil || *h100.Unattributed != 4*gib {
		t.Errorf("hostA:0 unattributed %v, want 4 GiB (20 used, 10 by the processes listed, 6 by those not exported)", h100.Unattributed)
	}

	inst, _ := snap.Device("hostA:1/2")
	if len(inst.Processes) != 1 || inst.OmittedProcesses != 1 || inst.OmittedBytes != nil {
		t.Fatalf("hostA:1/2: %d processes, %d omitted using %v; want its one and one more, memory unknown",
			len(inst.Processes), inst.OmittedProcesses, inst.OmittedBytes)
	}
	if inst.Unattributed != nil {
		t.Errorf("hostA:1/2 unattributed %d, want unknown (a process not exported uses an unknown amount)", *inst.Unattributed)
	}

	// The exporter lists them all again.
	fp.fleet(20 * gib)
	snap, _ = next(src, s, clk)
	h100, _ = snap.Device("hostA:0")
	if h100.OmittedProcesses != 0 || h100.OmittedBytes != nil {
		t.Errorf("hostA:0 still has %d processes omitted (%v)", h100.OmittedProcesses, h100.OmittedBytes)
	}
	if h100.Unattributed == nil || *h100.Unattributed != 10*gib {
		t.Errorf("hostA:0 unattributed %v, want 10 GiB again", h100.Unattributed)
	}
}

// TestFleetTotalNaN: a total Prometheus answers as NaN is not known: the
// parts add up to it, as for dcgm-exporter's counters.
func TestFleetTotalNaN(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	s.Once()
	fp.mu.Lock()
	for i, x := range fp.series[QueryValues] {
		if x.labels["__name__"] == "vramtop_gpu_memory_total_bytes" && x.labels["gpu"] == "0" {
			fp.series[QueryValues][i].value = math.NaN()
		}
	}
	fp.mu.Unlock()
	snap, _ := next(src, s, clk)
	if d, _ := snap.Device("hostA:0"); d.MemoryTotal != 80*gib {
		t.Errorf("hostA:0 total %d, want used + free + reserved = 80 GiB", d.MemoryTotal)
	}
}

// The alerts each host's vramtop exports are in force from the fleet's first
// snapshot (before it has read the history its own rules need), on the
// device and process they name; labels that are no rule or severity of
// vramtop's are not taken.
func TestFleetShowsHostAlertsAtOnce(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	fp.set(QueryAlerts,
		fakeSeries{lbl("vramtop_alert", "hostname", "hostA", "gpu", "0", "rule", "threshold", "severity", "warn"), 1},
		fakeSeries{lbl("vramtop_alert", "hostname", "hostA", "gpu", "0", "rule", "spike_headroom", "severity", "crit", "pid", "4242"), 1},
		fakeSeries{lbl("vramtop_alert", "hostname", "hostA", "gpu", "0", "rule", "\x1b]52;c;x\a", "severity", "warn"), 1},
		fakeSeries{lbl("vramtop_alert", "hostname", "hostA", "gpu", "0", "rule", "threshold", "severity", "panic"), 1},
	)
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	_, s, clk := newFleet(t, srv.URL, 0)
	snap, _ := s.Tick(clk.now())
	alerts := advisor.NewMonitor(advisor.Config{}).Observe(snap)
	var got []string
	for _, a := range alerts {
		if a.Severity > advisor.Info {
			got = append(got, fmt.Sprintf("%s %s %s %d", a.Rule, a.Severity, a.DeviceID, a.PID))
		}
	}
	want := []string{"spike_headroom crit hostA:0 4242", "threshold warn hostA:0 0"}
	if !slices.Equal(got, want) {
		t.Fatalf("alerts of the first fleet snapshot %q, want %q (hostA:0 is at 25%%: only its host's rules say so)", got, want)
	}
	if sev := advisor.DeviceSeverities(alerts)["hostA:0"].Severity; sev != advisor.Warn {
		t.Errorf("hostA:0's severity %v, want warn: the row, the bar and the banner take it from the alerts", sev)
	}
}
