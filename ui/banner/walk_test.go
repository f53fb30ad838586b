package banner

import (
	"strings"
	"testing"

	"github.com/vramtop/vramtop/ui/common"
)

// What the demo's screens showed in a terminal of 80×24, 100×30 and
// 120×40, cut where a reader is misled: each text as the live view had it.

// A banner at 80 columns read "GPU 1 full… PID 30411 (carol, python
// serve.py) (+478.18 MiB/min)", as if the GPU were full: a head that says
// no figure gives way to the message's own words.
func TestBannerDoesNotSayFull(t *testing.T) {
	msg := "GPU 1 full in ~96 min at this rate (+480 MiB/min), mostly PID 30411 (carol, python serve.py) (+478.18 MiB/min)"
	got := shorten(msg, 73)
	if strings.Contains(got, "full…") || !strings.HasPrefix(got, "GPU 1 full in ~96 min") || common.CellWidth(got) > 73 {
		t.Errorf("shorten = %q, want the time to full kept", got)
	}
	// The threshold's head keeps its figure and the process.
	th := "GPU 0 at 77.3% (61.62 GiB of 79.65 GiB used), peaked at 86.7% 13 s ago, over the 80% warning line; largest: PID 41230 (alice, python train.py) with 54.8 GiB"
	if got := shorten(th, 73); got != "GPU 0 at 77.3% … PID 41230 (alice, python train.py) with 54.8 GiB" {
		t.Errorf("shorten = %q", got)
	}
}
