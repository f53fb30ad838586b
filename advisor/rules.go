package advisor

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// finding is an alert with what Advise needs to attach remedies.
type finding struct {
	Alert
	dev  int // index in snap.Devices
	proc int // index in the device's Processes; -1 for the device
	// shortfall is what would have to go for the situation to clear.
	shortfall uint64
	// freer is the index of a freer device (freer_gpu); -1 when none.
	freer int
}

// ruleState is what the rules remember between snapshots; nil for a
// stateless evaluation (Advise without a Monitor).
type ruleState interface {
	// level returns the threshold level (0 none, 1 warn, 2 crit) last in
	// force on the device.
	level(dev string) int
	// trending reports whether time_to_full fired on the device last time.
	trending(dev string) bool
	// idleFor returns how long the process has been idle, updating the
	// record (idle false forgets it).
	idleFor(k sampler.ProcessKey, idle bool, now time.Time) time.Duration
	// leak is ruleLeakSuspect, re-read at most every leakRecheck per
	// process (a 10-minute shape does not change in a second).
	leak(out []finding, d *sampler.Device, di int, p *sampler.Process, pj int, now time.Time, cfg Config) []finding
	// recentPeak is the process's peak over the window, re-read from its
	// history at most every leakRecheck (in between: the last peak read
	// or the current use, whichever is higher).
	recentPeak(k sampler.ProcessKey, p *sampler.Process, now time.Time, window time.Duration) uint64
}

// leakRecheck is how often a Monitor re-reads a process's history for
// leak_suspect; in between it repeats its last verdict.
const leakRecheck = 5 * time.Second

// evaluate runs every rule on snap. st may be nil: then the threshold has
// no hysteresis and idle_holder (which needs time) does not fire.
//
// only, when not negative, limits the rules to that device (the levels of
// all devices are still computed: freer_gpu compares them).
func evaluate(snap *sampler.Snapshot, cfg Config, st ruleState, out []finding, only int) ([]finding, []int) {
	now := snap.Time
	levels := make([]int, len(snap.Devices))
	for i := range snap.Devices {
		d := &snap.Devices[i]
		if !usable(d) {
			levels[i] = -1
			continue
		}
		prev := 0
		if st != nil {
			prev = st.level(d.ID)
		}
		held := heldPeak(d, now, cfg.HoldFor)
		levels[i] = thresholdLevel(held, d.MemoryTotal, prev, cfg.Thresholds, cfg.Hysteresis)
	}
	var freest freestIndex // built once, when freer_gpu first needs it
	for i := range snap.Devices {
		d := &snap.Devices[i]
		if levels[i] < 0 || only >= 0 && i != only {
			continue
		}
		out = ruleThreshold(out, d, i, levels[i], now, cfg)
		out = ruleTimeToFull(out, d, i, now, cfg, st != nil && st.trending(d.ID))
		out = ruleUnattributed(out, d, i, levels[i], cfg)
		out = ruleOtherTenants(out, d, i, levels[i], cfg)
		out = ruleFreerGPU(out, snap, i, levels, &freest, cfg)
		for j := range d.Processes {
			p := &d.Processes[j]
			if p.Exited {
				continue
			}
			out = ruleSpikeHeadroom(out, d, i, p, j, now, cfg, st)
			if st == nil {
				out = ruleLeakSuspect(out, d, i, p, j, now, cfg)
			} else {
				out = st.leak(out, d, i, p, j, now, cfg)
			}
			if st != nil {
				out = ruleIdleHolder(out, d, i, p, j, levels[i], now, cfg, st)
			}
		}
	}
	out = addReported(out, snap, only)
	for k := range out {
		out[k].Since = now
	}
	sortFindings(out)
	return out, levels
}

// addReported adds the alerts the source reports (a fleet host's own
// vramtop_alert series) to the findings: one that a rule here finds too
// keeps the more severe of the two, so that the host's alerts show from
// the first snapshot, before the history the rules need is read, and the
// rules here may add to them, never hide them.
func addReported(out []finding, snap *sampler.Snapshot, only int) []finding {
	for _, r := range snap.ReportedAlerts {
		var sev Severity
		if sev.UnmarshalText([]byte(r.Severity)) != nil {
			continue
		}
		di := -1
		for i := range snap.Devices {
			if snap.Devices[i].ID == r.DeviceID {
				di = i
				break
			}
		}
		if di < 0 || only >= 0 && di != only {
			continue
		}
		pj := -1
		if r.PID != 0 {
			for j, p := range snap.Devices[di].Processes {
				if p.PID == r.PID && !p.Exited {
					pj = j
					break
				}
			}
		}
		dup := false
		for k := range out {
			if f := &out[k]; f.Rule == r.Rule && f.DeviceID == r.DeviceID && f.PID == r.PID {
				f.Severity = max(f.Severity, sev)
				dup = true
			}
		}
		if !dup {
			out = append(out, finding{Alert: Alert{Rule: r.Rule, Severity: sev, DeviceID: r.DeviceID, PID: r.PID, Message: r.Message}, dev: di, proc: pj, freer: -1})
		}
	}
	return out
}

// usable is false for devices the rules skip: MIG parents (their memory
// belongs to the instances), devices never read, devices whose memory
// reading failed (a failed process listing alone keeps the memory rules).
func usable(d *sampler.Device) bool {
	if d.MIGEnabled || d.MemoryTotal == 0 {
		return false
	}
	return d.Err == "" || strings.HasPrefix(d.Err, "process list:")
}

var ruleRank = func() map[string]int {
	m := map[string]int{}
	for i, r := range Rules {
		m[r] = i
	}
	return m
}()

// sortFindings orders most severe first, then by rule, device and PID.
func sortFindings(fs []finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Rule != b.Rule {
			return ruleRank[a.Rule] < ruleRank[b.Rule]
		}
		if a.dev != b.dev {
			return a.dev < b.dev
		}
		return a.PID < b.PID
	})
}

// atOrAbove reports used/total ≥ line percent, exactly for whole percents.
func atOrAbove(used, total uint64, line float64) bool {
	return float64(used)*100 >= line*float64(total)
}

// thresholdLevel is 2 at or above crit, 1 at or above warn, else 0; a level
// in force (prev) holds until the memory falls h points below its line.
func thresholdLevel(used, total uint64, prev int, th Thresholds, h float64) int {
	raw := 0
	switch {
	case atOrAbove(used, total, th.Crit):
		raw = 2
	case atOrAbove(used, total, th.Warn):
		raw = 1
	}
	for l := prev; l > raw; l-- {
		line := th.Warn
		if l == 2 {
			line = th.Crit
		}
		if atOrAbove(used, total, line-h) {
			return l
		}
	}
	return raw
}

// largest returns the index of the live process holding the most memory, -1.
func largest(d *sampler.Device) int {
	best := -1
	for j := range d.Processes {
		p := &d.Processes[j]
		if p.Exited || p.UsedBytes == nil {
			continue
		}
		if best < 0 || p.Used() > d.Processes[best].Used() {
			best = j
		}
	}
	return best
}

// heldPeak is the highest used memory of the device over the last hold,
// the current reading included.
func heldPeak(d *sampler.Device, now time.Time, hold time.Duration) uint64 {
	return max(d.MemoryUsed, d.History.Since(now.Add(-hold)).Max())
}

// peakTime is when the device's history last reached v since from; now when
// it did not.
func peakTime(d *sampler.Device, from time.Time, v uint64, now time.Time) time.Time {
	w := d.History.Since(from)
	for i := w.Len() - 1; i >= 0; i-- {
		if t, u := w.At(i); u >= v {
			return t
		}
	}
	return now
}

func ruleThreshold(out []finding, d *sampler.Device, di, level int, now time.Time, cfg Config) []finding {
	if level <= 0 {
		return out
	}
	sev, line, name := Warn, cfg.Thresholds.Warn, "warning"
	if level == 2 {
		sev, line, name = Crit, cfg.Thresholds.Crit, "critical"
	}
	used := d.UsedPercent()
	peak := heldPeak(d, now, cfg.HoldFor)
	var b strings.Builder
	var reason string
	fmt.Fprintf(&b, "%s at %s (%s of %s used)", gpuName(d), pct(used), FormatBytes(d.MemoryUsed), FormatBytes(d.MemoryTotal))
	switch {
	case atOrAbove(d.MemoryUsed, d.MemoryTotal, line):
		fmt.Fprintf(&b, ", over the %s %s line", pct(line), name)
	case atOrAbove(peak, d.MemoryTotal, line):
		peakPct := pct(float64(peak) / float64(d.MemoryTotal) * 100)
		reason = "peak " + peakPct
		b.WriteString(", peaked at " + peakPct)
		if ago, ok := agoText(now, peakTime(d, now.Add(-cfg.HoldFor), peak, now)); ok {
			reason += " " + ago
			b.WriteString(" " + ago)
		}
		fmt.Fprintf(&b, ", over the %s %s line", pct(line), name)
	default:
		reason = "clears below " + pct(line-cfg.Hysteresis)
		fmt.Fprintf(&b, ", just under the %s %s line (clears below %s)", pct(line), name, pct(line-cfg.Hysteresis))
	}
	if j := largest(d); j >= 0 {
		p := &d.Processes[j]
		fmt.Fprintf(&b, "; largest: %s with %s", procLabel(p), FormatBytes(p.Used()))
	}
	warnBytes := uint64(cfg.Thresholds.Warn / 100 * float64(d.MemoryTotal))
	var short uint64
	if d.MemoryUsed > warnBytes {
		short = d.MemoryUsed - warnBytes
	}
	return append(out, finding{
		Alert: Alert{Rule: RuleThreshold, Severity: sev, DeviceID: d.ID, Message: b.String(), Bytes: d.MemoryUsed, Reason: reason},
		dev:   di, proc: -1, shortfall: short, freer: -1,
	})
}

func ruleTimeToFull(out []finding, d *sampler.Device, di int, now time.Time, cfg Config, wasOn bool) []finding {
	if d.MemoryFree == 0 {
		return out // full already: the threshold says so
	}
	from := now.Add(-cfg.TrendWindow)
	f := fitLine(d.History.Since(from), fitMaxPoints)
	minR2 := cfg.TrendMinR2
	if wasOn {
		minR2 -= 0.1 // hysteresis: a firing forecast survives a little noise
	}
	if f.n < 10 || f.span < cfg.TrendMinSpan || f.slope <= 0 || f.r2 < minR2 {
		return out
	}
	// The last third must still climb at half the rate (a quarter to keep
	// a firing forecast): a model that loaded and then levelled off is not
	// a trend any more.
	last, _, _ := d.History.Last()
	recent := fitLine(d.History.Since(last.Add(-f.span/3)), fitMaxPoints/3)
	keep := 0.5
	if wasOn {
		keep = 0.25
	}
	if recent.n < 5 || recent.slope < keep*f.slope {
		return out
	}
	eta := time.Duration(float64(d.MemoryFree) / f.slope * float64(time.Second))
	if eta > cfg.TrendHorizon || eta < 0 {
		return out
	}
	perMin := f.slope * 60
	sev := Warn
	if eta <= cfg.TrendCrit {
		sev = Crit
	}
	msg := fmt.Sprintf("%s full in %s at this rate (%s)", gpuName(d), minutesText(eta), rateText(perMin))
	// Name the process that grows most, when it carries most of the trend.
	best, bestRate := -1, 0.0
	for j := range d.Processes {
		p := &d.Processes[j]
		if p.Exited {
			continue
		}
		if r := growthRate(p.History.Since(from)); r > bestRate {
			best, bestRate = j, r
		}
	}
	if best >= 0 && bestRate*60 >= perMin/2 {
		msg += fmt.Sprintf(", mostly %s (%s)", procLabel(&d.Processes[best]), rateText(bestRate*60))
	}
	return append(out, finding{
		Alert: Alert{Rule: RuleTimeToFull, Severity: sev, DeviceID: d.ID, Message: msg,
			Bytes: d.MemoryFree, RatePerMin: perMin, ETA: eta, Reason: "full in " + minutesText(eta)},
		dev: di, proc: -1, freer: -1,
	})
}

// growthRate is (last − first) / span in bytes per second; 0 when it does
// not grow.
func growthRate(w sampler.Window) float64 {
	if w.Len() < 2 {
		return 0
	}
	t0, v0 := w.At(0)
	t1, v1, _ := w.Last()
	if v1 <= v0 || !t1.After(t0) {
		return 0
	}
	return float64(v1-v0) / t1.Sub(t0).Seconds()
}

func ruleSpikeHeadroom(out []finding, d *sampler.Device, di int, p *sampler.Process, pj int, now time.Time, cfg Config, st ruleState) []finding {
	if p.UsedBytes == nil {
		return out
	}
	cur, free := p.Used(), d.MemoryFree
	// The lifetime peak bounds the recent one: most processes stop here
	// without reading their history.
	if p.PeakBytes <= cur || p.PeakBytes-cur <= free {
		return out
	}
	var peak uint64
	if st != nil {
		peak = st.recentPeak(p.Key(d.ID), p, now, cfg.SpikeWindow)
	} else {
		peak = p.History.Since(now.Add(-cfg.SpikeWindow)).Max()
	}
	if peak <= cur {
		return out
	}
	spike := peak - cur
	if spike <= free || spike < cfg.SpikeMin {
		return out
	}
	msg := fmt.Sprintf("%s: %s peaked at %s in the last %s, %s above its %s now, but only %s is free: its next spike may run out of memory",
		gpuName(d), procLabel(p), FormatBytes(peak), durText(cfg.SpikeWindow), FormatBytes(spike), FormatBytes(cur), FormatBytes(free))
	return append(out, finding{
		Alert: Alert{Rule: RuleSpikeHeadroom, Severity: Crit, DeviceID: d.ID, PID: p.PID, Message: msg, Bytes: spike},
		dev:   di, proc: pj, shortfall: spike - free, freer: -1,
	})
}

func ruleLeakSuspect(out []finding, d *sampler.Device, di int, p *sampler.Process, pj int, now time.Time, cfg Config) []finding {
	h := p.History
	if h.Len() < 4 {
		return out
	}
	from := now.Add(-cfg.LeakWindow)
	// The history must cover the window (within a sixtieth of it: the
	// sampler's cadence).
	if h.First().After(from.Add(cfg.LeakWindow / 60)) {
		return out
	}
	w := h.Since(from)
	if w.Len() < 4 {
		return out
	}
	t0, v0 := w.At(0)
	t1, v1, _ := w.Last()
	if v1 < v0 || v1-v0 < cfg.LeakMinGrowth {
		return out // cheap exit for the flat and the shrinking
	}
	rising, monotone := growthShape(w, from, now)
	if !monotone || rising < 3 {
		return out
	}
	growth := v1 - v0
	perMin := float64(growth) / t1.Sub(t0).Minutes()
	msg := fmt.Sprintf("%s: %s only grew over the last %s, %s → %s (%s): a leak? (tensors kept across steps, a growing cache)",
		gpuName(d), procLabel(p), durText(cfg.LeakWindow), FormatBytes(v0), FormatBytes(v1), rateText(perMin))
	a := Alert{Rule: RuleLeakSuspect, Severity: Warn, DeviceID: d.ID, PID: p.PID, Bytes: growth, RatePerMin: perMin}
	if eta := time.Duration(float64(d.MemoryFree) / perMin * float64(time.Minute)); d.MemoryFree > 0 && eta <= cfg.TrendHorizon {
		a.ETA = eta
		msg += fmt.Sprintf("; at this rate %s is full in %s", gpuName(d), minutesText(eta))
	}
	a.Message = msg
	return append(out, finding{Alert: a, dev: di, proc: pj, freer: -1})
}

// tenant reports whether p is another user's process worth naming.
func isTenant(p *sampler.Process, cfg Config) bool {
	if p.Exited || p.UsedBytes == nil || p.Used() < cfg.TenantFloor {
		return false
	}
	if !p.Visible {
		return true
	}
	return p.User != "" && p.User != cfg.User
}

func ownsProcess(d *sampler.Device, user string) bool {
	for j := range d.Processes {
		p := &d.Processes[j]
		if !p.Exited && p.Visible && p.User == user {
			return true
		}
	}
	return false
}

func ruleOtherTenants(out []finding, d *sampler.Device, di, level int, cfg Config) []finding {
	if cfg.User == "" || !ownsProcess(d, cfg.User) {
		return out
	}
	var held uint64
	var names []string
	n := 0
	for j := range d.Processes {
		p := &d.Processes[j]
		if !isTenant(p, cfg) {
			continue
		}
		n++
		held += p.Used()
		if len(names) < 3 {
			names = append(names, fmt.Sprintf("%s %s", procLabel(p), FormatBytes(p.Used())))
		}
	}
	if n == 0 {
		return out
	}
	if n > len(names) {
		names = append(names, fmt.Sprintf("%d more", n-len(names)))
	}
	noun := "process"
	if n > 1 {
		noun = "processes"
	}
	msg := fmt.Sprintf("%s: %d %s of other users %s %s beside yours: %s", gpuName(d), n, noun, plural(n, "holds", "hold"), FormatBytes(held), strings.Join(names, ", "))
	sev := infoOrWarn(level)
	return append(out, finding{
		Alert: Alert{Rule: RuleOtherTenants, Severity: sev, DeviceID: d.ID, Message: msg, Bytes: held},
		dev:   di, proc: -1, freer: -1,
	})
}

// infoOrWarn is the severity of a finding about a GPU at level: a warning
// once the GPU is past a threshold, information before.
func infoOrWarn(level int) Severity {
	if level > 0 {
		return Warn
	}
	return Info
}

func ruleUnattributed(out []finding, d *sampler.Device, di, level int, cfg Config) []finding {
	if d.Unattributed == nil || *d.Unattributed < cfg.UnattributedFloor {
		return out
	}
	u := *d.Unattributed
	msg := fmt.Sprintf("%s: %s used by no process visible here (other containers or PID namespaces, leaked contexts, the driver)", gpuName(d), FormatBytes(u))
	sev := infoOrWarn(level)
	return append(out, finding{
		Alert: Alert{Rule: RuleUnattributed, Severity: sev, DeviceID: d.ID, Message: msg, Bytes: u},
		dev:   di, proc: -1, freer: -1,
	})
}

// isIdle reports whether p is known to be at ~0% utilization: its own
// utilization, or else the whole device's (an idle GPU idles every process).
func isIdle(d *sampler.Device, p *sampler.Process, maxUtil float64) (idle bool, util float64) {
	switch {
	case p.UtilizationPercent != nil:
		return *p.UtilizationPercent <= maxUtil, *p.UtilizationPercent
	case d.UtilizationPercent != nil:
		return *d.UtilizationPercent <= maxUtil, *d.UtilizationPercent
	}
	return false, 0
}

func ruleIdleHolder(out []finding, d *sampler.Device, di int, p *sampler.Process, pj, level int, now time.Time, cfg Config, st ruleState) []finding {
	idle, util := isIdle(d, p, cfg.IdleMaxUtil)
	idle = idle && p.UsedBytes != nil && p.Used() >= cfg.IdleMin
	dur := st.idleFor(p.Key(d.ID), idle, now)
	if !idle || dur < cfg.IdleFor {
		return out
	}
	msg := fmt.Sprintf("%s: %s has held %s at %s utilization for %s", gpuName(d), procLabel(p), FormatBytes(p.Used()), pct(util), durText(dur))
	sev := infoOrWarn(level)
	return append(out, finding{
		Alert: Alert{Rule: RuleIdleHolder, Severity: sev, DeviceID: d.ID, PID: p.PID, Message: msg, Bytes: p.Used()},
		dev:   di, proc: pj, freer: -1,
	})
}

func ruleFreerGPU(out []finding, snap *sampler.Snapshot, di int, levels []int, fi *freestIndex, cfg Config) []finding {
	if levels[di] <= 0 {
		return out
	}
	d := &snap.Devices[di]
	best := fi.freer(snap, di, cfg.FreerMinExtra)
	if best < 0 {
		return out
	}
	e := &snap.Devices[best]
	v := VisibleDevicesValue(e)
	full := pct(d.UsedPercent())
	if peak := heldPeak(d, snap.Time, cfg.HoldFor); peak > d.MemoryUsed && d.MemoryTotal > 0 {
		full += fmt.Sprintf(" (%s at its peak)", pct(float64(peak)/float64(d.MemoryTotal)*100))
	}
	msg := fmt.Sprintf("%s is %s full; %s has %s free (%s here): CUDA_VISIBLE_DEVICES=%s",
		gpuName(d), full, gpuName(e), FormatBytes(e.MemoryFree), FormatBytes(d.MemoryFree), v)
	return append(out, finding{
		Alert: Alert{Rule: RuleFreerGPU, Severity: Info, DeviceID: d.ID, Message: msg, Bytes: e.MemoryFree, Suggest: v},
		dev:   di, proc: -1, freer: best,
	})
}

// freestIndex holds the two freest pickable devices of each host of a
// snapshot (in freerThan's order), so that freer_gpu costs one pass over
// the devices per snapshot, not one per device over the warning line: a
// fleet has thousands.
type freestIndex struct {
	built bool
	hosts map[string]freestPair
}

// freestPair is a host's freest device and the next; -1 where none.
type freestPair struct{ first, second int }

func (fi *freestIndex) build(snap *sampler.Snapshot) {
	fi.built = true
	fi.hosts = map[string]freestPair{}
	for i := range snap.Devices {
		e := &snap.Devices[i]
		if !pickable(e) {
			continue
		}
		p, ok := fi.hosts[e.Hostname]
		if !ok {
			p = freestPair{-1, -1}
		}
		switch {
		case p.first < 0 || freerThan(e, &snap.Devices[p.first]):
			p.first, p.second = i, p.first
		case p.second < 0 || freerThan(e, &snap.Devices[p.second]):
			p.second = i
		}
		fi.hosts[e.Hostname] = p
	}
}

// freer is freerDevice(snap, di, minExtra) from the index. The freest other
// device of the host is the only candidate: the conditions ask for more
// free memory, and free memory is freerThan's first key.
func (fi *freestIndex) freer(snap *sampler.Snapshot, di int, minExtra uint64) int {
	if !fi.built {
		fi.build(snap)
	}
	d := &snap.Devices[di]
	p, ok := fi.hosts[d.Hostname]
	if !ok {
		return -1
	}
	best := p.first
	if best == di {
		best = p.second
	}
	if best < 0 {
		return -1
	}
	e := &snap.Devices[best]
	if e.MemoryFree < 2*d.MemoryFree || e.MemoryFree < d.MemoryFree+minExtra {
		return -1
	}
	return best
}

// freerDevice returns the index of the device of the same host with the
// most free memory, if it has at least twice the free memory of device di
// and minExtra more; -1 when none.
func freerDevice(snap *sampler.Snapshot, di int, minExtra uint64) int {
	d := &snap.Devices[di]
	best := -1
	for i := range snap.Devices {
		e := &snap.Devices[i]
		if i == di || !pickable(e) || e.Hostname != d.Hostname {
			continue
		}
		if e.MemoryFree < 2*d.MemoryFree || e.MemoryFree < d.MemoryFree+minExtra {
			continue
		}
		if best < 0 || freerThan(e, &snap.Devices[best]) {
			best = i
		}
	}
	return best
}

// maxAgo is the longest time ago a message names: a longer one (or a
// negative one) comes from a clock that was not set, such as a recording's
// year-0001 time, and is left out.
const maxAgo = 100 * 365 * 24 * time.Hour

// agoText writes how long before now at was: "19 s ago"; ok is false when
// either time is unset or the age is negative or absurd.
func agoText(now, at time.Time) (string, bool) {
	if now.IsZero() || at.IsZero() {
		return "", false
	}
	d := now.Sub(at)
	if d < 0 || d > maxAgo {
		return "", false
	}
	return durText(d) + " ago", true
}

// durText writes a duration in minutes or hours and minutes: "10 min",
// "1 h 5 min"; a negative duration is 0 s.
func durText(d time.Duration) string {
	d = max(d, 0)
	m := int(math.Round(d.Minutes()))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(math.Round(d.Seconds())))
	case m < 60:
		return fmt.Sprintf("%d min", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}
