package draw

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
)

// MemBar draws a bar of width cells: used (coloured by sev, the advisor's
// severity of the device), reserved and free, each with its own glyph.
func MemBar(st common.Styles, d sampler.Device, sev advisor.Severity, width int) string {
	if width <= 0 {
		return ""
	}
	if d.MemoryTotal == 0 {
		return st.PFree.On(strings.Repeat(common.GlyphFree, width))
	}
	cells := func(b uint64) int {
		return int(math.Round(float64(b) / float64(d.MemoryTotal) * float64(width)))
	}
	used := Clamp(cells(d.MemoryUsed), 0, width)
	if d.MemoryUsed > 0 && used == 0 {
		used = 1 // something is there: show it
	}
	var rsv int
	if d.MemoryReserved != nil {
		rsv = Clamp(cells(*d.MemoryReserved), 0, width-used)
		if *d.MemoryReserved > 0 && rsv == 0 && used < width {
			rsv = 1
		}
	}
	free := width - used - rsv
	var b strings.Builder
	if used > 0 {
		b.WriteString(st.PSev[common.Level(sev)].On(strings.Repeat(common.GlyphUsed, used)))
	}
	if rsv > 0 {
		b.WriteString(st.PReserved.On(strings.Repeat(common.GlyphReserved, rsv)))
	}
	if free > 0 {
		b.WriteString(st.PFree.On(strings.Repeat(common.GlyphFree, free)))
	}
	return b.String()
}

// Series returns n columns of w between from and to, each the peak of the
// samples in it (peak-hold), in GiB. Columns before the first sample are NaN
// (no data); a column with no sample after that holds the previous value, so
// the line is not broken by sampling jitter.
func Series(w sampler.Window, from, to time.Time, n int) []float64 {
	if n <= 0 {
		return nil
	}
	out := w.Buckets(from, to, n)
	prev := math.NaN()
	for i, v := range out {
		if math.IsNaN(v) {
			out[i] = prev
			continue
		}
		out[i] = v / GiB
		prev = out[i]
	}
	return out
}

// hasData reports whether any value is a number.
func hasData(s []float64) bool {
	for _, v := range s {
		if !math.IsNaN(v) {
			return true
		}
	}
	return false
}

// SpanFor is the time span a graph of cols columns shows: maxSpan, or less
// while the history is shorter, but not less than one sampling interval per
// column; rounded up to a span that reads well on a time axis.
func SpanFor(w sampler.Window, now time.Time, interval, maxSpan time.Duration, cols int) time.Duration {
	if interval <= 0 {
		interval = sampler.DefaultInterval
	}
	span := maxSpan
	if first := w.First(); !first.IsZero() && now.Sub(first) < span {
		span = now.Sub(first)
	}
	span = max(span, time.Duration(cols)*interval)
	return niceSpan(span, maxSpan)
}

// niceSpans are the spans a short history is rounded up to.
var niceSpans = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
	5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}

func niceSpan(d, limit time.Duration) time.Duration {
	for _, s := range niceSpans {
		if s >= d {
			return min(s, limit)
		}
	}
	return limit
}

// blockGlyphs draw an inline sparkline, lowest to highest: glyph i fills
// (i+1)/8 of the cell.
var blockGlyphs = []string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// blockGlyph is the glyph whose filled height is nearest to the fraction f
// of the cell; any value gets at least the lowest glyph.
func blockGlyph(f float64) string {
	return blockGlyphs[Clamp(int(math.Round(f*8))-1, 0, len(blockGlyphs)-1)]
}

// InlineSpark draws vals (GiB, NaN for no data) scaled to totalGiB as one
// line of block glyphs, each as high as its value; each column is coloured
// by the level its value reached, which marks where the thresholds were
// crossed.
func InlineSpark(st common.Styles, vals []float64, totalGiB float64, th advisor.Thresholds) string {
	var b, run strings.Builder
	runSev := advisor.Severity(-1)
	flush := func() {
		if run.Len() == 0 {
			return
		}
		if runSev < 0 {
			b.WriteString(run.String())
		} else {
			b.WriteString(st.PSev[common.Level(runSev)].On(run.String()))
		}
		run.Reset()
	}
	for _, v := range vals {
		g, sev := " ", advisor.Severity(-1)
		if !math.IsNaN(v) && totalGiB > 0 {
			f := v / totalGiB
			g, sev = blockGlyph(f), Severity(f*100, th)
		}
		if sev != runSev {
			flush()
			runSev = sev
		}
		run.WriteString(g)
	}
	flush()
	return b.String()
}

// A plot draws in braille: each cell holds 2×4 dots, so a plot of r rows
// and c columns has 4r levels and 2c time columns. Values and threshold
// lines sit on the dot nearest their true height.
const (
	dotsPerRow  = 4
	dotsPerCell = 2
)

// PlotLine is one data series of a plot.
type PlotLine struct {
	Vals []float64 // GiB per dot column (plotDots of the spec), NaN: no data
	// Fill fills the dots under the line (one process's share of the GPU)
	// instead of drawing the line.
	Fill bool
	// P colours the series; nil colours each column by the level its value
	// reached (ok, warn, crit).
	P *common.Paint
}

// PlotSpec describes a plot of memory in GiB, 0 (or a higher floor on a
// short plot) to total, with the warn and crit levels drawn as dotted lines.
type PlotSpec struct {
	Width, Height int // cells, whole plot including the y labels and the time axis
	TotalGiB      float64
	Th            advisor.Thresholds
	Lines         []PlotLine    // drawn in order over the threshold lines
	XAxis         time.Duration // >0: draw a time axis spanning this long, ending "now"
}

// plotLabel formats a y axis value.
func plotLabel(totalGiB float64) func(float64) string {
	if totalGiB >= 10 {
		return func(v float64) string { return fmt.Sprintf("%.0fG", v) }
	}
	return func(v float64) string { return fmt.Sprintf("%.1fG", v) }
}

// labelWidth is the width of the y labels of spec.
func labelWidth(spec PlotSpec) int {
	f := plotLabel(spec.TotalGiB)
	return max(len(f(spec.TotalGiB)), len(f(0)))
}

// plotCols is the number of cell columns a plot of spec's width has room
// for after the y labels: a space, the label, the axis.
func plotCols(spec PlotSpec) int {
	return spec.Width - labelWidth(spec) - 2
}

// PlotDots is the number of time columns of a plot: the length of its
// series.
func PlotDots(spec PlotSpec) int { return max(plotCols(spec), 0) * dotsPerCell }

// PlotRows is the number of data rows of a plot of spec's height (a time
// axis takes two lines).
func PlotRows(spec PlotSpec) int {
	r := spec.Height
	if spec.XAxis > 0 {
		r -= 2
	}
	return r
}

// MinPlotRows is the least number of rows a plot draws.
const MinPlotRows = 2

// yScale maps GiB to dot levels: lo is on the bottom dot, hi on the top one.
type yScale struct {
	lo, hi float64
	dots   int // dots in a column: 4 per row
}

// dot is the level of v, 0 at the bottom, clamped to the plot.
func (s yScale) dot(v float64) int {
	if s.hi <= s.lo || s.dots < 2 {
		return 0
	}
	return Clamp(int(math.Round((v-s.lo)/(s.hi-s.lo)*float64(s.dots-1))), 0, s.dots-1)
}

// dataDot is the level of a data value v: the nearest dot, kept on the
// side of each threshold line (dot levels warnY and critY, -1 without
// lines) that v is on, so a value just under the warning line is never
// drawn on it.
func (s yScale) dataDot(v float64, warn, crit float64, warnY, critY int) int {
	y := s.dot(v)
	if warnY < 0 {
		return y
	}
	switch {
	case v < warn:
		y = min(y, warnY-1)
	case v < crit:
		y = Clamp(y, warnY, max(critY-1, warnY))
	default:
		y = max(y, critY)
	}
	return Clamp(y, 0, s.dots-1)
}

// scaleFor picks the scale of a plot of rows rows: 0 to total where that
// leaves a level between the warn line and the crit line (a value between
// them shows between them) and the warn line above the bottom; otherwise
// the lowest floor, in round steps of about 1% of the card, that does. ok
// is false when no floor under the warn line does: the plot is too short
// for these thresholds. A plot without thresholds spans 0 to total.
func scaleFor(totalGiB float64, th advisor.Thresholds, rows int) (s yScale, ok bool) {
	s = yScale{hi: totalGiB, dots: rows * dotsPerRow}
	if th.Warn <= 0 || th.Crit <= th.Warn {
		return s, true
	}
	step := niceStep(totalGiB / 100)
	if totalGiB >= 10 {
		step = max(step, 1) // the labels are whole GiB
	}
	warnG, critG := totalGiB*th.Warn/100, totalGiB*th.Crit/100
	for k := 0; float64(k)*step < warnG; k++ {
		s.lo = float64(k) * step
		w, c := s.dot(warnG), s.dot(critG)
		if c-w >= 2 && w >= 1 {
			return s, true
		}
	}
	return yScale{}, false
}

// Braille dot bits by dot column (left, right) and dot row from the top.
var brailleBits = [dotsPerCell][dotsPerRow]uint8{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// plotCell is one cell of a plot: its dots and what colours it, the
// highest-ranked thing drawn in it (rank 0 empty, 1 a threshold line, 2 a
// fill, 3 a line; among equals the more severe paint). Four bytes, so a
// large plot's grid stays small.
type plotCell struct {
	bits uint8
	rank int8
	pal  uint8 // index in the plot's palette; 0 none
}

// Palette indices 1–3 are the severity paints: a higher index is more
// severe, which is how a cell holding a warn and a crit value is coloured.
const palSev = 1

// Plot renders spec, or "" when there is nothing to draw or no room (too
// few rows to tell the warn line from the crit line from a value between
// them, at any floor). Every line is exactly spec.width cells.
func Plot(st common.Styles, spec PlotSpec) string {
	cols, rows := plotCols(spec), PlotRows(spec)
	if !plottable(spec, cols, rows) {
		return ""
	}
	sc, ok := scaleFor(spec.TotalGiB, spec.Th, rows)
	if !ok {
		return ""
	}
	g := plotGrid{cells: make([]plotCell, rows*cols), rows: rows, cols: cols}
	// The palette: none, the three severities, then each line's own paint.
	pal := []*common.Paint{nil, &st.PSev[0], &st.PSev[1], &st.PSev[2]}
	var warnY, critY = -1, -1
	warnG, critG := spec.TotalGiB*spec.Th.Warn/100, spec.TotalGiB*spec.Th.Crit/100
	if spec.Th.Warn > 0 && spec.Th.Crit > 0 {
		warnY, critY = sc.dot(warnG), sc.dot(critG)
		// A dot in every other time column: a dotted line.
		for x := 0; x < cols*dotsPerCell; x += dotsPerCell {
			g.set(x, warnY, 1, palSev+uint8(advisor.Warn))
			g.set(x, critY, 1, palSev+uint8(advisor.Crit))
		}
	}
	for _, l := range spec.Lines {
		own := uint8(0) // the line's own paint; 0: by severity
		if l.P != nil {
			pal = append(pal, l.P)
			own = uint8(len(pal) - 1)
		}
		for x, v := range l.Vals {
			if math.IsNaN(v) {
				continue
			}
			pi := own
			if pi == 0 {
				pi = palSev + uint8(common.Level(Severity(v/spec.TotalGiB*100, spec.Th)))
			}
			y := sc.dataDot(v, warnG, critG, warnY, critY)
			g.column(x, y, prevDot(l.Vals, x, sc, warnG, critG, warnY, critY), l.Fill, pi)
		}
	}
	return g.render(spec, plotLabels(spec, sc, rows, warnY, critY), pal)
}

// plottable reports whether spec can be drawn in cols x rows cells: room
// for a graph that sets the lines apart, a sane total, every line of the
// right length and one of them with data.
func plottable(spec PlotSpec, cols, rows int) bool {
	if cols < 2 || rows < MinPlotRows || spec.TotalGiB <= 0 || math.IsNaN(spec.TotalGiB) || math.IsInf(spec.TotalGiB, 0) {
		return false
	}
	data := false
	for _, l := range spec.Lines {
		if len(l.Vals) != cols*dotsPerCell {
			return false
		}
		data = data || hasData(l.Vals)
	}
	return data
}

// prevDot is the dot row of the value before column x of vals; -1 where
// there is none (the first column, or no data there).
func prevDot(vals []float64, x int, sc yScale, warnG, critG float64, warnY, critY int) int {
	if x == 0 || math.IsNaN(vals[x-1]) {
		return -1
	}
	return sc.dataDot(vals[x-1], warnG, critG, warnY, critY)
}

// plotGrid is the braille cells of a plot, rows from the top.
type plotGrid struct {
	cells      []plotCell
	rows, cols int
}

// set puts dot (x, y) (y from the bottom) in the grid.
func (g *plotGrid) set(x, y int, rank int8, pi uint8) {
	c := &g.cells[(g.rows-1-y/dotsPerRow)*g.cols+x/dotsPerCell]
	c.bits |= brailleBits[x&1][dotsPerRow-1-y%dotsPerRow]
	if rank > c.rank || rank == c.rank && pi > c.pal {
		c.rank, c.pal = rank, pi
	}
}

// column draws a line's dot column x at row y, prev the row of the column
// before it (-1: none): filled down to the bottom, a dot, or the step from
// prev to y.
func (g *plotGrid) column(x, y, prev int, fill bool, pi uint8) {
	switch {
	case fill:
		for i := 0; i <= y; i++ {
			g.set(x, i, 2, pi)
		}
	case prev < 0 || prev == y:
		g.set(x, y, 3, pi)
	default:
		// A step: the column draws the rise (or fall) from the previous
		// level, so the line is unbroken.
		step := 1
		if y < prev {
			step = -1
		}
		for i := prev + step; i != y+step; i += step {
			g.set(x, i, 3, pi)
		}
	}
}

// render writes the grid with its y labels and, when spec asks, its time
// axis.
func (g *plotGrid) render(spec PlotSpec, labels map[int]string, pal []*common.Paint) string {
	lw := labelWidth(spec)
	var b strings.Builder
	for r := 0; r < g.rows; r++ {
		if r > 0 {
			b.WriteByte('\n')
		}
		b.WriteByte(' ')
		if l, ok := labels[r]; ok {
			b.WriteString(FitRight(l, lw))
			b.WriteString("┤")
		} else {
			b.WriteString(strings.Repeat(" ", lw))
			b.WriteString("│")
		}
		writeCells(&b, g.cells[r*g.cols:(r+1)*g.cols], pal)
	}
	if spec.XAxis > 0 {
		b.WriteByte('\n')
		b.WriteString(timeAxis(spec.XAxis, g.cols, lw+2))
	}
	return b.String()
}

// writeCells writes a row of cells, one escape sequence per run of cells of
// the same paint.
func writeCells(b *strings.Builder, cells []plotCell, pal []*common.Paint) {
	var cur *common.Paint
	for _, c := range cells {
		var p *common.Paint
		if c.bits != 0 {
			p = pal[c.pal]
		}
		if p != cur {
			if cur != nil {
				b.WriteString(cur.Post)
			}
			if p != nil {
				b.WriteString(p.Pre)
			}
			cur = p
		}
		if c.bits == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteRune(rune(0x2800) + rune(c.bits))
		}
	}
	if cur != nil {
		b.WriteString(cur.Post)
	}
}

// plotLabels are the y labels by row from the top: the rows of the top,
// the bottom and the two threshold lines, named by the value each stands
// for, and round values in between where there is room. A label is always
// on the row whose dots hold its value.
func plotLabels(spec PlotSpec, sc yScale, rows, warnY, critY int) map[int]string {
	f := plotLabel(spec.TotalGiB)
	labels := map[int]string{}
	rowOf := func(y int) int { return rows - 1 - y/dotsPerRow }
	put := func(v float64, y int) {
		if r := rowOf(y); labels[r] == "" {
			labels[r] = f(v)
		}
	}
	if critY >= 0 {
		put(spec.TotalGiB*spec.Th.Crit/100, critY)
		put(spec.TotalGiB*spec.Th.Warn/100, warnY)
	}
	put(sc.hi, sc.dots-1)
	put(sc.lo, 0)
	// Round values between, every few rows, clear of the labels above.
	step := niceStep((sc.hi - sc.lo) / math.Max(float64(rows)/4, 1))
	for v := math.Ceil(sc.lo/step) * step; v < sc.hi; v += step {
		y := sc.dot(v)
		r := rowOf(y)
		if labels[r] != "" || labels[r-1] != "" || labels[r+1] != "" {
			continue
		}
		put(v, y)
	}
	return labels
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

// timeAxis is the two lines of a time axis under cols cell columns that
// start at offset: ticks on round times, labelled, ending "now".
func timeAxis(span time.Duration, cols, offset int) string {
	n := tickCount(span, cols)
	axis := []rune(strings.Repeat("─", cols))
	labels := []byte(strings.Repeat(" ", offset+cols))
	for i := 0; i < n; i++ {
		c := 0
		if n > 1 {
			c = int(math.Round(float64(i) * float64(cols-1) / float64(n-1)))
		}
		axis[c] = '┬'
		ago := span - time.Duration(i)*span/time.Duration(max(n-1, 1))
		l := "now"
		if ago > 0 {
			l = "-" + fmtAxisTime(ago, span)
		}
		at := Clamp(offset+c-len(l)/2, 0, len(labels)-len(l))
		copy(labels[at:], l)
	}
	return strings.Repeat(" ", offset-1) + "└" + string(axis) + "\n" + string(labels)
}

// tickSteps are the time axis steps; a step that divides the span puts
// every tick on a round value.
var tickSteps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour}

// tickCount is the number of ticks for a time axis of span over cols
// columns: the finest round step that divides the span and leaves about
// twelve columns per label.
func tickCount(span time.Duration, cols int) int {
	most := max(cols/12, 2)
	for _, st := range tickSteps {
		if span%st == 0 && int(span/st)+1 <= most {
			return int(span/st) + 1
		}
	}
	return 2
}

// fmtAxisTime formats a time axis tick.
func fmtAxisTime(d, span time.Duration) string {
	switch {
	case span <= 2*time.Minute:
		return fmt.Sprintf("%ds", int(math.Round(d.Seconds())))
	case span <= 2*time.Hour:
		d = d.Round(time.Second)
		if d < time.Minute {
			return fmt.Sprintf("%ds", int(d/time.Second))
		}
		if d%time.Minute == 0 {
			return fmt.Sprintf("%dm", int(d/time.Minute))
		}
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%.1fh", d.Hours())
}
