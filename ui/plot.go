package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/guptarohit/asciigraph"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// memBar draws a bar of width cells: used (coloured by severity), reserved
// and free, each with its own glyph.
func memBar(st Styles, d sampler.Device, th advisor.Thresholds, width int) string {
	if width <= 0 {
		return ""
	}
	if d.MemoryTotal == 0 {
		return st.pFree.on(strings.Repeat(glyphFree, width))
	}
	cells := func(b uint64) int {
		return int(math.Round(float64(b) / float64(d.MemoryTotal) * float64(width)))
	}
	used := clamp(cells(d.MemoryUsed), 0, width)
	if d.MemoryUsed > 0 && used == 0 {
		used = 1 // something is there: show it
	}
	var rsv int
	if d.MemoryReserved != nil {
		rsv = clamp(cells(*d.MemoryReserved), 0, width-used)
		if *d.MemoryReserved > 0 && rsv == 0 && used < width {
			rsv = 1
		}
	}
	free := width - used - rsv
	sev := severity(d.UsedPercent(), th)
	var b strings.Builder
	if used > 0 {
		b.WriteString(st.pSev[clampSev(sev)].on(strings.Repeat(glyphUsed, used)))
	}
	if rsv > 0 {
		b.WriteString(st.pReserved.on(strings.Repeat(glyphReserved, rsv)))
	}
	if free > 0 {
		b.WriteString(st.pFree.on(strings.Repeat(glyphFree, free)))
	}
	return b.String()
}

// series returns n columns of w between from and to, each the peak of the
// samples in it (peak-hold), in GiB. Columns before the first sample are NaN
// (no data); a column with no sample after that holds the previous value, so
// the line is not broken by sampling jitter.
func series(w sampler.Window, from, to time.Time, n int) []float64 {
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
		out[i] = v / gib
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

// spanFor is the time span a graph of cols columns shows: maxSpan, or less
// while the history is shorter, but not less than one sampling interval per
// column; rounded up to a span that reads well on a time axis.
func spanFor(w sampler.Window, now time.Time, interval, maxSpan time.Duration, cols int) time.Duration {
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

// blockGlyphs draw an inline sparkline, lowest to highest.
var blockGlyphs = []string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// inlineSpark draws vals (GiB, NaN for no data) scaled to totalGiB as one
// line of block glyphs; each column is coloured by the severity of its value,
// which marks where the thresholds were crossed.
func inlineSpark(st Styles, vals []float64, totalGiB float64, th advisor.Thresholds) string {
	var b, run strings.Builder
	runSev := advisor.Severity(-1)
	flush := func() {
		if run.Len() == 0 {
			return
		}
		if runSev < 0 {
			b.WriteString(run.String())
		} else {
			b.WriteString(st.pSev[clampSev(runSev)].on(run.String()))
		}
		run.Reset()
	}
	for _, v := range vals {
		g, sev := " ", advisor.Severity(-1)
		if !math.IsNaN(v) && totalGiB > 0 {
			f := v / totalGiB
			i := clamp(int(f*float64(len(blockGlyphs))), 0, len(blockGlyphs)-1)
			g, sev = blockGlyphs[i], severity(f*100, th)
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

// plotSpec describes an asciigraph plot of memory in GiB, 0 to total, with
// the warn and crit levels drawn as dotted lines.
type plotSpec struct {
	width, height int // cells, whole plot including the y axis labels
	totalGiB      float64
	th            advisor.Thresholds
	lines         [][]float64 // data series, drawn over the threshold lines
	colors        []asciigraph.AnsiColor
	chars         []asciigraph.CharSet // per line; the default box drawing where absent
	xAxis         time.Duration        // >0: draw a time axis spanning this long, ending "now"
}

// plotLabel formats a y axis value.
func plotLabel(totalGiB float64) func(float64) string {
	if totalGiB >= 10 {
		return func(v float64) string { return fmt.Sprintf("%.0fG", v) }
	}
	return func(v float64) string { return fmt.Sprintf("%.1fG", v) }
}

// plotCols is the number of data columns a plot of spec's width has room
// for, after the y axis labels.
func plotCols(spec plotSpec) int {
	f := plotLabel(spec.totalGiB)
	lw := len(f(spec.totalGiB))
	if l := len(f(0)); l > lw {
		lw = l
	}
	// asciigraph with Offset 2: a space, the label, "┤", then the data;
	// a time axis centres its last label ("now") on the last column.
	cols := spec.width - (lw + 2)
	if spec.xAxis > 0 {
		cols -= 2
	}
	return cols
}

// plotRows is the asciigraph height option for a plot of spec's height: the
// plot is height+1 lines, plus two for a time axis.
func plotRows(spec plotSpec) int {
	r := spec.height - 1
	if spec.xAxis > 0 {
		r -= 2
	}
	return r
}

// plot renders spec, or "" when there is nothing to draw or no room. Every
// line is exactly spec.width cells.
func plot(st Styles, spec plotSpec) string {
	cols, rows := plotCols(spec), plotRows(spec)
	if cols < 2 || rows < 1 || spec.totalGiB <= 0 || math.IsNaN(spec.totalGiB) || math.IsInf(spec.totalGiB, 0) {
		return ""
	}
	any := false
	for _, l := range spec.lines {
		if len(l) != cols {
			return ""
		}
		any = any || hasData(l)
	}
	if !any {
		return ""
	}
	flat := func(v float64) []float64 {
		s := make([]float64, cols)
		for i := range s {
			s[i] = v
		}
		return s
	}
	data := make([][]float64, 0, len(spec.lines)+2)
	charSets := []asciigraph.CharSet{}
	colors := []asciigraph.AnsiColor{}
	if spec.th.Warn > 0 && spec.th.Crit > 0 {
		data = append(data, flat(spec.totalGiB*spec.th.Warn/100), flat(spec.totalGiB*spec.th.Crit/100))
		charSets = append(charSets, asciigraph.CreateCharSet("┈"), asciigraph.CreateCharSet("┈"))
		colors = append(colors, st.plotColor(advisor.Warn), st.plotColor(advisor.Crit))
	}
	for i, l := range spec.lines {
		data = append(data, l)
		cs := asciigraph.DefaultCharSet
		if i < len(spec.chars) {
			cs = spec.chars[i]
		}
		charSets = append(charSets, cs)
		c := asciigraph.Default
		if i < len(spec.colors) {
			c = spec.colors[i]
		}
		colors = append(colors, c)
	}
	opts := []asciigraph.Option{
		asciigraph.Height(rows),
		asciigraph.Offset(2),
		asciigraph.LowerBound(0),
		asciigraph.UpperBound(spec.totalGiB),
		asciigraph.YAxisValueFormatter(plotLabel(spec.totalGiB)),
		asciigraph.SeriesChars(charSets...),
		asciigraph.SeriesColors(colors...),
	}
	if spec.xAxis > 0 {
		span := spec.xAxis
		opts = append(opts,
			asciigraph.XAxisRange(-span.Seconds(), 0),
			asciigraph.XAxisTickCount(tickCount(span, cols)),
			asciigraph.XAxisValueFormatter(func(v float64) string {
				if v > -0.5 {
					return "now"
				}
				return "-" + fmtAxisTime(time.Duration(-v*float64(time.Second)), span)
			}))
	}
	out := asciigraph.PlotMany(data, opts...)
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = fit(l, spec.width)
	}
	return strings.Join(lines, "\n")
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
