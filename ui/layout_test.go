package ui

import (
	"strings"
	"testing"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/vramtop/vramtop/ui/procs"
)

// At exactly its minimum size the view cuts nothing of the process table's
// fixed columns and shows minLastWidth cells of each command; one column
// less says the terminal is too small. The minimum comes from the column
// table, so a layout that changes the columns or their spacing without it
// fails here.
func TestMinimumSizeCutsNothing(t *testing.T) {
	snap := fakeSnap(t, 4)
	m, _ := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: 200, Height: 50}, snapshotMsg(snap))
	w, h := m.minSize()
	send(m, tea.WindowSizeMsg{Width: w, Height: h})
	s := screenText(m)
	if strings.Contains(s, "too small") {
		t.Fatalf("%d×%d is the minimum but says too small:\n%s", w, h, s)
	}
	checkFits(t, m, w, h)
	lines := strings.Split(s, "\n")
	head := -1
	for i, l := range lines {
		if strings.Contains(l, "PID") && strings.Contains(l, "COMMAND") {
			head = i
		}
	}
	if head < 0 {
		t.Fatalf("no process header at %d×%d:\n%s", w, h, s)
	}
	for _, title := range []string{"GPU", "PID", "USER", "MEM▼", "%", "PEAK", "AGE", "COMMAND"} {
		if !strings.Contains(lines[head], title) {
			t.Errorf("the header lacks %q at the minimum width: %q", title, lines[head])
		}
	}
	at := utf8.RuneCountInString(lines[head][:strings.Index(lines[head], "COMMAND")])
	if got := utf8.RuneCountInString(lines[head]) - at; got != procs.MinLastWidth {
		t.Errorf("the command column is %d wide at the minimum width, want %d: %q", got, procs.MinLastWidth, lines[head])
	}
	rows, checked := 0, 0
	for _, l := range lines[head+1 : len(lines)-1] {
		if strings.TrimSpace(l) != "" {
			rows++
		}
		for _, r := range procsPeek(m).Rows {
			if r.Kind != procs.RowProc || !strings.Contains(l, " "+r.Proc.User+" ") || r.Proc.User == "" {
				continue
			}
			checked++
			cmd := []rune(procs.CommandCell(r.Proc))
			if want := string(cmd[:min(len(cmd), procs.MinLastWidth-1)]); !strings.Contains(l, want) {
				t.Errorf("row %q cuts its command below %d cells (want %q)", l, procs.MinLastWidth-1, want)
			}
			break
		}
	}
	if rows != minProcRows || checked == 0 {
		t.Errorf("%d rows (%d of processes) at the minimum size, want %d:\n%s", rows, checked, minProcRows, s)
	}
	send(m, tea.WindowSizeMsg{Width: w - 1, Height: h})
	if !strings.Contains(screenText(m), "too small") {
		t.Errorf("%d×%d is under the minimum and should say so:\n%s", w-1, h, screenText(m))
	}
	send(m, tea.WindowSizeMsg{Width: w, Height: h - 1})
	if !strings.Contains(screenText(m), "too small") {
		t.Errorf("%d×%d is under the minimum and should say so", w, h-1)
	}
}
