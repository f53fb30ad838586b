// Package nvmlsource is the Source over NVIDIA's management library (NVML,
// through go-nvml and cgo): devices, memory, utilization, MIG instances and
// processes of the GPUs of this host. It is the only package that links
// go-nvml; built without cgo it reads no GPUs and says so (ErrNotBuilt).
package nvmlsource

import "errors"

// ErrNotBuilt is what Open returns in a build without cgo, which cannot
// link NVML.
var ErrNotBuilt = errors.New("this vramtop was built without NVML support (CGO_ENABLED=0), so it reads no GPUs")
