package procs

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// RenderTable is one snapshot as a plain table (vramtop --once): the
// devices, then the processes, then the alerts, with styles; the writer
// strips what the output cannot show.
func RenderTable(st common.Styles, snap sampler.Snapshot, th advisor.Thresholds) string {
	var b strings.Builder
	head := []string{"vramtop"}
	if snap.Hostname != "" {
		head = append(head, snap.Hostname)
	}
	if snap.DriverVersion != "" {
		head = append(head, "driver "+snap.DriverVersion)
	}
	if snap.CUDAVersion != "" {
		head = append(head, "CUDA "+snap.CUDAVersion)
	}
	if !snap.Time.IsZero() {
		head = append(head, snap.Time.Format("2006-01-02 15:04:05"))
	}
	if snap.Demo {
		head = append(head, "DEMO")
	}
	b.WriteString(strings.Join(head, " · ") + "\n")
	for _, w := range snap.Warnings {
		b.WriteString(st.Warning.Render("! "+w) + "\n")
	}
	if snap.Err != "" {
		b.WriteString(st.Error.Render("error: "+snap.Err) + "\n")
	}
	b.WriteString("\n")

	fleet := draw.IsFleet(snap)
	devs := [][]string{{"GPU", "NAME", "USED", "TOTAL", "USE%", "RESERVED", "FREE", "UNATTRIB", "UTIL", "TEMP", "POWER"}}
	if fleet {
		devs[0] = append([]string{"HOST"}, devs[0]...)
	}
	var devStyle []func(string) string
	// The advisor's severity, as on the live view's rows.
	alerts := advisor.NewMonitor(advisor.Config{Thresholds: th}).Observe(snap)
	sevs := draw.NewSevIndex(alerts)
	for _, d := range snap.Devices {
		pct := draw.Pct(d.UsedPercent())
		if d.MemoryTotal == 0 {
			pct = draw.NA
		}
		row := []string{draw.DeviceLabel(d), draw.ShortName(d.Name), draw.Bytes(d.MemoryUsed), draw.Bytes(d.MemoryTotal), pct,
			draw.OptBytes(d.MemoryReserved), draw.Bytes(d.MemoryFree), draw.OptBytes(d.Unattributed),
			draw.OptPct(d.UtilizationPercent), draw.Temp(d.TemperatureC), draw.Power(d.PowerWatts)}
		if d.MemoryTotal == 0 && d.Err != "" {
			for i := 2; i < len(row); i++ {
				row[i] = draw.NA
			}
		}
		if fleet {
			row = append([]string{d.Hostname}, row...)
		}
		if d.Err != "" {
			row = append(row, "error: "+d.Err)
		}
		devs = append(devs, row)
		// Only a GPU past a threshold is coloured.
		if sev := sevs.Of(d).Severity; sev > advisor.Info {
			devStyle = append(devStyle, func(s string) string { return st.Severity(sev).Render(s) })
		} else {
			devStyle = append(devStyle, nil)
		}
	}
	writeAligned(&b, devs, map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true}, fleet, st, devStyle)

	rows := Rows(snap, "", nil)
	cols := procColumns.shown(rows, formFull)
	procs := [][]string{cols.titles()}
	var procStyle []func(string) string
	for _, r := range rows {
		procs = append(procs, cols.cells(r))
		switch {
		case r.Kind == RowUnlisted:
			// Not "no processes": nobody can tell from here.
			procStyle = append(procStyle, func(s string) string { return st.Dim.Render(s) })
		case r.Kind == RowUnattr || r.Kind == RowOmitted:
			procStyle = append(procStyle, func(s string) string { return st.Unattr.Render(s) })
		case r.Proc.Exited:
			procStyle = append(procStyle, func(s string) string { return st.Exited.Render(s) })
		default:
			procStyle = append(procStyle, nil)
		}
	}
	b.WriteString("\n")
	if len(procs) == 1 {
		b.WriteString("no GPU processes\n")
	} else {
		writeAligned(&b, procs, cols.rightAligned(), false, st, procStyle)
	}
	// The alerts in force, as the alerts screen lists them.
	if len(alerts) > 0 {
		rows := [][]string{{"SEVERITY", "RULE", "GPU", "PID", "MESSAGE"}}
		var styles []func(string) string
		for _, a := range alerts {
			pid := ""
			if a.PID != 0 {
				pid = strconv.FormatUint(uint64(a.PID), 10)
			}
			gpu := a.DeviceID
			if d, ok := snap.Device(a.DeviceID); ok {
				gpu = draw.ProcDeviceLabel(d, fleet)
			}
			rows = append(rows, []string{strings.ToUpper(a.Severity.String()), a.Rule, gpu, pid, a.Message})
			sev := a.Severity
			styles = append(styles, func(s string) string { return st.Severity(sev).Render(s) })
		}
		b.WriteString("\n")
		writeAligned(&b, rows, map[int]bool{3: true}, false, st, styles)
	}
	return b.String()
}

// writeAligned writes rows in columns two spaces apart; right-aligned
// columns by index (shifted by one when a host column leads). The last
// column is left ragged.
func writeAligned(b *strings.Builder, rows [][]string, right map[int]bool, shifted bool, st common.Styles, style []func(string) string) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			if w := ansi.StringWidth(c); w > widths[i] {
				widths[i] = w
			}
		}
	}
	for ri, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			idx := i
			if shifted {
				idx--
			}
			switch {
			case i == len(r)-1:
				line.WriteString(c)
			case right[idx]:
				line.WriteString(draw.FitRight(c, widths[i]))
			default:
				line.WriteString(draw.Fit(c, widths[i]))
			}
		}
		s := strings.TrimRight(line.String(), " ")
		switch {
		case ri == 0:
			s = st.ColHeader.Render(s)
		case ri-1 < len(style) && style[ri-1] != nil:
			s = style[ri-1](s)
		}
		fmt.Fprintln(b, s)
	}
}

// procColumn is one column of a process table. The live view and the
// --once table are laid out from the same columns: titles, alignment,
// widths and cells; the live view's minimum size is derived from them too.
type procColumn struct {
	title string
	sort  SortMode // the sort that marks the title with ▼; noSort for none
	right bool
	// width is the column's least width in the live view; short its width
	// in the narrow form (0: the same).
	width, short int
	// grow is the width a row's content wants, for a column that widens
	// to its content up to most (shortMost in the narrow form); nil for a
	// fixed width.
	grow            func(Row) int
	most, shortMost int
	// cell is the row's text; short asks for the narrow form ("61.2G").
	cell func(r Row, short bool) string
	// show says whether the column is shown for rows (nil: always); wide
	// ones are left out of the narrow form.
	show func(rows []Row) bool
	wide bool
	// last: left out only of the narrowest form, after the short sizes.
	last bool
	// order is the column's sort: < 0 puts a first in the column's own
	// order (the largest first for amounts, ascending for names, PIDs and
	// devices). The memory sort is the table's own (sortRows).
	order func(a, b Row) int
	// has reports whether a row has a value to sort by (nil: every row
	// has); those without stay after those with, in either direction.
	has func(Row) bool
}

// columnTable is a table's columns, left to right; the last one takes the
// room left and needs at least minLastWidth of it.
type columnTable []procColumn

const (
	MinLastWidth = 8  // the least of a command the live view shows
	shortBelow   = 24 // the narrow form is used when the last column would get less
	markerWidth  = 2  // "● " marks your processes in the live view
)

// SortMode is a sort of the process table: the column it sorts by. A
// column that sorts adds its mode before NSortModes and says its order in
// procColumns; the sort is named by the column's title.
type SortMode int

const (
	SortMem SortMode = iota
	SortPeak
	SortAge
	SortPID
	SortUser
	SortGPU
	SortCPU
	SortRSS
	SortUtil  // GPU%: the process's SM utilization
	SortShare // GMEM%: the process's share of its GPU's memory
	NSortModes
	noSort SortMode = -1
)

// String is the title of the sort's column, as the table shows it: the
// footer's "sort GPU%" names the column marked GPU%▼.
func (s SortMode) String() string {
	for _, c := range procColumns {
		if c.sort == s {
			return c.title
		}
	}
	return fmt.Sprintf("SortMode(%d)", int(s))
}

// sortOrders are the columns' orders, by their sort; sortHas whether a
// row has a value in the column.
var sortOrders, sortHas = func() (o [NSortModes]func(a, b Row) int, h [NSortModes]func(Row) bool) {
	for _, c := range procColumns {
		if c.sort != noSort {
			o[c.sort], h[c.sort] = c.order, c.has
		}
	}
	return o, h
}()

// procColumns is the process table.
var procColumns = columnTable{
	{title: "GPU", sort: SortGPU, width: 3, grow: func(r Row) int { return len(r.DevLabel) }, most: 24, shortMost: 24,
		cell: func(r Row, _ bool) string { return r.DevLabel }, order: func(a, b Row) int { return CompareIDs(a.Dev, b.Dev) }},
	{title: "PID", sort: SortPID, order: func(a, b Row) int { return cmp.Compare(a.Proc.PID, b.Proc.PID) }, right: true, width: 7, cell: func(r Row, _ bool) string {
		if r.Kind != RowProc {
			return "-"
		}
		return strconv.FormatUint(uint64(r.Proc.PID), 10)
	}},
	{title: "USER", sort: SortUser, order: func(a, b Row) int { return strings.Compare(a.Proc.User, b.Proc.User) }, has: func(r Row) bool { return r.Proc.User != "" }, width: 4, grow: func(r Row) int { return len(r.Proc.User) }, most: 12, shortMost: 8,
		cell: func(r Row, _ bool) string {
			switch {
			case r.Kind != RowProc:
				return "-"
			case r.Proc.User == "":
				return "?"
			}
			return r.Proc.User
		}},
	// JOB: the Slurm job, pod or container, where any process has one.
	{title: "JOB", sort: noSort, width: 3, grow: func(r Row) int { return len(r.Proc.Job.Name()) }, most: 20, wide: true,
		show: anyJob, cell: func(r Row, _ bool) string {
			if r.Kind != RowProc {
				return ""
			}
			return r.Proc.Job.Name()
		}},
	{title: "MEM", sort: SortMem, has: hasBytes, right: true, width: 9, short: 6, cell: func(r Row, short bool) string {
		switch {
		case r.Kind == RowUnlisted:
			return ""
		case r.Kind == RowProc && r.Proc.Exited:
			return "exited"
		case r.HasBytes:
			return sizeCell(r.Bytes, short)
		}
		return draw.NA
	}},
	// GMEM%: the process's share of its GPU's memory (nvtop shows it in
	// its GPU MEM column).
	{title: "GMEM%", sort: SortShare, order: func(a, b Row) int { return cmp.Compare(b.Pct, a.Pct) }, has: hasBytes, right: true, width: 5, cell: pctCell},
	// GPU%: the process's SM utilization, as nvtop's GPU% and nvitop's %SM.
	{title: "GPU%", sort: SortUtil, order: func(a, b Row) int { return -compareOpt(a.Proc.UtilizationPercent, b.Proc.UtilizationPercent) }, has: func(r Row) bool { return r.Proc.UtilizationPercent != nil }, right: true, width: 4, last: true, show: anyUtil, cell: func(r Row, _ bool) string {
		switch {
		case r.Kind != RowProc || r.Proc.Exited:
			return ""
		case r.Proc.UtilizationPercent == nil:
			return draw.NA
		}
		return fmt.Sprintf("%.0f%%", *r.Proc.UtilizationPercent)
	}},
	{title: "PEAK", sort: SortPeak, order: func(a, b Row) int { return cmp.Compare(b.Proc.PeakBytes, a.Proc.PeakBytes) }, has: func(r Row) bool { return r.Proc.PeakBytes > 0 }, right: true, width: 9, short: 6, cell: func(r Row, short bool) string {
		if r.Kind != RowProc || r.Proc.PeakBytes == 0 {
			return ""
		}
		return sizeCell(r.Proc.PeakBytes, short)
	}},
	// CPU% and RSS: the process's host CPU (100 = one core) and resident
	// host memory.
	{title: "CPU%", sort: SortCPU, order: func(a, b Row) int { return -compareOpt(a.Proc.CPUPercent, b.Proc.CPUPercent) }, has: func(r Row) bool { return r.Proc.CPUPercent != nil }, right: true, width: 5, wide: true, show: anyCPU, cell: func(r Row, _ bool) string {
		switch {
		case r.Kind != RowProc || r.Proc.Exited:
			return ""
		case r.Proc.CPUPercent == nil:
			return draw.NA
		}
		return fmt.Sprintf("%.0f", *r.Proc.CPUPercent)
	}},
	{title: "RSS", sort: SortRSS, order: func(a, b Row) int { return -compareOpt(a.Proc.HostMemoryBytes, b.Proc.HostMemoryBytes) }, has: func(r Row) bool { return r.Proc.HostMemoryBytes != nil }, right: true, width: 9, wide: true, show: anyRSS, cell: func(r Row, _ bool) string {
		switch {
		case r.Kind != RowProc || r.Proc.Exited:
			return ""
		case r.Proc.HostMemoryBytes == nil:
			return draw.NA
		}
		return draw.Bytes(*r.Proc.HostMemoryBytes)
	}},
	{title: "AGE", sort: SortAge, order: func(a, b Row) int { return cmp.Compare(b.Age, a.Age) }, has: func(r Row) bool { return r.HasAge }, right: true, width: 6, cell: func(r Row, _ bool) string {
		switch {
		case r.Kind != RowProc:
			return ""
		case !r.HasAge:
			return draw.NA
		}
		return draw.Age(r.Age)
	}},
	{title: "COMMAND", sort: noSort, cell: func(r Row, _ bool) string {
		switch r.Kind {
		case RowUnlisted:
			return r.unlistedText()
		case RowUnattr:
			return "unattributed: other containers/namespaces, driver, leaked contexts"
		case RowOmitted:
			return draw.OmittedText(r.Omitted)
		}
		return CommandCell(r.Proc)
	}},
}

// userColumns is the table grouped by user.
var userColumns = columnTable{
	{title: "USER", sort: noSort, width: 18, cell: func(r Row, _ bool) string { return r.User }},
	{title: "PROCS", sort: noSort, right: true, width: 5, cell: func(r Row, _ bool) string { return strconv.Itoa(r.NProcs) }},
	{title: "GPUS", sort: noSort, right: true, width: 4, cell: func(r Row, _ bool) string { return strconv.Itoa(r.NGPUs) }},
	{title: "MEM", sort: SortMem, right: true, width: 9, short: 6, cell: func(r Row, short bool) string {
		if !r.HasBytes {
			return draw.NA
		}
		return sizeCell(r.Bytes, short)
	}},
	// %ALL: of all the GPUs shown.
	{title: "%ALL", sort: noSort, right: true, width: 4, cell: pctCell},
	{title: "PEAK", sort: noSort, right: true, width: 9, short: 6, cell: func(r Row, short bool) string {
		if r.Peak == 0 {
			return ""
		}
		return sizeCell(r.Peak, short)
	}},
	{title: "BIGGEST", sort: noSort, cell: func(r Row, _ bool) string { return r.Top }},
}

// jobColumns is the table grouped by job: userColumns under another title.
var jobColumns = append(columnTable{{title: "JOB", sort: noSort, width: 18, cell: userColumns[0].cell}}, userColumns[1:]...)

// anyJob reports whether a process of rows belongs to a job.
func anyJob(rows []Row) bool {
	for _, r := range rows {
		if r.Proc.Job.Name() != "" {
			return true
		}
	}
	return false
}

// anyCPU and anyRSS report whether the source measured a process's host
// CPU or memory: a source that does not (a recording of an older vramtop)
// gets no column of n/a.
func anyCPU(rows []Row) bool {
	for _, r := range rows {
		if r.Proc.CPUPercent != nil {
			return true
		}
	}
	return false
}

// anyUtil reports whether the source measured a process's utilization.
func anyUtil(rows []Row) bool {
	for _, r := range rows {
		if r.Proc.UtilizationPercent != nil {
			return true
		}
	}
	return false
}

func anyRSS(rows []Row) bool {
	for _, r := range rows {
		if r.Proc.HostMemoryBytes != nil {
			return true
		}
	}
	return false
}

// sorts reports whether the table shown for rows at width has the column
// of mode.
func (t columnTable) sorts(mode SortMode, rows []Row, width int) bool {
	for _, c := range layoutColumns(t, rows, width).cols {
		if c.sort == mode {
			return true
		}
	}
	return false
}

// The forms of a table, widest first.
const (
	formFull      = iota // every column
	formNarrow           // without the wide columns
	formShort            // and short sizes
	formNarrowest        // and without the last ones
)

// shown is the table's columns shown for rows in a form.
func (t columnTable) shown(rows []Row, form int) columnTable {
	out := make(columnTable, 0, len(t))
	for _, c := range t {
		if c.show != nil && !c.show(rows) || form >= formNarrow && c.wide || form >= formNarrowest && c.last {
			continue
		}
		out = append(out, c)
	}
	return out
}

func hasBytes(r Row) bool { return r.HasBytes }

func pctCell(r Row, _ bool) string {
	if !r.HasBytes {
		return ""
	}
	return draw.Pct(r.Pct)
}

func sizeCell(b uint64, short bool) string {
	if short {
		return draw.BytesShort(b)
	}
	return draw.Bytes(b)
}

// titles are the column titles of the --once table (the table of its
// rows: t.shown(rows, false)).
func (t columnTable) titles() []string {
	out := make([]string, len(t))
	for i, c := range t {
		out[i] = c.title
	}
	return out
}

// cells are a row of the --once table.
func (t columnTable) cells(r Row) []string {
	out := make([]string, len(t))
	for i, c := range t {
		out[i] = c.cell(r, false)
	}
	return out
}

func (t columnTable) rightAligned() map[int]bool {
	out := map[int]bool{}
	for i, c := range t {
		if c.right {
			out[i] = true
		}
	}
	return out
}

// tableLayout is a table laid out at a width.
type tableLayout struct {
	cols   columnTable
	widths []int
	short  bool
}

// fixedWidth is the width of the marker, every column but the last and the
// spaces between all of them.
func (l tableLayout) fixedWidth() int {
	w := markerWidth
	for _, x := range l.widths[:len(l.widths)-1] {
		w += x + 1
	}
	return w
}

// widen sets the widths for the narrow form or not.
func (l *tableLayout) widen(rows []Row, short bool) {
	l.short = short
	for i, c := range l.cols {
		w := c.width
		if short && c.short > 0 {
			w = c.short
		}
		// Room for the title and the sort's ▼.
		if c.sort != noSort {
			w = max(w, common.CellWidth(c.title)+1)
		}
		if c.grow != nil {
			most := c.most
			if short {
				most = c.shortMost
			}
			for _, r := range rows {
				w = max(w, c.grow(r))
			}
			w = min(w, most)
		}
		l.widths[i] = w
	}
}

// layoutColumns lays the table out at width for rows: where the last
// column would get less than shortBelow, without the wide columns, then in
// the narrow form (short sizes) too.
func layoutColumns(cols columnTable, rows []Row, width int) tableLayout {
	var l tableLayout
	// Every column; then without the wide ones; then short sizes too;
	// then without the last ones.
	for form := formFull; form <= formNarrowest; form++ {
		t := cols.shown(rows, form)
		l = tableLayout{cols: t, widths: make([]int, len(t))}
		l.widen(rows, form >= formShort)
		if width-l.fixedWidth() >= shortBelow {
			break
		}
	}
	l.widths[len(l.widths)-1] = max(width-l.fixedWidth(), 0)
	return l
}

// minWidth is the narrowest the table fits for rows: its narrow form and
// minLastWidth of the last column.
func (t columnTable) minWidth(rows []Row) int {
	n := t.shown(rows, formNarrowest)
	l := tableLayout{cols: n, widths: make([]int, len(n))}
	l.widen(rows, true)
	return l.fixedWidth() + MinLastWidth
}

// header is the title line; the column of sortBy has its ▼ (▲ reversed).
func (l tableLayout) header(sortBy SortMode, rev bool) string {
	var b strings.Builder
	b.Grow(l.width() + 16)
	b.WriteString(strings.Repeat(" ", markerWidth))
	for i, c := range l.cols {
		t := c.title
		if c.sort == sortBy && sortBy != noSort {
			if rev {
				t += "▲"
			} else {
				t += "▼"
			}
		}
		l.writeCell(&b, i, t)
	}
	return b.String()
}

// columnAt is the column under screen column x (0: the line's first).
func (l tableLayout) columnAt(x int) (procColumn, bool) {
	at := markerWidth
	for i, w := range l.widths {
		if x >= at && x < at+w+1 {
			return l.cols[i], true
		}
		at += w + 1
	}
	return procColumn{}, false
}

// width is the table's width: marker, columns and the spaces between.
func (l tableLayout) width() int {
	return l.fixedWidth() + l.widths[len(l.widths)-1]
}

// line is a row.
func (l tableLayout) line(r Row) string {
	var b strings.Builder
	b.Grow(l.width() + 16) // one allocation: cells are mostly ASCII
	if r.Mine {
		b.WriteString("● ")
	} else {
		b.WriteString(strings.Repeat(" ", markerWidth))
	}
	for i, c := range l.cols {
		if r.Kind == RowUnlisted && i == 1 {
			// A device whose processes are not listed has no figures: its
			// note takes the empty columns rather than be cut.
			b.WriteByte(' ')
			b.WriteString(draw.Fit(l.cols[len(l.cols)-1].cell(r, l.short), l.width()-common.CellWidth(b.String())))
			break
		}
		l.writeCell(&b, i, c.cell(r, l.short))
	}
	return b.String()
}

func (l tableLayout) writeCell(b *strings.Builder, i int, s string) {
	if i > 0 {
		b.WriteByte(' ')
	}
	if l.cols[i].right {
		b.WriteString(draw.FitRight(s, l.widths[i]))
	} else {
		b.WriteString(draw.Fit(s, l.widths[i]))
	}
}
