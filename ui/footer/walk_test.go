package footer

import (
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/ui/common"
)

// What the demo's screens showed in a terminal of 80×24, 100×30 and
// 120×40, cut where a reader is misled: each text as the live view had it.

// The footer lists whole keys: "s so…" at 80 columns and "K …" at 120
// said nothing.
func TestFooterListsWholeKeys(t *testing.T) {
	k := common.NewKeyMap(false)
	hints := []key.Binding{k.Help, k.Quit, k.Tab, k.Enter, k.Alerts, k.Sort, k.Filter, k.Mine, k.Group, k.Kill, k.SortPick}
	for _, w := range []int{80, 100, 120} {
		f := &Bar{ctx: &common.Context{Styles: common.NewStyles(true, true)}, width: w, s: State{State: []string{"sort memory"}, Hints: hints}}
		got := ansi.Strip(f.View())
		if strings.Contains(got, "…") || common.CellWidth(got) > w {
			t.Errorf("%d columns: the footer %q cuts a key", w, got)
		}
		if !strings.HasPrefix(got, "sort memory  ? F1 help") {
			t.Errorf("%d columns: the footer %q", w, got)
		}
	}
	f := &Bar{ctx: &common.Context{Styles: common.NewStyles(true, true)}, width: 120, s: State{Hints: []key.Binding{k.Up, k.Down}}}
	if got := strings.TrimRight(ansi.Strip(f.View()), " "); got != "↑/k up · ↓/j down" {
		t.Errorf("the alerts screen's footer says %q, want ↑/k up · ↓/j down", got)
	}
}
