package advisor

import (
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
	// Kind is the memory that ran out: "gpu" (the card's memory),
	// "gpu_shared_memory" (a GPU kernel's on-chip shared memory, not the
	// card's memory), "pinned_host" (page-locked host memory for
	// transfers), "host" (the machine's RAM), or "memory_pressure" (a
	// warning that memory is nearly full, not a failure).
	Kind string `json:"kind,omitempty"`
	// Confidence is "likely" when the message does not say memory ran out
	// but its kind and what surrounds it point there (Reason says why);
	// absent when the message says so.
	Confidence string `json:"confidence,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Framework: "pytorch", "tensorflow", "jax", "vllm", "mps", "cuda",
	// "cublas", "cudnn", "llama.cpp", "onnxruntime", "tensorrt", "tgi",
	// "sglang", "cupy", "paddle", "mxnet", "triton", "deepspeed",
	// "kernel" (the Linux OOM killer), "process" (a process killed by
	// SIGKILL).
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

	// The BFC allocator's statistics (TensorFlow, XLA): MaxInUse,
	// NumAllocs, MaxAllocSize, LargestFreeBlock.
	PeakAllocatedBytes    *uint64 `json:"peak_allocated_bytes,omitempty"`
	NumAllocs             *uint64 `json:"num_allocs,omitempty"`
	MaxAllocSizeBytes     *uint64 `json:"max_alloc_size_bytes,omitempty"`
	LargestFreeBlockBytes *uint64 `json:"largest_free_block_bytes,omitempty"`
	// CacheFlushes: DeepSpeed's count of allocator cache flushes in the
	// last step.
	CacheFlushes *uint64 `json:"cache_flushes,omitempty"`

	// TensorFlow, NumPy: the tensor or array that did not fit.
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

	kind  fmtKind
	stats bool // an allocator's statistics: they complete the message before
	key   string
	ctx   anchorCtx // while parsing: where the anchor matched
}

// ProcessMemory is one "Process P has X memory in use" of a PyTorch message.
type ProcessMemory struct {
	PID   uint64 `json:"pid"`
	Bytes uint64 `json:"bytes"`
	// Name is the command, where the message names it (the OOM killer).
	Name string `json:"name,omitempty"`
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
	anchor    *pattern
	// accept, when set, tells a message from prose that mentions one.
	accept func(c anchorCtx) bool
	// acceptLine is accept for a format that decides by the anchor's
	// cleaned line alone: it is asked once a line, however many anchors
	// the line holds.
	acceptLine func(line string) bool
	// tail marks a format that reads the end of another's message (a
	// message whose head was cut off): a hit shortly after one of the
	// same framework is part of it.
	tail  bool
	parse func(seg, line string, e *Explanation)
	// lits: the anchor is tried only on a region whose cleaned text,
	// squeezed (lower case, no white space), holds one of these; every
	// match of the anchor holds one.
	lits []string
}

// mayMatch tells whether fm's anchor can match a region whose squeezed
// text is sq.
func (fm *oomFormat) mayMatch(sq string) bool {
	if len(fm.lits) == 0 {
		return true
	}
	for _, l := range fm.lits {
		if strings.Contains(sq, l) {
			return true
		}
	}
	return false
}

const maxSeg = 8000

// tailReach: a tail format's hit this close after the start of a message
// of its framework is that message's tail.
const tailReach = 600

// anchorCtx is where an anchor matched: text is the cleaned region, at the
// anchor's offset in it, before the text of its line before the anchor,
// line the whole cleaned line.
type anchorCtx struct {
	text       string
	at         int
	before     string
	line       string
	lineOffset int // where line starts in text
}

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
func Explain(log string) Explanation { return explain(log, true) }

// explain is Explain; gate false tries every format's anchor in every
// region (tests check that the lits gate changes no result).
func explain(log string, gate bool) Explanation { return explainRegions(log, regions(log), gate) }

// explainRegions is explain over the regions of log given.
func explainRegions(log string, rs []region, gate bool) Explanation {
	var fd folder
	for _, r := range rs {
		explainRegion(log[r.start:r.end], r.line, &fd, gate)
	}
	if fd.n == 0 {
		return Explanation{Found: false}
	}
	last := fd.last
	last.MessagesFound = fd.n
	if last.Framework == "" { // BFC statistics alone
		last.Framework = "tensorflow"
	}
	if last.Kind == "" {
		last.Kind = "gpu"
		if last.Host {
			last.Kind = "pinned_host"
		}
	}
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
func explainRegion(text string, firstLine int, fd *folder, gate bool) {
	f := flatten(text)
	type hit struct {
		start, end int
		fm         *oomFormat
	}
	var hits []hit
	sq := string(squeeze(nil, f.text))
	for i := range formats {
		fm := &formats[i]
		if gate && !fm.mayMatch(sq) {
			continue
		}
		lineSeen, lineOK := -1, false
		for _, loc := range fm.anchor.FindAllStringIndex(f.text, -1) {
			if fm.acceptLine != nil {
				if li := f.lineAt(loc[0]); li != lineSeen {
					lineSeen, lineOK = li, fm.acceptLine(f.lines[li])
				}
				if !lineOK {
					continue
				}
			}
			if fm.accept != nil {
				li := f.lineAt(loc[0])
				c := anchorCtx{text: f.text, at: loc[0], before: f.text[f.start[li]:loc[0]], line: f.lines[li], lineOffset: f.start[li]}
				if !fm.accept(c) {
					continue
				}
			}
			hits = append(hits, hit{loc[0], loc[1], fm})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].start < hits[j].start })
	// Drop hits that start inside an earlier hit's anchor, and a tail
	// that belongs to the message before it.
	kept := hits[:0]
	for _, h := range hits {
		if n := len(kept); n > 0 {
			prev := kept[n-1]
			if h.start < prev.end || h.fm.tail && prev.fm.framework == h.fm.framework && h.start-prev.start < tailReach {
				continue
			}
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
		e.ctx = anchorCtx{text: f.text, at: h.start}
		h.fm.parse(f.text[h.start:segEnd], pathContext(f, li, h.start), &e)
		e.ctx = anchorCtx{}
		fd.add(e)
	}
}

// pathContext is the text that names the source path of the message at
// offset at, line li: the cleaned text just before it (the lines a
// terminal wrapped it from), then its own raw line (its logger prefix). Of
// a raw line longer than pathLine bytes (a log that lost its line breaks,
// holding many messages) it keeps the start and the pathLine bytes around
// the message, so that each message costs the same however long its line.
func pathContext(f *flatLog, li, at int) string {
	raw := f.raw[li]
	if len(raw) > pathLine {
		// The cleaned line is the raw one without its logger prefixes.
		off := len(raw) - len(f.lines[li]) + at - f.start[li]
		lo, hi := max(0, off-pathLine/2), min(len(raw), off+pathLine/2)
		raw = raw[:min(pathLine/4, lo)] + " " + raw[lo:hi]
	}
	return f.text[max(0, at-300):at] + "\n" + raw
}

// pathLine bounds the raw line that pathContext gives.
const pathLine = 1024

// A folder keeps the last message of a log and counts them, merging an
// allocator's warnings into the TensorFlow or JAX error that follows them,
// and a TensorFlow/JAX error restated (logged, then raised) into one
// message.
type folder struct {
	last Explanation
	n    int
}

func (fd *folder) add(m Explanation) {
	if fd.n > 0 && m.Framework == "process" && fd.last.Kind == "host" && fd.last.Confidence == "" {
		return // the exit status of a kill already explained (OOMKilled, the OOM killer)
	}
	if fd.n > 0 {
		prev := fd.last
		merge := false
		switch {
		case prev.kind == kindAllocator && m.kind == kindAllocator:
			merge = true
		case prev.kind == kindAllocator && m.spec().foldsWarnings:
			merge = true
		case m.kind == kindError && prev.kind == kindError && m.key != "" && m.key == prev.key:
			merge = true
		}
		if merge && m.stats {
			prev.fillFrom(m) // the message stays the one the statistics follow
			fd.last = prev
			return
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
	fill(&e.PeakAllocatedBytes, p.PeakAllocatedBytes)
	fill(&e.NumAllocs, p.NumAllocs)
	fill(&e.MaxAllocSizeBytes, p.MaxAllocSizeBytes)
	fill(&e.LargestFreeBlockBytes, p.LargestFreeBlockBytes)
	if e.Device == nil {
		e.Device = p.Device
	}
	if e.Shape == "" {
		e.Shape, e.DType = p.Shape, p.DType
	}
	e.Host = e.Host || p.Host
	if p.Framework != "" && (e.Framework == "" || e.spec().generic && !p.spec().generic) {
		e.Framework = p.Framework
	}
	if e.Backend == "" {
		e.Backend = p.Backend
	}
}

// shortText trims s to at most n bytes, dropping whole words.
func shortText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	// Drop the cut word: a number cut short reads as another number.
	if i := strings.LastIndexByte(s[:n], ' '); i > 0 {
		n = i
	}
	return s[:n] + " …"
}
