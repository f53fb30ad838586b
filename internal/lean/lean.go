// Package lean keeps a long-running vramtop small: it gives back to the
// kernel the pages of the executable that only start-up touched.
//
// Go runs every linked package's initialisation at start, among them the
// Prometheus client's and protobuf's, which the live view never uses again;
// with the kernel mapping each file fault's neighbourhood, that leaves most
// of the executable resident (13.3 MB of a 19 MB binary, on the demo). Paging the
// executable's mappings out once start-up is over leaves only what the
// steady state touches again.
package lean

import (
	"os"
	"runtime"
	"runtime/debug"
)

// ReleaseStartupPages advises the kernel to page out the executable's
// mapped text and read-only data; the pages the program still uses fault
// back in on their next use. It does nothing where the kernel has no such
// advice (before Linux 5.4, other systems).
func ReleaseStartupPages() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	releaseMappings(exe)
}

// Watcher sets the Go runtime up for a program that samples and draws a few
// times a second for weeks: one processor (the sampler and the view need no
// more, and every extra one the scheduler wakes costs a monitor more than its
// own work) and a heap goal of half the live heap over it rather than all of
// it (a few MB, for a collection every few seconds), unless GOMAXPROCS and
// GOGC say otherwise.
func Watcher() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
