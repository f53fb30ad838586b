package recorder

import (
	"context"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Loop drives s on its own cadence, as Sampler.Run does, and calls each
// with every snapshot published, in order and none dropped: a consumer
// that must see every snapshot (the recorder, a job's report) uses it
// instead of Run and Subscribe. It returns when ctx ends, when until (if
// not zero) has passed, or with the first error each returns. It does not
// close the sampler.
func Loop(ctx context.Context, s *sampler.Sampler, until time.Time, now func() time.Time, each func(sampler.Snapshot) error) error {
	if now == nil {
		now = time.Now
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var next time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		t := now()
		if snap, ok := s.Tick(t); ok {
			if err := each(snap); err != nil {
				return err
			}
		}
		iv := s.Interval()
		if next.IsZero() || t.Sub(next) > iv {
			next = t
		}
		next = next.Add(iv)
		if !until.IsZero() && next.After(until) {
			return nil
		}
		timer.Reset(time.Until(next))
	}
}
