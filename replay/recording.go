package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// Recording is an opened recording: the index of its snapshot lines, from
// which any snapshot is rebuilt with the history windows the sampler had
// then. It is safe for concurrent use. Close it when done.
type Recording struct {
	files []*file
	warn  func(Warning)

	// The index, appended to while a background scan runs (ixMu), and the
	// view of it a rebuild works on (cx, under mu).
	ixMu sync.RWMutex
	ix   index
	cx   index
	// stop ends a background scan; scanned is closed when it has ended.
	stop    context.CancelFunc
	scanned chan struct{}
	// seen counts the snapshot lines scanned; the index keeps those whose
	// count is a multiple of 1<<shift (see maxEntries).
	seen  int64
	shift uint

	mu     sync.Mutex
	warned map[int32]bool // lines reported damaged while rebuilding
	cur    *cursor
	seqR   lineReader // reads lines in order
	keyR   lineReader // reads keyframes
}

// index is what a scan found: the headers, keyframes and snapshot lines,
// and the time zone of the first line, which times are given in.
type index struct {
	headers []*recorder.Header
	keys    []loc
	lines   []entry
	zone    *time.Location
	// gen counts the times the index was thinned: a line's place means
	// another line in another generation.
	gen int
}

// view returns the index as it stands. Its slices only grow, except when
// the index is thinned (in place, under mu as well): a view is used under
// ixMu (read), or under mu.
func (r *Recording) view() index {
	r.ixMu.RLock()
	defer r.ixMu.RUnlock()
	return r.ix
}

// with calls f with the index, under ixMu.
func (r *Recording) with(f func(x *index)) {
	r.ixMu.RLock()
	defer r.ixMu.RUnlock()
	f(&r.ix)
}

// series is the recent history of one device or process: its last samples,
// at most twice the window it feeds.
type series struct {
	t    []int64
	v    []uint64
	seen int // the last line (cursor step) that listed it
	// capacity is its window's; trimmed is set once its oldest samples
	// were dropped (a step back may then lack some).
	capacity int
	trimmed  bool
}

// push appends a sample and reports whether it did.
func (s *series) push(t int64, v uint64, capacity int) bool {
	// A part that starts over (after rotation, or a session appended)
	// repeats the history it began with.
	if n := len(s.t); n > 0 && t <= s.t[n-1] {
		return false
	}
	s.capacity = capacity
	if len(s.t) >= 2*capacity && capacity > 0 {
		k := len(s.t) - capacity + 1
		s.t = append(s.t[:0], s.t[k:]...)
		s.v = append(s.v[:0], s.v[k:]...)
		s.trimmed = true
	}
	s.t = append(s.t, t)
	s.v = append(s.v, v)
	return true
}

// undo is what applying one line did to a cursor, to step back over it.
type undo struct {
	prevIdx int // the cursor's record line before
	pushed  []pushed
	created []seriesKey
	deleted []deletedSeries
}

type pushed struct {
	s *series
	n int
}

type deletedSeries struct {
	k seriesKey
	s *series
}

// maxUndo is how many lines a cursor can step back without a rebuild.
const maxUndo = 256

// window returns the last capacity samples.
func (s *series) window(capacity int) sampler.Window {
	if s == nil || len(s.t) == 0 {
		return sampler.Window{}
	}
	lo := max(0, len(s.t)-capacity)
	times := make([]time.Time, len(s.t)-lo)
	for i := range times {
		times[i] = time.Unix(0, s.t[lo+i])
	}
	return sampler.WindowOf(times, append([]uint64(nil), s.v[lo:]...))
}

type seriesKey struct {
	dev   string
	pid   uint32
	start int64
	proc  bool
}

// cursor is the replay's state after one line: the history of every
// series and the last record read.
type cursor struct {
	gen    int // the index generation its places are in
	i      int // the last line applied
	step   int
	series map[seriesKey]*series
	rec    recorder.Record
	recIdx int // the line rec is from; -1: none yet
	kfIdx  int32
	kf     *recorder.Record
	// undos are the last lines applied, newest last; start is the first
	// line applied.
	undos []undo
	start int
}

// back steps the cursor back to line i, or reports that it cannot (too far,
// or the history it needs was trimmed).
func (r *Recording) back(c *cursor, i int) bool {
	if c.i-i > len(c.undos) {
		return false
	}
	// What each series loses, over all the lines stepped back.
	drop := map[*series]int{}
	for k := len(c.undos) - 1; k >= len(c.undos)-(c.i-i); k-- {
		for _, p := range c.undos[k].pushed {
			drop[p.s] += p.n
		}
	}
	for s, n := range drop {
		if left := len(s.t) - n; left < 0 || s.trimmed && left < s.capacity {
			return false
		}
	}
	for c.i > i {
		u := c.undos[len(c.undos)-1]
		c.undos = c.undos[:len(c.undos)-1]
		for _, p := range u.pushed {
			p.s.t, p.s.v = p.s.t[:len(p.s.t)-p.n], p.s.v[:len(p.s.v)-p.n]
		}
		for _, k := range u.created {
			delete(c.series, k)
		}
		for _, d := range u.deleted {
			c.series[d.k] = d.s
		}
		if u.prevIdx != c.recIdx {
			c.recIdx = u.prevIdx
			if c.recIdx >= 0 {
				rec, err := r.decodeAt(c, c.recIdx)
				if err != nil {
					return false
				}
				c.rec = rec
			}
		}
		c.i--
	}
	return true
}

// decodeAt reads and decodes line j on its own.
func (r *Recording) decodeAt(c *cursor, j int) (recorder.Record, error) {
	e := r.cx.lines[j]
	b, err := r.seqR.read(r.files[e.file], e.mem, e.off, e.n)
	if err != nil {
		return recorder.Record{}, err
	}
	var kf *recorder.Record
	if e.kf >= 0 {
		if kf, err = r.keyframe(c, e.kf); err != nil {
			return recorder.Record{}, err
		}
	}
	return decodeLine(bytes.Clone(b), kf)
}

// Demo reports whether the recording is of the built-in demo.
func (r *Recording) Demo() (demo bool) {
	r.with(func(x *index) { demo = x.headers[x.lines[0].hdr].Demo })
	return demo
}

// Len returns the number of snapshots (so far, while a background scan
// runs).
func (r *Recording) Len() (n int) {
	r.with(func(x *index) { n = len(x.lines) })
	return n
}

// Start returns the time of the first snapshot.
func (r *Recording) Start() time.Time { return r.Time(0) }

// End returns the time of the last snapshot (so far).
func (r *Recording) End() (t time.Time) {
	r.with(func(x *index) { t = x.time(len(x.lines) - 1) })
	return t
}

// Time returns the time of snapshot i (of the last one if there are no
// longer that many: the index was thinned since i was found).
func (r *Recording) Time(i int) (t time.Time) {
	r.with(func(x *index) { t = x.time(min(i, len(x.lines)-1)) })
	return t
}

func (x *index) time(i int) time.Time { return time.Unix(0, x.lines[i].t).In(x.zone) }

// Index returns the snapshot in force at t: the last one at or before t
// (the first one when t is before the recording).
func (r *Recording) Index(t time.Time) (i int) {
	r.with(func(x *index) { i = x.index(t) })
	return i
}

func (x *index) index(t time.Time) int {
	tn := t.UnixNano()
	i := sort.Search(len(x.lines), func(i int) bool { return x.lines[i].t > tn })
	return max(i-1, 0)
}

// At returns the snapshot in force at t, and whether t lies within the
// recording (from its first to its last snapshot).
func (r *Recording) At(t time.Time) (sampler.Snapshot, bool) {
	in := !t.Before(r.Start()) && !t.After(r.End())
	snap, _ := r.SnapshotAt(t)
	return snap, in
}

// SnapshotAt rebuilds the snapshot in force at t and returns its index: as
// Snapshot(Index(t)), in one step. A background scan that thins the index
// between the two calls renumbers the snapshots, and the index found first
// then names a later one.
func (r *Recording) SnapshotAt(t time.Time) (sampler.Snapshot, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cx = r.view()
	i := r.cx.index(t)
	return r.snapshotLocked(i), i
}

// config is the sampler configuration a header states.
func config(h *recorder.Header) (interval, history time.Duration, devCap, procCap int) {
	interval, history = time.Duration(h.Interval), time.Duration(h.History)
	if history <= 0 {
		history = sampler.DefaultHistory
	}
	if interval <= 0 {
		interval = sampler.DefaultInterval
	}
	return interval, history, recorder.DeviceRingCap(history, interval),
		recorder.ProcessRingCap(history, interval, time.Duration(h.ProcessInterval))
}

// from returns the line to start rebuilding snapshot i from: far enough
// back that every history window of line i is complete. A window holds its
// ring's capacity of samples, taken at least the header's interval apart
// (the process lists at least their floor apart): it spans the history,
// plus a margin for late samples. (A sampler slowed down while recording
// spans more; its oldest samples are then left out.)
func (r *Recording) from(i int) int {
	x := &r.cx
	_, history, _, _ := config(x.headers[x.lines[i].hdr])
	t := x.lines[i].t - int64(history+history/4)
	return sort.Search(len(x.lines), func(j int) bool { return x.lines[j].t >= t })
}

// Snapshot rebuilds snapshot i as the sampler published it, its history
// windows holding what the sampler's rings held at that moment.
func (r *Recording) Snapshot(i int) sampler.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cx = r.view()
	// The index may have been thinned since i was found.
	return r.snapshotLocked(min(i, len(r.cx.lines)-1))
}

// snapshotLocked rebuilds snapshot i of r.cx; the caller holds mu.
func (r *Recording) snapshotLocked(i int) sampler.Snapshot {
	r.seqR.ixMu, r.keyR.ixMu = &r.ixMu, &r.ixMu
	start := r.from(i)
	c := r.cur
	if c != nil && c.gen != r.cx.gen {
		c = nil
	}
	if c != nil && c.i > i && (c.start > start || !r.back(c, i)) {
		c = nil
	}
	if c == nil || i-c.i > i-start {
		// A new cursor starts early enough to step back maxUndo lines.
		early := r.from(max(0, i-maxUndo))
		c = &cursor{gen: r.cx.gen, i: early - 1, start: early, series: map[seriesKey]*series{}, recIdx: -1, kfIdx: -1}
		r.cur = c
	}
	for c.i < i {
		n := min(i-c.i, batchLines)
		r.applyBatch(c, c.i+1, c.i+n)
		c.i += n
	}
	if c.recIdx < 0 {
		// Every line up to i is damaged: what line i says is unknown.
		return sampler.Snapshot{Time: r.cx.time(i)}
	}
	return r.snapshot(c, c.recIdx)
}

// batchLines is how many lines are read, then decoded on all CPUs, at a
// time.
const batchLines = 256

// decoded is one line of a batch.
type decoded struct {
	b   []byte
	kf  *recorder.Record // its keyframe, for a delta line
	rec recorder.Record
	err error
}

// applyBatch reads lines from..to (in order: a gzip stream is read
// sequentially), decodes them in parallel and applies them in order.
func (r *Recording) applyBatch(c *cursor, from, to int) {
	batch := make([]decoded, to-from+1)
	for k := range batch {
		e := r.cx.lines[from+k]
		b, err := r.seqR.read(r.files[e.file], e.mem, e.off, e.n)
		if err == nil && e.kf >= 0 {
			batch[k].kf, err = r.keyframe(c, e.kf)
		}
		batch[k].b, batch[k].err = bytes.Clone(b), err
	}
	workers := min(runtime.GOMAXPROCS(0), len(batch))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := w; k < len(batch); k += workers {
				d := &batch[k]
				if d.err == nil {
					d.rec, d.err = decodeLine(d.b, d.kf)
				}
				d.b = nil
			}
		})
	}
	wg.Wait()
	for k := range batch {
		r.apply(c, from+k, batch[k].rec, batch[k].err)
	}
}

// keyframe returns keyframe k decoded, reading it unless it is the
// cursor's last.
func (r *Recording) keyframe(c *cursor, k int32) (*recorder.Record, error) {
	if c.kfIdx == k {
		return c.kf, nil
	}
	l := r.cx.keys[k]
	kb, err := r.keyR.read(r.files[l.file], l.mem, l.off, l.n)
	if err != nil {
		return nil, err
	}
	var kf recorder.Record
	if err := recorder.DecodeRecord(kb, &kf); err != nil {
		return nil, fmt.Errorf("its keyframe (line %d) is damaged: %v", l.line, err)
	}
	c.kf, c.kfIdx = &kf, k
	return c.kf, nil
}

// decodeLine decodes a whole record, or a delta expanded against its
// keyframe kf, and checks its times.
func decodeLine(b []byte, kf *recorder.Record) (recorder.Record, error) {
	var rec recorder.Record
	if kf == nil {
		if err := recorder.DecodeRecord(b, &rec); err != nil {
			return rec, err
		}
	} else {
		var d recorder.Delta
		if err := recorder.DecodeDelta(b, &d); err != nil {
			return rec, err
		}
		var err error
		if rec, err = recorder.Expand(kf, &d); err != nil {
			return rec, err
		}
	}
	inertRecord(&rec)
	return rec, checkTimes(&rec)
}

// apply takes line j, decoded as rec (or damaged: err), into the cursor.
func (r *Recording) apply(c *cursor, j int, rec recorder.Record, err error) {
	e := r.cx.lines[j]
	if len(c.undos) == maxUndo {
		c.undos = append(c.undos[:0], c.undos[1:]...)
	}
	c.undos = append(c.undos, undo{prevIdx: c.recIdx})
	u := &c.undos[len(c.undos)-1]
	if err != nil {
		if !r.warned[int32(j)] && len(r.warned) < 1<<16 {
			r.warned[int32(j)] = true
			r.warn(Warning{File: r.files[e.file].name, Line: int(e.line), Msg: "damaged line skipped: " + shortErr(err)})
		}
		return
	}
	_, _, devCap, procCap := config(r.cx.headers[e.hdr])
	c.step++
	get := func(k seriesKey) *series {
		s := c.series[k]
		if s == nil {
			s = &series{}
			c.series[k] = s
			u.created = append(u.created, k)
		}
		s.seen = c.step
		return s
	}
	push := func(s *series, h *recorder.Samples, t int64, v uint64, implied bool, capacity int) {
		n := 0
		if h != nil {
			for _, x := range *h {
				if s.push(x.T, x.V, capacity) {
					n++
				}
			}
		} else if implied && s.push(t, v, capacity) {
			n++
		}
		if n > 0 {
			u.pushed = append(u.pushed, pushed{s, n})
		}
	}
	tn := e.t
	for i := range rec.Devices {
		d := &rec.Devices[i]
		push(get(seriesKey{dev: d.ID}), d.H, tn, d.MemoryUsed, true, devCap)
		for j := range d.Procs {
			p := &d.Procs[j]
			ls := recorder.UnixNano(p.LastSeen)
			if ls == 0 {
				ls = tn
			}
			push(get(seriesKey{dev: d.ID, pid: p.PID, start: recorder.UnixNano(p.StartTime), proc: true}), p.H, ls, p.Used(), p.UsedBytes != nil, procCap)
		}
	}
	// A series this line does not list has left the sampler too; if it
	// comes back, its line carries its whole window again.
	for k, s := range c.series {
		if s.seen != c.step {
			delete(c.series, k)
			u.deleted = append(u.deleted, deletedSeries{k, s})
		}
	}
	c.rec, c.recIdx = rec, j
}

// checkTimes refuses a record holding a time no recording has (a zeroed
// or garbled one), so no consumer sees it.
func checkTimes(rec *recorder.Record) error {
	bad := func(n int64) bool { return n != 0 && !saneNano(n) }
	if bad(rec.StaleSince) {
		return errors.New("its stale-since time is not a time of a recording")
	}
	for i := range rec.Devices {
		d := &rec.Devices[i]
		if d.H != nil {
			for _, s := range *d.H {
				if !saneNano(s.T) {
					return fmt.Errorf("device %s: a history sample at %d ns is not a time of a recording", d.ID, s.T)
				}
			}
		}
		for j := range d.Procs {
			p := &d.Procs[j]
			sane := true
			p.EachTime(func(t time.Time) { sane = sane && !bad(recorder.UnixNano(t)) })
			if !sane {
				return fmt.Errorf("process %d: its start, first or last seen time is not a time of a recording", p.PID)
			}
			if p.H != nil {
				for _, s := range *p.H {
					if !saneNano(s.T) {
						return fmt.Errorf("process %d: a history sample at %d ns is not a time of a recording", p.PID, s.T)
					}
				}
			}
		}
	}
	return nil
}

// snapshot builds the Snapshot of line i from the cursor's record and
// series.
func (r *Recording) snapshot(c *cursor, i int) sampler.Snapshot {
	e := r.cx.lines[i]
	h, rec := r.cx.headers[e.hdr], c.rec
	interval, _, devCap, procCap := config(h)
	snap := sampler.Snapshot{
		Time: r.cx.time(i), Hostname: h.Hostname, DriverVersion: h.DriverVersion,
		NVMLVersion: h.NVMLVersion, CUDAVersion: h.CUDAVersion,
		Source: h.Source, Demo: h.Demo, Interval: interval,
		Warnings: rec.Warnings, Err: rec.Err, Seq: rec.Seq,
		Stale: rec.Stale, StaleSince: recorder.FromUnixNano(rec.StaleSince),
		Devices: make([]sampler.Device, len(rec.Devices)),
	}
	if rec.Interval != 0 {
		snap.Interval = time.Duration(rec.Interval)
	}
	info := make(map[string]recorder.DeviceInfo, len(h.Devices))
	for _, d := range h.Devices {
		info[d.ID] = d
	}
	tn := e.t
	for j := range rec.Devices {
		d := &rec.Devices[j]
		di, ok := info[d.ID]
		if !ok {
			di = recorder.DeviceInfo{ID: d.ID}
		}
		// What the line recorded of the device, what the header says of
		// it, and what replay rebuilds.
		dev := d.Device
		dev.SetInfo(di)
		dev.History = c.series[seriesKey{dev: d.ID}].window(devCap)
		dev.Processes = make([]sampler.Process, len(d.Procs))
		dev.PeakUsed = dev.History.Max()
		if d.ListAge >= 0 && !di.NoProcessList {
			dev.ListedAt = time.Unix(0, tn-d.ListAge)
		}
		dev.RecentPeakUsed = d.MemoryUsed
		if d.RecentPeak != nil {
			dev.RecentPeakUsed = *d.RecentPeak
		}
		for k := range d.Procs {
			dev.Processes[k] = d.Procs[k].Process
			p := &dev.Processes[k]
			if p.LastSeen.IsZero() {
				p.LastSeen = time.Unix(0, tn)
			}
			p.History = c.series[seriesKey{dev: d.ID, pid: p.PID, start: recorder.UnixNano(p.StartTime), proc: true}].window(procCap)
		}
		snap.Devices[j] = dev
	}
	return snap
}

// lineReader reads lines of a recording by their place, keeping a gzip
// member open between reads that move forward through it.
type lineReader struct {
	ixMu *sync.RWMutex
	f    *file
	mem  int32
	pos  int64 // decompressed bytes read from the member
	zr   *gzip.Reader
	buf  []byte
}

// member is where gzip member mem of f starts (the members are appended
// to while a background scan runs).
func (l *lineReader) member(f *file, mem int32) int64 {
	l.ixMu.RLock()
	defer l.ixMu.RUnlock()
	return f.members[mem]
}

func (l *lineReader) read(f *file, mem int32, off int64, n uint32) ([]byte, error) {
	if cap(l.buf) < int(n) {
		l.buf = make([]byte, n)
	}
	b := l.buf[:n]
	if !f.gz {
		_, err := f.f.ReadAt(b, off)
		return b, err
	}
	if l.zr == nil || l.f != f || l.mem != mem || l.pos > off {
		start := l.member(f, mem)
		st, err := f.f.Stat()
		if err != nil {
			return nil, err
		}
		br := bufio.NewReaderSize(io.NewSectionReader(f.f, start, st.Size()-start), 64<<10)
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		zr.Multistream(false)
		l.f, l.mem, l.pos, l.zr = f, mem, 0, zr
	}
	if _, err := io.CopyN(io.Discard, l.zr, off-l.pos); err != nil {
		l.zr = nil
		return nil, errors.New("compressed data no longer reads")
	}
	if _, err := io.ReadFull(l.zr, b); err != nil {
		l.zr = nil
		return nil, errors.New("compressed data no longer reads")
	}
	l.pos = off + int64(n)
	return b, nil
}
