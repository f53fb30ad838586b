package ui

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/sampler"
)

type rowKind int

const (
	rowProc     rowKind = iota
	rowUnattr           // memory no visible process accounts for
	rowUser             // one user's total, in the group-by-user table
	rowUnlisted         // a device whose processes the source cannot list
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
	nSortModes
)

func (s sortMode) String() string {
	return [...]string{"memory", "peak", "age", "pid", "user", "gpu"}[s]
}

// procPane is the process table: every process on the shown GPUs, or the
// memory per user.
type procPane struct {
	st      Styles
	keys    keyMap
	user    string
	width   int
	height  int
	focused bool

	all  []procRow // from the snapshot
	rows []procRow // filtered, sorted (or grouped) rows on screen

	sel, off int
	selKey   string
	sortBy   sortMode
	filter   string
	mineOnly bool
	group    bool
}

func newProcPane(st Styles, keys keyMap, user string) procPane {
	return procPane{st: st, keys: keys, user: user}
}

// SetSize sets the pane's size, its column header included.
func (p *procPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.scroll()
}

// SetSnapshot rebuilds the rows from the devices shown.
func (p *procPane) SetSnapshot(snap sampler.Snapshot) {
	p.all = p.all[:0]
	withHost := severalHosts(snap)
	for _, d := range snap.Devices {
		label := procDeviceLabel(d, withHost)
		if d.NoProcessList {
			p.all = append(p.all, procRow{kind: rowUnlisted, dev: d.ID, devLabel: label})
			continue
		}
		for _, pr := range d.Processes {
			r := procRow{kind: rowProc, dev: d.ID, devLabel: label, proc: pr, mine: p.user != "" && pr.User == p.user}
			if pr.UsedBytes != nil && !pr.Exited {
				r.bytes, r.hasBytes = *pr.UsedBytes, true
				r.pct = percent(r.bytes, d.MemoryTotal)
			}
			switch {
			case !pr.StartTime.IsZero():
				r.age, r.hasAge = snap.Time.Sub(pr.StartTime), true
			case !pr.FirstSeen.IsZero():
				r.age, r.hasAge = snap.Time.Sub(pr.FirstSeen), true
			}
			p.all = append(p.all, r)
		}
		if d.Unattributed != nil && *d.Unattributed >= mib {
			u := *d.Unattributed
			p.all = append(p.all, procRow{kind: rowUnattr, dev: d.ID, devLabel: label, bytes: u, hasBytes: true, pct: percent(u, d.MemoryTotal)})
		}
	}
	p.refresh(snap)
}

// refresh applies the filter, the mine-only switch, the sort or the grouping.
func (p *procPane) refresh(snap sampler.Snapshot) {
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
	if p.group {
		p.rows = groupByUser(p.rows, snap)
	} else {
		sortRows(p.rows, p.sortBy)
	}
	p.reselect()
}

func (r procRow) matches(f string) bool {
	switch r.kind {
	case rowUnattr:
		return strings.Contains("unattributed", f)
	case rowUnlisted:
		return strings.Contains(unlistedText, f)
	}
	pr := r.proc
	return strings.Contains(strings.ToLower(pr.User), f) ||
		strings.Contains(strings.ToLower(pr.Command), f) ||
		strings.Contains(strings.ToLower(pr.Container), f) ||
		strings.Contains(strconv.FormatUint(uint64(pr.PID), 10), f)
}

// rank orders live processes, then unattributed memory, then exited ones.
func (r procRow) rank() int {
	switch {
	case r.kind == rowProc && r.proc.Exited:
		return 2
	case r.kind == rowUnattr:
		return 1
	}
	return 0
}

func sortRows(rows []procRow, by sortMode) {
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
			if ae {
				return a.proc.PeakBytes > b.proc.PeakBytes
			}
			if a.bytes != b.bytes {
				return a.bytes > b.bytes
			}
			return a.proc.PID < b.proc.PID
		}
		if ra, rb := a.rank(), b.rank(); ra != rb {
			return ra < rb
		}
		switch by {
		case sortPeak:
			if a.proc.PeakBytes != b.proc.PeakBytes {
				return a.proc.PeakBytes > b.proc.PeakBytes
			}
		case sortAge:
			if a.age != b.age {
				return a.age > b.age
			}
		case sortUser:
			if a.proc.User != b.proc.User {
				return a.proc.User < b.proc.User
			}
		case sortGPU:
			if a.dev != b.dev {
				return a.dev < b.dev
			}
		}
		if a.bytes != b.bytes {
			return a.bytes > b.bytes
		}
		return a.proc.PID < b.proc.PID
	})
}

// groupByUser sums live memory per user across the GPUs.
func groupByUser(rows []procRow, snap sampler.Snapshot) []procRow {
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
		name := r.proc.User
		switch {
		case r.kind == rowUnattr:
			name = "(unattributed)"
		case !r.proc.Visible && name == "":
			name = "(other namespace)"
		case name == "":
			name = "(unknown)"
		}
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
			if r.kind == rowUnattr {
				a.row.top = "other containers, driver, leaked contexts"
			}
		}
	}
	out := rows[:0]
	for _, n := range order {
		a := by[n]
		a.row.ngpus = len(a.gpus)
		a.row.pct = percent(a.row.bytes, total)
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
	p.sel = clamp(p.sel, 0, len(p.rows)-1)
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
	p.off = clamp(p.off, 0, max(len(p.rows)-n, 0))
}

func (p *procPane) move(d int) {
	if len(p.rows) == 0 {
		return
	}
	p.sel = clamp(p.sel+d, 0, len(p.rows)-1)
	p.remember()
	p.scroll()
}

// Update moves the selection (keys when focused, the mouse wheel always).
func (p *procPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		page := max(p.visibleRows()-1, 1)
		switch {
		case key.Matches(msg, p.keys.Up):
			p.move(-1)
		case key.Matches(msg, p.keys.Down):
			p.move(1)
		case key.Matches(msg, p.keys.PageUp):
			p.move(-page)
		case key.Matches(msg, p.keys.PageDown):
			p.move(page)
		case key.Matches(msg, p.keys.Top):
			p.move(-len(p.rows))
		case key.Matches(msg, p.keys.Bottom):
			p.move(len(p.rows))
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			p.move(-3)
		case tea.MouseWheelDown:
			p.move(3)
		}
	}
	return nil
}

// Selected returns the selected row.
func (p *procPane) Selected() (procRow, bool) {
	if p.sel < 0 || p.sel >= len(p.rows) {
		return procRow{}, false
	}
	return p.rows[p.sel], true
}

// columns are the widths of the process table at the pane's width.
type columns struct {
	gpu, pid, user, mem, pct, peak, age, cmd int
	short                                    bool // sizes as "61.2G"
}

func (p *procPane) columns() columns {
	c := columns{gpu: 3, pid: 7, user: 4, mem: 9, pct: 4, peak: 9, age: 6}
	for _, r := range p.all {
		c.gpu = max(c.gpu, len(r.devLabel))
		c.user = max(c.user, len(r.proc.User))
	}
	c.gpu = min(c.gpu, 24) // room for "host:GPU"
	c.user = min(c.user, 12)
	// marker, then eight columns separated by a space.
	fixed := func() int { return 2 + c.gpu + c.pid + c.user + c.mem + c.pct + c.peak + c.age + 7 }
	if p.width-fixed() < 24 {
		c.short = true
		c.mem, c.peak = 6, 6
		c.user = min(c.user, 8)
	}
	c.cmd = max(p.width-fixed(), 0)
	return c
}

// View renders the column header and the visible rows.
func (p procPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	c := p.columns()
	var b strings.Builder
	b.Grow(p.width * p.height * 2)
	if p.group {
		b.WriteString(p.st.pColHeader.on(fit(p.groupHeader(c), p.width)))
	} else {
		b.WriteString(p.st.pColHeader.on(fit(p.header(c), p.width)))
	}
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
		b.WriteString(p.st.pDim.on(fit("  "+msg, p.width)))
	}
	for i := p.off; i < len(p.rows) && i < p.off+n; i++ {
		b.WriteString("\n")
		r := p.rows[i]
		var line string
		if p.group {
			line = p.groupLine(r, c)
		} else {
			line = p.line(r, c)
		}
		line = fit(line, p.width)
		switch {
		case i == p.sel && p.focused:
			line = p.st.pSelected.on(line)
		case r.kind == rowUnattr:
			line = p.st.pUnattr.on(line)
		case r.kind == rowUnlisted:
			line = p.st.pDim.on(line)
		case r.kind == rowProc && r.proc.Exited:
			line = p.st.pExited.on(line)
		case r.mine:
			line = p.st.pMine.on(line)
		case r.kind == rowProc || r.kind == rowUser:
			line = p.st.pOthers.on(line)
		}
		if i == p.sel && !p.focused {
			line = p.st.pCursor.on(line)
		}
		b.WriteString(line)
	}
	return b.String()
}

func (p procPane) header(c columns) string {
	arrow := func(s sortMode, name string) string {
		if p.sortBy == s {
			return name + "▼"
		}
		return name
	}
	return "  " + fit(arrow(sortGPU, "GPU"), c.gpu) + " " + fitRight(arrow(sortPID, "PID"), c.pid) + " " +
		fit(arrow(sortUser, "USER"), c.user) + " " + fitRight(arrow(sortMem, "MEM"), c.mem) + " " +
		fitRight("%", c.pct) + " " + fitRight(arrow(sortPeak, "PEAK"), c.peak) + " " +
		fitRight(arrow(sortAge, "AGE"), c.age) + " " + fit("COMMAND", c.cmd)
}

func (p procPane) size(b uint64, c columns) string {
	if c.short {
		return fmtBytesShort(b)
	}
	return fmtBytes(b)
}

func (p procPane) line(r procRow, c columns) string {
	marker := "  "
	if r.mine {
		marker = "● "
	}
	if r.kind == rowUnlisted {
		return "  " + fit(r.devLabel, c.gpu) + " " + fitRight("-", c.pid) + " " + fit("-", c.user) + " " +
			fitRight("", c.mem) + " " + fitRight("", c.pct) + " " + fitRight("", c.peak) + " " + fitRight("", c.age) + " " +
			fit(unlistedText, c.cmd)
	}
	if r.kind == rowUnattr {
		return "  " + fit(r.devLabel, c.gpu) + " " + fitRight("-", c.pid) + " " + fit("-", c.user) + " " +
			fitRight(p.size(r.bytes, c), c.mem) + " " + fitRight(fmtPct(r.pct), c.pct) + " " +
			fitRight("", c.peak) + " " + fitRight("", c.age) + " " +
			fit("unattributed: other containers/namespaces, driver, leaked contexts", c.cmd)
	}
	pr := r.proc
	user := pr.User
	if user == "" {
		user = "?"
	}
	mem, pct := na, ""
	switch {
	case pr.Exited:
		mem = "exited"
	case r.hasBytes:
		mem, pct = p.size(r.bytes, c), fmtPct(r.pct)
	}
	peak := ""
	if pr.PeakBytes > 0 {
		peak = p.size(pr.PeakBytes, c)
	}
	age := ""
	if r.hasAge {
		age = fmtAge(r.age)
	}
	cmd := commandCell(pr)
	return marker + fit(r.devLabel, c.gpu) + " " + fitRight(strconv.FormatUint(uint64(pr.PID), 10), c.pid) + " " +
		fit(user, c.user) + " " + fitRight(mem, c.mem) + " " + fitRight(pct, c.pct) + " " +
		fitRight(peak, c.peak) + " " + fitRight(age, c.age) + " " + fit(cmd, c.cmd)
}

func (p procPane) groupHeader(c columns) string {
	return "  " + fit("USER", 18) + " " + fitRight("PROCS", 5) + " " + fitRight("GPUS", 4) + " " +
		fitRight("MEM▼", c.mem) + " " + fitRight("%", c.pct) + " " + fitRight("PEAK", c.peak) + " " + "BIGGEST"
}

func (p procPane) groupLine(r procRow, c columns) string {
	marker := "  "
	if r.mine {
		marker = "● "
	}
	peak := ""
	if r.peak > 0 {
		peak = p.size(r.peak, c)
	}
	mem, pct := na, ""
	if r.hasBytes {
		mem, pct = p.size(r.bytes, c), fmtPct(r.pct)
	}
	return marker + fit(r.user, 18) + " " + fitRight(strconv.Itoa(r.nprocs), 5) + " " + fitRight(strconv.Itoa(r.ngpus), 4) + " " +
		fitRight(mem, c.mem) + " " + fitRight(pct, c.pct) + " " + fitRight(peak, c.peak) + " " + r.top
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
