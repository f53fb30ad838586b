package ui

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/alerts"
	"github.com/vramtop/vramtop/ui/banner"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/detail"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/footer"
	"github.com/vramtop/vramtop/ui/gpus"
	top "github.com/vramtop/vramtop/ui/header" // the top line; header is the process table's
	"github.com/vramtop/vramtop/ui/help"
	"github.com/vramtop/vramtop/ui/hosts"
	"github.com/vramtop/vramtop/ui/judge"
	"github.com/vramtop/vramtop/ui/procs"
	"github.com/vramtop/vramtop/ui/prompt"
	"github.com/vramtop/vramtop/ui/state"
)

// Messages of the live view.
type (
	snapshotMsg sampler.Snapshot
	sourceEnded struct{}
	pane        int
	screen      int
)

const (
	paneGPUs pane = iota
	paneProcs
)

const (
	screenMain screen = iota
	screenDetail
)

// judged is a snapshot and what the judge made of it: what is on screen.
type judged struct {
	snap sampler.Snapshot
	judge.Verdict
}

// Model is the root of the live view. It is a router: data (snapshots,
// sizes) goes to every component, keys to the focused one, and the
// components' requests (open a screen, signal a process, a status line)
// come back through the outbox. It keeps the focus, the screen and the
// outbox; what it makes of each snapshot is in the judge and in values of
// ui/state's types (on, fresh, fleet, tune, geo), whose fields only their
// methods write: both are packages of their own, so the compiler holds the
// root to those methods.
type Model struct {
	opts  Options
	ctx   *common.Context // the styles, keys and thresholds every part shares
	judge *judge.Judge    // the alerts and advice of each snapshot
	snaps <-chan sampler.Snapshot
	out   common.Outbox

	geo   state.Geometry         // the terminal's size, where the panes lie
	on    state.OnScreen[judged] // the snapshot shown, the newest, the pause
	fresh state.Freshness        // whether the data is stale, the source ended
	fleet state.Fleet            // a fleet's open host, the view reduced to it
	tune  state.Tuning           // the interval (+/-) and the graphs' span (z)

	focus  pane
	screen screen
	// screens take the whole terminal, opened by their key over
	// everything else; open is the one open, -1 for none.
	screens    []common.Screen
	open       int
	showAlerts bool

	header common.Component
	banner common.Component
	footer common.Component
	gpus   gpuPart
	procs  procPart
	hosts  common.Component
	detail detailPart
	alertv common.Component
	prompt promptPart

	// frame is the last rendered screen; Bubble Tea asks for the view after
	// every message, and a message that changes nothing keeps it.
	frame   string
	frameOK bool

	euid         int
	replayStatus string
}

// The parts as the root holds them: the contract, and what the root asks
// of a part beyond it.
type (
	// gpuPart is the GPU pane (ui/gpus).
	gpuPart interface {
		common.Component
		// Layout picks the full or compact form in a body of w×maxH that
		// the process table shares (it needs procMin lines and wants
		// procWant); it returns the height the pane takes.
		Layout(w, maxH, procMin, procWant int) int
		// Click acts on a click at x, y of the pane; it reports whether
		// it hit a GPU.
		Click(x, y int) bool
		Selected() (sampler.Device, bool)
		// ShownSpan is the span the graphs show (z).
		ShownSpan() time.Duration
	}
	// procPart is the process table (ui/procs).
	procPart interface {
		common.Component
		// Capturing reports whether the filter's input or the sort
		// picker is open: it takes every key.
		Capturing() bool
		// Back undoes the table's narrowing (esc); false when there was
		// none.
		Back() bool
		// Click acts on a click at x, y of the table; it reports whether
		// it selected a row.
		Click(x, y int) bool
		// MinWidth is the narrowest the table fits its rows; Wants the
		// height that shows them all.
		MinWidth() int
		Wants() int
		// For the footer: the filter being typed, the sort picker, the
		// state ("sort MEM · mine only").
		FilterView() string
		PickerView() string
		State() []string
	}
	// detailPart is the detail screen (ui/detail).
	detailPart interface {
		common.Component
		ShownSpan() time.Duration
	}
	// promptPart is the question before a signal (ui/prompt).
	promptPart interface {
		common.Component
		// Active reports whether it waits for an answer: it takes every key.
		Active() bool
	}
)

// New returns the live view's model reading snaps.
func New(snaps <-chan sampler.Snapshot, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Thresholds == (advisor.Thresholds{}) {
		opts.Thresholds = advisor.DefaultThresholds()
	}
	m := &Model{
		opts:  opts,
		ctx:   &common.Context{Keys: common.NewKeyMap(opts.Replay != nil), Th: opts.Thresholds, User: opts.User, Claim: opts.Claim},
		judge: judge.New(judgeOptions(opts)),
		fleet: state.NewFleet(opts.OpenHost),
		snaps: snaps,
		euid:  os.Geteuid(),
		open:  -1,
	}
	m.ctx.Title = m.title()
	m.alertv = alerts.New(m.ctx)
	m.header = top.New(m.ctx)
	m.banner = banner.New(m.ctx)
	m.footer = footer.New(m.ctx)
	// The screens over everything else, each opened by its own key.
	m.screens = []common.Screen{
		help.New(m.ctx),
	}
	for _, sc := range m.screens {
		m.ctx.ScreenKeys = append(m.ctx.ScreenKeys, sc.Key())
	}
	m.procs = procs.New(m.ctx, &m.out)
	m.hosts = hosts.New(m.ctx, &m.out)
	m.gpus = gpus.New(m.ctx, &m.out, func(id string) bool { return m.judge.Watching(id) })
	m.detail = detail.New(m.ctx, &m.out, func(s sampler.Snapshot, t advisor.Target) []advisor.Advice { return m.judge.Advise(s, t) })
	m.prompt = prompt.New(m.ctx, &m.out, opts.Now, prompt.OpenProcess)
	m.setStyles(common.NewStyles(true, noColor()))
	if opts.Replay != nil {
		m.replayStatus = opts.Replay.Status()
	}
	return m
}

// judgeOptions are the judge's options for the view's: the advisor's rules,
// started over when a replay seeks back, notifications for this terminal
// with --notify.
func judgeOptions(opts Options) judge.Options {
	cfg := advisor.Config{Thresholds: opts.Thresholds, User: opts.User}
	o := judge.Options{Config: cfg, OnAlerts: opts.OnAlerts}
	if opts.Replay != nil {
		o.Restart = func() judge.Rules { return advisor.NewMonitor(cfg) }
	}
	if opts.Notify {
		o.Notify = os.Getenv
	}
	return o
}

func (m *Model) setStyles(st common.Styles) {
	m.ctx.Styles = st
	m.send(common.Restyled{})
}

// parts are every part of the screen: those of the main screen, then the
// full screens.
func (m *Model) parts() []common.Component {
	ps := []common.Component{m.header, m.banner, m.gpus, m.procs, m.hosts, m.detail, m.alertv, m.prompt, m.footer}
	for _, sc := range m.screens {
		ps = append(ps, sc)
	}
	return ps
}

// send gives msg to every part.
func (m *Model) send(msg tea.Msg) {
	for _, p := range m.parts() {
		p.Update(msg)
	}
}

// Init waits for the first snapshot and asks the terminal's background.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.wait(), tea.RequestBackgroundColor)
}

// wait is a command that delivers the next snapshot.
func (m *Model) wait() tea.Cmd {
	ch := m.snaps
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		s, ok := <-ch
		if !ok {
			return sourceEnded{}
		}
		return snapshotMsg(s)
	}
}

// Update routes a message, then the requests it caused.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.geo.Resize(msg.Width, msg.Height)
	case tea.BackgroundColorMsg:
		m.setStyles(common.NewStyles(msg.IsDark(), noColor()))
	case snapshotMsg:
		cmd = m.onSnapshot(sampler.Snapshot(msg))
	case sourceEnded:
		m.fresh.End()
	case state.StaleCheck, state.StaleTick:
		var changed bool
		if cmd, changed = m.fresh.Update(msg, m.on.Have()); !changed {
			// A check overtaken by a newer snapshot changes nothing: keep
			// the frame already rendered.
			return m, nil
		}
	case prompt.Expired:
		cmd = m.prompt.Update(msg)
	case tea.KeyPressMsg:
		cmd = m.onKey(msg)
	case tea.PasteMsg:
		cmd = m.procs.Update(msg)
	case tea.MouseClickMsg:
		cmd = m.onClick(msg)
	case tea.MouseWheelMsg:
		switch {
		case m.open >= 0:
			cmd = m.screens[m.open].Update(msg)
		case m.showAlerts:
			cmd = m.alertv.Update(msg)
		case m.screen == screenDetail:
			cmd = m.detail.Update(msg)
		case m.screen != screenMain:
		case m.fleet.HostList():
			cmd = m.hosts.Update(msg)
		default:
			cmd = m.procs.Update(msg)
		}
	}
	cmd = tea.Batch(cmd, m.handleRequests())
	m.relayout()
	m.frameOK = false
	return m, cmd
}

// onClick acts on a left click on the main screen: on a GPU it opens its
// detail, on the process table's column header it sorts by that column
// (again: reverses), on a process row it selects it.
func (m *Model) onClick(c tea.MouseClickMsg) tea.Cmd {
	if c.Button != tea.MouseLeft || m.open >= 0 || m.showAlerts || m.prompt.Active() || m.procs.Capturing() ||
		m.screen != screenMain || !m.on.Have() || m.fleet.HostList() {
		return nil
	}
	gpus, y, ok := m.geo.At(c.Y)
	switch {
	case !ok:
	case gpus:
		if m.gpus.Click(c.X, y) {
			m.focus = paneGPUs
		}
	default:
		m.footer.Update(common.StatusLine{})
		if m.procs.Click(c.X, y) {
			m.focus = paneProcs
		}
	}
	return nil
}

// handleRequests acts on what the components asked for.
func (m *Model) handleRequests() tea.Cmd {
	var cmds []tea.Cmd
	for {
		reqs := m.out.Take()
		if len(reqs) == 0 {
			return tea.Batch(cmds...)
		}
		for _, r := range reqs {
			switch r := r.(type) {
			case common.StatusLine:
				m.footer.Update(r)
			case common.OpenDetail:
				m.screen = screenDetail
				m.detail.Update(r)
			case common.OpenHost:
				m.fleet.Open(r.Name)
				m.focus = paneGPUs
				m.show()
			case common.Signal:
				cmds = append(cmds, m.prompt.Update(prompt.Ask{Req: r, Ctx: prompt.Context{
					Replay: m.opts.Replay != nil, Fleet: m.fleet.On(), Host: m.fleet.Host(), Demo: m.on.Shown().snap.Demo, EUID: m.euid,
				}}))
			}
		}
	}
}

func (m *Model) onSnapshot(s sampler.Snapshot) tea.Cmd {
	cmds := []tea.Cmd{m.wait(), m.fresh.Arrive(m.opts.Now(), s.Interval, m.opts.Replay == nil)}
	if m.opts.Replay != nil {
		m.replayStatus = m.opts.Replay.Status()
	}
	v := m.judge.Judge(s)
	if m.opts.Bell && v.NewCrit {
		cmds = append(cmds, tea.Raw("\a"))
	}
	if v.Notify != "" {
		cmds = append(cmds, tea.Raw(v.Notify))
	}
	m.tune.Heard(s.Interval)
	if m.on.Receive(judged{s, v}) {
		m.show()
	}
	return tea.Batch(cmds...)
}

// show hands the snapshot on screen and its verdict to every component.
func (m *Model) show() {
	j := m.on.Shown()
	s, v := j.snap, j.Verdict
	if s.Demo {
		// The demo's processes belong to its own users; "you" are its
		// demo.User whoever runs it.
		m.ctx.User = demo.User
	}
	if m.fleet.See(s) {
		// A fleet's processes run on other hosts: K is not offered there.
		f := m.fleet.On()
		m.ctx.Keys.Kill.SetEnabled(!f && m.opts.Replay == nil)
		m.ctx.Keys.Signal.SetEnabled(!f && m.opts.Replay == nil)
		m.setStyles(m.ctx.Styles)
	}
	// One severity per device, the advisor's: rows, bars and banner agree.
	m.send(common.Shown{Snap: m.fleet.View(), All: s, Host: m.fleet.Host(), Alerts: v.Alerts, Sev: v.Sev})
}

func (m *Model) setStatus(err bool, format string, args ...any) {
	m.out.Status(err, format, args...)
}

// onKey routes a key: to a component that takes every key (the filter
// input, the prompt), then the keys of the whole view, then the screen's.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	if m.procs.Capturing() {
		return m.procs.Update(k)
	}
	if m.prompt.Active() {
		return m.prompt.Update(k)
	}
	if key.Matches(k, m.ctx.Keys.Quit) {
		return tea.Quit
	}
	if m.open >= 0 {
		sc := m.screens[m.open]
		if key.Matches(k, sc.Key(), m.ctx.Keys.Back) {
			m.open = -1
			return nil
		}
		return sc.Update(k)
	}
	if m.showAlerts {
		if key.Matches(k, m.ctx.Keys.Alerts, m.ctx.Keys.Back) {
			m.showAlerts = false
			return nil
		}
		if m.screenOf(k) < 0 {
			return m.alertv.Update(k)
		}
	}
	m.footer.Update(common.StatusLine{})
	switch {
	case m.screenOf(k) >= 0:
		m.open = m.screenOf(k)
		m.screens[m.open].Update(common.Opened{})
	case key.Matches(k, m.ctx.Keys.Alerts):
		m.alertv.Update(common.Opened{})
		m.showAlerts = true
	case m.opts.Replay != nil && m.onReplayKey(k):
		m.replayStatus = m.opts.Replay.Status()
	case key.Matches(k, m.ctx.Keys.Pause):
		if m.on.TogglePause() {
			m.show()
		}
	case key.Matches(k, m.ctx.Keys.Faster, m.ctx.Keys.Slower):
		m.changeInterval(key.Matches(k, m.ctx.Keys.Faster))
	case key.Matches(k, m.ctx.Keys.Span):
		m.send(common.Span(m.tune.NextSpan()))
		m.relayout()
		m.setStatus(false, "%s", m.spanStatus())
	case m.screen == screenDetail:
		return m.onDetailKey(k)
	case m.fleet.HostList():
		return m.hosts.Update(k) // enter opens a host
	default:
		return m.onMainKey(k)
	}
	return nil
}

func (m *Model) onReplayKey(k tea.KeyPressMsg) bool {
	r := m.opts.Replay
	switch {
	case key.Matches(k, m.ctx.Keys.Play):
		r.Toggle()
	case key.Matches(k, m.ctx.Keys.StepBack):
		r.Step(-1)
	case key.Matches(k, m.ctx.Keys.StepFwd):
		r.Step(1)
	case key.Matches(k, m.ctx.Keys.SeekBack):
		r.SeekBy(-time.Minute)
	case key.Matches(k, m.ctx.Keys.SeekFwd):
		r.SeekBy(time.Minute)
	case key.Matches(k, m.ctx.Keys.SeekStart):
		r.SeekStart()
	case key.Matches(k, m.ctx.Keys.SeekEnd):
		r.SeekEnd()
	case key.Matches(k, m.ctx.Keys.Speed):
		r.CycleSpeed()
	default:
		return false
	}
	return true
}

func (m *Model) changeInterval(faster bool) {
	if m.opts.SetInterval == nil {
		m.setStatus(true, "the interval cannot be changed for this source")
		return
	}
	next := m.tune.Step(faster)
	m.opts.SetInterval(next)
	m.setStatus(false, "sampling every %v", next)
}

// onMainKey routes a key of the main screen: the process table's own keys
// go to it whichever pane has the focus, the rest to the focused pane.
func (m *Model) onMainKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.ctx.Keys.Back):
		if !m.procs.Back() && m.fleet.On() {
			m.fleet.Open("")
			m.show()
		}
	case key.Matches(k, m.ctx.Keys.Tab):
		if m.focus == paneGPUs {
			m.focus = paneProcs
		} else {
			m.focus = paneGPUs
		}
	case key.Matches(k, m.ctx.Keys.Watch):
		m.toggleWatch()
	case matchesAny(k, m.procs.Bindings()) || m.focus == paneProcs:
		return m.procs.Update(k)
	default:
		return m.gpus.Update(k)
	}
	return nil
}

// spanStatus says what the graphs show after z: the span the detail's
// legend shows (the same function draws both), which is shorter than the
// one asked for while the history is.
func (m *Model) spanStatus() string {
	asked := m.tune.Span()
	shown := m.gpus.ShownSpan()
	if m.screen == screenDetail {
		shown = m.detail.ShownSpan()
	}
	if shown < asked {
		return fmt.Sprintf("graphs show the last %s, all the history there is (%s asked)", draw.Span(shown), draw.Span(asked))
	}
	return "graphs show the last " + draw.Span(shown)
}

func (m *Model) onDetailKey(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.ctx.Keys.Back) {
		m.screen = screenMain
		return m.detail.Update(common.Closed{})
	}
	return m.detail.Update(k) // scrolls the advice, asks to signal its process
}

// matchesAny reports whether k is one of bs.
func matchesAny(k tea.KeyPressMsg, bs []key.Binding) bool {
	return key.Matches(k, bs...)
}

// screenOf is the index of the screen that k opens; -1 for none.
func (m *Model) screenOf(k tea.KeyPressMsg) int {
	for i, sc := range m.screens {
		if key.Matches(k, sc.Key()) {
			return i
		}
	}
	return -1
}

// minSize is the smallest terminal the view fits: the process table's
// narrow form with minLastWidth of its command (from its column table);
// a header, a GPU line, the column header, minProcRows processes and the
// footer.
func (m *Model) minSize() (w, h int) {
	return m.procs.MinWidth(), 1 + 1 + 1 + minProcRows + 1
}

const minProcRows = 3

// relayout gives each component its size from the measured chrome.
func (m *Model) relayout() {
	m.fillChrome()
	mw, mh := m.minSize()
	if !m.geo.Fits(mw, mh) {
		return
	}
	for _, sc := range m.screens {
		sc.SetSize(m.geo.Width(), m.geo.Height())
	}
	m.alertv.SetSize(m.geo.Width(), m.geo.Height()-1)
	m.gpus.Update(common.Focus(m.focus == paneGPUs))
	m.procs.Update(common.Focus(m.focus == paneProcs))
	above := lipgloss.Height(m.header.View())
	if b := m.banner.View(); b != "" {
		above += lipgloss.Height(b)
	}
	body := m.geo.Body(above, lipgloss.Height(m.footer.View()))
	switch {
	case m.screen == screenDetail:
		m.detail.SetSize(m.geo.Width(), body)
	case m.fleet.HostList():
		m.hosts.SetSize(m.geo.Width(), body)
	default:
		procMin := 1 + minProcRows
		procWant := m.procs.Wants()
		gh := m.gpus.Layout(m.geo.Width(), body, procMin, procWant)
		m.geo.Split(gh)
		m.procs.SetSize(m.geo.Width(), body-gh)
	}
}

// fillChrome hands the header, banner and footer what they show.
func (m *Model) fillChrome() {
	title := m.title()
	if m.opts.Version != "" && m.opts.Title == "" {
		title += " " + m.opts.Version
	}
	hs := top.State{
		Title: title, Replay: m.opts.Replay != nil, ReplayStatus: m.replayStatus,
		Paused: m.on.Paused(), Stale: m.fresh.Stale(), Arrived: m.fresh.Arrived(), Now: m.opts.Now(), Ended: m.fresh.Ended(),
	}
	if m.opts.Replay == nil {
		hs.Interval = m.tune.Interval()
	}
	m.header.Update(hs)
	m.header.SetSize(m.geo.Width(), 1)
	m.banner.SetSize(m.geo.Width(), m.geo.Height())
	m.prompt.SetSize(m.geo.Width(), 1)

	f := footer.State{Prompt: m.prompt.View()}
	if f.Prompt == "" {
		f.Prompt = m.procs.PickerView()
	}
	f.Input = m.procs.FilterView()
	hostList := m.fleet.HostList()
	if m.screen == screenMain && !hostList && !m.showAlerts {
		f.State = m.procs.State()
	}
	f.Hints = []key.Binding{m.ctx.Keys.Help, m.ctx.Keys.Quit}
	switch {
	case m.showAlerts:
		f.Hints = append(f.Hints, m.ctx.Keys.Alerts, m.ctx.Keys.Up, m.ctx.Keys.Down)
	case m.screen == screenDetail:
		f.Hints = append(f.Hints, m.ctx.Keys.Back, m.ctx.Keys.Span, m.ctx.Keys.Kill)
	case hostList:
		f.Hints = append(f.Hints, m.ctx.Keys.Enter)
	default:
		f.Hints = append(f.Hints, m.ctx.Keys.Tab, m.ctx.Keys.Enter, m.ctx.Keys.Alerts)
		f.Hints = append(f.Hints, m.procs.Bindings()...)
		f.Hints = append(f.Hints, m.ctx.Keys.Pause)
	}
	if m.opts.Replay != nil {
		f.Hints = append(f.Hints, m.ctx.Keys.Play, m.ctx.Keys.StepFwd, m.ctx.Keys.Speed)
	}
	m.footer.Update(f)
	m.footer.SetSize(m.geo.Width(), 1)
}

// View renders the screen.
func (m *Model) View() tea.View {
	if !m.frameOK {
		m.frame, m.frameOK = m.render(), true
	}
	v := tea.NewView(m.frame)
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = m.title()
	return v
}

func (m *Model) title() string {
	if m.opts.Title != "" {
		return m.opts.Title
	}
	return "vramtop"
}

// render is the whole screen as a string: a pure function of the model.
func (m *Model) render() string {
	if m.geo.Width() <= 0 || m.geo.Height() <= 0 {
		return ""
	}
	if mw, mh := m.minSize(); !m.geo.Fits(mw, mh) {
		msg := "terminal too small (need " + strconv.Itoa(mw) + "×" + strconv.Itoa(mh) + ")"
		// Wrapped at the width rather than cut: the size it needs is the
		// point of the message.
		return lipgloss.Place(m.geo.Width(), m.geo.Height(), lipgloss.Center, lipgloss.Center, draw.ClampLines(ansi.Wordwrap(msg, m.geo.Width(), ""), m.geo.Width(), m.geo.Height()))
	}
	if m.open >= 0 {
		return draw.PadLines(draw.ClampLines(m.screens[m.open].View(), m.geo.Width(), m.geo.Height()), m.geo.Height())
	}
	if m.showAlerts {
		return draw.PadLines(draw.ClampLines(m.alertv.View(), m.geo.Width(), m.geo.Height()-1), m.geo.Height()-1) + "\n" + m.footer.View()
	}
	parts := []string{m.header.View()}
	if b := m.banner.View(); b != "" {
		parts = append(parts, b)
	}
	parts = append(parts, m.bodyView())
	// The footer sits on the last line.
	body := draw.PadLines(draw.ClampLines(strings.Join(parts, "\n"), m.geo.Width(), m.geo.Height()-1), m.geo.Height()-1)
	return body + "\n" + m.footer.View()
}

func (m *Model) bodyView() string {
	if !m.on.Have() {
		msg := "waiting for the first sample…"
		if m.fresh.Ended() {
			msg = "the source ended before its first sample"
		}
		return m.ctx.Styles.Dim.Render("  " + msg)
	}
	switch {
	case m.screen == screenDetail:
		return m.detail.View()
	case m.fleet.HostList():
		return m.hosts.View()
	}
	g := m.gpus.View()
	p := m.procs.View()
	if p == "" {
		return g
	}
	return g + "\n" + p
}

// toggleWatch watches the selected GPU, or stops watching it (w).
func (m *Model) toggleWatch() {
	d, ok := m.gpus.Selected()
	if !ok {
		m.setStatus(true, "no GPU selected")
		return
	}
	status, ok := m.judge.Watch(d)
	m.setStatus(!ok, "%s", status)
}
