package ui

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/procs"
)

// The function keys of htop, nvtop and nvitop act beside the letters.
func TestFunctionKeys(t *testing.T) {
	m, killed := ready(t, 4, 120, 40)
	keys(m, "f1")
	if !m.helpOpen() || !strings.Contains(screenText(m), "What the marks mean") {
		t.Fatalf("F1 should open the help:\n%s", screenText(m))
	}
	keys(m, "f1")
	if m.helpOpen() {
		t.Fatal("F1 again should close the help")
	}
	keys(m, "f3")
	if !procsPeek(m).Filtering {
		t.Fatal("F3 should open the search (the filter)")
	}
	keys(m, "b", "o", "b", "enter")
	for _, r := range procsPeek(m).Rows {
		if r.Kind == procs.RowProc && r.Proc.User != "bob" {
			t.Fatalf("after F3 bob: %s's PID %d is listed", r.Proc.User, r.Proc.PID)
		}
	}
	keys(m, "esc")

	// F9: a list of signals, SIGTERM first, SIGKILL offered.
	r := selectProc(t, m, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	keys(m, "f9")
	s := screenText(m)
	if !m.prompt.Active() || promptPeek(m).Signal != syscall.SIGTERM || !strings.Contains(s, "send SIGTERM to PID") ||
		!strings.Contains(s, "9 KILL") || strings.Index(s, "15 TERM") > strings.Index(s, "9 KILL") {
		t.Fatalf("F9 should offer the signals, SIGTERM first and chosen, SIGKILL among them:\n%s", s)
	}
	keys(m, "left") // from TERM back round to KILL, the last
	if !strings.Contains(screenText(m), "send SIGKILL to PID") {
		t.Fatalf("the prompt should say the signal chosen:\n%s", screenText(m))
	}
	keys(m, "enter")
	if want := fmt.Sprintf("%d:SIGKILL", r.Proc.PID); len(*killed) != 1 || (*killed)[0] != want {
		t.Fatalf("killed %v, want %s", *killed, want)
	}
	keys(m, "f9", "2", "y")
	if want := fmt.Sprintf("%d:SIGINT", r.Proc.PID); len(*killed) != 2 || (*killed)[1] != want {
		t.Fatalf("killed %v, want %s", *killed, want)
	}

	if cmd := keys(m, "f10"); !isQuit(cmd) {
		t.Error("F10 should quit")
	}
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if isQuit(c) {
				return true
			}
		}
	}
	return false
}

// header is the process table's column header line on screen.
func header(t *testing.T, m *Model) (line string, y int) {
	t.Helper()
	for i, l := range strings.Split(screenText(m), "\n") {
		if strings.Contains(l, "PID") && strings.Contains(l, "COMMAND") {
			return l, i
		}
	}
	t.Fatalf("no column header:\n%s", screenText(m))
	return "", 0
}

func livePIDs(m *Model) []int {
	var out []int
	for _, r := range procsPeek(m).Rows {
		if r.Kind == procs.RowProc && !r.Proc.Exited {
			out = append(out, int(r.Proc.PID))
		}
	}
	return out
}

func TestReverseSortAndMoveTheColumn(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	for procsPeek(m).SortBy != procs.SortPID {
		keys(m, "s")
	}
	up := livePIDs(m)
	keys(m, "I")
	down := livePIDs(m)
	if l, _ := header(t, m); !strings.Contains(l, "PID▲") || !strings.Contains(screenText(m), "PID, reversed") {
		t.Errorf("I should mark the reversed sort in the header and the footer:\n%s", screenText(m))
	}
	for i := range up {
		if down[i] != up[len(up)-1-i] {
			t.Fatalf("I should reverse the order: %v then %v", up, down)
		}
	}
	keys(m, "I")
	if l, _ := header(t, m); !strings.Contains(l, "PID▼") {
		t.Errorf("I again should sort as before: %s", l)
	}
	// > moves the sort to the next sortable column on screen: USER.
	keys(m, ">")
	if l, _ := header(t, m); procsPeek(m).SortBy != procs.SortUser || !strings.Contains(l, "USER▼") {
		t.Errorf("> from PID should sort by USER: %s", l)
	}
	keys(m, "<", "<")
	if l, _ := header(t, m); procsPeek(m).SortBy != procs.SortGPU || !strings.Contains(l, "GPU▼") {
		t.Errorf("< < from USER should sort by GPU: %s", l)
	}
}

func TestSortPicker(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	keys(m, "f6")
	s := screenText(m)
	if !strings.Contains(s, "sort by") || !strings.Contains(s, "[MEM]") || !strings.Contains(s, "AGE") {
		t.Fatalf("F6 should list the sort columns, the current one chosen:\n%s", s)
	}
	keys(m, "right", "right")
	if !strings.Contains(screenText(m), "[PEAK]") {
		t.Fatalf("→ → from MEM should choose PEAK:\n%s", screenText(m))
	}
	if procsPeek(m).SortBy != procs.SortMem {
		t.Error("the sort changes on enter, not while choosing")
	}
	keys(m, "enter")
	if l, _ := header(t, m); procsPeek(m).SortBy != procs.SortPeak || !strings.Contains(l, "PEAK▼") || strings.Contains(screenText(m), "[PEAK]") {
		t.Errorf("enter should sort by PEAK and close the picker:\n%s", screenText(m))
	}
	keys(m, "f6", "right", "esc")
	if procsPeek(m).SortBy != procs.SortPeak || procsPeek(m).Picking {
		t.Error("esc should close the picker and keep the sort")
	}
	keys(m, "q")
	if procsPeek(m).Picking {
		t.Error("q in the picker")
	}
}

func click(m *Model, x, y int) {
	send(m, tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft})
}

func TestMouseClicks(t *testing.T) {
	for _, sz := range [][2]int{{120, 40}, {80, 24}, {100, 30}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m, _ := ready(t, 4, sz[0], sz[1])
			l, y := header(t, m)
			x := strings.Index(l, "AGE")
			x = len([]rune(l[:x])) // cells, not bytes
			click(m, x, y)
			if l, _ := header(t, m); procsPeek(m).SortBy != procs.SortAge || !strings.Contains(l, "AGE▼") {
				t.Fatalf("a click on AGE should sort by it:\n%s", screenText(m))
			}
			click(m, x, y)
			if l, _ := header(t, m); !procsPeek(m).SortRev || !strings.Contains(l, "AGE▲") {
				t.Fatalf("a second click on AGE should reverse it: %s", l)
			}
			// A click on the third row selects it (and the table takes the keys).
			click(m, 10, y+3)
			if procsPeek(m).Sel != 2 || m.focus != paneProcs {
				t.Fatalf("a click on the third row: selected %d, focus %v", procsPeek(m).Sel, m.focus)
			}
			lines := strings.Split(screenText(m), "\n")
			if want := procsPeek(m).Rows[2]; !strings.Contains(lines[y+3], fmt.Sprint(want.Proc.PID)) {
				t.Fatalf("the row clicked is not PID %d: %q", want.Proc.PID, lines[y+3])
			}
			// A click on GPU 1's line opens its detail.
			gy := -1
			for i, l := range lines {
				if strings.Contains(l, "GPU 1 ") || strings.HasPrefix(strings.TrimLeft(l, " ▶▷"), "1 ") {
					gy = i
					break
				}
			}
			if gy < 0 {
				t.Fatalf("GPU 1 is not on screen:\n%s", screenText(m))
			}
			click(m, 4, gy)
			if m.screen != screenDetail || detailPeek(m).Target.DeviceID != "1" || detailPeek(m).Target.PID != 0 {
				t.Fatalf("a click on GPU 1 (line %d) should open its detail: screen %v target %+v\n%s", gy, m.screen, detailPeek(m).Target, screenText(m))
			}
		})
	}
}

// Utilization and memory share are two columns, named as nvtop names
// them, both sortable and both in --once.
func TestUtilizationAndShareColumns(t *testing.T) {
	m, _ := newTestModel(Options{})
	snap := demoSnap(t, 10*time.Minute)
	send(m, tea.WindowSizeMsg{Width: 160, Height: 50}, snapshotMsg(snap))
	l, _ := header(t, m)
	if !strings.Contains(l, "GPU%") || !strings.Contains(l, "GMEM%") || strings.Contains(l, "%GPU") {
		t.Fatalf("the header should have GPU%% (utilization) and GMEM%% (share): %s", l)
	}
	// The demo's PID 41230 runs at a known utilization: its row shows it.
	var want string
	for _, d := range snap.Devices {
		for _, p := range d.Processes {
			if p.PID == 41230 && p.UtilizationPercent != nil {
				want = fmt.Sprintf("%.0f%%", *p.UtilizationPercent)
			}
		}
	}
	if want == "" {
		t.Fatal("the demo has no utilization for PID 41230")
	}
	found := false
	for _, line := range strings.Split(screenText(m), "\n") {
		if strings.Contains(line, " 41230 ") && strings.Contains(line, " "+want+" ") {
			found = true
		}
	}
	if !found {
		t.Errorf("PID 41230's row should show its utilization %s:\n%s", want, screenText(m))
	}
	for _, tt := range []struct {
		mode  procs.SortMode
		title string
		val   func(procs.Row) float64
	}{
		{procs.SortUtil, "GPU%▼", func(r procs.Row) float64 {
			if r.Proc.UtilizationPercent == nil {
				return -1
			}
			return *r.Proc.UtilizationPercent
		}},
		{procs.SortShare, "GMEM%▼", func(r procs.Row) float64 { return r.Pct }},
	} {
		for i := 0; i < int(procs.NSortModes) && procsPeek(m).SortBy != tt.mode; i++ {
			keys(m, "s")
		}
		if l, _ := header(t, m); procsPeek(m).SortBy != tt.mode || !strings.Contains(l, tt.title) {
			t.Fatalf("s should reach %s: %s", tt.title, l)
		}
		prev := 1e9
		for _, r := range procsPeek(m).Rows {
			if r.Kind != procs.RowProc || r.Proc.Exited {
				continue
			}
			if v := tt.val(r); v > prev {
				t.Errorf("sort %s: PID %d (%v) after %v", tt.title, r.Proc.PID, v, prev)
			} else {
				prev = v
			}
		}
	}
	once := ansi.Strip(procs.RenderTable(common.NewStyles(true, true), snap, m.opts.Thresholds))
	if !strings.Contains(once, "GPU%") || !strings.Contains(once, "GMEM%") {
		t.Errorf("--once should have both columns:\n%s", once)
	}
}

// The sort is named, in the status line and the footer, by its column's
// title as the header shows it (GPU%▼: "sorted by GPU%"), for every sort s
// reaches, and reversed (I) too.
func TestSortIsNamedAsItsColumn(t *testing.T) {
	m, _ := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, snapshotMsg(demoSnap(t, 10*time.Minute)))
	marked := func(mark string) string {
		l, _ := header(t, m)
		for _, f := range strings.Fields(l) {
			if strings.HasSuffix(f, mark) {
				return strings.TrimSuffix(f, mark)
			}
		}
		t.Fatalf("no column is marked %s: %s", mark, l)
		return ""
	}
	seen := map[procs.SortMode]bool{}
	for !seen[procsPeek(m).SortBy] {
		mode := procsPeek(m).SortBy
		seen[mode] = true
		title := marked("▼")
		if st := procsOf(m).State(); len(st) == 0 || st[0] != "sort "+title {
			t.Errorf("sorted by the column %s, the footer says %q", title, st)
		}
		keys(m, "I")
		if l := footerText(m); !strings.Contains(l, "processes sorted by "+title+", reversed") {
			t.Errorf("reversing the sort by %s: the status line says %q", title, l)
		}
		if got := marked("▲"); got != title {
			t.Errorf("reversed, the header marks %s, not %s", got, title)
		}
		if st := procsOf(m).State(); len(st) == 0 || st[0] != "sort "+title+", reversed" {
			t.Errorf("reversed sort by %s: the footer says %q", title, st)
		}
		keys(m, "I", "s")
		if next, l := marked("▼"), footerText(m); !strings.Contains(l, "processes sorted by "+next) {
			t.Errorf("s to the column %s: the status line says %q", next, l)
		}
	}
	if len(seen) != int(procs.NSortModes) {
		t.Errorf("s reached %d sorts of %d, so not every name is checked", len(seen), procs.NSortModes)
	}
}

// footerText is the screen's last line.
func footerText(m *Model) string {
	s := screenText(m)
	return strings.TrimSpace(s[strings.LastIndex(s, "\n")+1:])
}

// A process without a value in the sort's column (n/a, or blank) stays
// after those with one whichever way the sort goes, as in htop and
// nvitop: reversing GPU% puts the least busy first, not the unmeasured.
func TestNoValueStaysLastReversed(t *testing.T) {
	snap := demoSnap(t, 10*time.Minute)
	// A process whose start is not known (as a fleet's) has no AGE.
	snap.Devices[0].Processes[0].StartTime = time.Time{}
	m, _ := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, snapshotMsg(snap))
	has := map[procs.SortMode]func(procs.Row) bool{
		procs.SortMem:   func(r procs.Row) bool { return r.HasBytes },
		procs.SortShare: func(r procs.Row) bool { return r.HasBytes },
		procs.SortPeak:  func(r procs.Row) bool { return r.Proc.PeakBytes > 0 },
		procs.SortAge:   func(r procs.Row) bool { return r.HasAge },
		procs.SortUser:  func(r procs.Row) bool { return r.Proc.User != "" },
		procs.SortCPU:   func(r procs.Row) bool { return r.Proc.CPUPercent != nil },
		procs.SortRSS:   func(r procs.Row) bool { return r.Proc.HostMemoryBytes != nil },
		procs.SortUtil:  func(r procs.Row) bool { return r.Proc.UtilizationPercent != nil },
	}
	checked := map[procs.SortMode]bool{}
	for range procs.NSortModes {
		mode := procsPeek(m).SortBy
		if has[mode] != nil {
			for _, rev := range []bool{false, true} {
				if procsPeek(m).SortRev != rev {
					keys(m, "I")
				}
				var with, without int
				for _, r := range procsPeek(m).Rows {
					if r.Kind != procs.RowProc || r.Proc.Exited {
						continue
					}
					switch {
					case !has[mode](r):
						without++
					case without > 0:
						t.Errorf("sort %s (reversed: %v): PID %d, with a value, after %d without", mode, rev, r.Proc.PID, without)
					default:
						with++
					}
				}
				if with < 2 || without == 0 {
					t.Errorf("sort %s: %d processes with a value and %d without: nothing is checked", mode, with, without)
				}
			}
			checked[mode] = true
		}
		keys(m, "s")
	}
	if len(checked) != len(has) {
		t.Errorf("s reached %d of the %d sorts with values to miss", len(checked), len(has))
	}
}
