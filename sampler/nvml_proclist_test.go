package sampler

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// The C struct behind the one-call process lists matches go-nvml's
// ProcessInfo; otherwise the lists would be read at the wrong offsets.
func TestProcessInfoLayout(t *testing.T) {
	if !procInfoLayoutOK {
		t.Fatal("vt_procinfo and nvml.ProcessInfo differ in size or offsets")
	}
}

// A device that is not go-nvml's own (a mock) has no C handle: the lister
// then asks the device itself.
func TestProcListerFallsBackForOtherDevices(t *testing.T) {
	want := []nvml.ProcessInfo{{Pid: 7, UsedGpuMemory: 1 << 30}}
	dev := &mock.Device{
		GetComputeRunningProcessesFunc:  func() ([]nvml.ProcessInfo, nvml.Return) { return want, nvml.SUCCESS },
		GetGraphicsRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
	}
	if rawHandle(dev) != nil {
		t.Fatal("a mock device yielded a C handle")
	}
	var l procLister
	var buf []nvml.ProcessInfo
	got, ret := l.list(dev, false, &buf)
	if ret != nvml.SUCCESS || len(got) != 1 || got[0] != want[0] {
		t.Fatalf("compute list %v %v, want %v", got, ret, want)
	}
	if _, ret := l.list(dev, true, &buf); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Fatalf("graphics list returned %v, want the device's NOT_SUPPORTED", ret)
	}
}
