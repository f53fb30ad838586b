// Package cputime reports the CPU time of benchmarks: on a machine shared
// with other work it varies less than the wall time.
package cputime

import (
	"testing"
	"time"
)

// Report reports the CPU time per operation since start (from Now),
// as "cpu-ns/op": on a machine shared with other work it varies less than
// the wall time.
func Report(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(Now()-start)/float64(b.N), "cpu-ns/op")
}
