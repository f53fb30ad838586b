package replay_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/recsynth"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/replay"
	"github.com/vramtop/vramtop/sampler"
)

// fastDemoRecording records span of the demo in fast mode (50 ms, an hour
// of history) with a fake clock, into dir.
func fastDemoRecording(b *testing.B, dir string, span time.Duration) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("fast-%v.jsonl", span))
	t0 := time.Date(2026, 3, 14, 1, 0, 0, 0, time.UTC)
	if _, err := recsynth.Record(path, demo.New(t0), t0, sampler.MinInterval, sampler.DefaultHistory, span); err != nil {
		b.Fatal(err)
	}
	return path
}

// cpuTime is the CPU time this process has used (on a shared machine a
// steadier measure than the wall clock).
func cpuTime() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// peakHeap runs f and returns the most heap memory in use while it ran
// (sampled every millisecond).
func peakHeap(f func()) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak
}

// BenchmarkReplayAt opens a fast-mode recording of the demo (1 h and 4 h
// long) and rebuilds the snapshot at its start, middle and end, as `vramtop
// replay --once --at` does; it reports the peak heap in use and, for the
// built command itself, its wall time and peak RSS.
//
//	go test -run '^$' -bench ReplayAt -benchmem -benchtime 3x ./replay
func BenchmarkReplayAt(b *testing.B) {
	bin := testbin.Build(b)
	dir := b.TempDir()
	for _, span := range []time.Duration{time.Hour, 4 * time.Hour} {
		path := fastDemoRecording(b, dir, span)
		st, _ := os.Stat(path)
		for _, at := range []string{"start", "+" + (span / 2).String(), "end"} {
			b.Run(fmt.Sprintf("%v-%dMB/at=%s", span, st.Size()>>20, at), func(b *testing.B) {
				var heap uint64
				cpu0 := cpuTime()
				for b.Loop() {
					heap = max(heap, peakHeap(func() {
						rec, err := replay.Load([]string{path}, nil)
						if err != nil {
							b.Fatal(err)
						}
						t, err := replay.ParseMoment(at, rec)
						if err != nil {
							b.Fatal(err)
						}
						if s := rec.Snapshot(rec.Index(t)); len(s.Devices) == 0 {
							b.Fatal("no devices")
						}
						rec.Close()
					}))
				}
				b.ReportMetric(float64((cpuTime()-cpu0)/time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
				// The command, as a user runs it.
				cmd := exec.Command(bin, "replay", "--once", "--json", "--at", at, path)
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				b.ReportMetric(float64(time.Since(start).Milliseconds()), "cmd-ms")
				b.ReportMetric(float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Milliseconds()), "cmd-cpu-ms")
				b.ReportMetric(float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)/1024, "cmd-maxRSS-MiB")
			})
		}
	}
}

// TestWriteBenchRecordings writes the benchmark's recordings (fast-mode
// demo, 1 h and 4 h) into $VRAMTOP_REPLAY_BENCH_DIR, for measuring the
// command itself (docs/PERFORMANCE.md); skipped without it.
func TestWriteBenchRecordings(t *testing.T) {
	dir := os.Getenv("VRAMTOP_REPLAY_BENCH_DIR")
	if dir == "" {
		t.Skip("VRAMTOP_REPLAY_BENCH_DIR not set")
	}
	t0 := time.Date(2026, 3, 14, 1, 0, 0, 0, time.UTC)
	for _, span := range []time.Duration{time.Hour, 4 * time.Hour} {
		path := filepath.Join(dir, fmt.Sprintf("fast-%v.jsonl", span))
		os.Remove(path)
		if _, err := recsynth.Record(path, demo.New(t0), t0, sampler.MinInterval, sampler.DefaultHistory, span); err != nil {
			t.Fatal(err)
		}
		t.Log(path)
	}
}
