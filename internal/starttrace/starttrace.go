// Package starttrace writes when start-up reached each of its steps, for
// bench/gpu/startup.py: with VRAMTOP_TRACE=FILE set, Mark appends "STEP
// UNIX_NANOSECONDS" to FILE the first time each step is reached. Unset, a
// mark costs one load.
package starttrace

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var (
	path = os.Getenv("VRAMTOP_TRACE")
	mu   sync.Mutex
	seen map[string]bool
)

// Mark notes that start-up reached step, once per step.
func Mark(step string) {
	if path == "" {
		return
	}
	now := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if seen[step] {
		return
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[step] = true
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %d\n", step, now.UnixNano())
	f.Close()
}
