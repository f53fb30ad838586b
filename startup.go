package main

import (
	"time"

	"github.com/vramtop/vramtop/internal/lean"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui"
)

// liveStart is the live view's start-up and its move to idle, in one place.
// Its steps lean on each other's timing, so they run in this order:
//
//  1. beginLive, before the source opens: lean.Watcher keeps two processors
//     (the first poll and the terminal's set-up run side by side) and, for
//     the local view, holds the collector back while the heap grows to its
//     working size; ui.Warm draws one demo frame off screen while the GPU
//     driver opens, so that the first real frame's one-time costs are paid
//     already (not for the demo, whose source opens at once: the warm-up
//     would run in the first frame's way).
//  2. config: the sampler's MemoryFirst publishes the devices' memory before
//     the process lists are read, so the first frame waits for NVML's
//     memory only (internal/starttrace marks memory-published, then
//     processes-published).
//  3. ui.Run: its pacer (ui/pace.go) draws the first frame with data and the
//     first with the lists within a millisecond of their View, never held
//     back by the frame rate (starttrace: frame-with-data), then draws on
//     demand.
//  4. settle, settleAfter after the sampler starts, once those frames are
//     up: lean.Settle leaves one processor and the settled heap goal and
//     returns start-up's memory. Sooner, the first frames would be drawn on
//     one processor with the collector running; later, start-up's garbage
//     stays resident that much longer.
type liveStart struct {
	release *time.Timer
}

// settleAfter is when start-up is over (step 4).
const settleAfter = 2 * time.Second

// beginLive is step 1; holdGC is set for the local view (a fleet's first
// answers can be large: its collector is not held back), warm where the
// source takes a while to open.
func beginLive(holdGC, warm bool) *liveStart {
	lean.Watcher(holdGC)
	if warm {
		go ui.Warm()
	}
	return &liveStart{}
}

// config is step 2: the sampler's settings for the live view.
func (ls *liveStart) config(c sampler.Config) sampler.Config {
	c.MemoryFirst = true
	return c
}

// settle arms step 4; stop disarms it when the view ends first.
func (ls *liveStart) settle() {
	if ls != nil {
		ls.release = time.AfterFunc(settleAfter, lean.Settle)
	}
}

func (ls *liveStart) stop() {
	if ls != nil && ls.release != nil {
		ls.release.Stop()
	}
}
