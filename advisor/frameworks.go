package advisor

import (
	"fmt"
	"strings"
)

// A frameworkSpec is what explain knows of one framework, library or
// runtime: the messages it prints (formats: their patterns, and the parse
// that reads the numbers each carries), the numbers they can state
// (carries), and what is particular to it in the diagnosis and remedies.
// Adding a framework is an entry of frameworkTable and its messages in
// testdata/explain/real; everything else reads the table.
type frameworkSpec struct {
	key  string // the "framework" of the JSON output
	name string // as the diagnosis names it
	// formats are tried in the order of the table, then of the list; a
	// format's framework is key unless it names another.
	formats []oomFormat
	// carries names the JSON fields its messages can state.
	carries []string
	// how is its own step of a training remedy (by remedy key) where it
	// differs from PyTorch's.
	how map[string]string

	// diagnose, when set, is the whole diagnosis of its messages of the
	// GPU's memory.
	diagnose func(e *Explanation)
	// caching: a caching allocator whose reserved-but-unallocated memory
	// is fragmentation, and whose memory fraction can limit it (PyTorch).
	caching bool
	// allocatorLimit: allowed − allocated is what its allocator had left
	// under its limit (the BFC allocator).
	allocatorLimit bool
	// foldsWarnings: its error takes in the allocator warnings before it
	// (the BFC allocator's, the driver's), as one event.
	foldsWarnings bool
	// generic: a layer below the frameworks (the CUDA driver): the
	// framework of another message of the same event names it better.
	generic bool
	// noOutside: total − free says nothing of memory held outside it.
	noOutside bool
	// notLive: its "allocated" is not live tensors alone.
	notLive bool
	// shortfall, when set and it applies to the message, works out what
	// was missing (else request − free).
	shortfall func(e *Explanation) (short uint64, applies bool)
	// request, when set, is the first sentence when it returns one.
	request func(e *Explanation, req string, short uint64) string
	// advice is its sentences and remedies after the verdict.
	advice func(e *Explanation, short uint64) ([]string, []RemedyEstimate)
	// after is the remedies after those of the causes; nil: training
	// remedies, then habits.
	after func(e *Explanation, processBytes uint64) []RemedyEstimate
	// host, for its messages of host RAM, says what ran out, given the
	// general sentence (without its full stop); nil: the general one.
	host func(e *Explanation, s string) string
	// hostRemedies are added to those of host RAM.
	hostRemedies func(e *Explanation) []RemedyEstimate
	// pressure, for its memory-pressure warnings, says what it warns of.
	pressure func(e *Explanation) string
}

var frameworkTable = []frameworkSpec{
	{key: "mps", name: "PyTorch (Apple MPS)", notLive: true,
		carries: []string{"allocated_by_framework_bytes", "other_allocations_bytes", "allowed_bytes", "requested_bytes"},
		formats: []oomFormat{
			{anchor: re(`MPS\s*backend\s*out\s*of\s*memory`), parse: parseMPS, lits: []string{"mpsbackendoutofmemory"}},
		},
		shortfall: mpsShortfall, request: mpsRequestSentence,
		advice: func(e *Explanation, short uint64) ([]string, []RemedyEstimate) { return nil, estimates(MPS, 0) }},
	{key: "pytorch", name: "PyTorch", caching: true,
		carries: []string{"device", "requested_bytes", "total_bytes", "free_bytes", "allowed_bytes", "allocated_by_framework_bytes",
			"reserved_by_framework_bytes", "reserved_unallocated_bytes", "private_pools_bytes", "this_process_bytes", "processes", "backend"},
		formats: []oomFormat{
			{anchor: re(`(?:CUDA|HIP|XPU)\s*out\s*of\s*memory`), accept: acceptPyTorch, parse: parsePyTorch, lits: []string{"cudaoutofmemory", "hipoutofmemory", "xpuoutofmemory"}},
			{anchor: ptHeadless, tail: true, parse: parsePyTorchHeadless, lits: []string{"totalcapacity"}},
			{anchor: re(`DefaultCPUAllocator:\s*(?:can't\s*allocate|not\s*enough)\s*memory`), parse: parseCPUAllocator, lits: []string{"defaultcpuallocator:"}},
			{anchor: re(`Allocation\s*on\s*device\s*\d+\s*would\s*exceed\s*allowed\s*memory|(?:OutOfMemoryError:|Exception\s*during\s*processing\s*!!!)\s*Allocation\s*on\s*device`), parse: parseMallocAsync, lits: []string{"allocationondevice"}},
			{anchor: re(`DataLoader\s*worker\s*\(pid\s*\d+\)\s*is\s*killed\s*by\s*signal:\s*(?:Bus\s*error|Killed)|[Uu]nexpected\s*bus\s*error\s*encountered\s*in\s*worker`), parse: parseDataLoader, lits: []string{"iskilledbysignal", "unexpectedbuserror"}},
		},
		host: pytorchHost, hostRemedies: pytorchHostRemedies},
	{key: "cupy", name: "CuPy", carries: []string{"requested_bytes", "allocated_by_framework_bytes"},
		formats: []oomFormat{
			{anchor: re(`(?:OutOfMemoryError:\s*)?Out\s*of\s*memory\s*allocating\s*\d{1,3}(?:,\d{3})+\s*bytes|OutOfMemoryError:\s*Out\s*of\s*memory\s*allocating\s*\d+\s*bytes\s*\(allocated\s*so\s*far`), parse: parseCuPy, lits: []string{"outofmemoryallocating"}},
		},
		after: func(e *Explanation, pb uint64) []RemedyEstimate {
			return append(byKeys("cupy_chunks", "cupy_pool"), TenantRemedies(0, "")...)
		}},
	{key: "paddle", name: "PaddlePaddle", carries: []string{"device", "requested_bytes", "allocated_by_framework_bytes", "free_bytes"},
		how: map[string]string{
			"mixed_precision":        "with paddle.amp.auto_cast(): ... and paddle.amp.GradScaler",
			"gradient_checkpointing": "paddle.distributed.fleet.utils.recompute(block, x)",
			"model_parallelism":      "paddle.distributed.fleet with sharding (ZeRO-style) or tensor parallelism",
		},
		formats: []oomFormat{
			{anchor: re(`Out\s*of\s*memory\s*error\s*on\s*GPU\s*\d+`), parse: parsePaddle, lits: []string{"outofmemoryerrorongpu"}},
		}},
	{key: "sglang", name: "SGLang",
		formats: []oomFormat{
			{anchor: re(`Not\s*enough\s*memory\.?\s*Please\s*try\s*to\s*increase\s*--mem-fraction-static`), parse: parseNothing, lits: []string{"--mem-fraction-static"}},
		},
		advice: serverAdvice("sglang_mem_fraction", "SGLang found too little memory for its KV cache pool after the weights, within --mem-fraction-static of the card."),
		after:  servingRemedies},
	{key: "cuda", name: "CUDA", generic: true, carries: []string{"requested_bytes", "free_bytes", "total_bytes", "backend", "host"},
		formats: []oomFormat{
			{anchor: re(`(?i:failed)\s*to\s*alloc(?:ate)?\s*` + sz + `.{0,120}?(?:CUDA_ERROR_OUT_OF_MEMORY|HIP_ERROR_OutOfMemory)(?::\s*out\s*of\s*memory)?|CUDA_ERROR_OUT_OF_MEMORY(?::\s*out\s*of\s*memory)?|HIP_ERROR_OutOfMemory`), parse: parseDriver, lits: []string{"cuda_error_out_of_memory", "hip_error_outofmemory"}},
			{anchor: re(`CUDA\s*(?:driver\s*)?[Ee]rror:\s*out\s*of\s*memory|cudaErrorMemoryAllocation|[Cc]uda\s*failure\s*(?:2\s*)?'out\s*of\s*memory'|hipErrorOutOfMemory|cuda\s*runtime\s*error\s*\(2\)\s*:\s*out\s*of\s*memory|cuda\s*failed\s*with\s*error\s*2\s*out\s*of\s*memory`), parse: parseCUDAError, lits: []string{"cudaerror:outofmemory", "cudadrivererror:outofmemory", "cudaerrormemoryallocation", "'outofmemory'", "hiperroroutofmemory", "cudaruntimeerror(2)", "cudafailedwitherror2outofmemory"}},
		},
		diagnose: diagnoseNoNumbers("CUDA reported out of memory without numbers.")},
	{key: "mxnet", name: "MXNet",
		formats: []oomFormat{
			{anchor: re(`MXNetError:.{0,300}?out\s*of\s*memory|pooled_storage_manager\.h:\d+:\s*cudaMalloc\s*failed:\s*out\s*of\s*memory`), parse: parseMXNet, lits: []string{"mxneterror:", "pooled_storage_manager.h"}},
		}},
	{key: "tensorflow", name: "TensorFlow", allocatorLimit: true, foldsWarnings: true,
		carries: []string{"device", "requested_bytes", "requested_from_shape", "shape", "dtype", "allowed_bytes", "allocated_by_framework_bytes",
			"peak_allocated_bytes", "num_allocs", "max_alloc_size_bytes", "largest_free_block_bytes", "free_bytes", "total_bytes", "host"},
		how: map[string]string{
			"mixed_precision":        "tf.keras.mixed_precision.set_global_policy(\"mixed_float16\") (LossScaleOptimizer is added by Keras)",
			"gradient_checkpointing": "tf.recompute_grad(block) around blocks",
			"model_parallelism":      "DTensor / tf.distribute with a model-parallel layout, or split layers across GPUs",
		},
		formats: []oomFormat{
			{anchor: re(`could\s*not\s*allocate\s*pinned\s*host\s*memory\s*of\s*size:\s*\d+|failed\s*to\s*allocate\s*` + sz + `\s*of\s*pinned\s*memory:\s*out\s*of\s*memory|cudaHostAlloc\w*\s*(?:\(.{0,80}?\)\s*)?failed.{0,80}?(?:out\s*of\s*memory|cudaErrorMemoryAllocation)`), parse: parsePinned, lits: []string{"pinnedhostmemory", "ofpinnedmemory", "cudahostalloc"}},
			{anchor: re(`(?:ResourceExhaustedError|Resource\s*exhausted|RESOURCE_EXHAUSTED):?.{0,200}?failed\s*to\s*allocate\s*memory`), parse: parseTFFailed, lits: []string{"failedtoallocatememory"}},
			{anchor: bfcStatsAnchor, parse: parseBFCStats, lits: []string{"stats:limit:"}},
			{anchor: re(`OOM\s*when\s*allocating\s*tensor`), parse: parseTFOOM, lits: []string{"oomwhenallocatingtensor"}},
			{anchor: re(`(?:Allocator\s*\(\w+\)\s*)?[Rr]an\s*out\s*of\s*memory\s*trying\s*to\s*allocate`), parse: parseBFC, lits: []string{"outofmemorytryingtoallocate"}},
		},
		advice: tensorflowAdvice},
	{key: "llama.cpp", name: "llama.cpp", carries: []string{"device", "requested_bytes"},
		formats: []oomFormat{
			{anchor: re(`(?:allocating\s*` + sz + `\s*on\s*device\s*\d+:\s*)?cudaMalloc\s*failed:\s*out\s*of\s*memory|failed\s*to\s*allocate\s*(?:CUDA|ROCm|Metal|Vulkan|SYCL)\d*\s*buffer\s*of\s*size\s*\d+|unable\s*to\s*allocate\s*(?:CUDA|ROCm|Metal|Vulkan|SYCL|backend)\d*\s*buffer|kIOGPUCommandBufferCallbackErrorOutOfMemory`), parse: parseLlama, lits: []string{"cudamallocfailed", "failedtoallocate", "unabletoallocate", "kiogpucommandbuffercallbackerroroutofmemory"}},
		},
		advice: func(e *Explanation, short uint64) ([]string, []RemedyEstimate) {
			return []string{"llama.cpp needs room for the offloaded layers' weights, the KV cache (which grows with the context) and compute buffers."}, estimates(LlamaCpp, 0)
		},
		after: func(e *Explanation, pb uint64) []RemedyEstimate { return TenantRemedies(0, "") }},
	{key: "onnxruntime", name: "ONNX Runtime", carries: []string{"requested_bytes"},
		formats: []oomFormat{
			{anchor: re(`Failed\s*to\s*allocate\s*memory\s*for\s*requested\s*buffer\s*of\s*size\s*\d+`), parse: parseORT, lits: []string{"failedtoallocatememoryforrequestedbuffer"}},
		},
		advice: serverAdvice("ort_arena", ""), after: servingRemedies},
	{key: "tensorrt", name: "TensorRT", carries: []string{"requested_bytes"},
		formats: []oomFormat{
			{anchor: re(`Requested\s*amount\s*of\s*GPU\s*memory\s*\(\d+\s*bytes\)\s*could\s*not\s*be\s*allocated|Error\s*Code\s*\d+:\s*Cuda\s*Runtime\s*\(out\s*of\s*memory\)`), parse: parseTRT, lits: []string{"requestedamountofgpumemory", "cudaruntime(outofmemory)"}},
		},
		advice: serverAdvice("trt_workspace", ""), after: servingRemedies},
	{key: "tgi", name: "TGI (text-generation-inference)", carries: []string{"prefill_tokens"},
		formats: []oomFormat{
			{anchor: re(`Not\s*enough\s*memory\s*to\s*handle\s*\d+\s*prefill\s*tokens`), parse: parseTGI, lits: []string{"prefilltokens"}},
		},
		advice: serverAdvice("tgi_prefill", ""), after: servingRemedies},
	{key: "cublas", name: "cuBLAS",
		formats: []oomFormat{
			{anchor: re(`CUBLAS_STATUS_ALLOC_FAILED`), parse: parseNothing, lits: []string{"cublas_status_alloc_failed"}},
		},
		diagnose: diagnoseNoNumbers("cuBLAS could not allocate its workspace (CUBLAS_STATUS_ALLOC_FAILED): the card was full when a matrix multiply first ran.")},
	{key: "cudnn", name: "cuDNN", carries: []string{"free_bytes", "total_bytes"},
		formats: []oomFormat{
			{anchor: re(`CUDNN_STATUS_ALLOC_FAILED`), parse: parseNothing, lits: []string{"cudnn_status_alloc_failed"}},
			{anchor: cudnnStatus, accept: acceptCuDNN, parse: parseCuDNNStatus, lits: []string{"cudnn_status_", "cublas_status_"}},
		},
		diagnose: diagnoseNoNumbers("cuDNN could not allocate its workspace (CUDNN_STATUS_ALLOC_FAILED): the card was full when a convolution ran.")},
	{key: "triton", name: "Triton", carries: []string{"requested_bytes", "allowed_bytes"},
		formats: []oomFormat{
			{anchor: re(`(?:OutOfResources:\s*)?out\s*of\s*resource:\s*shared\s*memory`), parse: parseTriton, lits: []string{"outofresource:sharedmemory"}},
		}},
	{key: "deepspeed", name: "DeepSpeed", carries: []string{"cache_flushes"},
		formats: []oomFormat{
			{anchor: dsFlushes, parse: parseDeepSpeedFlushes, lits: []string{"allocatorcacheflushes"}},
		},
		pressure: func(e *Explanation) string {
			s := "DeepSpeed ZeRO-3 warns of memory pressure: it flushed PyTorch's allocator cache"
			if e.CacheFlushes != nil {
				s += fmt.Sprintf(" %d time(s) in the last step", *e.CacheFlushes)
			}
			return s
		}},
	{key: "numpy", name: "NumPy", carries: []string{"requested_bytes", "shape", "dtype"},
		formats: []oomFormat{
			{anchor: re(`(?:numpy\.(?:_?core)\._exceptions\.)?(?:_ArrayMemoryError|MemoryError):\s*Unable\s*to\s*allocate`), parse: parseNumPy, lits: []string{"memoryerror:unabletoallocate"}},
		},
		host: func(e *Explanation, s string) string {
			if e.RequestedBytes == nil {
				return s + "."
			}
			return s + fmt.Sprintf(": NumPy could not allocate %s for an array of shape %s (%s).", FormatBytes(*e.RequestedBytes), e.Shape, e.DType)
		}},
	{key: "python", name: "Python",
		formats: []oomFormat{
			{anchor: re(`MemoryError`), acceptLine: acceptPyMemoryError, parse: parseHostRAM, lits: []string{"memoryerror"}},
			{anchor: re(`OSError:\s*\[Errno\s*12\]\s*Cannot\s*allocate\s*memory`), parse: parseHostRAM, lits: []string{"[errno12]cannotallocatememory"}},
		}},
	{key: "jvm", name: "The JVM",
		formats: []oomFormat{
			{anchor: re(`java\.lang\.OutOfMemoryError:\s*(?:Java\s*heap\s*space|GC\s*overhead\s*limit\s*exceeded|Direct\s*buffer\s*memory|Metaspace|unable\s*to\s*create\s*(?:new\s*)?native\s*thread|Requested\s*array\s*size\s*exceeds\s*VM\s*limit)`), parse: parseHostRAM, lits: []string{"java.lang.outofmemoryerror:"}},
		},
		host: func(e *Explanation, s string) string {
			return s + ": the Java heap (or its off-heap memory) was full: raise -Xmx (spark.driver.memory / spark.executor.memory)."
		}},
	{key: "kernel", name: "The Linux OOM killer", carries: []string{"processes"},
		formats: []oomFormat{
			{anchor: re(`(?:Memory\s*cgroup\s*out\s*of\s*memory|Out\s*of\s*memory):\s*Kill(?:ed)?\s*process\s*\d+|Killed\s*process\s*\d+\s*\([^)]{0,64}\)\s*total-vm`), parse: parseKernelOOM, lits: []string{"killprocess", "killedprocess"}},
		},
		host: kernelHost},
	{key: "kubernetes", name: "Kubernetes",
		formats: []oomFormat{
			{anchor: re(`OOMKilled`), parse: parseKubernetes, lits: []string{"oomkilled"}},
		},
		host: func(e *Explanation, s string) string {
			return "The container passed its memory limit and the kernel ended it (OOMKilled): host RAM as the pod's limit counts it, not GPU memory" +
				" (raise resources.limits.memory, or use less RAM)."
		}},
	{key: "process", name: "A killed process",
		formats: []oomFormat{
			{anchor: re(`Killed`), acceptLine: acceptShellKilled, parse: parseKilled, lits: []string{"killed"}},
			{anchor: exitSIGKILL, parse: parseKilled, lits: []string{"137", "-9", "sigkill"}},
		}},
	{key: "jax", name: "JAX/XLA", allocatorLimit: true, foldsWarnings: true, carries: []string{"device", "requested_bytes", "free_bytes", "allocated_by_framework_bytes", "total_bytes", "host"},
		how: map[string]string{
			"mixed_precision":        "keep parameters in float32 and compute in bfloat16 (jmp policies, or dtype=jnp.bfloat16 in Flax modules)",
			"gradient_checkpointing": "jax.checkpoint (jax.remat) around blocks, or nn.remat in Flax",
			"model_parallelism":      "shard parameters and optimizer state over devices with jax.sharding (NamedSharding, FSDP-style)",
		},
		formats: []oomFormat{
			{anchor: re(`Attempting\s*to\s*allocate\s*` + sz + `\.\s*That\s*was\s*not\s*possible|Ran\s*out\s*of\s*memory\s*in\s*memory\s*space\s*hbm|(?i:resource[\s_]*exhausted):\s*(?:Out\s*of\s*memory|Failed\s*to\s*allocate)|Out\s*of\s*memory\s*while\s*trying\s*to\s*allocate|Out\s*of\s*memory\s*allocating`), parse: parseJAX, lits: []string{"exhausted", "outofmemorywhiletryingtoallocate", "outofmemoryallocating", "thatwasnotpossible", "memoryspacehbm"}},
		},
		advice: func(e *Explanation, short uint64) ([]string, []RemedyEstimate) {
			return []string{"JAX preallocates 75% of a card at start: a second JAX process on the card, or other work beside it, runs out this way."}, estimates(JAX, 0)
		}},
	{key: "vllm", name: "vLLM", noOutside: true,
		carries: []string{"requested_bytes", "free_bytes", "total_bytes", "device", "max_model_len", "kv_cache_tokens", "max_model_len_fits", "gpu_memory_utilization"},
		formats: []oomFormat{
			{anchor: re(`No\s*available\s*memory\s*for\s*the\s*cache\s*blocks|(?:The\s*model's\s*)?max\s*seq\s*len\s*\(\d+\)\s*is\s*larger\s*than\s*the\s*maximum\s*number\s*of\s*tokens|To\s*serve\s*at\s*least\s*one\s*request.{0,120}?KV\s*cache\s*is\s*needed|Free\s*memory\s*on\s*device|Insufficient\s*memory\s*for\s*(?:the\s*)?KV\s*cache`), parse: parseVLLM, lits: []string{"noavailablememoryforthecacheblocks", "maxseqlen(", "toserveatleastonerequest", "freememoryondevice", "insufficientmemoryfor"}},
		},
		diagnose: func(e *Explanation) { e.diagnoseVLLM() }},
}

var (
	// frameworks holds the table by key.
	frameworks map[string]*frameworkSpec
	// formats are the formats of the table, in its order.
	formats []oomFormat
)

func init() {
	frameworks = map[string]*frameworkSpec{}
	for i := range frameworkTable {
		f := &frameworkTable[i]
		if frameworks[f.key] != nil {
			panic("advisor: two entries for " + f.key)
		}
		frameworks[f.key] = f
		for _, fm := range f.formats {
			if fm.framework == "" {
				fm.framework = f.key
			}
			formats = append(formats, fm)
		}
	}
}

// spec returns the table's entry of e's framework (an empty one for a
// framework it does not name).
func (e *Explanation) spec() *frameworkSpec {
	if f := frameworks[e.Framework]; f != nil {
		return f
	}
	return &frameworkSpec{}
}

// byKeys returns the remedies of the keys given, in order.
func byKeys(keys ...string) []RemedyEstimate {
	var out []RemedyEstimate
	for _, k := range keys {
		if r, ok := remedyByKey(k); ok {
			out = append(out, r.Estimate(0))
		}
	}
	return out
}

// MPS: the request on top of what is allocated past the limit.
func mpsShortfall(e *Explanation) (uint64, bool) {
	if e.RequestedBytes == nil || e.AllocatedByFrameworkBytes == nil || e.OtherAllocationsBytes == nil || e.AllowedBytes == nil {
		return 0, false
	}
	s, ok := add(*e.AllocatedByFrameworkBytes, *e.OtherAllocationsBytes)
	if ok {
		s, ok = add(s, *e.RequestedBytes)
	}
	if !ok {
		return 0, true
	}
	short, _ := sub(s, *e.AllowedBytes)
	if s < *e.AllowedBytes {
		short = 0
	}
	return short, true
}

func mpsRequestSentence(e *Explanation, req string, short uint64) string {
	if short == 0 {
		return ""
	}
	B := FormatBytes
	return fmt.Sprintf("%s asked for %s on top of %s allocated and %s other allocations, past the %s allowed: %s short (derived).",
		e.frameworkName(), req, B(val(e.AllocatedByFrameworkBytes)), B(val(e.OtherAllocationsBytes)), B(val(e.AllowedBytes)), B(short))
}

// tensorflowAdvice: TensorFlow takes the card; when the request would fit
// the allocator's room in total, the async allocator comes first.
func tensorflowAdvice(e *Explanation, short uint64) ([]string, []RemedyEstimate) {
	why := []string{"TensorFlow takes nearly all of a card at start unless memory growth is on: two TensorFlow processes on one card, or one beside other work, run out this way."}
	tf := TensorFlowRemedies()
	if d := e.Derived; short == 0 && d != nil && d.AllocatorFreeBytes != nil && e.RequestedBytes != nil && *d.AllocatorFreeBytes >= *e.RequestedBytes {
		for i, r := range tf {
			if strings.Contains(r.How, "cuda_malloc_async") {
				tf = append(append([]RemedyEstimate{r}, tf[:i]...), tf[i+1:]...)
				break
			}
		}
	}
	return why, tf
}

// serverAdvice is the advice of an inference server or runtime: its own
// remedy (by key), after a sentence.
func serverAdvice(key, sentence string) func(e *Explanation, short uint64) ([]string, []RemedyEstimate) {
	return func(e *Explanation, short uint64) ([]string, []RemedyEstimate) {
		var why []string
		if sentence != "" {
			why = append(why, sentence)
		}
		if e.PrefillTokens != nil {
			why = append(why, fmt.Sprintf("TGI could not fit a prefill of %d tokens at warm-up after loading the weights.", *e.PrefillTokens))
		}
		return why, byKeys(key)
	}
}

// servingRemedies are the inference remedies but inference mode, which a
// server already runs in.
func servingRemedies(e *Explanation, pb uint64) []RemedyEstimate {
	var out []RemedyEstimate
	for _, r := range InferenceRemedies(pb) {
		if !strings.Contains(r.Name, "inference_mode") {
			out = append(out, r)
		}
	}
	return out
}

func pytorchHost(e *Explanation, s string) string {
	switch {
	case e.RequestedBytes != nil:
		return s + fmt.Sprintf(": PyTorch's CPU allocator could not get %s.", FormatBytes(*e.RequestedBytes))
	case e.key == "shm":
		return "The shared memory (/dev/shm) that DataLoader workers pass batches through ran out, not GPU memory" +
			" (a container's default is 64 MiB: docker run --shm-size=16g or --ipc=host)."
	}
	return s + "."
}

func pytorchHostRemedies(e *Explanation) []RemedyEstimate {
	if e.RequestedBytes == nil {
		return nil
	}
	return []RemedyEstimate{{Name: "check the tensor's device", Saving: "the whole request, when it was meant for the GPU", Cost: "none", Effort: "easy",
		How: "a tensor of this size created on the CPU is often one that was meant to be created with device='cuda'"}}
}

func kernelHost(e *Explanation, s string) string {
	if len(e.Processes) == 0 {
		return s + "."
	}
	p := e.Processes[0]
	s += fmt.Sprintf(": the kernel's OOM killer ended process %d (%s)", p.PID, p.Name)
	if p.Bytes > 0 {
		s += fmt.Sprintf(", which held %s of RAM (anon-rss)", FormatBytes(p.Bytes))
	}
	return s + "."
}
