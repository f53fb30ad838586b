package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// spikeDev is GPU id at now% with one sample at peak% ago seconds before
// synNow, in a two-minute history.
func spikeDev(id string, now, peak uint64, ago int) sampler.Device {
	vals := synFlat(120, now*oneGiB)
	vals[len(vals)-1-ago] = peak * oneGiB
	d := synDev(id, synTotal, now*oneGiB)
	d.History = synSeries(synNow, time.Second, vals)
	return d
}

func TestDeviceSeverityFollowsTheHeldThreshold(t *testing.T) {
	cases := []struct {
		name   string
		dev    sampler.Device
		want   Severity
		reason string
	}{
		{"under the lines", spikeDev("0", 50, 60, 10), Info, ""},
		{"over warn now", spikeDev("0", 85, 85, 10), Warn, ""},
		{"over crit now", spikeDev("0", 93, 93, 10), Crit, ""},
		// The case of the issue: 77.5% now, a recent peak over the warn
		// line keeps the warning, and the row says why.
		{"held by a peak", spikeDev("0", 77, 86, 19), Warn, "peak 86% 19 s ago"},
		{"held by a crit peak", spikeDev("0", 77, 95, 20), Crit, "peak 95% 20 s ago"},
		{"peak older than the hold", spikeDev("0", 77, 95, 70), Info, ""},
	}
	for _, c := range cases {
		alerts := observeOnce(Config{}, synSnap(c.dev))
		sev, why := DeviceSeverity(alerts, "0")
		if sev != c.want || why != c.reason {
			t.Errorf("%s: DeviceSeverity = %v %q, want %v %q", c.name, sev, why, c.want, c.reason)
		}
		// The banner's alert carries the same severity.
		th := alertsOf(alerts, RuleThreshold)
		if c.want > Info && (len(th) != 1 || th[0].Severity != sev) {
			t.Errorf("%s: threshold alerts %+v disagree with %v", c.name, th, sev)
		}
		if other, _ := DeviceSeverity(alerts, "1"); other != Info {
			t.Errorf("%s: another device has severity %v", c.name, other)
		}
	}
}

func TestDeviceSeverityHysteresisSaysWhenItClears(t *testing.T) {
	m := NewMonitor(Config{})
	m.Observe(synSnap(spikeDev("0", 85, 85, 5)))
	// 79% a minute and more later: under the line but within the 2 points
	// of hysteresis.
	d := synDev("0", synTotal, 79*oneGiB)
	d.History = synSeries(synNow, time.Second, synFlat(120, 79*oneGiB))
	sev, why := DeviceSeverity(m.Observe(synSnap(d)), "0")
	if sev != Warn || why != "clears below 78%" {
		t.Errorf("79%% after a warning: %v %q, want warn \"clears below 78%%\"", sev, why)
	}
}

func TestDeviceSeverityTakesTheMoreSevere(t *testing.T) {
	alerts := []Alert{
		{Rule: RuleThreshold, Severity: Warn, DeviceID: "0"},
		{Rule: RuleTimeToFull, Severity: Crit, DeviceID: "0", Reason: "full in 9 min"},
		{Rule: RuleSpikeHeadroom, Severity: Crit, DeviceID: "1", PID: 7},
		{Rule: RuleLeakSuspect, Severity: Warn, DeviceID: "2", PID: 8},
	}
	for id, want := range map[string]Severity{"0": Crit, "1": Info, "2": Info} {
		if got, _ := DeviceSeverity(alerts, id); got != want {
			t.Errorf("GPU %s: %v, want %v", id, got, want)
		}
	}
	if _, why := DeviceSeverity(alerts, "0"); why != "full in 9 min" {
		t.Errorf("reason %q, want the critical alert's", why)
	}
}

func TestNoAbsurdAgeInMessages(t *testing.T) {
	// A recording whose snapshot time is year 0001 while its history is
	// not: no negative or huge "ago".
	d := spikeDev("0", 77, 95, 20)
	snap := synSnap(d)
	snap.Time = time.Time{}
	alerts := observeOnce(Config{}, snap)
	if len(alertsOf(alerts, RuleThreshold)) != 1 {
		t.Fatalf("want the threshold alert of the peak, got %+v", alerts)
	}
	for _, a := range alerts {
		if strings.Contains(a.Message, "-") && strings.Contains(a.Message, "ago") || strings.Contains(a.Message, "9223372036") {
			t.Errorf("absurd age: %s", a.Message)
		}
	}
	for _, c := range []struct {
		now, at time.Time
		ok      bool
	}{
		{synNow, synNow.Add(-19 * time.Second), true},
		{time.Time{}, synNow, false},
		{synNow, time.Time{}, false},
		{synNow, synNow.Add(time.Minute), false},
		{synNow, synNow.AddDate(-200, 0, 0), false},
	} {
		if got, ok := agoText(c.now, c.at); ok != c.ok || ok && got != "19 s ago" {
			t.Errorf("agoText(%v, %v) = %q %v, want ok %v", c.now, c.at, got, ok, c.ok)
		}
	}
	if got := durText(-5 * time.Second); got != "0 s" {
		t.Errorf("durText(-5s) = %q", got)
	}
}

// DeviceSeverity is DeviceSeverities for one device.
func DeviceSeverity(alerts []Alert, id string) (Severity, string) {
	s := DeviceSeverities(alerts)[id]
	return s.Severity, s.Reason
}
