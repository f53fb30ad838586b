// Package gpus is the live view's GPU pane: a full panel per GPU (bar,
// figures and a plot of used memory), or one line per GPU with an inline
// sparkline when there are many or little room.
package gpus

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// Sizes of a GPU panel, in lines: the text block of the full panel has four
// lines (name, bar, memory, utilisation), and the sparkline beside it grows
// with the room left.
const (
	panelTextLines = 4
	panelMaxLines  = 12
	compactAt      = 8 // GPUs from which the panel is one line per GPU
)

// Pane shows each GPU: a full panel with bar and sparkline, or one line
// per GPU with an inline sparkline when there are many GPUs or little room.
type Pane struct {
	ctx      *common.Context
	out      *common.Outbox
	width    int
	height   int
	focused  bool
	compact  bool
	panelH   int
	graphH   int                  // lines of the selected GPU's graph under the compact list
	sev      draw.SevIndex        // the advisor's severity of each device
	watching func(id string) bool // whether a GPU is watched (w); nil: none is
	colHead  bool                 // the compact list has its column header line
	span     time.Duration

	snap     sampler.Snapshot
	sel, off int
}

// New returns the pane. watching says whether a GPU is watched (w); it
// may be nil. Who claimed a GPU is ctx.Claim's.
func New(ctx *common.Context, out *common.Outbox, watching func(id string) bool) *Pane {
	return &Pane{ctx: ctx, out: out, watching: watching, span: draw.DefaultSpan, panelH: panelTextLines}
}

// Compact draws GPUs as the compact list does, for a list of others' (the
// fleet's hosts).
type Compact struct{ g Pane }

// NewCompact returns the compact lines at width, coloured by sev.
func NewCompact(ctx *common.Context, sev draw.SevIndex, width int) *Compact {
	return &Compact{Pane{ctx: ctx, compact: true, sev: sev, width: width, span: draw.DefaultSpan, panelH: panelTextLines}}
}

// Line is d's line among the devices of snap.
func (c *Compact) Line(snap sampler.Snapshot, d sampler.Device) string {
	c.g.snap = snap
	return c.g.compactLine(d, false)
}

// setSnapshot sets the devices shown.
func (g *Pane) setSnapshot(snap sampler.Snapshot) {
	g.snap = snap
	g.sel = draw.Clamp(g.sel, 0, len(snap.Devices)-1)
	g.scroll()
}

// SetSize gives the pane its size as it is; Layout picks its form and
// height for a body shared with the process table.
func (g *Pane) SetSize(w, h int) {
	g.width, g.height = w, h
	g.scroll()
}

// Compact reports whether the pane shows one line per GPU.
func (g *Pane) Compact() bool { return g.compact }

// Bindings are the keys the pane takes when focused.
func (g *Pane) Bindings() []key.Binding {
	k := &g.ctx.Keys
	return []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.Enter}
}

// Layout picks the full or compact form for a pane of width w and at most
// maxH lines, given that the process table wants procWant lines and needs
// procMin; it returns the height the pane takes.
func (g *Pane) Layout(w, maxH, procMin, procWant int) int {
	n := len(g.snap.Devices)
	g.width = w
	if n == 0 {
		g.height = min(1, maxH)
		return g.height
	}
	// Full panels when they leave the process table a third of the room
	// (or all it wants).
	procRoom := min(procWant, max(procMin, maxH/3))
	full := n < compactAt && w >= fullMinWidth && n*panelTextLines+procRoom <= maxH
	if full {
		procs := draw.Clamp(procWant, procMin, maxH-n*panelTextLines)
		g.panelH = draw.Clamp((maxH-procs)/n, panelTextLines, panelMaxLines)
		g.compact = false
		g.height = n * g.panelH
	} else {
		g.compact = true
		// A column header over the list when it leaves room for a GPU line.
		g.colHead = maxH-procMin >= 2
		head := 0
		if g.colHead {
			head = 1
		}
		g.height = draw.Clamp(n, 1, max(maxH-procMin-head, 1)) + head
		// Room the process table does not want goes to a graph of the
		// selected GPU under the list.
		g.graphH = 0
		if spare := maxH - g.height - procWant; g.height-head == n && spare >= graphMinLines && w >= fullMinWidth {
			g.graphH = min(spare, panelMaxLines+4)
			g.height += g.graphH
		}
	}
	g.scroll()
	return g.height
}

// graphMinLines is the smallest graph under the compact list: a title and
// a plot of a few rows.
const graphMinLines = 6

// fullMinWidth is the narrowest pane that shows full panels: the text block
// and a sparkline of a few columns.
const fullMinWidth = textBlockMin + 2 + 24

const textBlockMin = 34

func (g *Pane) perPage() int {
	if g.compact {
		if g.colHead {
			return max(g.height-g.graphH-1, 1)
		}
		return max(g.height-g.graphH, 1)
	}
	return max(g.height/max(g.panelH, 1), 1)
}

func (g *Pane) scroll() {
	n := g.perPage()
	if g.sel < g.off {
		g.off = g.sel
	}
	if g.sel >= g.off+n {
		g.off = g.sel - n + 1
	}
	g.off = draw.Clamp(g.off, 0, max(len(g.snap.Devices)-n, 0))
}

// Update takes the devices shown (common.Shown), the focus, the span of
// the graphs (z) and the keys: moving the selection, enter opening its
// detail.
func (g *Pane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Shown:
		g.sev = msg.Sev
		g.setSnapshot(msg.Snap)
	case common.Focus:
		g.focused = bool(msg)
	case common.Span:
		g.span = time.Duration(msg)
	case tea.KeyPressMsg:
		if key.Matches(msg, g.ctx.Keys.Enter) {
			if d, ok := g.Selected(); ok {
				g.out.Post(common.OpenDetail{Dev: d.ID})
			}
			return nil
		}
		n := len(g.snap.Devices)
		switch {
		case key.Matches(msg, g.ctx.Keys.Up):
			g.sel--
		case key.Matches(msg, g.ctx.Keys.Down):
			g.sel++
		case key.Matches(msg, g.ctx.Keys.Top):
			g.sel = 0
		case key.Matches(msg, g.ctx.Keys.Bottom):
			g.sel = n - 1
		}
		g.sel = draw.Clamp(g.sel, 0, n-1)
		g.scroll()
	}
	return nil
}

// Click selects the GPU drawn on line y of the pane and opens its detail;
// it reports whether a GPU was there.
func (g *Pane) Click(_, y int) bool {
	i, ok := g.deviceAt(y)
	if !ok {
		return false
	}
	g.sel = i
	g.scroll()
	if d, ok := g.Selected(); ok {
		g.out.Post(common.OpenDetail{Dev: d.ID})
	}
	return true
}

// deviceAt is the index of the device drawn on line y of the pane.
func (g *Pane) deviceAt(y int) (int, bool) {
	if g.compact && g.colHead {
		y--
	}
	if y < 0 {
		return 0, false
	}
	i := g.off
	if g.compact {
		if y >= g.perPage() {
			return 0, false // the graph under the list
		}
		i += y
	} else {
		i += y / max(g.panelH, 1)
	}
	if i >= len(g.snap.Devices) {
		return 0, false
	}
	return i, true
}

// Selected returns the selected device.
func (g *Pane) Selected() (sampler.Device, bool) {
	if g.sel < 0 || g.sel >= len(g.snap.Devices) {
		return sampler.Device{}, false
	}
	return g.snap.Devices[g.sel], true
}

// View renders the pane.
func (g Pane) View() string {
	if g.width <= 0 || g.height <= 0 {
		return ""
	}
	devs := g.snap.Devices
	if len(devs) == 0 {
		return g.ctx.Styles.Dim.Render(draw.Fit("  no GPU found", g.width))
	}
	var parts []string
	if g.compact && g.colHead {
		parts = append(parts, g.ctx.Styles.ColHeader.Render(draw.Fit(g.compactHeader(), g.width)))
	}
	for i := g.off; i < len(devs) && i < g.off+g.perPage(); i++ {
		if g.compact {
			parts = append(parts, g.compactLine(devs[i], i == g.sel))
		} else {
			parts = append(parts, g.panel(devs[i], i == g.sel))
		}
	}
	if g.compact && g.graphH > 0 {
		if d, ok := g.Selected(); ok {
			parts = append(parts, g.selectedGraph(d))
		}
	}
	return strings.Join(parts, "\n")
}

// selectedGraph is the selected GPU's memory graph under the compact list.
func (g Pane) selectedGraph(d sampler.Device) string {
	title := g.ctx.Styles.Dim.Render(draw.Fit("  GPU "+draw.DeviceLabel(d)+" "+g.name(d)+" · used memory, peak per column · dotted: warn / crit", g.width))
	p := g.sparkline(d, g.width-2, g.graphH-1)
	if p == "" {
		p = g.ctx.Styles.Dim.Render("  collecting history…")
	} else {
		p = indent(p, "  ")
	}
	return title + "\n" + p
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

func (g Pane) marker(sel bool) string {
	if sel && g.focused {
		return g.ctx.Styles.Accent.Render("▶ ")
	}
	if sel {
		return "› "
	}
	return "  "
}

// name is the device's name; a MIG instance leads with its profile (its ID
// already names the parent GPU).
func (g Pane) name(d sampler.Device) string {
	n := draw.ShortName(d.Name)
	if d.MIG != nil && d.MIG.Profile != "" {
		n = "MIG " + d.MIG.Profile + " · " + strings.TrimSpace(strings.Replace(n, "MIG "+d.MIG.Profile, "", 1))
	}
	if d.MIGEnabled {
		n += " (MIG)"
	}
	return n
}

// watchMark marks a GPU watched with w: a notification comes when it is
// free.
func (g Pane) watchMark(d sampler.Device) string {
	if g.watching != nil && g.watching(d.ID) {
		return "◎ "
	}
	return ""
}

// claimOf says who claimed d ("" when nobody did).
func (g Pane) claimOf(d sampler.Device) string {
	if g.ctx.Claim == nil {
		return ""
	}
	return g.ctx.Claim(d)
}

// claimMark marks a GPU someone claimed with vramtop pick or wait.
func (g Pane) claimMark(d sampler.Device) string {
	if g.claimOf(d) != "" {
		return "⚑ "
	}
	return ""
}

// sevTag names the advisor's severity of the device in words, so it reads
// without colour.
func (g Pane) sevTag(d sampler.Device) string {
	switch s := g.sev.Of(d).Severity; s {
	case advisor.Warn:
		return g.ctx.Styles.SeverityBadge(s).Render("WARN")
	case advisor.Crit:
		return g.ctx.Styles.SeverityBadge(s).Render("CRIT")
	}
	return ""
}

// sevWhy is why the device is in its state where its reading does not say
// ("peak 86.7% 19 s ago"), in the severity's colour; "" when it does.
func (g Pane) sevWhy(d sampler.Device) string {
	s := g.sev.Of(d)
	if s.Reason == "" || s.Severity == advisor.Info {
		return ""
	}
	return g.ctx.Styles.Severity(s.Severity).Render(s.Reason)
}

func (g Pane) panel(d sampler.Device, sel bool) string {
	leftW := draw.Clamp(g.width*2/5, textBlockMin, 56)
	rightW := g.width - leftW - 2
	sev := g.sev.Of(d).Severity
	title := g.marker(sel) + g.ctx.Styles.Title.Render("GPU "+draw.DeviceLabel(d)) + " " + g.watchMark(d) + g.claimMark(d) + g.name(d)
	if tag := g.sevTag(d); tag != "" {
		title += " " + tag
	}
	why := g.sevWhy(d)
	if why != "" && common.CellWidth(title)+1+common.CellWidth(why) <= leftW {
		title += " " + why
		why = ""
	}
	pct := draw.Pct(d.UsedPercent())
	if d.MemoryTotal == 0 {
		pct = draw.NA
	}
	barW := leftW - 2 - 5
	bar := "  " + draw.MemBar(g.ctx.Styles, d, sev, barW) + " " + g.ctx.Styles.Severity(sev).Render(draw.FitRight(pct, 4))
	mem := "  " + draw.Bytes(d.MemoryUsed) + " / " + draw.Bytes(d.MemoryTotal)
	mem += g.ctx.Styles.Dim.Render(" · rsv " + draw.OptBytes(d.MemoryReserved))
	info := "  util " + draw.OptPct(d.UtilizationPercent) + " · " + draw.Temp(d.TemperatureC)
	if d.PowerWatts != nil {
		info += " · " + draw.Power(d.PowerWatts)
	}
	if why, down := draw.HostDown(d); down {
		info = "  " + g.ctx.Styles.Warning.Render("last values, "+draw.DownShort(why))
	} else if d.Err != "" {
		info = "  " + g.ctx.Styles.Error.Render("error: "+d.Err)
	}
	lines := []string{title, bar, mem, info}
	if why != "" {
		// Too long for the title: a line of its own, under it.
		lines = []string{title, "  " + why, bar, mem, info}
	}
	if c := g.claimOf(d); c != "" {
		claimed := g.ctx.Styles.Warning.Render("claimed by " + c)
		if common.CellWidth(title)+1+common.CellWidth(claimed) <= leftW {
			title += " " + claimed
			lines[0] = title
		} else if g.panelH > len(lines) {
			lines = append(lines, "  "+claimed)
		} else {
			lines[len(lines)-1] = "  " + claimed // in place of util and temperature
		}
	}
	if g.panelH > len(lines) {
		lines = append(lines, g.ctx.Styles.Dim.Render("  free "+draw.Bytes(d.MemoryFree)+" · peak "+draw.Bytes(d.PeakUsed)))
	}
	for len(lines) < g.panelH {
		lines = append(lines, "")
	}
	for i := range lines {
		lines[i] = draw.Fit(lines[i], leftW)
	}
	lines = lines[:g.panelH]
	if rightW < 10 {
		return strings.Join(lines, "\n")
	}
	right := g.sparkline(d, rightW, g.panelH)
	switch {
	case right == "" && d.History.Len() > 0:
		// Too few rows for a graph that sets the lines apart: a line of
		// blocks, coloured by the level each column reached.
		now := g.snap.Time
		span := draw.SpanFor(d.History, now, g.snap.Interval, g.span, rightW)
		right = draw.InlineSpark(g.ctx.Styles, draw.Series(d.History, now.Add(-span), now.Add(1), rightW), float64(d.MemoryTotal)/draw.GiB, g.ctx.Th)
	case right == "":
		right = g.ctx.Styles.Dim.Render(draw.Fit("collecting history…", rightW))
	}
	return besides(lines, leftW, "  ", right)
}

// besides puts block to the right of left, whose lines are all leftW cells
// wide, with sep between: lipgloss.JoinHorizontal without measuring every
// line again (a tenth of a frame's cost at 200x60).
func besides(left []string, leftW int, sep, block string) string {
	right := strings.Split(block, "\n")
	var b strings.Builder
	b.Grow(len(block) + len(left)*(leftW+len(sep)+1))
	for i := range max(len(left), len(right)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case i >= len(right):
			b.WriteString(left[i])
			continue
		case i >= len(left):
			b.WriteString(strings.Repeat(" ", leftW))
		default:
			b.WriteString(left[i])
		}
		b.WriteString(sep)
		b.WriteString(right[i])
	}
	return b.String()
}

// sparkline is the plot of the device's used memory beside its panel,
// peak-held per column, with the thresholds drawn.
func (g Pane) sparkline(d sampler.Device, w, h int) string {
	spec := draw.PlotSpec{Width: w, Height: h, TotalGiB: float64(d.MemoryTotal) / draw.GiB, Th: g.ctx.Th}
	n := draw.PlotDots(spec)
	if n < 2 || d.History.Len() == 0 {
		return ""
	}
	now := g.snap.Time
	span := draw.SpanFor(d.History, now, g.snap.Interval, g.span, n)
	spec.Lines = []draw.PlotLine{{Vals: draw.Series(d.History, now.Add(-span), now.Add(1), n)}}
	return draw.Plot(g.ctx.Styles, spec)
}

// compactWidths are the widths of the compact line's ID, name and bar.
func (g Pane) compactWidths() (idW, nameW, barW int) {
	idW = 3
	for _, x := range g.snap.Devices {
		idW = max(idW, len(draw.DeviceLabel(x)))
	}
	return idW, draw.Clamp(g.width/8, 6, 16), draw.Clamp(g.width/6, 8, 30)
}

// compactHeader names the columns of the compact lines: USE% is the
// memory used of the GPU's total, UTIL its compute utilisation.
func (g Pane) compactHeader() string {
	idW, nameW, barW := g.compactWidths()
	return "  " + draw.Fit("GPU", idW) + " " + draw.Fit("NAME", nameW) + " " + draw.Fit("MEMORY", barW) + " " +
		draw.FitRight("USED/TOTAL", 13) + " " + draw.FitRight("USE%", 4) + " " + draw.Fit("", 4) + " " +
		draw.FitRight("UTIL", 4) + " " + draw.FitRight("TEMP", 5) + " " + "USED, LAST " + strings.ToUpper(draw.Span(g.ShownSpan()))
}

// ShownSpan is the span the selected GPU's history fills of the one asked
// for (z): the compact header and the status line after z both say it.
func (g Pane) ShownSpan() time.Duration {
	if d, ok := g.Selected(); ok {
		return draw.SpanFor(d.History, g.snap.Time, g.snap.Interval, g.span, 1)
	}
	return g.span
}

func (g Pane) compactLine(d sampler.Device, sel bool) string {
	w := g.width
	idW, nameW, barW := g.compactWidths()
	sev := g.sev.Of(d).Severity
	mem := draw.BytesShort(d.MemoryUsed) + "/" + draw.BytesShort(d.MemoryTotal)
	pct := draw.Pct(d.UsedPercent())
	if d.MemoryTotal == 0 {
		pct = draw.NA
	}
	tag := g.sevTag(d)
	if tag == "" {
		tag = "    "
	}
	name := g.name(d)
	if d.MIG != nil && d.MIG.Profile != "" {
		name = "MIG " + d.MIG.Profile
	}
	mark := g.watchMark(d) + g.claimMark(d)
	name = mark + draw.ElideName(name, nameW-common.CellWidth(mark))
	line := g.marker(sel) + draw.Fit(draw.DeviceLabel(d), idW) + " " + draw.Fit(name, nameW) + " " +
		draw.MemBar(g.ctx.Styles, d, sev, barW) + " " + draw.FitRight(mem, 13) + " " + g.ctx.Styles.Severity(sev).Render(draw.FitRight(pct, 4)) + " " + tag
	if why, down := draw.HostDown(d); down {
		// The last values seen, dimmed, and since when.
		return g.ctx.Styles.PDim.On(ansi.Strip(draw.Fit(line+" last values, "+draw.DownShort(why), w)))
	}
	if d.Err != "" {
		return draw.Fit(line+" "+g.ctx.Styles.Error.Render("error: "+d.Err), w)
	}
	line += " " + draw.FitRight(draw.OptPct(d.UtilizationPercent), 4) + " " + draw.FitRight(draw.Temp(d.TemperatureC), 5) + " "
	if st := g.sev.Of(d); st.Reason != "" && st.Severity != advisor.Info {
		// The note drops whole words rather than cut a figure.
		if why := gpuNote(st.Reason, w-lipgloss.Width(line)-1); why != "" {
			line += g.ctx.Styles.Severity(st.Severity).Render(why) + " "
		}
	}
	rest := w - lipgloss.Width(line)
	if rest >= 4 && d.History.Len() > 0 {
		now := g.snap.Time
		span := draw.SpanFor(d.History, now, g.snap.Interval, g.span, rest)
		vals := draw.Series(d.History, now.Add(-span), now.Add(1), rest)
		line += draw.InlineSpark(g.ctx.Styles, vals, float64(d.MemoryTotal)/draw.GiB, g.ctx.Th)
	}
	return draw.Fit(line, w)
}

// gpuNote is a GPU row's note in w cells: whole words, and more than one
// ("full…" of "full in ~96 min", "clears…" of "clears below 78%" read as
// something else), or nothing.
func gpuNote(reason string, w int) string {
	why := draw.Elide(reason, w)
	if why == reason || strings.Contains(strings.TrimSuffix(why, "…"), " ") {
		return why
	}
	return ""
}
