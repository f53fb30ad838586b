package draw

import (
	"math"
	"strings"
	"testing"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
)

func TestCellWidthMatchesANSIWidth(t *testing.T) {
	st := common.NewStyles(true, false)
	for _, s := range []string{
		"", "abc", "● 0  python train.py", "▁▂▃▄▅▆▇█", "█▒░", "61.8G/79.6G  78%  72°C", "└┬──┬┤┼╭╮╰╯┈",
		st.Mine.Render("mine"), st.Selected.Render("x") + "y", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
		"训练 python", "emoji 🚀 here", "e\u0301", "tab\tx", "…·×→⇄",
	} {
		if got, want := common.CellWidth(s), ansi.StringWidth(s); got != want {
			t.Errorf("cellWidth(%q) = %d, ansi says %d", s, got, want)
		}
	}
}

func TestPaintMatchesRender(t *testing.T) {
	st := common.NewStyles(false, false)
	for _, s := range []lipgloss.Style{st.Mine, st.Exited, st.Selected, st.Severity(advisor.Crit)} {
		if got, want := common.PaintOf(s).On("text"), s.Render("text"); got != want {
			t.Errorf("paint %q, render %q", got, want)
		}
	}
	if p := common.PaintOf(common.NewStyles(true, true).Accent); p.On("x") != "x" {
		t.Errorf("no colour: accent should add nothing, got %q", p.On("x"))
	}
}

func TestFormat(t *testing.T) {
	// A slice, not a map keyed by the result: a wrong result equal to a
	// later case's would overwrite that case and pass.
	for i, c := range []struct{ got, want string }{
		{Bytes(0), "0 MiB"}, {Bytes(512 * MiB), "512 MiB"}, {Bytes(GiB), "1.0 GiB"}, {Bytes(143771 * MiB), "140.4 GiB"},
		{BytesShort(61*GiB + 800*MiB), "61.8G"}, {BytesShort(100 * MiB), "100M"},
		{OptBytes(nil), "n/a"}, {OptPct(nil), "n/a"}, {Temp(nil), "n/a"}, {Power(nil), "n/a"},
		{Pct(math.NaN()), "n/a"}, {Pct(44.4), "44%"},
		{Age(45 * time.Second), "45s"}, {Age(12 * time.Minute), "12m"}, {Age(3*time.Hour + 4*time.Minute), "3h04m"},
		{Age(50 * time.Hour), "2d02h"}, {Age(-time.Second), "0s"},
	} {
		if c.got != c.want {
			t.Errorf("case %d: got %q want %q", i, c.got, c.want)
		}
	}
	if Fit("abcdef", 4) != "abc…" || Fit("ab", 4) != "ab  " || FitRight("ab", 4) != "  ab" || Fit("x", 0) != "" {
		t.Error("fit pads and truncates to the width")
	}
}

func TestSeverityBoundaries(t *testing.T) {
	th := advisor.Thresholds{Warn: 80, Crit: 90}
	for pct, want := range map[float64]advisor.Severity{0: advisor.Info, 79.99: advisor.Info, 80: advisor.Warn, 89.9: advisor.Warn, 90: advisor.Crit, 100: advisor.Crit, 150: advisor.Crit} {
		if got := Severity(pct, th); got != want {
			t.Errorf("severity(%v) = %v, want %v", pct, got, want)
		}
	}
}

func TestMemBar(t *testing.T) {
	st := common.NewStyles(true, true)
	rsv := uint64(10 * GiB)
	d := sampler.Device{MemoryTotal: 100 * GiB, MemoryUsed: 50 * GiB, MemoryReserved: &rsv}
	bar := ansi.Strip(MemBar(st, d, advisor.Info, 10))
	if bar != "█████▒░░░░" {
		t.Errorf("bar %q: 5 used, 1 reserved, 4 free", bar)
	}
	tiny := sampler.Device{MemoryTotal: 100 * GiB, MemoryUsed: 10 * MiB}
	if b := ansi.Strip(MemBar(st, tiny, advisor.Info, 10)); !strings.HasPrefix(b, "█") {
		t.Errorf("a little used memory still shows: %q", b)
	}
	over := sampler.Device{MemoryTotal: 10, MemoryUsed: 20, MemoryReserved: &rsv}
	if b := ansi.Strip(MemBar(st, over, advisor.Info, 10)); b != "██████████" {
		t.Errorf("used beyond total fills the bar: %q", b)
	}
	for _, w := range []int{0, -1} {
		if MemBar(st, d, advisor.Info, w) != "" {
			t.Error("no room, no bar")
		}
	}
	if b := ansi.Strip(MemBar(st, sampler.Device{}, advisor.Info, 4)); b != "░░░░" {
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
		v := uint64(10 * GiB)
		if i == 150 || i == 151 {
			v = 70 * GiB
		}
		vs = append(vs, v)
	}
	w := sampler.WindowOf(ts, vs)
	now := ts[len(ts)-1]
	s := Series(w, now.Add(-5*time.Minute), now.Add(1), 20)
	peak := 0.0
	for _, v := range s {
		peak = math.Max(peak, v)
	}
	if peak != 70 {
		t.Errorf("the spike was averaged away: peak %v in %v", peak, s)
	}
	// Empty windows and odd sizes never panic and draw nothing.
	if len(Series(sampler.Window{}, now, now, 0)) != 0 || hasData(Series(sampler.Window{}, now.Add(-time.Minute), now, 10)) {
		t.Error("an empty window has no data")
	}
	st := common.NewStyles(true, true)
	for _, spec := range []PlotSpec{
		{Width: 40, Height: 5, TotalGiB: 80, Lines: []PlotLine{{}}},
		{Width: 40, Height: 5, TotalGiB: 0, Lines: []PlotLine{{Vals: s}}},
		{Width: 40, Height: 5, TotalGiB: 80, Lines: []PlotLine{{Vals: Series(sampler.Window{}, now.Add(-time.Minute), now, 72)}}},
		{Width: 3, Height: 5, TotalGiB: 80},
		{Width: 40, Height: 1, TotalGiB: 80},
		{Width: 40, Height: 5, TotalGiB: math.Inf(1)},
	} {
		if Plot(st, spec) != "" {
			t.Errorf("plot of %+v should be empty", spec)
		}
	}
	spec := PlotSpec{Width: 40, Height: 6, TotalGiB: 80, Th: advisor.DefaultThresholds()}
	spec.Lines = []PlotLine{{Vals: Series(w, now.Add(-5*time.Minute), now.Add(1), PlotDots(spec))}}
	out := Plot(st, spec)
	if !strings.Contains(out, "64G") || !strings.Contains(out, "72G") || !strings.Contains(out, "0G") {
		t.Errorf("thresholds and scale missing:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if common.CellWidth(l) != 40 {
			t.Errorf("plot line is %d wide: %q", common.CellWidth(l), l)
		}
	}
}

func TestSpanAndTicks(t *testing.T) {
	w := sampler.WindowOf([]time.Time{fixedStart}, []uint64{1})
	if got := SpanFor(w, fixedStart.Add(20*time.Second), time.Second, 5*time.Minute, 20); got != 30*time.Second {
		t.Errorf("20 s of history in 20 columns: span %v, want 30s", got)
	}
	if got := SpanFor(w, fixedStart.Add(time.Hour), time.Second, 5*time.Minute, 100); got != 5*time.Minute {
		t.Errorf("long history: span %v, want the 5m maximum", got)
	}
	if got := SpanFor(w, fixedStart.Add(10*time.Second), time.Second, 5*time.Minute, 100); got != 2*time.Minute {
		t.Errorf("100 columns at 1 s need at least 100 s: got %v", got)
	}
	if n := tickCount(5*time.Minute, 110); n != 6 {
		t.Errorf("5m over 110 columns: %d ticks, want 6 (every minute)", n)
	}
	if n := tickCount(time.Hour, 30); n < 2 {
		t.Errorf("at least two ticks, got %d", n)
	}
}

// fixedStart is the fixed clock of the tests.
var fixedStart = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
