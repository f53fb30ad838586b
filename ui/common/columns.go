package common

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// ColumnRow is a column of the process table and what it holds.
type ColumnRow struct{ Name, Holds string }

// ColumnTable is what the process table's columns hold, as the help screen
// says it (the README's legend is made from it). The columns that name
// themselves (GPU, PID, USER, COMMAND) are not in it.
func ColumnTable() []ColumnRow {
	return []ColumnRow{
		{"MEM", "the process's GPU memory"},
		{"GMEM%", "its share of its GPU's memory"},
		{"GPU%", "its SM utilization (nvtop's GPU%, nvitop's %SM)"},
		{"PEAK", "the most it held"},
		{"CPU%", "its host CPU (100 = one core)"},
		{"RSS", "its host memory"},
		{"AGE", "since it started"},
		{"JOB", "the Slurm job, pod or container, where there is one"},
	}
}

// SortMarks says what the sort column's marks mean.
const SortMarks = "▼ the sort column, ▲ reversed (I)"

// ColumnLegend is the help screen's legend of the columns: each column and
// what it holds, then the sort marks, as lines of at most width cells that
// break between entries, so that no entry is split (a "(I)" or a column's
// name left alone on a line) unless it is wider than a line by itself.
func ColumnLegend(width int) string {
	var parts []string
	for _, c := range ColumnTable() {
		parts = append(parts, c.Name+" "+c.Holds)
	}
	parts = append(parts, SortMarks)
	const sep = " · "
	var b strings.Builder
	line := 0
	for i, p := range parts {
		w := ansi.StringWidth(p)
		switch {
		case i == 0:
		case line+ansi.StringWidth(sep)+w > width:
			b.WriteString("\n")
			line = 0
		default:
			b.WriteString(sep)
			line += ansi.StringWidth(sep)
		}
		b.WriteString(p)
		line += w
	}
	return b.String()
}
