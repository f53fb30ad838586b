//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Now is the CPU time the process has used so far (user and system,
// every thread).
func Now() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
