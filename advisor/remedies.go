package advisor

import (
	"fmt"
	"strings"

	"github.com/vramtop/vramtop/units"
)

// Situation is a set of situations a remedy applies to.
type Situation uint16

const (
	// Training: a training process is near full or ran out.
	Training Situation = 1 << iota
	// Inference: an inference (serving, evaluation) process.
	Inference
	// Fragmentation: the framework's cache holds much memory it has not
	// allocated (reserved but unallocated).
	Fragmentation
	// Tenants: memory is held by other processes or users on the card.
	Tenants
	// TensorFlow: TensorFlow grabs nearly all memory up front.
	TensorFlow
	// Habits: code habits that keep memory alive needlessly; no estimate.
	Habits
	// JAX: JAX/XLA preallocates most of the card.
	JAX
	// MPS: Apple's MPS backend and its memory limit.
	MPS
	// VLLM: vLLM's KV cache sizing.
	VLLM
	// NoNumbers: an out-of-memory error that says no more (CUDA error,
	// cuBLAS): find where memory ran out first.
	NoNumbers
	// LlamaCpp: llama.cpp and the servers built on it (Ollama).
	LlamaCpp
	// Serving: inference servers and runtimes (ONNX Runtime, TensorRT, TGI).
	Serving
)

// SavingKind says how a remedy's saving is computed from the memory it acts on.
type SavingKind uint8

const (
	// SavingNone: the remedy has no figure in the table; no bytes are estimated.
	SavingNone SavingKind = iota
	// SavingFraction: a fraction of the process's memory.
	SavingFraction
	// SavingUpTo: at most a fraction of the process's memory (the table's
	// figure is of one part of it, e.g. the activations).
	SavingUpTo
	// SavingDevices: divides the process's memory by the number of devices
	// (estimated with two).
	SavingDevices
	// SavingHeld: up to the memory named by the caller (the cache's unused
	// blocks, another tenant's memory).
	SavingHeld
)

// Remedy is one row of the remediation table (../shared/OOM.md).
type Remedy struct {
	// Key is a stable identifier ("mixed_precision").
	Key  string
	Name string
	// Kind and Fraction define the saving; Fraction is of the process's
	// memory (0.3 for ~30%).
	Kind     SavingKind
	Fraction float64
	// SavingWords is the table's wording of the saving ("~50% of activations").
	SavingWords string
	Cost        string
	Effort      string
	How         string
	Applies     Situation
}

// The remediation table. Within a situation the escalation order is the
// order of this list.
var remedyTable = []Remedy{
	{
		Key: "inference_mode", Name: "torch.inference_mode() / no_grad",
		Kind: SavingNone, SavingWords: "the autograd graph and saved activations",
		Cost: "none", Effort: "easy",
		How:     "wrap inference in with torch.inference_mode(): (or torch.no_grad())",
		Applies: Inference,
	},
	{
		Key: "smaller_batch", Name: "halve the batch size",
		Kind: SavingUpTo, Fraction: 0.5, SavingWords: "~50% of activations",
		Cost: "none per sample, more steps", Effort: "easy",
		How:     "halve batch_size (also the sequence length, where it drives memory)",
		Applies: Training | Inference,
	},
	{
		Key: "gradient_accumulation", Name: "gradient accumulation (keep the effective batch)",
		Kind: SavingUpTo, Fraction: 0.5, SavingWords: "that of the smaller batch (~50% of activations)",
		Cost: "more steps per update, same effective batch", Effort: "easy",
		How:     "run k micro-batches of batch/k, divide the loss by k, call optimizer.step() and zero_grad() every k backward passes",
		Applies: Training,
	},
	{
		Key: "mixed_precision", Name: "mixed precision (autocast + GradScaler)",
		Kind: SavingFraction, Fraction: 0.3, SavingWords: "~30%",
		Cost: "slight", Effort: "medium",
		How:     "with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16): ... (float16 needs torch.amp.GradScaler)",
		Applies: Training,
	},
	{
		Key: "gradient_checkpointing", Name: "gradient checkpointing",
		Kind: SavingFraction, Fraction: 0.5, SavingWords: "~50%",
		Cost: "~30% more time", Effort: "medium",
		How:     "torch.utils.checkpoint.checkpoint(block, x) around blocks, or model.gradient_checkpointing_enable() (Hugging Face)",
		Applies: Training,
	},
	{
		Key: "model_parallelism", Name: "model parallelism or ZeRO sharding",
		Kind: SavingDevices, SavingWords: "divides by the number of devices",
		Cost: "communication", Effort: "hard",
		How:     "FSDP or DeepSpeed ZeRO (stage 2/3) shards optimizer state, gradients and parameters; tensor or pipeline parallelism splits the layers",
		Applies: Training,
	},
	{
		Key: "quantization", Name: "8-bit quantization",
		Kind: SavingFraction, Fraction: 0.75, SavingWords: "~75%",
		Cost: "some accuracy loss", Effort: "fairly hard",
		How:     "torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8), or load the weights in 8 bits",
		Applies: Inference,
	},
	{
		Key: "split_model", Name: "split the model across devices",
		Kind: SavingDevices, SavingWords: "divides by the number of devices",
		Cost: "communication", Effort: "hard",
		How:     "device_map=\"auto\" (Accelerate), or tensor / pipeline parallelism",
		Applies: Inference,
	},
	{
		Key: "expandable_segments", Name: "expandable segments (against fragmentation)",
		Kind: SavingHeld, SavingWords: "up to the memory reserved but unallocated",
		Cost: "none", Effort: "easy",
		How:     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
		Applies: Fragmentation,
	},
	{
		Key: "max_split_size", Name: "max_split_size_mb (older PyTorch)",
		Kind: SavingHeld, SavingWords: "up to the memory reserved but unallocated",
		Cost: "slight", Effort: "easy",
		How:     "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 (try 64-512)",
		Applies: Fragmentation,
	},
	{
		Key: "another_gpu", Name: "use a freer GPU",
		Kind: SavingHeld, SavingWords: "the memory other processes hold here",
		Cost: "none", Effort: "easy",
		How:     "CUDA_VISIBLE_DEVICES=$(vramtop pick) python train.py",
		Applies: Tenants,
	},
	{
		Key: "ask_tenant", Name: "ask the other user to free the card",
		Kind: SavingHeld, SavingWords: "the memory other processes hold here",
		Cost: "none", Effort: "a message",
		How:     "vramtop shows who holds the memory; their idle processes can call torch.cuda.empty_cache() or exit",
		Applies: Tenants,
	},
	{
		Key: "tf_memory_growth", Name: "TensorFlow memory growth",
		Kind: SavingNone, SavingWords: "stops TensorFlow from taking nearly all memory up front",
		Cost: "none", Effort: "easy",
		How:     "tf.config.experimental.set_memory_growth(gpu, True) for each GPU, before any op (or TF_FORCE_GPU_ALLOW_GROWTH=true)",
		Applies: TensorFlow,
	},
	{
		Key: "tf_memory_limit", Name: "TensorFlow memory limit",
		Kind: SavingNone, SavingWords: "caps what this process takes",
		Cost: "none", Effort: "easy",
		How:     "tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=MiB)])",
		Applies: TensorFlow,
	},
	{
		Key: "tf_malloc_async", Name: "TensorFlow: the CUDA async allocator",
		Kind: SavingNone, SavingWords: "avoids fragmentation in the BFC allocator",
		Cost: "none", Effort: "easy",
		How:     "TF_GPU_ALLOCATOR=cuda_malloc_async",
		Applies: TensorFlow,
	},
	{
		// Offered by the explainer when a memory fraction limit is what ran out.
		Key: "memory_fraction", Name: "raise the per-process memory fraction",
		Kind: SavingHeld, SavingWords: "the free memory above the limit",
		Cost: "less room for other processes", Effort: "easy",
		How: "torch.cuda.set_per_process_memory_fraction(f) with a larger f, or without the call",
	},
	{
		// Offered by the explainer for CuPy.
		Key: "cupy_chunks", Name: "CuPy: work in smaller chunks",
		Kind: SavingNone, SavingWords: "the arrays of one chunk instead of all",
		Cost: "more kernel launches", Effort: "medium",
		How: "split the arrays and process them a slice at a time; del temporaries",
	},
	{
		// Offered by the explainer for CuPy.
		Key: "cupy_pool", Name: "CuPy: release the memory pool",
		Kind: SavingNone, SavingWords: "blocks the pool caches but does not use",
		Cost: "slower next allocations", Effort: "easy",
		How: "cupy.get_default_memory_pool().free_all_blocks() (and the pinned pool's)",
	},
	{
		Key: "release_references", Name: "keep no memory alive needlessly",
		Kind: SavingNone, SavingWords: "what stale references hold",
		Cost: "none", Effort: "easy",
		How:     "optimizer.zero_grad() every step; log loss.item(), not loss; del big intermediates; memory that grows every step is a leak",
		Applies: Habits,
	},
	{
		Key: "empty_cache", Name: "return cached blocks to the driver",
		Kind: SavingNone, SavingWords: "frees cache for other processes, not this process's live tensors",
		Cost: "slower next allocations", Effort: "easy",
		How:     "gc.collect(); torch.cuda.empty_cache()",
		Applies: Habits,
	},
	{
		Key: "launch_blocking", Name: "find where memory really ran out",
		Kind: SavingNone, SavingWords: "none: it makes the stack trace point at the failing call",
		Cost: "slower run, for debugging only", Effort: "easy",
		How:     "CUDA_LAUNCH_BLOCKING=1 python ... (kernel errors are reported asynchronously, at a later call)",
		Applies: NoNumbers,
	},
	{
		Key: "jax_preallocate", Name: "JAX: allocate on demand",
		Kind: SavingNone, SavingWords: "stops JAX from taking 75% of the card up front",
		Cost: "slight (more allocator work)", Effort: "easy",
		How:     "XLA_PYTHON_CLIENT_PREALLOCATE=false, or a smaller share: XLA_PYTHON_CLIENT_MEM_FRACTION=.50",
		Applies: JAX,
	},
	{
		Key: "mps_watermark", Name: "MPS: raise the memory limit",
		Kind: SavingNone, SavingWords: "lifts the max allowed",
		Cost: "the system may swap or fail", Effort: "easy",
		How:     "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 removes the upper limit (at your own risk)",
		Applies: MPS,
	},
	{
		Key: "vllm_gpu_memory_utilization", Name: "vLLM: give the engine more of the card",
		Kind: SavingNone, SavingWords: "more memory for the KV cache",
		Cost: "less room for other processes", Effort: "easy",
		How:     "--gpu-memory-utilization 0.95 (gpu_memory_utilization=0.95), when nothing else needs the card",
		Applies: VLLM,
	},
	{
		Key: "vllm_max_model_len", Name: "vLLM: lower max_model_len",
		Kind: SavingNone, SavingWords: "the KV cache one sequence needs shrinks with it",
		Cost: "shorter contexts", Effort: "easy",
		How:     "--max-model-len N (max_model_len=N)",
		Applies: VLLM,
	},
	{
		Key: "vllm_kv_cache_fp8", Name: "vLLM: FP8 KV cache",
		Kind: SavingUpTo, Fraction: 0.5, SavingWords: "~50% of the KV cache",
		Cost: "slight accuracy loss", Effort: "easy",
		How:     "--kv-cache-dtype fp8",
		Applies: VLLM,
	},
	{
		Key: "vllm_tensor_parallel", Name: "vLLM: split the model over GPUs",
		Kind: SavingNone, SavingWords: "divides the weights by the number of GPUs, leaving more for the KV cache",
		Cost: "communication, more GPUs", Effort: "easy",
		How:     "--tensor-parallel-size 2",
		Applies: VLLM,
	},
	{
		Key: "llama_gpu_layers", Name: "llama.cpp: offload fewer layers to the GPU",
		Kind: SavingNone, SavingWords: "the weights of the layers kept on the CPU",
		Cost: "slower generation", Effort: "easy",
		How:     "-ngl / --n-gpu-layers N with a smaller N (Ollama: num_gpu)",
		Applies: LlamaCpp,
	},
	{
		Key: "llama_context", Name: "llama.cpp: a smaller context",
		Kind: SavingNone, SavingWords: "the KV cache shrinks with the context length",
		Cost: "shorter prompts and answers", Effort: "easy",
		How:     "-c / --ctx-size 4096 (Ollama: num_ctx)",
		Applies: LlamaCpp,
	},
	{
		Key: "llama_kv_quant", Name: "llama.cpp: quantized KV cache",
		Kind: SavingNone, SavingWords: "~50% of the KV cache with q8_0",
		Cost: "slight accuracy loss", Effort: "easy",
		How:     "-ctk q8_0 -ctv q8_0 (needs -fa; Ollama: OLLAMA_KV_CACHE_TYPE=q8_0)",
		Applies: LlamaCpp,
	},
	{
		Key: "llama_smaller_quant", Name: "llama.cpp: a smaller quantization of the model",
		Kind: SavingNone, SavingWords: "Q4_K_M is about half of Q8_0",
		Cost: "some accuracy loss", Effort: "easy",
		How:     "download the Q4_K_M (or Q5_K_M) GGUF of the model",
		Applies: LlamaCpp,
	},
	{
		Key: "ort_arena", Name: "ONNX Runtime: cap and tighten the arena",
		Kind: SavingNone, SavingWords: "stops the arena from doubling past what is needed",
		Cost: "slight", Effort: "easy",
		How:     "CUDAExecutionProvider options gpu_mem_limit=<bytes> and arena_extend_strategy=kSameAsRequested",
		Applies: Serving,
	},
	{
		Key: "trt_workspace", Name: "TensorRT: a smaller workspace",
		Kind: SavingNone, SavingWords: "the builder's scratch memory",
		Cost: "possibly slower kernels", Effort: "easy",
		How:     "config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, <bytes>) (trtexec --memPoolSize=workspace:<MiB>)",
		Applies: Serving,
	},
	{
		Key: "sglang_mem_fraction", Name: "SGLang: a larger static memory fraction",
		Kind: SavingNone, SavingWords: "more of the card for the KV cache pool",
		Cost: "less room for activations and other processes", Effort: "easy",
		How:     "--mem-fraction-static 0.9 (or lower --max-running-requests / --context-length / --chunked-prefill-size)",
		Applies: Serving,
	},
	{
		Key: "tgi_prefill", Name: "TGI: smaller prefill batches",
		Kind: SavingNone, SavingWords: "the activations of the largest prefill",
		Cost: "lower throughput", Effort: "easy",
		How:     "--max-batch-prefill-tokens lower (and --max-input-tokens, --max-total-tokens to match)",
		Applies: Serving,
	},
}

// remedyByKey returns the table row with the given key.
func remedyByKey(key string) (Remedy, bool) {
	for _, r := range remedyTable {
		if r.Key == key {
			return r, true
		}
	}
	return Remedy{}, false
}

// Remedies returns the remediation table rows that apply to any of the
// situations in s, in escalation order. The slice is a copy.
func Remedies(s Situation) []Remedy {
	var out []Remedy
	for _, r := range remedyTable {
		if r.Applies&s != 0 {
			out = append(out, r)
		}
	}
	return out
}

// Estimate translates the remedy's saving into bytes of the memory it acts
// on: the process's memory for fractions and device splits, the held memory
// (cache, other tenants) for SavingHeld. A zero base gives the wording only.
func (r Remedy) Estimate(base uint64) RemedyEstimate {
	e := RemedyEstimate{Name: r.Name, Saving: r.SavingWords, Cost: r.Cost, Effort: r.Effort, How: r.How}
	if base == 0 {
		if r.Kind != SavingNone {
			e.Saving += " (estimate)"
		}
		return e
	}
	switch r.Kind {
	case SavingFraction:
		e.SavingBytes = uint64(float64(base) * r.Fraction)
		e.Saving = fmt.Sprintf("%s ≈ %s of %s (estimate)", r.SavingWords, FormatBytes(e.SavingBytes), FormatBytes(base))
	case SavingUpTo:
		e.SavingBytes = uint64(float64(base) * r.Fraction)
		e.Saving = fmt.Sprintf("%s, at most ≈ %s of %s (estimate)", r.SavingWords, FormatBytes(e.SavingBytes), FormatBytes(base))
	case SavingDevices:
		e.SavingBytes = base / 2
		e.Saving = fmt.Sprintf("%s: ≈ %s of %s with 2 (estimate)", r.SavingWords, FormatBytes(e.SavingBytes), FormatBytes(base))
	case SavingHeld:
		e.SavingBytes = base
		e.Saving = fmt.Sprintf("%s: up to %s (estimate)", r.SavingWords, FormatBytes(base))
	}
	return e
}

func estimates(s Situation, base uint64) []RemedyEstimate {
	rs := Remedies(s)
	out := make([]RemedyEstimate, len(rs))
	for i, r := range rs {
		out[i] = r.Estimate(base)
	}
	return out
}

// TrainingRemedies returns the training remedies in escalation order
// (smaller batch, gradient accumulation, mixed precision, gradient
// checkpointing, model parallelism / ZeRO), each saving translated into
// bytes of a process holding processBytes (0: unknown, wording only).
func TrainingRemedies(processBytes uint64) []RemedyEstimate {
	return estimates(Training, processBytes)
}

// TrainingRemediesFor is TrainingRemedies with the concrete steps of the
// framework ("pytorch", "tensorflow", "jax"; others get PyTorch's).
func TrainingRemediesFor(framework string, processBytes uint64) []RemedyEstimate {
	rs := Remedies(Training)
	out := make([]RemedyEstimate, len(rs))
	f := frameworks[framework]
	for i, r := range rs {
		if how, ok := f.how[r.Key]; f != nil && ok {
			r.How = how
		}
		out[i] = r.Estimate(processBytes)
	}
	return out
}

// InferenceRemedies returns the inference remedies in order (inference
// mode, smaller batch, 8-bit quantization, splitting the model), savings in
// bytes of a process holding processBytes.
func InferenceRemedies(processBytes uint64) []RemedyEstimate {
	return estimates(Inference, processBytes)
}

// FragmentationRemedies returns the allocator settings against
// fragmentation; their saving is up to the reserved-but-unallocated memory.
func FragmentationRemedies(reservedUnallocated uint64) []RemedyEstimate {
	return estimates(Fragmentation, reservedUnallocated)
}

// TenantRemedies returns the remedies for memory held by others on the
// card (otherBytes of it). freerGPU, when not empty, names a freer GPU's
// index, used in place of $(vramtop pick).
func TenantRemedies(otherBytes uint64, freerGPU string) []RemedyEstimate {
	out := estimates(Tenants, otherBytes)
	if freerGPU != "" {
		for i := range out {
			out[i].How = strings.ReplaceAll(out[i].How, "$(vramtop pick)", freerGPU)
		}
	}
	return out
}

// TensorFlowRemedies returns memory growth and a memory limit.
func TensorFlowRemedies() []RemedyEstimate { return estimates(TensorFlow, 0) }

// HabitRemedies returns the code habits that keep memory alive needlessly.
func HabitRemedies() []RemedyEstimate { return estimates(Habits, 0) }

// RankRemedies orders remedies by whether their estimated saving covers
// the shortfall: those that cover it first, then the rest, each group in
// its given (escalation) order, and marks those that cover it. With a zero
// shortfall (unknown or none) the order is kept and none is marked.
func RankRemedies(list []RemedyEstimate, shortfall uint64) []RemedyEstimate {
	out := make([]RemedyEstimate, 0, len(list))
	if shortfall == 0 {
		for _, r := range list {
			r.Covers = false
			out = append(out, r)
		}
		return out
	}
	var rest []RemedyEstimate
	for _, r := range list {
		r.Covers = r.SavingBytes >= shortfall
		if r.Covers {
			out = append(out, r)
		} else {
			rest = append(rest, r)
		}
	}
	return append(out, rest...)
}

// FormatBytes writes a size in the largest binary unit that keeps it at
// least 1 (B, KiB, MiB, GiB, TiB), with at most two decimals: "21 GiB",
// "1.5 MiB", "512 B".
func FormatBytes(b uint64) string {
	return units.FormatSize(b, units.Precise)
}
