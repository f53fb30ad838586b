package fleet_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/fleet/internal/promtest"
	"github.com/vramtop/vramtop/fleet/internal/synth"
	"github.com/vramtop/vramtop/sampler"
)

// countingTransport counts the bytes of the answers.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestFleetScale measures what one fleet view costs over a synthetic fleet
// in a real Prometheus. It runs only when asked:
//
//	VRAMTOP_PROMETHEUS=$(command -v prometheus) VRAMTOP_SCALE=500x8 \
//	  go test -run TestFleetScale -v -timeout 20m ./fleet/
func TestFleetScale(t *testing.T) {
	spec := os.Getenv("VRAMTOP_SCALE")
	if spec == "" {
		t.Skip("VRAMTOP_SCALE=HOSTSxGPUS is not set")
	}
	promBin := promtest.Binary(t)
	var f synth.Fleet
	if _, err := fmt.Sscanf(spec, "%dx%d", &f.Hosts, &f.GPUs); err != nil || f.Hosts < 1 || f.GPUs < 1 {
		t.Fatalf("VRAMTOP_SCALE=%q: want HOSTSxGPUS, e.g. 500x8", spec)
	}
	f.ProcsPerGPU = 2
	f.Start = time.Now()
	devices := f.Hosts * f.GPUs

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", f)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t0 := time.Now()
	code, body := promtest.Get("http://" + ln.Addr().String() + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("synthetic exporter: %d", code)
	}
	t.Logf("synthetic exporter: %d hosts × %d GPUs = %d devices, %d series, %.1f MiB a scrape, written in %v",
		f.Hosts, f.GPUs, devices, f.Series(), float64(len(body))/(1<<20), time.Since(t0).Round(time.Millisecond))

	const scrape = 5 * time.Second
	prom := promtest.StartPrometheus(t, promBin, scrape, ln.Addr().String())
	client, err := fleet.NewClient(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Let Prometheus scrape a few times, so the range query has history.
	promtest.WaitFor(t, 3*time.Minute, "the synthetic fleet in Prometheus", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.Query(ctx, "count(count_over_time(vramtop_gpu_memory_used_bytes[1m]) >= 3)")
		if err != nil || len(res) == 0 {
			return false, fmt.Sprint(err)
		}
		return int(res[0].Value) == devices, fmt.Sprintf("%v devices with 3 samples", res[0].Value)
	})

	ct := &countingTransport{}
	hc := &http.Client{Transport: ct}
	ctx := context.Background()

	// Each instant query on its own: those of every round, those of the
	// rounds that read the devices' labels, the processes of one host
	// (open on screen) and of every host (--once).
	for _, q := range []string{fleet.QueryValues, fleet.QueryDCGM, fleet.QueryTargets, fleet.QueryAlerts,
		fleet.QueryDevices, fleet.QueryReserved, fleet.ProcsQuery(`Hostname="host0007"`), fleet.QueryProcs} {
		var times []time.Duration
		var n int
		ct.n.Store(0)
		c, _ := fleet.NewClient(prom.URL, hc)
		for range 5 {
			s := time.Now()
			res, err := c.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, time.Since(s))
			n = len(res)
		}
		// The same query, the answer read but not decoded: Prometheus's
		// share of the time.
		var raw []time.Duration
		for range 5 {
			s := time.Now()
			resp, err := http.Post(prom.URL+"/api/v1/query", "application/x-www-form-urlencoded",
				strings.NewReader(url.Values{"query": {q}}.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			raw = append(raw, time.Since(s))
		}
		t.Logf("query %-40.40s %6d series, %5.1f MiB: median %v (Prometheus and transfer %v), max %v", q, n,
			float64(ct.n.Load())/5/(1<<20), median(times).Round(time.Millisecond), median(raw).Round(time.Millisecond),
			slices.Max(times).Round(time.Millisecond))
	}

	// Opening the view: the history range queries.
	ct.n.Store(0)
	s0 := time.Now()
	clk := s0
	now := func() time.Time { return clk }
	// The live view's source: the processes of the host open on screen
	// only.
	src, err := fleet.Open(ctx, fleet.Config{URL: prom.URL, Interval: 5 * time.Second, History: time.Hour, Timeout: time.Minute, HTTPClient: hc, Now: now, OpenHostProcesses: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// The first round: the instant queries, then the history.
	src.WaitFirst(ctx)
	t.Logf("first round with the history read back (1 h, %d points a device at most): %v, %.1f MiB", fleet.MaxBackfillPoints,
		time.Since(s0).Round(time.Millisecond), float64(ct.n.Load())/(1<<20))

	// Whole ticks: the queries at once, decoding, the sampler's publish;
	// over the list of hosts, then with one host open.
	s, err := sampler.New(src, sampler.Config{Interval: 5 * time.Second, History: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap sampler.Snapshot
	tick := func(i int) time.Duration {
		clk = clk.Add(5 * time.Second)
		s1 := time.Now()
		src.Refresh(ctx)
		var ok bool
		snap, ok = s.Tick(clk)
		d := time.Since(s1)
		if !ok || snap.Err != "" {
			t.Fatalf("tick %d: published %v, error %q", i, ok, snap.Err)
		}
		return d
	}
	// A round that reads the devices' labels (and their total and reserved
	// memory) comes every 12: the 12 ticks after the first hold one.
	var ticks []time.Duration
	ct.n.Store(0)
	for i := range 13 {
		if d := tick(i); i > 0 { // the first tick also seeds the histories
			ticks = append(ticks, d)
		}
	}
	if len(snap.Devices) != devices {
		t.Errorf("%d devices in the snapshot, want %d", len(snap.Devices), devices)
	}
	for _, d := range snap.Devices {
		if !d.ProcessesNotRead || len(d.Processes) != 0 {
			t.Fatalf("%s on the list of hosts: processes not read %v, %d listed", d.ID, d.ProcessesNotRead, len(d.Processes))
		}
	}
	t.Logf("tick over the list of hosts (%d devices, processes not read): median %v, max %v (the round that reads the labels), %.1f MiB a tick",
		len(snap.Devices), median(ticks).Round(time.Millisecond), slices.Max(ticks).Round(time.Millisecond),
		float64(ct.n.Load())/12/(1<<20))

	src.SetOpenHost("host0007")
	ticks = ticks[:0]
	for i := range 5 {
		ticks = append(ticks, tick(i))
	}
	procs := 0
	for _, d := range snap.Devices {
		procs += len(d.Processes)
	}
	if procs != f.GPUs*f.ProcsPerGPU {
		t.Errorf("%d processes with host0007 open, want its %d", procs, f.GPUs*f.ProcsPerGPU)
	}
	t.Logf("tick with host0007 open (%d processes read): median %v, max %v", procs,
		median(ticks).Round(time.Millisecond), slices.Max(ticks).Round(time.Millisecond))
}
