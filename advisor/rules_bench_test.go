package advisor

import (
	"fmt"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// benchSnap is 8 GPUs with 100 processes each and an hour of history at
// 1 s (3,600 samples per device and per process). Most processes are flat
// with noise; every tenth grows; with nearFull the cards are at 95% with a
// spiky history, so the spike and trend rules read their windows.
func benchSnap(nearFull bool) sampler.Snapshot {
	const n = 3600
	var devs []sampler.Device
	for g := 0; g < 8; g++ {
		var procs []sampler.Process
		var sum uint64
		for k := 0; k < 100; k++ {
			vals := make([]uint64, n)
			base := uint64(200+k) * oneMiB
			for i := range vals {
				vals[i] = base + uint64((i*7919+k)%13)*oneMiB
				if k%10 == 0 {
					vals[i] = base + uint64(i)*oneMiB/8
				}
				if nearFull && i%300 == 0 {
					vals[i] += 2 * oneGiB
				}
			}
			p := withHistory(synProc(uint32(1000*g+k), fmt.Sprintf("user%d", k%7), "python train.py", 0), time.Second, vals)
			p.UtilizationPercent = sampler.Ptr(float64(k % 3))
			procs = append(procs, p)
			sum += p.Used()
		}
		used := sum + oneGiB
		total := used * 2
		if nearFull {
			total = used * 100 / 95
		}
		d := synDev(fmt.Sprint(g), total, used, procs...)
		vals := synRamp(n, used-n*oneMiB/4, int64(oneMiB/4))
		d.History = synSeries(synNow, time.Second, vals)
		d.UtilizationPercent = sampler.Ptr(50.0)
		devs = append(devs, d)
	}
	return synSnap(devs...)
}

// benchObserve feeds the same server to a Monitor at times step apart,
// cycling over a minute (the histories stay put; the windows barely move).
func benchObserve(b *testing.B, nearFull bool, step time.Duration) {
	s := benchSnap(nearFull)
	m := NewMonitor(Config{User: "user0"})
	n := int(time.Minute/step) + 1
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Time = synNow.Add(time.Duration(i%n) * step)
		m.Observe(s)
	}
}

// BenchmarkObserve8x100 is the cost of the rules on every snapshot of a
// busy 8-GPU server with 100 processes per GPU, snapshots 250 ms apart
// (the fastest the sampler publishes).
func BenchmarkObserve8x100(b *testing.B) { benchObserve(b, false, 250*time.Millisecond) }

// BenchmarkObserve8x100Reread is the same with every process's history
// re-read on each snapshot (snapshots 5 s apart).
func BenchmarkObserve8x100Reread(b *testing.B) { benchObserve(b, false, leakRecheck) }

// BenchmarkObserve8x100NearFull has every card near full with spiky
// processes: 800 spike alerts to write on every snapshot.
func BenchmarkObserve8x100NearFull(b *testing.B) { benchObserve(b, true, 250*time.Millisecond) }

// BenchmarkAdvise8x100 is the advice for one process of that server.
func BenchmarkAdvise8x100(b *testing.B) {
	s := benchSnap(true)
	b.ReportAllocs()
	for b.Loop() {
		Advise(s, Target{DeviceID: "3", PID: 3010}, Config{User: "user0"})
	}
}
