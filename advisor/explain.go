package advisor

import (
	"regexp"
	"sort"
	"strings"
	"unsafe"
)

// Explanation is what `vramtop explain` finds in a log: the last
// out-of-memory message, its numbers, where the memory went and what to do.
// The JSON field names are fixed. A *_bytes field at the top level is
// present only when the message states that number (converted exactly from
// its unit); figures worked out from them are under "derived".
type Explanation struct {
	Found bool `json:"found"`
	// Framework: "pytorch", "tensorflow", "jax", "vllm", "mps", "cuda",
	// "cublas", "cudnn", "llama.cpp", "onnxruntime", "tensorrt", "tgi".
	Framework string `json:"framework,omitempty"`
	// Backend is "hip" (ROCm) or "xpu" (Intel) for PyTorch builds other than CUDA.
	Backend string `json:"backend,omitempty"`
	Device  *int   `json:"device,omitempty"`

	RequestedBytes *uint64 `json:"requested_bytes,omitempty"`
	// RequestedFromShape: requested_bytes is the tensor's shape times its
	// element size (TensorFlow prints no size), not a printed number.
	RequestedFromShape bool    `json:"requested_from_shape,omitempty"`
	TotalBytes         *uint64 `json:"total_bytes,omitempty"`
	FreeBytes          *uint64 `json:"free_bytes,omitempty"`
	// AllowedBytes is a limit below the card's capacity: PyTorch's memory
	// fraction ("Y allowed"), MPS's "max allowed", the TensorFlow/XLA BFC
	// allocator's "Limit".
	AllowedBytes              *uint64         `json:"allowed_bytes,omitempty"`
	AllocatedByFrameworkBytes *uint64         `json:"allocated_by_framework_bytes,omitempty"`
	ReservedByFrameworkBytes  *uint64         `json:"reserved_by_framework_bytes,omitempty"`
	ReservedUnallocatedBytes  *uint64         `json:"reserved_unallocated_bytes,omitempty"`
	PrivatePoolsBytes         *uint64         `json:"private_pools_bytes,omitempty"`
	OtherAllocationsBytes     *uint64         `json:"other_allocations_bytes,omitempty"`
	ThisProcessBytes          *uint64         `json:"this_process_bytes,omitempty"`
	Processes                 []ProcessMemory `json:"processes,omitempty"`

	// TensorFlow: the tensor that did not fit.
	Shape string `json:"shape,omitempty"`
	DType string `json:"dtype,omitempty"`
	// vLLM.
	MaxModelLen          *uint64  `json:"max_model_len,omitempty"`
	KVCacheTokens        *uint64  `json:"kv_cache_tokens,omitempty"`
	MaxModelLenFits      *uint64  `json:"max_model_len_fits,omitempty"`
	GPUMemoryUtilization *float64 `json:"gpu_memory_utilization,omitempty"`
	// TGI: the prefill tokens that did not fit at warm-up.
	PrefillTokens *uint64 `json:"prefill_tokens,omitempty"`
	// Host is true when the failed allocation was of pinned host memory.
	Host bool `json:"host,omitempty"`

	// MessagesFound counts the out-of-memory messages in the log (an
	// allocator's warnings and the error they lead to count as one).
	MessagesFound int `json:"messages_found,omitempty"`
	// Line is the input line (1-based) where the reported message starts.
	Line int `json:"line,omitempty"`
	// Message is the reported message as found, cleaned and shortened.
	Message string `json:"message,omitempty"`

	Derived   *Derived         `json:"derived,omitempty"`
	Diagnosis string           `json:"diagnosis,omitempty"`
	Remedies  []RemedyEstimate `json:"remedies,omitempty"`
	Live      *LiveView        `json:"live,omitempty"`

	kind fmtKind
	key  string
}

// ProcessMemory is one "Process P has X memory in use" of a PyTorch message.
type ProcessMemory struct {
	PID   uint64 `json:"pid"`
	Bytes uint64 `json:"bytes"`
}

// Derived holds figures worked out from the stated ones; each is labelled
// derived wherever it is shown.
type Derived struct {
	// ShortfallBytes = requested − free (what was missing).
	ShortfallBytes *uint64 `json:"shortfall_bytes,omitempty"`
	// ReservedBytes = allocated + reserved-but-unallocated, when the
	// message gives the parts but not the sum.
	ReservedBytes *uint64 `json:"reserved_bytes,omitempty"`
	// CachedUnusedBytes = reserved − allocated, when the message gives the
	// whole but not this part.
	CachedUnusedBytes *uint64 `json:"cached_unused_bytes,omitempty"`
	// OutsideBytes = total − free − reserved (or − this process): memory
	// held outside the framework's allocator.
	OutsideBytes *uint64 `json:"outside_bytes,omitempty"`
	// OtherProcessesBytes sums the other processes the message lists.
	OtherProcessesBytes *uint64 `json:"other_processes_bytes,omitempty"`
	// LikelyThisProcessPID: the message lists processes but none as "this
	// process" (PyTorch in a container sees host PIDs, not its own); this
	// listed process holds about what this process's allocator reserved
	// (up to contextAllowance more), so it is most likely this process.
	// It is left out of OtherProcessesBytes.
	LikelyThisProcessPID *uint64 `json:"likely_this_process_pid,omitempty"`
	// NonFrameworkBytes = this process − reserved: CUDA context, NCCL,
	// cuDNN/cuBLAS workspaces of this process.
	NonFrameworkBytes *uint64 `json:"non_framework_bytes,omitempty"`
	// AllocatorFreeBytes = allowed − allocated: what the framework's
	// allocator had left under its limit.
	AllocatorFreeBytes *uint64 `json:"allocator_free_bytes,omitempty"`
}

type fmtKind uint8

const (
	kindError fmtKind = iota
	// kindAllocator: an allocator's warning (TensorFlow/XLA BFC, a driver
	// allocation) that precedes the error it leads to.
	kindAllocator
)

// An oomFormat finds one kind of message: anchor marks where a message
// starts, parse reads its numbers from seg (the text from the anchor to the
// next message, at most maxSeg bytes); line is the input line where the
// message starts, logger prefix included.
type oomFormat struct {
	framework string
	anchor    *regexp.Regexp
	// accept, when set, tells a message from prose that mentions one;
	// before is the text of the line before the anchor, line the whole
	// cleaned line.
	accept func(before, seg, line string) bool
	parse  func(seg, line string, e *Explanation)
}

const maxSeg = 8000

// Explain finds the out-of-memory messages in a whole log and explains the
// last one. Found is false when there is none.
//
// It reads PyTorch's messages (old and new, CUDA, HIP and XPU, ≤ 1.4's
// "cached", the cudaMallocAsync backend's, Apple MPS's, a message whose
// head was cut off), "CUDA error: out of memory" and the driver's
// CUDA_ERROR_OUT_OF_MEMORY, cuBLAS/cuDNN ALLOC_FAILED and cuDNN errors
// that are memory exhaustion in disguise, TensorFlow's OOM and BFC
// allocator messages and statistics (folded into one event), JAX/XLA
// RESOURCE_EXHAUSTED, vLLM's KV cache and start-up checks, llama.cpp, ONNX
// Runtime, TensorRT, TGI, SGLang, CuPy, PaddlePaddle, MXNet, Triton's
// shared memory, DeepSpeed's memory-pressure warning and pinned host
// memory, and host RAM running out (PyTorch's CPU allocator, the kernel's
// OOM killer, exit status 137). The log may carry ANSI colours, launcher
// and logger prefixes ([rank3]:, timestamps, ERROR:root:, glog, Ray,
// loguru), progress bars redrawn with \r, messages wrapped over lines, and
// JSON records or escaped text. Only regions around lines that hold a
// message's words are cleaned and searched (see regions).
func Explain(log string) Explanation {
	var fd folder
	for _, r := range regions(log) {
		explainRegion(log[r.start:r.end], r.line, &fd)
	}
	if fd.n == 0 {
		return Explanation{Found: false}
	}
	last := fd.last
	last.MessagesFound = fd.n
	diagnose(&last)
	return last
}

// ExplainBytes is Explain over a log held as bytes, without copying it;
// log must not change during the call.
func ExplainBytes(log []byte) Explanation {
	if len(log) == 0 {
		return Explain("")
	}
	return Explain(unsafe.String(&log[0], len(log)))
}

// explainRegion finds the messages in one region of a log whose first
// line is input line firstLine (0-based) and adds them to fd in order.
func explainRegion(text string, firstLine int, fd *folder) {
	f := flatten(text)
	type hit struct {
		start, end int
		fm         *oomFormat
	}
	var hits []hit
	for i := range formats {
		fm := &formats[i]
		for _, loc := range fm.anchor.FindAllStringIndex(f.text, -1) {
			if fm.accept != nil {
				li := f.lineAt(loc[0])
				before := f.text[f.start[li]:loc[0]]
				if !fm.accept(before, f.text[loc[0]:], f.lines[li]) {
					continue
				}
			}
			hits = append(hits, hit{loc[0], loc[1], fm})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].start < hits[j].start })
	// Drop hits that start inside an earlier hit's anchor.
	kept := hits[:0]
	for _, h := range hits {
		if len(kept) > 0 && h.start < kept[len(kept)-1].end {
			continue
		}
		kept = append(kept, h)
	}
	hits = kept
	for i, h := range hits {
		end := len(f.text)
		if i+1 < len(hits) {
			end = hits[i+1].start
		}
		segEnd := min(end, h.start+maxSeg)
		li := f.lineAt(h.start)
		e := Explanation{Found: true, Framework: h.fm.framework, Line: firstLine + f.src[li] + 1}
		lastLine := f.lineAt(max(h.start, h.end-1))
		e.Message = f.excerpt(li, lastLine, 400)
		h.fm.parse(f.text[h.start:segEnd], f.raw[li], &e)
		fd.add(e)
	}
}

// A folder keeps the last message of a log and counts them, merging an
// allocator's warnings into the TensorFlow or JAX error that follows them,
// and a TensorFlow/JAX error restated (logged, then raised) into one
// message.
type folder struct {
	last Explanation
	n    int
}

func (fd *folder) add(m Explanation) {
	if fd.n > 0 {
		prev := fd.last
		merge := false
		switch {
		case prev.kind == kindAllocator && m.kind == kindAllocator:
			merge = true
		case prev.kind == kindAllocator && (m.Framework == "tensorflow" || m.Framework == "jax"):
			merge = true
		case m.kind == kindError && prev.kind == kindError && m.key != "" && m.key == prev.key:
			merge = true
		}
		if merge {
			m.fillFrom(prev)
			fd.last = m
			return
		}
	}
	fd.last = m
	fd.n++
}

// fillFrom copies into e the numbers it lacks from an earlier message of
// the same event. A printed request replaces one computed from a shape.
func (e *Explanation) fillFrom(p Explanation) {
	fill := func(dst **uint64, src *uint64) {
		if *dst == nil && src != nil {
			*dst = src
		}
	}
	if p.RequestedBytes != nil && e.RequestedFromShape && !p.RequestedFromShape {
		e.RequestedBytes, e.RequestedFromShape = p.RequestedBytes, false
	}
	if e.RequestedBytes == nil && p.RequestedBytes != nil {
		e.RequestedBytes, e.RequestedFromShape = p.RequestedBytes, p.RequestedFromShape
	}
	fill(&e.TotalBytes, p.TotalBytes)
	fill(&e.FreeBytes, p.FreeBytes)
	fill(&e.AllowedBytes, p.AllowedBytes)
	fill(&e.AllocatedByFrameworkBytes, p.AllocatedByFrameworkBytes)
	if e.Device == nil {
		e.Device = p.Device
	}
	if e.Shape == "" {
		e.Shape, e.DType = p.Shape, p.DType
	}
	e.Host = e.Host || p.Host
	if e.Framework == "cuda" && p.Framework != "cuda" {
		e.Framework = p.Framework
	}
}

// shortText trims s to at most n bytes on a rune boundary.
func shortText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
