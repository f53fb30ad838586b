package gpus

import "testing"

// What the demo's screens showed in a terminal of 80×24, 100×30 and
// 120×40, cut where a reader is misled: each text as the live view had it.

// A GPU row's note of one word ("full…", "clears…") is left out.
func TestGPUNoteOfOneWordIsLeftOut(t *testing.T) {
	for _, c := range []struct {
		reason string
		w      int
		want   string
	}{
		{"full in ~96 min", 6, ""},
		{"clears below 78%", 8, ""},
		{"peak 86.7% 15 s ago", 14, "peak 86.7% …"},
		{"full in ~96 min", 15, "full in ~96 min"},
	} {
		if got := gpuNote(c.reason, c.w); got != c.want {
			t.Errorf("gpuNote(%q, %d) = %q, want %q", c.reason, c.w, got, c.want)
		}
	}
}
