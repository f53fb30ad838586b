package state

import (
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Graph spans the z key cycles through; the first is the default.
var spans = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour, time.Minute}

// intervalSteps are the sampling intervals the +/- keys step along.
var intervalSteps = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}

// nextInterval is the step after cur (before it when faster); an interval
// between steps snaps to the next one in that direction, and the ends stay.
func nextInterval(cur time.Duration, faster bool) time.Duration {
	if faster {
		for i := len(intervalSteps) - 1; i >= 0; i-- {
			if intervalSteps[i] < cur {
				return intervalSteps[i]
			}
		}
		return intervalSteps[0]
	}
	for _, s := range intervalSteps {
		if s > cur {
			return s
		}
	}
	return intervalSteps[len(intervalSteps)-1]
}

// Tuning is what the user steps through: the sampling interval (+/-), the
// source's until one is asked for, and the span of the graphs (z).
type Tuning struct {
	interval time.Duration // 0 until a snapshot says it or the user asks
	spanIdx  int           // in spans
}

// Heard takes the interval a snapshot was sampled at (0: not said).
func (t *Tuning) Heard(d time.Duration) {
	if d > 0 {
		t.interval = d
	}
}

// Step is the interval one step faster or slower than the one in force
// (the default before any is known), and asks for it.
func (t *Tuning) Step(faster bool) time.Duration {
	cur := t.interval
	if cur <= 0 {
		cur = sampler.DefaultInterval
	}
	t.interval = max(nextInterval(cur, faster), sampler.MinInterval)
	return t.interval
}

// NextSpan moves to the next span of the graphs and returns it.
func (t *Tuning) NextSpan() time.Duration {
	t.spanIdx = (t.spanIdx + 1) % len(spans)
	return spans[t.spanIdx]
}

// Span is the span of the graphs asked for.
func (t *Tuning) Span() time.Duration { return spans[t.spanIdx] }

// Interval is the sampling interval in force: the last one a snapshot said
// or the user asked for, 0 before either.
func (t *Tuning) Interval() time.Duration { return t.interval }
