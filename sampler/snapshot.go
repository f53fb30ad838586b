// Package sampler reads GPU memory from a Source (NVML, the demo, a
// recording, a fleet) on a fixed cadence, keeps its history in ring buffers
// and publishes immutable Snapshots for the screen, the exporter, the
// recorder and the advisor.
package sampler

import (
	"time"
	"unicode/utf8"
)

// Snapshot is one published view of every device. It is a value: nothing in
// it is written after it has been published, so any goroutine may read it.
// The JSON form is the `vramtop --once --json` document.
type Snapshot struct {
	Time          time.Time `json:"time"`
	Hostname      string    `json:"hostname"`
	DriverVersion string    `json:"driver_version,omitempty"`
	NVMLVersion   string    `json:"nvml_version,omitempty"`
	CUDAVersion   string    `json:"cuda_version,omitempty"`
	// Source names what produced the numbers: "nvml", "demo", "replay", "fleet".
	Source string `json:"source"`
	// Demo is true when the numbers are the built-in demo, not a real GPU.
	Demo bool `json:"demo,omitempty"`
	// Interval is the device-memory sampling interval in force.
	Interval time.Duration `json:"-"`
	Devices  []Device      `json:"devices"`
	// Warnings are facts about the whole source a user should know
	// (a driver that garbles process lists, a recovered panic, ...).
	Warnings []string `json:"warnings,omitempty"`
	// Err is set when the last poll as a whole failed; the devices then hold
	// their last known values.
	Err string `json:"error,omitempty"`
	// Stale is true while the source has not answered a call for longer
	// than the sampler waits (a hung driver call): the devices then hold
	// the values of the last poll that finished, Err says for how long the
	// source has been silent, and StaleSince is when the call began.
	Stale      bool      `json:"stale,omitempty"`
	StaleSince time.Time `json:"stale_since,omitzero"`
	// Seq counts published snapshots (1 for the first).
	Seq uint64 `json:"-"`
	// ProcessesPending is true in a first snapshot published before the
	// process lists were read (Config.MemoryFirst): the devices have their
	// memory, no processes and no Unattributed yet. The next snapshot, at
	// once, has them.
	ProcessesPending bool `json:"-"`
	// ReportedAlerts are the alerts the source says are in force (a
	// fleet host's own vramtop_alert series); the advisor adds them to
	// its own, so that they show from the first snapshot.
	ReportedAlerts []ReportedAlert `json:"-"`
}

// ReportedAlert is an alert a source reports (AlertReporter).
type ReportedAlert struct {
	Rule     string
	Severity string // "info", "warn" or "crit"
	DeviceID string
	PID      uint32 // 0 for the device
	Message  string
}

// Device is one GPU, or one MIG instance of a GPU. Optional values are nil
// where the device does not support them: absent, never zero.
//
// As for a Process, json names a field in `vramtop --json` and rec in a
// recording's lines (a field without one is not recorded there; the static
// ones are in its header, DeviceInfo). RecentPeakUsed and ListedAt are
// recorded relative to the line (recorder.DevRec).
type Device struct {
	// ID is the stable key of the device in this source: "0" for GPU 0,
	// "0/3" for GPU instance 3 of GPU 0 in MIG mode. Fleet IDs are
	// prefixed with the host: "node1:0".
	ID    string `json:"id" rec:"id"`
	Index int    `json:"index"`
	// Hostname is set when devices of several hosts share one snapshot (fleet).
	Hostname string `json:"hostname,omitempty"`
	Name     string `json:"name"`
	UUID     string `json:"uuid,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`

	MemoryTotal uint64 `json:"memory_total_bytes" rec:"tot"`
	MemoryUsed  uint64 `json:"memory_used_bytes" rec:"used"`
	MemoryFree  uint64 `json:"memory_free_bytes" rec:"free"`
	// MemoryReserved is the driver's reservation (GetMemoryInfo_v2); nil
	// where only the v1 call is supported.
	MemoryReserved *uint64 `json:"memory_reserved_bytes,omitempty" rec:"res,omitempty"`
	// Unattributed is used memory that no listed process accounts for:
	// processes in other containers or PID namespaces, leaked contexts, the
	// driver. Nil when it cannot be computed (a process with unknown usage).
	Unattributed *uint64 `json:"unattributed_bytes,omitempty" rec:"una,omitempty"`

	UtilizationPercent *float64 `json:"utilization_percent,omitempty" rec:"util,omitempty"`
	TemperatureC       *int     `json:"temperature_celsius,omitempty" rec:"temp,omitempty"`
	PowerWatts         *float64 `json:"power_watts,omitempty" rec:"pw,omitempty"`
	// EnergyMillijoules is the GPU's total-energy counter: millijoules
	// since the driver loaded (it starts again after a driver reload or a
	// GPU reset). It is read with the power, so successive snapshots may
	// carry the same reading. Nil where the GPU has none; EnergyError
	// says why where reading it failed.
	EnergyMillijoules *uint64 `json:"energy_millijoules,omitempty" rec:"en,omitempty"`
	EnergyError       string  `json:"energy_error,omitempty" rec:"ene,omitempty"`
	// SMClockMHz and MemoryClockMHz are the current SM and memory clocks.
	SMClockMHz     *int `json:"sm_clock_mhz,omitempty" rec:"smc,omitempty"`
	MemoryClockMHz *int `json:"memory_clock_mhz,omitempty" rec:"mc,omitempty"`

	// MIGEnabled is true on a GPU in MIG mode; its memory and processes
	// then belong to the MIG instances listed after it.
	MIGEnabled bool     `json:"mig_enabled,omitempty"`
	MIG        *MIGInfo `json:"mig,omitempty"`

	Processes []Process `json:"processes"`
	// ListedAt is when the process list shown (and so Unattributed) was
	// read: at the default 1 s interval within the last second, older at a
	// slower interval, where the list failed (the last good one is kept) or
	// for a fleet host that is down. Zero where the device has no list.
	ListedAt time.Time `json:"listed_at,omitzero"`
	// NoProcessList is true where the source cannot list this device's
	// processes (a host seen only through dcgm-exporter).
	NoProcessList bool `json:"no_process_list,omitempty"`
	// ProcessesNotRead is true where the source has not read the device's
	// processes (a fleet reads those of the host open on screen only):
	// Processes is then empty and Unattributed nil, which says nothing of
	// whether it has any.
	ProcessesNotRead bool `json:"processes_not_read,omitempty"`
	// OmittedProcesses counts the device's processes the source knows of
	// but does not list (in the fleet, those a host's exporter leaves out
	// over serve --max-process-series); OmittedBytes is the memory they use,
	// nil where the source does not say. Unattributed does not count it.
	OmittedProcesses int     `json:"omitted_processes,omitempty"`
	OmittedBytes     *uint64 `json:"omitted_bytes,omitempty"`

	// Err marks a device that failed this poll (lost, no permission, ...);
	// the other devices keep reporting.
	Err string `json:"error,omitempty" rec:"err,omitempty"`

	// History is the device's used memory over the history window.
	History Window `json:"-"`
	// PeakUsed is the highest used memory seen in the history window.
	PeakUsed uint64 `json:"memory_used_peak_bytes,omitempty"`
	// RecentPeakUsed is the highest used memory sampled since the previous
	// snapshot: with fast sampling, a spike shorter than the publishing
	// interval still shows here (and in History).
	RecentPeakUsed uint64 `json:"memory_used_recent_peak_bytes,omitempty"`
}

// DeviceInfo is the static description of a device: the fields of the
// Device of the same names (Device.SetInfo and Device.Info copy them), and
// as a recording's header lists it (the json names).
type DeviceInfo struct {
	ID         string   `json:"id"`
	Index      int      `json:"index"`
	Hostname   string   `json:"hostname,omitempty"`
	Name       string   `json:"name,omitempty"`
	UUID       string   `json:"uuid,omitempty"`
	PCIBusID   string   `json:"pci_bus_id,omitempty"`
	MIGEnabled bool     `json:"mig_enabled,omitempty"`
	MIG        *MIGInfo `json:"mig,omitempty"`
	// NoProcessList is true where the source cannot list the device's
	// processes (a host seen only through dcgm-exporter): its unattributed
	// memory is then unknown, not all of it.
	NoProcessList bool `json:"no_proc,omitempty"`
}

// MemSample is one reading of a device, as a source takes it (Source.
// ReadMemory, which must not allocate): the Device's readings, a Has flag
// where one is optional; fill makes them the Device's.
type MemSample struct {
	Total, Used, Free uint64
	Reserved          uint64
	HasReserved       bool
	Util              float64 // percent
	HasUtil           bool
	TempC             int
	HasTemp           bool
	PowerW            float64
	HasPower          bool
	// EnergyMJ is the GPU's total-energy counter (NVML's
	// nvmlDeviceGetTotalEnergyConsumption): millijoules since the driver
	// loaded. EnergyErr is set where reading it failed this time (HasEnergy
	// is then false); neither where the GPU has no counter.
	EnergyMJ  uint64
	HasEnergy bool
	EnergyErr error
	// SMClockMHz and MemClockMHz are the current SM and memory clocks.
	SMClockMHz, MemClockMHz int
	HasSMClock, HasMemClock bool
	// Err marks this device as failed for this reading.
	Err error
}

// fill gives d the values of the reading: each one the device has (its Has
// flag set) becomes the Device's field. The reading's Err is the sampler's
// to say (with the process list's).
func (m *MemSample) fill(d *Device) {
	d.MemoryTotal, d.MemoryUsed, d.MemoryFree = m.Total, m.Used, m.Free
	if m.HasReserved {
		d.MemoryReserved = Ptr(m.Reserved)
	}
	if m.HasUtil {
		d.UtilizationPercent = Ptr(m.Util)
	}
	if m.HasTemp {
		d.TemperatureC = Ptr(m.TempC)
	}
	if m.HasPower {
		d.PowerWatts = Ptr(m.PowerW)
	}
	if m.HasEnergy {
		d.EnergyMillijoules = Ptr(m.EnergyMJ)
	}
	if m.EnergyErr != nil {
		d.EnergyError = m.EnergyErr.Error()
	}
	if m.HasSMClock {
		d.SMClockMHz = Ptr(m.SMClockMHz)
	}
	if m.HasMemClock {
		d.MemoryClockMHz = Ptr(m.MemClockMHz)
	}
}

// MIGInfo describes a MIG instance.
type MIGInfo struct {
	ParentIndex       int    `json:"parent_index"`
	GPUInstanceID     int    `json:"gpu_instance_id"`
	ComputeInstanceID int    `json:"compute_instance_id"`
	Profile           string `json:"profile,omitempty"`
}

// Process is one process holding memory on one device: what a source
// lists (ProcSample), the sampler publishes and the recorder writes.
//
// Each field's tags say where it goes: json its name in `vramtop --json`;
// rec its name in a recording (recorder: written, and compared for the
// delta lines, from this tag alone; a field without one is not recorded);
// sampler:"live" marks a figure of the running process, which an exited
// one no longer shows.
type Process struct {
	PID uint32 `json:"pid" rec:"pid"`
	// User is the login name of the process's real UID; empty when the
	// process is not visible from here.
	User string  `json:"user,omitempty" rec:"user,omitempty"`
	UID  *uint32 `json:"uid,omitempty" rec:"uid,omitempty"`
	// Command is the command line, arguments separated by spaces.
	Command string `json:"command,omitempty" rec:"cmd,omitempty"`
	// UsedBytes is nil when the driver does not report it (shown as n/a).
	UsedBytes *uint64 `json:"used_bytes,omitempty" rec:"used,omitempty" sampler:"live"`
	// Type is "compute", "graphics" or "compute+graphics".
	Type      string `json:"type" rec:"type,omitempty"`
	Container string `json:"container,omitempty" rec:"ct,omitempty"`
	// Job names the batch job, pod or container the process belongs to, read
	// from its cgroup; nil when it belongs to none that is known.
	Job *Job `json:"job,omitempty" rec:"job,omitempty"`
	// CPUPercent is the process's CPU use on the host (100 = one core)
	// since the previous process poll; nil until two polls have seen it.
	CPUPercent *float64 `json:"cpu_percent,omitempty" rec:"cpu,omitempty" sampler:"live"`
	// HostMemoryBytes is the process's resident host memory (RSS).
	HostMemoryBytes *uint64 `json:"host_memory_bytes,omitempty" rec:"hm,omitempty" sampler:"live"`
	// Visible is false for a PID that NVML reports but /proc here does not
	// show: it lives in another PID namespace (a container); naming it needs
	// the host PID namespace.
	Visible bool `json:"visible" rec:"vis,omitempty"`
	// StartTime is when the process started (from /proc); zero if unknown.
	StartTime time.Time `json:"start_time,omitzero" rec:"st,omitempty"`
	// UtilizationPercent is the process's SM utilization where known.
	UtilizationPercent *float64 `json:"utilization_percent,omitempty" rec:"util,omitempty" sampler:"live"`

	// Fields kept by the sampler across polls. In a recording, LastSeen
	// is left out (zero) where it is the line's own time.
	FirstSeen time.Time `json:"first_seen,omitzero" rec:"fs,omitempty"`
	LastSeen  time.Time `json:"-" rec:"ls,omitempty"`
	PeakBytes uint64    `json:"used_peak_bytes,omitempty" rec:"pk,omitempty"`
	Exited    bool      `json:"exited,omitempty" rec:"x,omitempty"`
	History   Window    `json:"-"`
}

// Job is what a process's cgroup says it belongs to on a shared server.
// Each field is empty where not known.
type Job struct {
	// SlurmJobID and SlurmStep: the Slurm job ("4242") and step ("0",
	// "batch", "extern").
	SlurmJobID string `json:"slurm_job_id,omitempty"`
	SlurmStep  string `json:"slurm_step,omitempty"`
	// K8sPodUID is the Kubernetes pod's UID; K8sQOS its QoS class
	// ("guaranteed", "burstable", "besteffort").
	K8sPodUID string `json:"k8s_pod_uid,omitempty"`
	K8sQOS    string `json:"k8s_qos,omitempty"`
	// ContainerID is the full container id (Docker, containerd, CRI-O,
	// podman); Runtime names which ("docker", "containerd", "crio", "podman").
	ContainerID string `json:"container_id,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
}

// Name is the job's short name for a table cell: "slurm 4242.0",
// "pod 1a2b3c4d", "docker 9b1e4a7c2f5d"; "" when nothing is known.
func (j *Job) Name() string {
	if j == nil {
		return ""
	}
	// short keeps n bytes, cut at the start of a character: half of one
	// is not UTF-8, and its continuation bytes (0x80-0xBF) read as C1
	// controls to a terminal that does not decode UTF-8.
	short := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	}
	switch {
	case j.SlurmJobID != "":
		if j.SlurmStep != "" {
			return "slurm " + j.SlurmJobID + "." + j.SlurmStep
		}
		return "slurm " + j.SlurmJobID
	case j.K8sPodUID != "":
		return "pod " + short(j.K8sPodUID, 8)
	case j.ContainerID != "":
		rt := j.Runtime
		if rt == "" {
			rt = "container"
		}
		return rt + " " + short(j.ContainerID, 12)
	}
	return ""
}

// Used returns the process's memory, 0 when unknown.
func (p Process) Used() uint64 {
	if p.UsedBytes == nil {
		return 0
	}
	return *p.UsedBytes
}

// Key identifies a process across polls: a PID reused by a new process is a
// new key.
func (p Process) Key(deviceID string) ProcessKey {
	return ProcessKey{Device: deviceID, PID: p.PID, Start: p.StartTime.UnixNano()}
}

// ProcessKey identifies a process on a device across polls.
type ProcessKey struct {
	Device string
	PID    uint32
	Start  int64
}

// SetInfo gives d the static description di.
func (d *Device) SetInfo(di DeviceInfo) {
	d.ID, d.Index, d.Hostname, d.Name, d.UUID, d.PCIBusID = di.ID, di.Index, di.Hostname, di.Name, di.UUID, di.PCIBusID
	d.MIGEnabled, d.MIG, d.NoProcessList = di.MIGEnabled, di.MIG, di.NoProcessList
}

// Info is d's static description.
func (d *Device) Info() DeviceInfo {
	return DeviceInfo{ID: d.ID, Index: d.Index, Hostname: d.Hostname, Name: d.Name, UUID: d.UUID, PCIBusID: d.PCIBusID,
		MIGEnabled: d.MIGEnabled, MIG: d.MIG, NoProcessList: d.NoProcessList}
}

// UsedPercent is the device's used memory as a percentage of its total.
func (d Device) UsedPercent() float64 {
	if d.MemoryTotal == 0 {
		return 0
	}
	return float64(d.MemoryUsed) / float64(d.MemoryTotal) * 100
}

// Device returns the device with the given ID.
func (s Snapshot) Device(id string) (Device, bool) {
	for _, d := range s.Devices {
		if d.ID == id {
			return d, true
		}
	}
	return Device{}, false
}

// Ptr returns a pointer to v, for the optional fields.
func Ptr[T any](v T) *T { return &v }
