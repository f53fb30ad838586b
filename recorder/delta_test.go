package recorder

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

func full() Record {
	u, f, i, s := uint64(7), 2.5, 3, uint32(1001)
	samples := Samples{{T: 1773453600000000000, V: 5}}
	return Record{T: time.Unix(1773453600, 0), Seq: 3, Devices: []DevRec{{
		ID: "0", Total: 9, Used: 8, Free: 1, Res: &u, Unatt: &u, Util: &f, Temp: &i, Power: &f, SMClock: &i, MemClock: &i, Err: "lost", RecentPeak: &u, ListAge: 5, H: &samples,
		Procs: []ProcRec{
			{PID: 1, User: "a", UID: &s, Command: "x", Used: &u, Type: "compute", Container: "c", Visible: true,
				Job: &sampler.Job{SlurmJobID: "42"}, CPU: &f, HostMem: &u, Start: 11, Util: &f, FirstSeen: 12, LastSeen: 13, Peak: 14, Exited: true, H: &samples},
			{PID: 2, User: "b", Start: 21},
		},
	}}}
}

// viaDelta writes cur as a delta line against the keyframe kf, reads it
// back and expands it: the line, and cur as a reader sees it, as JSON next
// to cur's own.
func viaDelta(t *testing.T, kf, cur *Record) (line []byte, got, want string) {
	t.Helper()
	line, err := appendDelta(nil, kf, cur, keyIndex(kf))
	if err != nil {
		t.Fatal(err)
	}
	var d Delta
	if err := DecodeDelta(line, &d); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	r, err := Expand(kf, &d)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	g, _ := json.Marshal(r)
	w, _ := json.Marshal(cur)
	return line, string(g), string(w)
}

// TestDeltaCarriesEveryField: a field of a device or a process that
// differs from the keyframe (set, changed or cleared) comes back from the
// delta line exactly, each field on its own.
func TestDeltaCarriesEveryField(t *testing.T) {
	for _, fs := range []struct {
		set  fieldSet
		name string
		v    func(r *Record) reflect.Value
	}{
		{devFields, "device", func(r *Record) reflect.Value { return reflect.ValueOf(&r.Devices[0]).Elem() }},
		{procFields, "process", func(r *Record) reflect.Value { return reflect.ValueOf(&r.Devices[0].Procs[0]).Elem() }},
	} {
		for k, idx := range fs.set.idx {
			for _, clear := range []bool{false, true} {
				kf, cur := full(), full()
				cur.T = kf.T.Add(time.Second)
				cur.Devices[0].H, cur.Devices[0].Procs[0].H = nil, nil
				a, b := fs.v(&kf).Field(idx), fs.v(&cur).Field(idx)
				if clear {
					b.Set(reflect.Zero(b.Type()))
				} else {
					a.Set(reflect.Zero(a.Type()))
				}
				line, g, w := viaDelta(t, &kf, &cur)
				if g != w {
					t.Errorf("%s field %s (cleared %v): delta %s\n got %s\nwant %s", fs.name, fs.set.tags[k], clear, line, g, w)
				}
			}
		}
	}
}

// TestDeltaProcessesComeAndGo: processes gone, new and reordered come back
// in the written order.
func TestDeltaProcessesComeAndGo(t *testing.T) {
	kf, cur := full(), full()
	cur.T = kf.T.Add(time.Second)
	p0 := cur.Devices[0].Procs[0]
	p0.H = nil
	cur.Devices[0].Procs = []ProcRec{{PID: 3, Start: 31, User: "new"}, p0}
	line, g, w := viaDelta(t, &kf, &cur)
	if g != w {
		t.Errorf("delta %s\n got %s\nwant %s", line, g, w)
	}
}

// TestDeltaOrderByMemory: processes in the sampler's order (by memory) are
// said so in one word, and come back in that order.
func TestDeltaOrderByMemory(t *testing.T) {
	u := func(n uint64) *uint64 { return &n }
	kf := Record{T: time.Unix(1773453600, 0), Devices: []DevRec{{ID: "0", Procs: []ProcRec{
		{PID: 1, Used: u(9)}, {PID: 2, Used: u(5)}, {PID: 3, Used: u(1)},
	}}}}
	cur := kf
	cur.T = kf.T.Add(time.Second)
	cur.Devices = []DevRec{{ID: "0", Procs: []ProcRec{{PID: 3, Used: u(20)}, {PID: 1, Used: u(9)}, {PID: 4, Used: u(7)}, {PID: 2, Used: u(5)}}}}
	line, g, w := viaDelta(t, &kf, &cur)
	if !strings.Contains(string(line), `"srt":true`) || strings.Contains(string(line), `"ord"`) {
		t.Errorf("delta %s: want the order said as srt", line)
	}
	if g != w {
		t.Errorf("delta %s\n got %s\nwant %s", line, g, w)
	}
}
