package ui

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
)

// Messages of the live view.
type (
	snapshotMsg sampler.Snapshot
	sourceEnded struct{}
	staleCheck  struct{ gen uint64 }
	pane        int
	screen      int
	killFunc    func(pid int, sig syscall.Signal) error
	observeFunc func(sampler.Snapshot) []advisor.Alert
	adviseFunc  func(sampler.Snapshot, advisor.Target, advisor.Config) []advisor.Advice
	killPrompt  struct {
		pid  uint32
		key  sampler.ProcessKey
		sig  syscall.Signal
		what string
		demo bool // the demo's processes are not real: nothing is sent
	}
)

const (
	paneGPUs pane = iota
	paneProcs
)

const (
	screenMain screen = iota
	screenDetail
)

// Graph spans the z key cycles through; the first is the default.
var spans = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour, time.Minute}

const defaultSpan = 5 * time.Minute

// Intervals the +/- keys move between.
const maxInterval = time.Minute

// staleAfter is how many publishing intervals without a snapshot make the
// display stale.
const staleAfter = 3

// Model is the root of the live view. It routes: data goes to every
// component, keys to the focused one; it owns only what is shared (the
// snapshot shown, the screen, prompts, the status line).
type Model struct {
	opts  Options
	keys  keyMap
	st    Styles
	cfg   advisor.Config
	snaps <-chan sampler.Snapshot

	width, height int

	have     bool
	snap     sampler.Snapshot // shown
	latest   sampler.Snapshot // newest received (differs from snap when paused)
	view     sampler.Snapshot // snap, reduced to the open host in a fleet
	paused   bool
	stale    bool
	ended    bool
	arrived  time.Time
	staleGen uint64
	interval time.Duration // the interval asked for with +/-

	focus    pane
	screen   screen
	showHelp bool
	fleet    bool
	host     string // the open host of a fleet; "" shows the host list
	spanIdx  int

	gpus   gpuPane
	procs  procPane
	hosts  hostList
	detail detailView

	filtering bool
	filter    lineInput

	observe    observeFunc
	newMonitor func() observeFunc
	// frame is the last rendered screen; Bubble Tea asks for the view after
	// every message, and a message that changes nothing keeps it.
	frame         string
	frameOK       bool
	monitor       *advisor.Monitor
	advise        adviseFunc
	alerts        []advisor.Alert
	pendingAlerts []advisor.Alert
	critSeen      map[string]bool

	prompt       *killPrompt
	termSent     map[sampler.ProcessKey]bool
	kill         killFunc
	isRoot       bool
	status       string
	statusErr    bool
	replayStatus string
}

// New returns the live view's model reading snaps.
func New(snaps <-chan sampler.Snapshot, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Thresholds == (advisor.Thresholds{}) {
		opts.Thresholds = advisor.DefaultThresholds()
	}
	m := &Model{
		opts:     opts,
		keys:     newKeyMap(opts.Replay != nil),
		cfg:      advisor.Config{Thresholds: opts.Thresholds, User: opts.User},
		snaps:    snaps,
		critSeen: map[string]bool{},
		termSent: map[sampler.ProcessKey]bool{},
		kill:     signalProcess,
		isRoot:   os.Geteuid() == 0,
	}
	// One monitor gives both the alerts and the advice, so they agree (the
	// same hysteresis) and advice can use what only time shows (idle holders).
	m.newMonitor = func() observeFunc {
		m.monitor = advisor.NewMonitor(m.cfg)
		return m.monitor.Observe
	}
	m.advise = func(s sampler.Snapshot, t advisor.Target, cfg advisor.Config) []advisor.Advice {
		if m.monitor != nil {
			return m.monitor.Advise(s, t)
		}
		return advisor.Advise(s, t, cfg)
	}
	m.observe = m.newMonitor()
	m.filter = lineInput{prompt: "/", hint: "user, command, container or PID", limit: 64}
	m.setStyles(NewStyles(true, noColor()))
	if opts.Replay != nil {
		m.replayStatus = opts.Replay.Status()
	}
	return m
}

func (m *Model) setStyles(st Styles) {
	m.st = st
	m.filter.cursor, m.filter.dim = st.Selected, st.Dim
	m.gpus = gpuPaneWith(m.gpus, st, m.keys, m.opts.Thresholds)
	m.procs.st, m.procs.keys, m.procs.user = st, m.keys, m.opts.User
	m.hosts.st, m.hosts.keys, m.hosts.th = st, m.keys, m.opts.Thresholds
	m.detail.st, m.detail.th = st, m.opts.Thresholds
	if m.detail.span == 0 {
		m.detail.span = spans[m.spanIdx]
	}
}

func gpuPaneWith(g gpuPane, st Styles, keys keyMap, th advisor.Thresholds) gpuPane {
	g.st, g.keys, g.th = st, keys, th
	if g.span == 0 {
		g.span = defaultSpan
	}
	if g.panelH == 0 {
		g.panelH = panelTextLines
	}
	return g
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

// Update routes a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.BackgroundColorMsg:
		m.setStyles(NewStyles(msg.IsDark(), noColor()))
	case snapshotMsg:
		cmd = m.onSnapshot(sampler.Snapshot(msg))
	case sourceEnded:
		m.ended = true
	case staleCheck:
		if msg.gen != m.staleGen || !m.have {
			// A check overtaken by a newer snapshot changes nothing: keep
			// the frame already rendered.
			return m, nil
		}
		m.stale = true
	case tea.KeyPressMsg:
		cmd = m.onKey(msg)
	case tea.PasteMsg:
		if m.filtering {
			m.filter.Update(tea.KeyPressMsg{Text: strings.Map(func(r rune) rune {
				if r == '\n' || r == '\r' || r == '\t' {
					return ' '
				}
				return r
			}, msg.Content)})
			m.procs.filter = m.filter.Value()
			m.procs.refresh(m.view)
		}
	case tea.MouseWheelMsg:
		switch {
		case m.screen != screenMain || m.showHelp:
		case m.fleet && m.host == "":
			m.hosts.Update(msg)
		default:
			m.procs.Update(msg)
		}
	}
	m.relayout()
	m.frameOK = false
	return m, cmd
}

func (m *Model) onSnapshot(s sampler.Snapshot) tea.Cmd {
	m.arrived = m.opts.Now()
	m.stale = false
	m.staleGen++
	cmds := []tea.Cmd{m.wait()}
	if m.opts.Replay != nil {
		m.replayStatus = m.opts.Replay.Status()
	} else {
		every := max(s.Interval, sampler.MinPublishInterval)
		gen := m.staleGen
		cmds = append(cmds, tea.Tick(staleAfter*every+every/10, func(time.Time) tea.Msg { return staleCheck{gen} }))
	}
	if m.have && s.Time.Before(m.latest.Time) && m.opts.Replay != nil && m.newMonitor != nil {
		// A replay sought backwards: the rules start over from here.
		m.observe = m.newMonitor()
	}
	alerts := m.observe(s)
	if m.opts.Bell && m.newCrit(alerts) {
		cmds = append(cmds, tea.Raw("\a"))
	}
	m.latest = s
	if s.Interval > 0 {
		m.interval = s.Interval
	}
	if m.paused {
		m.pendingAlerts = alerts
	} else {
		m.alerts = alerts
		m.show(s)
	}
	return tea.Batch(cmds...)
}

// newCrit reports whether a critical alert appeared that was not in force at
// the previous snapshot, and remembers the ones in force.
func (m *Model) newCrit(alerts []advisor.Alert) bool {
	now := map[string]bool{}
	ring := false
	for _, a := range alerts {
		if a.Severity != advisor.Crit {
			continue
		}
		k := a.Rule + "|" + a.DeviceID + "|" + strconv.FormatUint(uint64(a.PID), 10)
		now[k] = true
		if !m.critSeen[k] {
			ring = true
		}
	}
	m.critSeen = now
	return ring
}

// show makes s the snapshot on screen.
func (m *Model) show(s sampler.Snapshot) {
	m.snap, m.have = s, true
	if s.Demo {
		// The demo's processes belong to its own users; "you" are its
		// demo.User whoever runs it.
		m.procs.user = demo.User
	}
	m.fleet = isFleet(s)
	m.hosts.SetSnapshot(s)
	m.view = s
	if m.fleet && m.host != "" {
		m.view = hostSnapshot(s, m.host)
	}
	m.gpus.SetSnapshot(m.view)
	m.procs.SetSnapshot(m.view)
	m.refreshDetail()
}

func (m *Model) refreshDetail() {
	if m.screen != screenDetail {
		return
	}
	m.detail.SetSnapshot(m.view, m.advise(m.view, m.detail.target, m.cfg))
}

func (m *Model) setStatus(err bool, format string, args ...any) {
	m.status, m.statusErr = fmt.Sprintf(format, args...), err
}

func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	if m.filtering {
		return m.onFilterKey(k)
	}
	if m.prompt != nil {
		return m.onPromptKey(k)
	}
	if key.Matches(k, m.keys.Quit) {
		return tea.Quit
	}
	if m.showHelp {
		if key.Matches(k, m.keys.Help, m.keys.Back) {
			m.showHelp = false
		}
		return nil
	}
	m.status = ""
	switch {
	case key.Matches(k, m.keys.Help):
		m.showHelp = true
	case m.opts.Replay != nil && m.onReplayKey(k):
		m.replayStatus = m.opts.Replay.Status()
	case key.Matches(k, m.keys.Pause):
		m.paused = !m.paused
		if !m.paused && m.have {
			m.alerts = m.pendingAlerts
			m.show(m.latest)
		}
	case key.Matches(k, m.keys.Faster, m.keys.Slower):
		m.changeInterval(key.Matches(k, m.keys.Faster))
	case key.Matches(k, m.keys.Span):
		m.spanIdx = (m.spanIdx + 1) % len(spans)
		m.gpus.span, m.detail.span = spans[m.spanIdx], spans[m.spanIdx]
		m.setStatus(false, "graphs show the last %s", fmtSpan(spans[m.spanIdx]))
	case m.screen == screenDetail:
		return m.onDetailKey(k)
	case m.fleet && m.host == "":
		if key.Matches(k, m.keys.Enter) {
			if h, ok := m.hosts.Selected(); ok {
				m.host = h
				m.focus = paneGPUs
				m.show(m.snap)
			}
			return nil
		}
		return m.hosts.Update(k)
	default:
		return m.onMainKey(k)
	}
	return nil
}

func (m *Model) onReplayKey(k tea.KeyPressMsg) bool {
	r := m.opts.Replay
	switch {
	case key.Matches(k, m.keys.Play):
		r.Toggle()
	case key.Matches(k, m.keys.StepBack):
		r.Step(-1)
	case key.Matches(k, m.keys.StepFwd):
		r.Step(1)
	case key.Matches(k, m.keys.SeekBack):
		r.SeekBy(-time.Minute)
	case key.Matches(k, m.keys.SeekFwd):
		r.SeekBy(time.Minute)
	case key.Matches(k, m.keys.SeekStart):
		r.SeekStart()
	case key.Matches(k, m.keys.SeekEnd):
		r.SeekEnd()
	case key.Matches(k, m.keys.Speed):
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
	cur := m.interval
	if cur <= 0 {
		cur = sampler.DefaultInterval
	}
	next := cur * 2
	if faster {
		next = cur / 2
	}
	next = min(max(next, sampler.MinInterval), maxInterval)
	m.interval = next
	m.opts.SetInterval(next)
	m.setStatus(false, "sampling every %v", next)
}

func (m *Model) onMainKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Back):
		switch {
		case m.procs.filter != "":
			m.setFilter("")
		case m.procs.group:
			m.procs.group = false
			m.procs.refresh(m.view)
		case m.fleet:
			m.host = ""
			m.show(m.snap)
		}
	case key.Matches(k, m.keys.Tab):
		if m.focus == paneGPUs {
			m.focus = paneProcs
		} else {
			m.focus = paneGPUs
		}
	case key.Matches(k, m.keys.Enter):
		m.enter()
	case key.Matches(k, m.keys.Sort):
		m.procs.sortBy = (m.procs.sortBy + 1) % nSortModes
		m.procs.refresh(m.view)
		m.setStatus(false, "processes sorted by %s", m.procs.sortBy)
	case key.Matches(k, m.keys.Filter):
		m.filtering = true
		m.filter.SetValue(m.procs.filter)
		m.filter.Focus()
		return nil
	case key.Matches(k, m.keys.Mine):
		m.procs.mineOnly = !m.procs.mineOnly
		m.procs.refresh(m.view)
	case key.Matches(k, m.keys.Group):
		m.procs.group = !m.procs.group
		m.procs.refresh(m.view)
	case key.Matches(k, m.keys.Kill):
		if r, ok := m.procs.Selected(); ok && m.focus == paneProcs {
			m.askKill(r)
		} else {
			m.setStatus(true, "select a process first (tab to the process list)")
		}
	case m.focus == paneGPUs:
		return m.gpus.Update(k)
	default:
		return m.procs.Update(k)
	}
	return nil
}

// enter opens the detail of the selected GPU or process; on a user's row it
// shows that user's processes.
func (m *Model) enter() {
	if m.focus == paneGPUs {
		if d, ok := m.gpus.Selected(); ok {
			m.openDetail(advisor.Target{DeviceID: d.ID}, 0)
		}
		return
	}
	r, ok := m.procs.Selected()
	if !ok {
		return
	}
	switch r.kind {
	case rowUser:
		m.procs.group = false
		m.setFilter(r.user)
	case rowUnattr, rowUnlisted:
		m.openDetail(advisor.Target{DeviceID: r.dev}, 0)
	default:
		m.openDetail(advisor.Target{DeviceID: r.dev, PID: r.proc.PID}, r.proc.StartTime.UnixNano())
	}
}

func (m *Model) openDetail(t advisor.Target, start int64) {
	m.screen = screenDetail
	m.detail.target, m.detail.start = t, start
	m.refreshDetail()
}

func (m *Model) onDetailKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Back):
		m.screen = screenMain
	case key.Matches(k, m.keys.Kill):
		if m.detail.target.PID == 0 {
			m.setStatus(true, "open a process (not a GPU) to signal it")
			return nil
		}
		for _, r := range m.procs.all {
			if r.kind == rowProc && r.dev == m.detail.target.DeviceID && r.proc.PID == m.detail.target.PID &&
				r.proc.StartTime.UnixNano() == m.detail.start {
				m.askKill(r)
				return nil
			}
		}
		m.setStatus(true, "PID %d is no longer listed", m.detail.target.PID)
	}
	return nil
}

func (m *Model) setFilter(v string) {
	m.procs.filter = v
	m.filter.SetValue(v)
	m.procs.refresh(m.view)
}

func (m *Model) onFilterKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		m.filtering = false
		m.filter.Blur()
		return nil
	case "esc":
		m.filtering = false
		m.filter.Blur()
		m.setFilter("")
		return nil
	case "ctrl+c":
		return tea.Quit
	}
	m.filter.Update(k)
	if v := m.filter.Value(); v != m.procs.filter {
		m.procs.filter = v
		m.procs.refresh(m.view)
	}
	return nil
}

// askKill checks that the process may be signalled and asks to confirm.
func (m *Model) askKill(r procRow) {
	if r.kind != rowProc {
		m.setStatus(true, "select a process to signal")
		return
	}
	p := r.proc
	switch {
	case m.opts.Replay != nil:
		m.setStatus(true, "PID %d is in a recording: there is no live process to signal", p.PID)
		return
	case m.fleet:
		m.setStatus(true, "PID %d runs on %s: signal it on that host", p.PID, m.host)
		return
	case p.Exited:
		m.setStatus(true, "PID %d has already exited", p.PID)
		return
	case !p.Visible:
		m.setStatus(true, "PID %d is in another PID namespace: it cannot be signalled from here", p.PID)
		return
	case !r.mine && !m.isRoot && !m.snap.Demo:
		owner := p.User
		if owner == "" {
			owner = "another user"
		}
		m.setStatus(true, "PID %d belongs to %s: only your own processes can be signalled (root can signal any)", p.PID, owner)
		return
	}
	k := p.Key(r.dev)
	sig := syscall.SIGTERM
	if m.termSent[k] {
		sig = syscall.SIGKILL
	}
	what := p.Command
	if len(what) > 40 {
		what = what[:39] + "…"
	}
	m.prompt = &killPrompt{pid: p.PID, key: k, sig: sig, what: what, demo: m.snap.Demo}
}

func (m *Model) onPromptKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.prompt
	switch {
	case key.Matches(k, m.keys.Yes):
		m.prompt = nil
		if p.demo {
			// Never signal a real process that happens to have a demo PID.
			if p.sig == syscall.SIGTERM {
				m.termSent[p.key] = true
			}
			m.setStatus(false, "demo: %s not sent, PID %d is not a real process", sigName(p.sig), p.pid)
			return nil
		}
		if err := m.kill(int(p.pid), p.sig); err != nil {
			m.setStatus(true, "%s to PID %d failed: %v", sigName(p.sig), p.pid, err)
			return nil
		}
		if p.sig == syscall.SIGTERM {
			m.termSent[p.key] = true
			m.setStatus(false, "sent SIGTERM to PID %d (%s); K again offers SIGKILL", p.pid, p.what)
		} else {
			m.setStatus(false, "sent SIGKILL to PID %d (%s)", p.pid, p.what)
		}
	case key.Matches(k, m.keys.No):
		m.prompt = nil
		m.setStatus(false, "nothing sent")
	case k.String() == "ctrl+c":
		return tea.Quit
	}
	return nil
}

func sigName(s syscall.Signal) string {
	if s == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// minSize is the smallest terminal the view fits: the process table's
// fixed columns and a short command; a header, a GPU line, the column header,
// three processes and the footer.
func (m *Model) minSize() (w, h int) {
	p := procPane{width: 0}
	c := p.columns()
	w = 2 + c.gpu + c.pid + c.user + c.mem + c.pct + c.peak + c.age + 7 + minCmdWidth
	return w, 1 + 1 + 1 + minProcRows + 1
}

const (
	minCmdWidth = 8
	minProcRows = 3
)

// relayout gives each component its size from the measured chrome.
func (m *Model) relayout() {
	mw, mh := m.minSize()
	if m.width < mw || m.height < mh {
		return
	}
	m.gpus.focused = m.focus == paneGPUs
	m.procs.focused = m.focus == paneProcs
	body := m.height - lipgloss.Height(m.headerView()) - lipgloss.Height(m.footerView())
	if b := m.bannerView(); b != "" {
		body -= lipgloss.Height(b)
	}
	body = max(body, 0)
	switch {
	case m.screen == screenDetail:
		m.detail.SetSize(m.width, body)
	case m.fleet && m.host == "":
		m.hosts.SetSize(m.width, body)
	default:
		procMin := 1 + minProcRows
		procWant := 1 + max(len(m.procs.rows), 1)
		gh := m.gpus.Layout(m.width, body, procMin, procWant)
		m.procs.SetSize(m.width, body-gh)
	}
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
