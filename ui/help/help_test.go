package help

import (
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
