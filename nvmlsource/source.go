//go:build cgo

package nvmlsource

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/vramtop/vramtop/hostproc"
	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/sampler"
)

// nvmlLibrary is the file name of the library that NVML is loaded from.
const nvmlLibrary = "libnvidia-ml.so.1"

// migRescanInterval is how often the MIG layout of MIG-capable GPUs is read
// again, so that instances created or destroyed while vramtop runs show.
const migRescanInterval = 30 * time.Second

// listMaxAge is how long a device's process list is reused while its used
// memory reads the same. Memory can move between processes without changing
// the total (one frees 3 GiB while another takes them, in the same second:
// measured on an H200, a 30 s bound kept the old split on screen for 25 s),
// so no list is reused for longer than the sampler's process interval: a
// little under a second, so that the 1 s process poll lists every time,
// while `vramtop run` (a poll every 250 ms) reuses a list for up to a
// second while the memory stands still. What keeps the cost down at a
// hundred processes is the rest of a list's work: /proc is read for new PIDs
// only (hostStatsEvery for the others) and the graphics list only where its
// memory could have changed (graphicsListEvery).
const listMaxAge = 900 * time.Millisecond

// hostStatsEvery is how often the /proc details of processes already listed
// are read again (one stat file each: their CPU and host memory); a PID new
// to a device's list is read at once.
const hostStatsEvery = 5 * time.Second

// graphicsListEvery is how often the graphics list of a device that has shown
// no graphics process is read while the memory the compute list does not
// explain stays the same: it costs as much empty as full (1.3–1.8 ms with
// 100 compute processes on an H200). A graphics client that appears raises
// that memory, and the graphics list is read with the same poll.
const graphicsListEvery = 30 * time.Second

// migStaleRescan is how soon the MIG layout is read again after a MIG
// instance failed to report (it may have been destroyed).
const migStaleRescan = 2 * time.Second

// Supported is true: this build reads GPUs through NVML.
const Supported = true

// Open opens the NVML source over the system's libnvidia-ml.so.1. Where
// the library cannot be loaded, the error wraps ErrNoDriver.
func Open() (sampler.Source, error) {
	s, err := newSource(nvml.New(), hostproc.NewProcReader(""))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// nvmlSource reads devices and processes through NVML. Only the sampler's
// goroutine calls it.
type nvmlSource struct {
	lib  nvml.Interface
	proc *hostproc.ProcReader
	info sampler.SourceInfo
	// gpus are the physical GPUs in index order; devs is the device list as
	// of the last Info call (GPUs, each followed by its MIG instances).
	gpus []*nvmlDev
	devs []*nvmlDev
	// hasV2 is false where the library lacks nvmlDeviceGetMemoryInfo_v2.
	hasV2 bool

	migCapable bool
	lastScan   time.Time
	lastNow    time.Time
	rescan     bool

	// spans are where each device's processes stand in the buffer of the
	// ReadProcesses call under way; hostAt is when /proc was last read.
	spans  []listSpan
	hostAt time.Time

	pidIdx   map[uint32]int
	prevIdx  map[uint32]int
	utilSeen map[uint32]uint64
	closed   bool

	// energyEvery is how often the energy counter is read (energyEvery,
	// or with the gauges where a job's energy is measured).
	energyEvery time.Duration
}

// listSpan is one device's processes in a ReadProcesses buffer.
type listSpan struct {
	d          *nvmlDev
	start, end int
}

// due reports whether every has passed since last (never, or a clock that
// went back, counts as due).
func due(now, last time.Time, every time.Duration) bool {
	return last.IsZero() || now.Sub(last) >= every || now.Before(last)
}

// nvmlDev is one entry of the device list: a GPU, or a MIG instance of one.
type nvmlDev struct {
	info sampler.DeviceInfo
	h    nvml.Device
	// openErr is why there is no handle; the device reports it every poll.
	openErr error

	mig        bool // a MIG instance
	migCapable bool // a GPU whose MIG mode can be read
	migParent  bool // a GPU in MIG mode: processes are listed per instance

	// What the device turned out not to support, so it is not asked again.
	memV1, noUtil, noTemp, noPower, noGraphics, noProcUtil, noClocks, noEnergy bool
	// utilTS is the newest process-utilization sample seen (µs).
	utilTS uint64

	memErr, procErr, energyErr errSlot

	// used is the used memory of the last good memory reading; listedUsed
	// and listedAt that of the last process list, whose entries (with their
	// /proc details) are listed; listedOther is the used memory that list
	// did not account for.
	used, listedUsed     uint64
	listedOther          int64
	memOK                bool
	listedAt, graphicsAt time.Time
	listed               []sampler.ProcSample
	hasListed            bool
	graphicsSeen         bool
	// busy is whether any utilization reading since the last process
	// utilization call was above 0%.
	busy bool
	// gauges are the device's last utilization, temperature and power,
	// read at gaugesAt (readDevice).
	gauges   sampler.MemSample
	gaugesAt time.Time
	// energyAt is when the energy counter was last read.
	energyAt time.Time
}

// gaugesEvery is how often a GPU's utilization, temperature, power and
// clocks are read: a screen shows them once a second, and three calls each sample of
// fast mode (20 a second at 50 ms) would be most of its work. Between, a
// sample carries the last readings. A little under a second, so that 1 s
// sampling reads them every time.
const gaugesEvery = 900 * time.Millisecond

// energyEvery is how often the total-energy counter is read where no job's
// energy is asked for (SetEnergyEvery): on an H200 the call costs 2.2 ms of
// CPU, as much as the rest of a sample, which read with the gauges at 1 Hz
// made the watcher a third dearer (a CPU profile with 100 processes,
// bench/gpu/watch.py's tenants: 140 ms of 930 ms in 65 s).
const energyEvery = 30 * time.Second

// errSlot keeps the last error of one kind for a device, so that a device
// that keeps failing the same way does not allocate a new error every poll.
type errSlot struct {
	op  string
	ret nvml.Return
	err error
}

func (s *errSlot) get(op string, ret nvml.Return) error {
	if s.err == nil || s.op != op || s.ret != ret {
		s.op, s.ret, s.err = op, ret, &nvmlError{op: op, ret: ret}
	}
	return s.err
}

// nvmlError is a failed NVML call.
type nvmlError struct {
	op  string
	ret nvml.Return
}

func (e *nvmlError) Error() string { return e.op + ": " + returnText(e.ret) }

// Unwrap lets errors.Is(err, nvml.ERROR_GPU_IS_LOST) work.
func (e *nvmlError) Unwrap() error { return e.ret }

// returnText says what an NVML return code means, in words.
func returnText(r nvml.Return) string {
	switch r {
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost (fell off the bus or needs a reset)"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported by this device"
	case nvml.ERROR_RESET_REQUIRED:
		return "GPU needs a reset"
	case nvml.ERROR_UNINITIALIZED:
		return "NVML is not initialized"
	case nvml.ERROR_TIMEOUT:
		return "timed out"
	}
	return r.Error()
}

// newSource initializes lib and returns the source over its devices, with
// process details from proc (the host's /proc when nil). Tests pass one of
// go-nvml's mock servers as lib.
func newSource(lib nvml.Interface, proc *hostproc.ProcReader) (*nvmlSource, error) {
	if proc == nil {
		proc = hostproc.NewProcReader("")
	}
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, fmt.Errorf("cannot load %s: %w", nvmlLibrary, sampler.ErrNoDriver)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%s loaded but the NVIDIA kernel driver is not running: %w", nvmlLibrary, sampler.ErrNoDriver)
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return nil, fmt.Errorf("NVML: %s does not match the running kernel driver (reboot or reload the driver after an upgrade)", nvmlLibrary)
	default:
		return nil, fmt.Errorf("NVML initialization: %v", ret)
	}
	s := &nvmlSource{
		lib:         lib,
		proc:        proc,
		hasV2:       true,
		pidIdx:      map[uint32]int{},
		prevIdx:     map[uint32]int{},
		utilSeen:    map[uint32]uint64{},
		energyEvery: energyEvery,
	}
	if ext := lib.Extensions(); ext != nil && ext.LookupSymbol("nvmlDeviceGetMemoryInfo_v2") != nil {
		// Calling a symbol the library lacks would kill the process.
		s.hasV2 = false
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		lib.Shutdown()
		return nil, fmt.Errorf("NVML: counting devices: %s", returnText(ret))
	}
	s.info = sampler.SourceInfo{Kind: "nvml"}
	s.info.Hostname, _ = os.Hostname()
	s.info.Hostname = inert.String(s.info.Hostname)
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.info.DriverVersion = inert.String(v)
	}
	if v, ret := lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		s.info.NVMLVersion = inert.String(v)
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS && v > 0 {
		s.info.CUDAVersion = cudaVersionString(v)
	}
	if garblesProcessLists(s.info.DriverVersion) {
		s.info.Warnings = append(s.info.Warnings, fmt.Sprintf(
			"driver %s garbles NVML process lists of more than one process (a bug of 535.43.02 to 535.86.x): per-process memory may be wrong; upgrade the driver to 535.104.05 or later",
			s.info.DriverVersion))
	}
	for i := 0; i < n; i++ {
		g := s.openGPU(i)
		s.gpus = append(s.gpus, g)
		s.migCapable = s.migCapable || g.migCapable
	}
	s.scan()
	return s, nil
}

// cudaVersionString turns NVML's CUDA driver version (12040) into "12.4".
func cudaVersionString(v int) string {
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}

// garblesProcessLists reports whether driver version v is one of those
// (535.43.02 to 535.86.x) whose process-list calls return garbled entries
// when more than one process is listed.
func garblesProcessLists(v string) bool {
	major, rest, ok := strings.Cut(v, ".")
	if !ok || major != "535" {
		return false
	}
	minorStr, _, _ := strings.Cut(rest, ".")
	minor, err := strconv.Atoi(minorStr)
	return err == nil && minor >= 43 && minor <= 86
}

// openGPU reads the static description of GPU i. A GPU that cannot be
// opened is still listed; it reports why on every poll.
func (s *nvmlSource) openGPU(i int) *nvmlDev {
	d := &nvmlDev{info: sampler.DeviceInfo{ID: strconv.Itoa(i), Index: i}}
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		d.openErr = &nvmlError{op: "opening the device", ret: ret}
		return d
	}
	d.h = h
	if name, ret := h.GetName(); ret == nvml.SUCCESS {
		d.info.Name = inert.String(name)
	}
	if uuid, ret := h.GetUUID(); ret == nvml.SUCCESS {
		d.info.UUID = inert.String(uuid)
	}
	if pci, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
		d.info.PCIBusID = cString(pci.BusId[:])
	}
	_, _, ret = h.GetMigMode()
	d.migCapable = ret == nvml.SUCCESS
	return d
}

// cString converts a NUL-terminated C char array, made inert.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return inert.Bytes(out)
}

// scan builds the device list: every GPU, each GPU in MIG mode followed by
// its MIG instances. Devices that stay keep their state. It replaces
// s.info.Devices only when the list changed.
func (s *nvmlSource) scan() {
	old := make(map[string]*nvmlDev, len(s.devs))
	for _, d := range s.devs {
		if d.mig {
			old[d.info.UUID+"\x00"+d.info.ID] = d
		}
	}
	devs := make([]*nvmlDev, 0, len(s.gpus))
	for _, g := range s.gpus {
		devs = append(devs, g)
		if g.h == nil || !g.migCapable {
			continue
		}
		devs = append(devs, s.scanMIG(g, old)...)
	}
	changed := len(devs) != len(s.devs) || s.info.Devices == nil
	for i := 0; !changed && i < len(devs); i++ {
		changed = devs[i] != s.devs[i] || devs[i].info != s.info.Devices[i]
	}
	s.devs = devs
	if changed {
		infos := make([]sampler.DeviceInfo, len(devs))
		for i, d := range devs {
			infos[i] = d.info
		}
		s.info.Devices = infos
	}
}

// scanMIG reads the MIG mode of GPU g and lists its MIG instances.
func (s *nvmlSource) scanMIG(g *nvmlDev, old map[string]*nvmlDev) []*nvmlDev {
	cur, _, ret := g.h.GetMigMode()
	enabled := ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE
	if enabled != g.migParent {
		// What a GPU supports differs in and out of MIG mode.
		g.noUtil, g.noTemp, g.noPower, g.noGraphics, g.noProcUtil, g.noClocks, g.noEnergy = false, false, false, false, false, false, false
		g.migParent = enabled
	}
	g.info.MIGEnabled = enabled
	if !enabled {
		return nil
	}
	n, ret := g.h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil
	}
	var out []*nvmlDev
	for j := 0; j < n; j++ {
		mh, ret := g.h.GetMigDeviceHandleByIndex(j)
		if ret != nvml.SUCCESS {
			continue // an empty slot
		}
		gi, ret := mh.GetGpuInstanceId()
		if ret != nvml.SUCCESS {
			continue
		}
		ci, ret := mh.GetComputeInstanceId()
		if ret != nvml.SUCCESS {
			ci = 0
		}
		d := &nvmlDev{h: mh, mig: true, info: sampler.DeviceInfo{
			Index:    g.info.Index,
			PCIBusID: g.info.PCIBusID,
			MIG:      &sampler.MIGInfo{ParentIndex: g.info.Index, GPUInstanceID: gi, ComputeInstanceID: ci},
		}}
		if name, ret := mh.GetName(); ret == nvml.SUCCESS {
			d.info.Name = inert.String(name)
			if _, p, ok := strings.Cut(d.info.Name, " MIG "); ok {
				d.info.MIG.Profile = p
			}
		}
		if uuid, ret := mh.GetUUID(); ret == nvml.SUCCESS {
			d.info.UUID = inert.String(uuid)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *nvmlDev) int {
		if a.info.MIG.GPUInstanceID != b.info.MIG.GPUInstanceID {
			return a.info.MIG.GPUInstanceID - b.info.MIG.GPUInstanceID
		}
		return a.info.MIG.ComputeInstanceID - b.info.MIG.ComputeInstanceID
	})
	// "GPU/GI"; where a GPU instance holds several compute instances, each
	// gets "GPU/GI/CI" so that IDs stay unique.
	perGI := map[int]int{}
	for _, d := range out {
		perGI[d.info.MIG.GPUInstanceID]++
	}
	for i, d := range out {
		m := d.info.MIG
		d.info.ID = g.info.ID + "/" + strconv.Itoa(m.GPUInstanceID)
		if perGI[m.GPUInstanceID] > 1 {
			d.info.ID += "/" + strconv.Itoa(m.ComputeInstanceID)
		}
		if prev := old[d.info.UUID+"\x00"+d.info.ID]; prev != nil && sameMIG(prev.info.MIG, m) {
			// Keep what was learnt about the instance, and its info pointer.
			prev.h = d.h
			prev.info.Name = d.info.Name
			out[i] = prev
		}
	}
	return out
}

func sameMIG(a, b *sampler.MIGInfo) bool {
	return a != nil && b != nil && *a == *b
}

// Info returns the source's description; the MIG layout is read again every
// migRescanInterval.
func (s *nvmlSource) Info() sampler.SourceInfo {
	if s.rescan && !s.closed {
		s.rescan = false
		s.lastScan = s.lastNow
		s.scan()
	}
	return s.info
}

// ReadMemory reads every device's memory, and utilization, temperature and
// power where supported (those at most once in gaugesEvery). It does not
// allocate while devices keep behaving.
func (s *nvmlSource) ReadMemory(now time.Time, out []sampler.MemSample) error {
	if s.closed {
		return errClosed
	}
	if len(out) != len(s.devs) {
		return fmt.Errorf("NVML source: %d memory slots for %d devices", len(out), len(s.devs))
	}
	s.lastNow = now
	if s.migCapable {
		if s.lastScan.IsZero() {
			s.lastScan = now
		} else if now.Sub(s.lastScan) >= migRescanInterval {
			s.rescan = true
		}
	}
	for i, d := range s.devs {
		if !s.readDevice(d, &out[i]) && d.mig && now.Sub(s.lastScan) >= migStaleRescan {
			// A stale MIG handle: the instance may have been destroyed.
			s.rescan = true
		}
	}
	return nil
}

var errClosed = errors.New("NVML source is closed")

// readDevice fills m for device d and reports whether its memory was read.
func (s *nvmlSource) readDevice(d *nvmlDev, m *sampler.MemSample) bool {
	*m = sampler.MemSample{}
	if d.h == nil {
		m.Err = d.openErr
		return false
	}
	if !s.hasV2 {
		d.memV1 = true
	}
	d.memOK = false
	if !d.memV1 {
		mem, ret := d.h.GetMemoryInfo_v2()
		switch ret {
		case nvml.SUCCESS:
			m.Total, m.Used, m.Free = mem.Total, mem.Used, mem.Free
			m.Reserved, m.HasReserved = mem.Reserved, true
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.memV1 = true
		default:
			m.Err = d.memErr.get("reading memory", ret)
			return false
		}
	}
	if d.memV1 {
		mem, ret := d.h.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			m.Err = d.memErr.get("reading memory", ret)
			return false
		}
		m.Total, m.Used, m.Free = mem.Total, mem.Used, mem.Free
	}
	d.used, d.memOK = m.Used, true
	if d.mig {
		// Utilization, temperature and power belong to the whole GPU.
		return true
	}
	if !due(s.lastNow, d.gaugesAt, gaugesEvery) {
		g := &d.gauges
		m.Util, m.HasUtil, m.TempC, m.HasTemp, m.PowerW, m.HasPower = g.Util, g.HasUtil, g.TempC, g.HasTemp, g.PowerW, g.HasPower
		m.SMClockMHz, m.HasSMClock, m.MemClockMHz, m.HasMemClock = g.SMClockMHz, g.HasSMClock, g.MemClockMHz, g.HasMemClock
		m.EnergyMJ, m.HasEnergy, m.EnergyErr = g.EnergyMJ, g.HasEnergy, g.EnergyErr
		return true
	}
	d.gaugesAt = s.lastNow
	if !d.noUtil {
		u, ret := d.h.GetUtilizationRates()
		switch ret {
		case nvml.SUCCESS:
			m.Util, m.HasUtil = float64(u.Gpu), true
			d.busy = d.busy || u.Gpu > 0
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.noUtil = true
		}
	}
	if !d.noTemp {
		t, ret := d.h.GetTemperature(nvml.TEMPERATURE_GPU)
		switch ret {
		case nvml.SUCCESS:
			m.TempC, m.HasTemp = int(t), true
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.noTemp = true
		}
	}
	if !d.noPower {
		p, ret := d.h.GetPowerUsage()
		switch ret {
		case nvml.SUCCESS:
			m.PowerW, m.HasPower = float64(p)/1000, true
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.noPower = true
		}
	}
	if !d.noEnergy && !due(s.lastNow, d.energyAt, s.energyEvery) {
		m.EnergyMJ, m.HasEnergy, m.EnergyErr = d.gauges.EnergyMJ, d.gauges.HasEnergy, d.gauges.EnergyErr
	} else if !d.noEnergy {
		// The total-energy counter (Volta and later): a job's energy is the
		// difference of two readings.
		d.energyAt = s.lastNow
		e, ret := d.h.GetTotalEnergyConsumption()
		switch ret {
		case nvml.SUCCESS:
			m.EnergyMJ, m.HasEnergy = e, true
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.noEnergy = true
		default:
			m.EnergyErr = d.energyErr.get("reading the energy counter", ret)
		}
	}
	if !d.noClocks {
		sm, ret := d.h.GetClockInfo(nvml.CLOCK_SM)
		switch ret {
		case nvml.SUCCESS:
			m.SMClockMHz, m.HasSMClock = int(sm), true
			if mc, ret := d.h.GetClockInfo(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
				m.MemClockMHz, m.HasMemClock = int(mc), true
			}
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.noClocks = true
		}
	}
	d.gauges = *m
	return true
}

// ReadProcesses lists the compute and graphics processes of every device,
// one entry per (device, PID), with what /proc says about each.
func (s *nvmlSource) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	buf = buf[:0]
	if s.closed {
		return buf, errClosed
	}
	if len(errs) != len(s.devs) {
		return buf, fmt.Errorf("NVML source: %d error slots for %d devices", len(errs), len(s.devs))
	}
	s.spans = s.spans[:0]
	// Every hostStatsEvery the /proc details of every listed process are
	// read again (their CPU and host memory, and a PID reused by a new
	// process); in between only those of PIDs new to a device's list.
	sweep := due(now, s.hostAt, hostStatsEvery)
	for i, d := range s.devs {
		errs[i] = nil
		if d.h == nil {
			errs[i] = d.openErr
			continue
		}
		if d.migParent {
			// The processes of a GPU in MIG mode are listed on its instances.
			continue
		}
		if d.hasListed && d.memOK && d.used == d.listedUsed && !due(now, d.listedAt, listMaxAge) {
			start := len(buf)
			for _, p := range d.listed {
				p.Device = i
				buf = append(buf, p)
			}
			s.spans = append(s.spans, listSpan{d, start, len(buf)})
			continue
		}
		start := len(buf)
		clear(s.pidIdx)
		procs, ret := d.h.GetComputeRunningProcesses()
		switch ret {
		case nvml.SUCCESS:
			buf = s.merge(buf, start, i, procs, "compute")
		case nvml.ERROR_NOT_SUPPORTED:
		default:
			errs[i] = d.procErr.get("listing compute processes", ret)
			d.hasListed = false
			continue
		}
		// The graphics list is read with every list once the device has
		// shown a graphics client, and otherwise where the memory that the
		// compute list does not explain grew (a graphics client appeared)
		// or every graphicsListEvery.
		other := int64(d.used) - int64(listedBytes(buf[start:]))
		grew := d.hasListed && other > d.listedOther
		if !d.noGraphics && (d.graphicsSeen || grew || due(now, d.graphicsAt, graphicsListEvery)) {
			d.graphicsAt = now
			procs, ret = d.h.GetGraphicsRunningProcesses()
			switch ret {
			case nvml.SUCCESS:
				d.graphicsSeen = len(procs) > 0
				buf = s.merge(buf, start, i, procs, "graphics")
				other = int64(d.used) - int64(listedBytes(buf[start:]))
			case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
				d.noGraphics = true
			default:
				errs[i] = d.procErr.get("listing graphics processes", ret)
			}
		}
		if !sweep {
			s.fillKnown(d, buf[start:])
		}
		s.spans = append(s.spans, listSpan{d, start, len(buf)})
		d.listedUsed, d.listedAt, d.hasListed = d.used, now, d.memOK && errs[i] == nil
		d.listedOther = other
	}
	if sweep {
		for i := range buf {
			s.proc.Lookup(buf[i].PID).Fill(&buf[i])
		}
		s.proc.Prune()
		s.hostAt = now
	}
	// Each device keeps its list with those details, for reuse.
	for _, sp := range s.spans {
		sp.d.listed = append(sp.d.listed[:0], buf[sp.start:sp.end]...)
	}
	return buf, nil
}

// listedBytes is the memory of the processes in ps whose use is known.
func listedBytes(ps []sampler.ProcSample) uint64 {
	var n uint64
	for _, p := range ps {
		n += p.Used()
	}
	return n
}

// fillKnown gives the processes of a fresh list of d the /proc details that
// d's previous list had for the same PID, and reads /proc for the others.
func (s *nvmlSource) fillKnown(d *nvmlDev, ps []sampler.ProcSample) {
	clear(s.prevIdx)
	for j, p := range d.listed {
		s.prevIdx[p.PID] = j
	}
	for i := range ps {
		p := &ps[i]
		j, ok := s.prevIdx[p.PID]
		if !ok {
			s.proc.Lookup(p.PID).Fill(p)
			continue
		}
		p.Process = withDriverFields(d.listed[j].Process, p.Process)
	}
}

// withDriverFields is the process host with what the driver's list says
// of it taken from drv (its PID, memory and type); the rest is what /proc
// said of it.
func withDriverFields(host, drv sampler.Process) sampler.Process {
	host.PID, host.UsedBytes, host.Type = drv.PID, drv.UsedBytes, drv.Type
	return host
}

// SetEnergyEvery sets how often the energy counter is read; zero reads it
// with the gauges (gaugesEvery), as `vramtop run` needs for a job's energy.
func (s *nvmlSource) SetEnergyEvery(d time.Duration) { s.energyEvery = d }

// ListedAt is when the process list of device dev was read from the driver
// (sampler.ListTimer); zero where it has none.
func (s *nvmlSource) ListedAt(dev int) time.Time {
	if dev < 0 || dev >= len(s.devs) {
		return time.Time{}
	}
	return s.devs[dev].listedAt
}

// merge adds the processes of one list of device dev to buf, merging a PID
// already listed for the device since start (a process that is both a
// compute and a graphics client is one entry, "compute+graphics").
func (s *nvmlSource) merge(buf []sampler.ProcSample, start, dev int, procs []nvml.ProcessInfo, typ string) []sampler.ProcSample {
	for _, p := range procs {
		var used *uint64
		if p.UsedGpuMemory != math.MaxUint64 {
			used = sampler.Ptr(p.UsedGpuMemory)
		}
		if j, ok := s.pidIdx[p.Pid]; ok && j >= start {
			q := &buf[j]
			if q.Type != typ && q.Type != "compute+graphics" {
				q.Type = "compute+graphics"
			}
			// Both lists report the same memory for such a process: keep the
			// larger, never the sum.
			if used != nil && (q.UsedBytes == nil || *used > *q.UsedBytes) {
				q.UsedBytes = used
			}
			continue
		}
		s.pidIdx[p.Pid] = len(buf)
		buf = append(buf, sampler.ProcSample{Device: dev, Process: sampler.Process{PID: p.Pid, UsedBytes: used, Type: typ}})
	}
	return buf
}

// ReadProcessUtilization reads the SM utilization of each process sampled
// since the previous call. A device with no new samples adds nothing.
func (s *nvmlSource) ReadProcessUtilization(now time.Time, out map[sampler.UtilKey]float64) error {
	if s.closed {
		return errClosed
	}
	for i, d := range s.devs {
		if d.h == nil || d.noProcUtil || d.migParent {
			continue
		}
		if !d.busy && !d.noUtil && !d.mig && d.hasListed {
			// The GPU read 0% at every sample since the last call: so did
			// each of its processes, and the call (1.4–3 ms on an H200,
			// even with no processes) is saved.
			for _, p := range d.listed {
				out[sampler.UtilKey{Device: i, PID: p.PID}] = 0
			}
			continue
		}
		d.busy = false
		samples, ret := d.h.GetProcessUtilization(d.utilTS)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.noProcUtil = true
			continue
		default:
			// ERROR_NOT_FOUND: no new samples. Anything else: try next time.
			continue
		}
		clear(s.utilSeen)
		newest := d.utilTS
		for _, smp := range samples {
			if smp.TimeStamp <= d.utilTS {
				continue
			}
			if ts, ok := s.utilSeen[smp.Pid]; ok && ts >= smp.TimeStamp {
				continue
			}
			s.utilSeen[smp.Pid] = smp.TimeStamp
			out[sampler.UtilKey{Device: i, PID: smp.Pid}] = float64(smp.SmUtil)
			newest = max(newest, smp.TimeStamp)
		}
		d.utilTS = newest
	}
	return nil
}

// Close shuts NVML down, once.
func (s *nvmlSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", returnText(ret))
	}
	return nil
}
