package replay

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// Samples jitter: each lands a little early or late of its second. +3s is
// the sample nearest 3 s in, not the one before it.
func TestOffsetRoundsToTheNearestSample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jitter.jsonl")
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	now := t0
	s, _ := sampler.New(demo.New(t0), sampler.Config{Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	w, err := recorder.Open(recorder.Options{Path: path, Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	jitter := []time.Duration{0, 30 * time.Millisecond, 20 * time.Millisecond, 15 * time.Millisecond, 40 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond}
	for k, j := range jitter {
		now = t0.Add(time.Duration(k)*time.Second + j)
		snap, _ := s.Tick(now)
		if err := w.Write(snap); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, _ := load(t, path)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"+3s", 3*time.Second + 15*time.Millisecond},
		{"+1s", time.Second + 30*time.Millisecond},
		{"-2s", 4*time.Second + 40*time.Millisecond}, // end 6.025 s, 2 s back: 4.025 s, nearest 4.04
		{"+2.6s", 3*time.Second + 15*time.Millisecond},
	} {
		got, err := ParseMoment(c.in, rec)
		if err != nil || !got.Equal(t0.Add(c.want)) {
			t.Errorf("ParseMoment(%q) = %v (%v in), %v; want %v in", c.in, got, got.Sub(t0), err, c.want)
		}
	}
}
