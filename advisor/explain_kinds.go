package advisor

import (
	"fmt"
	"strconv"
	"strings"
)

// Messages of memory other than the card's (host RAM, pinned host memory,
// a kernel's shared memory), failures that are memory exhaustion under
// another name, and warnings that come before one.

// PyTorch's older message with its head cut off: "(GPU 0; 14.76 GiB total
// capacity; 12.00 GiB already allocated; 1.75 MiB free; 12.50 GiB reserved
// in total by PyTorch)", perhaps after "Tried to allocate 20.00 MiB".
var (
	ptHeadless = re(`(?:Tried\s*to\s*allocate\s*` + sz + `\s*)?\(\s*GPU\s*\d+\s*;\s*` + sz + `\s*total\s*capacity`)
	ptTried    = re(`^Tried\s*to\s*allocate\s*` + sz)
)

func parsePyTorchHeadless(seg, line string, e *Explanation) {
	if g := ptTried.FindStringSubmatchIndex(seg); g != nil {
		setSize(&e.RequestedBytes, submatches(seg, g), 1)
		seg = seg[g[1]:]
	}
	parsePyTorchOld(seg, e)
}

// The BFC allocator's statistics, printed when it runs out (TensorFlow,
// XLA): "Stats: Limit: 10619240448 InUse: 10563... MaxInUse: ... NumAllocs:
// ... MaxAllocSize: ..." (one field a line; no units: bytes).
var (
	bfcStatsAnchor = re(`Stats:\s*(?:\*\*)?Limit:\s*\d+`)
	bfcField       = re(`(Limit|InUse|MaxInUse|NumAllocs|MaxAllocSize|LargestFreeBlock):\s*(\d+)`)
)

func parseBFCStats(seg, line string, e *Explanation) {
	e.kind, e.stats = kindAllocator, true
	// TensorFlow's and XLA's CUDA async allocator print the same: the
	// message before says which.
	e.Framework = ""
	frameworkFromPath(line, e)
	// Limit 0 (the CUDA async allocator) is no limit; LargestFreeBlock 0
	// is not reported.
	fields := map[string]**uint64{"Limit": &e.AllowedBytes, "InUse": &e.AllocatedByFrameworkBytes, "MaxInUse": &e.PeakAllocatedBytes,
		"NumAllocs": &e.NumAllocs, "MaxAllocSize": &e.MaxAllocSizeBytes, "LargestFreeBlock": &e.LargestFreeBlockBytes}
	seen := map[string]bool{}
	for _, g := range bfcField.FindAllStringSubmatch(head(seg, 800), -1) {
		if seen[g[1]] {
			break // the next dump
		}
		seen[g[1]] = true
		if g[2] == "0" && (g[1] == "Limit" || g[1] == "LargestFreeBlock") {
			continue
		}
		setUint(fields[g[1]], g[2])
	}
}

// cuDNN errors that are often memory exhaustion in disguise: cuDNN
// reports a failed allocation of its handle or workspace as
// NOT_INITIALIZED, INTERNAL_ERROR, NOT_SUPPORTED or EXECUTION_FAILED. Read
// as one only next to a memory hint.
var (
	cudnnStatus = re(`(?:CUDNN|CUBLAS)_STATUS_(?:NOT_INITIALIZED|INTERNAL_ERROR|NOT_SUPPORTED|EXECUTION_FAILED)`)
	memoryHint  = re(`(?i:out\s*of\s*memory|out_of_memory|memory\s*usage:|not\s*enough\s*memory|insufficient\s*memory|failed\s*to\s*allocate|gpu\s*memory|cuda\s*memory|\bOOM\b|memory\s*allocation\s*failed|bytes\s*free)`)
	// TensorFlow after a failed cuDNN handle: "Memory usage: 1048576 bytes
	// free, 8589934592 bytes total."
	cudnnUsage = re(`Memory\s*usage:\s*(\d+)\s*bytes\s*free,\s*(\d+)\s*bytes\s*total`)
)

// cudnnHintReach is how far around a cuDNN error a memory hint is looked
// for.
const cudnnHintReach = 1500

func acceptCuDNN(c anchorCtx) bool {
	return cudnnHintAt(c.text, c.at) != ""
}

// cudnnHintAt returns the memory hint nearest the cuDNN error at p, or "".
func cudnnHintAt(text string, p int) string {
	lo, hi := max(0, p-cudnnHintReach), min(len(text), p+cudnnHintReach)
	best, dist := "", cudnnHintReach+1
	for _, m := range memoryHint.FindAllStringIndex(text[lo:hi], -1) {
		d := lo + m[0] - p
		if d < 0 {
			d = -d
		}
		if d < dist {
			best, dist = text[lo+m[0]:lo+m[1]], d
		}
	}
	return strings.Join(strings.Fields(best), " ")
}

func parseCuDNNStatus(seg, line string, e *Explanation) {
	status := cudnnStatus.FindString(seg)
	lib := "cuDNN"
	if strings.HasPrefix(status, "CUBLAS") {
		e.Framework, lib = "cublas", "cuBLAS"
	}
	e.Confidence = "likely"
	e.Reason = status + " is what " + lib + " reports when it cannot allocate its handle or workspace; the log says \"" +
		cudnnHintAt(e.ctx.text, e.ctx.at) + "\" next to it"
	if g := cudnnUsage.FindStringSubmatch(head(seg, 600)); g != nil {
		setUint(&e.FreeBytes, g[1])
		setUint(&e.TotalBytes, g[2])
	}
	e.key = "cudnn|" + status
}

// DeepSpeed ZeRO-3: "[WARNING] [stage3.py:2069:step] 27 pytorch allocator
// cache flushes since last step. this happens when there is high memory
// pressure ...": not a failure, but what comes before one.
var dsFlushes = re(`(\d+)\s*pytorch\s*allocator\s*cache\s*flushes\s*since\s*last\s*step`)

func parseDeepSpeedFlushes(seg, line string, e *Explanation) {
	e.Kind = "memory_pressure"
	if g := dsFlushes.FindStringSubmatch(seg); g != nil {
		setUint(&e.CacheFlushes, g[1])
	}
	e.key = "deepspeed-flushes"
}

// Host RAM. PyTorch's CPU allocator: "DefaultCPUAllocator: can't allocate
// memory: you tried to allocate 3077222400 bytes. Error code 12 (Cannot
// allocate memory)"; on Windows "not enough memory".
// PyTorch ≤ 1.1 printed the request in whole GiB: "you tried to allocate
// 12GB. Buy new RAM!".
var cpuAllocRequest = re(`you\s*tried\s*to\s*allocate\s*(\d+)\s*(bytes|GB)`)

func parseCPUAllocator(seg, line string, e *Explanation) {
	e.Kind = "host"
	if g := cpuAllocRequest.FindStringSubmatch(head(seg, 300)); g != nil {
		if v, ok := toBytes(g[1], map[string]string{"bytes": "B", "GB": "GiB"}[g[2]]); ok {
			e.RequestedBytes = &v
		}
	}
}

// The Linux OOM killer: "Out of memory: Killed process 25315 (python3)
// total-vm:53312244kB, anon-rss:31451456kB, ..."; cgroups: "Memory cgroup
// out of memory: Killed process ...".
var (
	kernelKilled = re(`Kill(?:ed)?\s*process\s*(\d+)\s*\(([^)]{0,64})\)`)
	kernelRSS    = re(`anon-rss:\s*(\d+)\s*kB`)
)

func parseKernelOOM(seg, line string, e *Explanation) {
	e.Kind = "host"
	seg = head(seg, 400)
	g := kernelKilled.FindStringSubmatchIndex(seg)
	if g == nil {
		return
	}
	pid, err := strconv.ParseUint(seg[g[2]:g[3]], 10, 64)
	if err != nil {
		return
	}
	p := ProcessMemory{PID: pid, Name: strings.TrimSpace(seg[g[4]:g[5]])}
	if r := kernelRSS.FindStringSubmatch(seg[g[1]:]); r != nil {
		if kb, err := strconv.ParseUint(r[1], 10, 64); err == nil && kb < 1<<54 {
			p.Bytes = kb << 10
		}
	}
	e.Processes = []ProcessMemory{p}
	e.key = "kernel|" + seg[g[2]:g[3]]
}

// Host RAM, as Python, NumPy, the DataLoader and the JVM report it.
var (
	// NumPy: "numpy.core._exceptions._ArrayMemoryError: Unable to allocate
	// 58.0 GiB for an array with shape (176351, 176460) and data type
	// uint16" (sizes of 100 and more print as "201. GiB").
	numpyAlloc = re(`Unable\s*to\s*allocate\s*(?:(\d+(?:\.\d*)?)\s*(KiB|MiB|GiB|TiB|PiB|B|bytes)\s*for\s*)?(?:an\s*)?array\s*with\s*shape\s*\(([\d,\s]{0,200})\)\s*and\s*data\s*type\s*(\w+)`)
	// A Python MemoryError alone on its line (the traceback's last line).
	pyMemoryErrorLine = re(`^\s*(?:E\s+)?(?:builtins\.)?MemoryError\s*(?::.*)?$`)
)

func acceptPyMemoryError(line string) bool { return pyMemoryErrorLine.MatchString(line) }

// parseHostRAM reads a host-memory message without numbers (Python's
// MemoryError and Errno 12, the JVM's OutOfMemoryError).
func parseHostRAM(seg, line string, e *Explanation) {
	e.Kind = "host"
	e.key = "host|" + e.Framework
}

func parseNumPy(seg, line string, e *Explanation) {
	parseHostRAM(seg, line, e)
	if g := numpyAlloc.FindStringSubmatch(head(seg, 400)); g != nil {
		if g[1] != "" {
			if v, ok := toBytes(g[1], g[2]); ok {
				e.RequestedBytes = &v
			}
		}
		e.Shape = "[" + strings.Join(shapeDims(g[3]), ",") + "]"
		e.DType = g[4]
	}
}

// parseDataLoader reads a DataLoader worker's death: a bus error is the
// shared memory (/dev/shm) batches pass through, SIGKILL most often the
// OOM killer.
func parseDataLoader(seg, line string, e *Explanation) {
	parseHostRAM(seg, line, e)
	if dataLoaderKilled.MatchString(head(seg, 120)) {
		e.Confidence = "likely"
		e.Reason = "a DataLoader worker was ended by SIGKILL, which is most often the kernel's OOM killer when the machine's RAM runs out"
		return
	}
	e.key = "shm"
}

var dataLoaderKilled = re(`signal:\s*Killed`)

// Kubernetes: a container that passed its memory limit ("Reason:
// OOMKilled", "Exit Code: 137"): the limit is the cgroup's, not the node's
// RAM.
func parseKubernetes(seg, line string, e *Explanation) {
	parseHostRAM(seg, line, e)
}

// A process killed by SIGKILL, as a shell or launcher reports it: "Killed"
// alone on a line, "bash: line 1: 1921 Killed  python train.py", "exit code
// 137", torchrun's "exitcode: -9". Most often the kernel's OOM killer.
var (
	shellKilledLine = re(`^\s*(?:\[\d+\]\+?\s+|[^\s:]+:\s*line\s*\d+:\s*\d+\s+)?Killed(?:\s{2,}\S.*|\s*)$`)
	exitSIGKILL     = re(`(?i:exit(?:ed)?\s*(?:with\s*)?(?:code|status)|exitcode|exit_code|return\s*code|returncode|non-zero\s*exit\s*status)\s*[:=]?\s*(?:137|-9)\b|(?i:signal\s*9\s*\(SIGKILL\)|Signals\.SIGKILL|status\s*of\s*9\s*\(SIGKILL\))`)
	ranOutOfMemory  = re(`(?i:ran\s*out-?\s*of-?\s*memory)`)
)

func acceptShellKilled(line string) bool { return shellKilledLine.MatchString(line) }

func parseKilled(seg, line string, e *Explanation) {
	e.Kind = "host"
	e.Confidence = "likely"
	e.Reason = "the process was ended by SIGKILL, which is most often the kernel's OOM killer when the machine's RAM runs out " +
		"(dmesg shows \"Killed process\" if so)"
	if ranOutOfMemory.MatchString(head(seg, 200)) || ranOutOfMemory.MatchString(line) {
		e.Confidence, e.Reason = "", ""
	}
	e.key = "sigkill"
}

// Pinned (page-locked) host memory: TensorFlow's "could not allocate pinned
// host memory of size: 34359738368", llama.cpp's "failed to allocate
// 1900.00 MiB of pinned memory: out of memory", cudaHostAlloc failures
// (DeepSpeed's offload buffers).
var (
	pinnedTF   = re(`^could\s*not\s*allocate\s*pinned\s*host\s*memory\s*of\s*size:\s*(\d+)`)
	pinnedSize = re(`(?:failed\s*to\s*allocate|allocate)\s*` + sz + `\s*of\s*pinned\s*memory`)
)

func parsePinned(seg, line string, e *Explanation) {
	e.Host = true
	e.kind = kindAllocator
	frameworkFromPath(line, e)
	if strings.Contains(seg[:min(len(seg), 40)], "ggml") || strings.Contains(line, "ggml") {
		e.Framework = "llama.cpp"
	}
	if strings.Contains(strings.ToLower(line), "deepspeed") {
		e.Framework = "deepspeed"
	}
	seg = head(seg, 400)
	if g := pinnedTF.FindStringSubmatch(seg); g != nil {
		setUint(&e.RequestedBytes, g[1])
	} else if g := pinnedSize.FindStringSubmatch(seg); g != nil {
		setSize(&e.RequestedBytes, g, 1)
	}
}

// Triton: "triton.runtime.errors.OutOfResources: out of resource: shared
// memory, Required: 98304, Hardware limit: 65536." A kernel's on-chip
// shared memory, per block: not the card's memory.
var (
	tritonRequired = re(`Required:\s*(\d+)`)
	tritonLimit    = re(`Hardware\s*limit(?:ation)?:\s*(\d+)`)
)

func parseTriton(seg, line string, e *Explanation) {
	e.Kind = "gpu_shared_memory"
	seg = head(seg, 300)
	if g := tritonRequired.FindStringSubmatch(seg); g != nil {
		setUint(&e.RequestedBytes, g[1])
	}
	if g := tritonLimit.FindStringSubmatch(seg); g != nil {
		setUint(&e.AllowedBytes, g[1])
	}
	e.key = "triton"
}

// MXNet: "mxnet.base.MXNetError: [18:53:03]
// src/storage/./pooled_storage_manager.h:157: cudaMalloc failed: out of
// memory".
func parseMXNet(seg, line string, e *Explanation) { e.key = "mxnet" }

// diagnoseKind fills Diagnosis and Remedies for memory other than the
// card's and for warnings; ok is false for the card's memory.
func diagnoseKind(e *Explanation) (ok bool) {
	var why []string
	var list []RemedyEstimate
	switch e.Kind {
	case "host":
		why, list = e.diagnoseHost()
	case "pinned_host":
		why, list = e.diagnosePinned()
	case "gpu_shared_memory":
		why, list = e.diagnoseSharedMemory()
	case "memory_pressure":
		why, list = e.diagnosePressure()
	default:
		return false
	}
	e.Derived = e.derive()
	e.Diagnosis = strings.Join(why, " ")
	e.Remedies = capList(list)
	return true
}

func remedy(name, saving, cost, effort, how string) RemedyEstimate {
	return RemedyEstimate{Name: name, Saving: saving, Cost: cost, Effort: effort, How: how}
}

// diagnoseHost: the machine's RAM ran out.
func (e *Explanation) diagnoseHost() ([]string, []RemedyEstimate) {
	f := e.spec()
	s := "The machine's RAM ran out, not GPU memory"
	if f.host != nil {
		s = f.host(e, s)
	} else {
		s += "."
	}
	if e.Confidence == "likely" {
		s = "Likely the machine's RAM ran out, not GPU memory: " + e.Reason + "."
	}
	check := "run `free -h` during the job and `dmesg | grep -i 'killed process'` after it."
	if e.key == "shm" {
		check = "`df -h /dev/shm` during the job shows how full it is; fewer DataLoader workers use less of it."
	}
	list := []RemedyEstimate{
		remedy("load less into RAM", "the dataset or model copies held in RAM", "some I/O speed", "medium",
			"memory-map or stream the dataset instead of loading it whole; load checkpoints with mmap=True / map_location straight to the GPU"),
		remedy("fewer data loader workers", "each worker's copy of the dataset", "slower input", "easy",
			"DataLoader(num_workers=...) lower; persistent_workers=False"),
		remedy("more RAM or swap", "what the job lacks", "money, or slow swapping", "easy",
			"a machine or container with a higher memory limit (in a container the limit is the cgroup's, not the host's)"),
	}
	if f.hostRemedies != nil {
		list = append(list, f.hostRemedies(e)...)
	}
	return []string{s, "Freeing GPU memory does not help; " + check}, list
}

// diagnosePinned: page-locked host memory ran out.
func (e *Explanation) diagnosePinned() ([]string, []RemedyEstimate) {
	s := "Pinned (page-locked) host memory ran out: RAM that the driver locks for fast transfers to the GPU, not GPU memory"
	if e.RequestedBytes != nil {
		s += fmt.Sprintf("; %s could not be locked", FormatBytes(*e.RequestedBytes))
	}
	return []string{s + ".", "Locked memory is limited by the machine's RAM and by the memlock limit (ulimit -l; a container's own limit)."},
		[]RemedyEstimate{
			remedy("pin less memory", "the pinned buffers", "slower host-to-GPU copies", "easy",
				"DataLoader(pin_memory=False); DeepSpeed offload: \"pin_memory\": false under offload_optimizer / offload_param; TensorFlow: TF_GPU_HOST_MEM_LIMIT_IN_MB"),
			remedy("raise the locked-memory limit", "room for the pinned buffers", "none", "easy",
				"ulimit -l unlimited (docker run --ulimit memlock=-1)"),
			remedy("more RAM", "what the job lacks", "money", "easy", "a machine with more RAM, or fewer jobs on it"),
		}
}

// diagnoseSharedMemory: a kernel's on-chip shared memory.
func (e *Explanation) diagnoseSharedMemory() ([]string, []RemedyEstimate) {
	s := "A Triton kernel needs more shared memory per block than the GPU has"
	if e.RequestedBytes != nil && e.AllowedBytes != nil {
		s += fmt.Sprintf(": %d bytes required, %d the hardware limit", *e.RequestedBytes, *e.AllowedBytes)
	}
	return []string{s + ".", "Shared memory is on-chip memory of each streaming multiprocessor, not the card's memory: freeing GPU memory or a smaller batch does not help; the kernel's block sizes or pipeline stages decide it."},
		[]RemedyEstimate{
			remedy("smaller blocks or fewer stages", "the kernel's shared memory", "some kernel speed", "medium",
				"lower BLOCK_M/BLOCK_N/BLOCK_K or num_stages in the kernel's config (or its autotune configs)"),
			remedy("a newer release of the library", "the kernel's shared memory, where it learnt the smaller limit of this GPU", "none", "easy",
				"upgrade the package that ships the kernel; many add configs for consumer GPUs"),
			remedy("another code path", "all of it", "speed", "easy",
				"turn the Triton kernel off (the library's fallback, or torch.compile off for that module)"),
			remedy("a GPU with more shared memory per block", "all of it", "money", "hard",
				"data-centre GPUs allow more per block (e.g. 163 KiB on A100, 227 KiB on H100)"),
		}
}

// diagnosePressure: a warning that the card is nearly full.
func (e *Explanation) diagnosePressure() ([]string, []RemedyEstimate) {
	var s string
	if f := e.spec(); f.pressure != nil {
		s = f.pressure(e)
	} else {
		s = e.frameworkName() + "'s allocator could not get memory for an operation that can do without it (it says this is not a failure)"
		if e.RequestedBytes != nil {
			s += fmt.Sprintf(": %s on %s", FormatBytes(*e.RequestedBytes), e.gpu())
		}
	}
	list := FragmentationRemedies(0)
	list = append(list,
		remedy("flush on every rank at once", "stalls of ranks waiting for one that flushes", "a little time per step", "easy",
			"get_accelerator().empty_cache() in the training loop, on all ranks"),
		remedy("ZeRO-3: keep fewer parameters live", "the gathered parameters", "more communication", "easy",
			"lower stage3_max_live_parameters, stage3_prefetch_bucket_size and stage3_max_reuse_distance"))
	list = append(list, TrainingRemediesFor("pytorch", 0)...)
	return []string{s + ". This is not an out-of-memory error, but the card is nearly full: it is slow now and often runs out next."}, list
}
