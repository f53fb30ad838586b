//go:build cgo && linux

package nvmlsource

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} vtProcessInfo;

typedef int (*vtListFn)(void *, unsigned int *, vtProcessInfo *);

// The list functions of the NVML library that go-nvml loaded (RTLD_GLOBAL).
static void *vtComputeList(void) { return dlsym(RTLD_DEFAULT, "nvmlDeviceGetComputeRunningProcesses_v3"); }
static void *vtGraphicsList(void) { return dlsym(RTLD_DEFAULT, "nvmlDeviceGetGraphicsRunningProcesses_v3"); }

static int vtList(void *fn, uintptr_t dev, unsigned int *count, vtProcessInfo *infos) {
	return ((vtListFn)fn)((void *)dev, count, infos);
}
*/
import "C"

import (
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// One vtProcessInfo is one nvml.ProcessInfo (nvmlProcessInfo_t, v3): the
// buffer is handed to the driver as it is.
const _ = -uint(unsafe.Sizeof(C.vtProcessInfo{}) ^ unsafe.Sizeof(nvml.ProcessInfo{}))

// driverLists, once NVML is initialized, calls NVML's list functions directly: go-nvml's wrappers
// start with a one-entry buffer, so with more than one process each list
// costs the driver two walks of every process (the first only to say how
// many there are). Here each list is one call into a buffer kept from the
// last list, grown when a list outgrows it.
func driverLists() listCall {
	compute, graphics := C.vtComputeList(), C.vtGraphicsList()
	if compute == nil || graphics == nil {
		return nil
	}
	return func(h uintptr, graphicsList bool, count *uint32, buf *nvml.ProcessInfo) nvml.Return {
		fn := compute
		if graphicsList {
			fn = graphics
		}
		return nvml.Return(C.vtList(fn, C.uintptr_t(h), (*C.uint)(unsafe.Pointer(count)), (*C.vtProcessInfo)(unsafe.Pointer(buf))))
	}
}
