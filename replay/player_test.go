package replay

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// demoRecording records 10 minutes of the demo, one snapshot a second,
// from 23:55 (so it runs past midnight), and loads it.
func demoRecording(t *testing.T) (*Recording, []sampler.Snapshot) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec.jsonl.gz")
	t0 := time.Date(2026, 3, 14, 23, 55, 0, 0, time.FixedZone("CET", 3600))
	want := demoRunFrom(t, path, t0, 10*time.Minute)
	rec, warns := load(t, path)
	if len(warns) > 0 {
		t.Fatal(warns)
	}
	return rec, want
}

func TestParseMoment(t *testing.T) {
	rec, _ := demoRecording(t)
	cet := time.FixedZone("CET", 3600)
	start := time.Date(2026, 3, 14, 23, 55, 0, 0, cet)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"start", start},
		{"end", start.Add(10 * time.Minute)},
		{"+1m30s", start.Add(90 * time.Second)},
		{"-2m", start.Add(8 * time.Minute)},
		{"23:58", start.Add(3 * time.Minute)},
		{"23:58:07", start.Add(3*time.Minute + 7*time.Second)},
		// Past midnight: the recording's second day.
		{"00:01:00", start.Add(6 * time.Minute)},
		{"2026-03-15 00:02:00", start.Add(7 * time.Minute)},
		{"2026-03-14T23:00:30Z", start.Add(5*time.Minute + 30*time.Second)},
	} {
		got, err := ParseMoment(c.in, rec)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseMoment(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "25:00", "+1x", "+20m", "23:50", "2026-03-13 12:00:00", "-1h"} {
		if got, err := ParseMoment(bad, rec); err == nil {
			t.Errorf("ParseMoment(%q) = %v, want an error", bad, got)
		}
	}
	_, err := ParseMoment("23:50", rec)
	if err == nil || !strings.Contains(err.Error(), "outside the recording") {
		t.Errorf("a moment before the start: %v, want it named outside the recording", err)
	}
}

// fakeClock is a settable clock for the player.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestPlayerControls(t *testing.T) {
	rec, want := demoRecording(t)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := NewPlayer(rec, time.Time{}, false)
	p.now = clock.now
	p.rebaseLocked()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	// next waits (bounded) for the snapshot published after a control.
	next := func(what string) sampler.Snapshot {
		t.Helper()
		select {
		case s := <-p.Snapshots():
			return s
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no snapshot published", what)
		}
		return sampler.Snapshot{}
	}
	expect := func(what string, i int) {
		t.Helper()
		s := next(what)
		if !s.Time.Equal(want[i].Time) || s.Seq != want[i].Seq {
			t.Fatalf("%s: shows %v (seq %d), want snapshot %d at %v", what, s.Time, s.Seq, i, want[i].Time)
		}
	}
	expect("start", 0)
	if st := p.Status(); !strings.HasPrefix(st, "⏸ ×1 Mar 14 23:55:00 (0%)") {
		t.Errorf("Status = %q", st)
	}
	p.Step(5)
	expect("step 5", 5)
	p.Step(-2)
	expect("step back 2", 3)
	p.SeekBy(time.Minute)
	expect("] a minute", 63)
	p.SeekBy(-10 * time.Minute)
	expect("[ past the start", 0)
	p.SeekEnd()
	expect("G", len(want)-1)
	if st := p.Status(); !strings.Contains(st, "00:05:00 (100%)") {
		t.Errorf("Status at the end = %q", st)
	}
	p.SeekStart()
	expect("g", 0)

	// Playing at ×4: 10 s of wall clock are 40 s of the recording.
	p.CycleSpeed()
	p.Toggle()
	if _, playing, speed := p.Position(); !playing || speed != 4 {
		t.Fatalf("after space and s: playing %v at ×%d", playing, speed)
	}
	clock.add(10 * time.Second)
	p.poke()
	expect("10 s at ×4", 40)
	if st := p.Status(); !strings.HasPrefix(st, "▶ ×4 Mar 14 23:55:40") {
		t.Errorf("Status while playing = %q", st)
	}
	// ×16, then ×1 again.
	p.CycleSpeed()
	clock.add(10 * time.Second)
	p.poke()
	expect("10 s at ×16", 200)
	p.CycleSpeed()
	if _, _, speed := p.Position(); speed != 1 {
		t.Errorf("speed after three presses: ×%d", speed)
	}
	// Playing stops at the end; space then starts over.
	clock.add(time.Hour)
	p.poke()
	expect("past the end", len(want)-1)
	if _, playing, _ := p.Position(); playing {
		t.Error("still playing past the end")
	}
	p.Toggle()
	expect("space at the end", 0)
}

func TestPlayerPlaysInRealTime(t *testing.T) {
	// With the real clock at ×16 a snapshot a second arrives every ~60 ms.
	rec, want := demoRecording(t)
	p := NewPlayer(rec, want[100].Time, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	<-p.Snapshots()
	p.CycleSpeed()
	p.CycleSpeed()
	p.Toggle()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-p.Snapshots():
			if s.Time.Sub(want[100].Time) >= 5*time.Second {
				return
			}
		case <-deadline:
			t.Fatal("replay at ×16 did not advance 5 s of recording in 10 s")
		}
	}
}
