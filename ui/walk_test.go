package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/ui/procs"
)

// What the demo's screens showed in a terminal of 80×24, 100×30 and
// 120×40, cut or said where a reader is misled.

// Grouping by user (u) shows the new list from its top: the process
// list's scroll kept the demo's biggest user, erin, out of sight at 80×24.
func TestGroupingShowsTheListFromTheTop(t *testing.T) {
	m := advisedModel(Options{User: demo.User, Version: "test"}, false)
	send(m, tea.WindowSizeMsg{Width: 80, Height: 24}, snapshotMsg(demoSnap(t, 3*time.Minute)))
	keys(m, "tab", "end")
	if procsPeek(m).Off == 0 {
		t.Fatalf("the list should scroll at 80×24:\n%s", screenText(m))
	}
	keys(m, "u")
	if pk := procsPeek(m); pk.Group != procs.GroupUser || pk.Off != 0 || pk.Sel != 0 {
		t.Errorf("by user: offset %d, selection %d, want the top", pk.Off, pk.Sel)
	}
	if s := screenText(m); !strings.Contains(s, "erin") {
		t.Errorf("by user, the biggest user is out of sight:\n%s", s)
	}
}

// A process's detail says since when vramtop has seen it where that is
// later than the GPU's history: erin's vLLM server, up 1d02h, was filled
// from the view's start only, as if it had started then.
func TestProcessDetailSaysSinceWhenSeen(t *testing.T) {
	snap := demoSnap(t, 10*time.Minute)
	seen := snap.Time.Add(-time.Minute)
	var pid uint32
	for i, d := range snap.Devices {
		for j, p := range d.Processes {
			if p.User == "erin" {
				snap.Devices[i].Processes[j].History = p.History.Since(seen)
				pid = p.PID
			}
		}
	}
	if pid == 0 {
		t.Fatal("no erin in the demo")
	}
	for _, w := range []int{80, 100, 120} {
		m := advisedModel(Options{User: demo.User, Version: "test"}, false)
		send(m, tea.WindowSizeMsg{Width: w, Height: w * 3 / 10}, snapshotMsg(snap))
		selectProc(t, m, func(r procs.Row) bool { return r.Kind == procs.RowProc && r.Proc.PID == pid })
		keys(m, "enter")
		s := screenText(m)
		if !strings.Contains(s, "filled: this process (seen since "+seen.Format("15:04")) {
			t.Errorf("%d columns: the legend does not say since when the process was seen:\n%s", w, s)
		}
	}
	// A process seen as far back as its GPU says nothing more.
	m := advisedModel(Options{User: demo.User, Version: "test"}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(demoSnap(t, 10*time.Minute)))
	selectProc(t, m, func(r procs.Row) bool { return r.Kind == procs.RowProc && r.Proc.User == "erin" })
	keys(m, "enter")
	if s := screenText(m); !strings.Contains(s, "filled: this process") || strings.Contains(s, "seen since") {
		t.Errorf("erin seen all along: the legend should not say since when:\n%s", s)
	}
}

// z past the history says so in plain words: "(15m asked: the history is
// no longer)" read as if the history were gone.
func TestSpanPastTheHistorySaysSo(t *testing.T) {
	m, _ := ready(t, 4, 80, 24) // ten minutes of history
	keys(m, "z")
	if s := screenText(m); !strings.Contains(s, "graphs show the last 10m, all the history there is (15m asked)") {
		t.Errorf("z over ten minutes of history:\n%s", s)
	}
}
