// Package procs is the live view's process table: every process on the
// GPUs shown, its memory, utilization, host CPU and memory, age and
// command, sorted, filtered, or summed by user or job; and the --once
// table, laid out from the same columns.
package procs

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

type RowKind int

const (
	RowProc     RowKind = iota
	RowUnattr           // memory no visible process accounts for
	RowUser             // one user's total, in the group-by-user table
	RowUnlisted         // a device whose processes the source cannot list
	RowOmitted          // a device's processes the source counts but does not list
)

// Row is one line of the process table.
type Row struct {
	Kind     RowKind
	Dev      string // device ID
	DevLabel string
	Proc     sampler.Process
	Bytes    uint64 // live use, unattributed bytes, or a user's total
	HasBytes bool
	Pct      float64 // of the device's total (of all GPUs' for a user row)
	Mine     bool
	Age      time.Duration
	HasAge   bool
	// Pending marks a RowUnlisted that stands for a process list being
	// read (sampler.Snapshot.ProcessesPending), not one that cannot be.
	Pending bool
	// NotRead marks a RowUnlisted that stands for processes the source
	// has not read yet (sampler.Device.ProcessesNotRead).
	NotRead bool
	// Omitted is how many processes a RowOmitted stands for.
	Omitted int

	// Group-by-User rows.
	User   string
	NProcs int
	NGPUs  int
	Peak   uint64
	Top    string // the user's biggest command
}

func (r Row) Key() string {
	switch r.Kind {
	case RowUnattr:
		return "unattr:" + r.Dev
	case RowUser:
		return "user:" + r.User
	case RowUnlisted:
		return "unlisted:" + r.Dev
	case RowOmitted:
		return "omitted:" + r.Dev
	}
	return fmt.Sprintf("p:%s:%d:%d", r.Dev, r.Proc.PID, r.Proc.StartTime.UnixNano())
}

// GroupMode is what the table sums by: nothing, users or jobs.
type GroupMode int

const (
	GroupNone GroupMode = iota
	GroupUser
	GroupJob
)

// Rows are the rows of the process table for snap, in the snapshot's
// order: per device its processes, then its unattributed memory. The live
// view and the --once table both start from them.
func Rows(snap sampler.Snapshot, user string, into []Row) []Row {
	withHost := draw.SeveralHosts(snap)
	for _, d := range snap.Devices {
		label := draw.ProcDeviceLabel(d, withHost)
		if age, old := draw.ListAge(snap, d); old {
			// The device's processes are from an older list: say how old,
			// beside each of their figures.
			label += " " + draw.Age(age) + " old"
		}
		if d.NoProcessList {
			into = append(into, Row{Kind: RowUnlisted, Dev: d.ID, DevLabel: label})
			continue
		}
		if snap.ProcessesPending && !d.MIGEnabled {
			into = append(into, Row{Kind: RowUnlisted, Dev: d.ID, DevLabel: label, Pending: true})
			continue
		}
		if d.ProcessesNotRead && !d.MIGEnabled {
			into = append(into, Row{Kind: RowUnlisted, Dev: d.ID, DevLabel: label, NotRead: true})
			continue
		}
		for _, pr := range d.Processes {
			r := Row{Kind: RowProc, Dev: d.ID, DevLabel: label, Proc: pr, Mine: user != "" && pr.User == user}
			if pr.UsedBytes != nil && !pr.Exited {
				r.Bytes, r.HasBytes = *pr.UsedBytes, true
				r.Pct = draw.Percent(r.Bytes, d.MemoryTotal)
			}
			// The age is the process's, from its start time; where that is
			// not known (a fleet's processes) AGE says n/a, not how long
			// vramtop has seen it.
			if !pr.StartTime.IsZero() {
				r.Age, r.HasAge = snap.Time.Sub(pr.StartTime), true
			}
			into = append(into, r)
		}
		if d.OmittedProcesses > 0 {
			r := Row{Kind: RowOmitted, Dev: d.ID, DevLabel: label, Omitted: d.OmittedProcesses}
			if d.OmittedBytes != nil {
				r.Bytes, r.HasBytes = *d.OmittedBytes, true
				r.Pct = draw.Percent(r.Bytes, d.MemoryTotal)
			}
			into = append(into, r)
		}
		if d.Unattributed != nil && *d.Unattributed >= draw.MiB {
			u := *d.Unattributed
			into = append(into, Row{Kind: RowUnattr, Dev: d.ID, DevLabel: label, Bytes: u, HasBytes: true, Pct: draw.Percent(u, d.MemoryTotal)})
		}
	}
	return into
}

// unlistedText is what a RowUnlisted says.
func (r Row) unlistedText() string {
	if r.Pending {
		return draw.PendingText
	}
	if r.NotRead {
		return draw.NotReadText
	}
	return draw.UnlistedText
}

func (r Row) matches(f string) bool {
	switch r.Kind {
	case RowUnattr:
		return strings.Contains("unattributed", f)
	case RowUnlisted:
		return strings.Contains(r.unlistedText(), f)
	case RowOmitted:
		return strings.Contains(draw.OmittedText(r.Omitted), f)
	}
	pr := r.Proc
	return strings.Contains(strings.ToLower(pr.User), f) ||
		strings.Contains(strings.ToLower(pr.Command), f) ||
		strings.Contains(strings.ToLower(pr.Job.Name()), f) ||
		strings.Contains(strings.ToLower(pr.Container), f) ||
		strings.Contains(strconv.FormatUint(uint64(pr.PID), 10), f)
}

// rank orders live processes, then unattributed memory, then exited ones.
func (r Row) rank() int {
	switch {
	case r.Kind == RowProc && r.Proc.Exited:
		return 2
	case r.Kind == RowUnattr || r.Kind == RowOmitted:
		return 1
	}
	return 0
}

// sortRows orders rows by the column of by, reversed when rev: the order
// within the key flips, not where a device's unlisted processes, the
// unattributed memory, the exited processes and the rows without a value
// in the column (n/a) go.
func sortRows(rows []Row, by SortMode, rev bool) {
	flip := func(c int) int {
		if rev {
			return -c
		}
		return c
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		// A device whose processes are not listed comes after them all.
		if ua, ub := a.Kind == RowUnlisted, b.Kind == RowUnlisted; ua != ub {
			return !ua
		}
		if by == SortMem {
			// Unattributed memory competes with the processes by size: it
			// is often the answer to "who is using my GPU?".
			ae, be := a.Kind == RowProc && a.Proc.Exited, b.Kind == RowProc && b.Proc.Exited
			if ae != be {
				return !ae
			}
			if !ae && a.HasBytes != b.HasBytes {
				return a.HasBytes
			}
			if ae && a.Proc.PeakBytes != b.Proc.PeakBytes {
				return flip(cmp.Compare(b.Proc.PeakBytes, a.Proc.PeakBytes)) < 0
			}
			if a.Bytes != b.Bytes {
				return flip(cmp.Compare(b.Bytes, a.Bytes)) < 0
			}
			return a.Proc.PID < b.Proc.PID
		}
		if ra, rb := a.rank(), b.rank(); ra != rb {
			return ra < rb
		}
		valid := by >= 0 && by < NSortModes
		if valid && sortHas[by] != nil {
			if ha, hb := sortHas[by](a), sortHas[by](b); ha != hb {
				return ha
			}
		}
		// c < 0: a first in the column's own order.
		c := 0
		if valid && sortOrders[by] != nil {
			c = sortOrders[by](a, b)
		}
		if c != 0 {
			return flip(c) < 0
		}
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Proc.PID < b.Proc.PID
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

// CompareIDs orders device IDs as people count them: "2" before "10",
// "0/2" before "0/10", "node-a:3" before "node-a:12".
func CompareIDs(a, b string) int {
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
func userOf(r Row) string {
	name := r.Proc.User
	switch {
	case r.Kind == RowUnattr:
		name = "(unattributed)"
	case r.Kind == RowOmitted:
		name = "(not exported)"
	case !r.Proc.Visible && name == "":
		name = "(other namespace)"
	case name == "":
		name = "(unknown)"
	}
	return name
}

// jobOf names a row's group in the table by job.
func jobOf(r Row) string {
	switch n := r.Proc.Job.Name(); {
	case r.Kind == RowUnattr:
		return "(unattributed)"
	case r.Kind == RowOmitted:
		return "(not exported)"
	case n == "":
		return "(no job)"
	default:
		return n
	}
}

// groupRows sums live memory per group (named by nameOf) across the GPUs.
func groupRows(rows []Row, snap sampler.Snapshot, nameOf func(Row) string) []Row {
	var total uint64
	for _, d := range snap.Devices {
		total += d.MemoryTotal
	}
	type acc struct {
		row  Row
		gpus map[string]bool
		top  uint64
	}
	by := map[string]*acc{}
	var order []string
	for _, r := range rows {
		if r.Kind == RowProc && r.Proc.Exited || r.Kind == RowUnlisted {
			continue
		}
		name := nameOf(r)
		a := by[name]
		if a == nil {
			a = &acc{row: Row{Kind: RowUser, User: name, Mine: r.Mine}, gpus: map[string]bool{}}
			by[name] = a
			order = append(order, name)
		}
		a.row.Bytes += r.Bytes
		a.row.HasBytes = a.row.HasBytes || r.HasBytes
		a.row.Peak += r.Proc.PeakBytes
		if r.Kind == RowProc {
			a.row.NProcs++
		}
		a.gpus[r.Dev] = true
		if r.Bytes >= a.top {
			a.top = r.Bytes
			a.row.Top = r.Proc.Command
			switch r.Kind {
			case RowUnattr:
				a.row.Top = "other containers, driver, leaked contexts"
			case RowOmitted:
				a.row.Top = draw.OmittedText(r.Omitted)
			}
		}
	}
	out := rows[:0]
	for _, n := range order {
		a := by[n]
		a.row.NGPUs = len(a.gpus)
		a.row.Pct = draw.Percent(a.row.Bytes, total)
		out = append(out, a.row)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].User < out[j].User
	})
	return out
}

// Table is the process table: every process on the shown GPUs, or the
// memory per user. It owns its keys: moving (when focused), and sorting,
// filtering, mine-only, grouping and the kill request (whichever pane has
// the focus: they act on this table).
type Table struct {
	ctx     *common.Context
	out     *common.Outbox
	width   int
	height  int
	focused bool

	snap sampler.Snapshot
	all  []Row // from the snapshot
	rows []Row // filtered, sorted (or grouped) rows on screen

	sel, off int
	selKey   string
	sortBy   SortMode
	sortRev  bool // the sort reversed (I)
	// picking: the sort picker (F6) is open, on pick.
	picking  bool
	pick     SortMode
	filter   string
	input    lineInput
	mineOnly bool
	group    GroupMode
}

// New returns the table, empty until the first snapshot; whose processes
// are "mine" is ctx.User.
func New(ctx *common.Context, out *common.Outbox) *Table {
	p := &Table{ctx: ctx, out: out, input: lineInput{prompt: "/", hint: "user, command, container or PID", limit: 64}}
	p.restyle()
	return p
}

func (p *Table) restyle() {
	p.input.cursor, p.input.dim = p.ctx.Styles.Selected, p.ctx.Styles.Dim
}

// Peek is what the table shows: its rows on screen in order (filtered,
// sorted or grouped) and those of the snapshot, the selection and the
// first row on screen, the sort, the grouping, the filter, whether the
// filter's input or the sort picker is open, and its width.
type Peek struct {
	Rows, All          []Row
	Sel, Off           int
	SortBy             SortMode
	SortRev            bool
	Group              GroupMode
	Filter             string
	Filtering, Picking bool
	Width              int
}

// Peek says what the table shows.
func (p *Table) Peek() Peek {
	return Peek{Rows: slices.Clone(p.rows), All: slices.Clone(p.all), Sel: p.sel, Off: p.off, SortBy: p.sortBy, SortRev: p.sortRev,
		Group: p.group, Filter: p.filter, Filtering: p.input.Focused(), Picking: p.picking, Width: p.width}
}

// Line is r as the table lays it out at its width.
func (p *Table) Line(r Row) string {
	return layoutColumns(procColumns, p.all, p.width).line(r)
}

// SetSize sets the pane's size, its column header included.
func (p *Table) SetSize(w, h int) {
	p.width, p.height = w, h
	p.scroll()
}

// Bindings are the keys that act on the table whichever pane is focused.
func (p *Table) Bindings() []key.Binding {
	return []key.Binding{p.ctx.Keys.Sort, p.ctx.Keys.Filter, p.ctx.Keys.Mine, p.ctx.Keys.Group, p.ctx.Keys.Kill,
		p.ctx.Keys.SortPick, p.ctx.Keys.Reverse, p.ctx.Keys.SortLeft, p.ctx.Keys.SortRight, p.ctx.Keys.Signal}
}

// Capturing reports whether the filter input or the sort picker takes
// every key.
func (p *Table) Capturing() bool { return p.input.Focused() || p.picking }

// sortable are the sorts of the columns on screen, left to right.
func (p *Table) sortable() []SortMode {
	var out []SortMode
	for _, c := range layoutColumns(procColumns, p.all, p.width).cols {
		if c.sort != noSort {
			out = append(out, c.sort)
		}
	}
	return out
}

// setSort sorts by mode; the same column again reverses the order.
func (p *Table) setSort(mode SortMode, toggle bool) {
	if toggle && mode == p.sortBy {
		p.sortRev = !p.sortRev
	} else {
		p.sortBy, p.sortRev = mode, false
	}
	p.group = GroupNone
	p.refresh()
	p.out.Status(false, "processes sorted by %s", p.sortText())
}

// sortText names the sort and its direction: "PID, reversed".
func (p *Table) sortText() string {
	if p.sortRev {
		return p.sortBy.String() + ", reversed"
	}
	return p.sortBy.String()
}

// stepSort is the sortable column left (d < 0) or right of the sort's.
func (p *Table) stepSort(d int) SortMode {
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
func (p *Table) PickerView() string {
	if !p.picking {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.ctx.Styles.Title.Render("sort by "))
	for _, mode := range p.sortable() {
		t := mode.String()
		if mode == p.pick {
			b.WriteString(p.ctx.Styles.Selected.Render("[" + t + "]"))
		} else {
			b.WriteString(" " + t + " ")
		}
	}
	b.WriteString(p.ctx.Styles.Dim.Render("  ←/→ enter esc"))
	return draw.Fit(b.String(), p.width)
}

func (p *Table) onPickKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case k.String() == "ctrl+c":
		return tea.Quit
	case k.String() == "enter":
		p.picking = false
		p.setSort(p.pick, false)
	case key.Matches(k, p.ctx.Keys.Back, p.ctx.Keys.SortPick):
		p.picking = false
	case key.Matches(k, p.ctx.Keys.Prev, p.ctx.Keys.SortLeft):
		p.pick = p.stepSort(-1)
	case key.Matches(k, p.ctx.Keys.Next, p.ctx.Keys.SortRight):
		p.pick = p.stepSort(1)
	}
	return nil
}

// FilterView is the filter input for the footer while it is open; "" when
// it is not.
func (p *Table) FilterView() string {
	if !p.input.Focused() {
		return ""
	}
	return p.input.View()
}

// State is the table's state for the footer: "sort MEM · mine only".
func (p *Table) State() []string {
	var state []string
	if p.group != GroupNone {
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
func (p *Table) Back() bool {
	switch {
	case p.filter != "":
		p.setFilter("")
	case p.group != GroupNone:
		p.group = GroupNone
		p.refresh()
	default:
		return false
	}
	return true
}

// MinWidth is the narrowest the table fits its rows (from its columns).
func (p *Table) MinWidth() int { return procColumns.minWidth(p.all) }

// Wants is the height that shows every row under the column header.
func (p *Table) Wants() int { return 1 + max(len(p.rows), 1) }

// setSnapshot rebuilds the rows from the devices shown.
func (p *Table) setSnapshot(snap sampler.Snapshot) {
	p.snap = snap
	p.all = Rows(snap, p.ctx.User, p.all[:0])
	p.refresh()
}

// refresh applies the filter, the mine-only switch, the sort or the grouping.
func (p *Table) refresh() {
	p.rows = p.rows[:0]
	f := strings.ToLower(p.filter)
	for _, r := range p.all {
		if p.mineOnly && !r.Mine {
			continue
		}
		if f != "" && !r.matches(f) {
			continue
		}
		p.rows = append(p.rows, r)
	}
	switch p.group {
	case GroupUser:
		p.rows = groupRows(p.rows, p.snap, userOf)
	case GroupJob:
		p.rows = groupRows(p.rows, p.snap, jobOf)
	default:
		sortRows(p.rows, p.sortBy, p.sortRev)
	}
	p.reselect()
}

func (p *Table) setFilter(v string) {
	p.filter = v
	p.input.SetValue(v)
	p.refresh()
}

// reselect keeps the selected row selected across refreshes.
func (p *Table) reselect() {
	if p.selKey != "" {
		for i, r := range p.rows {
			if r.Key() == p.selKey {
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

func (p *Table) remember() {
	if p.sel >= 0 && p.sel < len(p.rows) {
		p.selKey = p.rows[p.sel].Key()
	} else {
		p.selKey = ""
	}
}

// visibleRows is how many rows fit under the column header.
func (p *Table) visibleRows() int {
	return max(p.height-1, 0)
}

// scroll moves the window so the selected row shows.
func (p *Table) scroll() {
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

func (p *Table) move(d int) {
	if len(p.rows) == 0 {
		return
	}
	p.sel = draw.Clamp(p.sel+d, 0, len(p.rows)-1)
	p.remember()
	p.scroll()
}

// Update takes the devices shown (common.Shown), the focus, the table's
// keys, the filter's input and the mouse wheel.
func (p *Table) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Shown:
		p.setSnapshot(msg.Snap)
	case common.Focus:
		p.focused = bool(msg)
	case common.Restyled:
		p.restyle()
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

func (p *Table) onKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, p.ctx.Keys.Sort):
		// The next sort whose column is on screen.
		for {
			p.sortBy = (p.sortBy + 1) % NSortModes
			if p.sortBy == SortMem || procColumns.sorts(p.sortBy, p.all, p.width) {
				break
			}
		}
		p.sortRev = false
		p.refresh()
		p.out.Status(false, "processes sorted by %s", p.sortText())
	case key.Matches(k, p.ctx.Keys.Reverse):
		p.setSort(p.sortBy, true)
	case key.Matches(k, p.ctx.Keys.SortLeft, p.ctx.Keys.SortRight):
		d := 1
		if key.Matches(k, p.ctx.Keys.SortLeft) {
			d = -1
		}
		p.pick = p.sortBy
		p.setSort(p.stepSort(d), false)
	case key.Matches(k, p.ctx.Keys.SortPick):
		p.picking, p.pick = true, p.sortBy
	case key.Matches(k, p.ctx.Keys.Filter):
		p.input.SetValue(p.filter)
		p.input.Focus()
	case key.Matches(k, p.ctx.Keys.Mine):
		p.mineOnly = !p.mineOnly
		p.refresh()
	case key.Matches(k, p.ctx.Keys.Group):
		// By user, then by job where processes have one, then neither.
		p.group = (p.group + 1) % 3
		if p.group == GroupJob && !anyJob(p.all) {
			p.group = GroupNone
		}
		// Another list: shown from its top, not at the old one's scroll.
		p.sel, p.off, p.selKey = 0, 0, ""
		p.refresh()
	case key.Matches(k, p.ctx.Keys.Kill, p.ctx.Keys.Signal):
		if r, ok := p.Selected(); ok && p.focused {
			p.out.Post(common.Signal{Dev: r.Dev, Proc: r.Proc, Process: r.Kind == RowProc, List: key.Matches(k, p.ctx.Keys.Signal)})
		} else {
			p.out.Status(true, "select a process first (tab to the process list)")
		}
	case !p.focused:
	case key.Matches(k, p.ctx.Keys.Enter):
		p.enter()
	default:
		page := max(p.visibleRows()-1, 1)
		switch {
		case key.Matches(k, p.ctx.Keys.Up):
			p.move(-1)
		case key.Matches(k, p.ctx.Keys.Down):
			p.move(1)
		case key.Matches(k, p.ctx.Keys.PageUp):
			p.move(-page)
		case key.Matches(k, p.ctx.Keys.PageDown):
			p.move(page)
		case key.Matches(k, p.ctx.Keys.Top):
			p.move(-len(p.rows))
		case key.Matches(k, p.ctx.Keys.Bottom):
			p.move(len(p.rows))
		}
	}
	return nil
}

// Click acts on a click at column x of the pane's line y: the column header
// sorts by the column clicked (the same one again reverses), a row is
// selected. It reports whether a row was.
func (p *Table) Click(x, y int) bool {
	if y == 0 {
		if p.group != GroupNone {
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
func (p *Table) enter() {
	r, ok := p.Selected()
	if !ok {
		return
	}
	switch r.Kind {
	case RowUser:
		p.group = GroupNone
		p.setFilter(r.User)
	case RowUnattr, RowUnlisted, RowOmitted:
		p.out.Post(common.OpenDetail{Dev: r.Dev})
	default:
		p.out.Post(common.OpenDetail{Dev: r.Dev, PID: r.Proc.PID, Start: r.Proc.StartTime.UnixNano()})
	}
}

func (p *Table) onFilterKey(k tea.KeyPressMsg) tea.Cmd {
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

func (p *Table) applyInput() {
	if v := p.input.Value(); v != p.filter {
		p.filter = v
		p.refresh()
	}
}

// Selected returns the selected row.
func (p *Table) Selected() (Row, bool) {
	if p.sel < 0 || p.sel >= len(p.rows) {
		return Row{}, false
	}
	return p.rows[p.sel], true
}

// table is the column table on screen.
func (p *Table) table() []procColumn {
	switch p.group {
	case GroupUser:
		return userColumns
	case GroupJob:
		return jobColumns
	}
	return procColumns
}

// View renders the column header and the visible rows.
func (p *Table) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	cols := p.table()
	lay := layoutColumns(cols, p.all, p.width)
	var b strings.Builder
	b.Grow(p.width * p.height * 2)
	sortBy := p.sortBy
	if p.group != GroupNone {
		sortBy = SortMem // groups are always by memory
	}
	b.WriteString(p.ctx.Styles.PColHeader.On(draw.Fit(lay.header(sortBy, p.sortRev && p.group == GroupNone), p.width)))
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
		b.WriteString(p.ctx.Styles.PDim.On(draw.Fit("  "+msg, p.width)))
	}
	for i := p.off; i < len(p.rows) && i < p.off+n; i++ {
		b.WriteString("\n")
		r := p.rows[i]
		line := draw.Fit(lay.line(r), p.width)
		switch {
		case i == p.sel && p.focused:
			line = p.ctx.Styles.PSelected.On(line)
		case r.Kind == RowUnattr || r.Kind == RowOmitted:
			line = p.ctx.Styles.PUnattr.On(line)
		case r.Kind == RowUnlisted:
			line = p.ctx.Styles.PDim.On(line)
		case r.Kind == RowProc && r.Proc.Exited:
			line = p.ctx.Styles.PExited.On(line)
		case r.Mine:
			line = p.ctx.Styles.PMine.On(line)
		case r.Kind == RowProc || r.Kind == RowUser:
			line = p.ctx.Styles.POthers.On(line)
		}
		if i == p.sel && !p.focused {
			line = p.ctx.Styles.PCursor.On(line)
		}
		b.WriteString(line)
	}
	return b.String()
}

// CommandCell is a process's COMMAND column, in the live view and the
// table alike: its command line, with its container in front, or what is
// known of a process in another PID namespace.
func CommandCell(pr sampler.Process) string {
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
