package sampler

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestJobName(t *testing.T) {
	tests := []struct {
		job  *Job
		want string
	}{
		{nil, ""},
		{&Job{}, ""},
		{&Job{SlurmJobID: "4242", SlurmStep: "0"}, "slurm 4242.0"},
		{&Job{SlurmJobID: "4242", ContainerID: "ab"}, "slurm 4242"},
		{&Job{K8sPodUID: "1a2b3c4d-5e6f", K8sQOS: "burstable"}, "pod 1a2b3c4d"},
		{&Job{ContainerID: strings.Repeat("9b1e4a7c", 8), Runtime: "docker"}, "docker 9b1e4a7c9b1e"},
		{&Job{ContainerID: "abc"}, "container abc"},
	}
	for _, tt := range tests {
		if got := tt.job.Name(); got != tt.want {
			t.Errorf("%+v: Name() = %q, want %q", tt.job, got, tt.want)
		}
	}
}

// nonZero sets every field of the struct at v to a value other than its
// zero (true, 1, "x", a pointer to one).
func nonZero(v reflect.Value) {
	for i := range v.NumField() {
		setNonZero(v.Field(i))
	}
}

func setNonZero(f reflect.Value) {
	switch f.Kind() {
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		f.SetInt(1)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		f.SetUint(1)
	case reflect.Float64:
		f.SetFloat(1)
	case reflect.String:
		f.SetString("x")
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
		if e := f.Elem(); e.Kind() == reflect.Struct {
			nonZero(e)
		} else {
			setNonZero(e)
		}
	case reflect.Interface:
		f.Set(reflect.ValueOf(errors.New("x")))
	}
}

// A device's static description reaches its Device whole, and back:
// every field of DeviceInfo is copied by SetInfo and Info.
func TestDeviceInfoCopiedWhole(t *testing.T) {
	var di DeviceInfo
	nonZero(reflect.ValueOf(&di).Elem())
	var d Device
	d.SetInfo(di)
	if got := d.Info(); !reflect.DeepEqual(got, di) {
		t.Errorf("DeviceInfo %+v came back as %+v", di, got)
	}
}

// Every value of a reading reaches the Device: for each field of
// MemSample (but Err, which the sampler words itself), a reading with
// that one set makes a different Device than one without.
func TestMemSampleFillsDevice(t *testing.T) {
	typ := reflect.TypeFor[MemSample]()
	var none Device
	(&MemSample{}).fill(&none)
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if name == "Err" || strings.HasPrefix(name, "Has") {
			continue
		}
		var m MemSample
		setNonZero(reflect.ValueOf(&m).Elem().Field(i))
		// Its Has flag, where it has one, says it is known.
		for j := range typ.NumField() {
			if h := typ.Field(j).Name; strings.HasPrefix(h, "Has") && strings.Contains(name, strings.TrimPrefix(h, "Has")) {
				reflect.ValueOf(&m).Elem().Field(j).SetBool(true)
			}
		}
		var d Device
		m.fill(&d)
		if reflect.DeepEqual(d, none) {
			t.Errorf("MemSample.%s does not reach the Device", name)
		}
	}
}
