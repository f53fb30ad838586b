package prompt

import (
	"strings"
	"syscall"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// What the demo's screens showed in a terminal of 80×24, 100×30 and
// 120×40, cut where a reader is misled: each text as the live view had it.

// The kill prompt at 80 columns said "y/n  (d…" and "(demo: no…": the
// command gives way first, the demo's note is whole or short, and a
// command is never cut inside a character.
func TestKillPromptFits80(t *testing.T) {
	k := New(&common.Context{Styles: common.NewStyles(true, true)}, &common.Outbox{}, nil, nil)
	k.SetSize(80, 1)
	cmd := "python train.py --model llama-8b --batch 32 --lr 3e-4 --epochs 10"
	for _, list := range []bool{false, true} {
		k.p = &pendingKill{pid: 41230, sig: syscall.SIGTERM, what: draw.Fit(cmd, 40), demo: true, list: list}
		got := ansi.Strip(k.View())
		if common.CellWidth(got) > 80 || !strings.Contains(got, "y/n") || strings.Contains(got, "(d…") || strings.Contains(got, "no…") ||
			!strings.Contains(got, "(demo: nothing is sent)") && !strings.Contains(got, "(demo)") {
			t.Errorf("list %v: the prompt reads %q", list, got)
		}
		if !list && !strings.Contains(got, "(python train.py") {
			t.Errorf("the prompt should name the command: %q", got)
		}
	}
}
