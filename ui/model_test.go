package ui

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/procsignal"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/judge"
	"github.com/vramtop/vramtop/ui/procs"
	"github.com/vramtop/vramtop/ui/prompt"
)

// newTestModel is a model with a fixed clock, no advisor (unless a test
// sets one) and a recording kill function.
func newTestModel(opts Options) (*Model, *[]string) {
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedStart }
	}
	if opts.User == "" {
		opts.User = testUser
	}
	m := New(nil, opts)
	setRules(m, testRules{})
	m.euid = int(testUIDs[testUser])
	var killed []string
	setOpener(m, func(t procsignal.Target) (prompt.Handle, error) {
		return &fakeHandle{t: t, log: &killed}, nil
	})
	m.setStyles(common.NewStyles(true, true))
	return m, &killed
}

// setOpener gives m a prompt that holds a process through open.
func setOpener(m *Model, open prompt.OpenFunc) {
	m.prompt = prompt.New(m.ctx, &m.out, m.opts.Now, open)
}

// promptPeek is what m's prompt offers.
func promptPeek(m *Model) prompt.Peek { return m.prompt.(*prompt.Prompt).Peek() }

// fakeHandle records the signals it is asked to send.
type fakeHandle struct {
	t      procsignal.Target
	log    *[]string
	err    error
	closed bool
}

func (h *fakeHandle) Signal(sig syscall.Signal) error {
	if h.closed {
		return errors.New("closed")
	}
	if h.err != nil {
		return h.err
	}
	*h.log = append(*h.log, fmt.Sprintf("%d:%s", h.t.PID, unix.SignalName(sig)))
	return nil
}

func (h *fakeHandle) Close() error { h.closed = true; return nil }

func send(m *Model, msgs ...tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	for _, msg := range msgs {
		_, cmd = m.Update(msg)
	}
	return cmd
}

func keyPress(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "space":
		return tea.KeyPressMsg{Code: ' ', Text: " "}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(s, "f")); err == nil && strings.HasPrefix(s, "f") {
		return tea.KeyPressMsg{Code: tea.KeyF1 + rune(n-1)}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

func keys(m *Model, ks ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range ks {
		cmd = send(m, keyPress(k))
	}
	return cmd
}

func screenText(m *Model) string { return ansi.Strip(m.View().Content) }

// checkFits fails when the screen is not exactly w×h cells.
func checkFits(t *testing.T, m *Model, w, h int) {
	t.Helper()
	lines := strings.Split(m.View().Content, "\n")
	if len(lines) != h {
		t.Errorf("%d×%d: screen has %d lines", w, h, len(lines))
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("%d×%d: line %d is %d cells wide: %q", w, h, i, lw, ansi.Strip(l))
		}
	}
}

func ready(t *testing.T, ngpu, w, h int) (*Model, *[]string) {
	m, killed := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, snapshotMsg(fakeSnap(t, ngpu)))
	return m, killed
}

func TestSnapshotShowsGPUsAndProcesses(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	s := screenText(m)
	for _, want := range []string{"GPU 0", "GPU 3", "H200", "python train.py", "bob", "(other PID namespace)", "unattributed", "driver 580.159"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	if compactGPUs(m) {
		t.Error("4 GPUs at 120×40 should have full panels")
	}
	checkFits(t, m, 120, 40)
}

func TestManyGPUsAreCompact(t *testing.T) {
	m, _ := ready(t, 8, 120, 40)
	if !compactGPUs(m) {
		t.Fatal("8 GPUs should be one line each")
	}
	s := screenText(m)
	if !strings.Contains(s, "▁") && !strings.Contains(s, "█") {
		t.Error("no inline sparkline or bar")
	}
	checkFits(t, m, 120, 40)
	// Little room compacts even a few GPUs.
	m2, _ := ready(t, 4, 80, 24)
	if !compactGPUs(m2) {
		t.Error("4 GPUs at 80×24 should be compact")
	}
}

func TestEverySizeFits(t *testing.T) {
	snap := fakeSnap(t, 4)
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {200, 60}, {250, 70}, {60, 15}, {56, 8}, {81, 25}} {
		m, _ := newTestModel(Options{})
		send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(snap))
		checkFits(t, m, sz[0], sz[1])
		keys(m, "enter") // GPU detail
		checkFits(t, m, sz[0], sz[1])
		keys(m, "esc", "tab", "enter") // process detail
		checkFits(t, m, sz[0], sz[1])
		keys(m, "esc", "?")
		checkFits(t, m, sz[0], sz[1])
	}
}

func TestTooSmallAndOddSizesNeverPanic(t *testing.T) {
	m, _ := newTestModel(Options{})
	for _, sz := range [][2]int{{0, 0}, {1, 1}, {10, 3}, {30, 5}, {0, 40}, {200, 0}} {
		send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		_ = m.View()
	}
	send(m, tea.WindowSizeMsg{Width: 30, Height: 5}, snapshotMsg(fakeSnap(t, 2)))
	if s := screenText(m); !strings.Contains(s, "too small") || !strings.Contains(s, "need") {
		t.Errorf("30×5 should say the terminal is too small:\n%s", s)
	}
	send(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	if s := screenText(m); strings.Contains(s, "too small") || !strings.Contains(s, "GPU 0") {
		t.Errorf("after growing back the view should be back:\n%s", s)
	}
}

func TestOddSnapshotsNeverPanic(t *testing.T) {
	zero := uint64(0)
	odd := []sampler.Snapshot{
		{},
		{Devices: []sampler.Device{{ID: "0"}}},
		{Devices: []sampler.Device{{ID: "0", MemoryUsed: 5 * draw.GiB, Err: "GPU is lost"}}},
		{Devices: []sampler.Device{{ID: "0", MemoryTotal: 10 * draw.GiB, MemoryUsed: 20 * draw.GiB, MemoryReserved: &zero,
			Processes: []sampler.Process{{PID: 1}, {PID: 2, Exited: true}}}}},
		{Devices: []sampler.Device{{ID: "0", MemoryTotal: draw.GiB, History: sampler.WindowOf([]time.Time{fixedStart}, []uint64{draw.GiB})}}, Time: fixedStart},
	}
	for i, s := range odd {
		for _, sz := range [][2]int{{80, 24}, {200, 60}} {
			m, _ := newTestModel(Options{})
			send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(s))
			for _, k := range []string{"enter", "esc", "tab", "enter", "esc", "s", "u", "m", "K", "j", "k", "?"} {
				keys(m, k)
				_ = m.View()
			}
			if i == 2 && !strings.Contains(screenText(newReady(s, sz)), "GPU is lost") {
				t.Errorf("the device error is not shown")
			}
		}
	}
}

func newReady(s sampler.Snapshot, sz [2]int) *Model {
	m, _ := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(s))
	return m
}

func TestDeviceErrorOnlyOnItsRow(t *testing.T) {
	snap := fakeSnap(t, 8)
	snap.Devices[5].Err = "GPU has fallen off the bus"
	m := newReady(snap, [2]int{120, 40})
	var hits []string
	for _, l := range strings.Split(screenText(m), "\n") {
		if strings.Contains(l, "fallen off the bus") {
			hits = append(hits, l)
		}
	}
	if len(hits) != 1 || !strings.Contains(hits[0], " 5 ") {
		t.Errorf("the error should be on GPU 5's row only, got %q", hits)
	}
}

func TestTabEnterEscDetail(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	if m.focus != paneGPUs {
		t.Fatal("focus should start on the GPUs")
	}
	keys(m, "down", "enter")
	if m.screen != screenDetail || detailPeek(m).Target.DeviceID != "1" || detailPeek(m).Target.PID != 0 {
		t.Fatalf("enter on GPU 1 should open its detail, got %+v", detailPeek(m).Target)
	}
	if s := screenText(m); !strings.Contains(s, "GPU 1") || !strings.Contains(s, "now") || !strings.Contains(s, "warn 80%") {
		t.Errorf("detail lacks the plot's time axis or thresholds:\n%s", s)
	}
	keys(m, "esc")
	if m.screen != screenMain {
		t.Fatal("esc should go back")
	}
	keys(m, "tab")
	if m.focus != paneProcs {
		t.Fatal("tab should focus the processes")
	}
	r := selectProc(t, m, func(r procs.Row) bool { return r.Kind == procs.RowProc })
	keys(m, "enter")
	if detailPeek(m).Target.PID != r.Proc.PID || r.Proc.PID == 0 {
		t.Fatalf("enter on a process should open it, got %+v want PID %d", detailPeek(m).Target, r.Proc.PID)
	}
	if s := screenText(m); !strings.Contains(s, fmt.Sprintf("PID %d", r.Proc.PID)) {
		t.Errorf("process detail does not name the PID:\n%s", s)
	}
}

func TestAdvicePanelOnlyWithAdvice(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	keys(m, "enter")
	if detailPeek(m).AdviceH != 0 || strings.Contains(screenText(m), "╭") {
		t.Error("no advice: no panel")
	}
	var got advisor.Target
	setRules(m, testRules{advise: func(_ sampler.Snapshot, tg advisor.Target) []advisor.Advice {
		got = tg
		return []advisor.Advice{{Rule: "time_to_full", Severity: advisor.Crit, Title: "GPU 0 full in ~4 min",
			Remedies: []advisor.RemedyEstimate{{Name: "mixed precision", Saving: "~30% ≈ 21 GiB (estimate)", Cost: "some accuracy", How: "torch.autocast", Covers: true}}}}
	}})
	keys(m, "esc", "enter")
	s := screenText(m)
	if got.DeviceID != "0" || !strings.Contains(s, "full in ~4 min") || !strings.Contains(s, "mixed precision") || !strings.Contains(s, "torch.autocast") {
		t.Errorf("advice panel missing (target %+v):\n%s", got, s)
	}
	checkFits(t, m, 120, 40)
}

func TestMoveSelection(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	keys(m, "j", "j")
	if d, _ := m.gpus.Selected(); d.ID != "2" {
		t.Errorf("j j should select GPU 2, got %s", d.ID)
	}
	keys(m, "k")
	if d, _ := m.gpus.Selected(); d.ID != "1" {
		t.Errorf("k should select GPU 1, got %s", d.ID)
	}
	keys(m, "tab", "down")
	if procsPeek(m).Sel != 1 {
		t.Errorf("down in the process list should select row 1, got %d", procsPeek(m).Sel)
	}
	sel, _ := procsOf(m).Selected()
	// A new snapshot keeps the same process selected.
	send(m, snapshotMsg(fixture(t, &fakeSource{start: fixedStart, ngpu: 4}, 10*time.Minute+time.Second)))
	if now, _ := procsOf(m).Selected(); now.Key() != sel.Key() {
		t.Errorf("selection moved from %s to %s", sel.Key(), now.Key())
	}
	send(m, tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if procsPeek(m).Sel <= 1 && len(procsPeek(m).Rows) > 2 {
		t.Errorf("the wheel should move down the list, sel %d", procsPeek(m).Sel)
	}
}

func TestSortCycles(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	first := procsPeek(m).Rows[0]
	if first.Bytes < procsPeek(m).Rows[1].Bytes {
		t.Error("rows should start sorted by memory")
	}
	keys(m, "s")
	if procsPeek(m).SortBy != procs.SortPeak || !strings.Contains(screenText(m), "PEAK▼") {
		t.Error("s should sort by peak and mark the column")
	}
	for i := 0; i < int(procs.NSortModes) && procsPeek(m).SortBy != procs.SortMem; i++ {
		keys(m, "s")
	}
	if procsPeek(m).SortBy != procs.SortMem {
		t.Error("s should cycle back to memory")
	}
	keys(m, "s", "s", "s", "s") // by user; the unknown (?) last
	prev, unknown := "", false
	for _, r := range procsPeek(m).Rows {
		if r.Kind == procs.RowProc && !r.Proc.Exited {
			switch u := r.Proc.User; {
			case u == "":
				unknown = true
			case unknown || u < prev:
				t.Fatalf("not sorted by user: %q after %q (unknown before: %v)", u, prev, unknown)
			default:
				prev = u
			}
		}
	}
}

func TestFilter(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	keys(m, "/")
	if !m.procs.Capturing() {
		t.Fatal("/ should open the filter")
	}
	keys(m, "b", "o", "b")
	for _, r := range procsPeek(m).Rows {
		if r.Proc.User != "bob" {
			t.Errorf("filter bob shows %+v", r.Proc)
		}
	}
	if len(procsPeek(m).Rows) == 0 {
		t.Fatal("filter bob shows nothing")
	}
	keys(m, "enter")
	if m.procs.Capturing() || procsPeek(m).Filter != "bob" {
		t.Error("enter should keep the filter and close the input")
	}
	if !strings.Contains(screenText(m), `filter "bob"`) {
		t.Error("the footer should say the filter is on")
	}
	// q typed into the filter does not quit.
	keys(m, "/")
	if cmd := keys(m, "q"); cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Error("q in the filter quit")
		}
	}
	keys(m, "esc")
	if procsPeek(m).Filter != "" || len(procsPeek(m).Rows) < 5 {
		t.Error("esc should clear the filter")
	}
	keys(m, "/")
	send(m, tea.PasteMsg{Content: "tra"})
	keys(m, "i", "n", "enter")
	if len(procsPeek(m).Rows) != 1 || !strings.Contains(procsPeek(m).Rows[0].Proc.Command, "train") {
		t.Errorf("filter by command: %d rows", len(procsPeek(m).Rows))
	}
}

func TestMineAndGroup(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	keys(m, "m")
	for _, r := range procsPeek(m).Rows {
		if !r.Mine || r.Proc.User != testUser {
			t.Errorf("mine only shows %+v", r)
		}
	}
	if len(procsPeek(m).Rows) != 2 {
		t.Errorf("alice has 2 processes, shown %d", len(procsPeek(m).Rows))
	}
	keys(m, "m", "u")
	if procsPeek(m).Group != procs.GroupUser {
		t.Fatal("u should group by user")
	}
	users := map[string]procs.Row{}
	for _, r := range procsPeek(m).Rows {
		users[r.User] = r
	}
	a, ok := users[testUser]
	if !ok || a.NProcs != 2 || a.NGPUs != 2 {
		t.Errorf("alice's group row: %+v", a)
	}
	if _, ok := users["(unattributed)"]; !ok {
		t.Error("unattributed memory should be a group")
	}
	if !strings.Contains(screenText(m), "PROCS") {
		t.Error("grouped table header missing")
	}
	// enter on a user shows that user's processes.
	keys(m, "tab")
	for i, r := range procsPeek(m).Rows {
		if r.User == "bob" {
			selectRow(t, m, i)
		}
	}
	keys(m, "enter")
	if procsPeek(m).Group != procs.GroupNone || procsPeek(m).Filter != "bob" {
		t.Errorf("enter on bob should filter by bob, group %v filter %q", procsPeek(m).Group, procsPeek(m).Filter)
	}
}

func TestMineVisiblyDifferent(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	mine, bobs := 0, 0
	for _, l := range strings.Split(screenText(m), "\n") {
		switch {
		case strings.Contains(l, "train.py"):
			mine++
			if !strings.HasPrefix(l, "●") {
				t.Errorf("my process is not marked: %q", l)
			}
		case strings.Contains(l, " bob "):
			bobs++
			if strings.HasPrefix(l, "●") {
				t.Errorf("bob's process is marked as mine: %q", l)
			}
		}
	}
	if mine == 0 || bobs == 0 {
		t.Errorf("%d rows of mine and %d of bob's on screen: nothing compared", mine, bobs)
	}
}

func TestExitedDimmedWithPeak(t *testing.T) {
	// carol's eval.py exits at 5 minutes; the snapshot at 6 still lists it.
	snap := fixture(t, &fakeSource{start: fixedStart, ngpu: 4}, 6*time.Minute)
	m := newReady(snap, [2]int{120, 40})
	m.setStyles(common.NewStyles(true, false))
	var line string
	for _, r := range procsPeek(m).Rows {
		if r.Proc.User == "carol" {
			line = procsOf(m).Line(r)
			if !r.Proc.Exited || !strings.Contains(line, "exited") || !strings.Contains(line, "GiB") {
				t.Errorf("exited row should say exited and keep its peak: %q", line)
			}
		}
	}
	if line == "" {
		t.Fatal("the exited process is not listed")
	}
	// The exited row itself is faint (the free part of a bar is faint too,
	// so the whole screen proves nothing).
	var row string
	for _, l := range strings.Split(m.View().Content, "\n") {
		if strings.Contains(ansi.Strip(l), "python eval.py") {
			row = l
		}
	}
	if !hasFaint(row) {
		t.Errorf("the exited row is not faint: %q", row)
	}
}

// hasFaint reports whether an SGR sequence of s sets faint (parameter 2 on
// its own, not the 2 of a 38;2;r;g;b colour).
func hasFaint(s string) bool {
	for _, m := range regexp.MustCompile(`\x1b\[([0-9;:]*)m`).FindAllStringSubmatch(s, -1) {
		ps := strings.Split(m[1], ";")
		for i := 0; i < len(ps); i++ {
			switch ps[i] {
			case "38", "48", "58":
				if i+1 < len(ps) && ps[i+1] == "2" {
					i += 4
				} else {
					i += 2
				}
			case "2":
				return true
			}
		}
	}
	return false
}

func TestPause(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	before := m.on.Shown().snap.Time
	keys(m, "p")
	if !m.on.Paused() || !strings.Contains(screenText(m), "PAUSED") {
		t.Fatal("p should pause and say so")
	}
	later := fixture(t, &fakeSource{start: fixedStart, ngpu: 4}, 11*time.Minute)
	send(m, snapshotMsg(later))
	if !m.on.Shown().snap.Time.Equal(before) {
		t.Error("a paused display changed")
	}
	keys(m, "p")
	if m.on.Paused() || !m.on.Shown().snap.Time.Equal(later.Time) {
		t.Error("unpausing should show the newest snapshot")
	}
}

func TestInterval(t *testing.T) {
	var got []time.Duration
	m, _ := newTestModel(Options{SetInterval: func(d time.Duration) { got = append(got, d) }})
	send(m, tea.WindowSizeMsg{Width: 100, Height: 30}, snapshotMsg(fakeSnap(t, 2)))
	keys(m, "+")
	keys(m, "-", "-")
	for i := 0; i < 10; i++ {
		keys(m, "+")
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, time.Second, 500 * time.Millisecond,
		250 * time.Millisecond, 100 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("interval %d: got %v want %v (all: %v)", i, got[i], w, got)
		}
	}
	if last := got[len(got)-1]; last != sampler.MinInterval {
		t.Errorf("+ should stop at %v, got %v", sampler.MinInterval, last)
	}
	if !strings.Contains(screenText(m), "every 50ms") {
		t.Error("header should show the new interval")
	}
	// All the way up, and back to 1 s.
	got = nil
	for i := 0; i < 12; i++ {
		keys(m, "-")
	}
	if last := got[len(got)-1]; last != time.Minute {
		t.Errorf("- should stop at 1m, got %v", got)
	}
	for i := 0; i < 5; i++ {
		keys(m, "+")
	}
	if last := got[len(got)-1]; last != time.Second {
		t.Errorf("five + from 1m (30s, 10s, 5s, 2s, 1s) should give 1s, got %v", got)
	}
	// A source that cannot change it says so.
	m2, _ := ready(t, 2, 100, 30)
	keys(m2, "+")
	if !strings.Contains(screenText(m2), "cannot be changed") {
		t.Error("no word when the interval cannot change")
	}
}

func selectProc(t *testing.T, m *Model, match func(procs.Row) bool) procs.Row {
	t.Helper()
	if m.focus != paneProcs {
		keys(m, "tab")
	}
	for i, r := range procsPeek(m).Rows {
		if match(r) {
			selectRow(t, m, i)
			return r
		}
	}
	t.Fatal("no such process")
	return procs.Row{}
}

// selectRow moves the focused process table's selection to row i, as the
// arrows do.
func selectRow(t *testing.T, m *Model, i int) {
	t.Helper()
	for n := procsPeek(m).Sel; n > i; n-- {
		keys(m, "up")
	}
	for n := procsPeek(m).Sel; n < i; n++ {
		keys(m, "down")
	}
	if got := procsPeek(m).Sel; got != i {
		t.Fatalf("the selection is on row %d, want %d", got, i)
	}
}

func TestKillOwnProcess(t *testing.T) {
	m, killed := ready(t, 4, 120, 40)
	r := selectProc(t, m, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	keys(m, "K")
	if !m.prompt.Active() || promptPeek(m).Signal != syscall.SIGTERM || !strings.Contains(screenText(m), "SIGTERM") {
		t.Fatal("K should ask to send SIGTERM")
	}
	keys(m, "n")
	if len(*killed) != 0 || m.prompt.Active() {
		t.Fatal("n should send nothing")
	}
	keys(m, "K", "y")
	want := fmt.Sprintf("%d:SIGTERM", r.Proc.PID)
	if len(*killed) != 1 || (*killed)[0] != want {
		t.Fatalf("killed %v, want %s", *killed, want)
	}
	if !strings.Contains(screenText(m), "sent SIGTERM") {
		t.Error("the result is not shown")
	}
	keys(m, "K")
	if !m.prompt.Active() || promptPeek(m).Signal != syscall.SIGKILL {
		t.Fatal("a second K should offer SIGKILL")
	}
	keys(m, "y")
	if (*killed)[1] != fmt.Sprintf("%d:SIGKILL", r.Proc.PID) {
		t.Errorf("second signal %v", *killed)
	}
}

func TestKillRefusedAndFailures(t *testing.T) {
	m, killed := ready(t, 4, 120, 40)
	selectProc(t, m, func(r procs.Row) bool { return r.Proc.User == "bob" })
	keys(m, "K")
	if m.prompt.Active() || !strings.Contains(screenText(m), "belongs to bob") {
		t.Error("another user's process must not be offered")
	}
	selectProc(t, m, func(r procs.Row) bool { return r.Kind == procs.RowProc && !r.Proc.Visible })
	keys(m, "K")
	if m.prompt.Active() || !strings.Contains(screenText(m), "another PID namespace") {
		t.Error("a process of another namespace cannot be signalled")
	}
	// root may signal others.
	m.euid = 0
	selectProc(t, m, func(r procs.Row) bool { return r.Proc.User == "bob" })
	setOpener(m, func(t procsignal.Target) (prompt.Handle, error) {
		return &fakeHandle{t: t, log: killed, err: errors.New("operation not permitted")}, nil
	})
	keys(m, "K", "y")
	if !strings.Contains(screenText(m), "not sent: operation not permitted") {
		t.Errorf("the failure is not shown:\n%s", screenText(m))
	}
	if len(*killed) != 0 {
		t.Error("the recorded kill function should not have been called")
	}
}

func TestHelpAndQuit(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	keys(m, "?")
	s := screenText(m)
	if !m.helpOpen() || !strings.Contains(s, "search user, command") || !strings.Contains(s, "reserved") {
		t.Fatalf("? should show the keys and the legend:\n%s", s)
	}
	keys(m, "?")
	if m.helpOpen() {
		t.Error("? again should close the help")
	}
	for _, k := range []string{"q", "ctrl+c"} {
		cmd := keys(m, k)
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s should quit", k)
		}
	}
}

func TestStaleBadge(t *testing.T) {
	m, _ := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	snap := fakeSnap(t, 2)
	old := m.fresh.Check() // the check of the snapshot before this one: none
	cmd := send(m, snapshotMsg(snap))
	if cmd == nil {
		t.Fatal("a snapshot should schedule the stale check")
	}
	send(m, old)
	if m.fresh.Stale() {
		t.Error("an old check must not mark the display stale")
	}
	send(m, m.fresh.Check())
	if !m.fresh.Stale() || !strings.Contains(screenText(m), "STALE") {
		t.Error("no snapshot for 3 intervals should show STALE")
	}
	send(m, snapshotMsg(snap))
	if m.fresh.Stale() {
		t.Error("a new snapshot should clear stale")
	}
}

func TestAlertsBannerAndBell(t *testing.T) {
	m, _ := newTestModel(Options{Bell: true})
	alerts := []advisor.Alert{{Rule: "threshold", Severity: advisor.Crit, DeviceID: "0", Message: "GPU 0 at 95%"}}
	setRules(m, testRules{observe: func(sampler.Snapshot) []advisor.Alert { return alerts }})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	cmd := send(m, snapshotMsg(fakeSnap(t, 4)))
	s := screenText(m)
	if !strings.Contains(s, "CRIT") || !strings.Contains(s, "GPU 0 at 95%") || !strings.Contains(s, "grew most: PID 4100") {
		t.Errorf("banner should name the GPU and the process that grew most:\n%s", s)
	}
	if !bells(cmd) {
		t.Error("a new critical alert should ring the bell")
	}
	if bells(send(m, snapshotMsg(fakeSnap(t, 4)))) {
		t.Error("the same alert should not ring again")
	}
	alerts = nil
	send(m, snapshotMsg(fakeSnap(t, 4)))
	alerts = []advisor.Alert{{Rule: "threshold", Severity: advisor.Crit, DeviceID: "0", Message: "again"}}
	if !bells(send(m, snapshotMsg(fakeSnap(t, 4)))) {
		t.Error("an alert that returns should ring again")
	}
	m.opts.Bell = false
	alerts = []advisor.Alert{{Rule: "threshold", Severity: advisor.Crit, DeviceID: "1"}}
	if bells(send(m, snapshotMsg(fakeSnap(t, 4)))) {
		t.Error("no bell without --bell")
	}
}

// bells runs cmd (a batch) and reports whether it writes a bell.
func bells(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	msg := cmd()
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			if c == nil {
				continue
			}
			if raw, ok := runNonBlocking(c).(tea.RawMsg); ok && raw.Msg == "\a" {
				return true
			}
		}
	case tea.RawMsg:
		return msg.Msg == "\a"
	}
	return false
}

// runNonBlocking runs a command that may block (a tick, a channel wait)
// with a timeout.
func runNonBlocking(c tea.Cmd) tea.Msg {
	ch := make(chan tea.Msg, 1)
	go func() { ch <- c() }()
	select {
	case m := <-ch:
		return m
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

type fakeReplay struct{ calls []string }

func (f *fakeReplay) Toggle()                { f.calls = append(f.calls, "toggle") }
func (f *fakeReplay) Step(n int)             { f.calls = append(f.calls, fmt.Sprintf("step %d", n)) }
func (f *fakeReplay) SeekBy(d time.Duration) { f.calls = append(f.calls, "seek "+d.String()) }
func (f *fakeReplay) SeekStart()             { f.calls = append(f.calls, "start") }
func (f *fakeReplay) SeekEnd()               { f.calls = append(f.calls, "end") }
func (f *fakeReplay) CycleSpeed()            { f.calls = append(f.calls, "speed") }
func (f *fakeReplay) Status() string         { return fmt.Sprintf("▶ ×4 09:10:00 (%d)", len(f.calls)) }

func TestReplayKeys(t *testing.T) {
	r := &fakeReplay{}
	m, _ := newTestModel(Options{Replay: r, Title: "vramtop replay run.jsonl"})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fakeSnap(t, 4)))
	keys(m, "left", "right", "[", "]", "g", "G", "space", ">", "p")
	want := "step -1,step 1,seek -1m0s,seek 1m0s,start,end,toggle,speed,toggle"
	if got := strings.Join(r.calls, ","); got != want {
		t.Errorf("replay calls\n got %s\nwant %s", got, want)
	}
	s := screenText(m)
	if !strings.Contains(s, "REPLAY") || !strings.Contains(s, "(9)") || !strings.Contains(s, "vramtop replay run.jsonl") {
		t.Errorf("header should show the replay status:\n%s", s)
	}
	if m.fresh.Stale() {
		t.Error("a replay is never stale")
	}
}

func TestFleetHostList(t *testing.T) {
	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-a", "node-b", "node-c"}}
	snap := fixture(t, src, 10*time.Minute)
	// node-b is the most pressed.
	for i := range snap.Devices {
		if snap.Devices[i].Hostname == "node-b" {
			snap.Devices[i].MemoryUsed = snap.Devices[i].MemoryTotal * 97 / 100
		}
	}
	m := newReady(snap, [2]int{120, 40})
	s := screenText(m)
	if !m.fleet.On() || !strings.Contains(s, "fleet of 3 hosts") {
		t.Fatalf("fleet header missing:\n%s", s)
	}
	if ia, ib := strings.Index(s, "node-a"), strings.Index(s, "node-b"); ib < 0 || ia < ib {
		t.Errorf("node-b (97%%) should come first:\n%s", s)
	}
	keys(m, "down", "enter")
	if m.fleet.Host() != "node-a" && m.fleet.Host() != "node-c" {
		t.Fatalf("enter should open the second host, got %q", m.fleet.Host())
	}
	for _, d := range m.fleet.View().Devices {
		if d.Hostname != m.fleet.Host() {
			t.Errorf("host view shows %s's device", d.Hostname)
		}
	}
	if s := screenText(m); !strings.Contains(s, "COMMAND") || !strings.Contains(s, "host "+m.fleet.Host()) {
		t.Errorf("host view should show its GPUs and processes:\n%s", s)
	}
	keys(m, "esc")
	if m.fleet.Host() != "" {
		t.Error("esc should go back to the host list")
	}
	checkFits(t, m, 120, 40)
}

func TestSourceEnded(t *testing.T) {
	ch := make(chan sampler.Snapshot)
	m, _ := newTestModel(Options{})
	m.snaps = ch
	close(ch)
	if _, ok := m.wait()().(sourceEnded); !ok {
		t.Fatal("a closed channel should end the source")
	}
	send(m, tea.WindowSizeMsg{Width: 100, Height: 30}, sourceEnded{})
	if !strings.Contains(screenText(m), "ended") {
		t.Error("the screen should say the source ended")
	}
}

// After z the status line and the detail's legend say the same span: the
// one the graph shows, shorter than the one asked for while the history is.
func TestSpanKey(t *testing.T) {
	spansOnScreen := func(m *Model) []string {
		var out []string
		for _, x := range regexp.MustCompile(`last (\w+)`).FindAllStringSubmatch(screenText(m), -1) {
			out = append(out, x[1])
		}
		return out
	}
	m, _ := ready(t, 4, 120, 40) // ten minutes of history
	keys(m, "enter")
	if got := spansOnScreen(m); len(got) != 1 || got[0] != "5m" {
		t.Errorf("default span 5m, screen says %v:\n%s", got, screenText(m))
	}
	for _, asked := range []string{"15m", "1h"} {
		keys(m, "z")
		got := spansOnScreen(m)
		if len(got) != 2 || got[0] != "10m" || got[1] != "10m" || !strings.Contains(screenText(m), asked+" asked") {
			t.Errorf("z to %s over ten minutes of history: the screen says %v, want 10m twice:\n%s", asked, got, screenText(m))
		}
	}
	long, _ := newTestModel(Options{})
	send(long, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fixture(t, &fakeSource{start: fixedStart, ngpu: 2}, 20*time.Minute)))
	keys(long, "enter", "z")
	if got := spansOnScreen(long); len(got) != 2 || got[0] != "15m" || got[1] != "15m" || detailPeek(long).Span != 15*time.Minute {
		t.Errorf("z over twenty minutes of history should show 15m in both, got %v:\n%s", got, screenText(long))
	}
}
func TestKillNeverSignalsDemoReplayOrFleetPIDs(t *testing.T) {
	m, killed := newTestModel(Options{})
	m.euid = 0
	demo := fakeSnap(t, 4)
	demo.Demo = true
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(demo))
	selectProc(t, m, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	keys(m, "K")
	if !m.prompt.Active() || !strings.Contains(screenText(m), "demo: nothing is sent") {
		t.Fatal("the demo should still show the prompt, saying nothing is sent")
	}
	keys(m, "y")
	if len(*killed) != 0 || !strings.Contains(screenText(m), "not a real process") {
		t.Errorf("a demo PID was signalled: %v", *killed)
	}

	r, _ := newTestModel(Options{Replay: &fakeReplay{}})
	r.euid = 0
	snap := fakeSnap(t, 4)
	send(r, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	selectProc(t, r, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	noKill := func(m *Model, where string) {
		t.Helper()
		keys(m, "K")
		if m.prompt.Active() {
			t.Errorf("%s: K opened a prompt", where)
		}
		if s := screenText(m); strings.Contains(s, "K kill") {
			t.Errorf("%s: the footer offers K:\n%s", where, s)
		}
		keys(m, "?")
		if s := screenText(m); strings.Contains(s, "SIGTERM") {
			t.Errorf("%s: the help offers K:\n%s", where, s)
		}
		keys(m, "?")
	}
	noKill(r, "replay")
	keys(r, "enter")
	noKill(r, "replay, process detail")

	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-a"}}
	fs := fixture(t, src, time.Minute)
	f, fk := newTestModel(Options{})
	f.euid = 0
	send(f, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fs))
	keys(f, "enter")
	selectProc(t, f, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	noKill(f, "fleet")
	keys(f, "y")
	if len(*fk) != 0 {
		t.Errorf("signalled %v", *fk)
	}
}

func TestReplaySeekBackRestartsTheRules(t *testing.T) {
	m, _ := newTestModel(Options{Replay: &fakeReplay{}})
	fresh := 0
	judgeWith(m, func(o *judge.Options) {
		o.Rules = testRules{}
		o.Restart = func() judge.Rules {
			fresh++
			return testRules{}
		}
	})
	early := fixture(t, &fakeSource{start: fixedStart, ngpu: 2}, time.Minute)
	late := fixture(t, &fakeSource{start: fixedStart, ngpu: 2}, 2*time.Minute)
	send(m, tea.WindowSizeMsg{Width: 100, Height: 30}, snapshotMsg(early), snapshotMsg(late))
	if fresh != 0 {
		t.Fatal("playing forward keeps the rules' state")
	}
	send(m, snapshotMsg(early))
	if fresh != 1 {
		t.Error("seeking back should start the rules over")
	}
}

func TestBackgroundAndNoColor(t *testing.T) {
	m, _ := newTestModel(Options{})
	m.setStyles(common.NewStyles(true, false))
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fakeSnap(t, 4)))
	dark := m.View().Content
	send(m, tea.BackgroundColorMsg{Color: color.White})
	light := m.View().Content
	if dark == light {
		t.Error("a light background should change the colours")
	}
	if !strings.Contains(light, "38;2;") {
		t.Error("colours expected without NO_COLOR")
	}

	t.Setenv("NO_COLOR", "1")
	n := New(nil, Options{Now: func() time.Time { return fixedStart }, User: testUser})
	setRules(n, testRules{advise: advisor.NewMonitor(advisor.Config{}).Advise})
	send(n, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fakeSnap(t, 4)), tea.BackgroundColorMsg{Color: color.White})
	out := n.View().Content
	for _, code := range []string{"38;2;", "48;2;", "38;5;"} {
		if strings.Contains(out, code) {
			t.Errorf("NO_COLOR: colour code %q on screen", code)
		}
	}
	if !strings.Contains(ansi.Strip(out), "█") || !strings.Contains(ansi.Strip(out), "░") {
		t.Error("NO_COLOR: the bars must still tell used from free by glyph")
	}
}

func TestPageKeysAndScrolling(t *testing.T) {
	snap := fixture(t, &fakeSource{start: fixedStart, ngpu: 2, nprocs: 40}, time.Minute)
	m := newReady(snap, [2]int{100, 30})
	keys(m, "tab")
	n := len(procsPeek(m).Rows)
	if n < 80 {
		t.Fatalf("want many rows, got %d", n)
	}
	send(m, tea.KeyPressMsg{Code: tea.KeyPgDown})
	page := procsPeek(m).Sel
	if page < 5 {
		t.Fatalf("pgdown moved to %d", page)
	}
	keys(m, "G")
	if procsPeek(m).Sel != n-1 || procsPeek(m).Off == 0 {
		t.Errorf("G: sel %d off %d of %d rows", procsPeek(m).Sel, procsPeek(m).Off, n)
	}
	if !strings.Contains(screenText(m), procsPeek(m).Rows[n-1].Proc.Command) {
		t.Error("the last row should be on screen after G")
	}
	checkFits(t, m, 100, 30)
	keys(m, "g")
	if procsPeek(m).Sel != 0 || procsPeek(m).Off != 0 {
		t.Errorf("g: sel %d off %d", procsPeek(m).Sel, procsPeek(m).Off)
	}
	send(m, tea.KeyPressMsg{Code: tea.KeyPgDown}, tea.KeyPressMsg{Code: tea.KeyPgUp})
	if procsPeek(m).Sel != 0 {
		t.Errorf("pgdown then pgup should come back to 0, got %d", procsPeek(m).Sel)
	}
	// The wheel scrolls even while the GPUs have the focus.
	keys(m, "tab")
	send(m, tea.MouseWheelMsg{Button: tea.MouseWheelDown}, tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if procsPeek(m).Sel != 6 {
		t.Errorf("two wheel notches should move 6 rows, got %d", procsPeek(m).Sel)
	}
}

func TestGrewMostOnlyForFillingAlerts(t *testing.T) {
	m, _ := newTestModel(Options{})
	setRules(m, testRules{observe: func(sampler.Snapshot) []advisor.Alert {
		return []advisor.Alert{
			{Rule: "other_tenants", Severity: advisor.Info, DeviceID: "0", Message: "tenants on GPU 0"},
			{Rule: "time_to_full", Severity: advisor.Warn, DeviceID: "0", Message: "GPU 0 full in ~9 min, mostly PID 4100 (alice)"},
		}
	}})
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, snapshotMsg(fakeSnap(t, 4)))
	s := screenText(m)
	if !strings.Contains(s, "tenants on GPU 0") || !strings.Contains(s, "full in ~9 min") {
		t.Fatalf("the alerts are not on screen, so nothing is checked:\n%s", s)
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "tenants on GPU 0") && strings.Contains(l, "grew most") {
			t.Errorf("a tenants alert is not about growth: %q", l)
		}
		if strings.Contains(l, "full in ~9 min") && strings.Contains(l, "grew most") {
			t.Errorf("the message names PID 4100 already: %q", l)
		}
	}
}

// Every sort key orders the live processes by its column (ties by memory),
// marks the column and says so in the footer; GPU IDs sort as numbers.
func TestSortEveryKey(t *testing.T) {
	m, _ := ready(t, 12, 160, 60)
	live := func() []procs.Row {
		var out []procs.Row
		for _, r := range procsPeek(m).Rows {
			if r.Kind == procs.RowProc && !r.Proc.Exited {
				out = append(out, r)
			}
		}
		return out
	}
	for _, tt := range []struct {
		mode   procs.SortMode
		title  string
		before func(a, b procs.Row) bool // a may come before b
	}{
		{procs.SortMem, "MEM▼", func(a, b procs.Row) bool { return a.Bytes >= b.Bytes }},
		{procs.SortPeak, "PEAK▼", func(a, b procs.Row) bool { return a.Proc.PeakBytes >= b.Proc.PeakBytes }},
		{procs.SortAge, "AGE▼", func(a, b procs.Row) bool { return a.Age >= b.Age }},
		{procs.SortPID, "PID▼", func(a, b procs.Row) bool { return a.Proc.PID <= b.Proc.PID }},
		{procs.SortUser, "USER▼", func(a, b procs.Row) bool { return b.Proc.User == "" || a.Proc.User != "" && a.Proc.User <= b.Proc.User }},
		{procs.SortGPU, "GPU▼", func(a, b procs.Row) bool { return procs.CompareIDs(a.Dev, b.Dev) <= 0 }},
	} {
		if procsPeek(m).SortBy != tt.mode {
			t.Fatalf("sort is %s, want %s", procsPeek(m).SortBy, tt.mode)
		}
		rows := live()
		distinct := false
		for i := 1; i < len(rows); i++ {
			if !tt.before(rows[i-1], rows[i]) {
				t.Errorf("sort %s: %s (PID %d) before %s (PID %d)", tt.mode, rows[i-1].Key(), rows[i-1].Proc.PID, rows[i].Key(), rows[i].Proc.PID)
			}
			if !tt.before(rows[i], rows[i-1]) {
				distinct = true
			}
		}
		if !distinct {
			t.Errorf("sort %s: the rows do not differ in the key, so nothing is checked", tt.mode)
		}
		s := screenText(m)
		if !strings.Contains(s, tt.title) || !strings.Contains(s, "sort "+tt.mode.String()) && !strings.Contains(s, "sorted by "+tt.mode.String()) {
			t.Errorf("sort %s: the header should show %s and the footer the sort", tt.mode, tt.title)
		}
		keys(m, "s")
	}
	// By GPU: 3 comes before 11 (as strings "11" < "3").
	for i := 0; i < int(procs.SortGPU); i++ {
		keys(m, "s")
	}
	pos := map[string]int{}
	for i, r := range live() {
		if _, ok := pos[r.Dev]; !ok {
			pos[r.Dev] = i
		}
	}
	for _, lo := range []string{"3", "9"} {
		a, ok1 := pos[lo]
		b, ok2 := pos["11"]
		if !ok1 || !ok2 || a >= b {
			t.Errorf("GPU %s (row %d, listed %v) should come before GPU 11 (row %d, listed %v)", lo, a, ok1, b, ok2)
		}
	}
}

// alertsModel is the demo after ten minutes under the real advisor, fed a
// snapshot every 30 s from minute 8 (so alerts have a history).
func alertsModel(t *testing.T, w, h int) *Model {
	t.Helper()
	m, _ := newTestModel(Options{User: demo.User, Version: "test"})
	mon := advisor.NewMonitor(judgeOptions(m.opts).Config)
	setRules(m, testRules{observe: mon.Observe})
	send(m, tea.WindowSizeMsg{Width: w, Height: h})
	for d := 8 * time.Minute; d <= 10*time.Minute; d += 30 * time.Second {
		send(m, snapshotMsg(demoSnap(t, d)))
	}
	if len(m.on.Shown().Alerts) < 4 {
		t.Fatalf("the demo should raise several alerts, got %d", len(m.on.Shown().Alerts))
	}
	return m
}

// The banners keep the process an alert names at 120 columns, and at 60×15
// show the most severe alert with a count of the rest; a lists them all,
// since when, where, whole, and scrolls.
func TestAlertsBannerAndScreen(t *testing.T) {
	m := alertsModel(t, 120, 40)
	banner := strings.Split(screenText(m), "\n")[1:5]
	named := 0
	for _, a := range m.on.Shown().Alerts {
		pid := pidIn(draw.AlertText(m.on.Shown().snap, a))
		if pid == "" {
			continue
		}
		for _, l := range banner {
			if strings.Contains(l, a.Message[:12]) {
				named++
				if !strings.Contains(l, pid) {
					t.Errorf("the banner cuts %q of the alert %q: %q", pid, a.Message, l)
				}
			}
		}
	}
	if named == 0 {
		t.Fatalf("no alert naming a PID is in the banner, so nothing is checked:\n%s", strings.Join(banner, "\n"))
	}

	small := alertsModel(t, 60, 15)
	s := screenText(small)
	if !strings.Contains(s, "CRIT") || !strings.Contains(s, fmt.Sprintf("+%d more · a: all alerts", len(small.on.Shown().Alerts)-1)) {
		t.Errorf("at 60×15 the banner should show the critical alert and count the others:\n%s", s)
	}
	keys(small, "a")
	s = screenText(small)
	if !small.showAlerts || !strings.Contains(s, fmt.Sprintf("alerts (%d in force)", len(small.on.Shown().Alerts))) {
		t.Fatalf("a should open the list of alerts:\n%s", s)
	}
	last := small.on.Shown().Alerts[len(small.on.Shown().Alerts)-1]
	if strings.Contains(s, last.Rule) {
		t.Fatalf("at 60×15 the last alert should need scrolling:\n%s", s)
	}
	for _, x := range small.on.Shown().Alerts[:1] {
		if !strings.Contains(s, x.Rule) || !strings.Contains(s, "since ") || !strings.Contains(s, "GPU "+x.DeviceID) {
			t.Errorf("the list lacks where and since when of %s:\n%s", x.Rule, s)
		}
	}
	keys(small, "G")
	if s := screenText(small); !strings.Contains(s, last.Rule) || !strings.Contains(s, "100%") {
		t.Errorf("G should scroll to the last alert (%s):\n%s", last.Rule, s)
	}
	checkFits(t, small, 60, 15)
	keys(small, "esc")
	if small.showAlerts {
		t.Error("esc should close the list")
	}
}

func pidIn(s string) string {
	return regexp.MustCompile(`PID \d+`).FindString(s)
}

// At 80×24 the help does not fit: it scrolls to its last line.
func TestHelpScrolls(t *testing.T) {
	m, _ := ready(t, 4, 80, 24)
	keys(m, "?")
	s := screenText(m)
	if !strings.Contains(s, "move up") || strings.Contains(s, "namespace to name it") || !strings.Contains(s, "scroll") {
		t.Fatalf("the help at 80×24 should start at the top and say it scrolls:\n%s", s)
	}
	checkFits(t, m, 80, 24)
	keys(m, "G")
	s = screenText(m)
	if !strings.Contains(s, "namespace to name it") || strings.Contains(s, "move up") {
		t.Errorf("G should show the end of the help:\n%s", s)
	}
	send(m, tea.KeyPressMsg{Code: tea.KeyPgUp}, tea.KeyPressMsg{Code: tea.KeyPgUp}, tea.KeyPressMsg{Code: tea.KeyPgUp})
	if s := screenText(m); !strings.Contains(s, "move up") {
		t.Errorf("pgup should come back to the top:\n%s", s)
	}
	keys(m, "esc")
	if m.helpOpen() {
		t.Error("esc should close the help")
	}
}

// A source that stops publishing (an NVML call that hangs) leaves the view
// live: keys and resizes still work, and the header says for how long no
// data came.
func TestStaleWhileTheSourceHangs(t *testing.T) {
	now := fixedStart
	m, _ := newTestModel(Options{Now: func() time.Time { return now }})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	cmd := send(m, snapshotMsg(fakeSnap(t, 4)))
	if cmd == nil {
		t.Fatal("a snapshot should schedule the stale check")
	}
	now = now.Add(4 * time.Second)
	if cmd := send(m, m.fresh.Check()); cmd == nil {
		t.Error("stale data should schedule the next update of its age")
	}
	if s := screenText(m); !strings.Contains(s, "STALE") || !strings.Contains(s, "no new data for 4s") {
		t.Errorf("the header should say the data is stale:\n%s", s)
	}
	now = now.Add(8 * time.Second)
	send(m, m.fresh.Tick())
	if s := screenText(m); !strings.Contains(s, "no new data for 12s") {
		t.Errorf("the age should follow the clock:\n%s", s)
	}
	keys(m, "s")
	if procsPeek(m).SortBy != procs.SortPeak {
		t.Error("keys should still work while no data comes")
	}
	send(m, tea.WindowSizeMsg{Width: 90, Height: 30})
	checkFits(t, m, 90, 30)
	if s := screenText(m); !strings.Contains(s, "STALE") {
		t.Errorf("still stale after the resize:\n%s", s)
	}
	earlier := m.fresh.Tick() // this stale spell's
	send(m, snapshotMsg(fakeSnap(t, 4)))
	if m.fresh.Stale() || strings.Contains(screenText(m), "STALE") {
		t.Error("a new snapshot should clear stale")
	}
	if cmd := send(m, earlier); cmd != nil {
		t.Error("a tick of an earlier stale spell should not go on")
	}
}

// A GPU that is lost (its error set) is marked on its row, and shows as
// normal again when it comes back.
func TestLostGPUComesBack(t *testing.T) {
	m, _ := ready(t, 4, 120, 40)
	lost := fakeSnap(t, 4)
	lost.Devices = append([]sampler.Device(nil), lost.Devices...)
	lost.Devices[2].Err = "GPU is lost"
	send(m, snapshotMsg(lost))
	var row string
	for _, l := range strings.Split(screenText(m), "\n") {
		if strings.Contains(l, "GPU is lost") {
			row = l
		}
	}
	if row == "" {
		t.Fatalf("the lost GPU is not marked:\n%s", screenText(m))
	}
	send(m, snapshotMsg(fakeSnap(t, 4)))
	if s := screenText(m); strings.Contains(s, "GPU is lost") || !strings.Contains(s, "GPU 2") {
		t.Errorf("the GPU came back but is still marked:\n%s", s)
	}
}

// The prompt holds the process for promptTTL at most, and closes when the
// process leaves the snapshot; nothing is sent then.
func TestKillPromptExpires(t *testing.T) {
	now := fixedStart
	m, killed := newTestModel(Options{Now: func() time.Time { return now }})
	var handles []*fakeHandle
	setOpener(m, func(t procsignal.Target) (prompt.Handle, error) {
		h := &fakeHandle{t: t, log: killed}
		handles = append(handles, h)
		return h, nil
	})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fakeSnap(t, 4)))
	selectProc(t, m, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	cmd := keys(m, "K")
	if !m.prompt.Active() || cmd == nil {
		t.Fatal("K should open the prompt and schedule its end")
	}
	send(m, prompt.Expired{Gen: promptPeek(m).Gen})
	if m.prompt.Active() || !strings.Contains(screenText(m), "expired") || !handles[0].closed {
		t.Errorf("the prompt should expire, say so and let the process go:\n%s", screenText(m))
	}
	// An answer that comes after the time is up sends nothing either.
	keys(m, "K")
	now = now.Add(prompt.TTL + time.Second)
	keys(m, "y")
	if len(*killed) != 0 || !strings.Contains(screenText(m), "expired") {
		t.Errorf("a late y sent %v", *killed)
	}
	// The process exits while the prompt is open.
	now = fixedStart
	r := selectProc(t, m, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	keys(m, "K")
	gone := fakeSnap(t, 4)
	gone.Devices = append([]sampler.Device(nil), gone.Devices...)
	for i, d := range gone.Devices {
		if d.ID == r.Dev {
			var ps []sampler.Process
			for _, p := range d.Processes {
				if p.PID != r.Proc.PID {
					ps = append(ps, p)
				}
			}
			gone.Devices[i].Processes = ps
		}
	}
	send(m, snapshotMsg(gone))
	if m.prompt.Active() || !strings.Contains(screenText(m), "exited before the answer") || !handles[len(handles)-1].closed {
		t.Errorf("the prompt should close when its process leaves:\n%s", screenText(m))
	}
	keys(m, "y")
	if len(*killed) != 0 {
		t.Errorf("signalled %v", *killed)
	}
}

// What procsignal refuses (a reused PID, an exited process) is said on the
// status line, and no prompt opens.
func TestKillRefusedByTheCheck(t *testing.T) {
	m, killed := ready(t, 4, 120, 40)
	setOpener(m, func(t procsignal.Target) (prompt.Handle, error) {
		return nil, fmt.Errorf("PID %d %w: it started at 09:12:01.00, the one shown at 08:01:00.00 (the PID was reused)", t.PID, procsignal.ErrChanged)
	})
	r := selectProc(t, m, func(r procs.Row) bool { return r.Mine && r.Kind == procs.RowProc })
	keys(m, "K")
	if m.prompt.Active() || !strings.Contains(screenText(m), fmt.Sprintf("nothing sent: PID %d is no longer the process shown", r.Proc.PID)) {
		t.Errorf("a refused check should say so:\n%s", screenText(m))
	}
	keys(m, "y")
	if len(*killed) != 0 {
		t.Errorf("signalled %v", *killed)
	}
}

// Where processes have a job, host CPU and host memory (the demo's do), the
// table shows JOB, CPU% and RSS, sorts by CPU% and RSS (n/a last), and u
// groups by user, then by job; where none has, the columns are left out.
// checkDescending checks that the live processes of rows are in descending
// order of val, those without a value last, and that at least three were
// compared.
func checkDescending(t *testing.T, mode procs.SortMode, rows []procs.Row, val func(procs.Row) (float64, bool)) {
	t.Helper()
	prev, seenNA, n := math.Inf(1), false, 0
	for _, r := range rows {
		if r.Kind != procs.RowProc || r.Proc.Exited {
			continue
		}
		v, ok := val(r)
		switch {
		case !ok:
			seenNA = true
		case seenNA:
			t.Errorf("sort %s: PID %d (%v) after a process without a value", mode, r.Proc.PID, v)
		case v > prev:
			t.Errorf("sort %s: PID %d (%v) after %v", mode, r.Proc.PID, v, prev)
		default:
			prev, n = v, n+1
		}
	}
	if n < 3 {
		t.Errorf("sort %s: %d processes with a value, nothing compared", mode, n)
	}
}

func TestJobCPUAndRSSColumns(t *testing.T) {
	m, _ := newTestModel(Options{User: demo.User})
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, snapshotMsg(demoSnap(t, 10*time.Minute)))
	s := screenText(m)
	for _, want := range []string{"JOB", "CPU%", "RSS", "slurm 4242.0", "pod "} {
		if !strings.Contains(s, want) {
			t.Errorf("the table lacks %q:\n%s", want, s)
		}
	}
	for _, tt := range []struct {
		mode  procs.SortMode
		title string
		val   func(procs.Row) (float64, bool)
	}{
		{procs.SortCPU, "CPU%▼", func(r procs.Row) (float64, bool) {
			if r.Proc.CPUPercent == nil {
				return 0, false
			}
			return *r.Proc.CPUPercent, true
		}},
		{procs.SortRSS, "RSS▼", func(r procs.Row) (float64, bool) {
			if r.Proc.HostMemoryBytes == nil {
				return 0, false
			}
			return float64(*r.Proc.HostMemoryBytes), true
		}},
	} {
		for i := 0; i < int(procs.NSortModes) && procsPeek(m).SortBy != tt.mode; i++ {
			keys(m, "s")
		}
		if procsPeek(m).SortBy != tt.mode || !strings.Contains(screenText(m), tt.title) {
			t.Fatalf("s should reach sort %s and mark %s", tt.mode, tt.title)
		}
		checkDescending(t, tt.mode, procsPeek(m).Rows, tt.val)
	}
	keys(m, "u")
	if procsPeek(m).Group != procs.GroupUser || !strings.Contains(screenText(m), "by user") {
		t.Fatal("u should group by user")
	}
	keys(m, "u")
	groups := map[string]procs.Row{}
	for _, r := range procsPeek(m).Rows {
		groups[r.User] = r
	}
	if procsPeek(m).Group != procs.GroupJob || !strings.Contains(screenText(m), "by job") {
		t.Fatal("a second u should group by job")
	}
	if g, ok := groups["slurm 4242.0"]; !ok || g.NProcs == 0 || groups["(no job)"].NProcs == 0 {
		t.Errorf("the job groups: %v", groups)
	}
	keys(m, "u")
	if procsPeek(m).Group != procs.GroupNone {
		t.Error("a third u should end the grouping")
	}

	// No job, CPU or host memory: no such column, live or --once.
	plain, _ := ready(t, 4, 200, 60)
	var b bytes.Buffer
	if err := WriteTable(&b, fakeSnap(t, 4), advisor.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{screenText(plain), b.String()} {
		for _, col := range []string{" JOB ", "CPU%", " RSS "} {
			if strings.Contains(out, col) {
				t.Errorf("%q shown without any value:\n%s", col, out)
			}
		}
	}
	keys(plain, "u", "u")
	if procsPeek(plain).Group != procs.GroupNone {
		t.Error("without jobs, u goes from users back to no grouping")
	}
}

// On the main screen the status after z and the compact list's header say
// the same span.
func TestSpanKeyMainScreen(t *testing.T) {
	m, _ := ready(t, 8, 120, 40) // compact: eight GPUs, ten minutes of history
	keys(m, "z")
	s := screenText(m)
	if !strings.Contains(s, "graphs show the last 10m, all the history there is (15m asked)") || !strings.Contains(s, "USED, LAST 10M") {
		t.Errorf("the status and the header should both say 10m:\n%s", s)
	}
}

func TestFirstSnapshotBeforeItsProcessListsIsShownNotJudged(t *testing.T) {
	m, _ := newTestModel(Options{Bell: true})
	judged := 0
	alerts := []advisor.Alert{{Rule: "threshold", Severity: advisor.Crit, DeviceID: "0", Message: "GPU 0 at 95%"}}
	setRules(m, testRules{observe: func(sampler.Snapshot) []advisor.Alert { judged++; return alerts }})
	send(m, tea.WindowSizeMsg{Width: 160, Height: 90})
	pending := fakeSnap(t, 4)
	pending.ProcessesPending = true
	pending.Devices = slices.Clone(pending.Devices)
	for i := range pending.Devices {
		pending.Devices[i].Processes, pending.Devices[i].Unattributed = nil, nil
	}
	cmd := send(m, snapshotMsg(pending))
	s := screenText(m)
	if !strings.Contains(s, "H200") || !strings.Contains(s, "reading the process list") {
		t.Errorf("the first frame should show the GPUs and that their processes are being read:\n%s", s)
	}
	if judged != 0 || bells(cmd) || strings.Contains(s, "GPU 0 at 95%") {
		t.Errorf("a snapshot without its processes went to the rules (%d times) or rang the bell", judged)
	}
	cmd = send(m, snapshotMsg(fakeSnap(t, 4)))
	s = screenText(m)
	if strings.Contains(s, "reading the process list") || !strings.Contains(s, "python train.py") || judged != 1 || !bells(cmd) {
		t.Errorf("the full snapshot should replace the placeholder and be judged (judged %d):\n%s", judged, s)
	}
}

func TestOmittedProcessesHaveARowOfTheirOwn(t *testing.T) {
	snap := fakeSnap(t, 1)
	snap.Devices = slices.Clone(snap.Devices)
	six := uint64(6 << 30)
	snap.Devices[0].OmittedProcesses, snap.Devices[0].OmittedBytes = 3, &six
	var row *procs.Row
	rows := procs.Rows(snap, "", nil)
	for i := range rows {
		if rows[i].Kind == procs.RowOmitted {
			row = &rows[i]
		}
	}
	if row == nil || !row.HasBytes || row.Bytes != six || row.Omitted != 3 {
		t.Fatalf("rows %+v: want one for the 3 processes not exported, with their 6 GiB", rows)
	}
	var b strings.Builder
	if err := WriteTable(&b, snap, advisor.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "3 more processes, not exported") || !strings.Contains(out, "6.0 GiB") {
		t.Errorf("--once table lacks the row for the processes not exported:\n%s", out)
	}
	m, _ := newTestModel(Options{})
	send(m, tea.WindowSizeMsg{Width: 160, Height: 90}, snapshotMsg(snap))
	if s := screenText(m); !strings.Contains(s, "3 more processes, not exported") {
		t.Errorf("the live view lacks the row for the processes not exported:\n%s", s)
	}
}

// A device whose process list is older than staleListAfter (a slow
// interval, a failing list) has its age beside each of its process rows, on
// the screen and in the --once table; the other devices' rows have none.
func TestOldProcessListMarked(t *testing.T) {
	snap := fakeSnap(t, 2)
	snap.Devices = slices.Clone(snap.Devices)
	snap.Devices[0].ListedAt = snap.Time.Add(-12 * time.Second)
	snap.Devices[1].ListedAt = snap.Time.Add(-time.Second)
	m := newReady(snap, [2]int{160, 50})
	check := func(what, text string) {
		t.Helper()
		var on0, on1, marked0 int
		for _, l := range strings.Split(text, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || !strings.Contains(l, "python") && !strings.Contains(l, "unattributed") {
				continue
			}
			switch f[0] {
			case "0":
				on0++
				if strings.HasPrefix(strings.TrimSpace(l), "0 12s old") {
					marked0++
				}
			case "1":
				on1++
			}
			if f[0] == "1" && strings.Contains(l, " old") {
				t.Errorf("%s: GPU 1's list is a second old, its row is marked: %q", what, l)
			}
		}
		if on0 == 0 || marked0 != on0 {
			t.Errorf("%s: %d of GPU 0's %d rows marked 12s old, want all:\n%s", what, marked0, on0, text)
		}
	}
	check("screen", screenText(m))
	check("--once", ansi.Strip(procs.RenderTable(m.ctx.Styles, snap, DefaultThresholdsForTest())))
}

// An alert the source reports (a fleet host's own vramtop_alert) shows on
// the first frame: the GPU's tag and the alerts screen, though the rules
// here would not fire yet.
func TestReportedAlertOnFirstFrame(t *testing.T) {
	snap := fakeSnap(t, 4)
	snap.Devices = slices.Clone(snap.Devices)
	id := snap.Devices[3].ID
	if pct := snap.Devices[3].UsedPercent(); pct >= 80 {
		t.Fatalf("GPU 3 at %.0f%%: the test needs one below the warning line", pct)
	}
	snap.ReportedAlerts = []sampler.ReportedAlert{{Rule: "threshold", Severity: "warn", DeviceID: id, Message: "node's vramtop reports threshold (warn) on GPU 3"}}
	m, _ := newTestModel(Options{})
	// The advisor's own monitor, as the live view runs it.
	mon := advisor.NewMonitor(advisor.Config{})
	setRules(m, testRules{observe: mon.Observe})
	send(m, tea.WindowSizeMsg{Width: 160, Height: 50}, snapshotMsg(snap))
	found := false
	for _, l := range strings.Split(screenText(m), "\n") {
		if strings.Contains(l, "GPU 3") && strings.Contains(l, "WARN") {
			found = true
		}
	}
	if !found {
		t.Errorf("GPU 3 has no WARN on the first frame:\n%s", screenText(m))
	}
	keys(m, "a")
	if s := screenText(m); !strings.Contains(s, "reports threshold (warn) on GPU 3") {
		t.Errorf("the alerts screen lacks the reported alert:\n%s", s)
	}
}
