package ui

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

// detailView is the screen for one GPU or one process: a large plot of its
// memory with a time axis and the thresholds, and the advisor's advice
// under it, wrapped to the width and scrolled with the arrows.
type detailView struct {
	st     common.Styles
	keys   common.KeyMap
	th     advisor.Thresholds
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

// SetSize sets the view's size.
func (d *detailView) SetSize(w, h int) {
	if w != d.width || h != d.height {
		d.width, d.height = w, h
		d.layout()
	}
}

// SetSnapshot sets the snapshot shown and the advice for the target in it.
func (d *detailView) SetSnapshot(snap sampler.Snapshot, advice []advisor.Advice) {
	d.snap, d.advice = snap, advice
	d.layout()
}

// Update scrolls the advice: up, down, page up and down, top and bottom,
// the mouse wheel.
func (d *detailView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, d.keys.Up):
			d.adv.ScrollUp(1)
		case key.Matches(msg, d.keys.Down):
			d.adv.ScrollDown(1)
		case key.Matches(msg, d.keys.PageUp):
			d.adv.PageUp()
		case key.Matches(msg, d.keys.PageDown):
			d.adv.PageDown()
		case key.Matches(msg, d.keys.Top):
			d.adv.GotoTop()
		case key.Matches(msg, d.keys.Bottom):
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

// Bindings are the keys that scroll the advice.
func (d *detailView) Bindings() []key.Binding {
	return []key.Binding{d.keys.Up, d.keys.Down, d.keys.PageUp, d.keys.PageDown, d.keys.Top, d.keys.Bottom}
}

func (d detailView) device() (sampler.Device, bool) {
	return d.snap.Device(d.target.DeviceID)
}

func (d detailView) process(dev sampler.Device) (sampler.Process, bool) {
	for _, p := range dev.Processes {
		if p.PID == d.target.PID && p.StartTime.UnixNano() == d.start {
			return p, true
		}
	}
	return sampler.Process{}, false
}

// headLines are the lines over the plot: the GPU, the process when one is
// open, the legend; isProc is false when the process is gone.
func (d detailView) headLines(dev sampler.Device) (lines []string, proc sampler.Process, isProc bool) {
	sev := d.sev.Of(dev)
	title := d.st.Title.Render("GPU "+draw.DeviceLabel(dev)) + " " + dev.Name + " · " +
		draw.Bytes(dev.MemoryUsed) + " / " + draw.Bytes(dev.MemoryTotal) + " " + d.st.Severity(sev.Severity).Render("("+draw.Pct(dev.UsedPercent())+")")
	if sev.Severity > advisor.Info {
		title += " " + d.st.SeverityBadge(sev.Severity).Render(strings.ToUpper(sev.Severity.String()))
		if sev.Reason != "" {
			title += " " + d.st.Severity(sev.Severity).Render(sev.Reason)
		}
	}
	title += " · peak " + draw.Bytes(dev.PeakUsed) + " · free " + draw.Bytes(dev.MemoryFree)
	lines = append(lines, title)
	isProc = d.target.PID != 0
	if isProc {
		var found bool
		proc, found = d.process(dev)
		if !found {
			lines = append(lines, d.st.Dim.Render(fmt.Sprintf("  PID %d is no longer listed on this GPU", d.target.PID)))
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
			lines = append(lines, d.st.Accent.Render("PID "+strconv.FormatUint(uint64(proc.PID), 10))+" "+user+" · "+mem+
				" · peak "+draw.Bytes(proc.PeakBytes)+" · "+cmd)
		}
	}
	// The legend, as much of it as fits: what the marks mean first, then
	// the keys.
	parts := []string{fmt.Sprintf("last %s, peak per column", draw.Span(d.shownSpan(dev))),
		fmt.Sprintf("dotted: warn %.0f%% / crit %.0f%%", d.th.Warn, d.th.Crit)}
	if isProc {
		parts = append([]string{"filled: this process", "line: whole GPU"}, parts...)
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
	lines = append(lines, d.st.Dim.Render(legend))
	for i := range lines {
		lines[i] = draw.Fit(lines[i], d.width)
	}
	return lines, proc, isProc
}

// minDetailPlot is the least height of the detail plot: a time axis and
// eight rows, enough to set the warn line, the crit line and a value
// between them apart on any card.
const minDetailPlot = 10

// layout sizes the plot and the advice: the plot takes at least half of
// the view (and minDetailPlot lines), the advice what it needs of the
// rest, scrolling when that is not enough.
func (d *detailView) layout() {
	if d.target != d.advFor {
		d.adv = viewport.New()
		d.advFor = d.target
	}
	d.plotH, d.advH, d.advLines = 0, 0, 0
	dev, ok := d.device()
	if d.width <= 0 || d.height <= 0 || !ok {
		return
	}
	frameW, frameH := d.st.Box.GetHorizontalFrameSize(), d.st.Box.GetVerticalFrameSize()
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
func (d detailView) scrolls() bool {
	return d.advH > 0 && d.advLines > d.advH-d.st.Box.GetVerticalFrameSize()
}

// View renders the detail screen.
func (d detailView) View() string {
	if d.width <= 0 || d.height <= 0 {
		return ""
	}
	dev, ok := d.device()
	if !ok {
		return d.st.Dim.Render(draw.Fit("  GPU "+d.target.DeviceID+" is no longer reported", d.width))
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
		parts = append(parts, draw.PadLines(d.st.Dim.Render(draw.Fit(msg, d.width)), d.plotH))
	}
	if d.advH > 0 {
		parts = append(parts, d.adviceView())
	}
	return draw.ClampLines(strings.Join(parts, "\n"), d.width, d.height)
}

func (d detailView) shownSpan(dev sampler.Device) time.Duration {
	spec := draw.PlotSpec{Width: d.width, TotalGiB: float64(dev.MemoryTotal) / draw.GiB, XAxis: time.Second}
	return draw.SpanFor(dev.History, d.snap.Time, d.snap.Interval, d.span, max(draw.PlotDots(spec), 1))
}

func (d detailView) plot(dev sampler.Device, proc sampler.Process, isProc bool, h int) string {
	spec := draw.PlotSpec{Width: d.width, Height: h, TotalGiB: float64(dev.MemoryTotal) / draw.GiB, Th: d.th, XAxis: time.Second}
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
			{Vals: draw.Series(proc.History, from, to, n), Fill: true, P: &d.st.PAccent},
			{Vals: devLine, P: &d.st.PDim},
		}
	} else {
		spec.Lines = []draw.PlotLine{{Vals: devLine}}
	}
	return draw.Plot(d.st, spec)
}

// adviceLines is the advice wrapped to width cells, continuation lines
// indented under their first.
func (d detailView) adviceLines(width int) []string {
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
		tag := d.st.SeverityBadge(a.Severity).Render(strings.ToUpper(a.Severity.String()))
		add(tag+" ", a.Title)
		if a.Detail != "" {
			add("  ", d.st.Dim.Render(a.Detail))
		}
		for _, r := range a.Remedies {
			l := r.Name
			if r.Saving != "" {
				l += ": " + r.Saving
			}
			if r.Cost != "" {
				l += d.st.Dim.Render(" · cost: " + r.Cost)
			}
			if r.Covers {
				l += " " + d.st.Severity(advisor.Info).Render("✓ covers it")
			}
			add("  • ", l)
			if r.How != "" {
				add("    ", d.st.Accent.Render(r.How))
			}
		}
	}
	return lines
}

// adviceView is the advice panel at its scroll position; its last line says
// how much more there is when it does not all fit.
func (d detailView) adviceView() string {
	body := d.adv.View()
	if d.scrolls() {
		shown := min(d.adv.YOffset()+d.adv.Height(), d.advLines)
		more := fmt.Sprintf("lines %d–%d of %d · ↑/↓ pgup/pgdn: scroll", d.adv.YOffset()+1, shown, d.advLines)
		body += "\n" + d.st.Dim.Render(draw.Fit(more, d.adv.Width()))
	}
	return d.st.Box.Width(d.width).Render(body)
}
