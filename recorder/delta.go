package recorder

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vramtop/vramtop/sampler"
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
	I          int         `json:"i"`
	Total      *uint64     `json:"tot"`
	Used       *uint64     `json:"used"`
	Free       *uint64     `json:"free"`
	Res        *uint64     `json:"res"`
	Unatt      *uint64     `json:"una"`
	Util       *float64    `json:"util"`
	Temp       *int        `json:"temp"`
	Power      *float64    `json:"pw"`
	Energy     *uint64     `json:"en"`
	EnergyErr  *string     `json:"ene"`
	SMClock    *int        `json:"smc"`
	MemClock   *int        `json:"mc"`
	Err        *string     `json:"err"`
	RecentPeak *uint64     `json:"rp"`
	ListAge    *int64      `json:"la"`
	H          *Samples    `json:"h"`
	Clear      []string    `json:"clr"`
	Procs      []ProcPatch `json:"dp"`
	Gone       []int       `json:"gone"`
	Order      []int       `json:"ord"`
	// Sorted: the processes are in the sampler's order, by memory.
	Sorted bool `json:"srt"`
}

// ProcPatch is one process of a DevPatch: one of the keyframe's (I) with
// the fields that differ, or a new one (New) in full.
type ProcPatch struct {
	I         int          `json:"i"`
	New       bool         `json:"n"`
	PID       *uint32      `json:"pid"`
	User      *string      `json:"user"`
	UID       *uint32      `json:"uid"`
	Command   *string      `json:"cmd"`
	Used      *uint64      `json:"used"`
	Type      *string      `json:"type"`
	Container *string      `json:"ct"`
	Job       *sampler.Job `json:"job"`
	CPU       *float64     `json:"cpu"`
	HostMem   *uint64      `json:"hm"`
	Visible   *bool        `json:"vis"`
	Start     *int64       `json:"st"`
	Util      *float64     `json:"util"`
	FirstSeen *int64       `json:"fs"`
	LastSeen  *int64       `json:"ls"`
	Peak      *uint64      `json:"pk"`
	Exited    *bool        `json:"x"`
	H         *Samples     `json:"h"`
	Clear     []string     `json:"clr"`
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func setPtr[T any](dst **T, v *T) {
	if v != nil {
		*dst = v
	}
}

func (p *DevPatch) apply(d *DevRec) error {
	for _, f := range p.Clear {
		switch f {
		case "tot":
			d.Total = 0
		case "used":
			d.Used = 0
		case "free":
			d.Free = 0
		case "res":
			d.Res = nil
		case "una":
			d.Unatt = nil
		case "util":
			d.Util = nil
		case "temp":
			d.Temp = nil
		case "pw":
			d.Power = nil
		case "en":
			d.Energy = nil
		case "ene":
			d.EnergyErr = ""
		case "smc":
			d.SMClock = nil
		case "mc":
			d.MemClock = nil
		case "err":
			d.Err = ""
		case "rp":
			d.RecentPeak = nil
		case "la":
			d.ListAge = 0
		default:
			return errorf("unknown device field %q to clear", f)
		}
	}
	set(&d.Total, p.Total)
	set(&d.Used, p.Used)
	set(&d.Free, p.Free)
	setPtr(&d.Res, p.Res)
	setPtr(&d.Unatt, p.Unatt)
	setPtr(&d.Util, p.Util)
	setPtr(&d.Temp, p.Temp)
	setPtr(&d.Power, p.Power)
	setPtr(&d.Energy, p.Energy)
	set(&d.EnergyErr, p.EnergyErr)
	setPtr(&d.SMClock, p.SMClock)
	setPtr(&d.MemClock, p.MemClock)
	set(&d.Err, p.Err)
	setPtr(&d.RecentPeak, p.RecentPeak)
	set(&d.ListAge, p.ListAge)
	d.H = p.H
	return nil
}

func (p *ProcPatch) apply(r *ProcRec) error {
	for _, f := range p.Clear {
		switch f {
		case "user":
			r.User = ""
		case "uid":
			r.UID = nil
		case "cmd":
			r.Command = ""
		case "used":
			r.Used = nil
		case "type":
			r.Type = ""
		case "ct":
			r.Container = ""
		case "job":
			r.Job = nil
		case "cpu":
			r.CPU = nil
		case "hm":
			r.HostMem = nil
		case "vis":
			r.Visible = false
		case "util":
			r.Util = nil
		case "fs":
			r.FirstSeen = 0
		case "pk":
			r.Peak = 0
		case "x":
			r.Exited = false
		default:
			return errorf("unknown process field %q to clear", f)
		}
	}
	set(&r.PID, p.PID)
	set(&r.User, p.User)
	setPtr(&r.UID, p.UID)
	set(&r.Command, p.Command)
	setPtr(&r.Used, p.Used)
	set(&r.Type, p.Type)
	set(&r.Container, p.Container)
	setPtr(&r.Job, p.Job)
	setPtr(&r.CPU, p.CPU)
	setPtr(&r.HostMem, p.HostMem)
	set(&r.Visible, p.Visible)
	set(&r.Start, p.Start)
	setPtr(&r.Util, p.Util)
	set(&r.FirstSeen, p.FirstSeen)
	set(&r.LastSeen, p.LastSeen)
	set(&r.Peak, p.Peak)
	set(&r.Exited, p.Exited)
	r.H = p.H
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
				dev.Procs[j].LastSeen, dev.Procs[j].H = 0, nil
			}
			r.Devices[i] = dev
		}
		for j := range dev.Procs {
			p := &dev.Procs[j]
			if p.LastSeen == 0 {
				p.LastSeen = poll
			}
			if p.LastSeen == tn {
				p.LastSeen = 0
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
	gone := make([]bool, len(kf.Procs))
	for _, g := range dd.Gone {
		if g < 0 || g >= len(kf.Procs) {
			return DevRec{}, errorf("process index %d is not one of the keyframe's %d", g, len(kf.Procs))
		}
		gone[g] = true
	}
	procs := make([]ProcRec, len(kf.Procs))
	for i := range kf.Procs {
		procs[i] = kf.Procs[i]
		procs[i].H, procs[i].LastSeen = nil, 0
	}
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
		if pd.I < 0 || pd.I >= len(kf.Procs) || gone[pd.I] {
			return DevRec{}, errorf("process index %d is not one of the keyframe's %d", pd.I, len(kf.Procs))
		}
		if err := pd.apply(&procs[pd.I]); err != nil {
			return DevRec{}, err
		}
	}
	list := make([]ProcRec, 0, len(procs)+len(added))
	for i, p := range procs {
		if !gone[i] {
			list = append(list, p)
		}
	}
	list = append(list, added...)
	if dd.Sorted {
		slices.SortStableFunc(list, byMemory)
	}
	if len(dd.Order) > 0 {
		order, err := unrun(dd.Order, len(list))
		if err != nil {
			return DevRec{}, err
		}
		if len(order) != len(list) {
			return DevRec{}, errorf("process order lists %d of %d processes", len(order), len(list))
		}
		ordered := make([]ProcRec, len(list))
		used := make([]bool, len(list))
		for k, j := range order {
			if j < 0 || j >= len(list) || used[j] {
				return DevRec{}, errorf("process order is not a permutation")
			}
			used[j] = true
			ordered[k] = list[j]
		}
		list = ordered
	}
	if len(list) == 0 {
		list = nil
	}
	dev.Procs = list
	return dev, nil
}

// fieldSet lists the fields of a struct that a delta compares, by their
// JSON names.
type fieldSet struct {
	idx   []int
	tags  []string
	byTag map[string]int
}

func fieldsOf(t reflect.Type, skip ...string) fieldSet {
	fs := fieldSet{byTag: map[string]int{}}
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == "" || tag == "-" || contains(skip, tag) {
			continue
		}
		fs.idx = append(fs.idx, i)
		fs.tags = append(fs.tags, tag)
		fs.byTag[tag] = i
	}
	return fs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var (
	// The identity fields (id, pid, st) and the lists are not compared.
	devFields  = fieldsOf(reflect.TypeFor[DevRec](), "id", "h", "p")
	procFields = fieldsOf(reflect.TypeFor[ProcRec](), "pid", "st", "h", "ls")
)

// appendDiff appends `,"tag":value` for each field of cur that differs from
// kf, and returns the names of those now absent (omitted as empty).
func appendDiff(b []byte, kf, cur reflect.Value, fs fieldSet, clr []string) ([]byte, []string, error) {
	for k, i := range fs.idx {
		a, c := kf.Field(i), cur.Field(i)
		if equalValue(a, c) {
			continue
		}
		if c.IsZero() {
			clr = append(clr, fs.tags[k])
			continue
		}
		b = append(b, ',', '"')
		b = append(b, fs.tags[k]...)
		b = append(b, '"', ':')
		var err error
		if b, err = appendValue(b, c); err != nil {
			return nil, nil, err
		}
	}
	return b, clr, nil
}

func equalValue(a, b reflect.Value) bool {
	if a.Kind() == reflect.Pointer {
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		a, b = a.Elem(), b.Elem()
	}
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return a.Int() == b.Int()
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		return a.Uint() == b.Uint()
	case reflect.Float64:
		return a.Float() == b.Float()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func appendValue(b []byte, v reflect.Value) ([]byte, error) {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	}
	j, err := json.Marshal(v.Interface())
	return append(b, j...), err
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
		if b, clr, err = appendDiff(b, reflect.ValueOf(key).Elem(), reflect.ValueOf(cur).Elem(), devFields, clr); err != nil {
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
		if p.LastSeen == 0 {
			return tn
		}
		return p.LastSeen
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
		j, ok := index[procID{p.PID, p.Start}]
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
		if b, clr, err = appendDiff(b, reflect.ValueOf(&key.Procs[j]).Elem(), reflect.ValueOf(p).Elem(), procFields, clr); err != nil {
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
		if p.LastSeen = lastSeen(&p); p.LastSeen == poll {
			p.LastSeen = 0
		}
		pb, err := json.Marshal(&p)
		if err != nil {
			return nil, err
		}
		b = append(b, `{"n":true,`...)
		b = append(b, pb[1:]...)
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
func byMemory(a, b ProcRec) int {
	if a.Exited != b.Exited {
		if a.Exited {
			return 1
		}
		return -1
	}
	va, vb := a.Peak, b.Peak
	if !a.Exited {
		va, vb = deref(a.Used), deref(b.Used)
	}
	if c := cmp.Compare(vb, va); c != 0 {
		return c
	}
	return cmp.Compare(a.PID, b.PID)
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// sortedByMemory reports whether procs are in byMemory order with no two
// alike, so that sorting any arrangement of them gives this one.
func sortedByMemory(procs []ProcRec) bool {
	for i := 1; i < len(procs); i++ {
		if byMemory(procs[i-1], procs[i]) >= 0 {
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
	for _, d := range r.Devices {
		for _, p := range d.Procs {
			ls := p.LastSeen
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
	for i, d := range kf.Devices {
		m := make(map[procID]int, len(d.Procs))
		for j, p := range d.Procs {
			if _, dup := m[procID{p.PID, p.Start}]; !dup {
				m[procID{p.PID, p.Start}] = j
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
