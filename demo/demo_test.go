package demo

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

var demoStart = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

// demoRun ticks a sampler over a demo at `every` from demoStart to
// demoStart+until and calls f with each published snapshot.
func demoRun(t *testing.T, d *Demo, every, until time.Duration, f func(el time.Duration, snap sampler.Snapshot)) *sampler.Sampler {
	t.Helper()
	s := newSampler(t, d, sampler.Config{Interval: max(every, sampler.MinInterval)})
	for el := time.Duration(0); el <= until; el += every {
		if snap, ok := s.Tick(demoStart.Add(el)); ok && f != nil {
			f(el, snap)
		}
	}
	return s
}

func demoProcess(snap sampler.Snapshot, devID, user string) (sampler.Process, bool) {
	d, _ := snap.Device(devID)
	for _, p := range d.Processes {
		if p.User == user {
			return p, true
		}
	}
	return sampler.Process{}, false
}

func TestDemoIsDeterministic(t *testing.T) {
	var a, b []sampler.Snapshot
	demoRun(t, New(demoStart), 250*time.Millisecond, 6*time.Minute, func(_ time.Duration, s sampler.Snapshot) { a = append(a, s) })
	demoRun(t, New(demoStart), 250*time.Millisecond, 6*time.Minute, func(_ time.Duration, s sampler.Snapshot) { b = append(b, s) })
	if len(a) != len(b) || len(a) < int(6*time.Minute/sampler.MinPublishInterval) {
		t.Fatalf("%d and %d snapshots", len(a), len(b))
	}
	for i := 0; i < len(a); i += 37 {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("snapshot %d differs between two demos started at the same time", i)
		}
	}
	// The numbers move: the story is not a still picture.
	first, last := a[0].Devices[0], a[len(a)-1].Devices[0]
	if first.MemoryUsed == last.MemoryUsed || *first.UtilizationPercent == *last.UtilizationPercent {
		t.Fatal("GPU 0 shows the same numbers at the start and six minutes in")
	}
}

func TestDemoSourceInfo(t *testing.T) {
	d := New(demoStart)
	info := d.Info()
	if info.Kind != "demo" || !info.Demo || info.Hostname != "demo-node" || info.DriverVersion != "580.95.05" {
		t.Fatalf("info = %+v", info)
	}
	ids := []string{}
	for _, di := range info.Devices {
		ids = append(ids, di.ID)
	}
	if want := []string{"0", "1", "2", "3", "3/1", "3/2", "4"}; !slices.Equal(ids, want) {
		t.Fatalf("device IDs %v, want %v", ids, want)
	}
	snap, _ := newSampler(t, d, sampler.Config{}).Tick(demoStart)
	if !snap.Demo || snap.Source != "demo" {
		t.Fatal("the snapshot is not labelled as demo data")
	}
	// Info hands out copies: a caller that writes to them changes nothing.
	info.Devices[4].MIG.GPUInstanceID = 99
	if d.Info().Devices[4].MIG.GPUInstanceID != 1 {
		t.Fatal("Info shares its MIG description with callers")
	}

	if n := len(NewGPUs(demoStart, 8).Info().Devices); n != 10 {
		t.Fatalf("8 GPUs give %d devices, want 10 (GPU 3's two MIG instances are devices)", n)
	}
	if n := len(NewGPUs(demoStart, 1).Info().Devices); n != 6 {
		t.Fatalf("a demo of 1 GPU gives %d devices, want 4 GPUs (6 devices)", n)
	}
}

func TestDemoMemoryAddsUp(t *testing.T) {
	demoRun(t, NewGPUs(demoStart, 8), time.Second, 10*time.Minute, func(el time.Duration, snap sampler.Snapshot) {
		var migUsed uint64
		for _, d := range snap.Devices {
			reserved := uint64(0)
			if d.MemoryReserved != nil {
				reserved = *d.MemoryReserved
			}
			if d.MemoryUsed+d.MemoryFree+reserved != d.MemoryTotal {
				t.Fatalf("%s at %v: used %d + free %d + reserved %d != total %d", d.ID, el, d.MemoryUsed, d.MemoryFree, reserved, d.MemoryTotal)
			}
			if d.MIG != nil {
				migUsed += d.MemoryUsed
			}
		}
		if p, _ := snap.Device("3"); p.MemoryUsed != migUsed {
			t.Fatalf("MIG parent uses %d, its instances %d", p.MemoryUsed, migUsed)
		}
	})
}

func TestDemoCardSizes(t *testing.T) {
	snap, _ := newSampler(t, New(demoStart), sampler.Config{}).Tick(demoStart)
	for _, d := range snap.Devices {
		switch d.Name {
		case "NVIDIA H100 80GB HBM3":
			if d.MemoryTotal != 81559*demoMiB {
				t.Errorf("%s: total %d MiB", d.ID, d.MemoryTotal/demoMiB)
			}
		case "NVIDIA H200":
			if d.MemoryTotal != 143771*demoMiB {
				t.Errorf("%s: total %d MiB", d.ID, d.MemoryTotal/demoMiB)
			}
		}
		if r := d.MemoryReserved; r != nil && d.MIG == nil && (*r < 500*demoMiB || *r > 616*demoMiB) {
			t.Errorf("%s: reserved %d MiB, want what real cards reserve (500–616 MiB)", d.ID, *r/demoMiB)
		}
	}
}

func TestDemoTrainingJobSpikesPastCritical(t *testing.T) {
	// Read GPU 0 at 50 ms, as the fast mode does, for five minutes.
	d := New(demoStart)
	s := newSampler(t, d, sampler.Config{Interval: 50 * time.Millisecond, History: 10 * time.Minute})
	var snap sampler.Snapshot
	for el := time.Duration(0); el <= 5*time.Minute; el += 50 * time.Millisecond {
		if sn, ok := s.Tick(demoStart.Add(el)); ok {
			snap = sn
		}
	}
	gpu0, _ := snap.Device("0")
	total := float64(gpu0.MemoryTotal)
	pct := func(v uint64) float64 { return float64(v) / total * 100 }

	// The job ramps up over the first minutes.
	h := gpu0.History
	if first, later := pct(firstValue(h)), pct(firstValue(h.Since(demoStart.Add(3*time.Minute)))); first > 5 || later < 60 {
		t.Fatalf("GPU 0 at %.0f%% at the start and %.0f%% at 3 min, want a job that ramps up from nearly nothing", first, later)
	}
	// Episodes above 90%: several, each 200–400 ms, the GPU otherwise
	// below the threshold.
	var episodes []time.Duration
	var startAt time.Time
	in := false
	above := 0
	h.Each(func(tm time.Time, v uint64) {
		hot := pct(v) > 90
		if hot {
			above++
		}
		switch {
		case hot && !in:
			in, startAt = true, tm
		case !hot && in:
			in = false
			episodes = append(episodes, tm.Sub(startAt))
		}
	})
	if len(episodes) == 0 {
		t.Fatal("GPU 0 never crossed 90% in the first five minutes")
	}
	if spikes := countSpikes(h, 5000*demoMiB); len(episodes) >= spikes {
		t.Fatalf("all %d spikes crossed 90%%, want only some", spikes)
	}
	for _, e := range episodes {
		if e < 200*time.Millisecond || e > 450*time.Millisecond {
			t.Fatalf("a spike lasted %v, want 200–400 ms", e)
		}
	}
	if frac := float64(above) / float64(h.Len()); frac > 0.01 {
		t.Fatalf("GPU 0 above 90%% for %.1f%% of samples, want only brief spikes", frac*100)
	}
	// Peak-hold: the 250 ms snapshots may miss the spike, their history does not.
	if pct(gpu0.PeakUsed) <= 90 {
		t.Fatalf("peak in the history %.1f%%, want above 90%%", pct(gpu0.PeakUsed))
	}
}

func firstValue(w sampler.Window) uint64 {
	_, v := w.At(0)
	return v
}

// countSpikes counts the jumps of more than jump between samples.
func countSpikes(w sampler.Window, jump uint64) int {
	n := 0
	for i := 1; i < w.Len(); i++ {
		_, a := w.At(i - 1)
		_, b := w.At(i)
		if b > a+jump {
			n++
		}
	}
	return n
}

func TestDemoSecondUserArrivesOnGPU0(t *testing.T) {
	var before, after bool
	var arrived time.Duration
	demoRun(t, New(demoStart), 250*time.Millisecond, 3*time.Minute, func(el time.Duration, snap sampler.Snapshot) {
		bob, ok := demoProcess(snap, "0", "bob")
		if !ok {
			if after {
				t.Fatal("bob's job left again")
			}
			before = true
			return
		}
		if !after {
			after, arrived = true, el
		}
		if bob.Exited || bob.User == User {
			t.Fatalf("bob: %+v", bob)
		}
		if _, ok := demoProcess(snap, "0", User); !ok {
			t.Fatal("alice's job is gone from GPU 0")
		}
	})
	if !before || !after || arrived < 90*time.Second || arrived > 150*time.Second {
		t.Fatalf("bob seen before %v, after %v, arriving at %v; want him to arrive at about 2 min", before, after, arrived)
	}
}

func TestDemoLeakOnlyGrows(t *testing.T) {
	var prev uint64
	var first, last uint64
	demoRun(t, New(demoStart), 250*time.Millisecond, 5*time.Minute, func(el time.Duration, snap sampler.Snapshot) {
		carol, ok := demoProcess(snap, "1", "carol")
		if !ok || carol.UsedBytes == nil {
			t.Fatalf("carol's server missing at %v", el)
		}
		if carol.Used() < prev {
			t.Fatalf("the leaking process shrank at %v: %d -> %d", el, prev, carol.Used())
		}
		prev = carol.Used()
		if first == 0 {
			first = prev
		}
		last = prev
		dave, ok := demoProcess(snap, "1", "dave")
		if !ok || dave.Used() < 4*1024*demoMiB || dave.UtilizationPercent == nil || *dave.UtilizationPercent != 0 {
			t.Fatalf("dave's idle kernel: %+v", dave)
		}
	})
	// About 8 MiB/s for five minutes.
	if grew := float64(last-first) / demoMiB; grew < 7*300 || grew > 9*300 {
		t.Fatalf("the leak grew %.0f MiB in 5 min, want about 8 MiB/s", grew)
	}
}

func TestDemoLeakEndsInARestart(t *testing.T) {
	// Over a few hours the leaking server is restarted (a new process) and
	// its memory starts low again; GPU 1 never exceeds its card.
	d := New(demoStart)
	pids := map[uint32]bool{}
	s := newSampler(t, d, sampler.Config{Interval: 10 * time.Second, History: 5 * time.Hour, ExitedTTL: time.Minute})
	for el := time.Duration(0); el <= 4*time.Hour; el += 10 * time.Second {
		snap, _ := s.Tick(demoStart.Add(el))
		gpu1, _ := snap.Device("1")
		if gpu1.UsedPercent() > 100 {
			t.Fatalf("GPU 1 at %.1f%%", gpu1.UsedPercent())
		}
		if carol, ok := demoProcess(snap, "1", "carol"); ok && !carol.Exited {
			pids[carol.PID] = true
		}
	}
	if len(pids) < 2 {
		t.Fatalf("carol's server ran as %d process(es) over 4 h, want a restart", len(pids))
	}
}

func TestDemoProcessExitsAndIsDropped(t *testing.T) {
	const exitAt = 4 * time.Minute
	d := New(demoStart)
	s := newSampler(t, d, sampler.Config{Interval: time.Second, ExitedTTL: time.Minute})
	var sawLive, sawExited, dropped bool
	for el := time.Duration(0); el <= exitAt+2*time.Minute; el += time.Second {
		snap, _ := s.Tick(demoStart.Add(el))
		frank, ok := demoProcess(snap, "2", "frank")
		switch {
		case ok && !frank.Exited:
			if sawExited {
				t.Fatal("frank's job came back")
			}
			sawLive = true
		case ok && frank.Exited:
			sawExited = true
			if frank.UsedBytes != nil || frank.PeakBytes == 0 {
				t.Fatalf("exited job: used %v, peak %d", frank.UsedBytes, frank.PeakBytes)
			}
		case !ok && sawExited:
			dropped = true
		}
	}
	if !sawLive || !sawExited || !dropped {
		t.Fatalf("frank's job: live %v, exited %v, dropped %v", sawLive, sawExited, dropped)
	}
}

func TestDemoAbsentFields(t *testing.T) {
	snap, _ := newSampler(t, New(demoStart), sampler.Config{}).Tick(demoStart.Add(3 * time.Minute))

	// GPU 2: a process of another PID namespace, and unattributed memory.
	gpu2, _ := snap.Device("2")
	var hidden *sampler.Process
	for i, p := range gpu2.Processes {
		if !p.Visible {
			hidden = &gpu2.Processes[i]
		}
	}
	if hidden == nil || hidden.User != "" || hidden.Container == "" || hidden.UsedBytes == nil {
		t.Fatalf("GPU 2's process of another PID namespace: %+v", hidden)
	}
	if gpu2.Unattributed == nil || *gpu2.Unattributed == 0 {
		t.Fatal("GPU 2 has no unattributed memory")
	}

	// GPU 3 in MIG mode.
	parent, _ := snap.Device("3")
	if !parent.MIGEnabled || parent.UtilizationPercent != nil || parent.Unattributed != nil || len(parent.Processes) != 0 {
		t.Fatalf("MIG parent: %+v", parent)
	}
	for gi, id := range []string{"3/1", "3/2"} {
		inst, ok := snap.Device(id)
		if !ok || inst.MIG == nil || inst.MIG.ParentIndex != 3 || inst.MIG.GPUInstanceID != gi+1 {
			t.Fatalf("MIG instance %s: %+v", id, inst)
		}
		if len(inst.Processes) == 0 || inst.MemoryUsed == 0 || inst.UtilizationPercent != nil || inst.TemperatureC != nil {
			t.Fatalf("MIG instance %s: %d processes, used %d, util %v, temp %v", id, len(inst.Processes), inst.MemoryUsed, inst.UtilizationPercent, inst.TemperatureC)
		}
	}

	// GPU 4: memory v1 only, no per-process memory.
	v1, _ := snap.Device("4")
	if v1.MemoryReserved != nil || v1.UtilizationPercent != nil || v1.TemperatureC != nil || v1.Unattributed != nil {
		t.Fatalf("v1-only device reports what it cannot: %+v", v1)
	}
	if len(v1.Processes) == 0 {
		t.Fatal("GPU 4 lists no processes")
	}
	for _, p := range v1.Processes {
		if p.UsedBytes != nil {
			t.Fatalf("process %d on GPU 4 has a memory figure", p.PID)
		}
	}

	// The ordinary GPUs report everything.
	for _, id := range []string{"0", "1", "2"} {
		d, _ := snap.Device(id)
		if d.MemoryReserved == nil || d.UtilizationPercent == nil || d.TemperatureC == nil || d.PowerWatts == nil {
			t.Fatalf("GPU %s lacks a field: %+v", id, d)
		}
		if *d.TemperatureC < 25 || *d.TemperatureC > 90 || *d.PowerWatts < 50 || *d.PowerWatts > 700 {
			t.Fatalf("GPU %s: %d °C, %.0f W", id, *d.TemperatureC, *d.PowerWatts)
		}
		if d.SMClockMHz == nil || d.MemoryClockMHz == nil || *d.SMClockMHz < 200 || *d.SMClockMHz > 2100 || *d.MemoryClockMHz < 800 || *d.MemoryClockMHz > 3300 {
			t.Fatalf("GPU %s: SM clock %v MHz, memory clock %v MHz", id, d.SMClockMHz, d.MemoryClockMHz)
		}
	}
}

func TestDemoReadMemoryDoesNotAllocate(t *testing.T) {
	d := NewGPUs(demoStart, 8)
	d.AddProcess(0, 999, "alice", "python child.py", func(time.Duration) uint64 { return 1 << 30 })
	out := make([]sampler.MemSample, len(d.Info().Devices))
	now := demoStart
	if n := testing.AllocsPerRun(100, func() {
		now = now.Add(50 * time.Millisecond)
		d.ReadMemory(now, out)
	}); n != 0 {
		t.Fatalf("ReadMemory allocates %v times per call", n)
	}
}

func TestDemoAddProcess(t *testing.T) {
	d := New(demoStart)
	s := newSampler(t, d, sampler.Config{Interval: 50 * time.Millisecond})
	const pid = 777777
	added := make(chan struct{})
	go func() { // another goroutine than the sampler's, as in `vramtop run --demo`
		defer close(added)
		d.AddProcess(1, pid, User, "python child.py", func(el time.Duration) uint64 {
			return 2<<30 + uint64(el/time.Second)*(1<<20)
		})
	}()
	// Tick until the child has been added and then seen in a few snapshots
	// (the goroutine may be scheduled late on a loaded machine).
	var withChild sampler.Snapshot
	seen := 0
	for el := time.Duration(0); seen < 10 && el <= 10*time.Minute; el += 50 * time.Millisecond {
		snap, ok := s.Tick(demoStart.Add(el))
		if !ok {
			continue
		}
		if _, found := demoProcessPID(snap, "1", pid); found {
			withChild = snap
			seen++
		}
		if seen == 0 && el > 20*time.Second {
			<-added
		}
	}
	<-added
	child, ok := demoProcessPID(withChild, "1", pid)
	if !ok || child.User != User || child.Command != "python child.py" || child.UsedBytes == nil || child.Used() < 2<<30 {
		t.Fatalf("the added process on GPU 1: %+v", child)
	}
	// The device's memory includes it, and nothing is left unattributed (the
	// device is read more often than the process list, so it may have grown
	// since).
	gpu1, _ := withChild.Device("1")
	var sum uint64
	for _, p := range gpu1.Processes {
		sum += p.Used()
	}
	if gpu1.MemoryUsed < sum || *gpu1.Unattributed != 0 {
		t.Fatalf("GPU 1 used %d, processes %d, unattributed %d", gpu1.MemoryUsed, sum, *gpu1.Unattributed)
	}

	d.RemoveProcess(pid)
	at := withChild.Time
	var snap sampler.Snapshot
	for el := time.Duration(0); el <= time.Second; el += 50 * time.Millisecond {
		if sn, ok := s.Tick(at.Add(el)); ok {
			snap = sn
		}
	}
	if child, ok := demoProcessPID(snap, "1", pid); !ok || !child.Exited {
		t.Fatalf("the removed process: %+v, listed %v; want it shown as exited", child, ok)
	}
}

func demoProcessPID(snap sampler.Snapshot, devID string, pid uint32) (sampler.Process, bool) {
	d, _ := snap.Device(devID)
	for _, p := range d.Processes {
		if p.PID == pid {
			return p, true
		}
	}
	return sampler.Process{}, false
}

func TestDemoBackfill(t *testing.T) {
	now := demoStart.Add(Lead)
	if ts, vs := New(demoStart).Backfill("0"); ts != nil || vs != nil {
		t.Fatal("a demo without BackfillTo gave a history")
	}
	d := New(demoStart).BackfillTo(now)
	ts, vs := d.Backfill("0")
	if len(ts) != int(Lead/time.Second) || len(vs) != len(ts) {
		t.Fatalf("%d samples of GPU 0, want one a second for %v", len(ts), Lead)
	}
	// Each sample is what the demo reads at that moment.
	out := make([]sampler.MemSample, len(d.Info().Devices))
	for _, i := range []int{0, len(ts) / 2, len(ts) - 1} {
		New(demoStart).ReadMemory(ts[i], out)
		if vs[i] != out[0].Used {
			t.Errorf("sample %d at %v: %d, the demo reads %d", i, ts[i], vs[i], out[0].Used)
		}
	}
	if vs[0] >= vs[len(vs)-1] {
		t.Errorf("GPU 0's history does not show the training ramp: %d then %d", vs[0], vs[len(vs)-1])
	}
	if ts, _ := d.Backfill("no-such-device"); ts != nil {
		t.Error("an unknown device got a history")
	}
	// The sampler's first snapshot opens with that story.
	s := newSampler(t, d, sampler.Config{Now: func() time.Time { return now }})
	snap := s.Once()
	gpu0, _ := snap.Device("0")
	if gpu0.History.Len() < len(ts) {
		t.Errorf("first snapshot's GPU 0 history holds %d samples, want the %d backfilled and more", gpu0.History.Len(), len(ts))
	}
}

func newSampler(t *testing.T, src sampler.Source, cfg sampler.Config) *sampler.Sampler {
	t.Helper()
	s, err := sampler.New(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDemoJobsAndHostColumns: the demo shows who a process belongs to on a
// shared server (alice's training is Slurm job 4242, erin's server a
// Kubernetes pod) and what each visible process costs the host; the process
// of another PID namespace has none of it.
func TestDemoJobsAndHostColumns(t *testing.T) {
	snap, _ := newSampler(t, New(demoStart), sampler.Config{}).Tick(demoStart.Add(3 * time.Minute))
	jobs := map[uint32]string{}
	for _, d := range snap.Devices {
		for _, p := range d.Processes {
			if name := p.Job.Name(); name != "" {
				jobs[p.PID] = name
			}
			switch {
			case !p.Visible:
				if p.CPUPercent != nil || p.HostMemoryBytes != nil || p.Job != nil {
					t.Errorf("PID %d of another PID namespace: cpu %v, host memory %v, job %v; want none", p.PID, p.CPUPercent, p.HostMemoryBytes, p.Job)
				}
			case !p.Exited:
				if p.CPUPercent == nil || p.HostMemoryBytes == nil || *p.HostMemoryBytes == 0 {
					t.Errorf("PID %d (%s): cpu %v, host memory %v; want both", p.PID, p.User, p.CPUPercent, p.HostMemoryBytes)
				}
			}
		}
	}
	want := map[uint32]string{41230: "slurm 4242.0", 19088: "pod 7c0e2f4a"}
	if len(jobs) != len(want) || jobs[41230] != want[41230] || jobs[19088] != want[19088] {
		t.Fatalf("jobs %v, want %v", jobs, want)
	}
	gpu2, _ := snap.Device("2")
	for _, p := range gpu2.Processes {
		if p.PID == 19088 && (p.Job.K8sQOS != "burstable" || p.Job.Runtime != "containerd" || len(p.Job.ContainerID) != 64) {
			t.Fatalf("erin's pod: %+v; want a burstable pod's containerd container", p.Job)
		}
	}
	alice, _ := snap.Device("0")
	if p := alice.Processes[0]; p.PID != 41230 || *p.CPUPercent < 100 {
		t.Fatalf("GPU 0's first process %d at %v%% CPU, want alice's training job busy on more than a core", p.PID, *p.CPUPercent)
	}
}

// Each GPU's energy counter grows by its power integrated over time: the
// difference of two readings 30 s apart matches the power readings of
// another demo, 10 ms apart, summed by trapezoids; a job put on GPU 2 draws
// more power, and the counter counts it.
func TestDemoEnergyCounterIsPowerIntegrated(t *testing.T) {
	from, until := Lead, Lead+30*time.Second
	for _, withJob := range []bool{false, true} {
		counter, sampled := New(demoStart), New(demoStart)
		if withJob {
			for _, d := range []*Demo{counter, sampled} {
				d.AddProcess(2, 999, User, "python train.py", func(time.Duration) uint64 { return 1 << 30 })
			}
		}
		n := len(counter.Info().Devices)
		a, b := make([]sampler.MemSample, n), make([]sampler.MemSample, n)
		counter.ReadMemory(demoStart.Add(from), a)
		counter.ReadMemory(demoStart.Add(until), b)
		joules := make([]float64, n)
		prev, cur := make([]sampler.MemSample, n), make([]sampler.MemSample, n)
		sampled.ReadMemory(demoStart.Add(from), prev)
		const step = 10 * time.Millisecond
		for el := from + step; el <= until; el += step {
			sampled.ReadMemory(demoStart.Add(el), cur)
			for i := range cur {
				joules[i] += (prev[i].PowerW + cur[i].PowerW) / 2 * step.Seconds()
			}
			prev, cur = cur, prev
		}
		for i, id := range counter.Info().Devices {
			if !b[i].HasPower {
				if b[i].HasEnergy {
					t.Errorf("device %s: an energy counter without power", id.ID)
				}
				continue
			}
			if !a[i].HasEnergy || !b[i].HasEnergy || b[i].EnergyMJ < a[i].EnergyMJ || a[i].EnergyMJ < 1e11 {
				t.Fatalf("device %s: counter %d then %d mJ", id.ID, a[i].EnergyMJ, b[i].EnergyMJ)
			}
			got := float64(b[i].EnergyMJ-a[i].EnergyMJ) / 1000
			if got < joules[i]*0.995 || got > joules[i]*1.005 {
				t.Errorf("job %v, device %s: counter grew %.0f J over 30 s, the power integrated %.0f J", withJob, id.ID, got, joules[i])
			}
			if withJob && i == 2 && joules[i] < 30*(71+(700-71)*0.9*addedUtil/100) {
				t.Errorf("GPU 2 with a job: %.0f J over 30 s, less than the job's load alone draws", joules[i])
			}
		}
	}
}
