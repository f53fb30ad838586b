package draw

import (
	"strings"
	"testing"
)

// What the demo's screens showed in a terminal of 80×24, 100×30 and
// 120×40, cut where a reader is misled: each text as the live view had it.

// A parenthesis is dropped whole, not left open ("(61.62 GiB of 79.65 GiB
// … PID" at 100 columns, "(other containers or PID namespaces…" at 120).
func TestElideDropsAnOpenParenthesisWhole(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"GPU 0 at 77.3% (61.62 GiB of 79.65 GiB used), peaked at 86.7% 13 s ago, over the 80% warning line; largest:", 42, "GPU 0 at 77.3% …"},
		{"GPU 2: 1.5 GiB used by no process visible here (other containers or PID namespaces, leaked contexts, the driver)", 86, "GPU 2: 1.5 GiB used by no process visible here…"},
		{"GPU 0 at 77.3% (61.62 GiB of 79.65 GiB used), peaked at 86.7% 13 s ago", 60, "GPU 0 at 77.3% (61.62 GiB of 79.65 GiB used), peaked…"},
	} {
		if got := Elide(c.in, c.w); got != c.want {
			t.Errorf("Elide(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
	}
}

// A figure never wraps away from its unit on the alerts screen:
// "(17.08" / "GiB here)" at 80 columns.
func TestAlertWrapKeepsFigures(t *testing.T) {
	msg := "GPU 0 is 77.9% (78.1% at its peak) full; GPU 1 has 44.59 GiB free (17.08 GiB here): CUDA_VISIBLE_DEVICES=1"
	for w := 20; w <= 80; w++ {
		for _, l := range strings.Split(Wordwrap(msg, w), "\n") {
			if f := strings.Fields(l); len(f) > 0 && (f[0] == "GiB" || f[0] == "here):" && strings.HasSuffix(l, "(17.08")) {
				t.Errorf("at %d: a unit parted from its figure:\n%s", w, Wordwrap(msg, w))
			}
		}
		if strings.ReplaceAll(Wordwrap(msg, w), "\n", " ") != msg {
			t.Errorf("at %d the text changed: %q", w, Wordwrap(msg, w))
		}
	}
}

// Nor does PID part from its number ("largest: PID" / "41230 (alice, …" at
// 120 columns).
func TestAlertWrapKeepsPIDs(t *testing.T) {
	msg := "GPU 0 at 77.6% (61.88 GiB of 79.65 GiB used), peaked at 86.7% 21 s ago, over the 80% warning line; largest: PID 41230 (alice, python train.py) with 55.04 GiB"
	for w := 20; w <= 120; w++ {
		for _, l := range strings.Split(Wordwrap(msg, w), "\n") {
			if strings.HasSuffix(l, "PID") || strings.HasSuffix(l, "GPU") {
				t.Errorf("at %d: PID or GPU parted from its number:\n%s", w, Wordwrap(msg, w))
			}
		}
	}
}
