package recorder

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// The names a line gives the fields of a device and of a process are the
// format: recordings written before read back by them, so each name of
// format 2 is still there, in its order (a new field adds a name, never
// takes one).
func TestRecordedFieldNames(t *testing.T) {
	for _, c := range []struct {
		what string
		tb   *table
		v2   string
	}{
		{"device", devTable, "id tot used free res una util temp pw en ene smc mc err rp la"},
		{"process", procTable, "pid user uid cmd used type ct job cpu hm vis st util fs ls pk x"},
	} {
		var names []string
		for _, f := range c.tb.fields {
			names = append(names, f.tag)
		}
		i := 0
		for _, want := range strings.Fields(c.v2) {
			for i < len(names) && names[i] != want {
				i++
			}
			if i == len(names) {
				t.Errorf("%s fields %q: %q of format 2 missing or out of its order", c.what, names, want)
				break
			}
		}
	}
}

// A field of a type the recorder cannot write stops it at start-up, with
// the field named.
func TestFieldWithoutCodec(t *testing.T) {
	type rec struct {
		OK  uint64        `rec:"ok"`
		Bad time.Duration `rec:"bad"`
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "rec.Bad") {
			t.Errorf("panic %v, want one naming rec.Bad", r)
		}
	}()
	tableOf(reflect.TypeFor[rec]())
}

// A keyframe is written as encoding/json would write the record, reads
// back as it was written, and a value JSON cannot carry (NaN) is left
// out, not an error.
func TestKeyframeRoundTrip(t *testing.T) {
	r := full()
	nan := math.NaN()
	r.Devices[0].PowerWatts = &nan
	r.Devices[0].Procs[1].Command = `say "<hi>" & \ é ` + "\x01\u2028"
	r.Warnings, r.Err, r.Stale, r.StaleSince, r.Key = []string{"w<1>"}, "e&", true, 42, true
	b, err := appendRecord(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"pw"`) {
		t.Errorf("NaN written: %s", b)
	}
	r.Devices[0].PowerWatts = nil
	want, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(want) {
		t.Errorf("keyframe\n%s\nwant (encoding/json)\n%s", b, want)
	}
	var back Record
	if err := DecodeRecord(b, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(b) {
		t.Errorf("read back as\n%s\nwritten\n%s", again, b)
	}
	if p := back.Devices[0].Procs[0]; p.Job == nil || p.Job.SlurmJobID != "42" || *p.UID != 1001 || p.StartTime.UnixNano() != 11 {
		t.Errorf("process read back as %+v", p.Process)
	}
}

// Lines are read as encoding/json read them: names regardless of case or
// escaped, null as absent, names unknown passed over; a value of the
// wrong kind makes the line damaged.
func TestDecodeLikeEncodingJSON(t *testing.T) {
	line := `{"t":"2026-03-14T02:00:00Z","d":[{"ID":"0","tot":9,"us\u0065d":8,"res":null,"new":{"a":[1,2]},` +
		`"p":[{"PID":7,"cmd":"a\"b","cpu":1.5e2,"future":"x"}]}]}`
	var r Record
	if err := DecodeRecord([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	d := r.Devices[0]
	if d.ID != "0" || d.MemoryTotal != 9 || d.MemoryUsed != 8 || d.MemoryReserved != nil || len(d.Procs) != 1 {
		t.Fatalf("device %+v", d.Device)
	}
	if p := d.Procs[0]; p.PID != 7 || p.Command != `a"b` || p.CPUPercent == nil || *p.CPUPercent != 150 {
		t.Fatalf("process %+v", p.Process)
	}
	for _, bad := range []string{`"tot":"9"`, `"tot":-1`, `"tot":1.5`, `"tot":true`, `"tot":99999999999999999999999`} {
		l := strings.Replace(line, `"tot":9`, bad, 1)
		if err := DecodeRecord([]byte(l), &r); err == nil {
			t.Errorf("%s: read without an error", bad)
		}
	}
	if err := DecodeRecord([]byte(strings.Replace(line, `"cpu":1.5e2`, `"cpu":"x"`, 1)), &r); err == nil {
		t.Error(`"cpu":"x" read without an error`)
	}
}

// Every field of a sampler.Process or sampler.Device with a rec tag is
// recorded: it is in its table.
func TestEveryTaggedFieldRecorded(t *testing.T) {
	for _, c := range []struct {
		t  reflect.Type
		tb *table
	}{{reflect.TypeFor[sampler.Process](), procTable}, {reflect.TypeFor[sampler.Device](), devTable}} {
		for i := range c.t.NumField() {
			sf := c.t.Field(i)
			tag, ok := sf.Tag.Lookup("rec")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if j, ok := c.tb.byTag[name]; !ok || c.tb.fields[j].name != sf.Name {
				t.Errorf("%s.%s (rec %q) not in its table", c.t.Name(), sf.Name, name)
			}
		}
	}
}
