package sampler

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRingPush is one sample into a full one-hour ring at 50 ms
// (72,000 samples): the ring allocates one 2 KiB block per 128 samples,
// never per sample.
func BenchmarkRingPush(b *testing.B) {
	r := NewRing(CapacityFor(DefaultHistory, MinInterval))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < r.Cap(); i++ {
		r.Push(now.Add(time.Duration(i)*MinInterval), uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Push(now, uint64(i))
	}
}

// BenchmarkSamplerTickMemory8 is a sampler tick of the device-memory path
// alone (read 8 GPUs of a scripted source, push each reading into its ring) at the 50 ms
// fast interval with one hour of history: the process lists, the process
// utilization and publishing are held off, as on the ticks where they are
// not due.
func BenchmarkSamplerTickMemory8(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(newFake(8), Config{Interval: MinInterval})
	if err != nil {
		b.Fatal(err)
	}
	now := start.Add(10 * time.Minute)
	s.Tick(now) // the first tick does everything once
	if len(s.devs) != 8 {
		b.Fatalf("%d devices, want 8", len(s.devs))
	}
	// Only the memory path is due from here on.
	never := now.Add(1000 * time.Hour)
	s.lastProc, s.lastUtil, s.lastPub = never, never, never
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(MinInterval)
		if _, published := s.Tick(now); published {
			b.Fatal("published")
		}
	}
}

// scaleSource is a synthetic server: devs GPUs with procs processes each.
// With a lifetime, each process slot runs one process after another, each
// living that long (their starts staggered over the slots), so procs new
// processes per device replace as many exited ones every lifetime; without
// one, every process lives for ever.
type scaleSource struct {
	devs, procs int
	life        time.Duration
	start       time.Time
	commands    []string
}

func newScaleSource(devs, procs int, life time.Duration, start time.Time) *scaleSource {
	s := &scaleSource{devs: devs, procs: procs, life: life, start: start}
	for j := range devs * procs {
		s.commands = append(s.commands, fmt.Sprintf("python train.py --config runs/%05d.yaml --rank %d", j, j%procs))
	}
	return s
}

func (s *scaleSource) Info() SourceInfo {
	info := SourceInfo{Kind: "synthetic", Hostname: "bench"}
	for i := range s.devs {
		info.Devices = append(info.Devices, DeviceInfo{ID: strconv.Itoa(i), Index: i, Name: "GPU"})
	}
	return info
}

func (s *scaleSource) ReadMemory(now time.Time, out []MemSample) error {
	el := uint64(now.Sub(s.start) / time.Millisecond)
	for i := range out {
		used := 40<<30 + (el*uint64(i+1))%(8<<30)
		out[i] = MemSample{Total: 80 << 30, Used: used, Free: 80<<30 - used}
	}
	return nil
}

func (s *scaleSource) ReadProcesses(now time.Time, buf []ProcSample, _ []error) ([]ProcSample, error) {
	el := now.Sub(s.start)
	for d := range s.devs {
		for j := range s.procs {
			slot := d*s.procs + j
			gen, started := int64(0), s.start.Add(-time.Hour)
			if s.life > 0 {
				// Slot j's processes start at j/procs of a lifetime.
				shift := s.life * time.Duration(j) / time.Duration(s.procs)
				gen = int64((el + shift) / s.life)
				started = s.start.Add(time.Duration(gen)*s.life - shift)
			}
			pid := uint32(1000 + int64(slot) + gen*int64(s.devs*s.procs))
			used := uint64(1<<30) + uint64(el/time.Second)*uint64(j+1)%(1<<28)
			buf = append(buf, ProcSample{Device: d, Process: Process{PID: pid, UsedBytes: Ptr(used), Type: "compute",
				User: "user", UID: scaleUID, Command: s.commands[slot], Visible: true, StartTime: started}})
		}
	}
	return buf, nil
}

// scaleUID is every process's UID, one pointer for all, as a source shares
// a value that does not change.
var scaleUID = Ptr(uint32(1000))

func (s *scaleSource) ReadProcessUtilization(time.Time, map[UtilKey]float64) error { return nil }
func (s *scaleSource) Close() error                                                { return nil }

// scaleCase is one size of BenchmarkSamplerScale.
type scaleCase struct {
	name        string
	devs, procs int
	life        time.Duration // 0: long-lived
	interval    time.Duration
}

// scaleState is a sampler that has run a scale case for its warm-up, kept
// between the benchmark's runs (the testing package calls a benchmark more
// than once) so the warm-up is paid once.
type scaleState struct {
	name string
	s    *Sampler
	now  time.Time
	held Snapshot // the latest snapshot, as a consumer holds it
}

var scaleCache *scaleState

// scaleWarm is how long each case runs on the fake clock before it is
// measured: the history fills and the exited processes level off within it.
// VRAMTOP_BENCH_WARM (a duration) shortens it for a quick look.
func scaleWarm(b *testing.B) time.Duration {
	if v := os.Getenv("VRAMTOP_BENCH_WARM"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("VRAMTOP_BENCH_WARM: %v", err)
		}
		return d
	}
	return DefaultHistory
}

func warmScale(b *testing.B, c scaleCase) *scaleState {
	if scaleCache != nil && scaleCache.name == c.name {
		return scaleCache
	}
	scaleCache = nil // let the previous case's memory go before this one is measured
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(newScaleSource(c.devs, c.procs, c.life, start), Config{Interval: c.interval, History: DefaultHistory})
	if err != nil {
		b.Fatal(err)
	}
	st := &scaleState{name: c.name, s: s, now: start}
	for end := start.Add(scaleWarm(b)); st.now.Before(end); st.now = st.now.Add(c.interval) {
		if snap, ok := s.Tick(st.now); ok {
			st.held = snap
		}
	}
	scaleCache = st
	return st
}

// BenchmarkSamplerScale runs the sampler over synthetic servers of 8 GPUs
// for an hour of fake time, then measures its ticks: ms/tick is the
// sampler's time per tick, cpu-ms/tick the CPU time the test process spent
// per tick (the garbage collector's included; on a busy machine a steadier
// figure than the wall time), heap-MB the live heap after a collection (the
// sampler, its history and the snapshot a consumer holds), processes the
// processes in the last snapshot (live and exited).
//
//	go test ./sampler -run '^$' -bench SamplerScale -benchmem -benchtime 20x
func BenchmarkSamplerScale(b *testing.B) {
	cases := []scaleCase{
		{"churn-8x100-1s", 8, 100, 5 * time.Second, time.Second},
		{"churn-8x1000-1s", 8, 1000, 5 * time.Second, time.Second},
		{"long-8x1000-50ms", 8, 1000, 0, MinInterval},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			st := warmScale(b, c)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				st.now = st.now.Add(c.interval)
				if snap, ok := st.s.Tick(st.now); ok {
					st.held = snap
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/tick")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/tick")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-MB")
			n := 0
			for _, d := range st.held.Devices {
				n += len(d.Processes)
			}
			b.ReportMetric(float64(n), "processes")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
