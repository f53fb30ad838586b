package sampler

import "fmt"

// OpenNVML opens the NVML source. (Being built.)
func OpenNVML() (Source, error) { return nil, fmt.Errorf("libnvidia-ml.so.1: %w", ErrNoDriver) }
