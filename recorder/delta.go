package recorder

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"
)

// Format version 2 writes most snapshots as deltas: a keyframe line holds a
// whole Record (as version 1 writes every line) and the lines after it
// state only what differs from that keyframe:
//
//	{"t":…,"seq":…,"key":true,"d":[…]}           a keyframe
//	{"t":…,"seq":…,"kf":KEYFRAME_UNIX_NS,"dd":[…]} a delta line
//
// A delta line names its keyframe by the keyframe's time and depends on no
// other line, so a line lost or damaged costs that line only (a keyframe
// lost costs the lines up to the next keyframe). Its "dd" lists the
// devices that differ, each as {"i":INDEX_IN_KEYFRAME, changed fields…,
// "clr":[fields now absent], "dp":[processes that differ or are new],
// "gone":[indexes of the keyframe's processes no longer listed],
// "ord":[the order of the processes as (first, count) runs, when it is not
// the keyframe's with new ones at the end], or "srt":true when it is the
// sampler's order by memory}. A process that differs is {"i":INDEX, changed
// fields…, "clr":[…]}; a new one is a whole ProcRec with "n":true. Devices
// and processes left out are as in the keyframe, except for the time a
// process was last seen: that is the line's "pl" (its last process-list
// poll; the line's own time when left out) unless the process gives its
// own "ls" (Unix ns). History samples ("h") are
// never inherited: a line states its own, as in version 1 (left out: the
// one sample the line's values imply).
//
// A keyframe is written after every header line, when the devices listed
// change, at least every MaxKeyframeGap, and when the deltas have grown
// enough that their extra bytes since the keyframe would have paid for a
// new one.

// MaxKeyframeGap is the longest time between two keyframes.
const MaxKeyframeGap = 10 * time.Minute

// Delta is a delta line as read: the keyframe it refers to and the devices
// that differ, applied to the keyframe by Expand.
type Delta struct {
	T          time.Time  `json:"t"`
	Seq        uint64     `json:"seq,omitempty"`
	Key        int64      `json:"kf"`
	Poll       int64      `json:"pl,omitempty"`
	Interval   Duration   `json:"interval,omitempty"`
	Devices    []DevPatch `json:"dd"`
	Warnings   []string   `json:"w,omitempty"`
	Err        string     `json:"err,omitempty"`
	Stale      bool       `json:"stale,omitempty"`
	StaleSince int64      `json:"ss,omitempty"`
}

// DevPatch is one device of a delta line: the fields it states (set) and
// those it clears, its processes that differ, gone and their order.
type DevPatch struct {
	I int
	// set holds the values of the fields stated, listed in stated (as
	// indexes into devPatchFields).
	set    DevRec
	stated []uint8
	H      *Samples
	Clear  []string
	Procs  []ProcPatch
	Gone   []int
	Order  []int
	// Sorted: the processes are in the sampler's order, by memory.
	Sorted bool
}

// ProcPatch is one process of a DevPatch: one of the keyframe's (I) with
// the fields that differ, or a new one (New) in full.
type ProcPatch struct {
	I      int
	New    bool
	set    ProcRec
	stated []uint8
	Clear  []string
}

// UnmarshalJSON reads a device of a delta line.
func (p *DevPatch) UnmarshalJSON(b []byte) error {
	*p = DevPatch{}
	return members(b, func(k, v []byte) error {
		switch string(k) {
		case "i":
			return decodeInt(&p.I, v)
		case "h":
			return decodeSamples(&p.H, v)
		case "clr":
			return json.Unmarshal(v, &p.Clear)
		case "dp":
			p.Procs = make([]ProcPatch, 0, count(v))
			return elements(v, func(v []byte) error {
				p.Procs = append(p.Procs, ProcPatch{})
				return p.Procs[len(p.Procs)-1].UnmarshalJSON(v)
			})
		case "gone":
			return json.Unmarshal(v, &p.Gone)
		case "ord":
			return json.Unmarshal(v, &p.Order)
		case "srt":
			return json.Unmarshal(v, &p.Sorted)
		}
		return decodeStated(devPatchFields, unsafe.Pointer(&p.set), &p.stated, k, v)
	})
}

// UnmarshalJSON reads a process of a delta line.
func (p *ProcPatch) UnmarshalJSON(b []byte) error {
	*p = ProcPatch{}
	return members(b, func(k, v []byte) error {
		switch string(k) {
		case "i":
			return decodeInt(&p.I, v)
		case "n":
			return json.Unmarshal(v, &p.New)
		case "h":
			return decodeSamples(&p.set.H, v)
		case "clr":
			return json.Unmarshal(v, &p.Clear)
		}
		return decodeStated(procPatchFields, unsafe.Pointer(&p.set), &p.stated, k, v)
	})
}

func decodeInt(n *int, v []byte) error {
	i, err := parseInt[int](v)
	if err != nil {
		return fmt.Errorf("index: %v", err)
	}
	*n = i
	return nil
}

// decodeStated sets the field named k of the patch's values at base and
// notes it stated.
func decodeStated(t *table, base unsafe.Pointer, stated *[]uint8, k, v []byte) error {
	i, ok := t.lookup(k)
	if !ok {
		return nil
	}
	f := &t.fields[i]
	if err := f.c.decode(at(base, f), v); err != nil {
		return fmt.Errorf("%q: %v", f.tag, err)
	}
	if !slices.Contains(*stated, uint8(i)) {
		*stated = append(*stated, uint8(i))
	}
	return nil
}

// patch clears the fields of the record at dst named in clear, then sets
// those stated from the values at src.
func patch(t *table, dst, src unsafe.Pointer, stated []uint8, clear []string, what string) error {
	for _, name := range clear {
		i, ok := t.byTag[name]
		if !ok {
			return errorf("unknown %s field %q to clear", what, name)
		}
		f := &t.fields[i]
		f.c.zero(at(dst, f))
	}
	for _, i := range stated {
		f := &t.fields[i]
		f.c.copy(at(dst, f), at(src, f))
	}
	return nil
}

func (p *DevPatch) apply(d *DevRec) error {
	if err := patch(devPatchFields, unsafe.Pointer(d), unsafe.Pointer(&p.set), p.stated, p.Clear, "device"); err != nil {
		return err
	}
	d.H = p.H
	return nil
}

func (p *ProcPatch) apply(r *ProcRec) error {
	// Of a process, only what a keyframe would not leave out can be
	// cleared (its identity, as written, never).
	for _, name := range p.Clear {
		if _, ok := procFields.byTag[name]; !ok {
			return errorf("unknown process field %q to clear", name)
		}
	}
	if err := patch(procPatchFields, unsafe.Pointer(r), unsafe.Pointer(&p.set), p.stated, p.Clear, "process"); err != nil {
		return err
	}
	r.H = p.set.H
	return nil
}

// Expand applies the delta line d to its keyframe kf and returns the whole
// Record d stands for. kf is not modified.
func Expand(kf *Record, d *Delta) (Record, error) {
	r := Record{T: d.T, Seq: d.Seq, Interval: d.Interval, Warnings: d.Warnings, Err: d.Err,
		Stale: d.Stale, StaleSince: d.StaleSince, Devices: make([]DevRec, len(kf.Devices))}
	for i, dev := range kf.Devices {
		dev.H = nil
		r.Devices[i] = dev
	}
	done := make([]bool, len(kf.Devices))
	for k := range d.Devices {
		dd := &d.Devices[k]
		if dd.I < 0 || dd.I >= len(kf.Devices) || done[dd.I] {
			return Record{}, errorf("device index %d is not one of the keyframe's %d", dd.I, len(kf.Devices))
		}
		done[dd.I] = true
		dev, err := expandDev(&kf.Devices[dd.I], dd)
		if err != nil {
			return Record{}, err
		}
		r.Devices[dd.I] = dev
	}
	// Last seen: the process's own, or the line's poll; written as a
	// Record writes it (0: the line's time).
	poll, tn := d.Poll, d.T.UnixNano()
	if poll == 0 {
		poll = tn
	}
	for i, dev := range r.Devices {
		if !done[i] {
			dev.Procs = slices.Clone(dev.Procs)
			for j := range dev.Procs {
				dev.Procs[j].LastSeen, dev.Procs[j].H = time.Time{}, nil
			}
			r.Devices[i] = dev
		}
		for j := range dev.Procs {
			p := &dev.Procs[j]
			switch UnixNano(p.LastSeen) {
			case 0:
				if poll != tn {
					p.LastSeen = time.Unix(0, poll)
				}
			case tn:
				p.LastSeen = time.Time{}
			}
		}
	}
	return r, nil
}

func expandDev(kf *DevRec, dd *DevPatch) (DevRec, error) {
	dev := *kf
	dev.H, dev.Procs = nil, nil
	if err := dd.apply(&dev); err != nil {
		return DevRec{}, err
	}
	n := len(kf.Procs)
	gone := make([]bool, n)
	for _, g := range dd.Gone {
		if g < 0 || g >= n {
			return DevRec{}, errorf("process index %d is not one of the keyframe's %d", g, n)
		}
		gone[g] = true
	}
	// The keyframe's processes that the line changes are copied and
	// changed; the others are read where they are, and every process is
	// copied once, into the list (a process is a few hundred bytes).
	patched := make([]*ProcRec, n)
	copies := make([]ProcRec, 0, len(dd.Procs)) // never grown: patched points into it
	var added []ProcRec
	for k := range dd.Procs {
		pd := &dd.Procs[k]
		if pd.New {
			var p ProcRec
			if err := pd.apply(&p); err != nil {
				return DevRec{}, err
			}
			added = append(added, p)
			continue
		}
		if pd.I < 0 || pd.I >= n || gone[pd.I] {
			return DevRec{}, errorf("process index %d is not one of the keyframe's %d", pd.I, n)
		}
		if patched[pd.I] == nil {
			copies = append(copies, kf.Procs[pd.I])
			p := &copies[len(copies)-1]
			p.H, p.LastSeen = nil, time.Time{}
			patched[pd.I] = p
		}
		if err := pd.apply(patched[pd.I]); err != nil {
			return DevRec{}, err
		}
	}
	src := func(j int32) *ProcRec {
		switch {
		case int(j) >= n:
			return &added[int(j)-n]
		case patched[j] != nil:
			return patched[j]
		}
		return &kf.Procs[j]
	}
	// The list is the keyframe's processes still listed, then the new
	// ones, sorted or ordered as the line says.
	idx := make([]int32, 0, n+len(added))
	for i := range n {
		if !gone[i] {
			idx = append(idx, int32(i))
		}
	}
	for i := range added {
		idx = append(idx, int32(n+i))
	}
	if dd.Sorted {
		slices.SortStableFunc(idx, func(a, b int32) int { return byMemory(src(a), src(b)) })
	}
	if len(dd.Order) > 0 {
		order, err := unrun(dd.Order, len(idx))
		if err != nil {
			return DevRec{}, err
		}
		if len(order) != len(idx) {
			return DevRec{}, errorf("process order lists %d of %d processes", len(order), len(idx))
		}
		ordered := make([]int32, len(idx))
		used := make([]bool, len(idx))
		for k, j := range order {
			if j < 0 || j >= len(idx) || used[j] {
				return DevRec{}, errorf("process order is not a permutation")
			}
			used[j] = true
			ordered[k] = idx[j]
		}
		idx = ordered
	}
	if len(idx) > 0 {
		dev.Procs = make([]ProcRec, len(idx))
		for k, j := range idx {
			p := &dev.Procs[k]
			*p = *src(j)
			if int(j) < n && patched[j] == nil {
				p.H, p.LastSeen = nil, time.Time{}
			}
		}
	}
	return dev, nil
}

// appendDiff appends `,"tag":value` for each field of t of the record at
// cur that differs from the record at kf, and returns the names of those
// now absent (left out as empty).
func appendDiff(b []byte, t *table, kf, cur unsafe.Pointer, clr []string) ([]byte, []string, error) {
	for i := range t.fields {
		f := &t.fields[i]
		a, c := at(kf, f), at(cur, f)
		if f.c.equal(a, c) {
			continue
		}
		if f.c.empty(c) {
			clr = append(clr, f.tag)
			continue
		}
		b = append(b, ',', '"')
		b = append(b, f.tag...)
		b = append(b, '"', ':')
		var err error
		if b, err = f.c.add(b, c); err != nil {
			return nil, nil, err
		}
	}
	return b, clr, nil
}

// appendStrings appends ,"name":["a","b"] when list is not empty.
func appendStrings(b []byte, name string, list []string) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, s) // field names: plain ASCII
	}
	return append(b, ']')
}

func appendInts(b []byte, name string, list []int) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, n := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

// procID identifies a process on a device across lines.
type procID struct {
	pid   uint32
	start int64
}

// appendDelta appends the delta line of r relative to the keyframe kf
// (whose devices have the same IDs in the same order), without its
// newline.
func appendDelta(b []byte, kf, r *Record, kfIndex []map[procID]int) ([]byte, error) {
	b = append(b, `{"t":`...)
	tb, err := r.T.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b, tb...)
	if r.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, r.Seq, 10)
	}
	b = append(b, `,"kf":`...)
	b = strconv.AppendInt(b, kf.T.UnixNano(), 10)
	tn := r.T.UnixNano()
	poll := linePoll(r)
	if poll != tn {
		b = append(b, `,"pl":`...)
		b = strconv.AppendInt(b, poll, 10)
	}
	if r.Interval != 0 {
		b = append(b, `,"interval":`...)
		ib, _ := r.Interval.MarshalJSON()
		b = append(b, ib...)
	}
	b = append(b, `,"dd":[`...)
	n := 0
	var clr []string
	for i := range r.Devices {
		cur, key := &r.Devices[i], &kf.Devices[i]
		start := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"i":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		mark := len(b)
		clr = clr[:0]
		if b, clr, err = appendDiff(b, devFields, unsafe.Pointer(key), unsafe.Pointer(cur), clr); err != nil {
			return nil, err
		}
		b = appendStrings(b, "clr", clr)
		if cur.H != nil {
			b = append(b, `,"h":`...)
			b = appendSamples(b, *cur.H)
		}
		if b, err = appendProcDeltas(b, key, cur, kfIndex[i], tn, poll); err != nil {
			return nil, err
		}
		if len(b) == mark {
			b = b[:start] // the device is as in the keyframe
			continue
		}
		b = append(b, '}')
		n++
	}
	b = append(b, ']')
	if len(r.Warnings) > 0 {
		b = append(b, `,"w":`...)
		wb, err := json.Marshal(r.Warnings)
		if err != nil {
			return nil, err
		}
		b = append(b, wb...)
	}
	if r.Stale {
		b = append(b, `,"stale":true`...)
	}
	if r.StaleSince != 0 {
		b = append(b, `,"ss":`...)
		b = strconv.AppendInt(b, r.StaleSince, 10)
	}
	if r.Err != "" {
		b = append(b, `,"err":`...)
		eb, err := json.Marshal(r.Err)
		if err != nil {
			return nil, err
		}
		b = append(b, eb...)
	}
	return append(b, '}'), nil
}

// appendProcDeltas appends the "dp", "gone" and "ord" of a device.
func appendProcDeltas(b []byte, key, cur *DevRec, index map[procID]int, tn, poll int64) ([]byte, error) {
	lastSeen := func(p *ProcRec) int64 {
		if ls := UnixNano(p.LastSeen); ls != 0 {
			return ls
		}
		return tn
	}
	present := make([]bool, len(key.Procs))
	// pos[k] is where process k of cur stands in the list the reader
	// rebuilds: the keyframe's processes still listed, then the new ones.
	pos := make([]int, len(cur.Procs))
	var clr []string
	wrote := false
	var newOnes []int
	for k := range cur.Procs {
		p := &cur.Procs[k]
		j, ok := index[procID{p.PID, UnixNano(p.StartTime)}]
		if !ok || present[j] {
			newOnes = append(newOnes, k)
			pos[k] = -1
			continue
		}
		present[j] = true
		pos[k] = j
		start := len(b)
		if wrote {
			b = append(b, ',')
		} else {
			b = append(b, `,"dp":[`...)
		}
		b = append(b, `{"i":`...)
		b = strconv.AppendInt(b, int64(j), 10)
		mark := len(b)
		clr = clr[:0]
		var err error
		if b, clr, err = appendDiff(b, procFields, unsafe.Pointer(&key.Procs[j]), unsafe.Pointer(p), clr); err != nil {
			return nil, err
		}
		b = appendStrings(b, "clr", clr)
		if ls := lastSeen(p); ls != poll {
			b = append(b, `,"ls":`...)
			b = strconv.AppendInt(b, ls, 10)
		}
		if p.H != nil {
			b = append(b, `,"h":`...)
			b = appendSamples(b, *p.H)
		}
		if len(b) == mark {
			b = b[:start]
			continue
		}
		b = append(b, '}')
		wrote = true
	}
	for _, k := range newOnes {
		if wrote {
			b = append(b, ',')
		} else {
			b = append(b, `,"dp":[`...)
		}
		wrote = true
		p := cur.Procs[k]
		ls := lastSeen(&p)
		p.LastSeen = time.Time{}
		if ls != poll {
			p.LastSeen = time.Unix(0, ls)
		}
		b = append(b, `{"n":true`...)
		mark := len(b)
		var err error
		if b, err = appendProc(b, &p); err != nil {
			return nil, err
		}
		// The process's own object, its { now the comma after the mark.
		if b[mark] = ','; b[mark+1] == '}' {
			b = append(b[:mark], '}')
		}
	}
	if wrote {
		b = append(b, ']')
	}
	// Where the kept processes land once the gone ones are dropped.
	var gone []int
	shift := make([]int, len(key.Procs))
	kept := 0
	for j, ok := range present {
		if !ok {
			gone = append(gone, j)
			continue
		}
		shift[j] = kept
		kept++
	}
	b = appendInts(b, "gone", gone)
	order := make([]int, len(cur.Procs))
	natural := true
	next := kept
	for k := range cur.Procs {
		if pos[k] < 0 {
			order[k] = next
			next++
		} else {
			order[k] = shift[pos[k]]
		}
		if order[k] != k {
			natural = false
		}
	}
	switch {
	case natural:
	case sortedByMemory(cur.Procs):
		// The order the sampler gives (by memory): said in one word.
		b = append(b, `,"srt":true`...)
	default:
		b = appendInts(b, "ord", runs(order))
	}
	return b, nil
}

// byMemory is the sampler's order of a device's processes: live ones by
// memory, largest first, then exited ones by peak; ties by PID.
func byMemory(a, b *ProcRec) int {
	if a.Exited != b.Exited {
		if a.Exited {
			return 1
		}
		return -1
	}
	va, vb := a.PeakBytes, b.PeakBytes
	if !a.Exited {
		va, vb = a.Used(), b.Used()
	}
	if c := cmp.Compare(vb, va); c != 0 {
		return c
	}
	return cmp.Compare(a.PID, b.PID)
}

// sortedByMemory reports whether procs are in byMemory order with no two
// alike, so that sorting any arrangement of them gives this one.
func sortedByMemory(procs []ProcRec) bool {
	for i := 1; i < len(procs); i++ {
		if byMemory(&procs[i-1], &procs[i]) >= 0 {
			return false
		}
	}
	return true
}

// runs writes a permutation as (first, count) pairs of its runs of
// consecutive numbers: one process moved in a list of a hundred is six
// numbers, not a hundred.
func runs(order []int) []int {
	var out []int
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && order[j] == order[j-1]+1 {
			j++
		}
		out = append(out, order[i], j-i)
		i = j
	}
	return out
}

// unrun is the inverse of runs, refusing more than limit numbers.
func unrun(pairs []int, limit int) ([]int, error) {
	if len(pairs)%2 != 0 {
		return nil, errorf("process order: an odd count of numbers")
	}
	var out []int
	for i := 0; i < len(pairs); i += 2 {
		first, n := pairs[i], pairs[i+1]
		if n < 1 || n > limit-len(out) {
			return nil, errorf("process order: a run of %d", n)
		}
		for k := range n {
			out = append(out, first+k)
		}
	}
	return out, nil
}

// appendSamples appends [[t,v],…].
func appendSamples(b []byte, s Samples) []byte {
	b = append(b, '[')
	for i, x := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, x.T, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, x.V, 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// linePoll is the time most of r's processes were last seen (its last
// process-list poll), r's own time when it lists none.
func linePoll(r *Record) int64 {
	tn := r.T.UnixNano()
	count := map[int64]int{}
	best, most := tn, 0
	for i := range r.Devices {
		for j := range r.Devices[i].Procs {
			ls := UnixNano(r.Devices[i].Procs[j].LastSeen)
			if ls == 0 {
				ls = tn
			}
			if count[ls]++; count[ls] > most {
				best, most = ls, count[ls]
			}
		}
	}
	return best
}

// keyIndex maps each device's processes of a keyframe to their indexes.
func keyIndex(kf *Record) []map[procID]int {
	out := make([]map[procID]int, len(kf.Devices))
	for i := range kf.Devices {
		d := &kf.Devices[i]
		m := make(map[procID]int, len(d.Procs))
		for j := range d.Procs {
			p := &d.Procs[j]
			id := procID{p.PID, UnixNano(p.StartTime)}
			if _, dup := m[id]; !dup {
				m[id] = j
			}
		}
		out[i] = m
	}
	return out
}

// sameDevices reports whether a and b list the same device IDs in the same
// order.
func sameDevices(a, b *Record) bool {
	if len(a.Devices) != len(b.Devices) {
		return false
	}
	for i := range a.Devices {
		if a.Devices[i].ID != b.Devices[i].ID {
			return false
		}
	}
	return true
}
