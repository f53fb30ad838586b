package ui

import (
	"math"
	"strings"
	"testing"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

func TestCellWidthMatchesANSIWidth(t *testing.T) {
	st := NewStyles(true, false)
	for _, s := range []string{
		"", "abc", "● 0  python train.py", "▁▂▃▄▅▆▇█", "█▒░", "61.8G/79.6G  78%  72°C", "└┬──┬┤┼╭╮╰╯┈",
		st.Mine.Render("mine"), st.Selected.Render("x") + "y", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
		"训练 python", "emoji 🚀 here", "e\u0301", "tab\tx", "…·×→⇄",
	} {
		if got, want := cellWidth(s), ansi.StringWidth(s); got != want {
			t.Errorf("cellWidth(%q) = %d, ansi says %d", s, got, want)
		}
	}
}

func TestPaintMatchesRender(t *testing.T) {
	st := NewStyles(false, false)
	for _, s := range []lipgloss.Style{st.Mine, st.Exited, st.Selected, st.Severity(advisor.Crit)} {
		if got, want := paintOf(s).on("text"), s.Render("text"); got != want {
			t.Errorf("paint %q, render %q", got, want)
		}
	}
	if p := paintOf(NewStyles(true, true).Accent); p.on("x") != "x" {
		t.Errorf("no colour: accent should add nothing, got %q", p.on("x"))
	}
}

func TestFormat(t *testing.T) {
	// A slice, not a map keyed by the result: a wrong result equal to a
	// later case's would overwrite that case and pass.
	for i, c := range []struct{ got, want string }{
		{fmtBytes(0), "0 MiB"}, {fmtBytes(512 * mib), "512 MiB"}, {fmtBytes(gib), "1.0 GiB"}, {fmtBytes(143771 * mib), "140.4 GiB"},
		{fmtBytesShort(61*gib + 800*mib), "61.8G"}, {fmtBytesShort(100 * mib), "100M"},
		{fmtOptBytes(nil), "n/a"}, {fmtOptPct(nil), "n/a"}, {fmtTemp(nil), "n/a"}, {fmtPower(nil), "n/a"},
		{fmtPct(math.NaN()), "n/a"}, {fmtPct(44.4), "44%"},
		{fmtAge(45 * time.Second), "45s"}, {fmtAge(12 * time.Minute), "12m"}, {fmtAge(3*time.Hour + 4*time.Minute), "3h04m"},
		{fmtAge(50 * time.Hour), "2d02h"}, {fmtAge(-time.Second), "0s"},
	} {
		if c.got != c.want {
			t.Errorf("case %d: got %q want %q", i, c.got, c.want)
		}
	}
	if fit("abcdef", 4) != "abc…" || fit("ab", 4) != "ab  " || fitRight("ab", 4) != "  ab" || fit("x", 0) != "" {
		t.Error("fit pads and truncates to the width")
	}
}

func TestSeverityBoundaries(t *testing.T) {
	th := advisor.Thresholds{Warn: 80, Crit: 90}
	for pct, want := range map[float64]advisor.Severity{0: advisor.Info, 79.99: advisor.Info, 80: advisor.Warn, 89.9: advisor.Warn, 90: advisor.Crit, 100: advisor.Crit, 150: advisor.Crit} {
		if got := severity(pct, th); got != want {
			t.Errorf("severity(%v) = %v, want %v", pct, got, want)
		}
	}
}

func TestMemBar(t *testing.T) {
	st := NewStyles(true, true)
	rsv := uint64(10 * gib)
	d := sampler.Device{MemoryTotal: 100 * gib, MemoryUsed: 50 * gib, MemoryReserved: &rsv}
	bar := ansi.Strip(memBar(st, d, advisor.Info, 10))
	if bar != "█████▒░░░░" {
		t.Errorf("bar %q: 5 used, 1 reserved, 4 free", bar)
	}
	tiny := sampler.Device{MemoryTotal: 100 * gib, MemoryUsed: 10 * mib}
	if b := ansi.Strip(memBar(st, tiny, advisor.Info, 10)); !strings.HasPrefix(b, "█") {
		t.Errorf("a little used memory still shows: %q", b)
	}
	over := sampler.Device{MemoryTotal: 10, MemoryUsed: 20, MemoryReserved: &rsv}
	if b := ansi.Strip(memBar(st, over, advisor.Info, 10)); b != "██████████" {
		t.Errorf("used beyond total fills the bar: %q", b)
	}
	for _, w := range []int{0, -1} {
		if memBar(st, d, advisor.Info, w) != "" {
			t.Error("no room, no bar")
		}
	}
	if b := ansi.Strip(memBar(st, sampler.Device{}, advisor.Info, 4)); b != "░░░░" {
		t.Errorf("zero total: %q", b)
	}
}

// A 2 s spike among 5 minutes of 1 s samples must show in a 20-column
// graph: each column keeps its peak.
func TestSeriesKeepsPeaks(t *testing.T) {
	var ts []time.Time
	var vs []uint64
	for i := 0; i < 300; i++ {
		ts = append(ts, fixedStart.Add(time.Duration(i)*time.Second))
		v := uint64(10 * gib)
		if i == 150 || i == 151 {
			v = 70 * gib
		}
		vs = append(vs, v)
	}
	w := sampler.WindowOf(ts, vs)
	now := ts[len(ts)-1]
	s := series(w, now.Add(-5*time.Minute), now.Add(1), 20)
	peak := 0.0
	for _, v := range s {
		peak = math.Max(peak, v)
	}
	if peak != 70 {
		t.Errorf("the spike was averaged away: peak %v in %v", peak, s)
	}
	// Empty windows and odd sizes never panic and draw nothing.
	if len(series(sampler.Window{}, now, now, 0)) != 0 || hasData(series(sampler.Window{}, now.Add(-time.Minute), now, 10)) {
		t.Error("an empty window has no data")
	}
	st := NewStyles(true, true)
	for _, spec := range []plotSpec{
		{width: 40, height: 5, totalGiB: 80, lines: []plotLine{{}}},
		{width: 40, height: 5, totalGiB: 0, lines: []plotLine{{vals: s}}},
		{width: 40, height: 5, totalGiB: 80, lines: []plotLine{{vals: series(sampler.Window{}, now.Add(-time.Minute), now, 72)}}},
		{width: 3, height: 5, totalGiB: 80},
		{width: 40, height: 1, totalGiB: 80},
		{width: 40, height: 5, totalGiB: math.Inf(1)},
	} {
		if plot(st, spec) != "" {
			t.Errorf("plot of %+v should be empty", spec)
		}
	}
	spec := plotSpec{width: 40, height: 6, totalGiB: 80, th: advisor.DefaultThresholds()}
	spec.lines = []plotLine{{vals: series(w, now.Add(-5*time.Minute), now.Add(1), plotDots(spec))}}
	out := plot(st, spec)
	if !strings.Contains(out, "64G") || !strings.Contains(out, "72G") || !strings.Contains(out, "0G") {
		t.Errorf("thresholds and scale missing:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if cellWidth(l) != 40 {
			t.Errorf("plot line is %d wide: %q", cellWidth(l), l)
		}
	}
}

func TestSpanAndTicks(t *testing.T) {
	w := sampler.WindowOf([]time.Time{fixedStart}, []uint64{1})
	if got := spanFor(w, fixedStart.Add(20*time.Second), time.Second, 5*time.Minute, 20); got != 30*time.Second {
		t.Errorf("20 s of history in 20 columns: span %v, want 30s", got)
	}
	if got := spanFor(w, fixedStart.Add(time.Hour), time.Second, 5*time.Minute, 100); got != 5*time.Minute {
		t.Errorf("long history: span %v, want the 5m maximum", got)
	}
	if got := spanFor(w, fixedStart.Add(10*time.Second), time.Second, 5*time.Minute, 100); got != 2*time.Minute {
		t.Errorf("100 columns at 1 s need at least 100 s: got %v", got)
	}
	if n := tickCount(5*time.Minute, 110); n != 6 {
		t.Errorf("5m over 110 columns: %d ticks, want 6 (every minute)", n)
	}
	if n := tickCount(time.Hour, 30); n < 2 {
		t.Errorf("at least two ticks, got %d", n)
	}
}
