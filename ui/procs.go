package ui

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

type rowKind int

const (
	rowProc     rowKind = iota
	rowUnattr           // memory no visible process accounts for
	rowUser             // one user's total, in the group-by-user table
	rowUnlisted         // a device whose processes the source cannot list
	rowOmitted          // a device's processes the source counts but does not list
)

// procRow is one line of the process table.
type procRow struct {
	kind     rowKind
	dev      string // device ID
	devLabel string
	proc     sampler.Process
	bytes    uint64 // live use, unattributed bytes, or a user's total
	hasBytes bool
	pct      float64 // of the device's total (of all GPUs' for a user row)
	mine     bool
	age      time.Duration
	hasAge   bool
	// pending marks a rowUnlisted that stands for a process list being
	// read (sampler.Snapshot.ProcessesPending), not one that cannot be.
	pending bool
	// notRead marks a rowUnlisted that stands for processes the source
	// has not read yet (sampler.Device.ProcessesNotRead).
	notRead bool
	// omitted is how many processes a rowOmitted stands for.
	omitted int

	// Group-by-user rows.
	user   string
	nprocs int
	ngpus  int
	peak   uint64
	top    string // the user's biggest command
}

func (r procRow) key() string {
	switch r.kind {
	case rowUnattr:
		return "unattr:" + r.dev
	case rowUser:
		return "user:" + r.user
	case rowUnlisted:
		return "unlisted:" + r.dev
	case rowOmitted:
		return "omitted:" + r.dev
	}
	return fmt.Sprintf("p:%s:%d:%d", r.dev, r.proc.PID, r.proc.StartTime.UnixNano())
}

type sortMode int

const (
	sortMem sortMode = iota
	sortPeak
	sortAge
	sortPID
	sortUser
	sortGPU
	sortCPU
	sortRSS
	sortUtil  // GPU%: the process's SM utilization
	sortShare // GMEM%: the process's share of its GPU's memory
	nSortModes
	noSort sortMode = -1
)

func (s sortMode) String() string {
	return [...]string{"memory", "peak", "age", "pid", "user", "device", "cpu", "rss", "gpu%", "gmem%"}[s]
}

// groupMode is what the table sums by: nothing, users or jobs.
type groupMode int

const (
	groupNone groupMode = iota
	groupUser
	groupJob
)

// procRows are the rows of the process table for snap, in the snapshot's
// order: per device its processes, then its unattributed memory. The live
// view and the --once table both start from them.
func procRows(snap sampler.Snapshot, user string, into []procRow) []procRow {
	withHost := draw.SeveralHosts(snap)
	for _, d := range snap.Devices {
		label := draw.ProcDeviceLabel(d, withHost)
		if age, old := draw.ListAge(snap, d); old {
			// The device's processes are from an older list: say how old,
			// beside each of their figures.
			label += " " + draw.Age(age) + " old"
		}
		if d.NoProcessList {
			into = append(into, procRow{kind: rowUnlisted, dev: d.ID, devLabel: label})
			continue
		}
		if snap.ProcessesPending && !d.MIGEnabled {
			into = append(into, procRow{kind: rowUnlisted, dev: d.ID, devLabel: label, pending: true})
			continue
		}
		if d.ProcessesNotRead && !d.MIGEnabled {
			into = append(into, procRow{kind: rowUnlisted, dev: d.ID, devLabel: label, notRead: true})
			continue
		}
		for _, pr := range d.Processes {
			r := procRow{kind: rowProc, dev: d.ID, devLabel: label, proc: pr, mine: user != "" && pr.User == user}
			if pr.UsedBytes != nil && !pr.Exited {
				r.bytes, r.hasBytes = *pr.UsedBytes, true
				r.pct = draw.Percent(r.bytes, d.MemoryTotal)
			}
			// The age is the process's, from its start time; where that is
			// not known (a fleet's processes) AGE says n/a, not how long
			// vramtop has seen it.
			if !pr.StartTime.IsZero() {
				r.age, r.hasAge = snap.Time.Sub(pr.StartTime), true
			}
			into = append(into, r)
		}
		if d.OmittedProcesses > 0 {
			r := procRow{kind: rowOmitted, dev: d.ID, devLabel: label, omitted: d.OmittedProcesses}
			if d.OmittedBytes != nil {
				r.bytes, r.hasBytes = *d.OmittedBytes, true
				r.pct = draw.Percent(r.bytes, d.MemoryTotal)
			}
			into = append(into, r)
		}
		if d.Unattributed != nil && *d.Unattributed >= draw.MiB {
			u := *d.Unattributed
			into = append(into, procRow{kind: rowUnattr, dev: d.ID, devLabel: label, bytes: u, hasBytes: true, pct: draw.Percent(u, d.MemoryTotal)})
		}
	}
	return into
}

// unlistedText is what a rowUnlisted says.
func (r procRow) unlistedText() string {
	if r.pending {
		return draw.PendingText
	}
	if r.notRead {
		return draw.NotReadText
	}
	return draw.UnlistedText
}

func (r procRow) matches(f string) bool {
	switch r.kind {
	case rowUnattr:
		return strings.Contains("unattributed", f)
	case rowUnlisted:
		return strings.Contains(r.unlistedText(), f)
	case rowOmitted:
		return strings.Contains(draw.OmittedText(r.omitted), f)
	}
	pr := r.proc
	return strings.Contains(strings.ToLower(pr.User), f) ||
		strings.Contains(strings.ToLower(pr.Command), f) ||
		strings.Contains(strings.ToLower(pr.Job.Name()), f) ||
		strings.Contains(strings.ToLower(pr.Container), f) ||
		strings.Contains(strconv.FormatUint(uint64(pr.PID), 10), f)
}

// rank orders live processes, then unattributed memory, then exited ones.
func (r procRow) rank() int {
	switch {
	case r.kind == rowProc && r.proc.Exited:
		return 2
	case r.kind == rowUnattr || r.kind == rowOmitted:
		return 1
	}
	return 0
}

// sortRows orders rows by the column of by, reversed when rev: the order
// within the key flips, not where a device's unlisted processes, the
// unattributed memory and the exited processes go.
func sortRows(rows []procRow, by sortMode, rev bool) {
	flip := func(c int) int {
		if rev {
			return -c
		}
		return c
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		// A device whose processes are not listed comes after them all.
		if ua, ub := a.kind == rowUnlisted, b.kind == rowUnlisted; ua != ub {
			return !ua
		}
		if by == sortMem {
			// Unattributed memory competes with the processes by size: it
			// is often the answer to "who is using my GPU?".
			ae, be := a.kind == rowProc && a.proc.Exited, b.kind == rowProc && b.proc.Exited
			if ae != be {
				return !ae
			}
			if ae && a.proc.PeakBytes != b.proc.PeakBytes {
				return flip(cmp.Compare(b.proc.PeakBytes, a.proc.PeakBytes)) < 0
			}
			if a.bytes != b.bytes {
				return flip(cmp.Compare(b.bytes, a.bytes)) < 0
			}
			return a.proc.PID < b.proc.PID
		}
		if ra, rb := a.rank(), b.rank(); ra != rb {
			return ra < rb
		}
		// c < 0: a first in the column's own order (the largest first for
		// amounts, ascending for names, PIDs and devices).
		c := 0
		switch by {
		case sortPeak:
			c = cmp.Compare(b.proc.PeakBytes, a.proc.PeakBytes)
		case sortAge:
			c = cmp.Compare(b.age, a.age)
		case sortPID:
			c = cmp.Compare(a.proc.PID, b.proc.PID)
		case sortUser:
			c = strings.Compare(a.proc.User, b.proc.User)
		case sortGPU:
			c = compareIDs(a.dev, b.dev)
		case sortCPU:
			c = -compareOpt(a.proc.CPUPercent, b.proc.CPUPercent)
		case sortRSS:
			c = -compareOpt(a.proc.HostMemoryBytes, b.proc.HostMemoryBytes)
		case sortUtil:
			c = -compareOpt(a.proc.UtilizationPercent, b.proc.UtilizationPercent)
		case sortShare:
			c = cmp.Compare(b.pct, a.pct)
		}
		if c != 0 {
			return flip(c) < 0
		}
		if a.bytes != b.bytes {
			return a.bytes > b.bytes
		}
		return a.proc.PID < b.proc.PID
	})
}

// compareOpt compares optional values; an absent one is less than any.
func compareOpt[T cmp.Ordered](a, b *T) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return cmp.Compare(*a, *b)
}

// compareIDs orders device IDs as people count them: "2" before "10",
// "0/2" before "0/10", "node-a:3" before "node-a:12".
func compareIDs(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitsPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// userOf names a row's group in the table by user.
func userOf(r procRow) string {
	name := r.proc.User
	switch {
	case r.kind == rowUnattr:
		name = "(unattributed)"
	case r.kind == rowOmitted:
		name = "(not exported)"
	case !r.proc.Visible && name == "":
		name = "(other namespace)"
	case name == "":
		name = "(unknown)"
	}
	return name
}

// jobOf names a row's group in the table by job.
func jobOf(r procRow) string {
	switch n := r.proc.Job.Name(); {
	case r.kind == rowUnattr:
		return "(unattributed)"
	case r.kind == rowOmitted:
		return "(not exported)"
	case n == "":
		return "(no job)"
	default:
		return n
	}
}

// groupRows sums live memory per group (named by nameOf) across the GPUs.
func groupRows(rows []procRow, snap sampler.Snapshot, nameOf func(procRow) string) []procRow {
	var total uint64
	for _, d := range snap.Devices {
		total += d.MemoryTotal
	}
	type acc struct {
		row  procRow
		gpus map[string]bool
		top  uint64
	}
	by := map[string]*acc{}
	var order []string
	for _, r := range rows {
		if r.kind == rowProc && r.proc.Exited || r.kind == rowUnlisted {
			continue
		}
		name := nameOf(r)
		a := by[name]
		if a == nil {
			a = &acc{row: procRow{kind: rowUser, user: name, mine: r.mine}, gpus: map[string]bool{}}
			by[name] = a
			order = append(order, name)
		}
		a.row.bytes += r.bytes
		a.row.hasBytes = a.row.hasBytes || r.hasBytes
		a.row.peak += r.proc.PeakBytes
		if r.kind == rowProc {
			a.row.nprocs++
		}
		a.gpus[r.dev] = true
		if r.bytes >= a.top {
			a.top = r.bytes
			a.row.top = r.proc.Command
			switch r.kind {
			case rowUnattr:
				a.row.top = "other containers, driver, leaked contexts"
			case rowOmitted:
				a.row.top = draw.OmittedText(r.omitted)
			}
		}
	}
	out := rows[:0]
	for _, n := range order {
		a := by[n]
		a.row.ngpus = len(a.gpus)
		a.row.pct = draw.Percent(a.row.bytes, total)
		out = append(out, a.row)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].bytes != out[j].bytes {
			return out[i].bytes > out[j].bytes
		}
		return out[i].user < out[j].user
	})
	return out
}

// procPane is the process table: every process on the shown GPUs, or the
// memory per user. It owns its keys: moving (when focused), and sorting,
// filtering, mine-only, grouping and the kill request (whichever pane has
// the focus: they act on this table).
type procPane struct {
	st      common.Styles
	keys    common.KeyMap
	out     *common.Outbox
	user    string
	width   int
	height  int
	focused bool

	snap sampler.Snapshot
	all  []procRow // from the snapshot
	rows []procRow // filtered, sorted (or grouped) rows on screen

	sel, off int
	selKey   string
	sortBy   sortMode
	sortRev  bool // the sort reversed (I)
	// picking: the sort picker (F6) is open, on pick.
	picking  bool
	pick     sortMode
	filter   string
	input    lineInput
	mineOnly bool
	group    groupMode
}

func newProcPane(out *common.Outbox) procPane {
	return procPane{out: out, input: lineInput{prompt: "/", hint: "user, command, container or PID", limit: 64}}
}

func (p *procPane) setStyles(st common.Styles, keys common.KeyMap) {
	p.st, p.keys = st, keys
	p.input.cursor, p.input.dim = st.Selected, st.Dim
}

// SetSize sets the pane's size, its column header included.
func (p *procPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.scroll()
}

// SetFocus says whether the pane has the keyboard.
func (p *procPane) SetFocus(f bool) { p.focused = f }

// Bindings are the keys that act on the table whichever pane is focused.
func (p *procPane) Bindings() []key.Binding {
	return []key.Binding{p.keys.Sort, p.keys.Filter, p.keys.Mine, p.keys.Group, p.keys.Kill,
		p.keys.SortPick, p.keys.Reverse, p.keys.SortLeft, p.keys.SortRight, p.keys.Signal}
}

// Capturing reports whether the filter input or the sort picker takes
// every key.
func (p *procPane) Capturing() bool { return p.input.Focused() || p.picking }

// sortable are the sorts of the columns on screen, left to right.
func (p *procPane) sortable() []sortMode {
	var out []sortMode
	for _, c := range layoutColumns(procColumns, p.all, p.width).cols {
		if c.sort != noSort {
			out = append(out, c.sort)
		}
	}
	return out
}

// setSort sorts by mode; the same column again reverses the order.
func (p *procPane) setSort(mode sortMode, toggle bool) {
	if toggle && mode == p.sortBy {
		p.sortRev = !p.sortRev
	} else {
		p.sortBy, p.sortRev = mode, false
	}
	p.group = groupNone
	p.refresh()
	p.out.Status(false, "processes sorted by %s", p.sortText())
}

// sortText names the sort and its direction: "pid, descending".
func (p *procPane) sortText() string {
	if p.sortRev {
		return p.sortBy.String() + ", reversed"
	}
	return p.sortBy.String()
}

// stepSort is the sortable column left (d < 0) or right of the sort's.
func (p *procPane) stepSort(d int) sortMode {
	modes := p.sortable()
	if len(modes) == 0 {
		return p.sortBy
	}
	i := slices.Index(modes, p.pick)
	if i < 0 {
		return modes[0]
	}
	return modes[(i+d+len(modes))%len(modes)]
}

// PickerView is the sort picker for the footer: the columns, the one
// chosen marked.
func (p *procPane) PickerView() string {
	if !p.picking {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.st.Title.Render("sort by "))
	for _, mode := range p.sortable() {
		t := sortTitle(mode)
		if mode == p.pick {
			b.WriteString(p.st.Selected.Render("[" + t + "]"))
		} else {
			b.WriteString(" " + t + " ")
		}
	}
	b.WriteString(p.st.Dim.Render("  ←/→ enter esc"))
	return draw.Fit(b.String(), p.width)
}

// sortTitle is the title of the column of mode.
func sortTitle(mode sortMode) string {
	for _, c := range procColumns {
		if c.sort == mode {
			return c.title
		}
	}
	return mode.String()
}

func (p *procPane) onPickKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case k.String() == "ctrl+c":
		return tea.Quit
	case k.String() == "enter":
		p.picking = false
		p.setSort(p.pick, false)
	case key.Matches(k, p.keys.Back, p.keys.SortPick):
		p.picking = false
	case key.Matches(k, p.keys.Prev, p.keys.SortLeft):
		p.pick = p.stepSort(-1)
	case key.Matches(k, p.keys.Next, p.keys.SortRight):
		p.pick = p.stepSort(1)
	}
	return nil
}

// FilterView is the filter input for the footer.
func (p *procPane) FilterView() string { return p.input.View() }

// State is the table's state for the footer: "sort memory · mine only".
func (p *procPane) State() []string {
	var state []string
	if p.group != groupNone {
		state = append(state, "by "+[...]string{"", "user", "job"}[p.group])
	} else {
		state = append(state, "sort "+p.sortText())
	}
	if p.filter != "" {
		state = append(state, "filter "+fmt.Sprintf("%q", p.filter))
	}
	if p.mineOnly {
		state = append(state, "mine only")
	}
	return state
}

// Back undoes the table's narrowing (the filter, then the grouping); it
// reports false when there was none.
func (p *procPane) Back() bool {
	switch {
	case p.filter != "":
		p.setFilter("")
	case p.group != groupNone:
		p.group = groupNone
		p.refresh()
	default:
		return false
	}
	return true
}

// SetUser sets whose processes are "mine".
func (p *procPane) SetUser(u string) { p.user = u }

// User is whose processes are "mine".
func (p *procPane) User() string { return p.user }

// MinWidth is the narrowest the table fits its rows (from its columns).
func (p *procPane) MinWidth() int { return procColumns.minWidth(p.all) }

// Wants is the height that shows every row under the column header.
func (p *procPane) Wants() int { return 1 + max(len(p.rows), 1) }

// SetSnapshot rebuilds the rows from the devices shown.
func (p *procPane) SetSnapshot(snap sampler.Snapshot) {
	p.snap = snap
	p.all = procRows(snap, p.user, p.all[:0])
	p.refresh()
}

// refresh applies the filter, the mine-only switch, the sort or the grouping.
func (p *procPane) refresh() {
	p.rows = p.rows[:0]
	f := strings.ToLower(p.filter)
	for _, r := range p.all {
		if p.mineOnly && !r.mine {
			continue
		}
		if f != "" && !r.matches(f) {
			continue
		}
		p.rows = append(p.rows, r)
	}
	switch p.group {
	case groupUser:
		p.rows = groupRows(p.rows, p.snap, userOf)
	case groupJob:
		p.rows = groupRows(p.rows, p.snap, jobOf)
	default:
		sortRows(p.rows, p.sortBy, p.sortRev)
	}
	p.reselect()
}

func (p *procPane) setFilter(v string) {
	p.filter = v
	p.input.SetValue(v)
	p.refresh()
}

// reselect keeps the selected row selected across refreshes.
func (p *procPane) reselect() {
	if p.selKey != "" {
		for i, r := range p.rows {
			if r.key() == p.selKey {
				p.sel = i
				p.scroll()
				return
			}
		}
	}
	p.sel = draw.Clamp(p.sel, 0, len(p.rows)-1)
	p.remember()
	p.scroll()
}

func (p *procPane) remember() {
	if p.sel >= 0 && p.sel < len(p.rows) {
		p.selKey = p.rows[p.sel].key()
	} else {
		p.selKey = ""
	}
}

// visibleRows is how many rows fit under the column header.
func (p *procPane) visibleRows() int {
	return max(p.height-1, 0)
}

// scroll moves the window so the selected row shows.
func (p *procPane) scroll() {
	n := p.visibleRows()
	if n <= 0 {
		return
	}
	if p.sel < p.off {
		p.off = p.sel
	}
	if p.sel >= p.off+n {
		p.off = p.sel - n + 1
	}
	p.off = draw.Clamp(p.off, 0, max(len(p.rows)-n, 0))
}

func (p *procPane) move(d int) {
	if len(p.rows) == 0 {
		return
	}
	p.sel = draw.Clamp(p.sel+d, 0, len(p.rows)-1)
	p.remember()
	p.scroll()
}

// Update takes the table's keys, the filter's input and the mouse wheel.
func (p *procPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.PasteMsg:
		if p.Capturing() {
			p.input.Update(tea.KeyPressMsg{Text: strings.Map(func(r rune) rune {
				if r == '\n' || r == '\r' || r == '\t' {
					return ' '
				}
				return r
			}, msg.Content)})
			p.applyInput()
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			p.move(-3)
		case tea.MouseWheelDown:
			p.move(3)
		}
	case tea.KeyPressMsg:
		if p.picking {
			return p.onPickKey(msg)
		}
		if p.Capturing() {
			return p.onFilterKey(msg)
		}
		return p.onKey(msg)
	}
	return nil
}

func (p *procPane) onKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, p.keys.Sort):
		// The next sort whose column is on screen.
		for {
			p.sortBy = (p.sortBy + 1) % nSortModes
			if p.sortBy == sortMem || procColumns.sorts(p.sortBy, p.all, p.width) {
				break
			}
		}
		p.sortRev = false
		p.refresh()
		p.out.Status(false, "processes sorted by %s", p.sortBy)
	case key.Matches(k, p.keys.Reverse):
		p.setSort(p.sortBy, true)
	case key.Matches(k, p.keys.SortLeft, p.keys.SortRight):
		d := 1
		if key.Matches(k, p.keys.SortLeft) {
			d = -1
		}
		p.pick = p.sortBy
		p.setSort(p.stepSort(d), false)
	case key.Matches(k, p.keys.SortPick):
		p.picking, p.pick = true, p.sortBy
	case key.Matches(k, p.keys.Filter):
		p.input.SetValue(p.filter)
		p.input.Focus()
	case key.Matches(k, p.keys.Mine):
		p.mineOnly = !p.mineOnly
		p.refresh()
	case key.Matches(k, p.keys.Group):
		// By user, then by job where processes have one, then neither.
		p.group = (p.group + 1) % 3
		if p.group == groupJob && !anyJob(p.all) {
			p.group = groupNone
		}
		p.refresh()
	case key.Matches(k, p.keys.Kill, p.keys.Signal):
		if r, ok := p.Selected(); ok && p.focused {
			p.out.Post(common.Signal{Dev: r.dev, Proc: r.proc, Process: r.kind == rowProc, List: key.Matches(k, p.keys.Signal)})
		} else {
			p.out.Status(true, "select a process first (tab to the process list)")
		}
	case !p.focused:
	case key.Matches(k, p.keys.Enter):
		p.enter()
	default:
		page := max(p.visibleRows()-1, 1)
		switch {
		case key.Matches(k, p.keys.Up):
			p.move(-1)
		case key.Matches(k, p.keys.Down):
			p.move(1)
		case key.Matches(k, p.keys.PageUp):
			p.move(-page)
		case key.Matches(k, p.keys.PageDown):
			p.move(page)
		case key.Matches(k, p.keys.Top):
			p.move(-len(p.rows))
		case key.Matches(k, p.keys.Bottom):
			p.move(len(p.rows))
		}
	}
	return nil
}

// Click acts on a click at column x of the pane's line y: the column header
// sorts by the column clicked (the same one again reverses), a row is
// selected. It reports whether a row was.
func (p *procPane) Click(x, y int) bool {
	if y == 0 {
		if p.group != groupNone {
			return false
		}
		if c, ok := layoutColumns(procColumns, p.all, p.width).columnAt(x); ok && c.sort != noSort {
			p.setSort(c.sort, true)
		}
		return false
	}
	i := p.off + y - 1
	if y > p.visibleRows() || i >= len(p.rows) {
		return false
	}
	p.sel = i
	p.remember()
	return true
}

// enter opens the detail of the selected process or device; on a user's
// row it shows that user's processes.
func (p *procPane) enter() {
	r, ok := p.Selected()
	if !ok {
		return
	}
	switch r.kind {
	case rowUser:
		p.group = groupNone
		p.setFilter(r.user)
	case rowUnattr, rowUnlisted, rowOmitted:
		p.out.Post(common.OpenDetail{Dev: r.dev})
	default:
		p.out.Post(common.OpenDetail{Dev: r.dev, PID: r.proc.PID, Start: r.proc.StartTime.UnixNano()})
	}
}

func (p *procPane) onFilterKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		p.input.Blur()
		return nil
	case "esc":
		p.input.Blur()
		p.setFilter("")
		return nil
	case "ctrl+c":
		return tea.Quit
	}
	p.input.Update(k)
	p.applyInput()
	return nil
}

func (p *procPane) applyInput() {
	if v := p.input.Value(); v != p.filter {
		p.filter = v
		p.refresh()
	}
}

// Selected returns the selected row.
func (p *procPane) Selected() (procRow, bool) {
	if p.sel < 0 || p.sel >= len(p.rows) {
		return procRow{}, false
	}
	return p.rows[p.sel], true
}

// table is the column table on screen.
func (p *procPane) table() []procColumn {
	switch p.group {
	case groupUser:
		return userColumns
	case groupJob:
		return jobColumns
	}
	return procColumns
}

// View renders the column header and the visible rows.
func (p *procPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	cols := p.table()
	lay := layoutColumns(cols, p.all, p.width)
	var b strings.Builder
	b.Grow(p.width * p.height * 2)
	sortBy := p.sortBy
	if p.group != groupNone {
		sortBy = sortMem // groups are always by memory
	}
	b.WriteString(p.st.PColHeader.On(draw.Fit(lay.header(sortBy, p.sortRev && p.group == groupNone), p.width)))
	n := p.visibleRows()
	if len(p.rows) == 0 && n > 0 {
		b.WriteString("\n")
		msg := "no GPU processes"
		switch {
		case p.filter != "" && p.mineOnly:
			msg = fmt.Sprintf("none of your processes match %q", p.filter)
		case p.filter != "":
			msg = fmt.Sprintf("no process matches %q", p.filter)
		case p.mineOnly:
			msg = "none of your processes is on these GPUs"
		}
		b.WriteString(p.st.PDim.On(draw.Fit("  "+msg, p.width)))
	}
	for i := p.off; i < len(p.rows) && i < p.off+n; i++ {
		b.WriteString("\n")
		r := p.rows[i]
		line := draw.Fit(lay.line(r), p.width)
		switch {
		case i == p.sel && p.focused:
			line = p.st.PSelected.On(line)
		case r.kind == rowUnattr || r.kind == rowOmitted:
			line = p.st.PUnattr.On(line)
		case r.kind == rowUnlisted:
			line = p.st.PDim.On(line)
		case r.kind == rowProc && r.proc.Exited:
			line = p.st.PExited.On(line)
		case r.mine:
			line = p.st.PMine.On(line)
		case r.kind == rowProc || r.kind == rowUser:
			line = p.st.POthers.On(line)
		}
		if i == p.sel && !p.focused {
			line = p.st.PCursor.On(line)
		}
		b.WriteString(line)
	}
	return b.String()
}

// commandCell is a process's COMMAND column, in the live view and the
// table alike: its command line, with its container in front, or what is
// known of a process in another PID namespace.
func commandCell(pr sampler.Process) string {
	switch {
	case !pr.Visible:
		ns := "(other PID namespace"
		if pr.Container != "" {
			ns += "; container " + shortContainer(pr.Container)
		}
		return strings.TrimSpace(ns + ") " + pr.Command)
	case pr.Container != "":
		return "[" + shortContainer(pr.Container) + "] " + pr.Command
	}
	return pr.Command
}

// shortContainer shortens a container ID to 12 characters, as docker does.
func shortContainer(id string) string {
	if len(id) > 12 && !strings.ContainsAny(id, "/:") {
		return id[:12]
	}
	return id
}
