package advisor

import (
	"fmt"
	"strconv"
	"strings"
)

func ptr(v uint64) *uint64 { return &v }

func val(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// sub returns a − b when a ≥ b.
func sub(a, b uint64) (uint64, bool) { return a - b, a >= b }

// add returns a + b unless it overflows.
func add(a, b uint64) (uint64, bool) { return a + b, a+b >= a }

// add2 is add, for where add is shadowed.
func add2(a, b uint64) (uint64, bool) { return add(a, b) }

// derive works out the figures the message implies but does not state.
func (e *Explanation) derive() *Derived {
	d := &Derived{}
	reserved := e.ReservedByFrameworkBytes
	if reserved == nil && e.AllocatedByFrameworkBytes != nil && e.ReservedUnallocatedBytes != nil {
		if s, ok := add(*e.AllocatedByFrameworkBytes, *e.ReservedUnallocatedBytes); ok {
			d.ReservedBytes = ptr(s)
			reserved = d.ReservedBytes
		}
	}
	if e.ReservedUnallocatedBytes == nil && e.ReservedByFrameworkBytes != nil && e.AllocatedByFrameworkBytes != nil {
		if s, ok := sub(*e.ReservedByFrameworkBytes, *e.AllocatedByFrameworkBytes); ok {
			d.CachedUnusedBytes = ptr(s)
		}
	}
	self := -1 // index in Processes of the likely self, when not named
	if e.ThisProcessBytes == nil && reserved != nil {
		best := uint64(contextAllowance) + 1
		for i, p := range e.Processes {
			if over, ok := sub(p.Bytes, *reserved); ok && over <= contextAllowance && over < best {
				self, best = i, over
			}
		}
		if self >= 0 {
			d.LikelyThisProcessPID = ptr(e.Processes[self].PID)
		}
	}
	if e.TotalBytes != nil && e.FreeBytes != nil && e.Framework != "vllm" {
		if used, ok := sub(*e.TotalBytes, *e.FreeBytes); ok {
			held := reserved
			if e.ThisProcessBytes != nil {
				held = e.ThisProcessBytes
			} else if self >= 0 {
				held = &e.Processes[self].Bytes
			}
			if held != nil {
				if o, ok := sub(used, *held); ok {
					d.OutsideBytes = ptr(o)
				}
			}
		}
	}
	if e.ThisProcessBytes != nil && reserved != nil {
		if n, ok := sub(*e.ThisProcessBytes, *reserved); ok {
			d.NonFrameworkBytes = ptr(n)
		}
	}
	if len(e.Processes) > 0 {
		var sum uint64
		ok := true
		for i, p := range e.Processes {
			if i == self {
				continue
			}
			if sum, ok = add(sum, p.Bytes); !ok {
				break
			}
		}
		if ok && (self < 0 || len(e.Processes) > 1) {
			d.OtherProcessesBytes = ptr(sum)
		}
	}
	free := e.FreeBytes
	if (e.Framework == "tensorflow" || e.Framework == "jax") && e.AllowedBytes != nil && e.AllocatedByFrameworkBytes != nil {
		if f, ok := sub(*e.AllowedBytes, *e.AllocatedByFrameworkBytes); ok {
			d.AllocatorFreeBytes = ptr(f)
			if free == nil {
				free = d.AllocatorFreeBytes
			}
		}
	}
	switch {
	case e.Framework == "mps" && e.RequestedBytes != nil && e.AllocatedByFrameworkBytes != nil && e.OtherAllocationsBytes != nil && e.AllowedBytes != nil:
		if s, ok := add(*e.AllocatedByFrameworkBytes, *e.OtherAllocationsBytes); ok {
			if s, ok = add(s, *e.RequestedBytes); ok {
				if short, ok := sub(s, *e.AllowedBytes); ok && short > 0 {
					d.ShortfallBytes = ptr(short)
				}
			}
		}
	case e.RequestedBytes != nil && free != nil:
		if short, ok := sub(*e.RequestedBytes, *free); ok && short > 0 {
			d.ShortfallBytes = ptr(short)
		}
	}
	if *d == (Derived{}) {
		return nil
	}
	return d
}

// reserved returns the framework's reserved memory, stated or derived.
func (e *Explanation) reserved() *uint64 {
	if e.ReservedByFrameworkBytes != nil {
		return e.ReservedByFrameworkBytes
	}
	if e.Derived != nil {
		return e.Derived.ReservedBytes
	}
	return nil
}

// cachedUnused returns the framework's reserved-but-unallocated memory,
// stated or derived.
func (e *Explanation) cachedUnused() *uint64 {
	if e.ReservedUnallocatedBytes != nil {
		return e.ReservedUnallocatedBytes
	}
	if e.Derived != nil {
		return e.Derived.CachedUnusedBytes
	}
	return nil
}

// others returns the memory held by other processes: listed ones, else
// what lies outside this process's allocator when that is more than a
// CUDA context or two.
func (e *Explanation) others() (uint64, bool) {
	if e.Derived == nil {
		return 0, false
	}
	if e.Derived.OtherProcessesBytes != nil {
		return *e.Derived.OtherProcessesBytes, true
	}
	if o := e.Derived.OutsideBytes; o != nil && *o >= contextAllowance {
		return *o, true
	}
	return 0, false
}

// roundingNoise is below what a difference of rounded printed sizes
// ("1.02 GiB") can tell apart from zero.
const roundingNoise = 16 << 20

// contextAllowance is what a process's CUDA context and libraries hold
// outside the framework's allocator: a few hundred MiB, up to ~1 GiB.
const contextAllowance = 1 << 30

// processBytes is the memory of the process the remedies act on.
func (e *Explanation) processBytes() uint64 {
	switch {
	case e.ThisProcessBytes != nil:
		return *e.ThisProcessBytes
	case e.reserved() != nil:
		return *e.reserved()
	case e.AllocatedByFrameworkBytes != nil:
		return *e.AllocatedByFrameworkBytes
	}
	return 0
}

func (e *Explanation) shortfall() uint64 {
	if e.Derived == nil {
		return 0
	}
	return val(e.Derived.ShortfallBytes)
}

func (e *Explanation) gpu() string {
	if e.Device != nil {
		return "GPU " + strconv.Itoa(*e.Device)
	}
	return "the GPU"
}

var frameworkNames = map[string]string{
	"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX/XLA", "vllm": "vLLM",
	"mps": "PyTorch (Apple MPS)", "cuda": "CUDA", "cublas": "cuBLAS", "cudnn": "cuDNN",
	"llama.cpp": "llama.cpp", "onnxruntime": "ONNX Runtime", "tensorrt": "TensorRT", "tgi": "TGI (text-generation-inference)",
	"cupy": "CuPy", "paddle": "PaddlePaddle", "sglang": "SGLang", "mxnet": "MXNet", "triton": "Triton",
	"deepspeed": "DeepSpeed", "kernel": "The Linux OOM killer", "process": "A killed process",
	"numpy": "NumPy", "python": "Python", "jvm": "The JVM", "kubernetes": "Kubernetes",
}

func (e *Explanation) frameworkName() string {
	n := frameworkNames[e.Framework]
	switch e.Backend {
	case "hip":
		n += " (ROCm/HIP)"
	case "xpu":
		n += " (Intel XPU)"
	}
	return n
}

// diagnose fills Derived, Diagnosis and Remedies.
func diagnose(e *Explanation) {
	diagnoseFramework(e)
	// A log does not tell the command that ran: name none.
	for i := range e.Remedies {
		e.Remedies[i].How = strings.ReplaceAll(e.Remedies[i].How, "python train.py", "<your command>")
		if e.Backend == "hip" { // ROCm builds read their own variable
			e.Remedies[i].How = strings.ReplaceAll(e.Remedies[i].How, "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")
		}
	}
}

func diagnoseFramework(e *Explanation) {
	if diagnoseKind(e) {
		return
	}
	e.Derived = e.derive()
	var why []string
	var list []RemedyEstimate
	add := func(rs ...RemedyEstimate) { list = append(list, rs...) }
	B := FormatBytes
	short := e.shortfall()

	switch e.Framework {
	case "cuda", "cublas", "cudnn":
		what := map[string]string{
			"cuda":   "CUDA reported out of memory without numbers.",
			"cublas": "cuBLAS could not allocate its workspace (CUBLAS_STATUS_ALLOC_FAILED): the card was full when a matrix multiply first ran.",
			"cudnn":  "cuDNN could not allocate its workspace (CUDNN_STATUS_ALLOC_FAILED): the card was full when a convolution ran.",
		}[e.Framework]
		if e.Confidence == "likely" {
			what = e.frameworkName() + " failed, likely because memory ran out: " + e.Reason + "."
			if e.FreeBytes != nil && e.TotalBytes != nil {
				what += fmt.Sprintf(" The card had %s free of %s.", B(*e.FreeBytes), B(*e.TotalBytes))
			}
			what += " To confirm, run one small convolution before the model: the real out-of-memory error then shows."
		}
		if e.RequestedBytes != nil {
			what = fmt.Sprintf("The CUDA driver refused an allocation of %s.", B(*e.RequestedBytes))
			if e.Host {
				what = fmt.Sprintf("The CUDA driver refused %s of pinned host memory (not GPU memory).", B(*e.RequestedBytes))
			}
		}
		why = append(why, what,
			"Kernel errors are reported asynchronously: the line in the stack trace may not be where memory ran out; CUDA_LAUNCH_BLOCKING=1 makes it honest.",
			"Run vramtop to see who holds the card.")
		add(estimates(NoNumbers, 0)...)
		add(TenantRemedies(0, "")...)
		add(TrainingRemedies(0)...)
		add(HabitRemedies()...)
		e.Diagnosis = strings.Join(why, " ")
		e.Remedies = capList(RankRemedies(list, 0))
		return
	case "vllm":
		e.diagnoseVLLM()
		return
	}

	// The request against what was free.
	if e.RequestedBytes != nil {
		req := B(*e.RequestedBytes)
		if e.RequestedFromShape {
			req += fmt.Sprintf(" (derived: shape %s × %d bytes of %s)", e.Shape, dtypeSize[e.DType], e.DType)
		}
		switch {
		case e.Framework == "mps" && short > 0:
			why = append(why, fmt.Sprintf("%s asked for %s on top of %s allocated and %s other allocations, past the %s allowed: %s short (derived).",
				e.frameworkName(), req, B(val(e.AllocatedByFrameworkBytes)), B(val(e.OtherAllocationsBytes)), B(val(e.AllowedBytes)), B(short)))
		case e.FreeBytes != nil:
			s := fmt.Sprintf("%s asked %s for %s with %s free", e.frameworkName(), e.gpu(), req, B(*e.FreeBytes))
			if e.TotalBytes != nil {
				s += " of " + B(*e.TotalBytes)
			}
			if short > 0 {
				s += fmt.Sprintf(": %s short (derived: request − free).", B(short))
			} else {
				s += ": the request was not larger than the free memory, so what failed was "
				if e.AllowedBytes != nil {
					s += fmt.Sprintf("the memory fraction limit (%s allowed).", B(*e.AllowedBytes))
				} else {
					s += "finding one piece that large (the free memory is in pieces), or the free memory changed in between."
				}
			}
			why = append(why, s)
		case e.Derived != nil && e.Derived.AllocatorFreeBytes != nil:
			s := fmt.Sprintf("%s's allocator on %s asked for %s with %s left under its limit of %s (derived)", e.frameworkName(), e.gpu(), req, B(*e.Derived.AllocatorFreeBytes), B(*e.AllowedBytes))
			if short > 0 {
				s += fmt.Sprintf(": %s short (derived).", B(short))
			} else {
				s += ": enough in total but not in one piece (fragmentation in the allocator)."
			}
			why = append(why, s)
		default:
			why = append(why, fmt.Sprintf("%s could not allocate %s on %s.", e.frameworkName(), req, e.gpu()))
		}
	} else {
		why = append(why, fmt.Sprintf("%s ran out of memory on %s; the message gives no numbers. Run vramtop to see what holds the card.", e.frameworkName(), e.gpu()))
	}

	// Where the memory went.
	cache := e.cachedUnused()
	others, haveOthers := e.others()
	var parts []string
	if a := e.AllocatedByFrameworkBytes; a != nil && e.Framework != "mps" {
		parts = append(parts, "live tensors "+B(*a))
	}
	if cache != nil {
		p := "cached but unused " + B(*cache)
		if e.ReservedUnallocatedBytes == nil {
			p += " (derived)"
		}
		parts = append(parts, p)
	}
	if e.Derived != nil && e.Derived.NonFrameworkBytes != nil {
		parts = append(parts, "outside the allocator in this process (CUDA context, libraries) "+B(*e.Derived.NonFrameworkBytes)+" (derived)")
	}
	nOthers := len(e.Processes)
	if e.Derived != nil && e.Derived.LikelyThisProcessPID != nil {
		nOthers--
	}
	if e.Derived != nil && e.Derived.OtherProcessesBytes != nil {
		p := fmt.Sprintf("%d other process(es) %s", nOthers, B(*e.Derived.OtherProcessesBytes))
		if nOthers > 1 {
			p += " (derived: their sum)"
		}
		parts = append(parts, p)
	} else if e.Derived != nil && e.Derived.OutsideBytes != nil && *e.Derived.OutsideBytes >= roundingNoise {
		of := "reserved"
		if e.ThisProcessBytes != nil || e.Derived.LikelyThisProcessPID != nil {
			of = "this process"
		}
		parts = append(parts, "outside this process's allocator (other processes, other frameworks, CUDA contexts) "+B(*e.Derived.OutsideBytes)+" (derived: total − free − "+of+")")
	}
	if len(parts) > 0 {
		why = append(why, "Where the memory went: "+strings.Join(parts, "; ")+".")
	}
	if len(e.Processes) > 0 && e.ThisProcessBytes == nil {
		if e.Derived != nil && e.Derived.LikelyThisProcessPID != nil {
			why = append(why, fmt.Sprintf("The message names no process as this one (in a container PyTorch sees host PIDs); process %d holds about what this process reserved, so it is most likely this process (derived).", *e.Derived.LikelyThisProcessPID))
		} else {
			why = append(why, "The message names no process as this one (in a container PyTorch sees host PIDs): one of the listed processes may be this process.")
		}
	}

	// A memory fraction limit reached before the card was full.
	if r := e.reserved(); e.Framework == "pytorch" && r != nil && e.AllowedBytes != nil && e.RequestedBytes != nil {
		if need, ok := add2(*r, *e.RequestedBytes); ok && need > *e.AllowedBytes && val(e.FreeBytes) > 0 {
			why = append(why, fmt.Sprintf("The allocator's %s reserved plus the %s request pass the %s allowed by the memory fraction limit while the card had memory free (derived).",
				B(*r), B(*e.RequestedBytes), B(*e.AllowedBytes)))
			if r, ok := remedyByKey("memory_fraction"); ok {
				// At most what the card had free, and what lies above the limit.
				room := *e.FreeBytes
				if e.TotalBytes != nil {
					if above, ok := sub(*e.TotalBytes, *e.AllowedBytes); ok {
						room = min(room, above)
					}
				}
				add(r.Estimate(room))
			}
		}
	}

	// The verdict, and remedies grouped by cause.
	pb := e.processBytes()
	frag := e.Framework == "pytorch" && cache != nil && *cache > 0
	fragCovers := frag && short > 0 && *cache >= short
	othersCover := haveOthers && short > 0 && others >= short
	live := val(e.AllocatedByFrameworkBytes)
	switch {
	case fragCovers:
		why = append(why, fmt.Sprintf("The cache holds %s it is not using, enough for the shortfall: fragmentation. Letting the allocator reuse it should be enough.", B(*cache)))
	case othersCover:
		why = append(why, fmt.Sprintf("Other processes hold %s, more than the shortfall: the card is shared. Use another GPU, or ask the owner.", B(others)))
	case haveOthers && others > live && short == 0:
		why = append(why, fmt.Sprintf("Other processes hold %s, more than this process's live tensors.", B(others)))
	case live > 0:
		why = append(why, "Most of it is live memory of this process: make its footprint smaller.")
	}
	switch e.Framework {
	case "tensorflow":
		why = append(why, "TensorFlow takes nearly all of a card at start unless memory growth is on: two TensorFlow processes on one card, or one beside other work, run out this way.")
		tf := TensorFlowRemedies()
		if d := e.Derived; short == 0 && d != nil && d.AllocatorFreeBytes != nil && e.RequestedBytes != nil && *d.AllocatorFreeBytes >= *e.RequestedBytes {
			// Enough in total, not in one piece: the async allocator first.
			for i, r := range tf {
				if strings.Contains(r.How, "cuda_malloc_async") {
					tf = append(append([]RemedyEstimate{r}, tf[:i]...), tf[i+1:]...)
					break
				}
			}
		}
		add(tf...)
	case "jax":
		why = append(why, "JAX preallocates 75% of a card at start: a second JAX process on the card, or other work beside it, runs out this way.")
		add(estimates(JAX, 0)...)
	case "mps":
		add(estimates(MPS, 0)...)
	case "llama.cpp":
		why = append(why, "llama.cpp needs room for the offloaded layers' weights, the KV cache (which grows with the context) and compute buffers.")
		add(estimates(LlamaCpp, 0)...)
	case "onnxruntime", "tensorrt", "tgi", "sglang":
		if e.Framework == "sglang" {
			why = append(why, "SGLang found too little memory for its KV cache pool after the weights, within --mem-fraction-static of the card.")
		}
		if e.PrefillTokens != nil {
			why = append(why, fmt.Sprintf("TGI could not fit a prefill of %d tokens at warm-up after loading the weights.", *e.PrefillTokens))
		}
		key := map[string]string{"onnxruntime": "ort_arena", "tensorrt": "trt_workspace", "tgi": "tgi_prefill", "sglang": "sglang_mem_fraction"}[e.Framework]
		if r, ok := remedyByKey(key); ok {
			add(r.Estimate(0))
		}
	}
	fragR := []RemedyEstimate(nil)
	if frag {
		fragR = FragmentationRemedies(*cache)
	}
	var tenR []RemedyEstimate
	if haveOthers {
		tenR = TenantRemedies(others, "")
	}
	noNumbers := e.RequestedBytes == nil && e.FreeBytes == nil && e.AllocatedByFrameworkBytes == nil
	// The cause that covers the shortfall first; else the larger one.
	if !fragCovers && (othersCover || (haveOthers && others > val(cache))) {
		add(tenR...)
		add(fragR...)
	} else {
		add(fragR...)
		add(tenR...)
	}
	switch e.Framework {
	case "llama.cpp":
		add(TenantRemedies(0, "")...)
	case "cupy":
		for _, k := range []string{"cupy_chunks", "cupy_pool"} {
			if r, ok := remedyByKey(k); ok {
				add(r.Estimate(0))
			}
		}
		add(TenantRemedies(0, "")...)
	case "onnxruntime", "tensorrt", "tgi", "sglang":
		for _, r := range InferenceRemedies(pb) {
			if !strings.Contains(r.Name, "inference_mode") {
				add(r)
			}
		}
	default:
		add(TrainingRemediesFor(e.Framework, pb)...)
		if noNumbers { // who else holds the card is as likely a cause
			add(TenantRemedies(0, "")...)
		}
		add(HabitRemedies()...)
	}
	e.Diagnosis = strings.Join(why, " ")
	e.Remedies = capList(RankRemedies(list, short))
}

func (e *Explanation) diagnoseVLLM() {
	B := FormatBytes
	var why []string
	var list []RemedyEstimate
	vr := func(key string, base uint64) RemedyEstimate {
		r, _ := remedyByKey(key)
		return r.Estimate(base)
	}
	switch {
	case e.key == "vllm-startup":
		s := "vLLM found less memory free at startup than gpu_memory_utilization asks for"
		if e.FreeBytes != nil && e.TotalBytes != nil {
			s += fmt.Sprintf(": %s free of %s", B(*e.FreeBytes), B(*e.TotalBytes))
		}
		if e.RequestedBytes != nil {
			s += ", wanted " + B(*e.RequestedBytes)
			if e.GPUMemoryUtilization != nil {
				s += fmt.Sprintf(" (%g of the card)", *e.GPUMemoryUtilization)
			}
		}
		if short := e.shortfall(); short > 0 {
			s += fmt.Sprintf("; %s short (derived)", B(short))
		}
		why = append(why, s+". Other processes hold the rest of the card.")
		lower := RemedyEstimate{Name: "vLLM: ask only for what is free", Saving: "fits the engine into the free memory", Cost: "a smaller KV cache", Effort: "easy",
			How: "--gpu-memory-utilization below free/total"}
		if e.FreeBytes != nil && e.TotalBytes != nil && *e.TotalBytes > 0 {
			lower.How += fmt.Sprintf(" (%.2f here, derived)", float64(*e.FreeBytes)/float64(*e.TotalBytes))
		}
		var others uint64
		if e.TotalBytes != nil && e.FreeBytes != nil {
			others, _ = sub(*e.TotalBytes, *e.FreeBytes)
		}
		list = append(list, TenantRemedies(others, "")...)
		list = append(list, lower)
	default:
		switch {
		case e.RequestedBytes != nil && e.FreeBytes != nil:
			why = append(why, fmt.Sprintf("One request at the longest context needs %s of KV cache; vLLM had %s for it after the weights and activations.", B(*e.RequestedBytes), B(*e.FreeBytes)))
		case e.MaxModelLen != nil && e.KVCacheTokens != nil:
			why = append(why, fmt.Sprintf("max_model_len is %d tokens but the KV cache holds only %d.", *e.MaxModelLen, *e.KVCacheTokens))
		default:
			why = append(why, "vLLM had no memory left for the KV cache after loading the weights and profiling a forward pass.")
		}
		why = append(why, "The KV cache gets gpu_memory_utilization × the card, minus weights and activations.")
		list = append(list, vr("vllm_gpu_memory_utilization", 0))
		ml := vr("vllm_max_model_len", 0)
		if e.MaxModelLenFits != nil {
			ml.How = fmt.Sprintf("--max-model-len %d (the longest that fits, by vLLM's estimate)", *e.MaxModelLenFits)
		} else if e.KVCacheTokens != nil {
			ml.How = fmt.Sprintf("--max-model-len %d or less (what the KV cache holds)", *e.KVCacheTokens)
		}
		list = append(list, ml, vr("vllm_kv_cache_fp8", val(e.RequestedBytes)), vr("vllm_tensor_parallel", 0), vr("quantization", 0))
		list = append(list, TenantRemedies(0, "")...)
	}
	e.Diagnosis = strings.Join(why, " ")
	e.Remedies = capList(RankRemedies(list, e.shortfall()))
}

// capList keeps the first maxRemedies remedies, dropping repeated names.
func capList(list []RemedyEstimate) []RemedyEstimate {
	const maxRemedies = 9
	seen := map[string]bool{}
	var out []RemedyEstimate
	for _, r := range list {
		if seen[r.Name] || len(out) == maxRemedies {
			continue
		}
		seen[r.Name] = true
		out = append(out, r)
	}
	return out
}
