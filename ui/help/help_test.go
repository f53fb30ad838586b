package help

import (
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/ui/common"
)

// A full screen that declares its own key is listed on the help screen
// after the keymap's; one whose key is the keymap's is listed once.
func TestHelpListsTheScreensOwnKeys(t *testing.T) {
	ctx := &common.Context{Keys: common.NewKeyMap(false), Th: advisor.DefaultThresholds(), Styles: common.NewStyles(true, true), Title: "vramtop"}
	h := New(ctx)
	clock := key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "the time, full screen"))
	ctx.ScreenKeys = []key.Binding{h.Key(), clock}
	h.SetSize(200, 60)
	h.Update(common.Opened{})
	s := ansi.Strip(h.View())
	if n := strings.Count(s, "the time, full screen"); n != 1 {
		t.Errorf("the screen's own key is listed %d times, want once:\n%s", n, s)
	}
	if n := strings.Count(s, "? F1"); n != 1 {
		t.Errorf("the help key is listed %d times, want once:\n%s", n, s)
	}
}

// The legend of the columns breaks between its entries: each entry that
// fits a line is on one, so that nothing like a lone "(I)" or a column's
// name parted from what it holds is left on a line of its own.
func TestColumnLegendKeepsEachEntryWhole(t *testing.T) {
	entries := []string{common.SortMarks}
	for _, c := range common.ColumnTable() {
		entries = append(entries, c.Name+" "+c.Holds)
	}
	for _, w := range []int{60, 80, 100, 120, 160, 200} {
		ctx := &common.Context{Keys: common.NewKeyMap(false), Th: advisor.DefaultThresholds(), Styles: common.NewStyles(true, true), Title: "vramtop"}
		h := New(ctx)
		h.SetSize(w, 200)
		h.Update(common.Opened{})
		lines := strings.Split(ansi.Strip(h.View()), "\n")
		for _, e := range entries {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, e) }) {
				t.Errorf("at %d columns the legend's %q is not on one line", w, e)
			}
		}
		for _, l := range lines {
			if f := strings.Fields(l); len(f) == 1 && strings.Contains(f[0], "(") {
				t.Errorf("at %d columns a line holds only %q", w, f[0])
			}
		}
	}
}
