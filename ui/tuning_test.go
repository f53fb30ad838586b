package ui

import (
	"testing"
	"time"
)

// + and - step from the source's interval, the default before one is
// known; z goes through the spans and back to the first.
func TestTuningStepsFromTheSourcesInterval(t *testing.T) {
	var tu tuning
	if got := tu.step(true); got != 500*time.Millisecond {
		t.Errorf("faster before any snapshot: %v, want a step under the 1s default", got)
	}
	tu.heard(0)
	if tu.interval != 500*time.Millisecond {
		t.Errorf("a snapshot without an interval changed it to %v", tu.interval)
	}
	tu.heard(10 * time.Second)
	if got := tu.step(false); got != 30*time.Second {
		t.Errorf("slower from the source's 10s: %v, want 30s", got)
	}
	for i := 0; i < 20; i++ {
		tu.step(true)
	}
	if tu.interval != 50*time.Millisecond {
		t.Errorf("faster and faster ends at %v, want 50ms", tu.interval)
	}
	first := tu.span()
	seen := map[time.Duration]bool{first: true}
	for i := 1; i < len(spans); i++ {
		seen[tu.nextSpan()] = true
	}
	if len(seen) != len(spans) || tu.nextSpan() != first || first != 5*time.Minute {
		t.Errorf("z: spans %v, back to %v; want each once from 5m, then 5m", seen, tu.span())
	}
}
