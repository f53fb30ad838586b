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
	"strconv"
	"time"
	"unsafe"

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

// DeviceInfo is the static part of a device, as the sampler has it.
type DeviceInfo = sampler.DeviceInfo

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

// DevRec is one device in a Record: the fields of its sampler.Device that
// have a rec tag (its processes are Procs, its history samples H), and
// what the line says relative to itself.
type DevRec struct {
	sampler.Device
	// RecentPeak is the highest used memory sampled since the previous
	// snapshot (Device.RecentPeakUsed), where it differs from Used.
	RecentPeak *uint64 `rec:"rp,omitempty"`
	// ListAge is how much older than the line the device's process list
	// is (Device.ListedAt), in ns: absent (0) for a list read at that
	// poll, -1 where the device has no list.
	ListAge int64 `rec:"la,omitempty"`
	// H lists the history samples taken since the device's previous line;
	// nil means just (T, Used).
	H     *Samples
	Procs []ProcRec
}

// ProcRec is one process on a device in a Record: the fields of its
// sampler.Process that have a rec tag, LastSeen zero where it is the
// line's time.
type ProcRec struct {
	sampler.Process
	// H lists the history samples taken since the process's previous line;
	// nil means just (LastSeen, Used) when Used is known, none otherwise.
	H *Samples
}

// MarshalJSON writes the device as a line holds it.
func (d *DevRec) MarshalJSON() ([]byte, error) { return appendDev(nil, d) }

// MarshalJSON writes the process as a line holds it.
func (p *ProcRec) MarshalJSON() ([]byte, error) { return appendProc(nil, p) }

// UnmarshalJSON reads a device of a line.
func (d *DevRec) UnmarshalJSON(b []byte) error {
	*d = DevRec{}
	return members(b, func(k, v []byte) error {
		switch string(k) {
		case "h":
			return decodeSamples(&d.H, v)
		case "p":
			d.Procs = make([]ProcRec, 0, count(v))
			return elements(v, func(v []byte) error {
				d.Procs = append(d.Procs, ProcRec{})
				return d.Procs[len(d.Procs)-1].UnmarshalJSON(v)
			})
		}
		return decodeField(devTable, unsafe.Pointer(d), k, v)
	})
}

// UnmarshalJSON reads a process of a line.
func (p *ProcRec) UnmarshalJSON(b []byte) error {
	*p = ProcRec{}
	return members(b, func(k, v []byte) error {
		if string(k) == "h" {
			return decodeSamples(&p.H, v)
		}
		return decodeField(procTable, unsafe.Pointer(p), k, v)
	})
}

// decodeField sets the field of t named k in the record at base; a name
// t does not know is passed over.
func decodeField(t *table, base unsafe.Pointer, k, v []byte) error {
	i, ok := t.lookup(k)
	if !ok {
		return nil
	}
	f := &t.fields[i]
	if err := f.c.decode(at(base, f), v); err != nil {
		return fmt.Errorf("%q: %v", f.tag, err)
	}
	return nil
}

func decodeSamples(h **Samples, v []byte) error {
	var s Samples
	if err := s.UnmarshalJSON(v); err != nil {
		return err
	}
	*h = &s
	return nil
}

// EachText calls fn with each text field of the device (not of its
// processes).
func (d *DevRec) EachText(fn func(*string)) { eachText(devTable, unsafe.Pointer(d), fn) }

// EachText calls fn with each text field of the process.
func (p *ProcRec) EachText(fn func(*string)) { eachText(procTable, unsafe.Pointer(p), fn) }

// EachTime calls fn with each time field of the process.
func (p *ProcRec) EachTime(fn func(time.Time)) {
	for i := range procTable.fields {
		if f := &procTable.fields[i]; f.c.time {
			fn(*(*time.Time)(at(unsafe.Pointer(p), f)))
		}
	}
}

func eachText(t *table, base unsafe.Pointer, fn func(*string)) {
	for i := range t.fields {
		if f := &t.fields[i]; f.c.text {
			fn((*string)(at(base, f)))
		}
	}
}

// appendFields appends the fields of t of the record at base, as a
// keyframe writes them: those tagged omitempty only where not empty.
func appendFields(b []byte, t *table, base unsafe.Pointer) ([]byte, error) {
	var err error
	for i := range t.fields {
		f := &t.fields[i]
		p := at(base, f)
		if f.omitEmpty && f.c.empty(p) {
			continue
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.tag...)
		b = append(b, '"', ':')
		if b, err = f.c.add(b, p); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendDev(b []byte, d *DevRec) ([]byte, error) {
	b = append(b, '{')
	b, err := appendFields(b, devTable, unsafe.Pointer(d))
	if err != nil {
		return nil, err
	}
	if d.H != nil {
		b = append(b, `,"h":`...)
		b = appendSamples(b, *d.H)
	}
	if len(d.Procs) > 0 {
		b = append(b, `,"p":[`...)
		for j := range d.Procs {
			if j > 0 {
				b = append(b, ',')
			}
			if b, err = appendProc(b, &d.Procs[j]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendProc(b []byte, p *ProcRec) ([]byte, error) {
	b = append(b, '{')
	b, err := appendFields(b, procTable, unsafe.Pointer(p))
	if err != nil {
		return nil, err
	}
	if p.H != nil {
		b = append(b, `,"h":`...)
		b = appendSamples(b, *p.H)
	}
	return append(b, '}'), nil
}

// appendRecord appends r as one JSON object, as encoding/json writes it.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	tb, err := r.T.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(append(b, `{"t":`...), tb...)
	if r.Seq != 0 {
		b = strconv.AppendUint(append(b, `,"seq":`...), r.Seq, 10)
	}
	if r.Key {
		b = append(b, `,"key":true`...)
	}
	if r.Interval != 0 {
		ib, _ := r.Interval.MarshalJSON()
		b = append(append(b, `,"interval":`...), ib...)
	}
	b = append(b, `,"d":`...)
	if r.Devices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Devices {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendDev(b, &r.Devices[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(r.Warnings) > 0 {
		wb, err := json.Marshal(r.Warnings)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"w":`...), wb...)
	}
	if r.Err != "" {
		b = appendString(append(b, `,"err":`...), r.Err)
	}
	if r.Stale {
		b = append(b, `,"stale":true`...)
	}
	if r.StaleSince != 0 {
		b = strconv.AppendInt(append(b, `,"ss":`...), r.StaleSince, 10)
	}
	return append(b, '}'), nil
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
