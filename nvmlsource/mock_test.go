//go:build cgo

package nvmlsource

import (
	"math"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/vramtop/vramtop/hostproc"
)

// This file wires go-nvml's mock servers for the NVML source's tests and
// benchmarks. The servers wire device enumeration, names, UUIDs and MIG mode;
// mockGPU fills in what the source reads every poll.

const (
	nvmlMiB = uint64(1) << 20
	nvmlGiB = uint64(1) << 30
	// reservedH100 is what the driver of an idle H100 reserves (v2 "reserved").
	reservedH100 = 616 * nvmlMiB
	// nvmlNA is NVML's "value not available" for a process's memory.
	nvmlNA = math.MaxUint64
)

// mockGPU is what one mocked device (a GPU or a MIG instance) reports. Set a
// *Ret field to make the call fail.
type mockGPU struct {
	mem                 nvml.Memory_v2
	memRet, memV1Ret    nvml.Return
	compute, graphics   []nvml.ProcessInfo
	computeRet, grRet   nvml.Return
	util, temp, powerMW uint32
	utilRet, tempRet    nvml.Return
	powerRet            nvml.Return
	smMHz, memMHz       uint32
	energyMJ            uint64
	energyRet           nvml.Return
	clockRet            nvml.Return
	clockCalls          int
	samples             []nvml.ProcessUtilizationSample
	samplesRet          nvml.Return
}

// wire sets the device's functions to report g.
func (g *mockGPU) wire(d *mock.Device) {
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		if g.memRet != nvml.SUCCESS {
			return nvml.Memory_v2{}, g.memRet
		}
		return g.mem, nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		if g.memV1Ret != nvml.SUCCESS {
			return nvml.Memory{}, g.memV1Ret
		}
		// The v1 call counts the driver's reservation as used.
		return nvml.Memory{Total: g.mem.Total, Free: g.mem.Free, Used: g.mem.Used + g.mem.Reserved}, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if g.computeRet != nvml.SUCCESS {
			return nil, g.computeRet
		}
		return g.compute, nvml.SUCCESS
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if g.grRet != nvml.SUCCESS {
			return nil, g.grRet
		}
		return g.graphics, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: g.util}, g.utilRet
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		return g.temp, g.tempRet
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		return g.powerMW, g.powerRet
	}
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		return g.energyMJ, g.energyRet
	}
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		g.clockCalls++
		if c == nvml.CLOCK_MEM {
			return g.memMHz, g.clockRet
		}
		return g.smMHz, g.clockRet
	}
	d.GetProcessUtilizationFunc = func(last uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		if g.samplesRet != nvml.SUCCESS {
			return nil, g.samplesRet
		}
		var out []nvml.ProcessUtilizationSample
		for _, s := range g.samples {
			if s.TimeStamp > last {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return out, nvml.SUCCESS
	}
}

// quietDevice passes GetTemperature straight to the mock's function: moq's
// generated method logs every call's arguments in a growing slice, and that
// append would count as an allocation of the source's hot path. (The other
// hot-path calls take no arguments; their log entries have size zero.)
type quietDevice struct{ *server.Device }

func (q quietDevice) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	return q.GetTemperatureFunc(s)
}

func (q quietDevice) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	return q.GetClockInfoFunc(c)
}

// mockHost is a mock server with a mockGPU per device.
type mockHost struct {
	srv  *server.Server
	gpus []*mockGPU
	devs []*server.Device
}

// newMockHost wires srv (dgxh100.New() when nil): GPU i has (i+1) GiB + i MiB
// used, the H100's reservation, a temperature, power and utilization, and
// no processes.
func newMockHost(srv *server.Server) *mockHost {
	if srv == nil {
		srv = dgxh100.New()
	}
	h := &mockHost{srv: srv}
	for i, nd := range srv.Devices {
		d := nd.(*server.Device)
		total := d.MemoryInfo.Total
		used := uint64(i+1)*nvmlGiB + uint64(i)*nvmlMiB
		g := &mockGPU{
			mem:  nvml.Memory_v2{Version: 2, Total: total, Reserved: reservedH100, Used: used, Free: total - reservedH100 - used},
			util: uint32(10 * i), temp: uint32(30 + i), powerMW: uint32(100000 + 1000*i),
			smMHz: uint32(1980 - 10*i), memMHz: 2619,
			energyMJ: 5_000_000_000 + uint64(i)*1_000_000,
		}
		g.wire(&d.Device)
		busID := d.PciBusID
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for j := 0; j < len(busID) && j < len(p.BusId)-1; j++ {
				p.BusId[j] = int8(busID[j])
			}
			return p, nvml.SUCCESS
		}
		h.gpus = append(h.gpus, g)
		h.devs = append(h.devs, d)
	}
	srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < 0 || i >= len(h.devs) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		return quietDevice{h.devs[i]}, nvml.SUCCESS
	}
	return h
}

// migInstance is a mocked MIG device.
type migInstance struct {
	gi, ci int
	name   string
	uuid   string
	gpu    *mockGPU
	dev    *mock.Device
}

// enableMIG puts GPU i in MIG mode with the given instances: the GPU's own
// utilization and process utilization become unsupported, and its process
// list is the aggregate of the instances' (as NVML reports it on the parent
// handle to a privileged caller).
func (h *mockHost) enableMIG(i int, insts ...*migInstance) {
	d := h.devs[i]
	d.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	h.gpus[i].utilRet = nvml.ERROR_NOT_SUPPORTED
	h.gpus[i].samplesRet = nvml.ERROR_NOT_SUPPORTED
	h.setMIG(i, insts...)
}

// setMIG replaces the MIG instances of GPU i.
func (h *mockHost) setMIG(i int, insts ...*migInstance) {
	d := h.devs[i]
	var all []nvml.ProcessInfo
	for _, m := range insts {
		if m.gpu == nil {
			m.gpu = &mockGPU{}
		}
		m.dev = &mock.Device{}
		m.gpu.wire(m.dev)
		gi, ci, name, uuid := m.gi, m.ci, m.name, m.uuid
		m.dev.GetGpuInstanceIdFunc = func() (int, nvml.Return) { return gi, nvml.SUCCESS }
		m.dev.GetComputeInstanceIdFunc = func() (int, nvml.Return) { return ci, nvml.SUCCESS }
		m.dev.GetNameFunc = func() (string, nvml.Return) { return name, nvml.SUCCESS }
		m.dev.GetUUIDFunc = func() (string, nvml.Return) { return uuid, nvml.SUCCESS }
		all = append(all, m.gpu.compute...)
	}
	h.gpus[i].compute = all
	const slots = 7
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return slots, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
		// Instances sit in the slots in reverse, with empty slots between:
		// the source must not depend on NVML's slot order.
		k := len(insts) - 1 - j/2
		if j%2 == 1 || k < 0 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return insts[k].dev, nvml.SUCCESS
	}
}

// nvmlProcs builds a process list: pid, bytes pairs.
func nvmlProcs(pidBytes ...uint64) []nvml.ProcessInfo {
	var out []nvml.ProcessInfo
	for i := 0; i+1 < len(pidBytes); i += 2 {
		out = append(out, nvml.ProcessInfo{Pid: uint32(pidBytes[i]), UsedGpuMemory: pidBytes[i+1], GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF})
	}
	return out
}

// open opens the NVML source over the host, with /proc from the fixtures.
func (h *mockHost) open(t testing.TB) *nvmlSource {
	t.Helper()
	s, err := newSource(h.srv, hostproc.NewProcReader(fixtureProc))
	if err != nil {
		t.Fatalf("opening the NVML source on the mock: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fixtureProc is the sampler's /proc fixture tree.
const fixtureProc = "../hostproc/testdata/proc"

// fixtureBoot is the btime of the fixture's stat file.
var fixtureBoot = time.Unix(1700000000, 0)
