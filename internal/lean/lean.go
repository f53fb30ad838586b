// Package lean keeps a long-running vramtop small: at most two processors
// and the collector held back while it starts, then one processor and a
// tighter heap goal once start-up is over, with start-up's garbage returned
// to the system.
//
// It no longer drops the executable's pages after start-up: they are clean
// file pages that the kernel reclaims under pressure anyway, and on an idle
// H200 (driver 580, a 200x60 pty) the build that dropped them was 3.4 MB
// smaller than one that did not at 5 s, 2.5 MB at 65 s and 2.9 MB at 545 s
// (43.5 against 46.4 MB RSS; python3 bench/gpu/rss.py 550 BUILD_WITH
// BUILD_WITHOUT), under the 3 MB over ten minutes that would have paid for
// the Linux-only code.
package lean

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Watcher sets the Go runtime up for a program that samples and draws a few
// times a second for weeks, starting with its start-up: at most startProcs
// processors, and the collector held back (startGCPercent) where holdGC is
// set, at the settled goal otherwise, unless GOMAXPROCS and GOGC say
// otherwise. Settle sets the rest. The local live view holds the collector
// back (its heap grows to a few MB while it starts); the fleet's does not
// (its first answers from Prometheus can be large).
func Watcher(holdGC bool) {
	if os.Getenv("GOGC") == "" {
		percent := gcPercent
		if holdGC {
			percent = startGCPercent
		}
		debug.SetGCPercent(percent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), startProcs))
	}
}

// startProcs is the number of processors until Settle. Start-up needs two:
// the first sample and the terminal's set-up run side by side (GOMAXPROCS=1
// from the start put the first poll's snapshot on the H200 host 8 ms later,
// with 100 processes: GOMAXPROCS=1 python3 bench/gpu/startup.py against the
// default). Every processor more that the scheduler wakes at start-up leaves
// a thread behind, with its stacks, for the program's whole life (17 threads
// and 0.9 MB more resident on the H200 host with sixteen: the memory table of
// bench/gpu/watch.py).
const startProcs = 2

// startGCPercent is the heap goal during start-up: the heap grows from
// nothing to its working size then, and the collections a smaller goal
// starts on the way put the demo's first frame on the screen 9 ms later on
// the development machine: 40.3 against 31.7 ms from exec with GOGC=50 and
// GOGC=400 set (NEEDLE=H100 ARGS=--demo python3 bench/gpu/startup.py
// ./vramtop out/ 8 0).
const startGCPercent = 400

// gcPercent is the heap goal once settled: half the live heap over it
// rather than all of it (a few MB, for a collection every few seconds).
const gcPercent = 50

// Settle is for when start-up is over: one processor from then on (the
// sampler and the view need no more, and every extra one the scheduler
// wakes costs a monitor more than its own work), the settled heap goal,
// unless GOMAXPROCS and GOGC say otherwise; start-up's garbage collected and
// its memory returned to the system.
func Settle() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	debug.FreeOSMemory()
}
