package replay

import (
	"sort"
	"time"

	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// series is the history of one device or process: every sample the
// recording holds, in order.
type series struct {
	t []int64
	v []uint64
}

type seriesKey struct {
	dev   string
	pid   uint32
	start int64
	proc  bool
}

// pos says where a device or process of a frame stands in its series: the
// series holds n samples once the frame is read.
type pos struct {
	s *series
	n int
}

// Recording is a loaded recording: the snapshots of every recorded moment
// and the history samples behind their windows. It is read-only once built
// and safe for concurrent use.
type Recording struct {
	frames []frame
	// devPos[i][j] is device j of frame i; procPos[i][j][k] process k.
	devPos  [][]pos
	procPos [][][]pos
}

func build(frames []frame) *Recording {
	r := &Recording{
		frames:  frames,
		devPos:  make([][]pos, len(frames)),
		procPos: make([][][]pos, len(frames)),
	}
	all := map[seriesKey]*series{}
	get := func(k seriesKey) *series {
		s := all[k]
		if s == nil {
			s = &series{}
			all[k] = s
		}
		return s
	}
	push := func(s *series, h *recorder.Samples, t int64, v uint64, implied bool) {
		if h != nil {
			for _, x := range *h {
				// A part that starts over (after rotation, or a session
				// appended) repeats the history it began with.
				if n := len(s.t); n > 0 && x.T <= s.t[n-1] {
					continue
				}
				s.t = append(s.t, x.T)
				s.v = append(s.v, x.V)
			}
			return
		}
		if implied && (len(s.t) == 0 || t > s.t[len(s.t)-1]) {
			s.t = append(s.t, t)
			s.v = append(s.v, v)
		}
	}
	for i, f := range frames {
		tn := f.rec.T.UnixNano()
		r.devPos[i] = make([]pos, len(f.rec.Devices))
		r.procPos[i] = make([][]pos, len(f.rec.Devices))
		for j, d := range f.rec.Devices {
			s := get(seriesKey{dev: d.ID})
			push(s, d.H, tn, d.Used, true)
			r.devPos[i][j] = pos{s: s, n: len(s.t)}
			pp := make([]pos, len(d.Procs))
			for k, p := range d.Procs {
				ps := get(seriesKey{dev: d.ID, pid: p.PID, start: p.Start, proc: true})
				ls := p.LastSeen
				if ls == 0 {
					ls = tn
				}
				var used uint64
				if p.Used != nil {
					used = *p.Used
				}
				push(ps, p.H, ls, used, p.Used != nil)
				pp[k] = pos{s: ps, n: len(ps.t)}
			}
			r.procPos[i][j] = pp
		}
	}
	return r
}

// Len returns the number of snapshots.
func (r *Recording) Len() int { return len(r.frames) }

// Start returns the time of the first snapshot.
func (r *Recording) Start() time.Time { return r.frames[0].rec.T }

// End returns the time of the last snapshot.
func (r *Recording) End() time.Time { return r.frames[len(r.frames)-1].rec.T }

// Time returns the time of snapshot i.
func (r *Recording) Time(i int) time.Time { return r.frames[i].rec.T }

// Index returns the snapshot in force at t: the last one at or before t
// (the first one when t is before the recording).
func (r *Recording) Index(t time.Time) int {
	i := sort.Search(len(r.frames), func(i int) bool { return r.frames[i].rec.T.After(t) })
	if i == 0 {
		return 0
	}
	return i - 1
}

// At returns the snapshot in force at t, and whether t lies within the
// recording (from its first to its last snapshot).
func (r *Recording) At(t time.Time) (sampler.Snapshot, bool) {
	in := !t.Before(r.Start()) && !t.After(r.End())
	return r.Snapshot(r.Index(t)), in
}

// window returns the last capacity samples of the series as of pos.
func (p pos) window(capacity int) sampler.Window {
	lo := max(0, p.n-capacity)
	if lo == p.n {
		return sampler.Window{}
	}
	times := make([]time.Time, p.n-lo)
	for i := range times {
		times[i] = time.Unix(0, p.s.t[lo+i])
	}
	return sampler.WindowOf(times, p.s.v[lo:p.n])
}

// Snapshot rebuilds snapshot i as the sampler published it, its history
// windows holding what the sampler's rings held at that moment.
func (r *Recording) Snapshot(i int) sampler.Snapshot {
	f := r.frames[i]
	h, rec := f.hdr, f.rec
	interval := time.Duration(h.Interval)
	history := time.Duration(h.History)
	if history == 0 {
		history = sampler.DefaultHistory
	}
	if interval == 0 {
		interval = sampler.DefaultInterval
	}
	devCap := recorder.DeviceRingCap(history, interval)
	procCap := recorder.ProcessRingCap(history, interval, time.Duration(h.ProcessInterval))
	snap := sampler.Snapshot{
		Time: rec.T, Hostname: h.Hostname, DriverVersion: h.DriverVersion,
		NVMLVersion: h.NVMLVersion, CUDAVersion: h.CUDAVersion,
		Source: h.Source, Demo: h.Demo, Interval: interval,
		Warnings: rec.Warnings, Err: rec.Err, Seq: rec.Seq,
		Devices: make([]sampler.Device, len(rec.Devices)),
	}
	if rec.Interval != 0 {
		snap.Interval = time.Duration(rec.Interval)
	}
	info := make(map[string]recorder.DeviceInfo, len(h.Devices))
	for _, d := range h.Devices {
		info[d.ID] = d
	}
	tn := rec.T.UnixNano()
	for j, d := range rec.Devices {
		di, ok := info[d.ID]
		if !ok {
			di = recorder.DeviceInfo{ID: d.ID}
		}
		dev := sampler.Device{
			ID: d.ID, Index: di.Index, Hostname: di.Hostname, Name: di.Name, UUID: di.UUID,
			PCIBusID: di.PCIBusID, MIGEnabled: di.MIGEnabled, MIG: di.MIG,
			MemoryTotal: d.Total, MemoryUsed: d.Used, MemoryFree: d.Free,
			MemoryReserved: d.Res, Unattributed: d.Unatt, UtilizationPercent: d.Util,
			TemperatureC: d.Temp, PowerWatts: d.Power, Err: d.Err,
			History:   r.devPos[i][j].window(devCap),
			Processes: make([]sampler.Process, len(d.Procs)),
		}
		dev.PeakUsed = dev.History.Max()
		dev.RecentPeakUsed = d.Used
		if d.RecentPeak != nil {
			dev.RecentPeakUsed = *d.RecentPeak
		}
		for k, p := range d.Procs {
			ls := p.LastSeen
			if ls == 0 {
				ls = tn
			}
			dev.Processes[k] = sampler.Process{
				PID: p.PID, User: p.User, UID: p.UID, Command: p.Command, UsedBytes: p.Used,
				Type: p.Type, Container: p.Container, Visible: p.Visible,
				StartTime: recorder.FromUnixNano(p.Start), UtilizationPercent: p.Util,
				FirstSeen: recorder.FromUnixNano(p.FirstSeen), LastSeen: time.Unix(0, ls),
				PeakBytes: p.Peak, Exited: p.Exited,
				History: r.procPos[i][j][k].window(procCap),
			}
		}
		snap.Devices[j] = dev
	}
	return snap
}
