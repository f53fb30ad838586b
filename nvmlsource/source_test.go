//go:build cgo

package nvmlsource

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/vramtop/vramtop/hostproc"
	"github.com/vramtop/vramtop/sampler"
)

var nvmlT0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func nvmlReadMem(t *testing.T, s sampler.Source) []sampler.MemSample {
	t.Helper()
	out := make([]sampler.MemSample, len(s.Info().Devices))
	if err := s.ReadMemory(nvmlT0, out); err != nil {
		t.Fatalf("ReadMemory: %v", err)
	}
	return out
}

func nvmlReadProcs(t *testing.T, s sampler.Source) ([]sampler.ProcSample, []error) {
	t.Helper()
	errs := make([]error, len(s.Info().Devices))
	ps, err := s.ReadProcesses(nvmlT0, nil, errs)
	if err != nil {
		t.Fatalf("ReadProcesses: %v", err)
	}
	return ps, errs
}

func TestNVMLInfo(t *testing.T) {
	h := newMockHost(nil)
	info := h.open(t).Info()
	if info.Kind != "nvml" || info.Demo {
		t.Errorf("kind %q demo %v, want nvml, not demo", info.Kind, info.Demo)
	}
	if info.DriverVersion != "550.54.15" || info.NVMLVersion != "12.550.54.15" || info.CUDAVersion != "12.4" {
		t.Errorf("versions: driver %q NVML %q CUDA %q, want 550.54.15, 12.550.54.15, 12.4",
			info.DriverVersion, info.NVMLVersion, info.CUDAVersion)
	}
	if info.Hostname == "" {
		t.Error("no hostname")
	}
	if len(info.Warnings) != 0 {
		t.Errorf("warnings %q on a sound driver", info.Warnings)
	}
	if len(info.Devices) != 8 {
		t.Fatalf("%d devices, want the DGX H100's 8", len(info.Devices))
	}
	for i, d := range info.Devices {
		want := h.devs[i]
		if d.ID != strconv.Itoa(i) {
			t.Errorf("device %d: id %q", i, d.ID)
		}
		if d.Index != i || d.Name != "NVIDIA H100 80GB HBM3" || d.UUID != want.UUID || d.PCIBusID != want.PciBusID {
			t.Errorf("device %d: %+v, want index %d, H100 name, uuid %s, bus %s", i, d, i, want.UUID, want.PciBusID)
		}
		if d.MIGEnabled || d.MIG != nil {
			t.Errorf("device %d: MIG set on a GPU not in MIG mode", i)
		}
	}
}

func TestNVMLMemoryV2Exact(t *testing.T) {
	h := newMockHost(nil)
	out := nvmlReadMem(t, h.open(t))
	for i, m := range out {
		g := h.gpus[i].mem
		if m.Err != nil {
			t.Fatalf("device %d: %v", i, m.Err)
		}
		if m.Total != g.Total || m.Used != g.Used || m.Free != g.Free || !m.HasReserved || m.Reserved != g.Reserved {
			t.Errorf("device %d: total %d used %d free %d reserved %d (%v); want %d %d %d %d",
				i, m.Total, m.Used, m.Free, m.Reserved, m.HasReserved, g.Total, g.Used, g.Free, g.Reserved)
		}
		if !m.HasUtil || m.Util != float64(10*i) || !m.HasTemp || m.TempC != 30+i || !m.HasPower || m.PowerW != 100+float64(i) {
			t.Errorf("device %d: util %v (%v) temp %d (%v) power %v (%v)", i, m.Util, m.HasUtil, m.TempC, m.HasTemp, m.PowerW, m.HasPower)
		}
	}
}

func TestNVMLMemoryV1Fallback(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND} {
		h := newMockHost(nil)
		h.gpus[3].memRet = ret
		s := h.open(t)
		for range 3 {
			out := nvmlReadMem(t, s)
			m, g := out[3], h.gpus[3].mem
			if m.Err != nil || m.HasReserved || m.Total != g.Total || m.Used != g.Used+g.Reserved || m.Free != g.Free {
				t.Fatalf("v2 %v: device 3 %+v, want the v1 numbers (used %d) with reserved unknown", ret, m, g.Used+g.Reserved)
			}
			if !out[2].HasReserved {
				t.Fatalf("v2 %v on device 3 only: device 2 lost its reserved figure", ret)
			}
		}
		if n := len(h.devs[3].GetMemoryInfo_v2Calls()); n != 1 {
			t.Errorf("v2 %v: GetMemoryInfo_v2 called %d times on device 3 over 3 polls, want 1 (the fallback is remembered)", ret, n)
		}
		if n := len(h.devs[2].GetMemoryInfo_v2Calls()); n != 3 {
			t.Errorf("v2 %v: GetMemoryInfo_v2 called %d times on device 2, want 3", ret, n)
		}
	}
}

func TestNVMLMemoryV2SymbolMissing(t *testing.T) {
	h := newMockHost(nil)
	h.srv.LookupSymbolFunc = func(name string) error {
		if name == "nvmlDeviceGetMemoryInfo_v2" {
			return errors.New("undefined symbol")
		}
		return nil
	}
	out := nvmlReadMem(t, h.open(t))
	for i, m := range out {
		if m.Err != nil || m.HasReserved || m.Used != h.gpus[i].mem.Used+reservedH100 {
			t.Errorf("device %d: %+v, want v1 numbers without reserved", i, m)
		}
		if n := len(h.devs[i].GetMemoryInfo_v2Calls()); n != 0 {
			t.Errorf("device %d: the missing v2 function was called %d times", i, n)
		}
	}
}

func TestNVMLOptionalFields(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[1].utilRet = nvml.ERROR_NOT_SUPPORTED
	h.gpus[2].tempRet = nvml.ERROR_NOT_SUPPORTED
	h.gpus[3].powerRet = nvml.ERROR_NO_PERMISSION
	out := nvmlReadMem(t, h.open(t))
	if out[1].HasUtil || !out[1].HasTemp || !out[1].HasPower {
		t.Errorf("utilization unsupported: %+v", out[1])
	}
	if out[2].HasTemp || !out[2].HasUtil {
		t.Errorf("temperature unsupported: %+v", out[2])
	}
	if out[3].HasPower || out[3].Err != nil || !out[3].HasTemp {
		t.Errorf("power not permitted: %+v, want power absent and the device fine", out[3])
	}
	for i, m := range out {
		if m.Err != nil || m.Used != h.gpus[i].mem.Used {
			t.Errorf("device %d: %+v", i, m)
		}
	}
}

func TestNVMLDeviceErrorsIsolated(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[5].memRet = nvml.ERROR_GPU_IS_LOST
	h.gpus[5].computeRet = nvml.ERROR_GPU_IS_LOST
	h.gpus[6].memRet = nvml.ERROR_NO_PERMISSION
	h.gpus[2].compute = nvmlProcs(1001, 5*nvmlGiB)
	h.gpus[5].compute = nvmlProcs(1002, nvmlGiB)
	s := h.open(t)
	out := nvmlReadMem(t, s)
	for i, m := range out {
		switch i {
		case 5:
			if !errors.Is(m.Err, nvml.ERROR_GPU_IS_LOST) || !strings.Contains(m.Err.Error(), "GPU is lost") {
				t.Errorf("lost GPU: err %v, want one saying the GPU is lost", m.Err)
			}
		case 6:
			if !errors.Is(m.Err, nvml.ERROR_NO_PERMISSION) || !strings.Contains(m.Err.Error(), "no permission") {
				t.Errorf("no permission: err %v", m.Err)
			}
		default:
			if m.Err != nil || m.Used != h.gpus[i].mem.Used {
				t.Errorf("device %d: %+v; one device failing must not disturb the others", i, m)
			}
		}
	}
	ps, errs := nvmlReadProcs(t, s)
	if !errors.Is(errs[5], nvml.ERROR_GPU_IS_LOST) {
		t.Errorf("process list of the lost GPU: err %v", errs[5])
	}
	if len(ps) != 1 || ps[0].Device != 2 || ps[0].PID != 1001 {
		t.Errorf("processes %+v, want pid 1001 on device 2 alone", ps)
	}
	for i, err := range errs {
		if i != 5 && err != nil {
			t.Errorf("device %d: process list error %v", i, err)
		}
	}
}

func TestNVMLDeviceHandleFails(t *testing.T) {
	h := newMockHost(nil)
	inner := h.srv.DeviceGetHandleByIndexFunc
	h.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 4 {
			return nil, nvml.ERROR_NO_PERMISSION
		}
		return inner(i)
	}
	s := h.open(t)
	if n := len(s.Info().Devices); n != 8 {
		t.Fatalf("%d devices, want 8 with the one that cannot be opened listed", n)
	}
	out := nvmlReadMem(t, s)
	if !errors.Is(out[4].Err, nvml.ERROR_NO_PERMISSION) {
		t.Errorf("device 4: err %v, want no permission", out[4].Err)
	}
	if out[3].Err != nil || out[5].Err != nil {
		t.Errorf("neighbours failed: %v, %v", out[3].Err, out[5].Err)
	}
	_, errs := nvmlReadProcs(t, s)
	if errs[4] == nil {
		t.Error("device 4's process list reported no error")
	}
}

func TestNVMLProcesses(t *testing.T) {
	h := newMockHost(nil)
	// Device 0: a compute process, one whose memory NVML does not know, and
	// one that is both a compute and a graphics client.
	h.gpus[0].compute = nvmlProcs(1001, 10850*nvmlMiB, 1002, nvmlNA, 1004, 3*nvmlGiB)
	h.gpus[0].graphics = nvmlProcs(1004, 3*nvmlGiB, 1003, 64*nvmlMiB)
	// Device 1: a PID this PID namespace does not show.
	h.gpus[1].compute = nvmlProcs(4242, 2*nvmlGiB)
	// Device 2: no graphics list on a compute-only card.
	h.gpus[2].compute = nvmlProcs(1005, nvmlGiB)
	h.gpus[2].grRet = nvml.ERROR_NOT_SUPPORTED
	// The same process on two devices is listed on each.
	h.gpus[3].compute = nvmlProcs(1001, 512*nvmlMiB)
	s := h.open(t)
	ps, errs := nvmlReadProcs(t, s)
	for i, err := range errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
	}
	type key struct {
		dev int
		pid uint32
	}
	got := map[key]sampler.ProcSample{}
	for _, p := range ps {
		k := key{p.Device, p.PID}
		if _, dup := got[k]; dup {
			t.Errorf("pid %d listed twice on device %d", p.PID, p.Device)
		}
		got[k] = p
	}
	if len(got) != 7 {
		t.Errorf("%d processes, want 7: %+v", len(got), ps)
	}
	check := func(dev int, pid uint32, typ string, used uint64, hasUsed bool) sampler.ProcSample {
		t.Helper()
		p, ok := got[key{dev, pid}]
		if !ok {
			t.Fatalf("pid %d on device %d missing", pid, dev)
		}
		if p.Type != typ || (p.UsedBytes != nil) != hasUsed || p.Used() != used {
			t.Errorf("pid %d on device %d: type %q used %d (known %v), want %q %d (%v)", pid, dev, p.Type, p.Used(), p.UsedBytes != nil, typ, used, hasUsed)
		}
		return p
	}
	p := check(0, 1001, "compute", 10850*nvmlMiB, true)
	if !p.Visible || p.User != "root" || p.UID == nil || *p.UID != 0 || p.Command != "python3 train.py --epochs 10" ||
		p.Container != "3f4e5d6c7b8a" || !p.StartTime.Equal(fixtureBoot.Add(5000*time.Second)) {
		t.Errorf("pid 1001 from /proc: %+v", p)
	}
	check(0, 1002, "compute", 0, false)
	check(0, 1004, "compute+graphics", 3*nvmlGiB, true)
	if p := check(0, 1003, "graphics", 64*nvmlMiB, true); p.User != "4000123" {
		t.Errorf("pid 1003: user %q, want the bare UID", p.User)
	}
	if p := check(1, 4242, "compute", 2*nvmlGiB, true); p.Visible || p.Command != "" || p.User != "" {
		t.Errorf("pid in another PID namespace: %+v, want invisible with nothing named", p)
	}
	check(2, 1005, "compute", nvmlGiB, true)
	check(3, 1001, "compute", 512*nvmlMiB, true)

	// The graphics list of device 2 is not asked for again.
	nvmlReadProcs(t, s)
	if n := len(h.devs[2].GetGraphicsRunningProcessesCalls()); n != 1 {
		t.Errorf("graphics list asked %d times of a device that does not support it, want 1", n)
	}
}

func TestNVMLMergeKeepsKnownMemory(t *testing.T) {
	h := newMockHost(nil)
	// The graphics list knows the memory the compute list does not.
	h.gpus[0].compute = nvmlProcs(1001, nvmlNA)
	h.gpus[0].graphics = nvmlProcs(1001, 300*nvmlMiB)
	ps, _ := nvmlReadProcs(t, h.open(t))
	if len(ps) != 1 || ps[0].Type != "compute+graphics" || ps[0].UsedBytes == nil || *ps[0].UsedBytes != 300*nvmlMiB {
		t.Fatalf("processes %+v, want pid 1001 compute+graphics with 300 MiB", ps)
	}
}

func TestNVMLProcessCacheFollowsListing(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[0].compute = nvmlProcs(1001, nvmlGiB, 1002, nvmlGiB)
	s := h.open(t)
	nvmlReadProcs(t, s)
	if n := s.proc.Len(); n != 2 {
		t.Fatalf("%d processes cached, want 2", n)
	}
	// The /proc cache is swept with the details, every hostStatsEvery.
	h.gpus[0].compute = nvmlProcs(1002, nvmlGiB)
	errs := make([]error, len(s.Info().Devices))
	if _, err := s.ReadProcesses(nvmlT0.Add(hostStatsEvery), nil, errs); err != nil {
		t.Fatal(err)
	}
	if n := s.proc.Len(); n != 1 {
		t.Fatalf("after pid 1001 left the list, %d processes cached, want 1", n)
	}
}

func TestNVMLMIG(t *testing.T) {
	h := newMockHost(nil)
	a := &migInstance{gi: 3, ci: 0, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid: "MIG-aaaa", gpu: &mockGPU{
		mem:     nvml.Memory_v2{Total: 40 * nvmlGiB, Reserved: 0, Used: 12 * nvmlGiB, Free: 28 * nvmlGiB},
		compute: nvmlProcs(1001, 10*nvmlGiB),
	}}
	b := &migInstance{gi: 5, ci: 0, name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", uuid: "MIG-bbbb", gpu: &mockGPU{
		mem:     nvml.Memory_v2{Total: 10 * nvmlGiB, Reserved: 0, Used: 3 * nvmlGiB, Free: 7 * nvmlGiB},
		compute: nvmlProcs(1005, 2*nvmlGiB),
	}}
	h.enableMIG(0, a, b)
	s := h.open(t)
	info := s.Info()
	if len(info.Devices) != 10 {
		t.Fatalf("%d devices, want 8 GPUs and 2 MIG instances", len(info.Devices))
	}
	ids := []string{}
	for _, d := range info.Devices {
		ids = append(ids, d.ID)
	}
	if got := strings.Join(ids, " "); got != "0 0/3 0/5 1 2 3 4 5 6 7" {
		t.Fatalf("device order %q, want each MIG instance after its GPU", got)
	}
	if !info.Devices[0].MIGEnabled {
		t.Error("GPU 0 not marked as in MIG mode")
	}
	mi := info.Devices[1]
	if mi.MIG == nil || *mi.MIG != (sampler.MIGInfo{ParentIndex: 0, GPUInstanceID: 3, ComputeInstanceID: 0, Profile: "3g.40gb"}) ||
		mi.UUID != "MIG-aaaa" || mi.Index != 0 || mi.PCIBusID != info.Devices[0].PCIBusID {
		t.Errorf("MIG instance 0/3: %+v (MIG %+v)", mi, mi.MIG)
	}
	if info.Devices[2].MIG == nil || info.Devices[2].MIG.Profile != "1g.10gb" {
		t.Errorf("MIG instance 0/5: %+v", info.Devices[2])
	}

	out := nvmlReadMem(t, s)
	if out[0].HasUtil {
		t.Error("GPU in MIG mode shows a utilization; NVML does not support one there")
	}
	if out[0].Err != nil || out[0].Used != h.gpus[0].mem.Used {
		t.Errorf("MIG parent memory %+v", out[0])
	}
	if m := out[1]; m.Err != nil || m.Total != 40*nvmlGiB || m.Used != 12*nvmlGiB || m.Free != 28*nvmlGiB || !m.HasReserved {
		t.Errorf("instance 0/3 memory %+v", m)
	}
	if m := out[1]; m.HasUtil || m.HasTemp || m.HasPower {
		t.Errorf("instance 0/3 shows utilization, temperature or power %+v; those are the whole GPU's", m)
	}
	if m := out[2]; m.Err != nil || m.Total != 10*nvmlGiB || m.Used != 3*nvmlGiB {
		t.Errorf("instance 0/5 memory %+v", m)
	}
	if out[3].Used != h.gpus[1].mem.Used {
		t.Errorf("GPU 1 (device 3) memory %+v, want GPU 1's", out[3])
	}

	ps, errs := nvmlReadProcs(t, s)
	for i, err := range errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
	}
	if len(ps) != 2 {
		t.Fatalf("processes %+v, want one per instance and none listed on the MIG parent", ps)
	}
	for _, p := range ps {
		switch p.PID {
		case 1001:
			if p.Device != 1 || p.Used() != 10*nvmlGiB {
				t.Errorf("pid 1001: %+v, want 10 GiB on device 1 (0/3)", p)
			}
		case 1005:
			if p.Device != 2 || p.Used() != 2*nvmlGiB {
				t.Errorf("pid 1005: %+v, want 2 GiB on device 2 (0/5)", p)
			}
		default:
			t.Errorf("unexpected process %+v", p)
		}
	}
}

func TestNVMLMIGLayoutChange(t *testing.T) {
	h := newMockHost(nil)
	a := &migInstance{gi: 1, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid: "MIG-aaaa",
		gpu: &mockGPU{mem: nvml.Memory_v2{Total: 40 * nvmlGiB, Used: nvmlGiB, Free: 39 * nvmlGiB}}}
	b := &migInstance{gi: 2, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid: "MIG-bbbb",
		gpu: &mockGPU{mem: nvml.Memory_v2{Total: 40 * nvmlGiB, Used: 2 * nvmlGiB, Free: 38 * nvmlGiB}}}
	h.enableMIG(0, a, b)
	s := h.open(t)
	before := s.Info()
	if len(before.Devices) != 10 {
		t.Fatalf("%d devices, want 10", len(before.Devices))
	}
	out := make([]sampler.MemSample, 10)
	s.ReadMemory(nvmlT0, out)
	// An administrator destroys instance 2.
	h.setMIG(0, a)
	s.ReadMemory(nvmlT0.Add(time.Second), out)
	if n := len(s.Info().Devices); n != 10 {
		t.Fatalf("the layout was read again within a second: %d devices", n)
	}
	s.ReadMemory(nvmlT0.Add(migRescanInterval+time.Second), out)
	after := s.Info()
	if len(after.Devices) != 9 || after.Devices[1].ID != "0/1" || after.Devices[2].ID != "1" {
		t.Fatalf("after instance 0/2 was destroyed: %d devices %+v", len(after.Devices), after.Devices[:3])
	}
	if len(before.Devices) != 10 || before.Devices[2].ID != "0/2" {
		t.Fatal("an earlier Info's device list changed under its holder")
	}
	out = make([]sampler.MemSample, 9)
	if err := s.ReadMemory(nvmlT0.Add(migRescanInterval+2*time.Second), out); err != nil {
		t.Fatal(err)
	}
	if out[1].Used != nvmlGiB || out[2].Used != h.gpus[1].mem.Used {
		t.Errorf("after the change: 0/1 used %d, GPU 1 used %d", out[1].Used, out[2].Used)
	}
}

func TestNVMLMIGSeveralComputeInstances(t *testing.T) {
	h := newMockHost(nil)
	h.enableMIG(2,
		&migInstance{gi: 1, ci: 0, name: "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb", uuid: "MIG-c0"},
		&migInstance{gi: 1, ci: 1, name: "NVIDIA H100 80GB HBM3 MIG 2c.3g.40gb", uuid: "MIG-c1"},
	)
	info := h.open(t).Info()
	if info.Devices[3].ID != "2/1/0" || info.Devices[4].ID != "2/1/1" {
		t.Fatalf("ids %q %q, want 2/1/0 and 2/1/1 for two compute instances of one GPU instance", info.Devices[3].ID, info.Devices[4].ID)
	}
}

func TestNVMLDriverWarning(t *testing.T) {
	for _, v := range []string{"535.43.02", "535.54.03", "535.86.10"} {
		srv, _ := server.New(server.WithGPUs(gpus.Multiple(2, gpus.H100_SXM5_80GB)...),
			server.WithDriverVersion(v), server.WithNVMLVersion("12."+v), server.WithCUDADriverVersion(12020))
		info := newMockHost(srv).open(t).Info()
		if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], v) || !strings.Contains(info.Warnings[0], "process") {
			t.Errorf("driver %s: warnings %q, want one about garbled process lists", v, info.Warnings)
		}
		if info.CUDAVersion != "12.2" {
			t.Errorf("CUDA %q, want 12.2", info.CUDAVersion)
		}
	}
}

func TestGarblesProcessLists(t *testing.T) {
	tests := map[string]bool{
		"535.43.02": true, "535.54.03": true, "535.86.05": true, "535.86.10": true,
		"535.98": false, "535.104.05": false, "535.42.99": false, "530.30.02": false,
		"550.54.15": false, "580.159": false, "": false, "535": false,
	}
	for v, want := range tests {
		if got := garblesProcessLists(v); got != want {
			t.Errorf("garblesProcessLists(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestNVMLNoLibrary(t *testing.T) {
	h := newMockHost(nil)
	h.srv.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	_, err := newSource(h.srv, nil)
	if !errors.Is(err, sampler.ErrNoDriver) || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Fatalf("err %v, want sampler.ErrNoDriver naming libnvidia-ml.so.1", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q spans lines", err)
	}
	if n := len(h.srv.ShutdownCalls()); n != 0 {
		t.Errorf("Shutdown called %d times after a failed Init", n)
	}
}

func TestNVMLInitOtherFailure(t *testing.T) {
	h := newMockHost(nil)
	h.srv.InitFunc = func() nvml.Return { return nvml.ERROR_NO_PERMISSION }
	_, err := newSource(h.srv, nil)
	if err == nil || errors.Is(err, sampler.ErrNoDriver) {
		t.Fatalf("err %v, want an error that is not 'no driver'", err)
	}
}

// TestOpenNVMLWithoutDriver runs the real loader: on a machine without the
// NVIDIA driver it must say which library is missing.
func TestOpenNVMLWithoutDriver(t *testing.T) {
	src, err := Open()
	if err == nil {
		src.Close()
		t.Skip("an NVIDIA driver is installed here")
	}
	if !errors.Is(err, sampler.ErrNoDriver) || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Fatalf("Open without a driver: %v, want sampler.ErrNoDriver naming libnvidia-ml.so.1", err)
	}
}

func TestNVMLProcessUtilization(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[0].samples = []nvml.ProcessUtilizationSample{
		{Pid: 1001, TimeStamp: 100, SmUtil: 40},
		{Pid: 1001, TimeStamp: 300, SmUtil: 70},
		{Pid: 1002, TimeStamp: 200, SmUtil: 5},
	}
	h.gpus[1].samplesRet = nvml.ERROR_NOT_SUPPORTED
	s := h.open(t)
	got := map[sampler.UtilKey]float64{}
	if err := s.ReadProcessUtilization(nvmlT0, got); err != nil {
		t.Fatal(err)
	}
	want := map[sampler.UtilKey]float64{{Device: 0, PID: 1001}: 70, {Device: 0, PID: 1002}: 5}
	if len(got) != len(want) || got[sampler.UtilKey{Device: 0, PID: 1001}] != 70 || got[sampler.UtilKey{Device: 0, PID: 1002}] != 5 {
		t.Fatalf("utilization %v, want %v (the newest sample of each process)", got, want)
	}
	// No new samples: NVML says ERROR_NOT_FOUND, which is no error.
	clear(got)
	if err := s.ReadProcessUtilization(nvmlT0.Add(time.Second), got); err != nil || len(got) != 0 {
		t.Fatalf("no new samples: %v, %v; want nothing and no error", got, err)
	}
	calls := h.devs[0].GetProcessUtilizationCalls()
	if len(calls) != 2 || calls[0].V != 0 || calls[1].V != 300 {
		t.Errorf("timestamps passed %+v, want 0 then the newest seen (300)", calls)
	}
	h.gpus[0].samples = append(h.gpus[0].samples, nvml.ProcessUtilizationSample{Pid: 1002, TimeStamp: 400, SmUtil: 55})
	if err := s.ReadProcessUtilization(nvmlT0.Add(2*time.Second), got); err != nil || len(got) != 1 || got[sampler.UtilKey{Device: 0, PID: 1002}] != 55 {
		t.Fatalf("a new sample: %v, %v", got, err)
	}
	s.ReadProcessUtilization(nvmlT0.Add(3*time.Second), got)
	if n := len(h.devs[1].GetProcessUtilizationCalls()); n != 1 {
		t.Errorf("a device without process utilization asked %d times, want 1", n)
	}
}

func TestNVMLClose(t *testing.T) {
	h := newMockHost(nil)
	s, err := newSource(h.srv, hostproc.NewProcReader(fixtureProc))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := len(h.srv.ShutdownCalls()); n != 1 {
		t.Fatalf("Shutdown called %d times, want once", n)
	}
	if err := s.ReadMemory(nvmlT0, make([]sampler.MemSample, 8)); err == nil {
		t.Fatal("ReadMemory after Close reported no error")
	}
}

func TestNVMLReadMemoryDoesNotAllocate(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[3].memRet = nvml.ERROR_NOT_SUPPORTED // the v1 path
	h.gpus[5].memRet = nvml.ERROR_GPU_IS_LOST   // a failing device
	h.gpus[6].tempRet = nvml.ERROR_NOT_SUPPORTED
	h.enableMIG(7, &migInstance{gi: 1, name: "NVIDIA H100 80GB HBM3 MIG 7g.80gb", uuid: "MIG-x",
		gpu: &mockGPU{mem: nvml.Memory_v2{Total: 80 * nvmlGiB, Used: nvmlGiB, Free: 79 * nvmlGiB}}})
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	now := nvmlT0
	if n := testing.AllocsPerRun(200, func() {
		now = now.Add(time.Second)
		if err := s.ReadMemory(now, out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("ReadMemory allocates %v times per call, want 0", n)
	}
	if out[5].Err == nil || out[3].HasReserved || out[0].Err != nil {
		t.Fatalf("the devices did not report as set up: %+v", out)
	}
}

// TestNVMLSampler runs the sampler over the NVML source on the mock and
// checks the Snapshot a user sees.
func TestNVMLSampler(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[0].mem.Used, h.gpus[0].mem.Free = 12*nvmlGiB, h.gpus[0].mem.Total-reservedH100-12*nvmlGiB
	h.gpus[0].compute = nvmlProcs(1001, 10850*nvmlMiB, 1005, 600*nvmlMiB)
	h.gpus[1].compute = nvmlProcs(1002, nvmlNA)
	h.gpus[2].compute = nvmlProcs(4242, 2*nvmlGiB)
	h.gpus[4].memRet = nvml.ERROR_GPU_IS_LOST
	h.gpus[4].computeRet = nvml.ERROR_GPU_IS_LOST
	h.enableMIG(6, &migInstance{gi: 2, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid: "MIG-q", gpu: &mockGPU{
		mem: nvml.Memory_v2{Total: 40 * nvmlGiB, Used: 9 * nvmlGiB, Free: 31 * nvmlGiB}, compute: nvmlProcs(1004, 8*nvmlGiB),
	}})
	src := h.open(t)
	now := nvmlT0
	smp, err := sampler.New(src, sampler.Config{Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	snap, ok := smp.Tick(now)
	if !ok {
		t.Fatal("the first tick published nothing")
	}
	if snap.Source != "nvml" || snap.DriverVersion != "550.54.15" || snap.CUDAVersion != "12.4" || snap.Err != "" {
		t.Errorf("snapshot source %q driver %q cuda %q err %q", snap.Source, snap.DriverVersion, snap.CUDAVersion, snap.Err)
	}
	if len(snap.Devices) != 9 {
		t.Fatalf("%d devices, want 8 GPUs and one MIG instance", len(snap.Devices))
	}

	d0, _ := snap.Device("0")
	if d0.MemoryUsed != h.gpus[0].mem.Used || d0.MemoryReserved == nil || *d0.MemoryReserved != reservedH100 {
		t.Errorf("GPU 0: used %d reserved %v", d0.MemoryUsed, d0.MemoryReserved)
	}
	if len(d0.Processes) != 2 || d0.Processes[0].PID != 1001 || d0.Processes[0].User != "root" ||
		d0.Processes[0].Command != "python3 train.py --epochs 10" || d0.Processes[0].Container != "3f4e5d6c7b8a" {
		t.Errorf("GPU 0 processes %+v", d0.Processes)
	}
	if want := h.gpus[0].mem.Used - 10850*nvmlMiB - 600*nvmlMiB; d0.Unattributed == nil || *d0.Unattributed != want {
		t.Errorf("GPU 0 unattributed %v, want %d", d0.Unattributed, want)
	}
	if d1, _ := snap.Device("1"); d1.Unattributed != nil || len(d1.Processes) != 1 || d1.Processes[0].UsedBytes != nil {
		t.Errorf("GPU 1 (a process of unknown memory): unattributed %v, processes %+v; want both unknown", d1.Unattributed, d1.Processes)
	}
	d2, _ := snap.Device("2")
	if len(d2.Processes) != 1 || d2.Processes[0].Visible || d2.Unattributed == nil || *d2.Unattributed != h.gpus[2].mem.Used-2*nvmlGiB {
		t.Errorf("GPU 2: processes %+v unattributed %v", d2.Processes, d2.Unattributed)
	}
	if d3, _ := snap.Device("3"); d3.Unattributed == nil || *d3.Unattributed != d3.MemoryUsed || len(d3.Processes) != 0 {
		t.Errorf("GPU 3 with no processes: unattributed %v, want all its used memory", d3.Unattributed)
	}
	if d4, _ := snap.Device("4"); !strings.Contains(d4.Err, "GPU is lost") {
		t.Errorf("GPU 4: err %q, want the lost GPU marked", d4.Err)
	}
	if d5, _ := snap.Device("5"); d5.Err != "" || d5.MemoryUsed != h.gpus[5].mem.Used {
		t.Errorf("GPU 5 next to the lost one: err %q used %d", d5.Err, d5.MemoryUsed)
	}
	d6, _ := snap.Device("6")
	if !d6.MIGEnabled || d6.Unattributed != nil || d6.UtilizationPercent != nil || len(d6.Processes) != 0 {
		t.Errorf("GPU 6 in MIG mode: %+v", d6)
	}
	mig, ok := snap.Device("6/2")
	if !ok || mig.MIG == nil || mig.MemoryUsed != 9*nvmlGiB || len(mig.Processes) != 1 || mig.Processes[0].PID != 1004 ||
		mig.Unattributed == nil || *mig.Unattributed != nvmlGiB {
		t.Errorf("MIG instance 6/2: %+v", mig)
	}
	if idx := func() int {
		for i, d := range snap.Devices {
			if d.ID == "6/2" {
				return i
			}
		}
		return -1
	}(); idx != 7 {
		t.Errorf("MIG instance 6/2 at position %d, want 7 (after its GPU)", idx)
	}

	// A process exits, freeing its memory: the next process poll shows it
	// as exited.
	h.gpus[0].compute = nvmlProcs(1001, 10850*nvmlMiB)
	h.gpus[0].mem.Used -= 600 * nvmlMiB
	h.gpus[0].mem.Free += 600 * nvmlMiB
	now = now.Add(time.Second)
	snap, _ = smp.Tick(now)
	d0, _ = snap.Device("0")
	var exited bool
	for _, p := range d0.Processes {
		if p.PID == 1005 {
			exited = p.Exited
		}
	}
	if !exited {
		t.Errorf("pid 1005 left NVML's list but is not shown as exited: %+v", d0.Processes)
	}
}

func TestNVMLMIGInstanceVanishes(t *testing.T) {
	h := newMockHost(nil)
	a := &migInstance{gi: 1, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid: "MIG-aaaa",
		gpu: &mockGPU{mem: nvml.Memory_v2{Total: 40 * nvmlGiB, Used: nvmlGiB, Free: 39 * nvmlGiB}}}
	b := &migInstance{gi: 2, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", uuid: "MIG-bbbb",
		gpu: &mockGPU{mem: nvml.Memory_v2{Total: 40 * nvmlGiB, Used: 2 * nvmlGiB, Free: 38 * nvmlGiB}}}
	h.enableMIG(0, a, b)
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	s.ReadMemory(nvmlT0, out)
	// Instance 2 is destroyed: its handle stops answering.
	b.gpu.memRet = nvml.ERROR_INVALID_ARGUMENT
	h.setMIG(0, a)
	s.ReadMemory(nvmlT0.Add(migStaleRescan), out)
	if out[2].Err == nil {
		t.Fatal("the destroyed instance reported no error")
	}
	if n := len(s.Info().Devices); n != 9 {
		t.Fatalf("%d devices after instance 0/2 vanished, want 9 well before the periodic rescan", n)
	}
}

// A device's process list is read at every process poll of a second or more
// apart: memory that moves between processes leaves the device's used memory
// unchanged, so a list reused for that reason would show the old split. Polls
// closer together (vramtop run) reuse it while the used memory reads the
// same. The graphics list of a device without graphics clients is read where
// memory the compute list does not explain grew, and every
// graphicsListEvery.
func TestNVMLProcessListsFollowMemory(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[0].compute = nvmlProcs(1001, 10*nvmlGiB)
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	errs := make([]error, len(out))
	at := func(d time.Duration) []sampler.ProcSample {
		t.Helper()
		if err := s.ReadMemory(nvmlT0.Add(d), out); err != nil {
			t.Fatal(err)
		}
		ps, err := s.ReadProcesses(nvmlT0.Add(d), nil, errs)
		if err != nil {
			t.Fatal(err)
		}
		var on0 []sampler.ProcSample
		for _, p := range ps {
			if p.Device == 0 {
				on0 = append(on0, p)
			}
		}
		return on0
	}
	calls := func() (int, int) {
		return len(h.devs[0].GetComputeRunningProcessesCalls()), len(h.devs[0].GetGraphicsRunningProcessesCalls())
	}
	if ps := at(0); len(ps) != 1 || ps[0].PID != 1001 || ps[0].User != "root" {
		t.Fatalf("first list: %+v", ps)
	}
	if c, g := calls(); c != 1 || g != 1 {
		t.Fatalf("first list: %d compute and %d graphics calls, want 1 and 1", c, g)
	}
	// Same memory a quarter of a second later: the list is reused, with its
	// /proc details.
	if ps := at(250 * time.Millisecond); len(ps) != 1 || ps[0].PID != 1001 || ps[0].User != "root" || ps[0].Used() != 10*nvmlGiB {
		t.Fatalf("reused list: %+v", ps)
	}
	if c, _ := calls(); c != 1 {
		t.Errorf("unchanged memory 250 ms later: %d compute calls, want the list reused (1)", c)
	}
	// A second later the list is read again, and keeps the /proc details.
	if ps := at(time.Second); len(ps) != 1 || ps[0].User != "root" || ps[0].Command == "" {
		t.Fatalf("list a second later: %+v", ps)
	}
	if c, g := calls(); c != 2 || g != 1 {
		t.Errorf("a second later: %d compute and %d graphics calls, want 2 and 1 (no graphics client seen, read every %v)", c, g, graphicsListEvery)
	}
	// A new process: used memory changes, the compute list explains it.
	h.gpus[0].compute = nvmlProcs(1001, 10*nvmlGiB, 1002, 2*nvmlGiB)
	h.gpus[0].mem.Used += 2 * nvmlGiB
	if ps := at(2 * time.Second); len(ps) != 2 || ps[1].User != "root" {
		t.Fatalf("after a new process: %+v, want both, with their /proc details", ps)
	}
	if c, g := calls(); c != 3 || g != 1 {
		t.Errorf("memory the compute list explains: %d compute and %d graphics calls, want 3 and 1", c, g)
	}
	// Memory that moved between processes without changing the total
	// shows at the next poll.
	h.gpus[0].compute = nvmlProcs(1001, 7*nvmlGiB, 1002, 5*nvmlGiB)
	if ps := at(3 * time.Second); len(ps) != 2 || ps[0].Used() != 7*nvmlGiB || ps[1].Used() != 5*nvmlGiB {
		t.Errorf("a second after memory moved: %+v, want the new split", ps)
	}
	// A graphics client appears: the memory the compute list does not
	// explain grows, and the graphics list is read in the same poll.
	h.gpus[0].graphics = nvmlProcs(2001, nvmlGiB)
	h.gpus[0].mem.Used += nvmlGiB
	if ps := at(4 * time.Second); len(ps) != 3 || ps[2].PID != 2001 || ps[2].Type != "graphics" {
		t.Fatalf("graphics client: %+v, want it listed at once", ps)
	}
	_, g0 := calls()
	// From then on the graphics list is read with every list.
	at(5 * time.Second)
	if _, g := calls(); g != g0+1 {
		t.Errorf("%d graphics calls after %d, want 1 more: once a device has graphics clients, its graphics list is read every time", g, g0)
	}
}

// A GPU that read 0% at every sample since the last process-utilization call
// has processes at 0% too: the call is skipped and its processes read 0.
func TestNVMLIdleGPUSkipsProcessUtilization(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[0].compute = nvmlProcs(1001, 10*nvmlGiB)
	h.gpus[0].samples = []nvml.ProcessUtilizationSample{{Pid: 1001, TimeStamp: 100, SmUtil: 40}}
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	errs := make([]error, len(out))
	poll := func(d time.Duration) map[sampler.UtilKey]float64 {
		t.Helper()
		now := nvmlT0.Add(d)
		if err := s.ReadMemory(now, out); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadProcesses(now, nil, errs); err != nil {
			t.Fatal(err)
		}
		got := map[sampler.UtilKey]float64{}
		if err := s.ReadProcessUtilization(now, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	key := sampler.UtilKey{Device: 0, PID: 1001}
	calls := func() int { return len(h.devs[0].GetProcessUtilizationCalls()) }
	// GPU 0 reads 0%: no call, and its process reads 0.
	if got := poll(0); calls() != 0 || got[key] != 0 || len(got) == 0 {
		t.Fatalf("idle GPU: %d calls, utilization %v; want no call and PID 1001 at 0", calls(), got)
	}
	// It gets busy: the call is made and the process's sample read.
	h.gpus[0].util = 35
	if got := poll(time.Second); calls() != 1 || got[key] != 40 {
		t.Fatalf("busy GPU: %d calls, utilization %v; want one call and PID 1001 at 40", calls(), got)
	}
}

// The /proc details of a process already listed are read again only every
// hostStatsEvery (for its CPU and host memory), whether the list is reused or
// read again; a PID new to the list is read at once.
func TestNVMLReusedListsReadProcLess(t *testing.T) {
	h, s, root := openWithFakeProc(t, 4242)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	errs := make([]error, len(out))
	visible := func(d time.Duration) bool {
		t.Helper()
		now := nvmlT0.Add(d)
		if err := s.ReadMemory(now, out); err != nil {
			t.Fatal(err)
		}
		ps, err := s.ReadProcesses(now, nil, errs)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.PID == 4242 {
				return p.Visible && p.Command != ""
			}
		}
		t.Fatalf("PID 4242 not listed: %+v", ps)
		return false
	}
	if !visible(0) {
		t.Fatal("PID 4242 not visible with its command at first")
	}
	// The process's /proc entry goes away (it moved to another PID namespace,
	// say) while the card's memory stays the same.
	if err := os.RemoveAll(filepath.Join(root, "4242")); err != nil {
		t.Fatal(err)
	}
	if !visible(time.Second) {
		t.Error("a list within hostStatsEvery read /proc again for a known PID")
	}
	h.gpus[0].mem.Used += nvmlMiB
	if !visible(2 * time.Second) {
		t.Error("a fresh list within hostStatsEvery read /proc again for a known PID")
	}
	if visible(hostStatsEvery + time.Second) {
		t.Errorf("after hostStatsEvery (%v) /proc was not read again", hostStatsEvery)
	}
	// A PID new to the list is read at once.
	writeFakeProc(t, root, []uint32{4243})
	h.gpus[0].compute = append(h.gpus[0].compute, nvmlProcs(4243, nvmlMiB)...)
	h.gpus[0].mem.Used += nvmlMiB
	errs2 := make([]error, len(out))
	now := nvmlT0.Add(hostStatsEvery + 2*time.Second)
	if err := s.ReadMemory(now, out); err != nil {
		t.Fatal(err)
	}
	ps, err := s.ReadProcesses(now, nil, errs2)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.PID == 4243 && (!p.Visible || p.Command == "") {
			t.Errorf("a PID new to the list: %+v, want its /proc details at once", p)
		}
	}
}

// What /proc tells of a process reaches the snapshot's sample: its
// container's job and its host memory.
func TestNVMLProcessesCarryProcDetails(t *testing.T) {
	_, s, _ := openWithFakeProc(t, 4242)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	errs := make([]error, len(out))
	s.ReadMemory(nvmlT0, out)
	ps, err := s.ReadProcesses(nvmlT0, nil, errs)
	if err != nil || len(ps) == 0 {
		t.Fatalf("%v %v", ps, err)
	}
	p := ps[0]
	if p.Job == nil || p.Job.ContainerID == "" || p.HostMemoryBytes == nil || *p.HostMemoryBytes == 0 {
		t.Errorf("process 4242: job %+v, host memory %v; want its docker container and its RSS", p.Job, p.HostMemoryBytes)
	}
}

// openWithFakeProc opens the source on the mocked host with GPU 0 running
// pid (10 GiB), over a /proc tree of its own that the test may change.
func openWithFakeProc(t *testing.T, pid uint32) (*mockHost, *nvmlSource, string) {
	t.Helper()
	h := newMockHost(nil)
	h.gpus[0].compute = nvmlProcs(uint64(pid), 10*nvmlGiB)
	root := t.TempDir()
	writeFakeProc(t, root, []uint32{pid})
	s, err := newSource(h.srv, hostproc.NewProcReader(root))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return h, s, root
}

// Utilization, temperature and power are read once in gaugesEvery; the
// samples between carry the last readings, and memory is read every time.
func TestNVMLGaugesReadOnceASecond(t *testing.T) {
	h := newMockHost(nil)
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	read := func(d time.Duration) sampler.MemSample {
		t.Helper()
		if err := s.ReadMemory(nvmlT0.Add(d), out); err != nil {
			t.Fatal(err)
		}
		return out[1]
	}
	calls := func() int { return len(h.devs[1].GetPowerUsageCalls()) }
	read(0)
	h.gpus[1].util, h.gpus[1].powerMW = 77, 250000
	h.gpus[1].mem.Used += nvmlGiB
	m := read(50 * time.Millisecond)
	if !m.HasUtil || m.Util != 10 || !m.HasPower || m.PowerW != 101 || m.Used != h.gpus[1].mem.Used || calls() != 1 {
		t.Fatalf("50 ms on: %+v after %d power calls; want the new memory, the last utilization (10%%) and power (101 W), one call", m, calls())
	}
	m = read(time.Second)
	if m.Util != 77 || m.PowerW != 250 || calls() != 2 {
		t.Fatalf("1 s on: %+v after %d power calls; want 77%% and 250 W read again", m, calls())
	}
	// At 1 s sampling every sample reads them, even one a little early.
	if m = read(time.Second + 995*time.Millisecond); calls() != 3 {
		t.Fatalf("a 1 s tick 5 ms early did not read the gauges (%d calls)", calls())
	}
}

// Two processes swap 3 GiB within one second, so that the device's used
// memory reads the same: at the default 1 s interval the snapshots show the
// new split within 2 s, and say when the list they show was read.
func TestNVMLSwapShowsWithinTwoSeconds(t *testing.T) {
	h := newMockHost(nil)
	g := h.gpus[0]
	g.compute = nvmlProcs(1001, 4*nvmlGiB, 1002, nvmlGiB)
	g.mem.Used = 5 * nvmlGiB
	src := h.open(t)
	now := nvmlT0
	smp, err := sampler.New(src, sampler.Config{Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	used := func(snap sampler.Snapshot, pid uint32) uint64 {
		d, _ := snap.Device("0")
		for _, p := range d.Processes {
			if p.PID == pid && !p.Exited {
				return p.Used()
			}
		}
		return 0
	}
	// Ticks a little off the second, as a timer fires.
	tick := func(d time.Duration) sampler.Snapshot {
		now = nvmlT0.Add(d)
		snap, _ := smp.Tick(now)
		return snap
	}
	for i := range 5 {
		tick(time.Duration(i)*time.Second + time.Duration(i%2)*3*time.Millisecond)
	}
	swapAt := 4*time.Second + 500*time.Millisecond
	g.compute = nvmlProcs(1001, nvmlGiB, 1002, 4*nvmlGiB)
	shown := time.Duration(-1)
	for d := 5 * time.Second; d <= 40*time.Second; d += time.Second - time.Millisecond {
		snap := tick(d)
		if used(snap, 1001) == nvmlGiB && used(snap, 1002) == 4*nvmlGiB {
			shown = d - swapAt
			dev, _ := snap.Device("0")
			if age := snap.Time.Sub(dev.ListedAt); dev.ListedAt.IsZero() || age > time.Second {
				t.Errorf("listed_at %v at %v (%v old), want the list of this poll", dev.ListedAt, snap.Time, age)
			}
			break
		}
	}
	if shown < 0 || shown > 2*time.Second {
		t.Fatalf("memory that moved between two processes with the device's used memory unchanged showed after %v, want within 2s", shown)
	}
}

// The SM and memory clocks are read with the other gauges, once in
// gaugesEvery, not at every memory sample; a GPU that does not report them
// has none, and is not asked again.
func TestNVMLClocksWithTheGauges(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[2].clockRet = nvml.ERROR_NOT_SUPPORTED
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	for i := range 18 { // fast mode: 50 ms samples, within gaugesEvery
		if err := s.ReadMemory(nvmlT0.Add(time.Duration(i)*50*time.Millisecond), out); err != nil {
			t.Fatal(err)
		}
	}
	if m := out[1]; !m.HasSMClock || m.SMClockMHz != 1970 || !m.HasMemClock || m.MemClockMHz != 2619 {
		t.Errorf("GPU 1: %+v, want SM 1970 MHz and memory 2619 MHz", m)
	}
	if n := h.gpus[1].clockCalls; n != 2 {
		t.Errorf("%d clock calls in 18 samples 50 ms apart, want 2 (SM and memory, once)", n)
	}
	if err := s.ReadMemory(nvmlT0.Add(2*time.Second), out); err != nil {
		t.Fatal(err)
	}
	if m := out[2]; m.HasSMClock || m.HasMemClock || h.gpus[2].clockCalls != 1 {
		t.Errorf("GPU 2 without clocks: %+v after %d calls, want none, asked once", m, h.gpus[2].clockCalls)
	}
}

// For a job (SetEnergyEvery(0), as run asks) the total-energy counter is
// read with the power, once in gaugesEvery: a GPU whose call fails says why
// and the others keep their counter; a GPU without one is not asked again.
func TestNVMLEnergyCounter(t *testing.T) {
	h := newMockHost(nil)
	h.gpus[1].energyRet = nvml.ERROR_NO_PERMISSION
	h.gpus[2].energyRet = nvml.ERROR_NOT_SUPPORTED
	s := h.open(t)
	s.SetEnergyEvery(0)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	read := func(d time.Duration) {
		t.Helper()
		if err := s.ReadMemory(nvmlT0.Add(d), out); err != nil {
			t.Fatal(err)
		}
	}
	read(0)
	if m := out[0]; !m.HasEnergy || m.EnergyMJ != 5_000_000_000 || m.EnergyErr != nil {
		t.Fatalf("GPU 0: %+v, want its counter 5000000000 mJ", m)
	}
	if m := out[1]; m.HasEnergy || m.EnergyErr == nil || !strings.Contains(m.EnergyErr.Error(), "no permission") || m.Err != nil || !m.HasPower {
		t.Fatalf("GPU 1 (counter fails): %+v, want the counter's error and its memory and power", m)
	}
	if m := out[2]; m.HasEnergy || m.EnergyErr != nil {
		t.Fatalf("GPU 2 (no counter): %+v, want neither a counter nor an error", m)
	}
	h.gpus[0].energyMJ += 400_000
	read(100 * time.Millisecond)
	if m := out[0]; m.EnergyMJ != 5_000_000_000 {
		t.Fatalf("100 ms on: %d mJ, want the last reading carried", m.EnergyMJ)
	}
	if m := out[1]; m.EnergyErr == nil {
		t.Fatalf("100 ms on, GPU 1: %+v, want its error carried", m)
	}
	read(time.Second)
	if m := out[0]; m.EnergyMJ != 5_000_400_000 {
		t.Fatalf("1 s on: %d mJ, want the counter read again (5000400000)", m.EnergyMJ)
	}
	calls := len(h.devs[2].GetTotalEnergyConsumptionCalls())
	read(2 * time.Second)
	if n := len(h.devs[2].GetTotalEnergyConsumptionCalls()); n != calls || n != 1 {
		t.Fatalf("GPU 2's counter asked %d times, want once (not supported)", n)
	}
}

// Where no job's energy is asked for, the counter (2.2 ms of CPU a call on
// an H200) is read every energyEvery, not with every gauge reading: the
// samples between carry the last reading.
func TestNVMLEnergyCounterReadSeldomByDefault(t *testing.T) {
	h := newMockHost(nil)
	s := h.open(t)
	out := make([]sampler.MemSample, len(s.Info().Devices))
	read := func(d time.Duration) {
		t.Helper()
		if err := s.ReadMemory(nvmlT0.Add(d), out); err != nil {
			t.Fatal(err)
		}
	}
	read(0)
	first := out[0].EnergyMJ
	h.gpus[0].energyMJ += 400_000
	for d := time.Second; d < energyEvery; d += time.Second {
		read(d)
		if out[0].EnergyMJ != first || !out[0].HasEnergy || !out[0].HasPower {
			t.Fatalf("%v on: %+v, want the first reading (%d mJ) carried and the power read", d, out[0], first)
		}
	}
	if n := len(h.devs[0].GetTotalEnergyConsumptionCalls()); n != 1 {
		t.Fatalf("counter asked %d times in %v, want once", n, energyEvery-time.Second)
	}
	read(energyEvery)
	if out[0].EnergyMJ != first+400_000 {
		t.Fatalf("after %v: %d mJ, want the counter read again (%d)", energyEvery, out[0].EnergyMJ, first+400_000)
	}
}
