package exporter

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/cputime"
	"github.com/vramtop/vramtop/sampler"
)

// bench8x1000 is 8 GPUs with 1000 processes each.
func bench8x1000() sampler.Snapshot {
	snap := sampler.Snapshot{Time: t0, Hostname: "node7", Source: "nvml", Interval: time.Second, Seq: 1}
	for g := range 8 {
		d := sampler.Device{
			ID: fmt.Sprint(g), Index: g, Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-%08d", g), PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+g),
			MemoryTotal: 80 * gib, MemoryUsed: 60 * gib, MemoryFree: 20*gib - 616*mib, MemoryReserved: sampler.Ptr(uint64(616 * mib)),
			Unattributed: sampler.Ptr(uint64(gib)), UtilizationPercent: sampler.Ptr(50.0), TemperatureC: sampler.Ptr(60), PowerWatts: sampler.Ptr(400.0),
		}
		for k := range 1000 {
			d.Processes = append(d.Processes, sampler.Process{PID: uint32(100000 + 1000*g + k), User: fmt.Sprintf("user%d", k%40),
				Command: fmt.Sprintf("/usr/bin/python3 train.py --rank %d --config /data/exp%d.yaml", k, k%17), Type: "compute",
				UsedBytes: sampler.Ptr(uint64(k+1) * 50 * mib), Visible: true})
		}
		snap.Devices = append(snap.Devices, d)
	}
	return snap
}

// BenchmarkPage8x1000 encodes the page of a new snapshot of 8 GPUs × 1000
// processes on every iteration (the once-per-snapshot cost), with the
// default --max-process-series and with every process (-1).
func BenchmarkPage8x1000(b *testing.B) {
	for _, max := range []int{0, -1} {
		name := fmt.Sprintf("max=%d", DefaultMaxProcessSeries)
		if max < 0 {
			name = "max=all"
		}
		b.Run(name, func(b *testing.B) {
			snap := bench8x1000()
			// No monitor: the rules run once per snapshot whether or not
			// anyone scrapes (advisor's benchmarks).
			c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{MaxProcessSeries: max, Now: func() time.Time { return t0 }})
			var buf []byte
			b.ReportAllocs()
			cpu := cputime.Now()
			for b.Loop() {
				snap.Seq++
				buf = c.Page(buf[:0])
			}
			cputime.Report(b, cpu)
			b.ReportMetric(float64(len(buf)), "bytes/page")
		})
	}
}

// BenchmarkScrape8x1000 is one scrape over HTTP of a snapshot already
// encoded: what each scraper after the first costs.
func BenchmarkScrape8x1000(b *testing.B) {
	snap := bench8x1000()
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{Now: func() time.Time { return t0 }})
	srv := httptest.NewServer(Handler(c))
	defer srv.Close()
	n := 0
	b.ReportAllocs()
	cpu := cputime.Now()
	for b.Loop() {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		m, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		n = int(m)
	}
	cputime.Report(b, cpu)
	b.ReportMetric(float64(n), "bytes/page")
}
