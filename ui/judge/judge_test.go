package judge

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// scripted are rules that return the alerts a test sets, counting the
// snapshots they judge.
type scripted struct {
	alerts []advisor.Alert
	judged int
}

func (r *scripted) Observe(sampler.Snapshot) []advisor.Alert { r.judged++; return r.alerts }
func (r *scripted) Advise(sampler.Snapshot, advisor.Target) []advisor.Advice {
	return nil
}

// A critical alert rings the bell and notifies once when it starts, not on
// every snapshot while it stays; one that clears and comes back rings
// again; a warning never rings.
func TestCriticalAlertRingsOncePerStart(t *testing.T) {
	r := &scripted{}
	j := New(Options{Config: advisor.Config{Thresholds: advisor.DefaultThresholds()}, Rules: r, Notify: env("TERM", "foot")})
	crit := advisor.Alert{Rule: advisor.RuleThreshold, Severity: advisor.Crit, DeviceID: "0", Message: "GPU 0 at 95%"}
	warn := advisor.Alert{Rule: advisor.RuleThreshold, Severity: advisor.Warn, DeviceID: "0", Message: "GPU 0 at 85%"}
	other := advisor.Alert{Rule: advisor.RuleThreshold, Severity: advisor.Crit, DeviceID: "1", Message: "GPU 1 at 96%"}
	steps := []struct {
		alerts []advisor.Alert
		ring   bool
		notify string // the start of what is written, "" for nothing
	}{
		{[]advisor.Alert{warn}, false, ""},
		{[]advisor.Alert{crit}, true, "\x1b]777;notify;GPU 0 is critical;GPU 0 at 95%"},
		{[]advisor.Alert{crit}, false, ""},
		{[]advisor.Alert{crit, other}, true, "\x1b]777;notify;GPU 1 is critical"},
		{nil, false, ""},
		{[]advisor.Alert{crit}, true, "\x1b]777;notify;GPU 0 is critical"},
	}
	for i, s := range steps {
		r.alerts = s.alerts
		v := j.Judge(sampler.Snapshot{Time: fixedStart.Add(time.Duration(i) * time.Second)})
		if v.NewCrit != s.ring {
			t.Errorf("step %d: bell %v, want %v", i, v.NewCrit, s.ring)
		}
		if s.notify == "" && v.Notify != "" || !strings.HasPrefix(v.Notify, s.notify) {
			t.Errorf("step %d: writes %q, want %q…", i, v.Notify, s.notify)
		}
		if !slices.Equal(v.Alerts, s.alerts) {
			t.Errorf("step %d: alerts %v, want the rules' %v", i, v.Alerts, s.alerts)
		}
	}
	quiet := New(Options{Rules: &scripted{alerts: []advisor.Alert{crit}}})
	if v := quiet.Judge(sampler.Snapshot{Time: fixedStart}); !v.NewCrit || v.Notify != "" {
		t.Errorf("without --notify: bell %v, writes %q; want the bell only", v.NewCrit, v.Notify)
	}
	if s, ok := quiet.Watch(gpuSnap(70, 1).Devices[0]); ok || !strings.Contains(s, "--notify") || quiet.Watching("0") {
		t.Errorf("w without --notify: %q %v", s, ok)
	}
}

// The advice for a GPU names the alerts in force on it, hysteresis
// included: a GPU that went over the warning line and is just under it now
// keeps its alert, and the advice says so too.
func TestAdviceAgreesWithAlerts(t *testing.T) {
	th := advisor.DefaultThresholds()
	j := New(Options{Config: advisor.Config{Thresholds: th}})
	rulesOf := func(as []advisor.Alert) []string {
		var out []string
		for _, a := range as {
			if a.DeviceID == "0" && a.PID == 0 {
				out = append(out, a.Rule)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	under := false
	for i, used := range []uint64{40, 70, 76, 70, 64, 63, 20} {
		s := gpuSnap(used, 2)
		s.Time = fixedStart.Add(time.Duration(i) * 10 * time.Minute)
		v := j.Judge(s)
		var advised []string
		for _, a := range j.Advise(s, advisor.Target{DeviceID: "0"}) {
			advised = append(advised, a.Rule)
		}
		slices.Sort(advised)
		advised = slices.Compact(advised)
		if got := rulesOf(v.Alerts); !slices.Equal(got, advised) {
			t.Errorf("GPU 0 at %d GiB: alerts %v, advice %v", used, got, advised)
		}
		if s.Devices[0].UsedPercent() < th.Warn && slices.Contains(rulesOf(v.Alerts), advisor.RuleThreshold) {
			under = true
			if sev := v.Sev["0"].Severity; sev != advisor.Warn {
				t.Errorf("GPU 0 at %d GiB held in warning: severity %v", used, sev)
			}
		}
	}
	if !under {
		t.Error("no step held a GPU under the line in warning: the hysteresis is not checked")
	}
}

// A snapshot shown before its process lists is not judged: no alert, no
// bell, nothing told to --on-alert; the next one is.
func TestPendingSnapshotIsNotJudged(t *testing.T) {
	r := &scripted{alerts: []advisor.Alert{{Rule: advisor.RuleThreshold, Severity: advisor.Crit, DeviceID: "0"}}}
	told := 0
	j := New(Options{Rules: r, OnAlerts: func(sampler.Snapshot, []advisor.Alert) { told++ }})
	s := gpuSnap(76, 1)
	s.ProcessesPending = true
	if v := j.Judge(s); len(v.Alerts) != 0 || v.NewCrit || r.judged != 0 || told != 0 {
		t.Errorf("pending: %+v, judged %d, told %d", v, r.judged, told)
	}
	s.ProcessesPending = false
	if v := j.Judge(s); len(v.Alerts) != 1 || !v.NewCrit || r.judged != 1 || told != 1 {
		t.Errorf("with its lists: %+v, judged %d, told %d", v, r.judged, told)
	}
}

// In a replay, a snapshot older than the last starts the rules over; a live
// view (no Restart) keeps them.
func TestSeekBackStartsTheRulesOver(t *testing.T) {
	made := 0
	restart := func() Rules { made++; return &scripted{} }
	at := func(m int) sampler.Snapshot {
		return sampler.Snapshot{Time: fixedStart.Add(time.Duration(m) * time.Minute)}
	}
	j := New(Options{Rules: &scripted{}, Restart: restart})
	j.Judge(at(1))
	j.Judge(at(2))
	j.Judge(at(2))
	if made != 0 {
		t.Fatalf("forward: rules made %d times", made)
	}
	j.Judge(at(1))
	if made != 1 {
		t.Errorf("back: rules made %d times, want 1", made)
	}
	live := New(Options{Rules: &scripted{}})
	live.Judge(at(2))
	live.Judge(at(1)) // no restart to call: must not panic
}
