package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// render is the whole screen as a string: a pure function of the model.
func (m *Model) render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	if mw, mh := m.minSize(); m.width < mw || m.height < mh {
		msg := fmt.Sprintf("terminal too small (need %d×%d)", mw, mh)
		return lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, clampLines(msg, m.width, 1))
	}
	if m.showHelp {
		return padLines(clampLines(m.helpView(), m.width, m.height), m.height)
	}
	parts := []string{m.headerView()}
	if b := m.bannerView(); b != "" {
		parts = append(parts, b)
	}
	parts = append(parts, m.bodyView())
	// The footer sits on the last line.
	body := padLines(clampLines(strings.Join(parts, "\n"), m.width, m.height-1), m.height-1)
	return body + "\n" + m.footerView()
}

// padLines adds empty lines to s up to h lines.
func padLines(s string, h int) string {
	if n := lipgloss.Height(s); n < h {
		s += strings.Repeat("\n", h-n)
	}
	return s
}

func (m *Model) bodyView() string {
	if !m.have {
		msg := "waiting for the first sample…"
		if m.ended {
			msg = "the source ended before its first sample"
		}
		return m.st.Dim.Render("  " + msg)
	}
	switch {
	case m.screen == screenDetail:
		return m.detail.View()
	case m.fleet && m.host == "":
		return m.hosts.View()
	}
	g := m.gpus.View()
	p := m.procs.View()
	if p == "" {
		return g
	}
	return g + "\n" + p
}

// headerView is one line: what is shown, from where, and the badges that
// say whether it is live. When it does not fit, the least useful parts go
// first (driver, interval, host); the badges and the time stay.
func (m *Model) headerView() string {
	s := m.snap
	title := m.title()
	if m.opts.Version != "" && m.opts.Title == "" {
		title += " " + m.opts.Version
	}
	type part struct {
		text string
		keep int // higher stays longer
	}
	parts := []part{{m.st.Title.Render(title), 9}}
	if m.fleet {
		parts = append(parts, part{fmt.Sprintf("fleet of %d hosts", len(m.hosts.hosts)), 5})
		if m.host != "" {
			parts = append(parts, part{"host " + m.st.Accent.Render(m.host), 7})
		}
	} else if s.Hostname != "" {
		parts = append(parts, part{s.Hostname, 6})
	}
	if s.DriverVersion != "" {
		d := "driver " + s.DriverVersion
		if s.CUDAVersion != "" {
			d += " · CUDA " + s.CUDAVersion
		}
		parts = append(parts, part{d, 2})
	}
	if m.interval > 0 && m.opts.Replay == nil {
		parts = append(parts, part{"every " + m.interval.String(), 4})
	}
	if m.have {
		parts = append(parts, part{s.Time.Format("15:04:05"), 8})
	}
	var badges []string
	if s.Demo {
		badges = append(badges, m.st.Badge.Render(" DEMO "))
	}
	if m.opts.Replay != nil {
		badges = append(badges, m.st.Badge.Render(" REPLAY ")+" "+m.replayStatus)
	}
	if m.paused {
		badges = append(badges, m.st.SeverityBadge(advisor.Warn).Render(" PAUSED "))
	}
	if m.stale {
		badges = append(badges, m.st.SeverityBadge(advisor.Crit).Render(" STALE ")+
			m.st.Error.Render(" no data since "+m.arrived.Format("15:04:05")))
	}
	if m.ended && m.opts.Replay == nil {
		badges = append(badges, m.st.SeverityBadge(advisor.Warn).Render(" SOURCE ENDED "))
	}
	r := strings.Join(badges, " ")
	rw := lipgloss.Width(r)
	if rw >= m.width {
		return fit(r, m.width)
	}
	lw := m.width - rw - 1
	if r == "" {
		lw = m.width
	}
	sep := m.st.Dim.Render(" · ")
	join := func() string {
		texts := make([]string, len(parts))
		for i, p := range parts {
			texts[i] = p.text
		}
		return strings.Join(texts, sep)
	}
	l := join()
	for lipgloss.Width(l) > lw && len(parts) > 1 {
		low := 0
		for i, p := range parts {
			if p.keep < parts[low].keep {
				low = i
			}
		}
		parts = append(parts[:low], parts[low+1:]...)
		l = join()
	}
	return fit(l, lw) + strings.Repeat(" ", m.width-lw-rw) + r
}

// bannerView shows the alerts in force, the source's warnings and errors;
// empty when there are none. It takes at most an eighth of the screen (four lines).
func (m *Model) bannerView() string {
	var lines []string
	for _, a := range m.alerts {
		tag := m.st.SeverityBadge(a.Severity).Render(" " + strings.ToUpper(a.Severity.String()) + " ")
		lines = append(lines, tag+" "+m.st.Severity(a.Severity).Render(m.alertText(a)))
	}
	for _, w := range m.snap.Warnings {
		lines = append(lines, m.st.Warning.Render("! "+w))
	}
	if m.snap.Err != "" {
		lines = append(lines, m.st.Error.Render("error: "+m.snap.Err))
	}
	if len(lines) == 0 {
		return ""
	}
	room := clamp(m.height/8, 1, 4)
	if len(lines) > room {
		more := len(lines) - room + 1
		lines = append(lines[:room-1], m.st.Dim.Render(fmt.Sprintf("  … %d more (see the detail views)", more)))
	}
	for i := range lines {
		lines[i] = fit(lines[i], m.width)
	}
	return strings.Join(lines, "\n")
}

// alertText is the alert's message; for a GPU filling up (the threshold,
// time-to-full and spike-headroom rules) it adds the process that grew most
// there, when one did and the message does not name it already.
func (m *Model) alertText(a advisor.Alert) string {
	msg := a.Message
	if msg == "" {
		msg = a.Rule + " on GPU " + a.DeviceID
	}
	switch a.Rule {
	case "threshold", "time_to_full", "spike_headroom":
	default:
		return msg
	}
	if a.PID != 0 || a.DeviceID == "" {
		return msg
	}
	d, ok := m.snap.Device(a.DeviceID)
	if !ok {
		return msg
	}
	if p, grew, ok := grewMost(d, m.snap.Time, defaultSpan); ok && !strings.Contains(msg, fmt.Sprintf("PID %d ", p.PID)) {
		msg += fmt.Sprintf(" · grew most: PID %d %s (+%s in %s)", p.PID, firstWord(p.Command), fmtBytes(grew), fmtSpan(defaultSpan))
	}
	return msg
}

// grewMost finds the live process on d whose memory grew most over the last
// span; ok is false when none grew.
func grewMost(d sampler.Device, now time.Time, span time.Duration) (sampler.Process, uint64, bool) {
	var best sampler.Process
	var most uint64
	for _, p := range d.Processes {
		if p.Exited || p.History.Len() == 0 {
			continue
		}
		w := p.History.Since(now.Add(-span))
		if w.Len() == 0 {
			continue
		}
		_, first := w.At(0)
		_, last, _ := w.Last()
		if last > first && last-first > most {
			best, most = p, last-first
		}
	}
	return best, most, most > 0
}

func firstWord(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return "?"
	}
	w := f[0]
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	if len(f) > 1 && strings.HasPrefix(w, "python") {
		w += " " + f[1]
	}
	return w
}

// footerView is the filter input, the kill prompt, the last action's
// result, or the state of the process list and the main keys.
func (m *Model) footerView() string {
	switch {
	case m.filtering:
		return fit(m.filter.View()+m.st.Dim.Render("  enter: keep · esc: clear"), m.width)
	case m.prompt != nil:
		p := m.prompt
		note := ""
		if p.demo {
			note = m.st.Dim.Render("  (demo: nothing is sent)")
		}
		return fit(m.st.SeverityBadge(advisor.Warn).Render(fmt.Sprintf(" send %s to PID %d (%s)? ", sigName(p.sig), p.pid, p.what))+
			" y/n"+note, m.width)
	case m.status != "":
		if m.statusErr {
			return fit(m.st.Error.Render(m.status), m.width)
		}
		return fit(m.st.Status.Render(m.status), m.width)
	}
	var state []string
	if m.screen == screenMain && !(m.fleet && m.host == "") {
		if m.procs.group {
			state = append(state, "by user")
		} else {
			state = append(state, "sort "+m.procs.sortBy.String())
		}
		if m.procs.filter != "" {
			state = append(state, "filter "+fmt.Sprintf("%q", m.procs.filter))
		}
		if m.procs.mineOnly {
			state = append(state, "mine only")
		}
	}
	hints := []key.Binding{m.keys.Help, m.keys.Quit}
	switch {
	case m.screen == screenDetail:
		hints = append(hints, m.keys.Back, m.keys.Span, m.keys.Kill)
	case m.fleet && m.host == "":
		hints = append(hints, m.keys.Enter)
	default:
		hints = append(hints, m.keys.Tab, m.keys.Enter, m.keys.Sort, m.keys.Filter, m.keys.Mine, m.keys.Group, m.keys.Kill, m.keys.Pause)
	}
	if m.opts.Replay != nil {
		hints = append(hints, m.keys.Play, m.keys.StepFwd, m.keys.Speed)
	}
	var hs []string
	for _, h := range hints {
		if h.Enabled() {
			hs = append(hs, h.Help().Key+" "+footerWord(h))
		}
	}
	l := ""
	if len(state) > 0 {
		l = m.st.Status.Render(strings.Join(state, " · ")) + "  "
	}
	return fit(l+m.st.Help.Render(strings.Join(hs, " · ")), m.width)
}

// footerWord is the one-word name of a key in the footer.
func footerWord(b key.Binding) string {
	switch b.Help().Key {
	case "tab":
		return "pane"
	case "enter":
		return "detail"
	case "s":
		return "sort"
	case "u":
		return "users"
	case "m":
		return "mine"
	case "K":
		return "kill"
	case "z":
		return "span"
	case "space/p":
		return "play"
	case ">":
		return "speed"
	case "→":
		return "step"
	}
	d := b.Help().Desc
	if i := strings.IndexAny(d, " ,("); i > 0 {
		return d[:i]
	}
	return d
}

// helpView lists every key and what the screen's marks mean.
func (m *Model) helpView() string {
	var lines []string
	for _, g := range m.keys.helpGroups() {
		for _, b := range g {
			if b.Enabled() {
				lines = append(lines, m.st.Accent.Render(fit(b.Help().Key, 9))+" "+b.Help().Desc)
			}
		}
	}
	th := m.opts.Thresholds
	legend := strings.Join([]string{
		m.st.Title.Render("What the marks mean"),
		m.st.Severity(advisor.Info).Render(glyphUsed+glyphUsed) + " used  " + m.st.Reserved.Render(glyphReserved+glyphReserved) + " reserved by the driver  " + m.st.Free.Render(glyphFree+glyphFree) + " free",
		fmt.Sprintf("bars and graphs turn %s at %.0f%% and %s at %.0f%% (--warn, --crit); ┈ marks those levels",
			m.st.Severity(advisor.Warn).Render("yellow / WARN"), th.Warn, m.st.Severity(advisor.Crit).Render("red / CRIT"), th.Crit),
		"graphs keep the peak of each column: a short spike the sampler saw stays visible",
		m.st.Mine.Render("● bold") + " your processes   " + m.st.Others.Render("others'") + "   " + m.st.Exited.Render("dim: exited (peak kept)") + "   " + m.st.Unattr.Render("unattributed: memory no visible process owns"),
		"(other PID namespace): a process in a container; run vramtop in the host PID namespace to name it",
	}, "\n")
	title := m.st.Title.Render(m.title()+" — keys") + m.st.Dim.Render("   (? or esc to close)")
	// As many columns of keys as the width takes.
	colW := 0
	for _, l := range lines {
		colW = max(colW, lipgloss.Width(l))
	}
	ncol := clamp(m.width/(colW+3), 1, 4)
	rows := (len(lines) + ncol - 1) / ncol
	var cols []string
	for c := 0; c < ncol; c++ {
		lo, hi := c*rows, min((c+1)*rows, len(lines))
		if lo >= hi {
			break
		}
		col := make([]string, 0, rows)
		for _, l := range lines[lo:hi] {
			col = append(col, fit(l, colW+3))
		}
		cols = append(cols, strings.Join(col, "\n"))
	}
	grid := lipgloss.JoinHorizontal(lipgloss.Top, cols...)
	return title + "\n\n" + grid + "\n\n" + legend
}
