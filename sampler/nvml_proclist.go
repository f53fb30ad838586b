package sampler

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

// nvmlProcessInfo_t (v2 layout), as nvml.ProcessInfo lays it out in Go.
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} vt_procinfo;

typedef int (*vt_list_fn)(void *device, unsigned int *count, vt_procinfo *infos);

static vt_list_fn vt_compute, vt_graphics;

// go-nvml opens libnvidia-ml.so.1 with RTLD_GLOBAL, so its symbols resolve
// from the default scope once nvml.Init has run.
static int vt_resolve(void) {
	vt_compute = (vt_list_fn)dlsym(RTLD_DEFAULT, "nvmlDeviceGetComputeRunningProcesses_v3");
	vt_graphics = (vt_list_fn)dlsym(RTLD_DEFAULT, "nvmlDeviceGetGraphicsRunningProcesses_v3");
	return vt_compute != 0 && vt_graphics != 0;
}

static size_t vt_used_offset(void) { return offsetof(vt_procinfo, usedGpuMemory); }

static int vt_list(int graphics, void *device, unsigned int *count, vt_procinfo *infos) {
	return (graphics ? vt_graphics : vt_compute)(device, count, infos);
}
*/
import "C"

import (
	"reflect"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// go-nvml's GetComputeRunningProcesses and GetGraphicsRunningProcesses start
// with room for one process and double it after each ERROR_INSUFFICIENT_SIZE:
// listing 100 processes takes 8 driver calls, each one building the whole
// list under the driver's lock (measured on an H200 with 100 processes: the
// compute list alone was a third of vramtop's CPU). procLister makes the same
// NVML calls through the library go-nvml loaded, into a buffer kept per
// device and sized from the last count, so a list is one call.
type procLister struct {
	resolved, ok bool
}

// The C struct and nvml.ProcessInfo must agree, or the fast path is off.
var procInfoLayoutOK = unsafe.Sizeof(nvml.ProcessInfo{}) == uintptr(C.sizeof_vt_procinfo) &&
	unsafe.Offsetof(nvml.ProcessInfo{}.UsedGpuMemory) == uintptr(C.vt_used_offset())

// rawHandle returns the C handle inside a real go-nvml device; nil for any
// other implementation of nvml.Device (the mocks).
func rawHandle(d nvml.Device) unsafe.Pointer {
	v := reflect.ValueOf(d)
	t := v.Type()
	if t.Kind() != reflect.Struct || t.Name() != "nvmlDevice" || t.PkgPath() != "github.com/NVIDIA/go-nvml/pkg/nvml" ||
		t.NumField() != 1 || t.Field(0).Type.Kind() != reflect.Pointer {
		return nil
	}
	return v.Field(0).UnsafePointer()
}

// list returns the compute (or graphics) processes of d, reusing *buf.
func (l *procLister) list(d nvml.Device, graphics bool, buf *[]nvml.ProcessInfo) ([]nvml.ProcessInfo, nvml.Return) {
	if !l.resolved {
		l.resolved = true
		l.ok = procInfoLayoutOK && C.vt_resolve() != 0
	}
	h := rawHandle(d)
	if !l.ok || h == nil {
		if graphics {
			return d.GetGraphicsRunningProcesses()
		}
		return d.GetComputeRunningProcesses()
	}
	g := C.int(0)
	if graphics {
		g = 1
	}
	if cap(*buf) < 16 {
		*buf = make([]nvml.ProcessInfo, 16)
	}
	for range 4 {
		b := (*buf)[:cap(*buf)]
		count := C.uint(len(b))
		ret := nvml.Return(C.vt_list(g, h, &count, (*C.vt_procinfo)(unsafe.Pointer(&b[0]))))
		switch ret {
		case nvml.SUCCESS:
			return b[:count], ret
		case nvml.ERROR_INSUFFICIENT_SIZE:
			// count now holds what the driver needs; leave room to grow.
			*buf = make([]nvml.ProcessInfo, int(count)+int(count)/4+8)
		default:
			return nil, ret
		}
	}
	return nil, nvml.ERROR_INSUFFICIENT_SIZE
}
