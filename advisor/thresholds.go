// Package advisor turns Snapshots into alerts and advice, and explains
// out-of-memory messages. It is pure functions: no NVML, no UI.
package advisor

import "fmt"

// Thresholds are the used-memory percentages at which a GPU is in warning
// and critical state.
type Thresholds struct {
	Warn float64
	Crit float64
}

// DefaultThresholds are 80% warn, 90% critical.
func DefaultThresholds() Thresholds { return Thresholds{Warn: 80, Crit: 90} }

// Validate requires 0 < warn < crit <= 100.
func (t Thresholds) Validate() error {
	if !(t.Warn > 0 && t.Warn < t.Crit && t.Crit <= 100) {
		return fmt.Errorf("thresholds must satisfy 0 < warn < crit <= 100 (got warn %g, crit %g)", t.Warn, t.Crit)
	}
	return nil
}
