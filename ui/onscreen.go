package ui

import (
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/judge"
)

// judged is a snapshot and what the judge made of it.
type judged struct {
	snap sampler.Snapshot
	judge.Verdict
}

// onScreen is the snapshot on screen and the newest one received, each with
// its verdict: they differ while the display is paused (p).
type onScreen struct {
	have   bool // a snapshot was shown
	paused bool
	shown  judged
	latest judged
}

// receive takes the newest snapshot; it reports whether it is to be shown
// (not while paused).
func (o *onScreen) receive(j judged) bool {
	o.latest = j
	if o.paused {
		return false
	}
	o.shown, o.have = j, true
	return true
}

// togglePause pauses the display or resumes it; resuming shows the newest
// snapshot, with its own alerts (it reports whether there is one to show).
func (o *onScreen) togglePause() (show bool) {
	o.paused = !o.paused
	if o.paused || !o.have {
		return false
	}
	o.shown = o.latest
	return true
}
