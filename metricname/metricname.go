// Package metricname holds the names of the Prometheus series and labels
// that vramtop serve exports and vramtop fleet reads back, with the
// dcgm-exporter names both understand: one list, so that the writer and the
// reader cannot drift apart.
package metricname

// Label names. The device labels are spelled as dcgm-exporter spells them
// (gpu, UUID, pci_bus_id, device, modelName, hostname, GPU_I_ID,
// GPU_I_PROFILE), so vramtop's series join with dcgm-exporter's; vramtop's
// own families (vramtop_gpu_*) say model_name, in Prometheus's snake_case
// (LabelModelNameOwn), and the DCGM_* drop-ins keep dcgm's modelName. Before its
// change of 2026-05 dcgm-exporter (and vramtop) said Hostname: readers
// accept both (LabelHostnameOld).
const (
	LabelGPU       = "gpu"
	LabelUUID      = "UUID"
	LabelPCIBusID  = "pci_bus_id"
	LabelDevice    = "device"
	LabelModelName = "modelName"
	// LabelModelNameOwn is the model's label on vramtop's own families.
	LabelModelNameOwn = "model_name"
	LabelHostname     = "hostname"
	LabelHostnameOld  = "Hostname"
	LabelGPUInstID    = "GPU_I_ID"
	LabelGPUProfile   = "GPU_I_PROFILE"
	// LabelContainerID is the short container id of a process
	// (Process.Container).
	LabelContainerID = "container_id"
	// LabelHPCJob is the Slurm job of a process, as dcgm-exporter names it.
	LabelHPCJob = "hpc_job"
	// LabelPodUID is the UID of a process's Kubernetes pod. (dcgm-exporter's
	// pod label is the pod's name, which a process's cgroup does not give.)
	LabelPodUID = "pod_uid"
)

// Metric names.
const (
	DCGMFBUsed     = "DCGM_FI_DEV_FB_USED"
	DCGMFBFree     = "DCGM_FI_DEV_FB_FREE"
	DCGMFBReserved = "DCGM_FI_DEV_FB_RESERVED"
	DCGMFBTotal    = "DCGM_FI_DEV_FB_TOTAL"
	DCGMGPUTemp    = "DCGM_FI_DEV_GPU_TEMP"
	DCGMPowerUsage = "DCGM_FI_DEV_POWER_USAGE"
	DCGMGPUUtil    = "DCGM_FI_DEV_GPU_UTIL"
	DCGMSMClock    = "DCGM_FI_DEV_SM_CLOCK"
	DCGMMemClock   = "DCGM_FI_DEV_MEM_CLOCK"

	MemoryTotal        = "vramtop_gpu_memory_total_bytes"
	MemoryUsed         = "vramtop_gpu_memory_used_bytes"
	MemoryFree         = "vramtop_gpu_memory_free_bytes"
	MemoryReserved     = "vramtop_gpu_memory_reserved_bytes"
	MemoryUnattributed = "vramtop_gpu_memory_unattributed_bytes"
	Utilization        = "vramtop_gpu_utilization_ratio"
	ProcessesUnlisted  = "vramtop_gpu_processes_unexported"
	MemoryUnlisted     = "vramtop_gpu_memory_unexported_bytes"
	ProcessMemory      = "vramtop_process_gpu_memory_bytes"
	ProcessUnknown     = "vramtop_process_gpu_memory_unknown"
	Alert              = "vramtop_alert"
	// Claimed is 1 while a vramtop user's claim (package claims) holds a
	// GPU, with the claimer's user label; ClaimedBytes is the size it
	// asked for.
	Claimed      = "vramtop_gpu_claimed"
	ClaimedBytes = "vramtop_gpu_claimed_bytes"
	BuildInfo    = "vramtop_build_info"
	Up           = "vramtop_up"
	SampleAge    = "vramtop_last_sample_age_seconds"
)
