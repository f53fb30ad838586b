package sampler

import "time"

// Demo is the built-in demo source. (Being built.)
type Demo struct{}

// NewDemo returns the demo source. (Being built.)
func NewDemo(start time.Time) *Demo { panic("demo not built yet") }

func (d *Demo) Info() SourceInfo                                            { return SourceInfo{} }
func (d *Demo) ReadMemory(now time.Time, out []MemSample) error             { return nil }
func (d *Demo) Close() error                                                { return nil }
func (d *Demo) ReadProcessUtilization(time.Time, map[UtilKey]float64) error { return nil }
func (d *Demo) ReadProcesses(now time.Time, buf []ProcSample, errs []error) ([]ProcSample, error) {
	return buf, nil
}
