package draw

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/ui/common"
)

// dotGrid decodes a plot's braille rows (time axis excluded) into dot
// levels: on[y][x] with y from the bottom, x the dot column; labels[y0] is
// the y label of the row holding dot levels y0..y0+3.
type dotGrid struct {
	on     [][]bool
	labels map[int]string
}

func decodePlot(t *testing.T, out string, rows, labelW int) dotGrid {
	t.Helper()
	lines := strings.Split(ansi.Strip(out), "\n")
	if len(lines) < rows {
		t.Fatalf("plot has %d lines, want at least %d:\n%s", len(lines), rows, out)
	}
	g := dotGrid{labels: map[int]string{}}
	for r := 0; r < rows; r++ {
		rs := []rune(lines[r])
		label := strings.TrimSpace(string(rs[:labelW+1]))
		cells := rs[labelW+2:]
		y0 := (rows - 1 - r) * dotsPerRow
		if label != "" {
			g.labels[y0] = label
		}
		for len(g.on) < y0+dotsPerRow {
			g.on = append(g.on, make([]bool, len(cells)*dotsPerCell))
		}
		for c, ch := range cells {
			if ch == ' ' {
				continue
			}
			if ch < 0x2800 || ch > 0x28ff {
				t.Fatalf("row %d cell %d is %q, not braille", r, c, ch)
			}
			bits := uint8(ch - 0x2800)
			for x := 0; x < dotsPerCell; x++ {
				for yt := 0; yt < dotsPerRow; yt++ {
					if bits&brailleBits[x][yt] != 0 {
						g.on[y0+dotsPerRow-1-yt][c*dotsPerCell+x] = true
					}
				}
			}
		}
	}
	return g
}

// levels are the dot levels lit in dot column x, lowest first.
func (g dotGrid) levels(x int) []int {
	var out []int
	for y := range g.on {
		if g.on[y][x] {
			out = append(out, y)
		}
	}
	return out
}

// labelAt is the label of the row that holds dot level y.
func (g dotGrid) labelAt(y int) string { return g.labels[y/dotsPerRow*dotsPerRow] }

func flatSeries(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestPlotPutsValuesAndLinesAtTheirHeight draws a flat value on an 80 GiB
// card at several heights and reads the dots back: the warn (64 GiB) and
// crit (72 GiB) lines and the value are on the dots worked out by hand, on
// the side of each line the value is on, and the label of each line's row
// names the line.
func TestPlotPutsValuesAndLinesAtTheirHeight(t *testing.T) {
	st := common.NewStyles(true, true)
	th := advisor.Thresholds{Warn: 80, Crit: 90}
	cases := []struct {
		rows               int
		value              float64
		warnY, critY, valY int // dot levels from the bottom
		bottom             string
	}{
		// 10 rows: 40 levels over 0–80 G, 2.05 G each. 64/80·39 = 31.2,
		// 72/80·39 = 35.1, 62/80·39 = 30.2.
		{rows: 10, value: 62, warnY: 31, critY: 35, valY: 30, bottom: "0G"},
		// 78% sits under the warning line, not on it.
		{rows: 10, value: 62.4, warnY: 31, critY: 35, valY: 30, bottom: "0G"},
		{rows: 10, value: 68, warnY: 31, critY: 35, valY: 33, bottom: "0G"},
		{rows: 10, value: 76, warnY: 31, critY: 35, valY: 37, bottom: "0G"},
		// 4 rows: 16 levels. 64/80·15 = 12, 72/80·15 = 13.5 → 14; 62 G
		// rounds to 12, the warning line's level, and is drawn under it.
		{rows: 4, value: 62, warnY: 12, critY: 14, valY: 11, bottom: "0G"},
		{rows: 4, value: 70, warnY: 12, critY: 14, valY: 13, bottom: "0G"},
		// 3 rows: 12 levels over 0–80 G would put the lines on neighbouring
		// levels (8.8 → 9, 9.9 → 10); the plot starts at 10 G, the lowest
		// whole GiB that leaves a value room between them:
		// (64−10)/70·11 = 8.5 → 8, (72−10)/70·11 = 9.7 → 10 (at 9 G:
		// 8.5 → 9 and 9.8 → 10).
		{rows: 3, value: 62, warnY: 8, critY: 10, valY: 7, bottom: "10G"},
		{rows: 3, value: 68, warnY: 8, critY: 10, valY: 9, bottom: "10G"},
		// 20 rows: 80 levels. 64/80·79 = 63.2, 72/80·79 = 71.1, 40 → 39.5 → 40.
		{rows: 20, value: 40, warnY: 63, critY: 71, valY: 40, bottom: "0G"},
	}
	for _, c := range cases {
		spec := PlotSpec{Width: 44, Height: c.rows, TotalGiB: 80, Th: th}
		n := PlotDots(spec)
		spec.Lines = []PlotLine{{Vals: flatSeries(n, c.value)}}
		out := Plot(st, spec)
		g := decodePlot(t, out, c.rows, labelWidth(spec))
		// Column 1 is a right dot: no threshold dot there, only the value.
		if got := g.levels(1); len(got) != 1 || got[0] != c.valY {
			t.Errorf("%d rows, %.1f G: value at levels %v, want [%d]\n%s", c.rows, c.value, got, c.valY, out)
		}
		// Column 0 holds the value and both lines.
		want := []int{c.valY, c.warnY, c.critY}
		got := g.levels(0)
		if !sameLevels(got, want) {
			t.Errorf("%d rows, %.1f G: column 0 at levels %v, want %v\n%s", c.rows, c.value, got, want, out)
		}
		// Each line's row names it; where both share a row, the critical one.
		wantWarn := "64G"
		if c.critY/dotsPerRow == c.warnY/dotsPerRow {
			wantWarn = "72G"
		}
		if l := g.labelAt(c.warnY); l != wantWarn {
			t.Errorf("%d rows: the warning line's row is labelled %q, want %s\n%s", c.rows, l, wantWarn, out)
		}
		if l := g.labelAt(c.critY); l != "72G" {
			t.Errorf("%d rows: the critical line's row is labelled %q, want 72G\n%s", c.rows, l, out)
		}
		if l := g.labelAt(0); l != c.bottom && 0 != c.warnY/dotsPerRow*dotsPerRow {
			t.Errorf("%d rows: bottom row labelled %q, want %q\n%s", c.rows, l, c.bottom, out)
		}
	}
}

func sameLevels(got, want []int) bool {
	m := map[int]bool{}
	for _, w := range want {
		m[w] = true
	}
	if len(got) != len(m) {
		return false
	}
	for _, g := range got {
		if !m[g] {
			return false
		}
	}
	return true
}

// TestPlotKeepsEachValueOnItsSideOfTheLines checks, for every height from
// the least a plot draws to 30 rows and values around both lines, that a
// value under a line is drawn under it and one at or over it at or over it.
func TestPlotKeepsEachValueOnItsSideOfTheLines(t *testing.T) {
	st := common.NewStyles(true, true)
	for _, th := range []advisor.Thresholds{{Warn: 80, Crit: 90}, {Warn: 85, Crit: 90}, {Warn: 50, Crit: 95}} {
		for rows := MinPlotRows; rows <= 30; rows++ {
			for _, total := range []float64{80, 140.4} {
				warnG, critG := total*th.Warn/100, total*th.Crit/100
				for _, v := range []float64{0, warnG - 1.5, warnG - 0.01, warnG, (warnG + critG) / 2, critG - 0.01, critG, total} {
					spec := PlotSpec{Width: 30, Height: rows, TotalGiB: total, Th: th}
					spec.Lines = []PlotLine{{Vals: flatSeries(PlotDots(spec), v)}}
					out := Plot(st, spec)
					g := decodePlot(t, out, rows, labelWidth(spec))
					val := g.levels(1)
					lines := g.levels(2)
					if len(val) != 1 || len(lines) != 2 && !(len(lines) == 3 || len(lines) == 1) {
						t.Fatalf("%v %d rows %.2f: value %v, column 2 %v\n%s", th, rows, v, val, lines, out)
					}
					var warnY, critY int
					others := []int{}
					for _, y := range lines {
						if y != val[0] {
							others = append(others, y)
						}
					}
					if len(others) == 2 {
						warnY, critY = others[0], others[1]
					} else {
						// The value is on one of the lines: find which from the
						// empty-value plot.
						empty := PlotSpec{Width: 30, Height: rows, TotalGiB: total, Th: th, Lines: []PlotLine{{Vals: flatSeries(PlotDots(spec), math.NaN())}}}
						empty.Lines[0].Vals[len(empty.Lines[0].Vals)-1] = 0
						eg := decodePlot(t, Plot(st, empty), rows, labelWidth(empty))
						ls := eg.levels(2)
						if len(ls) != 2 {
							t.Fatalf("%v %d rows: lines at %v", th, rows, ls)
						}
						warnY, critY = ls[0], ls[1]
					}
					if critY-warnY < 2 {
						t.Errorf("%v %d rows: lines at %d and %d leave no level between them", th, rows, warnY, critY)
					}
					y := val[0]
					switch {
					case v < warnG && y >= warnY, v >= warnG && v < critG && (y < warnY || y >= critY), v >= critG && y < critY:
						t.Errorf("%v %d rows total %.1f: %.2f G drawn at %d, lines at %d and %d\n%s", th, rows, total, v, y, warnY, critY, out)
					}
				}
			}
		}
	}
}

// TestPlotPeakPerColumnAndShape: a spike of one sample shows at its height,
// every line of the plot is the plot's width, and the time axis ends "now".
func TestPlotPeakPerColumnAndShape(t *testing.T) {
	st := common.NewStyles(true, false)
	spec := PlotSpec{Width: 60, Height: 12, TotalGiB: 80, Th: advisor.DefaultThresholds(), XAxis: 5 * time.Minute}
	n := PlotDots(spec)
	vals := flatSeries(n, 20)
	vals[n/2] = 80
	spec.Lines = []PlotLine{{Vals: vals}}
	out := Plot(st, spec)
	lines := strings.Split(out, "\n")
	if len(lines) != 12 {
		t.Fatalf("%d lines, want 12", len(lines))
	}
	for _, l := range lines {
		if w := common.CellWidth(l); w != 60 {
			t.Errorf("line %d wide, want 60: %q", w, ansi.Strip(l))
		}
	}
	if !strings.HasSuffix(ansi.Strip(lines[11]), "now") || !strings.Contains(lines[11], "-5m") {
		t.Errorf("time axis labels: %q", ansi.Strip(lines[11]))
	}
	g := decodePlot(t, out, 10, labelWidth(spec))
	top := len(g.on) - 1
	if !g.on[top][n/2] {
		t.Errorf("the spike to the card's total is not on the top level\n%s", ansi.Strip(out))
	}
	if l := g.labelAt(top); l != "80G" {
		t.Errorf("top row labelled %q", l)
	}
	// The rise to the spike is drawn: every level from 20 G to the top.
	for y := (&yScale{hi: 80, dots: 40}).dot(20) + 1; y <= top; y++ {
		if !g.on[y][n/2] {
			t.Errorf("level %d of the spike's column is empty", y)
		}
	}
}
