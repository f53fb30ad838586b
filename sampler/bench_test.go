package sampler

import (
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
