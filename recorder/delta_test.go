package recorder

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vramtop/vramtop/sampler"
)

func full() Record {
	u, f, i, s := uint64(7), 2.5, 3, uint32(1001)
	samples := Samples{{T: 1773453600000000000, V: 5}}
	return Record{T: time.Unix(1773453600, 0), Seq: 3, Devices: []DevRec{{
		Device: sampler.Device{ID: "0", MemoryTotal: 9, MemoryUsed: 8, MemoryFree: 1, MemoryReserved: &u, Unattributed: &u, UtilizationPercent: &f,
			TemperatureC: &i, PowerWatts: &f, SMClockMHz: &i, MemoryClockMHz: &i, Err: "lost"},
		RecentPeak: &u, ListAge: 5, H: &samples,
		Procs: []ProcRec{
			{Process: sampler.Process{PID: 1, User: "a", UID: &s, Command: "x", UsedBytes: &u, Type: "compute", Container: "c", Visible: true,
				Job: &sampler.Job{SlurmJobID: "42"}, CPUPercent: &f, HostMemoryBytes: &u, StartTime: time.Unix(0, 11), UtilizationPercent: &f,
				FirstSeen: time.Unix(0, 12), LastSeen: time.Unix(0, 13), PeakBytes: 14, Exited: true}, H: &samples},
			{Process: sampler.Process{PID: 2, User: "b", StartTime: time.Unix(0, 21)}},
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
		set  *table
		name string
		v    func(r *Record) unsafe.Pointer
	}{
		{devFields, "device", func(r *Record) unsafe.Pointer { return unsafe.Pointer(&r.Devices[0]) }},
		{procFields, "process", func(r *Record) unsafe.Pointer { return unsafe.Pointer(&r.Devices[0].Procs[0]) }},
	} {
		for k := range fs.set.fields {
			f := &fs.set.fields[k]
			for _, clear := range []bool{false, true} {
				kf, cur := full(), full()
				cur.T = kf.T.Add(time.Second)
				cur.Devices[0].H, cur.Devices[0].Procs[0].H = nil, nil
				if clear {
					f.c.zero(at(fs.v(&cur), f))
				} else {
					f.c.zero(at(fs.v(&kf), f))
				}
				line, g, w := viaDelta(t, &kf, &cur)
				if g != w {
					t.Errorf("%s field %s (cleared %v): delta %s\n got %s\nwant %s", fs.name, f.tag, clear, line, g, w)
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
	cur.Devices[0].Procs = []ProcRec{{Process: sampler.Process{PID: 3, StartTime: time.Unix(0, 31), User: "new"}}, p0}
	line, g, w := viaDelta(t, &kf, &cur)
	if g != w {
		t.Errorf("delta %s\n got %s\nwant %s", line, g, w)
	}
}

// TestDeltaOrderByMemory: processes in the sampler's order (by memory) are
// said so in one word, and come back in that order.
func TestDeltaOrderByMemory(t *testing.T) {
	u := func(n uint64) *uint64 { return &n }
	proc := func(pid uint32, used uint64) ProcRec {
		return ProcRec{Process: sampler.Process{PID: pid, UsedBytes: u(used)}}
	}
	kf := Record{T: time.Unix(1773453600, 0), Devices: []DevRec{{Device: sampler.Device{ID: "0"}, Procs: []ProcRec{
		proc(1, 9), proc(2, 5), proc(3, 1),
	}}}}
	cur := kf
	cur.T = kf.T.Add(time.Second)
	cur.Devices = []DevRec{{Device: sampler.Device{ID: "0"}, Procs: []ProcRec{proc(3, 20), proc(1, 9), proc(4, 7), proc(2, 5)}}}
	line, g, w := viaDelta(t, &kf, &cur)
	if !strings.Contains(string(line), `"srt":true`) || strings.Contains(string(line), `"ord"`) {
		t.Errorf("delta %s: want the order said as srt", line)
	}
	if g != w {
		t.Errorf("delta %s\n got %s\nwant %s", line, g, w)
	}
}
