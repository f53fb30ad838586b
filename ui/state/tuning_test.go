package state

import (
	"testing"
	"time"
)

// + and - step from the source's interval, the default before one is
// known; z goes through the spans and back to the first.
func TestTuningStepsFromTheSourcesInterval(t *testing.T) {
	var tu Tuning
	if got := tu.Step(true); got != 500*time.Millisecond {
		t.Errorf("faster before any snapshot: %v, want a step under the 1s default", got)
	}
	tu.Heard(0)
	if tu.interval != 500*time.Millisecond {
		t.Errorf("a snapshot without an interval changed it to %v", tu.interval)
	}
	tu.Heard(10 * time.Second)
	if got := tu.Step(false); got != 30*time.Second {
		t.Errorf("slower from the source's 10s: %v, want 30s", got)
	}
	for i := 0; i < 20; i++ {
		tu.Step(true)
	}
	if tu.interval != 50*time.Millisecond {
		t.Errorf("faster and faster ends at %v, want 50ms", tu.interval)
	}
	first := tu.Span()
	seen := map[time.Duration]bool{first: true}
	for i := 1; i < len(spans); i++ {
		seen[tu.NextSpan()] = true
	}
	if len(seen) != len(spans) || tu.NextSpan() != first || first != 5*time.Minute {
		t.Errorf("z: spans %v, back to %v; want each once from 5m, then 5m", seen, tu.Span())
	}
}

// An interval between the steps snaps to the next step in the direction
// asked.
func TestIntervalSnapsToSteps(t *testing.T) {
	for _, tt := range []struct {
		from   time.Duration
		faster bool
		want   time.Duration
	}{
		{62500 * time.Microsecond, false, 100 * time.Millisecond},
		{62500 * time.Microsecond, true, 50 * time.Millisecond},
		{937500 * time.Microsecond, false, time.Second},
		{937500 * time.Microsecond, true, 500 * time.Millisecond},
		{3 * time.Second, false, 5 * time.Second},
		{3 * time.Second, true, 2 * time.Second},
		{2 * time.Minute, true, time.Minute},
		{time.Minute, false, time.Minute},
		{50 * time.Millisecond, true, 50 * time.Millisecond},
	} {
		if got := nextInterval(tt.from, tt.faster); got != tt.want {
			t.Errorf("from %v faster=%v: %v, want %v", tt.from, tt.faster, got, tt.want)
		}
	}
}
