package recorder

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// seriesKey names one history series: a device, or a process on a device.
type seriesKey struct {
	dev   string
	pid   uint32
	start int64
	proc  bool
}

// Encoder turns a stream of Snapshots into header and record lines. It
// remembers the last history sample written for each series so each line
// carries only the new ones.
type Encoder struct {
	processInterval   time.Duration // 0: sampler.MinProcessInterval
	history, interval time.Duration
	program           string
	// last holds the time of the newest sample written per series.
	last map[seriesKey]int64
	// seen marks the series present in the snapshot being encoded.
	seen map[seriesKey]bool

	// The keyframe the next delta line refers to (nil: the next line is a
	// keyframe), its size and its processes' indexes.
	kf     *Record
	kfSize int
	// cur is the record of the line being written, its lists reused.
	cur     Record
	kfIndex []map[procID]int
	// minDelta is the smallest delta line since the keyframe, excess the
	// bytes the delta lines since then took beyond that size.
	minDelta, excess int
}

// NewEncoder returns an encoder for a sampler configured with history and
// interval.
func NewEncoder(history, interval time.Duration, program string) *Encoder {
	return &Encoder{
		history: history, interval: interval, program: program,
		last: map[seriesKey]int64{}, seen: map[seriesKey]bool{},
	}
}

// Header returns the header line's value for snap.
func (e *Encoder) Header(snap sampler.Snapshot, created time.Time) Header {
	h := Header{
		Format: Format, Version: Version, Created: created, Program: e.program,
		Hostname: snap.Hostname, Source: snap.Source, Demo: snap.Demo,
		DriverVersion: snap.DriverVersion, NVMLVersion: snap.NVMLVersion, CUDAVersion: snap.CUDAVersion,
		Interval: Duration(e.interval), History: Duration(e.history),
		ProcessInterval: Duration(e.processInterval),
		Devices:         make([]DeviceInfo, len(snap.Devices)),
	}
	for i := range snap.Devices {
		h.Devices[i] = snap.Devices[i].Info()
	}
	return h
}

// SameHeader reports whether a and b describe the same facts (their
// creation times aside).
func SameHeader(a, b Header) bool {
	if a.Hostname != b.Hostname || a.Source != b.Source || a.Demo != b.Demo ||
		a.DriverVersion != b.DriverVersion || a.NVMLVersion != b.NVMLVersion ||
		a.CUDAVersion != b.CUDAVersion || a.Interval != b.Interval || a.History != b.History || a.ProcessInterval != b.ProcessInterval ||
		a.Program != b.Program {
		return false
	}
	return slices.EqualFunc(a.Devices, b.Devices, func(x, y DeviceInfo) bool {
		if (x.MIG == nil) != (y.MIG == nil) || x.MIG != nil && *x.MIG != *y.MIG {
			return false
		}
		x.MIG, y.MIG = nil, nil
		return x == y
	})
}

// ForceKey makes the next line a keyframe (after a header line, say).
func (e *Encoder) ForceKey() { e.kf = nil }

// AppendLine appends the line of snap, newline included, to b: a keyframe
// or a delta from the last one. key reports which.
func (e *Encoder) AppendLine(b []byte, snap sampler.Snapshot) (out []byte, key bool, err error) {
	r := &e.cur
	e.record(snap, r)
	if e.kf != nil && sameDevices(e.kf, r) && !r.T.Before(e.kf.T) && r.T.Sub(e.kf.T) < MaxKeyframeGap {
		start := len(b)
		if b, err = appendDelta(b, e.kf, r, e.kfIndex); err != nil {
			return nil, false, fmt.Errorf("encoding a line of the recording: %w", err)
		}
		n := len(b) - start
		e.minDelta = min(e.minDelta, n)
		e.excess += n - e.minDelta
		// Once the deltas' extra bytes would have paid for a keyframe,
		// this line becomes one.
		if e.excess < e.kfSize {
			return append(b, '\n'), false, nil
		}
		b = b[:start]
	}
	start := len(b)
	r.Key = true
	if b, err = appendRecord(b, r); err != nil {
		return nil, false, fmt.Errorf("encoding a line of the recording: %w", err)
	}
	b = append(b, '\n')
	// What the next deltas compare with: the record as a reader decodes
	// it, without its history samples.
	for i := range r.Devices {
		r.Devices[i].H = nil
		for j := range r.Devices[i].Procs {
			r.Devices[i].Procs[j].H = nil
		}
	}
	// The record becomes the keyframe; the next line's record reuses the
	// memory of the keyframe before.
	if e.kf == nil {
		e.kf = new(Record)
	}
	e.cur, *e.kf = *e.kf, e.cur
	e.kfSize, e.kfIndex = len(b)-start, keyIndex(e.kf)
	e.minDelta, e.excess = math.MaxInt, 0
	return b, true, nil
}

// record makes r the record of snap, reusing the memory of its lists.
func (e *Encoder) record(snap sampler.Snapshot, r *Record) {
	devs := r.Devices
	*r = Record{
		T: snap.Time, Seq: snap.Seq, Warnings: snap.Warnings, Err: snap.Err,
		Stale: snap.Stale, StaleSince: UnixNano(snap.StaleSince),
		Devices: slices.Grow(devs[:0], len(snap.Devices))[:len(snap.Devices)],
	}
	if snap.Interval != e.interval && snap.Interval != 0 {
		r.Interval = Duration(snap.Interval)
	}
	clear(e.seen)
	tn := snap.Time.UnixNano()
	for i := range snap.Devices {
		d := &snap.Devices[i]
		procs := r.Devices[i].Procs[:0]
		if i >= len(devs) {
			procs = nil
		}
		dr := DevRec{Device: *d}
		// A record holds what the line states: not the snapshot's lists
		// and windows.
		dr.Processes, dr.History = nil, sampler.Window{}
		if d.RecentPeakUsed != d.MemoryUsed {
			dr.RecentPeak = sampler.Ptr(d.RecentPeakUsed)
		}
		dr.ListAge = -1
		if !d.ListedAt.IsZero() {
			dr.ListAge = snap.Time.Sub(d.ListedAt).Nanoseconds()
		}
		dk := seriesKey{dev: d.ID}
		dr.H = e.newSamples(dk, d.History, tn, d.MemoryUsed, true)
		if len(d.Processes) > 0 {
			dr.Procs = slices.Grow(procs, len(d.Processes))[:len(d.Processes)]
		}
		for j := range d.Processes {
			p := &d.Processes[j]
			pr := &dr.Procs[j]
			*pr = ProcRec{Process: *p}
			pr.History = sampler.Window{}
			ls := UnixNano(p.LastSeen)
			if ls == tn {
				pr.LastSeen = time.Time{}
			}
			pk := seriesKey{dev: d.ID, pid: p.PID, start: UnixNano(p.StartTime), proc: true}
			pr.H = e.newSamples(pk, p.History, ls, p.Used(), p.UsedBytes != nil)
		}
		r.Devices[i] = dr
	}
	// A series missing from this snapshot (an exited process dropped, a
	// device gone) starts over if it comes back.
	for k := range e.last {
		if !e.seen[k] {
			delete(e.last, k)
		}
	}
}

// newSamples returns the samples of w newer than the last one written for
// k, or nil when they are exactly the implied sample (t, v) (when implied).
func (e *Encoder) newSamples(k seriesKey, w sampler.Window, t int64, v uint64, implied bool) *Samples {
	e.seen[k] = true
	last, ok := e.last[k]
	n := w.Len()
	i := n
	for i > 0 {
		ti, _ := w.At(i - 1)
		if ok && ti.UnixNano() <= last {
			break
		}
		i--
	}
	if n > 0 {
		lt, _ := w.At(n - 1)
		e.last[k] = lt.UnixNano()
	}
	if implied && n-i == 1 {
		ti, vi := w.At(i)
		if ti.UnixNano() == t && vi == v {
			return nil
		}
	}
	if n-i == 0 {
		if !implied {
			return nil
		}
		// Nothing new, and the newest sample is the implied one: a reader
		// has it already (or, having missed the line that carried it, is
		// right to take it), so nothing needs saying.
		if n > 0 {
			if ti, vi := w.At(n - 1); ti.UnixNano() == t && vi == v {
				return nil
			}
		}
	}
	s := make(Samples, 0, n-i)
	for ; i < n; i++ {
		ti, vi := w.At(i)
		s = append(s, Sample{T: ti.UnixNano(), V: vi})
	}
	return &s
}
