// Package detail is the live view's screen of one GPU or one process: a
// large plot of its memory with a time axis and the thresholds, and the
// advisor's advice under it.
package detail

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// AdviseFunc is the advisor's advice for a target in a snapshot.
type AdviseFunc func(sampler.Snapshot, advisor.Target) []advisor.Advice

// View is the screen for one GPU or one process: a large plot of its
// memory with a time axis and the thresholds, and the advisor's advice
// under it, wrapped to the width and scrolled with the arrows.
type View struct {
	ctx    *common.Context
	out    *common.Outbox
	advise AdviseFunc
	open   bool // on screen: the advice follows each snapshot
	width  int
	height int
	span   time.Duration

	target advisor.Target
	start  int64 // the process's start time, to tell a reused PID apart
	snap   sampler.Snapshot
	advice []advisor.Advice
	sev    draw.SevIndex // the advisor's severity of each device

	// Laid out by layout: the plot's height and the advice panel
	// (scrolled by adv; advH lines with its frame, 0 when there is no
	// advice).
	plotH    int
	adv      viewport.Model
	advH     int
	advLines int
	advFor   advisor.Target // whose advice adv shows (a new target starts at the top)
}

// New returns the detail screen, closed; advise gives the advice of what
// it shows.
func New(ctx *common.Context, out *common.Outbox, advise AdviseFunc) *View {
	return &View{ctx: ctx, out: out, advise: advise, span: draw.DefaultSpan}
}

// Peek is what the screen shows: its target, its height and how it is
// shared between the plot and the advice, and the span of the plot.
type Peek struct {
	Target                 advisor.Target
	Height, PlotH, AdviceH int
	Span                   time.Duration
}

// Peek says what the screen shows.
func (d *View) Peek() Peek {
	return Peek{Target: d.target, Height: d.height, PlotH: d.plotH, AdviceH: d.advH, Span: d.span}
}

// SetSize sets the view's size.
func (d *View) SetSize(w, h int) {
	if w != d.width || h != d.height {
		d.width, d.height = w, h
		d.layout()
	}
}

// refresh takes the advice for the target in the snapshot shown.
func (d *View) refresh() {
	d.advice = d.advise(d.snap, d.target)
	d.layout()
}

// Update opens the screen on a target (common.OpenDetail), closes it,
// takes the snapshot shown and the span (z), and the keys: K and F9 ask
// to signal the process shown, the others scroll the advice (up, down,
// page up and down, top and bottom, the mouse wheel).
func (d *View) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.OpenDetail:
		d.target, d.start, d.open = advisor.Target{DeviceID: msg.Dev, PID: msg.PID}, msg.Start, true
		d.refresh()
	case common.Closed:
		d.open = false
	case common.Shown:
		d.snap, d.sev = msg.Snap, msg.Sev
		if d.open {
			d.refresh()
		}
	case common.Span:
		d.span = time.Duration(msg)
		if d.open {
			d.refresh()
		}
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, d.ctx.Keys.Kill, d.ctx.Keys.Signal):
			d.signal(key.Matches(msg, d.ctx.Keys.Signal))
		case key.Matches(msg, d.ctx.Keys.Up):
			d.adv.ScrollUp(1)
		case key.Matches(msg, d.ctx.Keys.Down):
			d.adv.ScrollDown(1)
		case key.Matches(msg, d.ctx.Keys.PageUp):
			d.adv.PageUp()
		case key.Matches(msg, d.ctx.Keys.PageDown):
			d.adv.PageDown()
		case key.Matches(msg, d.ctx.Keys.Top):
			d.adv.GotoTop()
		case key.Matches(msg, d.ctx.Keys.Bottom):
			d.adv.GotoBottom()
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			d.adv.ScrollUp(3)
		case tea.MouseWheelDown:
			d.adv.ScrollDown(3)
		}
	}
	return nil
}

// signal asks to signal the process shown, as listed in the snapshot.
func (d *View) signal(list bool) {
	t := d.target
	if t.PID == 0 {
		d.out.Status(true, "open a process (not a GPU) to signal it")
		return
	}
	if dev, ok := d.device(); ok && !dev.NoProcessList && (!d.snap.ProcessesPending && !dev.ProcessesNotRead || dev.MIGEnabled) {
		for _, p := range dev.Processes {
			if p.PID == t.PID && p.StartTime.UnixNano() == d.start {
				d.out.Post(common.Signal{Dev: dev.ID, Proc: p, Process: true, List: list})
				return
			}
		}
	}
	d.out.Status(true, "PID %d is no longer listed", t.PID)
}

// Bindings are the keys that scroll the advice and signal the process.
func (d *View) Bindings() []key.Binding {
	return []key.Binding{d.ctx.Keys.Up, d.ctx.Keys.Down, d.ctx.Keys.PageUp, d.ctx.Keys.PageDown, d.ctx.Keys.Top, d.ctx.Keys.Bottom, d.ctx.Keys.Kill, d.ctx.Keys.Signal}
}

// ShownSpan is the span the plot shows: the one asked for (z), shorter
// while the history is.
func (d *View) ShownSpan() time.Duration {
	if dev, ok := d.device(); ok {
		return d.shownSpan(dev)
	}
	return d.span
}

func (d View) device() (sampler.Device, bool) {
	return d.snap.Device(d.target.DeviceID)
}

func (d View) process(dev sampler.Device) (sampler.Process, bool) {
	for _, p := range dev.Processes {
		if p.PID == d.target.PID && p.StartTime.UnixNano() == d.start {
			return p, true
		}
	}
	return sampler.Process{}, false
}

// headLines are the lines over the plot: the GPU, the process when one is
// open, the legend; isProc is false when the process is gone.
func (d View) headLines(dev sampler.Device) (lines []string, proc sampler.Process, isProc bool) {
	sev := d.sev.Of(dev)
	title := d.ctx.Styles.Title.Render("GPU "+draw.DeviceLabel(dev)) + " " + dev.Name + " · " +
		draw.Bytes(dev.MemoryUsed) + " / " + draw.Bytes(dev.MemoryTotal) + " " + d.ctx.Styles.Severity(sev.Severity).Render("("+draw.Pct(dev.UsedPercent())+")")
	if sev.Severity > advisor.Info {
		title += " " + d.ctx.Styles.SeverityBadge(sev.Severity).Render(strings.ToUpper(sev.Severity.String()))
		if sev.Reason != "" {
			title += " " + d.ctx.Styles.Severity(sev.Severity).Render(sev.Reason)
		}
	}
	title += " · peak " + draw.Bytes(dev.PeakUsed) + " · free " + draw.Bytes(dev.MemoryFree)
	lines = append(lines, title)
	isProc = d.target.PID != 0
	if isProc {
		var found bool
		proc, found = d.process(dev)
		if !found {
			lines = append(lines, d.ctx.Styles.Dim.Render(fmt.Sprintf("  PID %d is no longer listed on this GPU", d.target.PID)))
			isProc = false
		} else {
			user := proc.User
			if user == "" {
				user = "?"
			}
			mem := draw.NA
			if proc.Exited {
				mem = "exited"
			} else if proc.UsedBytes != nil {
				mem = draw.Bytes(*proc.UsedBytes) + " (" + draw.Pct(draw.Percent(*proc.UsedBytes, dev.MemoryTotal)) + " of the GPU)"
			}
			cmd := proc.Command
			if !proc.Visible {
				cmd = "(other PID namespace; run vramtop in the host PID namespace to name it) " + cmd
			}
			lines = append(lines, d.ctx.Styles.Accent.Render("PID "+strconv.FormatUint(uint64(proc.PID), 10))+" "+user+" · "+mem+
				" · peak "+draw.Bytes(proc.PeakBytes)+" · "+cmd)
		}
	}
	// The legend, as much of it as fits: what the marks mean first, then
	// the keys.
	parts := []string{fmt.Sprintf("last %s, peak per column", draw.Span(d.shownSpan(dev))),
		fmt.Sprintf("dotted: warn %.0f%% / crit %.0f%%", d.ctx.Th.Warn, d.ctx.Th.Crit)}
	if isProc {
		parts = append([]string{"filled: this process" + d.seenSince(proc, dev), "line: whole GPU"}, parts...)
	}
	if d.scrolls() {
		parts = append(parts, "↑/↓: advice")
	}
	parts = append(parts, "z: span", "esc: back")
	legend := parts[0]
	for _, p := range parts[1:] {
		if common.CellWidth(legend)+3+common.CellWidth(p) > d.width {
			break
		}
		legend += " · " + p
	}
	lines = append(lines, d.ctx.Styles.Dim.Render(legend))
	for i := range lines {
		lines[i] = draw.Fit(lines[i], d.width)
	}
	return lines, proc, isProc
}

// seenSince says, when the process's memory is known only from within the
// plot's span, since when: vramtop keeps a process's history from when it
// first listed it, and a process older than that would read as started
// then (erin's vLLM server, up 1d02h, filled from the view's start only).
func (d View) seenSince(proc sampler.Process, dev sampler.Device) string {
	if proc.History.Len() == 0 {
		return ""
	}
	first := proc.History.First()
	every := max(d.snap.Interval, time.Second)
	from := d.snap.Time.Add(-d.shownSpan(dev)) // the plot's left edge, or the GPU's first sample
	if dev.History.Len() > 0 && dev.History.First().After(from) {
		from = dev.History.First()
	}
	if !first.After(from.Add(every)) || !proc.StartTime.IsZero() && !proc.StartTime.Before(first.Add(-2*every)) {
		return "" // known as far back as the GPU, or the process started then
	}
	return " (seen since " + first.Format("15:04:05") + ")"
}

// minDetailPlot is the least height of the detail plot: a time axis and
// eight rows, enough to set the warn line, the crit line and a value
// between them apart on any card.
const minDetailPlot = 10

// layout sizes the plot and the advice: the plot takes at least half of
// the view (and minDetailPlot lines), the advice what it needs of the
// rest, scrolling when that is not enough.
func (d *View) layout() {
	if d.target != d.advFor {
		d.adv = viewport.New()
		d.advFor = d.target
	}
	d.plotH, d.advH, d.advLines = 0, 0, 0
	dev, ok := d.device()
	if d.width <= 0 || d.height <= 0 || !ok {
		return
	}
	frameW, frameH := d.ctx.Styles.Box.GetHorizontalFrameSize(), d.ctx.Styles.Box.GetVerticalFrameSize()
	inner := d.width - frameW
	var lines []string
	if inner >= 10 {
		lines = d.adviceLines(inner)
	}
	d.advLines = len(lines)
	head, _, _ := d.headLines(dev)
	avail := d.height - len(head)
	plotMin := min(max((d.height+1)/2, minDetailPlot), avail)
	if len(lines) > 0 {
		d.advH = min(len(lines)+frameH, avail-plotMin)
		if d.advH < frameH+1 {
			d.advH = 0
		}
	}
	// The head is as many lines whether the advice scrolls or not.
	d.plotH = d.height - len(head) - d.advH
	if d.advH > 0 {
		rows := d.advH - frameH
		if len(lines) > rows {
			rows-- // the last line says where the scroll is
		}
		d.adv.SetWidth(inner)
		d.adv.SetHeight(rows)
		d.adv.SetContentLines(lines)
	}
}

// scrolls reports whether the advice is longer than its panel.
func (d View) scrolls() bool {
	return d.advH > 0 && d.advLines > d.advH-d.ctx.Styles.Box.GetVerticalFrameSize()
}

// View renders the detail screen.
func (d View) View() string {
	if d.width <= 0 || d.height <= 0 {
		return ""
	}
	dev, ok := d.device()
	if !ok {
		return d.ctx.Styles.Dim.Render(draw.Fit("  GPU "+d.target.DeviceID+" is no longer reported", d.width))
	}
	// The head again: the span it names changes with z between layouts.
	head, proc, isProc := d.headLines(dev)
	parts := []string{strings.Join(head, "\n")}
	if g := d.plot(dev, proc, isProc, d.plotH); g != "" {
		parts = append(parts, g)
	} else if d.plotH > 0 {
		msg := "  no history yet"
		if dev.History.Len() > 0 {
			msg = "  too little room for a plot that sets the warn and crit lines apart"
		}
		parts = append(parts, draw.PadLines(d.ctx.Styles.Dim.Render(draw.Fit(msg, d.width)), d.plotH))
	}
	if d.advH > 0 {
		parts = append(parts, d.adviceView())
	}
	return draw.ClampLines(strings.Join(parts, "\n"), d.width, d.height)
}

func (d View) shownSpan(dev sampler.Device) time.Duration {
	spec := draw.PlotSpec{Width: d.width, TotalGiB: float64(dev.MemoryTotal) / draw.GiB, XAxis: time.Second}
	return draw.SpanFor(dev.History, d.snap.Time, d.snap.Interval, d.span, max(draw.PlotDots(spec), 1))
}

func (d View) plot(dev sampler.Device, proc sampler.Process, isProc bool, h int) string {
	spec := draw.PlotSpec{Width: d.width, Height: h, TotalGiB: float64(dev.MemoryTotal) / draw.GiB, Th: d.ctx.Th, XAxis: time.Second}
	n := draw.PlotDots(spec)
	if n < 2 || draw.PlotRows(spec) < draw.MinPlotRows {
		return ""
	}
	now := d.snap.Time
	span := draw.SpanFor(dev.History, now, d.snap.Interval, d.span, n)
	spec.XAxis = span
	from, to := now.Add(-span), now.Add(1)
	devLine := draw.Series(dev.History, from, to, n)
	if isProc {
		// The process filled under the whole GPU's line: they differ
		// without colour too.
		spec.Lines = []draw.PlotLine{
			{Vals: draw.Series(proc.History, from, to, n), Fill: true, P: &d.ctx.Styles.PAccent},
			{Vals: devLine, P: &d.ctx.Styles.PDim},
		}
	} else {
		spec.Lines = []draw.PlotLine{{Vals: devLine}}
	}
	return draw.Plot(d.ctx.Styles, spec)
}

// adviceLines is the advice wrapped to width cells, continuation lines
// indented under their first.
func (d View) adviceLines(width int) []string {
	var lines []string
	add := func(prefix, text string) {
		pw := common.CellWidth(prefix)
		body := ansi.Wrap(text, max(width-pw, 1), "")
		for i, l := range strings.Split(body, "\n") {
			if i == 0 {
				lines = append(lines, prefix+l)
			} else {
				lines = append(lines, strings.Repeat(" ", pw)+l)
			}
		}
	}
	for _, a := range d.advice {
		tag := d.ctx.Styles.SeverityBadge(a.Severity).Render(strings.ToUpper(a.Severity.String()))
		add(tag+" ", a.Title)
		if a.Detail != "" {
			add("  ", d.ctx.Styles.Dim.Render(a.Detail))
		}
		for _, r := range a.Remedies {
			l := r.Name
			if r.Saving != "" {
				l += ": " + r.Saving
			}
			if r.Cost != "" {
				l += d.ctx.Styles.Dim.Render(" · cost: " + r.Cost)
			}
			if r.Covers {
				l += " " + d.ctx.Styles.Severity(advisor.Info).Render("✓ covers it")
			}
			add("  • ", l)
			if r.How != "" {
				add("    ", d.ctx.Styles.Accent.Render(r.How))
			}
		}
	}
	return lines
}

// adviceView is the advice panel at its scroll position; its last line says
// how much more there is when it does not all fit.
func (d View) adviceView() string {
	body := d.adv.View()
	if d.scrolls() {
		shown := min(d.adv.YOffset()+d.adv.Height(), d.advLines)
		more := fmt.Sprintf("lines %d–%d of %d · ↑/↓ pgup/pgdn: scroll", d.adv.YOffset()+1, shown, d.advLines)
		body += "\n" + d.ctx.Styles.Dim.Render(draw.Fit(more, d.adv.Width()))
	}
	return d.ctx.Styles.Box.Width(d.width).Render(body)
}
