// Package recorder writes Snapshots to a recording: a JSON Lines file (gzip
// compressed when its name ends in .gz) that `vramtop replay` reads back.
//
// The file format, version 2:
//
//   - Every line is one JSON object, so a line cut short or damaged costs
//     that line only.
//   - A header line starts each file and each appended session, and is
//     written again whenever what it holds changes (a device appears, the
//     driver changes):
//     {"format":"vramtop-record","version":2,"created":…,"hostname":…,
//     "source":"nvml","interval":"1s","history":"1h0m0s","devices":[…]}
//   - Every other line is one snapshot: a keyframe (Record, "key":true)
//     holds its time, one entry per device with the memory values and the
//     processes, and the history samples that the sampler took since the
//     previous line of the same device or process. When those are just the
//     one sample the line already states (the device's used memory at the
//     line's time, the process's memory at its last poll), they are left
//     out. The lines between keyframes are deltas (Delta): what differs
//     from the keyframe they name, and their own history samples; see
//     delta.go.
//
// Version 1 wrote every snapshot as a whole Record (without "key"); readers
// read both.
//
// Times are RFC 3339 with nanoseconds for a line's own time, Unix
// nanoseconds elsewhere; byte counts are integers.
package recorder

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Format and Version identify a recording's header line.
const (
	Format  = "vramtop-record"
	Version = 2
)

// Header describes what stays the same from line to line. A recording has
// one at the start of each file part and session, and another wherever
// these facts change.
type Header struct {
	Format        string    `json:"format"`
	Version       int       `json:"version"`
	Created       time.Time `json:"created"`
	Program       string    `json:"program,omitempty"`
	Hostname      string    `json:"hostname,omitempty"`
	Source        string    `json:"source,omitempty"`
	Demo          bool      `json:"demo,omitempty"`
	DriverVersion string    `json:"driver_version,omitempty"`
	NVMLVersion   string    `json:"nvml_version,omitempty"`
	CUDAVersion   string    `json:"cuda_version,omitempty"`
	// Interval and History are the sampler's configuration; replay sizes
	// its history windows from them.
	Interval Duration `json:"interval"`
	History  Duration `json:"history"`
	// ProcessInterval is the process-list floor, where it is not the
	// default (vramtop run lists processes every 250 ms).
	ProcessInterval Duration     `json:"process_interval,omitempty"`
	Devices         []DeviceInfo `json:"devices"`
}

// DeviceInfo is the static part of a device.
type DeviceInfo struct {
	ID         string           `json:"id"`
	Index      int              `json:"index"`
	Hostname   string           `json:"hostname,omitempty"`
	Name       string           `json:"name,omitempty"`
	UUID       string           `json:"uuid,omitempty"`
	PCIBusID   string           `json:"pci_bus_id,omitempty"`
	MIGEnabled bool             `json:"mig_enabled,omitempty"`
	MIG        *sampler.MIGInfo `json:"mig,omitempty"`
	// NoProcessList: the source cannot list this device's processes.
	NoProcessList bool `json:"no_proc,omitempty"`
}

// Record is one snapshot: a keyframe line, or what a delta line stands for.
type Record struct {
	T   time.Time `json:"t"`
	Seq uint64    `json:"seq,omitempty"`
	// Key marks a keyframe (format 2); lines of format 1 are all whole
	// records without it.
	Key bool `json:"key,omitempty"`
	// Interval is the interval in force when it differs from the header's.
	Interval Duration `json:"interval,omitempty"`
	Devices  []DevRec `json:"d"`
	Warnings []string `json:"w,omitempty"`
	Err      string   `json:"err,omitempty"`
	// Stale and StaleSince (Unix ns) say the source's data stopped
	// coming.
	Stale      bool  `json:"stale,omitempty"`
	StaleSince int64 `json:"ss,omitempty"`
}

// DevRec is one device in a Record.
type DevRec struct {
	ID    string   `json:"id"`
	Total uint64   `json:"tot"`
	Used  uint64   `json:"used"`
	Free  uint64   `json:"free"`
	Res   *uint64  `json:"res,omitempty"`
	Unatt *uint64  `json:"una,omitempty"`
	Util  *float64 `json:"util,omitempty"`
	Temp  *int     `json:"temp,omitempty"`
	Power *float64 `json:"pw,omitempty"`
	// Energy is the GPU's total-energy counter (mJ); EnergyErr why reading
	// it failed.
	Energy    *uint64 `json:"en,omitempty"`
	EnergyErr string  `json:"ene,omitempty"`
	// SMClock and MemClock are the clocks in MHz.
	SMClock  *int   `json:"smc,omitempty"`
	MemClock *int   `json:"mc,omitempty"`
	Err      string `json:"err,omitempty"`
	// RecentPeak is the highest used memory sampled since the previous
	// snapshot, where it differs from Used.
	RecentPeak *uint64 `json:"rp,omitempty"`
	// ListAge is how much older than the line the device's process list
	// is (sampler.Device.ListedAt), in ns: absent (0) for a list read at
	// that poll, -1 where the device has no list.
	ListAge int64 `json:"la,omitempty"`
	// H lists the history samples taken since the device's previous line;
	// nil means just (T, Used).
	H     *Samples  `json:"h,omitempty"`
	Procs []ProcRec `json:"p,omitempty"`
}

// ProcRec is one process on a device in a Record.
type ProcRec struct {
	PID       uint32  `json:"pid"`
	User      string  `json:"user,omitempty"`
	UID       *uint32 `json:"uid,omitempty"`
	Command   string  `json:"cmd,omitempty"`
	Used      *uint64 `json:"used,omitempty"`
	Type      string  `json:"type,omitempty"`
	Container string  `json:"ct,omitempty"`
	// Job is what the process's cgroup says it belongs to.
	Job *sampler.Job `json:"job,omitempty"`
	// CPU is its host CPU (100: one core), HostMem its resident host
	// memory.
	CPU       *float64 `json:"cpu,omitempty"`
	HostMem   *uint64  `json:"hm,omitempty"`
	Visible   bool     `json:"vis,omitempty"`
	Start     int64    `json:"st,omitempty"` // Unix ns; 0: unknown
	Util      *float64 `json:"util,omitempty"`
	FirstSeen int64    `json:"fs,omitempty"`
	// LastSeen is left out when it equals the line's time.
	LastSeen int64  `json:"ls,omitempty"`
	Peak     uint64 `json:"pk,omitempty"`
	Exited   bool   `json:"x,omitempty"`
	// H lists the history samples taken since the process's previous line;
	// nil means just (LastSeen, Used) when Used is known, none otherwise.
	H *Samples `json:"h,omitempty"`
}

// Sample is one history sample, written as [unix_ns, value].
type Sample struct {
	T int64
	V uint64
}

// Samples is a list of history samples.
type Samples []Sample

// MarshalJSON writes [t, v].
func (s Sample) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "[%d,%d]", s.T, s.V), nil
}

// MarshalJSON writes [[t, v], …].
func (s Samples) MarshalJSON() ([]byte, error) { return appendSamples(nil, s), nil }

// Duration is a time.Duration written as Go writes durations ("1.5s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return err
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// UnixNano is t in Unix nanoseconds, 0 for the zero time.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNano is the inverse of UnixNano.
func FromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// finite drops values JSON cannot carry (NaN, ±Inf): they become absent.
func finite(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return p
}

// DeviceRingCap and ProcessRingCap are the history capacities the sampler
// gives its rings for a configuration; replay rebuilds windows of the same
// size.
func DeviceRingCap(history, interval time.Duration) int {
	return sampler.CapacityFor(history, interval)
}

// ProcessRingCap is the capacity of a process's history ring; procInterval
// is the sampler's process-list floor (0: sampler.MinProcessInterval).
func ProcessRingCap(history, interval, procInterval time.Duration) int {
	if procInterval == 0 {
		procInterval = sampler.MinProcessInterval
	}
	return sampler.CapacityFor(history, max(interval, procInterval))
}
