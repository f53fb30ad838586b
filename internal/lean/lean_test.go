package lean

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// Start-up runs with the collector held back and at most startProcs
// processors; once settled, the heap goal is the watcher's and one
// processor is left.
func TestWatcherThenSettle(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOGC or GOMAXPROCS is set: both win over the watcher's settings")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	Watcher(false)
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Errorf("GC percent during the fleet's start-up = %d, want %d", got, gcPercent)
	}
	Watcher(true)
	if got := debug.SetGCPercent(startGCPercent); got != startGCPercent {
		t.Errorf("GC percent during start-up = %d, want %d", got, startGCPercent)
	}
	if got := runtime.GOMAXPROCS(0); got > startProcs {
		t.Errorf("GOMAXPROCS during start-up = %d, want at most %d", got, startProcs)
	}
	Settle()
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Errorf("GC percent once settled = %d, want %d", got, gcPercent)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS once settled = %d, want 1", got)
	}
}
