package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/guptarohit/asciigraph"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// detailView is the screen for one GPU or one process: a large plot of its
// memory with a time axis and the thresholds, and the advisor's advice.
type detailView struct {
	st     Styles
	th     advisor.Thresholds
	width  int
	height int
	span   time.Duration

	target advisor.Target
	start  int64 // the process's start time, to tell a reused PID apart
	snap   sampler.Snapshot
	advice []advisor.Advice
}

// SetSize sets the view's size.
func (d *detailView) SetSize(w, h int) { d.width, d.height = w, h }

// SetSnapshot sets the snapshot shown and the advice for the target in it.
func (d *detailView) SetSnapshot(snap sampler.Snapshot, advice []advisor.Advice) {
	d.snap, d.advice = snap, advice
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

// View renders the detail screen.
func (d detailView) View() string {
	if d.width <= 0 || d.height <= 0 {
		return ""
	}
	dev, ok := d.device()
	if !ok {
		return d.st.Dim.Render(fit("  GPU "+d.target.DeviceID+" is no longer reported", d.width))
	}
	sev := severity(dev.UsedPercent(), d.th)
	var head []string
	head = append(head, d.st.Title.Render("GPU "+deviceLabel(dev))+" "+dev.Name+" · "+
		fmtBytes(dev.MemoryUsed)+" / "+fmtBytes(dev.MemoryTotal)+" "+d.st.Severity(sev).Render("("+fmtPct(dev.UsedPercent())+")")+
		" · peak "+fmtBytes(dev.PeakUsed)+" · free "+fmtBytes(dev.MemoryFree))
	var proc sampler.Process
	isProc := d.target.PID != 0
	if isProc {
		var found bool
		proc, found = d.process(dev)
		if !found {
			head = append(head, d.st.Dim.Render(fmt.Sprintf("  PID %d is no longer listed on this GPU", d.target.PID)))
			isProc = false
		} else {
			user := proc.User
			if user == "" {
				user = "?"
			}
			mem := na
			if proc.Exited {
				mem = "exited"
			} else if proc.UsedBytes != nil {
				mem = fmtBytes(*proc.UsedBytes) + " (" + fmtPct(percent(*proc.UsedBytes, dev.MemoryTotal)) + " of the GPU)"
			}
			cmd := proc.Command
			if !proc.Visible {
				cmd = "(other PID namespace; run vramtop in the host PID namespace to name it) " + cmd
			}
			head = append(head, d.st.Accent.Render("PID "+strconv.FormatUint(uint64(proc.PID), 10))+" "+user+" · "+mem+
				" · peak "+fmtBytes(proc.PeakBytes)+" · "+cmd)
		}
	}
	legend := d.st.Dim.Render(fmt.Sprintf("last %s, peak per column · ┈ warn %.0f%% / crit %.0f%% · z: span · esc: back",
		fmtSpan(d.shownSpan(dev)), d.th.Warn, d.th.Crit))
	if isProc {
		legend = d.st.Dim.Render("line: this process · dots: whole GPU · ") + legend
	}
	head = append(head, legend)
	for i := range head {
		head[i] = fit(head[i], d.width)
	}
	top := strings.Join(head, "\n")

	adv := d.adviceView()
	plotH := d.height - lipgloss.Height(top) - lipgloss.Height(adv)
	if adv == "" {
		plotH = d.height - lipgloss.Height(top)
	}
	if plotH < 5 && adv != "" {
		// Keep a usable plot: the advice gives way first.
		adv = clampLines(adv, d.width, max(d.height-lipgloss.Height(top)-5, 0))
		plotH = d.height - lipgloss.Height(top) - lipgloss.Height(adv)
	}
	parts := []string{top}
	if g := d.plot(dev, proc, isProc, plotH); g != "" {
		parts = append(parts, g)
	} else if plotH > 0 {
		parts = append(parts, d.st.Dim.Render(fit("  no history yet", d.width)))
	}
	if adv != "" {
		parts = append(parts, adv)
	}
	return clampLines(strings.Join(parts, "\n"), d.width, d.height)
}

func (d detailView) shownSpan(dev sampler.Device) time.Duration {
	spec := plotSpec{width: d.width, totalGiB: float64(dev.MemoryTotal) / gib, xAxis: time.Second}
	return spanFor(dev.History, d.snap.Time, d.snap.Interval, d.span, max(plotCols(spec), 1))
}

func (d detailView) plot(dev sampler.Device, proc sampler.Process, isProc bool, h int) string {
	spec := plotSpec{width: d.width, height: h, totalGiB: float64(dev.MemoryTotal) / gib, th: d.th, xAxis: time.Second}
	cols := plotCols(spec)
	if cols < 2 || plotRows(spec) < 2 {
		return ""
	}
	now := d.snap.Time
	span := spanFor(dev.History, now, d.snap.Interval, d.span, cols)
	spec.xAxis = span
	from, to := now.Add(-span), now.Add(1)
	devLine := series(dev.History, from, to, cols)
	sevCol := d.st.plotColor(severity(dev.UsedPercent(), d.th))
	if isProc {
		spec.lines = [][]float64{devLine, series(proc.History, from, to, cols)}
		spec.colors = []asciigraph.AnsiColor{asciigraph.DarkGray, asciigraph.DodgerBlue}
		// The whole GPU in dots, so the two lines differ without colour.
		spec.chars = []asciigraph.CharSet{asciigraph.CreateCharSet("·")}
		if d.st.noColor {
			spec.colors = nil
		}
	} else {
		spec.lines = [][]float64{devLine}
		spec.colors = []asciigraph.AnsiColor{sevCol}
	}
	return plot(d.st, spec)
}

// adviceView is the advice panel; empty when the advisor has nothing to say.
func (d detailView) adviceView() string {
	if len(d.advice) == 0 {
		return ""
	}
	inner := d.width - d.st.Box.GetHorizontalFrameSize()
	if inner < 10 {
		return ""
	}
	var lines []string
	for _, a := range d.advice {
		tag := d.st.SeverityBadge(a.Severity).Render(strings.ToUpper(a.Severity.String()))
		lines = append(lines, tag+" "+a.Title)
		if a.Detail != "" {
			lines = append(lines, "  "+d.st.Dim.Render(a.Detail))
		}
		for _, r := range a.Remedies {
			l := "  • " + r.Name
			if r.Saving != "" {
				l += ": " + r.Saving
			}
			if r.Cost != "" {
				l += d.st.Dim.Render(" · cost: " + r.Cost)
			}
			if r.Covers {
				l += " " + d.st.Severity(advisor.Info).Render("✓ covers it")
			}
			lines = append(lines, l)
			if r.How != "" {
				lines = append(lines, "    "+d.st.Accent.Render(r.How))
			}
		}
	}
	for i := range lines {
		lines[i] = fit(lines[i], inner)
	}
	return d.st.Box.Width(d.width).Render(strings.Join(lines, "\n"))
}
