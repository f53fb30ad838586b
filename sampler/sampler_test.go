package sampler

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const fakeGiB = 1 << 30

// fakeSource is a scripted Source. Tests set its fields between ticks; the
// mutex makes that safe while Run polls it from its own goroutine.
type fakeSource struct {
	mu       sync.Mutex
	info     SourceInfo
	mem      []MemSample
	procs    []ProcSample
	procErrs []error // per device
	util     map[UtilKey]float64
	// srcErr fails a whole read; panicIn names a method that panics.
	srcErr  error
	panicIn string

	memCalls, procCalls, utilCalls []time.Time
	closes                         int
	memRead                        chan struct{} // signalled on each ReadMemory, if set
	// hang, when set, makes ReadMemory wait until it is closed: a driver
	// call that does not return.
	hang chan struct{}
	// procGate, when set, holds ReadProcesses until it is closed.
	procGate chan struct{}
}

func newFake(n int) *fakeSource {
	f := &fakeSource{info: SourceInfo{Kind: "fake", Hostname: "host"}}
	for i := 0; i < n; i++ {
		f.info.Devices = append(f.info.Devices, DeviceInfo{ID: string(rune('0' + i)), Index: i, Name: "GPU"})
		f.mem = append(f.mem, MemSample{Total: 80 * fakeGiB, Used: fakeGiB, Free: 79 * fakeGiB})
	}
	f.procErrs = make([]error, n)
	return f
}

func (f *fakeSource) setUsed(dev int, used uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mem[dev].Used, f.mem[dev].Free = used, f.mem[dev].Total-used
}

func (f *fakeSource) setProcs(ps ...ProcSample) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs = ps
}

func (f *fakeSource) Info() SourceInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicIn == "info" {
		panic("info exploded")
	}
	info := f.info
	info.Devices = append([]DeviceInfo(nil), f.info.Devices...)
	return info
}

func (f *fakeSource) ReadMemory(now time.Time, out []MemSample) error {
	f.mu.Lock()
	f.memCalls = append(f.memCalls, now)
	if f.panicIn == "memory" {
		f.mu.Unlock()
		panic("memory exploded")
	}
	copy(out, f.mem)
	err := f.srcErr
	ch := f.memRead
	hang := f.hang
	f.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if hang != nil {
		<-hang
	}
	return err
}

func (f *fakeSource) ReadProcesses(now time.Time, buf []ProcSample, errs []error) ([]ProcSample, error) {
	f.mu.Lock()
	gate := f.procGate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procCalls = append(f.procCalls, now)
	if f.panicIn == "processes" {
		panic("process list exploded")
	}
	if f.srcErr != nil {
		return buf, f.srcErr
	}
	copy(errs, f.procErrs)
	return append(buf, f.procs...), nil
}

func (f *fakeSource) ReadProcessUtilization(now time.Time, out map[UtilKey]float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.utilCalls = append(f.utilCalls, now)
	for k, v := range f.util {
		out[k] = v
	}
	return nil
}

func (f *fakeSource) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	return nil
}

func (f *fakeSource) calls() (mem, proc, util []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.memCalls...), append([]time.Time(nil), f.procCalls...), append([]time.Time(nil), f.utilCalls...)
}

// runInBackground starts s.Run; cancel stops it, done gives what it returned.
func runInBackground(s *Sampler) (cancel context.CancelFunc, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- s.Run(ctx) }()
	return cancel, ch
}

func fakeProc(dev int, pid uint32, used uint64, started time.Time) ProcSample {
	return ProcSample{Device: dev, Process: Process{PID: pid, UsedBytes: Ptr(used), Type: "compute",
		User: "u", Command: "cmd", Visible: true, StartTime: started}}
}

func newSampler(t *testing.T, src Source, cfg Config) *Sampler {
	t.Helper()
	s, err := New(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func findProcess(t *testing.T, d Device, pid uint32, started time.Time) (Process, bool) {
	t.Helper()
	for _, p := range d.Processes {
		if p.PID == pid && p.StartTime.Equal(started) {
			return p, true
		}
	}
	return Process{}, false
}

// closestGap is the shortest gap between consecutive times.
func closestGap(ts []time.Time) time.Duration {
	gap := time.Duration(1<<63 - 1)
	for i := 1; i < len(ts); i++ {
		gap = min(gap, ts[i].Sub(ts[i-1]))
	}
	return gap
}

func TestCadenceAtFastInterval(t *testing.T) {
	f := newFake(2)
	f.setProcs(fakeProc(0, 10, fakeGiB, ringT0))
	s := newSampler(t, f, Config{Interval: 50 * time.Millisecond})
	var pubs []time.Time
	for i := 0; i <= 40; i++ { // 2 s of ticks at 50 ms
		now := ringT0.Add(time.Duration(i) * 50 * time.Millisecond)
		if _, ok := s.Tick(now); ok {
			pubs = append(pubs, now)
		}
	}
	mem, procs, util := f.calls()
	if len(mem) != 41 {
		t.Errorf("device memory read %d times in 41 ticks, want every tick", len(mem))
	}
	// In 2 s: one at the start, then one per period.
	every := func(d time.Duration) int { return int(2*time.Second/d) + 1 }
	if len(procs) != every(MinProcessInterval) || closestGap(procs) < MinProcessInterval {
		t.Errorf("process lists at %d times, closest %v apart; want %d, every %v", len(procs), closestGap(procs), every(MinProcessInterval), MinProcessInterval)
	}
	if len(util) != every(MinProcUtilInterval) || len(util) > 1 && closestGap(util) < MinProcUtilInterval {
		t.Errorf("process utilization read %d times, closest %v apart; want %d, every %v", len(util), closestGap(util), every(MinProcUtilInterval), MinProcUtilInterval)
	}
	if len(pubs) != every(MinPublishInterval) || closestGap(pubs) < MinPublishInterval {
		t.Errorf("published %d times, closest %v apart; want %d, every %v", len(pubs), closestGap(pubs), every(MinPublishInterval), MinPublishInterval)
	}
}

func TestSamplesBetweenPublishesKeepTheirPeak(t *testing.T) {
	// At 50 ms a 100 ms spike falls between two snapshots; the next
	// snapshot's history still holds it.
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: 50 * time.Millisecond})
	s.Tick(ringT0)
	n := int(MinPublishInterval / (50 * time.Millisecond))
	for i := 1; i <= n; i++ {
		used := uint64(2 * fakeGiB)
		if i == 2 || i == 3 {
			used = 70 * fakeGiB
		}
		f.setUsed(0, used)
		snap, ok := s.Tick(ringT0.Add(time.Duration(i) * 50 * time.Millisecond))
		if ok != (i == n) {
			t.Fatalf("tick %d: published %v", i, ok)
		}
		if ok {
			d := snap.Devices[0]
			if d.MemoryUsed != 2*fakeGiB || d.History.Max() != 70*fakeGiB || d.PeakUsed != 70*fakeGiB {
				t.Fatalf("used %d, history max %d, peak %d; want the spike kept in the history", d.MemoryUsed, d.History.Max(), d.PeakUsed)
			}
			if d.History.Len() != n+1 {
				t.Fatalf("history holds %d samples, want all %d", d.History.Len(), n+1)
			}
		}
	}
}

func TestTimerJitterDoesNotSkipTicks(t *testing.T) {
	// A 1 s timer fires a little late by a varying amount, so some ticks
	// come slightly less than 1 s after the previous one. Each must still
	// list processes and publish: the screen updates every second, not
	// every other.
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: time.Second})
	late := []time.Duration{3, 1, 2500, 200, 4, 900, 1, 1} // µs
	published := 0
	for i, l := range late {
		now := ringT0.Add(time.Duration(i)*time.Second + l*time.Microsecond)
		if _, ok := s.Tick(now); ok {
			published++
		}
	}
	_, procs, _ := f.calls()
	if published != len(late) || len(procs) != len(late) {
		t.Fatalf("%d ticks: %d snapshots and %d process lists, want one of each per tick", len(late), published, len(procs))
	}
}

func TestExitedProcessKeptWithItsPeakThenDropped(t *testing.T) {
	ttl := 10 * time.Second
	f := newFake(1)
	f.setUsed(0, 20*fakeGiB)
	s := newSampler(t, f, Config{Interval: time.Second, ExitedTTL: ttl})
	start := ringT0.Add(-time.Hour)
	other := fakeProc(0, 7, 2*fakeGiB, ringT0.Add(-time.Minute))
	for i, used := range []uint64{fakeGiB, 3 * fakeGiB, 2 * fakeGiB} {
		f.setProcs(fakeProc(0, 100, used, start), other)
		s.Tick(ringAt(i))
	}
	lastSeen := ringAt(2)
	f.setProcs(other)
	snap, _ := s.Tick(ringAt(3))
	p, ok := findProcess(t, snap.Devices[0], 100, start)
	if !ok {
		t.Fatal("a process that just exited vanished from the list")
	}
	if !p.Exited || p.UsedBytes != nil || p.PeakBytes != 3*fakeGiB {
		t.Fatalf("exited process: Exited %v, UsedBytes %v, PeakBytes %d; want exited, no current usage, peak 3 GiB", p.Exited, p.UsedBytes, p.PeakBytes)
	}
	if last := snap.Devices[0].Processes[len(snap.Devices[0].Processes)-1]; last.PID != 100 {
		t.Fatalf("exited process listed before a live one: %+v", snap.Devices[0].Processes)
	}
	if u := snap.Devices[0].Unattributed; u == nil || *u != 18*fakeGiB {
		t.Fatalf("unattributed = %v, want 18 GiB: an exited process no longer accounts for memory", u)
	}
	snap, _ = s.Tick(lastSeen.Add(ttl - time.Second))
	if _, ok := findProcess(t, snap.Devices[0], 100, start); !ok {
		t.Fatal("exited process dropped before its time was up")
	}
	snap, _ = s.Tick(lastSeen.Add(ttl + time.Second))
	if _, ok := findProcess(t, snap.Devices[0], 100, start); ok {
		t.Fatal("exited process still listed after ExitedTTL")
	}
	if _, ok := findProcess(t, snap.Devices[0], 7, other.StartTime); !ok {
		t.Fatal("the live process went missing")
	}
}

func TestReusedPIDIsANewProcess(t *testing.T) {
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: time.Second})
	oldStart, newStart := ringT0.Add(-time.Hour), ringT0.Add(2*time.Second)
	f.setProcs(fakeProc(0, 4242, 30*fakeGiB, oldStart))
	s.Tick(ringAt(0))
	s.Tick(ringAt(1))
	f.setProcs(fakeProc(0, 4242, 5*fakeGiB, newStart))
	snap, _ := s.Tick(ringAt(2))
	old, okOld := findProcess(t, snap.Devices[0], 4242, oldStart)
	cur, okNew := findProcess(t, snap.Devices[0], 4242, newStart)
	if !okOld || !okNew {
		t.Fatalf("want the old and the new process with PID 4242, got %+v", snap.Devices[0].Processes)
	}
	if !old.Exited || cur.Exited {
		t.Fatalf("old exited %v, new exited %v", old.Exited, cur.Exited)
	}
	if cur.PeakBytes != 5*fakeGiB || !cur.FirstSeen.Equal(ringAt(2)) || cur.History.Len() != 1 {
		t.Fatalf("new process inherited the old one's state: peak %d, first seen %v, %d history samples", cur.PeakBytes, cur.FirstSeen, cur.History.Len())
	}
}

func TestDeviceErrorIsIsolated(t *testing.T) {
	f := newFake(3)
	f.setProcs(fakeProc(0, 1, fakeGiB, ringT0), fakeProc(1, 2, fakeGiB, ringT0), fakeProc(2, 3, fakeGiB, ringT0))
	s := newSampler(t, f, Config{Interval: time.Second})
	s.Tick(ringAt(0))

	f.mu.Lock()
	f.mem[1] = MemSample{Err: errors.New("GPU is lost")}
	f.procErrs[2] = errors.New("no permission")
	f.procs = []ProcSample{fakeProc(1, 2, fakeGiB, ringT0)} // device 2's list failed; device 0's process exited
	f.mu.Unlock()
	f.setUsed(0, 5*fakeGiB)
	f.setUsed(2, 6*fakeGiB)
	snap, _ := s.Tick(ringAt(1))

	if snap.Err != "" {
		t.Fatalf("one failing device failed the whole snapshot: %q", snap.Err)
	}
	d0, d1, d2 := snap.Devices[0], snap.Devices[1], snap.Devices[2]
	if !strings.Contains(d1.Err, "GPU is lost") {
		t.Fatalf("device 1 error = %q, want the device's error", d1.Err)
	}
	if d0.Err != "" || d0.MemoryUsed != 5*fakeGiB || d2.MemoryUsed != 6*fakeGiB {
		t.Fatalf("the other devices stopped reporting: d0 %q %d, d2 %d", d0.Err, d0.MemoryUsed, d2.MemoryUsed)
	}
	if d1.History.Len() != 1 {
		t.Fatalf("a failed reading went into device 1's history (%d samples)", d1.History.Len())
	}
	if !strings.Contains(d2.Err, "no permission") {
		t.Fatalf("device 2 error = %q, want its process-list error", d2.Err)
	}
	if p, ok := findProcess(t, d2, 3, ringT0); !ok || p.Exited {
		t.Fatal("a process on a device whose list failed was marked exited")
	}
	if p, ok := findProcess(t, d0, 1, ringT0); !ok || !p.Exited {
		t.Fatal("device 0's listing stopped working when device 2's failed")
	}

	// The device recovers.
	f.mu.Lock()
	f.mem[1] = MemSample{Total: 80 * fakeGiB, Used: 9 * fakeGiB, Free: 71 * fakeGiB}
	f.procErrs[2] = nil
	f.mu.Unlock()
	snap, _ = s.Tick(ringAt(2))
	if d := snap.Devices[1]; d.Err != "" || d.MemoryUsed != 9*fakeGiB {
		t.Fatalf("device 1 after recovery: %q, used %d", d.Err, d.MemoryUsed)
	}
}

func TestSourceFailureKeepsLastValues(t *testing.T) {
	f := newFake(1)
	f.setUsed(0, 4*fakeGiB)
	s := newSampler(t, f, Config{Interval: time.Second})
	s.Tick(ringAt(0))
	f.mu.Lock()
	f.srcErr = errors.New("driver went away")
	f.mu.Unlock()
	f.setUsed(0, 50*fakeGiB)
	snap, _ := s.Tick(ringAt(1))
	if !strings.Contains(snap.Err, "driver went away") || snap.Devices[0].MemoryUsed != 4*fakeGiB {
		t.Fatalf("snapshot Err %q, used %d; want the error and the last known value", snap.Err, snap.Devices[0].MemoryUsed)
	}
}

func TestPanicInSourceIsRecovered(t *testing.T) {
	for _, where := range []string{"memory", "processes", "info"} {
		t.Run(where, func(t *testing.T) {
			f := newFake(1)
			f.setProcs(fakeProc(0, 1, fakeGiB, ringT0))
			s := newSampler(t, f, Config{Interval: time.Second})
			s.Tick(ringAt(0))
			f.mu.Lock()
			f.panicIn = where
			f.mu.Unlock()
			snap, ok := s.Tick(ringAt(1))
			if !ok || snap.Err == "" || !strings.Contains(strings.Join(snap.Warnings, "\n"), "panic") {
				t.Fatalf("published %v, Err %q, warnings %q; want the panic reported", ok, snap.Err, snap.Warnings)
			}
			f.mu.Lock()
			f.panicIn = ""
			f.mu.Unlock()
			f.setUsed(0, 7*fakeGiB)
			snap, ok = s.Tick(ringAt(2))
			if !ok || snap.Err != "" || len(snap.Warnings) != 0 || snap.Devices[0].MemoryUsed != 7*fakeGiB {
				t.Fatalf("next tick: published %v, Err %q, warnings %q, used %d; want a clean reading", ok, snap.Err, snap.Warnings, snap.Devices[0].MemoryUsed)
			}
			if _, ok := findProcess(t, snap.Devices[0], 1, ringT0); !ok {
				t.Fatal("processes lost after the panic")
			}
		})
	}
}

func TestUnattributed(t *testing.T) {
	na := fakeProc(0, 3, 0, ringT0)
	na.UsedBytes = nil
	cases := []struct {
		name  string
		procs []ProcSample
		want  *uint64
	}{
		{"no processes", nil, Ptr(uint64(10 * fakeGiB))},
		{"used minus processes", []ProcSample{fakeProc(0, 1, 3*fakeGiB, ringT0), fakeProc(0, 2, 4*fakeGiB, ringT0)}, Ptr(uint64(3 * fakeGiB))},
		{"a process of unknown usage", []ProcSample{fakeProc(0, 1, 3*fakeGiB, ringT0), na}, nil},
		{"processes over used", []ProcSample{fakeProc(0, 1, 6*fakeGiB, ringT0), fakeProc(0, 2, 6*fakeGiB, ringT0)}, Ptr(uint64(0))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(1)
			f.setUsed(0, 10*fakeGiB)
			f.setProcs(c.procs...)
			snap, _ := newSampler(t, f, Config{}).Tick(ringT0)
			got := snap.Devices[0].Unattributed
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("unattributed = %v, want %v", derefOrNil(got), derefOrNil(c.want))
			}
			if na := snap.Devices[0].Processes; len(c.procs) > 1 && c.procs[1].UsedBytes == nil && na[len(na)-1].UsedBytes != nil {
				t.Fatal("unknown process usage shown as a number")
			}
		})
	}
	t.Run("MIG parent", func(t *testing.T) {
		f := newFake(1)
		f.info.Devices[0].MIGEnabled = true
		snap, _ := newSampler(t, f, Config{}).Tick(ringT0)
		if snap.Devices[0].Unattributed != nil {
			t.Fatal("a MIG parent's memory belongs to its instances: no unattributed figure")
		}
	})
}

func derefOrNil(p *uint64) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func TestProcessUtilization(t *testing.T) {
	f := newFake(1)
	f.setProcs(fakeProc(0, 1, fakeGiB, ringT0), fakeProc(0, 2, fakeGiB, ringT0))
	f.util = map[UtilKey]float64{{Device: 0, PID: 1}: 42}
	s := newSampler(t, f, Config{Interval: time.Second})
	snap, _ := s.Tick(ringAt(0))
	p1, _ := findProcess(t, snap.Devices[0], 1, ringT0)
	p2, _ := findProcess(t, snap.Devices[0], 2, ringT0)
	if p1.UtilizationPercent == nil || *p1.UtilizationPercent != 42 || p2.UtilizationPercent != nil {
		t.Fatalf("utilization: pid 1 %v, pid 2 %v; want 42 and absent", p1.UtilizationPercent, p2.UtilizationPercent)
	}
	// No new samples: the last value stays.
	f.mu.Lock()
	f.util = nil
	f.mu.Unlock()
	snap, _ = s.Tick(ringAt(1))
	if p1, _ := findProcess(t, snap.Devices[0], 1, ringT0); p1.UtilizationPercent == nil || *p1.UtilizationPercent != 42 {
		t.Fatal("no new utilization samples erased the last one")
	}
}

func TestSnapshotIsUnchangedByLaterTicks(t *testing.T) {
	f := newFake(1)
	f.setUsed(0, 3*fakeGiB)
	f.setProcs(fakeProc(0, 1, fakeGiB, ringT0))
	s := newSampler(t, f, Config{Interval: time.Second})
	first, _ := s.Tick(ringAt(0))
	for i := 1; i < 300; i++ {
		f.setUsed(0, uint64(i)*fakeGiB/8)
		f.setProcs(fakeProc(0, 1, uint64(i)*fakeGiB/16, ringT0), fakeProc(0, uint32(i+1), fakeGiB, ringT0))
		s.Tick(ringAt(i))
	}
	d := first.Devices[0]
	if d.MemoryUsed != 3*fakeGiB || d.History.Len() != 1 || d.History.Max() != 3*fakeGiB || len(d.Processes) != 1 || d.Processes[0].Used() != fakeGiB || d.Processes[0].History.Len() != 1 {
		t.Fatalf("a published snapshot changed: %+v", d)
	}
}

func TestSubscribeIsLatestWins(t *testing.T) {
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: time.Second})
	a, b := s.Subscribe(), s.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5; i++ { // nobody reads meanwhile
			s.Tick(ringAt(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sampler blocked on subscribers that do not read")
	}
	for _, ch := range []<-chan Snapshot{a, b} {
		snap := <-ch
		if snap.Seq != 5 || !snap.Time.Equal(ringAt(4)) {
			t.Fatalf("subscriber got seq %d at %v, want the latest (5)", snap.Seq, snap.Time)
		}
		select {
		case old := <-ch:
			t.Fatalf("subscriber got a stale snapshot after the latest: seq %d", old.Seq)
		default:
		}
	}
	if l, ok := s.Latest(); !ok || l.Seq != 5 {
		t.Fatalf("Latest = seq %d, %v", l.Seq, ok)
	}
}

func TestRunStopsOnCancelAndClosesOnce(t *testing.T) {
	f := newFake(1)
	f.memRead = make(chan struct{}, 1)
	s := newSampler(t, f, Config{Interval: 50 * time.Millisecond})
	cancel, done := runInBackground(s)
	<-f.memRead
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v on cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop on cancel")
	}
	s.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closes != 1 {
		t.Fatalf("source closed %d times, want once", f.closes)
	}
}

func TestSetIntervalTakesEffect(t *testing.T) {
	f := newFake(1)
	f.memRead = make(chan struct{}, 1)
	s := newSampler(t, f, Config{Interval: 10 * time.Second})
	sub := s.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-f.memRead // the first reading; the next one is 10 s away

	s.SetInterval(time.Millisecond) // below the minimum: clamped
	// Eight readings at 50 ms take 0.4 s; at the old interval they would
	// take 80 s. The deadline leaves room for a loaded machine.
	deadline := time.After(5 * time.Second)
	for n := 0; n < 8; {
		select {
		case <-f.memRead:
			n++
		case <-deadline:
			t.Fatalf("%d readings within 5 s of switching to %v", n, MinInterval)
		}
	}
	for {
		select {
		case snap := <-sub:
			if snap.Interval == MinInterval {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no snapshot reports the new interval")
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Interval: 10 * time.Millisecond},
		{Interval: time.Second, History: time.Millisecond * 500},
		{ExitedTTL: -time.Second},
	} {
		if _, err := New(newFake(1), c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	s, err := New(newFake(1), Config{})
	if err != nil || s.Interval() != DefaultInterval {
		t.Fatalf("defaults: %v, interval %v", err, s.Interval())
	}
}

// TestHostColumnsAndJob: a process's job, host CPU and host memory reach the
// Snapshot; an exited process shows no current CPU or host memory.
func TestHostColumnsAndJob(t *testing.T) {
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: time.Second})
	job := &Job{SlurmJobID: "4242", SlurmStep: "0"}
	p := fakeProc(0, 10, fakeGiB, ringT0)
	p.Job, p.CPUPercent, p.HostMemoryBytes = job, Ptr(97.5), Ptr(uint64(3<<30))
	q := fakeProc(0, 11, fakeGiB, ringT0) // not yet measured
	f.setProcs(p, q)
	snap, _ := s.Tick(ringAt(0))
	got, _ := findProcess(t, snap.Devices[0], 10, ringT0)
	if got.Job.Name() != "slurm 4242.0" || got.CPUPercent == nil || *got.CPUPercent != 97.5 ||
		got.HostMemoryBytes == nil || *got.HostMemoryBytes != 3<<30 {
		t.Fatalf("process: job %q, cpu %v, host memory %v; want slurm 4242.0, 97.5%%, 3 GiB", got.Job.Name(), got.CPUPercent, got.HostMemoryBytes)
	}
	if other, _ := findProcess(t, snap.Devices[0], 11, ringT0); other.CPUPercent != nil || other.HostMemoryBytes != nil || other.Job != nil {
		t.Fatalf("unmeasured process: cpu %v, host memory %v, job %v; want all unknown", other.CPUPercent, other.HostMemoryBytes, other.Job)
	}
	f.setProcs(q)
	snap, _ = s.Tick(ringAt(1))
	gone, _ := findProcess(t, snap.Devices[0], 10, ringT0)
	if !gone.Exited || gone.CPUPercent != nil || gone.HostMemoryBytes != nil || gone.Job.Name() != "slurm 4242.0" {
		t.Fatalf("exited process: exited %v, cpu %v, host memory %v, job %q; want no current figures, the job kept", gone.Exited, gone.CPUPercent, gone.HostMemoryBytes, gone.Job.Name())
	}
}

// TestLostGPUComesBack: a GPU that falls off the bus is marked while the
// others keep reporting, its processes are not declared exited, and when it
// answers again its error clears and its history carries on from before.
func TestLostGPUComesBack(t *testing.T) {
	f := newFake(2)
	f.setProcs(fakeProc(0, 1, fakeGiB, ringT0), fakeProc(1, 2, fakeGiB, ringT0))
	s := newSampler(t, f, Config{Interval: time.Second})
	for i := range 3 {
		f.setUsed(1, uint64(10+i)*fakeGiB)
		s.Tick(ringAt(i))
	}
	lost := errors.New("GPU is lost (fell off the bus or needs a reset)")
	f.mu.Lock()
	f.mem[1] = MemSample{Err: lost}
	f.procErrs[1] = lost
	f.procs = f.procs[:1]
	f.mu.Unlock()
	var snap Snapshot
	for i := 3; i < 6; i++ {
		snap, _ = s.Tick(ringAt(i))
	}
	d := snap.Devices[1]
	if !strings.Contains(d.Err, "GPU is lost") {
		t.Fatalf("lost GPU: Err %q, want it marked lost", d.Err)
	}
	if p, ok := findProcess(t, d, 2, ringT0); !ok || p.Exited {
		t.Fatalf("lost GPU's process: listed %v, exited %v; want kept as it was", ok, p.Exited)
	}
	if snap.Devices[0].Err != "" || snap.Devices[0].History.Len() != 6 {
		t.Fatalf("the other GPU: Err %q, %d samples; want no error and every sample", snap.Devices[0].Err, snap.Devices[0].History.Len())
	}

	f.mu.Lock()
	f.mem[1] = MemSample{Total: 80 * fakeGiB, Used: 20 * fakeGiB, Free: 60 * fakeGiB}
	f.procErrs[1] = nil
	f.procs = append(f.procs, fakeProc(1, 2, fakeGiB, ringT0))
	f.mu.Unlock()
	snap, _ = s.Tick(ringAt(6))
	d = snap.Devices[1]
	if d.Err != "" || d.MemoryUsed != 20*fakeGiB {
		t.Fatalf("GPU back: Err %q, used %d; want no error and the new reading", d.Err, d.MemoryUsed)
	}
	want := []uint64{10 * fakeGiB, 11 * fakeGiB, 12 * fakeGiB, 20 * fakeGiB}
	if got := windowValues(d.History); !slices.Equal(got, want) {
		t.Fatalf("history across the loss %v, want %v: the samples before it, none during it, the new one", got, want)
	}
	if p, ok := findProcess(t, d, 2, ringT0); !ok || p.Exited || p.History.Len() != 4 {
		t.Fatalf("process on the GPU that came back: listed %v, exited %v, %d samples; want the same process carrying on", ok, p.Exited, p.History.Len())
	}
}

// TestHungSourceMarksSnapshotsStale: a ReadMemory that does not return
// leaves Run publishing the last values marked stale, with how long the
// source has been silent; once the call returns, sampling resumes. The
// clock is fake: the test moves it past the stall bound.
func TestHungSourceMarksSnapshotsStale(t *testing.T) {
	f := newFake(1)
	f.setUsed(0, 7*fakeGiB)
	f.memRead = make(chan struct{}, 1)
	var mu sync.Mutex
	clock := ringT0
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	s := newSampler(t, f, Config{Interval: MinInterval, StallTimeout: 5 * time.Second, Now: now})
	sub := s.Subscribe()
	cancel, done := runInBackground(s)
	defer func() { cancel(); <-done }()
	next := func(what string, ok func(Snapshot) bool) Snapshot {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case snap := <-sub:
				if ok(snap) {
					return snap
				}
			case <-deadline:
				t.Fatalf("no snapshot %s", what)
			}
		}
	}
	first := next("at all", func(Snapshot) bool { return true })
	if first.Stale {
		t.Fatal("the first snapshot is stale")
	}

	hang := make(chan struct{})
	f.mu.Lock()
	f.hang = hang
	f.mu.Unlock()
	// Wait until a call is stuck, then let 12 s pass on the clock.
	<-f.memRead
	<-f.memRead
	hungAt := now()
	advance(12 * time.Second)
	snap := next("marked stale", func(s Snapshot) bool { return s.Stale })
	if snap.Err != "no answer from the fake source for 12 s" {
		t.Fatalf("stale snapshot Err %q, want how long the source has been silent", snap.Err)
	}
	if snap.StaleSince.After(hungAt) || snap.StaleSince.Before(first.Time) {
		t.Fatalf("StaleSince %v, want when the stuck call began (by %v)", snap.StaleSince, hungAt)
	}
	if len(snap.Devices) != 1 || snap.Devices[0].MemoryUsed != 7*fakeGiB || snap.Seq <= first.Seq {
		t.Fatalf("stale snapshot: %d devices, used %d, seq %d after %d; want the last values, a new sequence number", len(snap.Devices), snap.Devices[0].MemoryUsed, snap.Seq, first.Seq)
	}

	f.mu.Lock()
	f.hang = nil
	f.mu.Unlock()
	f.setUsed(0, 9*fakeGiB)
	close(hang)
	snap = next("after the call returned", func(s Snapshot) bool { return !s.Stale })
	if snap.Err != "" || !snap.StaleSince.IsZero() || snap.Seq <= first.Seq {
		t.Fatalf("resumed snapshot: Err %q, StaleSince %v, seq %d; want no error, not stale, a new snapshot", snap.Err, snap.StaleSince, snap.Seq)
	}
	advance(time.Second)
	next("with a new reading", func(s Snapshot) bool { return !s.Stale && s.Devices[0].MemoryUsed == 9*fakeGiB })
}

// TestRunStopsWhileACallHangs: Ctrl-C ends the program even while the
// driver does not answer; the source is closed once the call returns.
func TestRunStopsWhileACallHangs(t *testing.T) {
	f := newFake(1)
	f.memRead = make(chan struct{}, 1)
	hang := make(chan struct{})
	f.hang = hang
	s := newSampler(t, f, Config{Interval: time.Second})
	cancel, done := runInBackground(s)
	<-f.memRead
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return while a source call hung")
	}
	s.Close() // as main does: must neither hang nor close under the stuck call
	f.mu.Lock()
	closes := f.closes
	f.mu.Unlock()
	if closes != 0 {
		t.Fatalf("source closed %d times while a call was in flight", closes)
	}
	close(hang)
	waitClosedOnce(t, f)
}

// TestExitedProcessesAreCappedPerDevice: of many exited processes a device
// lists only the most recent MaxExited, biggest peak first, after its live
// ones; another device's list is its own.
func TestExitedProcessesAreCappedPerDevice(t *testing.T) {
	f := newFake(2)
	s := newSampler(t, f, Config{Interval: time.Second, MaxExited: 3})
	var all []ProcSample
	for pid := uint32(1); pid <= 6; pid++ {
		all = append(all, fakeProc(0, pid, uint64(pid)*fakeGiB, ringT0))
	}
	other := fakeProc(1, 99, fakeGiB, ringT0)
	// PIDs 1-6 run; 1 and 2 exit first, then 3, 4 and 5; 6 lives on.
	f.setProcs(append(slices.Clone(all), other)...)
	s.Tick(ringAt(0))
	f.setProcs(append(slices.Clone(all[2:]), other)...)
	s.Tick(ringAt(1))
	f.setProcs(all[5], other)
	snap, _ := s.Tick(ringAt(2))
	var got []uint32
	for _, p := range snap.Devices[0].Processes {
		got = append(got, p.PID)
	}
	// Live 6; exited, the three most recent (3, 4, 5) by peak: 5, 4, 3.
	if want := []uint32{6, 5, 4, 3}; !slices.Equal(got, want) {
		t.Fatalf("GPU 0 lists PIDs %v, want %v: the live one, then the three most recent exits by peak", got, want)
	}
	if ps := snap.Devices[1].Processes; len(ps) != 1 || ps[0].PID != 99 || ps[0].Exited {
		t.Fatalf("GPU 1 lists %+v, want its one live process", ps)
	}
	// None kept: MaxExited < 0.
	s = newSampler(t, f, Config{Interval: time.Second, MaxExited: -1})
	f.setProcs(all...)
	s.Tick(ringAt(0))
	f.setProcs()
	if snap, _ := s.Tick(ringAt(1)); len(snap.Devices[0].Processes) != 0 {
		t.Fatalf("MaxExited -1: %d processes listed, want none", len(snap.Devices[0].Processes))
	}
}

// TestProcessHistoryIsTiered: a process's history keeps its last ten
// minutes sample by sample and, older than that, the peak of each step: a
// spike an hour-long history saw 40 minutes ago is still its maximum.
func TestProcessHistoryIsTiered(t *testing.T) {
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: time.Second, History: time.Hour})
	var snap Snapshot
	for i := range 3600 {
		used := uint64(fakeGiB)
		if i == 1200 {
			used = 9 * fakeGiB // one second, 40 minutes before the end
		}
		f.setProcs(fakeProc(0, 7, used, ringT0))
		snap, _ = s.Tick(ringAt(i))
	}
	p, ok := findProcess(t, snap.Devices[0], 7, ringT0)
	if !ok {
		t.Fatal("process missing")
	}
	h := p.History
	if h.Max() != 9*fakeGiB || p.PeakBytes != 9*fakeGiB {
		t.Fatalf("history max %d, peak %d; want the 9 GiB spike kept", h.Max(), p.PeakBytes)
	}
	if recent := h.Since(ringAt(3600 - 600)); recent.Len() != 600 {
		t.Fatalf("last ten minutes: %d samples, want 600, one a second", recent.Len())
	}
	if h.Len() >= 3600/2 {
		t.Fatalf("an hour of history in %d samples: older samples were not merged", h.Len())
	}
	if first := h.First(); first.After(ringAt(60)) {
		t.Fatalf("history starts at %v, want it to reach back about an hour", first)
	}
}

// The live view's PublishInterval of 1 s: fast-mode samples every 50 ms,
// one snapshot a second, and a 200 ms spike between two snapshots is in the
// next one's recent peak and history.
func TestPublishIntervalKeepsFastSamples(t *testing.T) {
	f := newFake(1)
	s := newSampler(t, f, Config{Interval: 50 * time.Millisecond, PublishInterval: time.Second})
	var pubs []Snapshot
	for i := 0; i <= 40; i++ { // 2 s of ticks at 50 ms
		used := uint64(2 * fakeGiB)
		if i >= 25 && i < 29 { // 200 ms at 1.25 s
			used = 70 * fakeGiB
		}
		f.setUsed(0, used)
		if snap, ok := s.Tick(ringT0.Add(time.Duration(i) * 50 * time.Millisecond)); ok {
			pubs = append(pubs, snap)
		}
	}
	if len(pubs) != 3 {
		t.Fatalf("published %d snapshots in 2 s, want 3 (at 0, 1 s and 2 s)", len(pubs))
	}
	last := pubs[2].Devices[0]
	if last.MemoryUsed != 2*fakeGiB || last.RecentPeakUsed != 70*fakeGiB || last.History.Max() != 70*fakeGiB {
		t.Errorf("snapshot at 2 s: used %d, recent peak %d, history max %d; want the spike at 1.25 s kept", last.MemoryUsed, last.RecentPeakUsed, last.History.Max())
	}
}

// TestDeviceThatLeavesTheListComesBackWithItsHistory: a device the source
// stops listing (a fleet host that does not answer) and lists again carries
// on with the history it had.
func TestDeviceThatLeavesTheListComesBackWithItsHistory(t *testing.T) {
	f := newFake(2)
	s := newSampler(t, f, Config{Interval: time.Second})
	for i := range 3 {
		f.setUsed(1, uint64(10+i)*fakeGiB)
		s.Tick(ringAt(i))
	}
	f.mu.Lock()
	all, mem := f.info.Devices, f.mem
	f.info.Devices, f.mem = all[:1], mem[:1]
	f.mu.Unlock()
	snap, _ := s.Tick(ringAt(3))
	if len(snap.Devices) != 1 {
		t.Fatalf("%d devices listed after one left, want 1", len(snap.Devices))
	}
	f.mu.Lock()
	f.info.Devices, f.mem = all, mem
	f.mu.Unlock()
	f.setUsed(1, 20*fakeGiB)
	snap, _ = s.Tick(ringAt(4))
	d, ok := snap.Device("1")
	if !ok {
		t.Fatal("the device that came back is not listed")
	}
	want := []uint64{10 * fakeGiB, 11 * fakeGiB, 12 * fakeGiB, 20 * fakeGiB}
	if got := windowValues(d.History); !slices.Equal(got, want) {
		t.Fatalf("history of the device that came back %v, want %v", got, want)
	}
}

// TestOnceGivesUpOnAHungSource: `vramtop --once` on a driver that does not
// answer prints that it does not, instead of hanging; the source is closed
// once the call returns.
func TestOnceGivesUpOnAHungSource(t *testing.T) {
	f := newFake(1)
	hang := make(chan struct{})
	f.hang = hang
	s := newSampler(t, f, Config{StallTimeout: 50 * time.Millisecond})
	snap := s.Once()
	if !snap.Stale || snap.Err != "no answer from the fake source for 0 s" || len(snap.Devices) != 0 {
		t.Fatalf("Once on a hung source: stale %v, Err %q, %d devices; want a stale snapshot saying so", snap.Stale, snap.Err, len(snap.Devices))
	}
	s.Close()
	close(hang)
	waitClosedOnce(t, f)
}

// waitClosedOnce waits for the source to be closed, once.
func waitClosedOnce(t *testing.T, f *fakeSource) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		closes := f.closes
		f.mu.Unlock()
		if closes == 1 {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("source closed %d times after the call returned, want once", closes)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestMemoryFirstShowsMemoryBeforeTheProcessLists(t *testing.T) {
	f := newFake(1)
	f.setUsed(0, 10*fakeGiB)
	f.setProcs(fakeProc(0, 42, 4*fakeGiB, time.Unix(1000, 0)))
	gate := make(chan struct{})
	f.procGate = gate
	s := newSampler(t, f, Config{Interval: 10 * time.Second, PublishInterval: time.Second, MemoryFirst: true})
	sub := s.Subscribe()
	cancel, done := runInBackground(s)
	defer func() { cancel(); <-done }()
	next := func(what string) Snapshot {
		t.Helper()
		select {
		case snap := <-sub:
			return snap
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s snapshot within 5 s", what)
		}
		return Snapshot{}
	}

	// The process list is held back: the memory is out already.
	first := next("first")
	d := first.Devices[0]
	if !first.ProcessesPending || d.MemoryUsed != 10*fakeGiB || len(d.Processes) != 0 || d.Unattributed != nil {
		t.Fatalf("first snapshot: pending %v, used %d, %d processes, unattributed %v; want pending, 10 GiB, none, nil",
			first.ProcessesPending, d.MemoryUsed, len(d.Processes), d.Unattributed)
	}
	// Once the list is read, the full snapshot comes at once, not at the
	// next 10 s tick.
	close(gate)
	second := next("full")
	d = second.Devices[0]
	if second.ProcessesPending || len(d.Processes) != 1 || d.Unattributed == nil || *d.Unattributed != 6*fakeGiB {
		t.Fatalf("second snapshot: pending %v, %d processes, unattributed %v; want the process and 6 GiB unattributed",
			second.ProcessesPending, len(d.Processes), d.Unattributed)
	}
}

func TestMemoryFirstLeavesOnceWhole(t *testing.T) {
	f := newFake(1)
	f.setProcs(fakeProc(0, 42, fakeGiB/2, time.Unix(1000, 0)))
	s := newSampler(t, f, Config{MemoryFirst: true})
	snap := s.Once()
	if snap.ProcessesPending || len(snap.Devices[0].Processes) != 1 {
		t.Fatalf("--once with MemoryFirst: pending %v, %d processes; want the whole sample", snap.ProcessesPending, len(snap.Devices[0].Processes))
	}
}

// omittingSource is a fake whose devices have processes it does not list.
type omittingSource struct {
	*fakeSource
	n     int
	bytes uint64
	known bool
}

func (o *omittingSource) Omitted(dev int) (int, uint64, bool) { return o.n, o.bytes, o.known }

func TestOmittedProcessesAreNotUnattributed(t *testing.T) {
	f := newFake(1)
	f.setUsed(0, 10*fakeGiB)
	f.setProcs(fakeProc(0, 42, 4*fakeGiB, time.Unix(1000, 0)))
	src := &omittingSource{fakeSource: f, n: 3, bytes: 2 * fakeGiB, known: true}
	snap := newSampler(t, src, Config{}).Once()
	d := snap.Devices[0]
	if d.OmittedProcesses != 3 || d.OmittedBytes == nil || *d.OmittedBytes != 2*fakeGiB {
		t.Fatalf("omitted %d using %v, want 3 using 2 GiB", d.OmittedProcesses, d.OmittedBytes)
	}
	if d.Unattributed == nil || *d.Unattributed != 4*fakeGiB {
		t.Fatalf("unattributed %v, want 4 GiB: 10 used, 4 listed, 2 omitted", d.Unattributed)
	}

	src.known = false
	d = newSampler(t, src, Config{}).Once().Devices[0]
	if d.OmittedProcesses != 3 || d.OmittedBytes != nil || d.Unattributed != nil {
		t.Fatalf("omitted %d using %v, unattributed %v; want 3, unknown, unknown", d.OmittedProcesses, d.OmittedBytes, d.Unattributed)
	}
}

// lateHistory is a fake whose history is read back after its devices were
// listed.
type lateHistory struct {
	*fakeSource
	seq    uint64
	times  []time.Time
	values []uint64
}

func (l *lateHistory) Backfill(string) ([]time.Time, []uint64) {
	t, v := l.times, l.values
	l.times, l.values = nil, nil
	return t, v
}

func (l *lateHistory) BackfillSeq() uint64 { return l.seq }

func TestHistoryThatComesLateIsMergedBeforeTheSamples(t *testing.T) {
	src := &lateHistory{fakeSource: newFake(1)}
	t0 := time.Unix(1_000_000, 0)
	s := newSampler(t, src, Config{Interval: time.Second, History: time.Hour})
	for i := 0; i < 10; i++ {
		s.Tick(t0.Add(time.Duration(100+i) * time.Second))
	}
	// The history of the first 100 s arrives now (a second try at it).
	for i := 0; i < 100; i++ {
		src.times = append(src.times, t0.Add(time.Duration(i)*time.Second))
		src.values = append(src.values, 5*fakeGiB)
	}
	src.seq++
	snap, _ := s.Tick(t0.Add(110 * time.Second))
	h := snap.Devices[0].History
	if h.Len() != 111 || !h.First().Equal(t0) || h.Max() != 5*fakeGiB {
		t.Fatalf("history: %d samples from %v, peak %d; want 111 from %v, the late history's 5 GiB peak included",
			h.Len(), h.First(), h.Max(), t0)
	}
	if _, v, _ := h.Last(); v != fakeGiB {
		t.Fatalf("the newest sample is %d, want the device's own 1 GiB", v)
	}
}

// A device's snapshot says when the process list it shows was read: the
// poll's time while listing works, the last good list's while it fails (its
// processes kept), and the list's own time where the source says it is older
// (ListTimer). The JSON carries it as listed_at.
func TestListedAt(t *testing.T) {
	f := newFake(2)
	f.setProcs(fakeProc(0, 10, fakeGiB, ringT0), fakeProc(1, 11, fakeGiB, ringT0))
	s := newSampler(t, f, Config{Interval: time.Second})
	snap, _ := s.Tick(ringT0)
	for _, d := range snap.Devices {
		if !d.ListedAt.Equal(ringT0) {
			t.Errorf("device %s listed at %v, want the poll's time %v", d.ID, d.ListedAt, ringT0)
		}
	}
	f.mu.Lock()
	f.procErrs[1] = errors.New("timed out")
	f.mu.Unlock()
	var d1 Device
	for i := 1; i <= 5; i++ {
		snap, _ = s.Tick(ringT0.Add(time.Duration(i) * time.Second))
		d1, _ = snap.Device("1")
	}
	if d0, _ := snap.Device("0"); !d0.ListedAt.Equal(ringT0.Add(5 * time.Second)) {
		t.Errorf("device 0 listed at %v, want the last poll's time", d0.ListedAt)
	}
	if !d1.ListedAt.Equal(ringT0) || len(d1.Processes) != 1 {
		t.Errorf("device 1, failing since 1s: listed at %v with %d processes, want the last good list (%v) kept", d1.ListedAt, len(d1.Processes), ringT0)
	}
	b, err := json.Marshal(d1)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"listed_at":"` + ringT0.Format(time.RFC3339Nano) + `"`; !strings.Contains(string(b), want) {
		t.Errorf("device JSON %s, want %s", b, want)
	}
	lt := &listTimerSource{fakeSource: f, at: ringT0.Add(3 * time.Second)}
	s = newSampler(t, lt, Config{Interval: time.Second})
	snap, _ = s.Tick(ringT0.Add(10 * time.Second))
	if d0, _ := snap.Device("0"); !d0.ListedAt.Equal(lt.at) {
		t.Errorf("a source whose list is older: listed at %v, want %v", d0.ListedAt, lt.at)
	}
}

type listTimerSource struct {
	*fakeSource
	at time.Time
}

func (l *listTimerSource) ListedAt(int) time.Time { return l.at }

// partialSource leaves the processes of the devices in unread unread.
type partialSource struct {
	*fakeSource
	unread map[int]bool
	wake   chan struct{}
}

func (p *partialSource) NotListed(dev int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unread[dev]
}

func (p *partialSource) Wake() <-chan struct{} { return p.wake }

// A device whose processes the source did not read says so: no processes,
// none of those it had listed shown exited, no unattributed memory (not
// all of its used memory), no list time; once read again it lists them.
func TestDeviceWhoseProcessesAreNotReadSaysSo(t *testing.T) {
	f := newFake(2)
	f.setUsed(0, 10*fakeGiB)
	f.setUsed(1, 10*fakeGiB)
	f.setProcs(fakeProc(0, 42, 4*fakeGiB, time.Unix(1000, 0)), fakeProc(1, 43, 4*fakeGiB, time.Unix(1000, 0)))
	src := &partialSource{fakeSource: f, unread: map[int]bool{}}
	s := newSampler(t, src, Config{Interval: time.Second})
	snap, _ := s.Tick(ringT0)
	if d := snap.Devices[1]; d.ProcessesNotRead || len(d.Processes) != 1 || d.Unattributed == nil {
		t.Fatalf("read: not read %v, %d processes, unattributed %v", d.ProcessesNotRead, len(d.Processes), d.Unattributed)
	}

	src.mu.Lock()
	src.unread[1] = true
	src.mu.Unlock()
	f.setProcs(fakeProc(0, 42, 4*fakeGiB, time.Unix(1000, 0)))
	snap, _ = s.Tick(ringT0.Add(time.Second))
	d := snap.Devices[1]
	if !d.ProcessesNotRead || len(d.Processes) != 0 || d.Unattributed != nil || !d.ListedAt.IsZero() {
		t.Fatalf("not read: ProcessesNotRead %v, processes %+v, unattributed %v, listed at %v; want true, none (PID 43 not exited), nil, zero",
			d.ProcessesNotRead, d.Processes, d.Unattributed, d.ListedAt)
	}
	if d0 := snap.Devices[0]; d0.ProcessesNotRead || len(d0.Processes) != 1 || d0.Unattributed == nil || *d0.Unattributed != 6*fakeGiB {
		t.Fatalf("the device read: not read %v, %d processes, unattributed %v", d0.ProcessesNotRead, len(d0.Processes), d0.Unattributed)
	}

	src.mu.Lock()
	src.unread[1] = false
	src.mu.Unlock()
	f.setProcs(fakeProc(0, 42, 4*fakeGiB, time.Unix(1000, 0)), fakeProc(1, 43, 4*fakeGiB, time.Unix(1000, 0)))
	snap, _ = s.Tick(ringT0.Add(2 * time.Second))
	if d := snap.Devices[1]; d.ProcessesNotRead || len(d.Processes) != 1 || d.Processes[0].Exited || d.Unattributed == nil {
		t.Fatalf("read again: not read %v, processes %+v, unattributed %v", d.ProcessesNotRead, d.Processes, d.Unattributed)
	}
}

// A Waker's wake makes Run sample at once, its processes too, however far
// the next tick is.
func TestWakeSamplesProcessesAtOnce(t *testing.T) {
	f := newFake(1)
	src := &partialSource{fakeSource: f, unread: map[int]bool{0: true}, wake: make(chan struct{}, 1)}
	s := newSampler(t, src, Config{Interval: time.Hour})
	sub := s.Subscribe()
	cancel, done := runInBackground(s)
	defer func() { cancel(); <-done }()
	if snap := <-sub; !snap.Devices[0].ProcessesNotRead {
		t.Fatal("the first snapshot has the processes read")
	}
	src.mu.Lock()
	src.unread[0] = false
	src.mu.Unlock()
	f.setProcs(fakeProc(0, 42, fakeGiB, time.Unix(1000, 0)))
	src.wake <- struct{}{}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case snap := <-sub:
			if d := snap.Devices[0]; !d.ProcessesNotRead && len(d.Processes) == 1 {
				return
			}
		case <-deadline:
			t.Fatal("no snapshot with the processes within 10 s of the wake; the next tick is an hour away")
		}
	}
}
