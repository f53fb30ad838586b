package sampler

import (
	"errors"
	"time"
)

// Source reads devices and processes. The sampler's goroutine is the only
// caller of a Source's methods, so a Source needs no locking of its own.
//
// The device list may change only from one Info call to the next (a fleet
// host appearing, say); ReadMemory and ReadProcesses index devices as of the
// last Info call.
type Source interface {
	// Info returns what changes rarely: host, driver, the device list.
	Info() SourceInfo
	// ReadMemory fills out[i] for device i; len(out) == len(Info().Devices).
	// It is the hot path: it must not allocate. A device that fails sets
	// out[i].Err; the returned error is for a failure of the whole source.
	ReadMemory(now time.Time, out []MemSample) error
	// ReadProcesses appends the processes of every device to buf[:0].
	// errs has one entry per device; a device whose list failed sets it.
	ReadProcesses(now time.Time, buf []ProcSample, errs []error) ([]ProcSample, error)
	// ReadProcessUtilization fills out with the SM utilization of each
	// process sampled since the previous call. No samples is not an error.
	ReadProcessUtilization(now time.Time, out map[UtilKey]float64) error
	// Close releases the source (NVML shutdown). Called once.
	Close() error
}

// SourceInfo is the slowly changing part of a Source.
type SourceInfo struct {
	// Kind is "nvml", "demo", "replay", "fleet".
	Kind          string
	Demo          bool
	Hostname      string
	DriverVersion string
	NVMLVersion   string
	CUDAVersion   string
	Devices       []DeviceInfo
	// Warnings about the source as a whole, shown to the user.
	Warnings []string
}

// ProcSample is one process on one device as a source lists it: the
// Process a Snapshot shows, filled in by the source, less what the sampler
// keeps across polls and sets itself (FirstSeen, LastSeen, PeakBytes,
// Exited, History, and UtilizationPercent from ReadProcessUtilization).
// An optional value is nil where unknown (UsedBytes: the driver reports
// "not available"). The sampler shares what the pointers point to with
// every Snapshot: a source never writes through one after handing it over
// (a new value is a new pointer).
type ProcSample struct {
	// Device is the index of the device in Info().Devices.
	Device int
	Process
}

// UtilKey names a process on a device for ReadProcessUtilization.
type UtilKey struct {
	Device int
	PID    uint32
}

// ErrNoDriver is returned (wrapped) by a source that cannot load the GPU
// driver's library.
var ErrNoDriver = errors.New("NVIDIA driver library not found")
