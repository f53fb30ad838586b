package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// drop removes the series of which gone says so from every answer of fp.
func drop(fp *fakeProm, gone func(labels map[string]string) bool) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	for q, ss := range fp.series {
		var keep []fakeSeries
		for _, x := range ss {
			if !gone(x.labels) {
				keep = append(keep, x)
			}
		}
		fp.series[q] = keep
	}
}

// dropHost removes a host's series from every answer of fp.
func dropHost(fp *fakeProm, host string) {
	drop(fp, func(l map[string]string) bool { return l["hostname"] == host })
}

// TestFleetHostDownKeepsLastValues: hostA's exporter dies; Prometheus
// drops its series and says its target is down. hostA stays listed with
// its last values, marked down since it was last seen.
func TestFleetHostDownKeepsLastValues(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	seenAt := clk.t
	if snap := s.Once(); len(snap.Devices) != 4 {
		t.Fatalf("%d devices, want 4", len(snap.Devices))
	}

	dropHost(fp, "hostA")
	fp.set(QueryTargets, fakeSeries{map[string]string{"__name__": "up", "job": "vramtop", "instance": "10.0.0.1:9400"}, 0})
	snap, _ := next(src, s, clk)
	if snap.Err != "" {
		t.Fatalf("snapshot error %q", snap.Err)
	}
	if got := strings.Join(deviceIDs(snap), " "); got != "hostA:0 hostA:1 hostA:1/2 hostB:0" {
		t.Fatalf("devices %q, want hostA's still listed", got)
	}
	want := "host down: exporter not answering since " + clockTime(seenAt, clk.t) + " (last values shown)"
	for _, d := range snap.Devices {
		switch d.Hostname {
		case "hostA":
			if d.Err != want || !IsHostDown(d) {
				t.Errorf("%s: error %q, want %q", d.ID, d.Err, want)
			}
		case "hostB":
			if d.Err != "" {
				t.Errorf("%s: error %q on the live host", d.ID, d.Err)
			}
		}
	}
	if d, _ := snap.Device("hostA:0"); d.MemoryUsed != 20*gib || d.MemoryTotal != 80*gib {
		t.Errorf("hostA:0 used %d of %d, want its last 20 GiB of 80", d.MemoryUsed, d.MemoryTotal)
	}
	// Its processes are its last ones, with their age: not exited, and
	// their memory not unattributed.
	d, _ := snap.Device("hostA:0")
	var pids []string
	for _, p := range d.Processes {
		pids = append(pids, fmt.Sprintf("%d exited=%v", p.PID, p.Exited))
	}
	if got := strings.Join(pids, ", "); got != "4242 exited=false, 77 exited=false" {
		t.Errorf("hostA:0 processes while down: %s; want its last two, live", got)
	}
	if d.Unattributed == nil || *d.Unattributed != 10*gib {
		t.Errorf("hostA:0 unattributed %v while down, want 10 GiB (20 used, 10 held by its processes)", d.Unattributed)
	}
	if !d.ListedAt.Equal(seenAt) {
		t.Errorf("hostA:0 processes listed at %v, want when the host was last seen, %v", d.ListedAt, seenAt)
	}

	// The exporter comes back: the host is live again.
	fp.fleet(30 * gib)
	fp.set(QueryTargets)
	snap, _ = next(src, s, clk)
	if d, _ := snap.Device("hostA:0"); d.Err != "" || d.MemoryUsed != 30*gib {
		t.Errorf("hostA:0 back: error %q, used %d; want none and 30 GiB", d.Err, d.MemoryUsed)
	}
	// Each process once, live.
	if d, _ := snap.Device("hostA:0"); len(d.Processes) != 2 || d.Processes[0].Exited || d.Processes[1].Exited {
		t.Errorf("hostA:0 back: %d processes, want its 2, live", len(d.Processes))
	}
}

// TestFleetHostDownBeforeStart: a fleet view started after hostA's
// exporter died (fleet --once) finds hostA's last values in Prometheus's
// history, and when they were sampled.
func TestFleetHostDownBeforeStart(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	all := map[string][]fakeSeries{}
	for q, ss := range fp.series {
		all[q] = ss
	}
	dropHost(fp, "hostA")
	fp.set(QueryTargets, fakeSeries{map[string]string{"__name__": "up", "job": "vramtop", "instance": "10.0.0.1:9400"}, 0})
	var last []fakeSeries
	for _, q := range []string{QueryDevices, QueryValues} {
		for _, x := range all[q] {
			if x.labels["hostname"] == "hostA" && x.labels["gpu"] != "" {
				last = append(last, x)
			}
		}
	}
	fp.prefixed["last_over_time("] = last
	died := time.Date(2026, 11, 29, 11, 42, 7, 0, time.UTC)
	fp.prefixed["max by (instance) (max_over_time(timestamp("] = []fakeSeries{
		{map[string]string{"instance": "10.0.0.1:9400"}, float64(died.Unix())},
	}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	_, s, clk := newFleet(t, srv.URL, 0)
	snap := s.Once()
	if got := strings.Join(deviceIDs(snap), " "); got != "hostA:0 hostA:1 hostA:1/2 hostB:0" {
		t.Fatalf("devices %q, want hostA's from the history", got)
	}
	want := "host down: exporter not answering since " + clockTime(died, clk.t) + " (last values shown)"
	for _, id := range []string{"hostA:0", "hostA:1/2"} {
		if d, _ := snap.Device(id); d.Err != want {
			t.Errorf("%s: error %q, want %q", id, d.Err, want)
		}
	}
	if d, _ := snap.Device("hostA:0"); d.MemoryUsed != 20*gib || d.MemoryTotal != 80*gib {
		t.Errorf("hostA:0 used %d of %d, want the last 20 GiB of 80", d.MemoryUsed, d.MemoryTotal)
	}
	if d, _ := snap.Device("hostB:0"); d.Err != "" {
		t.Errorf("hostB:0: error %q", d.Err)
	}
}

// hanging is a Prometheus that accepts requests and never answers.
func hanging() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// With the body read, the server notices the client going away.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
}

// TestFleetHangingPrometheus: the sampler never waits for a Prometheus
// that does not answer; the first round ends at the timeout with one
// clear error, and Close cancels what is in flight.
func TestFleetHangingPrometheus(t *testing.T) {
	srv := hanging()
	defer srv.Close()
	const timeout = 500 * time.Millisecond
	src, err := Open(context.Background(), Config{URL: srv.URL, Interval: time.Second, History: time.Hour, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sampler.New(src, sampler.Config{Interval: time.Second, History: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Before any answer: a snapshot at once, saying it is connecting.
	snap := s.Once()
	if len(snap.Devices) != 0 || len(snap.Warnings) == 0 || !strings.Contains(snap.Warnings[0], "connecting to Prometheus") {
		t.Errorf("before any answer: %d devices, warnings %q; want none and connecting", len(snap.Devices), snap.Warnings)
	}

	// The first round gives up at the timeout (the history at three times
	// it), with an error that says so.
	start := time.Now()
	src.WaitFirst(context.Background())
	if el := time.Since(start); el > 3*timeout+2*time.Second {
		t.Errorf("the first round took %v with a timeout of %v", el, timeout)
	}
	snap, _ = s.Tick(time.Now())
	if !strings.Contains(snap.Err, "no answer within 500ms") {
		t.Errorf("error %q, want no answer within the timeout", snap.Err)
	}

	// Close does not wait for the requests in flight.
	src2, err := Open(context.Background(), Config{URL: srv.URL, Interval: time.Second, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a round in flight
	closed := make(chan struct{})
	go func() { src2.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits 10 s later for a query that has an hour to run")
	}
}

// TestFleetAnswerTooLarge: an answer over MaxAnswerBytes (here 80 MiB of
// whitespace inside the JSON) is refused, not decoded.
func TestFleetAnswerTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		hugeAnswer(w, "vector", 80)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up")
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "answer larger than 64 MiB") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line saying the answer is larger than 64 MiB", err)
	}

	// Exactly at the limit is fine (the limit is not off by one).
	body := `{"status":"success","data":{"resultType":"vector","result":[]}}`
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	defer srv2.Close()
	c2, _ := NewClient(srv2.URL, &http.Client{Transport: limitedTransport{http.DefaultTransport, int64(len(body))}})
	if _, err := c2.Query(context.Background(), "up"); err != nil {
		t.Errorf("an answer of exactly the limit: %v", err)
	}
}

// TestFleetHistoryRetried: the history cannot be read at first; the
// banner says so, and clears once Prometheus answers the range queries.
func TestFleetHistoryRetried(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	q := "max_over_time(vramtop_gpu_memory_used_bytes[5s])"
	past := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC).Unix()
	fp.ranges[q] = []fakeRange{
		{labels: lbl("", "hostname", "hostA", "gpu", "0"), points: [][2]float64{{float64(past), 1 * gib}, {float64(past + 5), 25 * gib}}},
	}
	fp.fail(q, true)
	srv := httptest.NewServer(fp)
	defer srv.Close()
	src, s, clk := newFleet(t, srv.URL, time.Hour)
	snap := s.Once()
	if len(snap.Warnings) == 0 || !strings.Contains(snap.Warnings[0], "history not read back") {
		t.Fatalf("warnings %q, want the history one", snap.Warnings)
	}
	fp.fail(q, false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, _ = next(src, s, clk)
		if len(snap.Warnings) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warnings %q 10 s after Prometheus answers again", snap.Warnings)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(snap.Devices) != 4 {
		t.Errorf("%d devices, want 4", len(snap.Devices))
	}
	// The devices were on screen before the history came: it is merged
	// before their own samples all the same.
	a, _ := snap.Device("hostA:0")
	if first := a.History.First(); a.PeakUsed != 25*gib || !first.Equal(time.Unix(past, 0)) {
		t.Errorf("hostA:0 history from %v, peak %d; want the history read back again: from %v, peak 25 GiB",
			first, a.PeakUsed, time.Unix(past, 0))
	}
}

// TestFleetDeviceAppearsWithItsLabels: the devices' labels are read on the
// first round and when a device appears, so a new host's GPU has its name,
// UUID and PCI bus from its first round on.
func TestFleetDeviceAppearsWithItsLabels(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	s.Once()
	c0 := []string{"hostname", "hostC", "gpu", "0", "UUID", "GPU-c0", "pci_bus_id", "00000000:C1:00.0", "modelName", "NVIDIA H200"}
	fp.mu.Lock()
	fp.series[QueryDevices] = append(fp.series[QueryDevices], fakeSeries{lbl("vramtop_gpu_memory_total_bytes", c0...), 141 * gib})
	fp.series[QueryValues] = append(fp.series[QueryValues],
		fakeSeries{lbl("vramtop_gpu_memory_total_bytes", "hostname", "hostC", "gpu", "0"), 141 * gib},
		fakeSeries{lbl("vramtop_gpu_memory_used_bytes", "hostname", "hostC", "gpu", "0"), 7 * gib})
	fp.mu.Unlock()
	snap, _ := next(src, s, clk)
	d, ok := snap.Device("hostC:0")
	if !ok || d.Name != "NVIDIA H200" || d.UUID != "GPU-c0" || d.PCIBusID != "00000000:C1:00.0" || d.MemoryUsed != 7*gib {
		t.Errorf("hostC:0 %+v (listed %v), want its labels and 7 GiB used", d, ok)
	}
	if a, _ := snap.Device("hostA:0"); a.Name != "NVIDIA H100 80GB HBM3" {
		t.Errorf("hostA:0 name %q after the labels were read again", a.Name)
	}
}

// TestFleetOneGPUGone: a GPU whose series vanish while its host still
// reports keeps its last values, and the host is not marked down.
func TestFleetOneGPUGone(t *testing.T) {
	fp, src, s, clk := fakeFleet(t)
	seenAt := clk.t
	s.Once()
	drop(fp, func(l map[string]string) bool { return l["hostname"] == "hostA" && l["gpu"] == "0" })
	snap, _ := next(src, s, clk)
	d, ok := snap.Device("hostA:0")
	if want := "no series since " + clockTime(seenAt, clk.t) + " (last values shown)"; !ok || d.Err != want || IsHostDown(d) {
		t.Errorf("hostA:0 listed %v, error %q; want %q, not host down", ok, d.Err, want)
	}
	if d.MemoryUsed != 20*gib {
		t.Errorf("hostA:0 used %d, want its last 20 GiB", d.MemoryUsed)
	}
	if a1, _ := snap.Device("hostA:1"); a1.Err != "" {
		t.Errorf("hostA:1: error %q", a1.Err)
	}
}

// TestFleetHistoryTooLargeAsksFewerPoints: a history answer over
// MaxAnswerBytes (a fleet of thousands of GPUs over an hour) is asked
// again with fewer points a device, and read back.
func TestFleetHistoryTooLargeAsksFewerPoints(t *testing.T) {
	fp := newFakeProm()
	fp.fleet(20 * gib)
	// 360 points an hour: a step of 10 s.
	start := fp.usedHistory(10, "hostA", 1*gib, 25*gib)
	// 720 points a device (a step of 5 s): more than 64 MiB.
	url, steps := rangeSteps(t, fp, "5")
	src, s, clk := newFleet(t, url, time.Hour)
	snap := s.Once()
	if len(snap.Warnings) == 0 || !strings.Contains(snap.Warnings[0], "answer larger than 64 MiB (retrying)") {
		t.Fatalf("warnings %q, want the history's, retrying", snap.Warnings)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(snap.Warnings) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("warnings %q 10 s on (range queries with steps %v)", snap.Warnings, steps())
		}
		time.Sleep(50 * time.Millisecond)
		snap, _ = next(src, s, clk)
	}
	// Read back with fewer points, after the devices were listed: merged
	// before their own samples.
	snap, _ = next(src, s, clk)
	a, _ := snap.Device("hostA:0")
	if ts, v := a.History.At(1); a.PeakUsed != 25*gib || !a.History.First().Equal(time.Unix(start, 0)) ||
		!ts.Equal(time.Unix(start+10, 0)) || v != 25*gib {
		t.Errorf("hostA:0 history from %v, peak %d, sample 1 %v %d; want the 2 points of the 10 s step before its own",
			a.History.First(), a.PeakUsed, ts, v)
	}
	if got := steps(); !slices.Contains(got, "10") {
		t.Errorf("range queries with steps %v, want 5 s, then 10 s", got)
	}
}

// usedHistory answers the history's range query at a step of step seconds
// with GPU 0 of host at values, one a step from start (returned).
func (f *fakeProm) usedHistory(step int, host string, values ...float64) (start int64) {
	start = time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC).Unix()
	r := fakeRange{labels: lbl("", "hostname", host, "gpu", "0")}
	for i, v := range values {
		r.points = append(r.points, [2]float64{float64(start + int64(i*step)), v})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranges[fmt.Sprintf("max_over_time(vramtop_gpu_memory_used_bytes[%ds])", step)] = []fakeRange{r}
	return start
}

// rangeSteps serves fp, recording the step of each range query; one with
// step tooLarge is answered with more than MaxAnswerBytes.
func rangeSteps(t *testing.T, fp http.Handler, tooLarge string) (url string, steps func() []string) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path == "/api/v1/query_range" {
			mu.Lock()
			got = append(got, r.Form.Get("step"))
			mu.Unlock()
			if r.Form.Get("step") == tooLarge {
				hugeAnswer(w, "matrix", 70)
				return
			}
		}
		fp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// hugeAnswer writes an answer of resultType with mib MiB of white space
// in its result.
func hugeAnswer(w io.Writer, resultType string, mib int) {
	io.WriteString(w, `{"status":"success","data":{"resultType":"`+resultType+`","result":[`)
	chunk := []byte(strings.Repeat(" ", 1<<20))
	for range mib {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	io.WriteString(w, `]}}`)
}

// TestHistoryPoints: the history's points a device fit in an answer for
// the devices listed (48 bytes a point), and never drop below 12.
func TestHistoryPoints(t *testing.T) {
	for _, tc := range []struct{ points, devices, want int }{
		{720, 16000, 87}, // 64 MiB / 48 B / 16,000
		{720, 8000, 174},
		{720, 4, 720},
		{720, 0, 720}, // none listed (the first round failed)
		{360, 8000, 174},
		{720, 1 << 20, 12},
	} {
		if got := historyPoints(tc.points, tc.devices); got != tc.want {
			t.Errorf("historyPoints(%d, %d) = %d, want %d", tc.points, tc.devices, got, tc.want)
		}
	}
}

// TestFleetHistoryFitsTheFleet: the history is asked once the first round
// has listed the devices, with as many points a device as fit in an
// answer for them: 2,500 GPUs over an hour get 559 (a 6 s step, not 5 s),
// and their sparklines start with it.
func TestFleetHistoryFitsTheFleet(t *testing.T) {
	fp := newFakeProm()
	var totals, values []fakeSeries
	for h := range 2500 {
		l := []string{"hostname", fmt.Sprintf("h%04d", h), "gpu", "0"}
		totals = append(totals, fakeSeries{lbl("vramtop_gpu_memory_total_bytes", l...), 80 * gib})
		values = append(values, fakeSeries{lbl("vramtop_gpu_memory_used_bytes", l...), 20 * gib})
	}
	fp.set(QueryDevices, totals...)
	fp.set(QueryValues, append(totals, values...)...)
	fp.usedHistory(6, "h0042", 1*gib, 25*gib)
	url, steps := rangeSteps(t, fp, "5")
	_, s, _ := newFleet(t, url, time.Hour)
	snap := s.Once()
	if len(snap.Devices) != 2500 || len(snap.Warnings) != 0 {
		t.Fatalf("%d devices, warnings %q; want 2500 and none", len(snap.Devices), snap.Warnings)
	}
	if d, _ := snap.Device("h0042:0"); d.PeakUsed != 25*gib || d.History.Len() != 3 {
		t.Errorf("h0042:0 peak %d, %d samples; want the 25 GiB of its history, 2 samples and this one", d.PeakUsed, d.History.Len())
	}
	if got := steps(); len(got) != 2 || got[0] != "6" || got[1] != "6" {
		t.Errorf("range queries with steps %v, want both at 6 s", got)
	}
}

// TestServeHugeAnswers serves, for bench/fleet-memory.sh, a Prometheus
// whose every answer is $VRAMTOP_FLEET_HUGE_MIB MiB, on loopback, writing
// its URL to $VRAMTOP_FLEET_HUGE_URL_FILE, until it is killed or 5 minutes
// pass; skipped without them.
func TestServeHugeAnswers(t *testing.T) {
	urlFile, mibS := os.Getenv("VRAMTOP_FLEET_HUGE_URL_FILE"), os.Getenv("VRAMTOP_FLEET_HUGE_MIB")
	if urlFile == "" || mibS == "" {
		t.Skip("VRAMTOP_FLEET_HUGE_URL_FILE or VRAMTOP_FLEET_HUGE_MIB not set")
	}
	mib, err := strconv.Atoi(mibS)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		hugeAnswer(w, "vector", mib)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := os.WriteFile(urlFile, []byte("http://"+ln.Addr().String()), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Minute)
}

// TestOversizeAnswersTogetherBounded: the five queries of a round, each
// answered with 80 MiB, fail as too large, one line each, holding together
// far less than five answers' worth of heap at any moment (before: each
// grew a 128 MiB buffer, and the live view kept them).
func TestOversizeAnswersTogetherBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		hugeAnswer(w, "vector", 80)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = c.Query(context.Background(), "up") })
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i, err := range errs {
		if !errors.Is(err, ErrAnswerTooLarge) || strings.Contains(err.Error(), "\n") {
			t.Errorf("query %d: %v, want one line saying the answer is too large", i, err)
		}
	}
	if p := peak.Load(); p > 256<<20 {
		t.Errorf("the heap held %d MiB while five answers were refused, want at most 256", p>>20)
	}
	t.Logf("peak heap %d MiB", peak.Load()>>20)
}
