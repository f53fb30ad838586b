package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Synthetic snapshots for the rule tests. Names start with "syn" so as not
// to clash with other tests of the package.

var synNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// synSeries is a history ending at end, one sample per step, values oldest
// first.
func synSeries(end time.Time, step time.Duration, vals []uint64) sampler.Window {
	ts := make([]time.Time, len(vals))
	for i := range vals {
		ts[i] = end.Add(-time.Duration(len(vals)-1-i) * step)
	}
	return sampler.WindowOf(ts, vals)
}

// synRamp is n values from `from`, growing by `by` each.
func synRamp(n int, from uint64, by int64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(int64(from) + by*int64(i))
	}
	return out
}

// synFlat is n values of v.
func synFlat(n int, v uint64) []uint64 { return synRamp(n, v, 0) }

func synProc(pid uint32, user, cmd string, used uint64) sampler.Process {
	p := sampler.Process{PID: pid, User: user, Command: cmd, UsedBytes: sampler.Ptr(used), Type: "compute",
		Visible: true, PeakBytes: used, FirstSeen: synNow.Add(-time.Hour), LastSeen: synNow,
		StartTime: synNow.Add(-2 * time.Hour)}
	p.History = synSeries(synNow, time.Second, []uint64{used})
	return p
}

// withHistory gives p a history (one sample per step ending now) and the
// matching peak and current use.
func withHistory(p sampler.Process, step time.Duration, vals []uint64) sampler.Process {
	p.History = synSeries(synNow, step, vals)
	p.UsedBytes = sampler.Ptr(vals[len(vals)-1])
	p.PeakBytes = p.History.Max()
	return p
}

// synDev is a GPU with total and used memory, free = the rest, and its
// processes; unattributed is what they do not account for.
func synDev(id string, total, used uint64, procs ...sampler.Process) sampler.Device {
	idx := 0
	for _, c := range id {
		if c < '0' || c > '9' {
			break
		}
		idx = idx*10 + int(c-'0')
	}
	d := sampler.Device{ID: id, Index: idx, Name: "NVIDIA H200", MemoryTotal: total, MemoryUsed: used,
		MemoryFree: total - used, Processes: procs}
	if d.Processes == nil {
		d.Processes = []sampler.Process{}
	}
	var sum uint64
	for _, p := range procs {
		sum += p.Used()
	}
	un := uint64(0)
	if used > sum {
		un = used - sum
	}
	d.Unattributed = sampler.Ptr(un)
	d.History = synSeries(synNow, time.Second, []uint64{used})
	d.PeakUsed = used
	return d
}

func synSnap(devs ...sampler.Device) sampler.Snapshot {
	return sampler.Snapshot{Time: synNow, Hostname: "gpu-box", Source: "test", Interval: time.Second, Devices: devs}
}

// synAt returns the snapshot's time moved to now (and its histories kept).
func synAt(s sampler.Snapshot, now time.Time) sampler.Snapshot {
	s.Time = now
	return s
}

// alertsOf returns the alerts of one rule.
func alertsOf(as []Alert, rule string) []Alert {
	var out []Alert
	for _, a := range as {
		if a.Rule == rule {
			out = append(out, a)
		}
	}
	return out
}

// observeOnce runs a fresh monitor on one snapshot.
func observeOnce(cfg Config, s sampler.Snapshot) []Alert { return NewMonitor(cfg).Observe(s) }

// mustContain fails unless s contains every part.
func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s %q lacks %q", what, s, p)
		}
	}
}
