package advisor

import (
	"maps"
	"sync"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Monitor keeps the state the rules need across snapshots: the threshold
// level in force on each device (hysteresis), whether a time-to-full
// forecast is firing, how long each process has been idle, and when each
// alert started. It is safe for concurrent use; feed it snapshots in time
// order.
type Monitor struct {
	cfg Config

	mu    sync.Mutex
	gen   uint64
	devs  map[string]*devMemory
	idle  map[sampler.ProcessKey]*idleMemory
	leaks map[sampler.ProcessKey]*leakMemory
	since map[alertKey]*sinceMemory
	buf   []finding
	// last is the snapshot buf was computed for (Advise after Observe
	// reuses it).
	lastTime time.Time
	lastSeq  uint64
	lastOK   bool
}

type devMemory struct {
	gen   uint64
	level int
	trend bool
}

type leakMemory struct {
	gen   uint64
	next  time.Time // when to read the history again
	found bool
	alert Alert

	peakNext time.Time // when to read the spike window again
	peak     uint64
}

type idleMemory struct {
	gen   uint64
	since time.Time
}

type alertKey struct {
	rule string
	dev  string
	pid  uint32
}

type sinceMemory struct {
	gen uint64
	at  time.Time
}

// NewMonitor returns a monitor for cfg; zero fields of cfg take the
// defaults (validate the user's part of it with Config.Validate first).
func NewMonitor(cfg Config) *Monitor {
	return &Monitor{
		cfg:   cfg.WithDefaults(),
		devs:  map[string]*devMemory{},
		idle:  map[sampler.ProcessKey]*idleMemory{},
		leaks: map[sampler.ProcessKey]*leakMemory{},
		since: map[alertKey]*sinceMemory{},
	}
}

// Config returns the configuration in force, defaults filled in.
func (m *Monitor) Config() Config { return m.cfg }

// Observe evaluates every rule on snap and returns the alerts in force,
// most severe first (then in the order of Rules, by device, by PID).
func (m *Monitor) Observe(snap sampler.Snapshot) []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	fs := m.observe(&snap)
	if len(fs) == 0 {
		return nil
	}
	out := make([]Alert, len(fs))
	for i := range fs {
		out[i] = fs[i].Alert
	}
	return out
}

// observe runs the rules, records their state and returns the findings
// (valid until the next call).
func (m *Monitor) observe(snap *sampler.Snapshot) []finding {
	m.lastTime, m.lastSeq, m.lastOK = snap.Time, snap.Seq, true
	m.gen++
	st := monitorState{m}
	fs, levels := evaluate(snap, m.cfg, st, m.buf[:0], -1)
	m.buf = fs
	for i := range snap.Devices {
		id := snap.Devices[i].ID
		dm := m.devs[id]
		if dm == nil {
			dm = &devMemory{}
			m.devs[id] = dm
		}
		dm.gen = m.gen
		dm.level = max(levels[i], 0)
		dm.trend = false
	}
	for i := range fs {
		f := &fs[i]
		if f.Rule == RuleTimeToFull {
			m.devs[f.DeviceID].trend = true
		}
		k := alertKey{f.Rule, f.DeviceID, f.PID}
		sm := m.since[k]
		if sm == nil {
			sm = &sinceMemory{at: snap.Time}
			m.since[k] = sm
		}
		sm.gen = m.gen
		f.Since = sm.at
	}
	// Forget what this snapshot no longer shows.
	maps.DeleteFunc(m.devs, func(_ string, v *devMemory) bool { return v.gen != m.gen })
	maps.DeleteFunc(m.idle, func(_ sampler.ProcessKey, v *idleMemory) bool { return v.gen != m.gen })
	maps.DeleteFunc(m.leaks, func(_ sampler.ProcessKey, v *leakMemory) bool { return v.gen != m.gen })
	maps.DeleteFunc(m.since, func(_ alertKey, v *sinceMemory) bool { return v.gen != m.gen })
	return fs
}

// monitorState is the Monitor as the rules see it.
type monitorState struct{ m *Monitor }

func (s monitorState) level(dev string) int {
	if d := s.m.devs[dev]; d != nil {
		return d.level
	}
	return 0
}

func (s monitorState) trending(dev string) bool {
	d := s.m.devs[dev]
	return d != nil && d.trend
}

func (s monitorState) idleFor(k sampler.ProcessKey, idle bool, now time.Time) time.Duration {
	im := s.m.idle[k]
	if !idle {
		if im != nil {
			delete(s.m.idle, k)
		}
		return 0
	}
	if im == nil {
		im = &idleMemory{since: now}
		s.m.idle[k] = im
	}
	im.gen = s.m.gen
	return now.Sub(im.since)
}

func (s monitorState) memo(k sampler.ProcessKey) *leakMemory {
	lm := s.m.leaks[k]
	if lm == nil {
		lm = &leakMemory{}
		s.m.leaks[k] = lm
	}
	lm.gen = s.m.gen
	return lm
}

// fresh reports whether a verdict due again at next still holds at now
// (a clock that went back re-reads).
func fresh(now, next time.Time) bool {
	return now.Before(next) && !now.Before(next.Add(-leakRecheck))
}

func (s monitorState) recentPeak(k sampler.ProcessKey, p *sampler.Process, now time.Time, window time.Duration) uint64 {
	lm := s.memo(k)
	if fresh(now, lm.peakNext) {
		lm.peak = max(lm.peak, p.Used())
		return lm.peak
	}
	lm.peak = p.History.Since(now.Add(-window)).Max()
	lm.peakNext = now.Add(leakRecheck)
	return lm.peak
}

func (s monitorState) leak(out []finding, d *sampler.Device, di int, p *sampler.Process, pj int, now time.Time, cfg Config) []finding {
	lm := s.memo(p.Key(d.ID))
	if fresh(now, lm.next) {
		if lm.found {
			out = append(out, finding{Alert: lm.alert, dev: di, proc: pj, freer: -1})
		}
		return out
	}
	n := len(out)
	out = ruleLeakSuspect(out, d, di, p, pj, now, cfg)
	lm.next = now.Add(leakRecheck)
	lm.found = len(out) > n
	if lm.found {
		lm.alert = out[n].Alert
	}
	return out
}
