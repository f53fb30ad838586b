package sampler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults and limits of the sampling cadence.
const (
	DefaultInterval  = time.Second
	MinInterval      = 50 * time.Millisecond
	DefaultHistory   = time.Hour
	DefaultExitedTTL = 5 * time.Minute
	// Process lists are read at most once a second: with 100 processes the
	// compute and graphics lists cost ~3.5 ms and hold the driver lock that
	// the jobs' allocations wait on. Fast mode samples device memory faster;
	// a process's memory is in the device's total in between.
	MinProcessInterval = time.Second
	// JobProcessInterval is the process-list floor of `vramtop run`, which
	// watches one job rather than the whole machine.
	JobProcessInterval = 250 * time.Millisecond
	// Per-process utilization costs 1.4–3 ms a call whatever the number of
	// processes, and only the slow idle-holder rule reads it.
	MinProcUtilInterval = 5 * time.Second
	// Snapshots (and so screen frames) are published at most this often;
	// faster samples still land in the rings and in RecentPeakUsed, so
	// their peaks show.
	MinPublishInterval = 500 * time.Millisecond
	// DefaultStallTimeout is how long a call to the source may hang before
	// the snapshots say so (go-nvml issue 152: an NVML call that never
	// returns).
	DefaultStallTimeout = 5 * time.Second
)

// Config sets the sampler's cadence and history.
type Config struct {
	Interval  time.Duration // device memory; default 1 s, at least 50 ms
	History   time.Duration // default 1 h
	ExitedTTL time.Duration // how long an exited process stays listed; default 5 min
	// ProcessInterval is the shortest time between process lists; default
	// MinProcessInterval. `vramtop run` lowers it to JobProcessInterval to
	// follow one job's memory closely.
	ProcessInterval time.Duration
	// StallTimeout is how long a call to the source may go unanswered
	// before Run publishes snapshots marked Stale; default
	// DefaultStallTimeout.
	StallTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Interval < MinInterval {
		return fmt.Errorf("interval %v is below the minimum of %v", c.Interval, MinInterval)
	}
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.History < c.Interval {
		return fmt.Errorf("history %v is shorter than the interval %v", c.History, c.Interval)
	}
	if c.ExitedTTL == 0 {
		c.ExitedTTL = DefaultExitedTTL
	}
	if c.ExitedTTL < 0 {
		return fmt.Errorf("exited-process time %v is negative", c.ExitedTTL)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.StallTimeout < 0 {
		return fmt.Errorf("stall timeout %v is negative", c.StallTimeout)
	}
	if c.ProcessInterval == 0 {
		c.ProcessInterval = MinProcessInterval
	}
	if c.ProcessInterval < MinInterval {
		return fmt.Errorf("process interval %v is below the minimum of %v", c.ProcessInterval, MinInterval)
	}
	return nil
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

type devState struct {
	info DeviceInfo
	ring *Ring
	last MemSample
	seen bool
	err  error // from the last process listing
	// recentPeak is the highest used value since the last publish.
	recentPeak uint64
	// usedAtProcs is the used memory read in the tick of the last process
	// list, for the unattributed figure.
	usedAtProcs uint64
}

type procState struct {
	dev       string
	last      ProcSample
	ring      *Ring
	peak      uint64
	firstSeen time.Time
	lastSeen  time.Time
	exited    bool
	util      *float64
}

// Sampler polls a Source on its cadence and publishes Snapshots. Only its own
// goroutine (Run) or a caller of Tick touches its state; use one or the other.
type Sampler struct {
	src Source
	cfg Config

	interval  time.Duration
	info      SourceInfo
	devs      []*devState
	devByID   map[string]*devState
	procs     map[ProcessKey]*procState
	memBuf    []MemSample
	procBuf   []ProcSample
	errBuf    []error
	utilBuf   map[UtilKey]float64
	lastProc  time.Time
	lastUtil  time.Time
	lastPub   time.Time
	lastErr   error
	panicNote string
	seq       uint64
	setIntvl  chan time.Duration
	subsMu    sync.Mutex
	subs      []chan Snapshot
	latest    atomic.Pointer[Snapshot]
	closeOnce sync.Once
	// callMu guards inCall (a call to the source is in flight) and
	// closeLater (Close came during it).
	callMu     sync.Mutex
	inCall     bool
	closeLater bool
	procCap    int
	hasPolled  bool
	forcePub   bool
	infoLoaded bool
}

// New returns a sampler over src. It does not poll until Run or Tick.
func New(src Source, cfg Config) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sampler{
		src:      src,
		cfg:      cfg,
		interval: cfg.Interval,
		devByID:  map[string]*devState{},
		procs:    map[ProcessKey]*procState{},
		utilBuf:  map[UtilKey]float64{},
		setIntvl: make(chan time.Duration, 1),
	}
	s.procCap = CapacityFor(cfg.History, maxDur(cfg.Interval, cfg.ProcessInterval))
	return s, nil
}

// Interval returns the device-memory interval in force.
func (s *Sampler) Interval() time.Duration { return s.interval }

// SetInterval asks the running sampler to change its interval (clamped to
// the minimum). The rings keep their capacity, so the span of history they
// cover changes with it.
func (s *Sampler) SetInterval(d time.Duration) {
	if d < MinInterval {
		d = MinInterval
	}
	select {
	case s.setIntvl <- d:
	default:
		select {
		case <-s.setIntvl:
		default:
		}
		s.setIntvl <- d
	}
}

// Subscribe returns a channel that receives each published Snapshot,
// latest-wins: a slow reader misses snapshots, it never stalls the sampler.
func (s *Sampler) Subscribe() <-chan Snapshot {
	ch := make(chan Snapshot, 1)
	s.subsMu.Lock()
	s.subs = append(s.subs, ch)
	s.subsMu.Unlock()
	return ch
}

// Latest returns the most recently published Snapshot.
func (s *Sampler) Latest() (Snapshot, bool) {
	p := s.latest.Load()
	if p == nil {
		return Snapshot{}, false
	}
	return *p, true
}

// Close closes the source, once. While a call to the source has not
// returned (a hung driver call), the source is closed when it returns: a
// second call into a stuck driver would hang the caller too.
func (s *Sampler) Close() error {
	s.callMu.Lock()
	if s.inCall {
		s.closeLater = true
		s.callMu.Unlock()
		return nil
	}
	s.callMu.Unlock()
	var err error
	s.closeOnce.Do(func() { err = s.src.Close() })
	return err
}

// Run polls until ctx is done, then closes the source. Polls never overlap.
//
// The source is called from a goroutine of its own, so a call that hangs
// (a GPU driver that stops answering) does not stop the sampler: after
// Config.StallTimeout it publishes the last snapshot again, marked Stale,
// once per interval (at most every MinPublishInterval), until the call
// returns and polling resumes. On ctx.Done, Run returns within a second
// even while a call hangs; the source is closed when that call returns.
func (s *Sampler) Run(ctx context.Context) error {
	work := make(chan time.Time)
	done := make(chan struct{}, 1)
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer s.Close()
		for {
			select {
			case now := <-work:
				s.pollSafe(now)
				done <- struct{}{}
			case <-quit:
				return
			}
		}
	}()
	defer func() {
		close(quit)
		select {
		case <-exited:
		case <-time.After(runStopGrace):
		}
	}()

	timer := time.NewTimer(0)
	defer timer.Stop()
	var (
		next        time.Time
		busy        bool
		pollAt      time.Time // when the poll in flight began
		stalePub    time.Time // the last stale snapshot's time
		wasStale    bool
		newInterval time.Duration // a SetInterval waiting for the poll in flight
	)
	setInterval := func(d time.Duration) {
		s.interval = d
		s.forcePub = true
		// Schedule from the next tick, not from the old cadence:
		// otherwise the new interval starts only after the old one
		// has run out.
		next = time.Time{}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(0)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case d := <-s.setIntvl:
			if busy {
				newInterval = d
				continue
			}
			setInterval(d)
		case <-done:
			busy = false
			if wasStale {
				// Resume with a fresh snapshot now, not one dated when
				// the stuck call began.
				wasStale = false
				s.forcePub = true
				s.finish(s.cfg.Now())
			} else {
				s.finish(pollAt)
			}
			if newInterval != 0 {
				setInterval(newInterval)
				newInterval = 0
			}
		case <-timer.C:
			now := s.cfg.Now()
			if busy {
				if now.Sub(pollAt) >= s.cfg.StallTimeout && (!wasStale || now.Sub(stalePub) >= MinPublishInterval) {
					s.publishStale(now, pollAt)
					stalePub, wasStale = now, true
				}
			} else {
				busy, pollAt = true, now
				work <- now
			}
			if next.IsZero() || now.Sub(next) > s.interval {
				next = now
			}
			next = next.Add(s.interval)
			timer.Reset(time.Until(next))
		}
	}
}

// runStopGrace is how long Run waits, when stopped, for a call to the source
// in flight to return before it returns without it.
const runStopGrace = time.Second

// Once takes one full sample (devices and processes) and returns it as a
// Snapshot; for `vramtop --once`.
func (s *Sampler) Once() Snapshot {
	s.forcePub = true
	snap, _ := s.Tick(s.cfg.Now())
	return snap
}

// Tick polls what is due at now and publishes a Snapshot when one is due,
// returning it. A panic in the source becomes an error in the Snapshot.
func (s *Sampler) Tick(now time.Time) (snap Snapshot, published bool) {
	s.pollSafe(now)
	return s.finish(now)
}

// pollSafe polls, recovering a panic of the source into the next
// Snapshot's error.
func (s *Sampler) pollSafe(now time.Time) {
	s.callMu.Lock()
	s.inCall = true
	s.callMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			s.panicNote = fmt.Sprintf("sampler recovered from a panic: %v", r)
			s.lastErr = errors.New(s.panicNote)
			s.forcePub = true
		}
		s.callMu.Lock()
		s.inCall = false
		later := s.closeLater
		s.callMu.Unlock()
		if later {
			s.Close()
		}
	}()
	s.poll(now)
}

// finish publishes a Snapshot if one is due at now.
func (s *Sampler) finish(now time.Time) (snap Snapshot, published bool) {
	if s.forcePub || !s.hasPolled || s.due(now, s.lastPub, MinPublishInterval) {
		return s.publish(now), true
	}
	return Snapshot{}, false
}

// publishStale publishes the last snapshot again at now, marked stale: the
// source has not answered the call it got at since. It reads only what the
// source's goroutine does not write (the published snapshot, the sequence).
func (s *Sampler) publishStale(now, since time.Time) {
	var snap Snapshot
	if p := s.latest.Load(); p != nil {
		snap = *p
	}
	s.seq++
	snap.Time, snap.Seq = now, s.seq
	snap.Stale, snap.StaleSince = true, since
	what := "the GPU driver"
	if snap.Source != "nvml" && snap.Source != "" {
		what = "the " + snap.Source + " source"
	}
	snap.Err = fmt.Sprintf("no answer from %s for %s", what, silence(now.Sub(since)))
	s.send(snap)
}

// silence says how long a source has been silent: "12 s", "3 min".
func silence(d time.Duration) string {
	if d < 2*time.Minute {
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	return fmt.Sprintf("%d min", int(d/time.Minute))
}

// due reports whether a task that runs at most every floor (and at most
// once per interval), last run at last, is due at now. A tick that comes a
// little early against the previous one still counts: a 1 s timer that
// fired 2 ms late and then 1 ms late is 999 ms apart, and a task whose
// period is the interval must run on every tick, not every other. The
// slack is a tenth of the period and less than half an interval.
func (s *Sampler) due(now, last time.Time, floor time.Duration) bool {
	period := maxDur(s.interval, floor)
	slack := min(s.interval/2, period/10)
	return now.Sub(last) >= period-slack
}

func (s *Sampler) poll(now time.Time) {
	if !s.infoLoaded || s.due(now, s.lastPub, MinPublishInterval) {
		s.loadInfo()
	}
	if err := s.src.ReadMemory(now, s.memBuf); err != nil {
		s.lastErr = err
	} else {
		s.lastErr = nil
		for i, d := range s.devs {
			m := s.memBuf[i]
			if m.Err == nil {
				d.ring.Push(now, m.Used)
				if m.Used > d.recentPeak {
					d.recentPeak = m.Used
				}
			}
			d.last = m
			d.seen = true
		}
	}
	if !s.hasPolled || s.due(now, s.lastProc, s.cfg.ProcessInterval) {
		s.pollProcesses(now)
		s.lastProc = now
	}
	if !s.hasPolled || s.due(now, s.lastUtil, MinProcUtilInterval) {
		clear(s.utilBuf)
		if err := s.src.ReadProcessUtilization(now, s.utilBuf); err == nil {
			for _, p := range s.procs {
				if p.exited {
					continue
				}
				if u, ok := s.utilBuf[UtilKey{Device: p.last.Device, PID: p.last.PID}]; ok {
					p.util = Ptr(u)
				}
			}
		}
		s.lastUtil = now
	}
	s.hasPolled = true
}

func (s *Sampler) loadInfo() {
	info := s.src.Info()
	s.infoLoaded = true
	s.info = info
	capacity := CapacityFor(s.cfg.History, s.cfg.Interval)
	devs := make([]*devState, len(info.Devices))
	seen := make(map[string]bool, len(info.Devices))
	for i, di := range info.Devices {
		d := s.devByID[di.ID]
		if d == nil {
			d = &devState{ring: NewRing(capacity)}
			if bf, ok := s.src.(Backfiller); ok {
				times, values := bf.Backfill(di.ID)
				for j := range min(len(times), len(values)) {
					d.ring.Push(times[j], values[j])
				}
			}
			s.devByID[di.ID] = d
		}
		d.info = di
		devs[i] = d
		seen[di.ID] = true
	}
	for id := range s.devByID {
		if !seen[id] {
			delete(s.devByID, id)
		}
	}
	s.devs = devs
	if len(s.memBuf) != len(devs) {
		s.memBuf = make([]MemSample, len(devs))
		s.errBuf = make([]error, len(devs))
	}
}

func (s *Sampler) pollProcesses(now time.Time) {
	clear(s.errBuf)
	var err error
	s.procBuf, err = s.src.ReadProcesses(now, s.procBuf[:0], s.errBuf)
	if err != nil {
		s.lastErr = err
		return
	}
	for i, d := range s.devs {
		d.err = s.errBuf[i]
		d.usedAtProcs = d.last.Used
	}
	for _, p := range s.procs {
		p.exited = true
	}
	for _, ps := range s.procBuf {
		if ps.Device < 0 || ps.Device >= len(s.devs) {
			continue
		}
		id := s.devs[ps.Device].info.ID
		key := ProcessKey{Device: id, PID: ps.PID, Start: ps.StartTime.UnixNano()}
		st := s.procs[key]
		if st == nil {
			st = &procState{dev: id, ring: NewRing(s.procCap), firstSeen: now}
			s.procs[key] = st
		}
		st.last = ps
		st.lastSeen = now
		st.exited = false
		if ps.HasUsed {
			st.ring.Push(now, ps.UsedBytes)
			if ps.UsedBytes > st.peak {
				st.peak = ps.UsedBytes
			}
		}
	}
	for k, p := range s.procs {
		if p.exited {
			// A process whose device failed to list is not known to have
			// exited: keep it as it was.
			if d := s.devByID[p.dev]; d != nil && d.err != nil {
				p.exited = false
				continue
			}
			if _, ok := s.devByID[p.dev]; !ok || now.Sub(p.lastSeen) > s.cfg.ExitedTTL {
				delete(s.procs, k)
			}
		}
	}
}

func (s *Sampler) publish(now time.Time) Snapshot {
	s.forcePub = false
	s.lastPub = now
	s.seq++
	snap := Snapshot{
		Time:          now,
		Hostname:      s.info.Hostname,
		DriverVersion: s.info.DriverVersion,
		NVMLVersion:   s.info.NVMLVersion,
		CUDAVersion:   s.info.CUDAVersion,
		Source:        s.info.Kind,
		Demo:          s.info.Demo,
		Interval:      s.interval,
		Seq:           s.seq,
	}
	if snap.Hostname == "" {
		snap.Hostname, _ = os.Hostname()
	}
	snap.Warnings = append(snap.Warnings, s.info.Warnings...)
	if s.panicNote != "" {
		snap.Warnings = append(snap.Warnings, s.panicNote)
		s.panicNote = ""
	}
	if s.lastErr != nil {
		snap.Err = s.lastErr.Error()
	}
	byDev := make(map[string][]Process, len(s.devs))
	for _, p := range s.procs {
		byDev[p.dev] = append(byDev[p.dev], p.snapshot())
	}
	snap.Devices = make([]Device, len(s.devs))
	for i, d := range s.devs {
		dev := Device{
			ID: d.info.ID, Index: d.info.Index, Hostname: d.info.Hostname,
			Name: d.info.Name, UUID: d.info.UUID, PCIBusID: d.info.PCIBusID,
			MIGEnabled: d.info.MIGEnabled, MIG: d.info.MIG, NoProcessList: d.info.NoProcessList,
			History: d.ring.Window(),
		}
		dev.PeakUsed = dev.History.Max()
		dev.RecentPeakUsed = d.recentPeak
		d.recentPeak = 0
		m := d.last
		if d.seen {
			dev.MemoryTotal, dev.MemoryUsed, dev.MemoryFree = m.Total, m.Used, m.Free
			if m.HasReserved {
				dev.MemoryReserved = Ptr(m.Reserved)
			}
			if m.HasUtil {
				dev.UtilizationPercent = Ptr(m.Util)
			}
			if m.HasTemp {
				dev.TemperatureC = Ptr(m.TempC)
			}
			if m.HasPower {
				dev.PowerWatts = Ptr(m.PowerW)
			}
		}
		switch {
		case m.Err != nil:
			dev.Err = m.Err.Error()
		case d.err != nil:
			dev.Err = "process list: " + d.err.Error()
		}
		procs := byDev[d.info.ID]
		sortProcesses(procs)
		if procs == nil {
			procs = []Process{}
		}
		dev.Processes = procs
		dev.Unattributed = unattributed(dev, d.usedAtProcs)
		snap.Devices[i] = dev
	}
	s.send(snap)
	return snap
}

// send hands snap to every subscriber, latest-wins, and makes it Latest.
func (s *Sampler) send(snap Snapshot) {
	for _, ch := range s.subscribers() {
		select {
		case ch <- snap:
		default:
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- snap:
			default:
			}
		}
	}
	s.latest.Store(&snap)
}

func (s *Sampler) subscribers() []chan Snapshot {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	return s.subs
}

func (p *procState) snapshot() Process {
	ps := p.last
	out := Process{
		PID: ps.PID, User: ps.User, Command: ps.Command, Type: ps.Type,
		Container: ps.Container, Visible: ps.Visible, StartTime: ps.StartTime,
		FirstSeen: p.firstSeen, LastSeen: p.lastSeen, PeakBytes: p.peak,
		Exited: p.exited, History: p.ring.Window(),
	}
	if ps.HasUID {
		out.UID = Ptr(ps.UID)
	}
	if ps.HasUsed && !p.exited {
		out.UsedBytes = Ptr(ps.UsedBytes)
	}
	out.Job = ps.Job
	if !p.exited {
		out.UtilizationPercent = p.util
		if ps.HasCPU {
			out.CPUPercent = Ptr(ps.CPUPercent)
		}
		if ps.HasHostMemory {
			out.HostMemoryBytes = Ptr(ps.HostMemoryBytes)
		}
	}
	return out
}

// sortProcesses orders live processes by memory, largest first, then exited
// ones by peak; ties by PID, so the order is stable.
func sortProcesses(ps []Process) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Exited != b.Exited {
			return !a.Exited
		}
		if a.Exited {
			if a.PeakBytes != b.PeakBytes {
				return a.PeakBytes > b.PeakBytes
			}
		} else if a.Used() != b.Used() {
			return a.Used() > b.Used()
		}
		return a.PID < b.PID
	})
}

// unattributed is used memory minus what the live processes account for; nil
// when a process's usage is unknown or the device is a MIG parent. used is the
// device's reading taken with the process list, so both describe one moment
// (device memory is read more often than process lists).
func unattributed(d Device, used uint64) *uint64 {
	if d.MIGEnabled || d.NoProcessList || d.Err != "" && d.MemoryTotal == 0 {
		return nil
	}
	var sum uint64
	for _, p := range d.Processes {
		if p.Exited {
			continue
		}
		if p.UsedBytes == nil {
			return nil
		}
		sum += *p.UsedBytes
	}
	if sum >= used {
		return Ptr(uint64(0))
	}
	return Ptr(used - sum)
}
