package usage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/recsynth"
	"github.com/vramtop/vramtop/usage"
)

// BenchmarkUsageRecording accounts for recordings of a busy node (8 GPUs ×
// 20 processes, a sample a second) 15 minutes and 2 hours long, and
// reports the peak live heap while it reads: reading streams, so the peak
// stays the same as the recording grows eightfold.
//
//	go test -run '^$' -bench BenchmarkUsageRecording -benchtime 1x ./usage
func BenchmarkUsageRecording(b *testing.B) {
	start := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	for _, span := range []time.Duration{15 * time.Minute, 2 * time.Hour} {
		path := filepath.Join(b.TempDir(), "node.jsonl.gz")
		n, err := recsynth.Record(path, recsynth.New(8, 20, start, 10*time.Minute), start, time.Second, time.Minute, span)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%v-%dlines", span, n), func(b *testing.B) {
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			go func() {
				defer close(done)
				for {
					metrics.Read(sample)
					if v := sample[0].Value.Uint64(); v > peak.Load() {
						peak.Store(v)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			runtime.GC()
			for range b.N {
				a := usage.New(usage.Options{})
				if err := usage.AddRecording(context.Background(), a, []string{path}, nil); err != nil {
					b.Fatal(err)
				}
				if rep := a.Report(); len(rep.Users) != 20 {
					b.Fatalf("%d users", len(rep.Users))
				}
			}
			close(stop)
			<-done
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
