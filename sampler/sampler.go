package sampler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vramtop/vramtop/internal/starttrace"
)

// Defaults and limits of the sampling cadence.
const (
	DefaultInterval  = time.Second
	MinInterval      = 50 * time.Millisecond
	DefaultHistory   = time.Hour
	DefaultExitedTTL = 5 * time.Minute
	// DefaultMaxExited is how many exited processes each device lists at
	// most, the most recent ones: on a busy node thousands of short jobs
	// exit within ExitedTTL.
	DefaultMaxExited = 50
	// RecentHistory is how much of a device's newest history is kept at
	// full resolution (every sample, down to 50 ms); older history is kept
	// as at most HistoryBuckets per-step maxima. Ten minutes cover the
	// advisor's trend, spike and leak windows.
	RecentHistory  = 10 * time.Minute
	HistoryBuckets = 600
	// ProcessRecentHistory and ProcessHistoryBuckets are the same for each
	// process's history, sampled at the process-list interval (1 s): the
	// advisor's leak and growth rules read ten minutes of it.
	ProcessRecentHistory  = 10 * time.Minute
	ProcessHistoryBuckets = 120
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
	// MaxExited is how many exited processes each device keeps listed, the
	// most recent; default DefaultMaxExited, negative for none.
	MaxExited int
	// ProcessInterval is the shortest time between process lists; default
	// MinProcessInterval. `vramtop run` lowers it to JobProcessInterval to
	// follow one job's memory closely.
	ProcessInterval time.Duration
	// PublishInterval is the shortest time between two snapshots; default
	// and floor MinPublishInterval. The live view sets 1 s: each snapshot is
	// a frame (about 3.5 ms of the renderer at 200x60 on the H200 host: a
	// CPU profile of bench/gpu/watch.py spent 220-240 ms on 65 frames),
	// against a few µs a memory sample; the samples between frames still
	// land in the rings and RecentPeakUsed.
	PublishInterval time.Duration
	// MemoryFirst makes Run's first poll (not Tick's or Once's) publish the
	// devices' memory before their process lists are read, marked
	// ProcessesPending, and the full snapshot as soon as they are: a screen
	// shows memory without waiting for the lists and /proc (12 ms with 100
	// processes on the H200 host, bench/gpu/startup.py). For a live view.
	MemoryFirst bool
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
	if c.MaxExited == 0 {
		c.MaxExited = DefaultMaxExited
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	c.PublishInterval = max(c.PublishInterval, MinPublishInterval)
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
	// listedAt is when the process list the device shows was read (the
	// last one that did not fail).
	listedAt time.Time
	// omitted counts the processes the last list left out (Omitter), and
	// omittedBytes is their memory where omittedKnown.
	omitted      int
	omittedBytes uint64
	omittedKnown bool
	// unread: the last ReadProcesses left the device's processes unread
	// (PartialLister).
	unread bool
	// live are the device's processes in the last list, in the order of
	// the last snapshot (so the next sort starts from nearly sorted).
	live []*procState
	// procs finds a live process by PID and start time.
	procs map[procID]*procState
	// order is scratch space for sorting live.
	order []procOrder
	// exited are the most recent exited processes, oldest first, frozen as
	// they were last seen; exitedSorted is them in the snapshot's order,
	// nil until needed after a change. Neither is ever written in place
	// once published.
	exited       []Process
	exitedSorted []Process
	// goneSeq orders the devices that left the list.
	goneSeq uint64
}

// procID identifies a process on one device: a PID reused by a new process
// is a new procID.
type procID struct {
	pid   uint32
	start int64
}

// procOrder is a process's sort key for a snapshot.
type procOrder struct {
	used uint64
	pid  uint32
	p    *procState
}

type procState struct {
	key       ProcessKey
	last      ProcSample
	ring      *Ring
	peak      uint64
	firstSeen time.Time
	lastSeen  time.Time
	util      *float64
	// listed is the process poll that last listed it.
	listed uint64
	// view is the process as the last snapshot showed it (an element of
	// that snapshot's list, never written); viewOK is false when a poll has
	// changed the process since.
	view   *Process
	viewOK bool
	uid    *uint32
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
	gone      map[string]*devState // devices that left the list; see keepGone
	goneSeq   uint64
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
	kind      atomic.Value // the source's Kind, for Once's stall message
	closeOnce sync.Once
	// callMu guards inCall (a call to the source is in flight) and
	// closeLater (Close came during it).
	callMu     sync.Mutex
	inCall     bool
	closeLater bool
	procPolls  uint64
	goneBuf    []*procState
	hasPolled  bool
	forcePub   bool
	infoLoaded bool
	// procsPending is set by a first poll that read memory only
	// (Config.MemoryFirst); the next poll reads the processes.
	procsPending bool
	// memoryFirst is Config.MemoryFirst under Run (Tick and Once always
	// read everything).
	memoryFirst bool
	// backfillSeq is the LateBackfiller's BackfillSeq last merged.
	backfillSeq uint64
	// woken: the poll is a Waker's, off the schedule; it reads the
	// processes whenever they were last read, and publishes.
	woken bool
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
		utilBuf:  map[UtilKey]float64{},
		setIntvl: make(chan time.Duration, 1),
	}
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
	s.memoryFirst = s.cfg.MemoryFirst
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
		wakeLater   bool          // a Waker's wake came during a poll
	)
	var wake <-chan struct{}
	if w, ok := s.src.(Waker); ok {
		wake = w.Wake()
	}
	// wakePoll samples now, off the schedule: the source has news.
	wakePoll := func() {
		s.woken, s.forcePub = true, true
		busy, pollAt = true, s.cfg.Now()
		work <- pollAt
	}
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
		case <-wake:
			if busy {
				wakeLater = true
				continue
			}
			wakePoll()
		case <-done:
			busy = false
			s.woken = false
			if wasStale {
				// Resume with a fresh snapshot now, not one dated when
				// the stuck call began.
				wasStale = false
				s.forcePub = true
				s.finish(s.cfg.Now())
			} else {
				s.finish(pollAt)
			}
			if s.procsPending {
				// The first poll published memory only: the processes
				// now, off the tick schedule.
				busy, pollAt = true, s.cfg.Now()
				work <- pollAt
				continue
			}
			if newInterval != 0 {
				setInterval(newInterval)
				newInterval = 0
			}
			if wakeLater {
				wakeLater = false
				wakePoll()
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
// Snapshot; for `vramtop --once`. If the source does not answer within
// Config.StallTimeout (of real time: a hung driver call), Once returns a
// snapshot marked Stale, with no devices and an Err saying so; the sampler
// is then good for nothing but Close, which closes the source once the call
// returns.
func (s *Sampler) Once() Snapshot {
	s.forcePub = true
	start := s.cfg.Now()
	done := make(chan Snapshot, 1)
	go func() {
		snap, _ := s.Tick(start)
		done <- snap
	}()
	timer := time.NewTimer(s.cfg.StallTimeout)
	defer timer.Stop()
	select {
	case snap := <-done:
		return snap
	case <-timer.C:
	}
	kind, _ := s.kind.Load().(string)
	snap := Snapshot{Time: start.Add(s.cfg.StallTimeout), Source: kind, Devices: []Device{},
		Stale: true, StaleSince: start, Err: stallText(kind, s.cfg.StallTimeout)}
	snap.Hostname, _ = os.Hostname()
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
	if s.forcePub || !s.hasPolled || s.due(now, s.lastPub, s.cfg.PublishInterval) {
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
	snap.Err = stallText(snap.Source, now.Sub(since))
	s.send(snap)
}

// stallText says that a source of the given kind has not answered for d.
func stallText(kind string, d time.Duration) string {
	what := "the GPU driver"
	if kind != "nvml" && kind != "" {
		what = "the " + kind + " source"
	}
	return fmt.Sprintf("no answer from %s for %s", what, silence(d))
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
	if !s.infoLoaded || s.due(now, s.lastPub, s.cfg.PublishInterval) {
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
	if !s.hasPolled && s.memoryFirst && !s.procsPending {
		s.procsPending = true
		return
	}
	if s.procsPending {
		s.procsPending = false
		s.forcePub = true
	}
	if !s.hasPolled || s.woken || s.due(now, s.lastProc, s.cfg.ProcessInterval) {
		s.pollProcesses(now)
		s.lastProc = now
	}
	if !s.hasPolled || s.due(now, s.lastUtil, MinProcUtilInterval) {
		clear(s.utilBuf)
		if err := s.src.ReadProcessUtilization(now, s.utilBuf); err == nil && len(s.utilBuf) > 0 {
			for i, d := range s.devs {
				for _, p := range d.live {
					if u, ok := s.utilBuf[UtilKey{Device: i, PID: p.key.PID}]; ok {
						p.util, p.viewOK = Ptr(u), false
					}
				}
			}
		}
		s.lastUtil = now
	}
	s.hasPolled = true
}

func (s *Sampler) loadInfo() {
	info := s.src.Info()
	s.kind.Store(info.Kind)
	s.infoLoaded = true
	s.info = info
	devs := make([]*devState, len(info.Devices))
	seen := make(map[string]bool, len(info.Devices))
	for i, di := range info.Devices {
		d := s.devByID[di.ID]
		if d == nil {
			// A device back in the list (a fleet host that answers again)
			// carries on with its history.
			d = s.gone[di.ID]
			delete(s.gone, di.ID)
		}
		if d == nil {
			d = &devState{
				ring:  TieredRingFor(s.cfg.History, s.cfg.Interval, RecentHistory, HistoryBuckets),
				procs: map[procID]*procState{},
			}
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
	for id, d := range s.devByID {
		if !seen[id] {
			delete(s.devByID, id)
			s.keepGone(id, d)
		}
	}
	if lb, ok := s.src.(LateBackfiller); ok && lb.BackfillSeq() != s.backfillSeq {
		s.backfillSeq = lb.BackfillSeq()
		for _, d := range devs {
			if times, values := lb.Backfill(d.info.ID); len(times) > 0 {
				d.ring = s.withHistory(d.ring, times, values)
			}
		}
	}
	s.devs = devs
	if len(s.memBuf) != len(devs) {
		s.memBuf = make([]MemSample, len(devs))
		s.errBuf = make([]error, len(devs))
	}
}

// withHistory is a device's ring with the history that came late (times
// and values, oldest first) before its own samples.
func (s *Sampler) withHistory(r *Ring, times []time.Time, values []uint64) *Ring {
	w := r.Window()
	first := w.First()
	out := TieredRingFor(s.cfg.History, s.cfg.Interval, RecentHistory, HistoryBuckets)
	for j := range min(len(times), len(values)) {
		if w.Len() == 0 || times[j].Before(first) {
			out.Push(times[j], values[j])
		}
	}
	w.Each(out.Push)
	return out
}

// maxGoneDevices is how many devices that left the source's list are
// remembered, with their history, in case they come back.
const maxGoneDevices = 16

// keepGone remembers a device that left the list, forgetting the one that
// left first when too many have.
func (s *Sampler) keepGone(id string, d *devState) {
	if s.gone == nil {
		s.gone = map[string]*devState{}
	}
	s.goneSeq++
	d.goneSeq = s.goneSeq
	s.gone[id] = d
	if len(s.gone) > maxGoneDevices {
		oldest := ""
		for gid, g := range s.gone {
			if oldest == "" || g.goneSeq < s.gone[oldest].goneSeq {
				oldest = gid
			}
		}
		delete(s.gone, oldest)
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
	s.procPolls++
	gen := s.procPolls
	om, _ := s.src.(Omitter)
	lt, _ := s.src.(ListTimer)
	pl, _ := s.src.(PartialLister)
	for i, d := range s.devs {
		d.err = s.errBuf[i]
		d.usedAtProcs = d.last.Used
		if d.unread = pl != nil && pl.NotListed(i); d.unread {
			// Not read is not known to have exited: what was listed
			// goes, without an exited row.
			d.forgetProcesses()
			continue
		}
		if d.err == nil {
			d.listedAt = now
			if lt != nil {
				if at := lt.ListedAt(i); !at.IsZero() && at.Before(now) {
					d.listedAt = at
				}
			}
		}
		if om != nil {
			d.omitted, d.omittedBytes, d.omittedKnown = om.Omitted(i)
		}
	}
	for _, ps := range s.procBuf {
		if ps.Device < 0 || ps.Device >= len(s.devs) {
			continue
		}
		d := s.devs[ps.Device]
		if d.unread {
			continue
		}
		id := procID{pid: ps.PID, start: ps.StartTime.UnixNano()}
		st := d.procs[id]
		if st == nil {
			st = &procState{key: ProcessKey{Device: d.info.ID, PID: id.pid, Start: id.start}, ring: s.newProcessRing(), firstSeen: now, uid: ps.UID}
			d.procs[id] = st
			d.live = append(d.live, st)
		}
		st.last = ps
		st.lastSeen = now
		st.listed = gen
		st.viewOK = false
		if ps.UsedBytes != nil {
			st.ring.Push(now, *ps.UsedBytes)
			st.peak = max(st.peak, *ps.UsedBytes)
		}
	}
	for _, d := range s.devs {
		if d.unread {
			continue
		}
		// A process whose device failed to list is not known to have
		// exited: keep it as it was.
		if d.err == nil {
			s.retire(d, gen, now)
		}
		s.expire(d, now)
	}
}

// forgetProcesses drops what the device's last lists said: its processes,
// live and exited, when they were read and those left out.
func (d *devState) forgetProcesses() {
	clear(d.live)
	d.live = d.live[:0]
	clear(d.procs)
	clear(d.exited)
	d.exited, d.exitedSorted = nil, nil
	d.listedAt = time.Time{}
	d.omitted, d.omittedBytes, d.omittedKnown = 0, 0, false
}

// newProcessRing is a process's history: its recent samples at the
// process-list interval, older ones as per-step maxima.
func (s *Sampler) newProcessRing() *Ring {
	return TieredRingFor(s.cfg.History, maxDur(s.cfg.Interval, s.cfg.ProcessInterval), ProcessRecentHistory, ProcessHistoryBuckets)
}

// retire moves the device's processes that poll gen did not list to its
// exited list, frozen as last seen. Only the most recent MaxExited are
// kept, so of many exits in one poll only that many are frozen.
func (s *Sampler) retire(d *devState, gen uint64, now time.Time) {
	kept := d.live[:0]
	gone := s.goneBuf[:0]
	for _, p := range d.live {
		if p.listed == gen {
			kept = append(kept, p)
			continue
		}
		delete(d.procs, procID{pid: p.key.PID, start: p.key.Start})
		gone = append(gone, p)
	}
	clear(d.live[len(kept):])
	d.live = kept
	keep := max(s.cfg.MaxExited, 0)
	if len(gone) > 0 && keep > 0 {
		for _, p := range gone[max(len(gone)-keep, 0):] {
			d.exited = append(d.exited, p.snapshot(true))
		}
		d.exitedSorted = nil
	}
	clear(gone)
	s.goneBuf = gone[:0]
	if n := len(d.exited) - keep; n > 0 {
		clear(d.exited[:n]) // their histories go
		d.exited = d.exited[n:]
	}
}

// expire drops the exited processes last seen more than ExitedTTL ago.
func (s *Sampler) expire(d *devState, now time.Time) {
	n := 0
	for n < len(d.exited) && now.Sub(d.exited[n].LastSeen) > s.cfg.ExitedTTL {
		n++
	}
	if n > 0 {
		clear(d.exited[:n])
		d.exited = d.exited[n:]
		d.exitedSorted = nil
	}
}

// sortedExited returns the device's exited processes in the snapshot's
// order: largest peak first, ties by PID.
func (d *devState) sortedExited() []Process {
	if d.exitedSorted == nil && len(d.exited) > 0 {
		d.exitedSorted = slices.Clone(d.exited)
		slices.SortStableFunc(d.exitedSorted, func(a, b Process) int {
			if c := cmp.Compare(b.PeakBytes, a.PeakBytes); c != 0 {
				return c
			}
			return cmp.Compare(a.PID, b.PID)
		})
	}
	return d.exitedSorted
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

		ProcessesPending: s.procsPending,
	}
	if snap.Hostname == "" {
		snap.Hostname, _ = os.Hostname()
	}
	snap.Warnings = append(snap.Warnings, s.info.Warnings...)
	if ar, ok := s.src.(AlertReporter); ok {
		snap.ReportedAlerts = ar.ReportedAlerts()
	}
	if s.panicNote != "" {
		snap.Warnings = append(snap.Warnings, s.panicNote)
		s.panicNote = ""
	}
	if s.lastErr != nil {
		snap.Err = s.lastErr.Error()
	}
	snap.Devices = make([]Device, len(s.devs))
	for i, d := range s.devs {
		var dev Device
		dev.SetInfo(d.info)
		dev.History = d.ring.Window()
		dev.PeakUsed = dev.History.Max()
		dev.RecentPeakUsed = d.recentPeak
		d.recentPeak = 0
		m := d.last
		if d.seen {
			m.fill(&dev)
		}
		switch {
		case m.Err != nil:
			dev.Err = m.Err.Error()
		case d.err != nil:
			dev.Err = "process list: " + d.err.Error()
		}
		dev.Processes = d.processes()
		if d.omitted > 0 {
			dev.OmittedProcesses = d.omitted
			if d.omittedKnown {
				dev.OmittedBytes = Ptr(d.omittedBytes)
			}
		}
		dev.ProcessesNotRead = d.unread && !d.info.NoProcessList
		if !snap.ProcessesPending && !dev.ProcessesNotRead {
			dev.Unattributed = unattributed(dev, d.usedAtProcs)
			if !d.info.NoProcessList {
				dev.ListedAt = d.listedAt
			}
		}
		snap.Devices[i] = dev
	}
	s.send(snap)
	if s.cfg.MemoryFirst { // the live view's sampler
		if snap.ProcessesPending {
			starttrace.Mark("memory-published")
		} else {
			starttrace.Mark("processes-published")
		}
	}
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

// processes is the device's process list for a snapshot: live processes by
// memory, largest first, then exited ones by peak; ties by PID, so the order
// is stable.
func (d *devState) processes() []Process {
	// Sort compact keys, not the processes: a tenth of the memory to move
	// and no pointer to follow per comparison.
	d.order = d.order[:0]
	for _, p := range d.live {
		d.order = append(d.order, procOrder{used: p.last.Used(), pid: p.key.PID, p: p})
	}
	slices.SortFunc(d.order, func(a, b procOrder) int {
		if c := cmp.Compare(b.used, a.used); c != 0 {
			return c
		}
		return cmp.Compare(a.pid, b.pid)
	})
	exited := d.sortedExited()
	out := make([]Process, len(d.live), len(d.live)+len(exited))
	for i, o := range d.order {
		p := o.p
		d.live[i] = p
		if p.viewOK {
			out[i] = *p.view
		} else {
			out[i], p.viewOK = p.snapshot(false), true
		}
		p.view = &out[i]
	}
	clear(d.order) // no pointers kept past the sort
	return append(out, exited...)
}

// snapshot is the process as a snapshot shows it, live or exited: as the
// source listed it last, with what the sampler keeps (the UID first seen,
// the first and last time seen, the peak, the history, the utilization).
// An exited process shows none of its live figures.
func (p *procState) snapshot(exited bool) Process {
	out := p.last.Process
	out.UID, out.FirstSeen, out.LastSeen, out.PeakBytes = p.uid, p.firstSeen, p.lastSeen, p.peak
	out.Exited, out.History, out.UtilizationPercent = exited, p.ring.Window(), p.util
	if exited {
		v := reflect.ValueOf(&out).Elem()
		for _, i := range liveFields {
			v.Field(i).SetZero()
		}
	}
	return out
}

// liveFields are the fields of a Process tagged sampler:"live": figures of
// the running process that an exited one no longer shows.
var liveFields = func() []int {
	var out []int
	t := reflect.TypeFor[Process]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("sampler") == "live" {
			out = append(out, i)
		}
	}
	return out
}()

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
	if d.OmittedProcesses > 0 {
		// Processes the source counts but does not list are theirs, not
		// unattributed; how much is unknown without their memory.
		if d.OmittedBytes == nil {
			return nil
		}
		sum += *d.OmittedBytes
	}
	if sum >= used {
		return Ptr(uint64(0))
	}
	return Ptr(used - sum)
}
