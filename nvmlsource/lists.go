//go:build cgo

package nvmlsource

import (
	"reflect"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// listCall lists a device's compute (or graphics) processes into buf of
// *count entries, as NVML's nvmlDeviceGet*RunningProcesses_v3 do: on
// ERROR_INSUFFICIENT_SIZE *count is the number needed.
type listCall func(h uintptr, graphics bool, count *uint32, buf *nvml.ProcessInfo) nvml.Return

// lister reads process lists in one driver call each where it can (call,
// on a device of the real library), through go-nvml's wrappers otherwise
// (no such symbol, a mock device in tests).
type lister struct {
	call listCall
	buf  []nvml.ProcessInfo
}

// listSlack is how many entries past the last list's the buffer has room
// for, so that a few new processes need no second call.
const listSlack = 32

// maxListTries bounds the calls of one list whose processes keep outgrowing
// the buffer between calls.
const maxListTries = 4

// list returns d's compute or graphics processes; the slice is valid until
// the next call.
func (l *lister) list(d nvml.Device, graphics bool) ([]nvml.ProcessInfo, nvml.Return) {
	h, ok := deviceHandle(d)
	if l.call == nil || !ok {
		if graphics {
			return d.GetGraphicsRunningProcesses()
		}
		return d.GetComputeRunningProcesses()
	}
	return l.listHandle(h, graphics)
}

// listHandle lists the processes of the device of handle h through call.
func (l *lister) listHandle(h uintptr, graphics bool) ([]nvml.ProcessInfo, nvml.Return) {
	if len(l.buf) == 0 {
		l.buf = make([]nvml.ProcessInfo, 2*listSlack)
	}
	for range maxListTries {
		n := uint32(len(l.buf))
		ret := l.call(h, graphics, &n, &l.buf[0])
		switch {
		case ret == nvml.SUCCESS:
			return l.buf[:min(int(n), len(l.buf))], ret
		case ret != nvml.ERROR_INSUFFICIENT_SIZE:
			return nil, ret
		}
		l.buf = make([]nvml.ProcessInfo, max(int(n), len(l.buf))+listSlack)
	}
	return nil, nvml.ERROR_INSUFFICIENT_SIZE
}

// deviceHandle is the driver's handle of d where d is a device of go-nvml's
// library (not a mock).
func deviceHandle(d nvml.Device) (uintptr, bool) {
	v := reflect.ValueOf(d)
	if !v.IsValid() || v.Kind() != reflect.Struct || v.Type().PkgPath() != "github.com/NVIDIA/go-nvml/pkg/nvml" ||
		v.Type().Name() != "nvmlDevice" || v.NumField() != 1 || v.Field(0).Kind() != reflect.Pointer {
		return 0, false
	}
	return v.Field(0).Pointer(), true
}
