//go:build !cgo

package nvmlsource

import "github.com/vramtop/vramtop/sampler"

// Supported is false: this build cannot read GPUs.
const Supported = false

// Open fails with ErrNotBuilt: a build without cgo has no NVML.
func Open() (sampler.Source, error) { return nil, ErrNotBuilt }
