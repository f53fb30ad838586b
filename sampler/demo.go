package sampler

import "time"

// NewDemo returns the demo source. (Being built.)
func NewDemo(start time.Time) Source { panic("demo not built yet") }
