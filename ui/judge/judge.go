// Package judge is what the live view makes of each snapshot it receives:
// the alerts in force, each device's severity, the advice for a GPU or a
// process, and what is new enough to ring the bell or notify the desktop.
// One advisor.Monitor gives both the alerts and the advice, so they agree
// (the same hysteresis), and advice can use what only time shows (idle
// holders).
package judge

import (
	"strconv"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
)

// Rules judge snapshots in turn and advise on the last: advisor.Monitor.
type Rules interface {
	Observe(sampler.Snapshot) []advisor.Alert
	Advise(sampler.Snapshot, advisor.Target) []advisor.Advice
}

// Options configure a Judge.
type Options struct {
	// Config is the advisor's: thresholds, whose processes are "mine".
	Config advisor.Config
	// Rules judge; advisor.NewMonitor(Config) when nil.
	Rules Rules
	// Restart, when set, makes the rules again for a snapshot older than
	// the one before (a replay sought backwards: the rules start over from
	// there). A live source never goes back: nil.
	Restart func() Rules
	// Notify is the environment of the terminal that desktop notifications
	// (--notify) are written for (os.Getenv); nil for none.
	Notify func(string) string
	// OnAlerts is given each snapshot judged and the alerts in force after
	// it (--on-alert); it must return at once.
	OnAlerts func(sampler.Snapshot, []advisor.Alert)
}

// Verdict is what a snapshot was judged to show.
type Verdict struct {
	// Alerts are the alerts in force, most severe first.
	Alerts []advisor.Alert
	// Sev is the advisor's severity of each device, from Alerts: rows,
	// bars and banner agree.
	Sev draw.SevIndex
	// NewCrit is set when a critical alert is in force that was not at
	// the snapshot judged before (--bell).
	NewCrit bool
	// Notify is what the notifications this snapshot starts write to the
	// terminal; "" for none.
	Notify string
}

// Judge keeps the rules' state between snapshots: their hysteresis and
// history, the critical alerts already rung, the notifications already
// sent and the GPUs watched.
type Judge struct {
	rules    Rules
	restart  func() Rules
	onAlerts func(sampler.Snapshot, []advisor.Alert)
	notify   *notifier // nil without --notify
	critSeen map[string]bool
	seen     bool
	last     time.Time // of the last snapshot received
}

// New returns a Judge that has seen nothing yet.
func New(o Options) *Judge {
	j := &Judge{rules: o.Rules, restart: o.Restart, onAlerts: o.OnAlerts, critSeen: map[string]bool{}}
	if j.rules == nil {
		j.rules = advisor.NewMonitor(o.Config)
	}
	if o.Notify != nil {
		j.notify = newNotifier(o.Config.Thresholds, o.Notify)
	}
	return j
}

// Judge judges s, the snapshot after the last one given. A snapshot that
// comes before its process lists (ProcessesPending) is shown, not judged:
// the rules and notifications wait for the lists, a moment later, and its
// verdict is empty.
func (j *Judge) Judge(s sampler.Snapshot) Verdict {
	if j.seen && s.Time.Before(j.last) && j.restart != nil {
		j.rules = j.restart()
	}
	j.seen, j.last = true, s.Time
	if s.ProcessesPending {
		return Verdict{Sev: draw.NewSevIndex(nil)}
	}
	alerts := j.rules.Observe(s)
	if j.onAlerts != nil {
		j.onAlerts(s, alerts)
	}
	v := Verdict{Alerts: alerts, Sev: draw.NewSevIndex(alerts), NewCrit: j.newCrit(alerts)}
	if j.notify != nil {
		v.Notify = j.notify.Sequences(j.notify.Observe(s, alerts))
	}
	return v
}

// Advise is the advice for t in s, from the rules that judged it.
func (j *Judge) Advise(s sampler.Snapshot, t advisor.Target) []advisor.Advice {
	return j.rules.Advise(s, t)
}

// Watch watches d, or stops watching it (w): a notification comes when it
// becomes free. It returns the status line that says so, an error one
// (ok false) without --notify.
func (j *Judge) Watch(d sampler.Device) (status string, ok bool) {
	if j.notify == nil {
		return "start vramtop with --notify to be told when GPU " + d.ID + " is free", false
	}
	return j.notify.Toggle(d), true
}

// Watching reports whether the GPU of this id is watched.
func (j *Judge) Watching(id string) bool {
	return j.notify != nil && j.notify.Watching(id)
}

// newCrit reports whether a critical alert appeared that was not in force at
// the previous snapshot, and remembers the ones in force.
func (j *Judge) newCrit(alerts []advisor.Alert) bool {
	now := map[string]bool{}
	ring := false
	for _, a := range alerts {
		if a.Severity != advisor.Crit {
			continue
		}
		k := a.Rule + "|" + a.DeviceID + "|" + strconv.FormatUint(uint64(a.PID), 10)
		now[k] = true
		if !j.critSeen[k] {
			ring = true
		}
	}
	j.critSeen = now
	return ring
}
