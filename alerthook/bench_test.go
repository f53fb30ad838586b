package alerthook

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
)

// peakHeap runs f and returns the most heap in use while it ran (sampled
// every millisecond).
func peakHeap(f func()) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak
}

// hugeHook prints 64 MiB.
const hugeHook = `head -c 67108864 /dev/zero`

// BenchmarkHookOutput: the peak heap of running a hook that prints 64 MiB,
// through the Runner (its first and last 4 KiB kept) and, for comparison,
// read whole into a buffer as the Runner did before.
func BenchmarkHookOutput(b *testing.B) {
	b.Run("runner", func(b *testing.B) {
		var peak uint64
		for b.Loop() {
			peak = max(peak, peakHeap(func() {
				r := New(hugeHook, Options{Timeout: time.Minute, Stderr: io.Discard})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { r.Run(ctx); close(done) }()
				r.Notify([]advisor.Alert{leak})
				for r.Ran() == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
				<-done
			}))
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	})
	b.Run("whole", func(b *testing.B) {
		var peak uint64
		for b.Loop() {
			peak = max(peak, peakHeap(func() {
				var out bytes.Buffer
				c := exec.Command("sh", "-c", hugeHook)
				c.Stdout, c.Stderr = &out, &out
				c.Run()
			}))
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	})
}
