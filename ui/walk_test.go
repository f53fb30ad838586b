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
