package replay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Speeds are the playback speeds CycleSpeed steps through.
var Speeds = []int{1, 4, 16}

// Player plays a recording: it publishes the snapshot of the moment being
// replayed on a channel, as a sampler does (latest wins), and takes the
// replay keys (play/pause, step, seek, speed) from any goroutine. It
// implements the live view's ui.ReplayControl.
type Player struct {
	rec *Recording
	out chan sampler.Snapshot
	// wake tells the loop something changed.
	wake chan struct{}
	now  func() time.Time

	mu      sync.Mutex
	idx     int       // the snapshot shown
	pos     time.Time // the moment replayed
	playing bool
	speed   int // index into Speeds
	// While playing, pos = base + (now − baseReal) × speed.
	base, baseReal time.Time
	shown          int // the snapshot last published; -1: none
}

// NewPlayer returns a player over rec positioned at the snapshot in force
// at at (the start when zero), playing when play is set.
func NewPlayer(rec *Recording, at time.Time, play bool) *Player {
	p := &Player{
		rec: rec, out: make(chan sampler.Snapshot, 1), wake: make(chan struct{}, 1),
		now: time.Now, shown: -1, playing: play,
	}
	if at.IsZero() {
		at = rec.Start()
	}
	p.seekLocked(at)
	return p
}

// Snapshots is the channel the live view reads.
func (p *Player) Snapshots() <-chan sampler.Snapshot { return p.out }

// Run publishes snapshots as the replay moves until ctx ends.
func (p *Player) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		snap, publish, wait := p.advance()
		if publish {
			select {
			case p.out <- snap:
			default:
				select {
				case <-p.out:
				default:
				}
				p.out <- snap
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
	}
}

// advance moves a playing replay to the present moment and returns the
// snapshot to publish (when it changed) and how long until the next one.
func (p *Player) advance() (snap sampler.Snapshot, publish bool, wait time.Duration) {
	p.mu.Lock()
	wait = time.Hour
	if p.playing {
		now := p.now()
		pos := p.base.Add(now.Sub(p.baseReal) * time.Duration(Speeds[p.speed]))
		if !pos.Before(p.rec.End()) {
			pos = p.rec.End()
			p.playing = false
		}
		p.pos = pos
		p.idx = p.rec.Index(pos)
		if p.playing && p.idx+1 < p.rec.Len() {
			d := p.rec.Time(p.idx+1).Sub(pos) / time.Duration(Speeds[p.speed])
			wait = max(d, time.Millisecond)
		}
	}
	// The index may have been thinned since (a background scan): the
	// snapshot in force at the moment replayed is found again.
	p.idx = p.rec.Index(p.pos)
	idx, pos := p.idx, p.pos
	publish = idx != p.shown
	p.shown = idx
	p.mu.Unlock()
	if publish {
		// Found again with the snapshot, in one step: the index may be
		// thinned meanwhile, and idx then names a later snapshot.
		snap, _ = p.rec.SnapshotAt(pos)
	}
	return snap, publish, wait
}

func (p *Player) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// sync brings pos up to date before a control changes it.
func (p *Player) syncLocked() {
	if p.playing {
		now := p.now()
		p.pos = p.base.Add(now.Sub(p.baseReal) * time.Duration(Speeds[p.speed]))
		if p.pos.After(p.rec.End()) {
			p.pos = p.rec.End()
		}
	}
}

func (p *Player) rebaseLocked() { p.base, p.baseReal = p.pos, p.now() }

func (p *Player) seekLocked(t time.Time) {
	if t.Before(p.rec.Start()) {
		t = p.rec.Start()
	}
	if t.After(p.rec.End()) {
		t = p.rec.End()
	}
	p.pos = t
	p.idx = p.rec.Index(t)
	p.rebaseLocked()
}

func (p *Player) control(f func()) {
	p.mu.Lock()
	p.syncLocked()
	f()
	p.rebaseLocked()
	p.mu.Unlock()
	p.poke()
}

// Toggle plays or pauses; playing from the end starts over.
func (p *Player) Toggle() {
	p.control(func() {
		if !p.playing && p.idx == p.rec.Len()-1 {
			p.seekLocked(p.rec.Start())
		}
		p.playing = !p.playing
	})
}

// Step pauses and moves n snapshots (back when n < 0).
func (p *Player) Step(n int) {
	p.control(func() {
		p.playing = false
		i := min(max(p.rec.Index(p.pos)+n, 0), p.rec.Len()-1)
		p.seekLocked(p.rec.Time(i))
	})
}

// SeekBy moves the replayed moment by d.
func (p *Player) SeekBy(d time.Duration) { p.control(func() { p.seekLocked(p.pos.Add(d)) }) }

// SeekStart moves to the first snapshot.
func (p *Player) SeekStart() { p.control(func() { p.seekLocked(p.rec.Start()) }) }

// SeekEnd moves to the last snapshot and pauses.
func (p *Player) SeekEnd() {
	p.control(func() {
		p.playing = false
		p.seekLocked(p.rec.End())
	})
}

// SeekTo moves to the moment t.
func (p *Player) SeekTo(t time.Time) { p.control(func() { p.seekLocked(t) }) }

// CycleSpeed steps the speed ×1 → ×4 → ×16 → ×1.
func (p *Player) CycleSpeed() { p.control(func() { p.speed = (p.speed + 1) % len(Speeds) }) }

// Position returns the moment replayed, whether it is playing and the
// speed.
func (p *Player) Position() (at time.Time, playing bool, speed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncLocked()
	return p.pos, p.playing, Speeds[p.speed]
}

// Status is one short line for the header: "▶ ×4 03:12:05 (41%)".
func (p *Player) Status() string {
	at, playing, speed := p.Position()
	icon := "⏸"
	if playing {
		icon = "▶"
	}
	start, end := p.rec.Start(), p.rec.End()
	pct := 100.0
	if span := end.Sub(start); span > 0 {
		pct = float64(at.Sub(start)) / float64(span) * 100
	}
	loc := start.Location()
	at = at.In(loc)
	layout := "15:04:05"
	if !sameDay(start.In(loc), end.In(loc)) {
		layout = "Jan 2 15:04:05"
	}
	return fmt.Sprintf("%s ×%d %s (%.0f%%)", icon, speed, at.Format(layout), pct)
}

func sameDay(a, b time.Time) bool {
	y1, m1, d1 := a.Date()
	y2, m2, d2 := b.Date()
	return y1 == y2 && m1 == m2 && d1 == d2
}
