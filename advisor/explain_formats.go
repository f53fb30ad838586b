package advisor

import (
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Patterns allow optional whitespace (\s*) wherever the message has a
// space: the cleaned log joins wrapped lines with nothing between them.
func re(p string) *pattern {
	pt := &pattern{src: p}
	patterns = append(patterns, pt)
	return pt
}

// pattern is a regular expression compiled on its first use rather than at
// start-up: the explainer's hundred-odd patterns took several milliseconds and
// about 2 MB to compile, which every command (the live view included) paid
// before doing anything. patterns lists them all, for the test that compiles
// each one.
type pattern struct {
	once sync.Once
	src  string
	re   *regexp.Regexp
}

var patterns []*pattern

func (p *pattern) get() *regexp.Regexp {
	p.once.Do(func() { p.re = regexp.MustCompile(p.src) })
	return p.re
}

func (p *pattern) String() string                         { return p.src }
func (p *pattern) MatchString(s string) bool              { return p.get().MatchString(s) }
func (p *pattern) FindString(s string) string             { return p.get().FindString(s) }
func (p *pattern) FindStringIndex(s string) []int         { return p.get().FindStringIndex(s) }
func (p *pattern) FindStringSubmatch(s string) []string   { return p.get().FindStringSubmatch(s) }
func (p *pattern) FindStringSubmatchIndex(s string) []int { return p.get().FindStringSubmatchIndex(s) }
func (p *pattern) FindAllStringIndex(s string, n int) [][]int {
	return p.get().FindAllStringIndex(s, n)
}
func (p *pattern) FindAllStringSubmatch(s string, n int) [][]string {
	return p.get().FindAllStringSubmatch(s, n)
}
func (p *pattern) ReplaceAllString(s, repl string) string { return p.get().ReplaceAllString(s, repl) }

func parseNothing(seg, line string, e *Explanation) {}

// setSize stores the size in groups g[i:i+3] (number, unit, exact).
func setSize(dst **uint64, g []string, i int) {
	if i+2 >= len(g) || g[i] == "" {
		return
	}
	if v, ok := sizeFrom(g[i], g[i+1], g[i+2]); ok {
		*dst = &v
	}
}

func setUint(dst **uint64, s string) {
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		*dst = &v
	}
}

func setDevice(e *Explanation, s string) {
	if v, err := strconv.Atoi(s); err == nil && v >= 0 && v < 1<<20 {
		e.Device = &v
	}
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// PyTorch.
var (
	ptRequest   = re(`^(XPU|HIP|CUDA)\s*out\s*of\s*memory\.?\s*Tried\s*to\s*allocate\s*` + sz)
	ptOld       = re(`^\s*\(\s*GPU\s*(\d+)\s*;([^)]{0,500})`)
	ptOldField  = re(`^\s*` + sz + `\s*(total\s*capacity|already\s*allocated|free|allowed|reserved\s*in\s*total\s*by\s*PyTorch|cached)`)
	ptNewGPU    = re(`GPU\s*(\d+)\s*has\s*a\s*total\s*capac\w*\s*of\s*` + sz)
	ptNewFree   = re(`^\s*of\s*which\s*` + sz + `\s*is\s*free`)
	ptProse     = re(`^(?:CUDA|HIP|XPU)\s*out\s*of\s*memory\s*\.?\s*Tried`)
	ptProcess   = re(`Process\s*(\d+)\s*has\s*` + sz + `\s*memory\s*in\s*use`)
	ptThis      = re(`this\s*process\s*has\s*` + sz + `\s*memory\s*in\s*use`)
	ptAllowed   = re(sz + `\s*allowed;`)
	ptAllocated = re(`Of\s*the\s*allocated\s*memory\s*` + sz + `\s*is\s*allocated\s*by\s*PyTorch`)
	ptPools     = re(`with\s*` + sz + `\s*allocated\s*in\s*private\s*pools`)
	ptUnalloc   = re(`and\s*` + sz + `\s*is\s*reserved\s*by\s*PyTorch\s*but\s*unallocated`)
	ptEnd       = re(`but\s*unallocated`)
)

func parsePyTorch(seg, line string, e *Explanation) {
	m := ptRequest.FindStringSubmatchIndex(seg)
	if m == nil {
		return
	}
	g := submatches(seg, m)
	switch g[1] {
	case "HIP":
		e.Backend = "hip"
	case "XPU":
		e.Backend = "xpu"
	}
	setSize(&e.RequestedBytes, g, 2)
	rest := seg[m[1]:]
	if parsePyTorchOld(rest, e) {
		return
	}
	// The newer message: bound it at its last sentence.
	msg := head(rest, maxSeg)
	if loc := ptEnd.FindStringIndex(msg); loc != nil {
		msg = msg[:loc[1]]
	}
	if m := ptNewGPU.FindStringSubmatchIndex(msg); m != nil {
		g := submatches(msg, m)
		setDevice(e, g[1])
		setSize(&e.TotalBytes, g, 2)
		if f := ptNewFree.FindStringSubmatch(msg[m[1]:]); f != nil {
			setSize(&e.FreeBytes, f, 1)
		}
	}
	procs := msg
	if i := strings.Index(procs, "Of the allocated"); i >= 0 {
		procs = procs[:i]
	}
	for _, p := range ptProcess.FindAllStringSubmatch(procs, -1) {
		pid, err := strconv.ParseUint(p[1], 10, 64)
		b, ok := sizeFrom(p[2], p[3], p[4])
		if err == nil && ok {
			e.Processes = append(e.Processes, ProcessMemory{PID: pid, Bytes: b})
		}
	}
	if g := ptThis.FindStringSubmatch(msg); g != nil {
		setSize(&e.ThisProcessBytes, g, 1)
	}
	if g := ptAllowed.FindStringSubmatch(msg); g != nil {
		setSize(&e.AllowedBytes, g, 1)
	}
	if g := ptAllocated.FindStringSubmatch(msg); g != nil {
		setSize(&e.AllocatedByFrameworkBytes, g, 1)
	}
	if g := ptPools.FindStringSubmatch(msg); g != nil {
		setSize(&e.PrivatePoolsBytes, g, 1)
	}
	if g := ptUnalloc.FindStringSubmatch(msg); g != nil {
		setSize(&e.ReservedUnallocatedBytes, g, 1)
	}
}

// parsePyTorchOld reads the fields of the older message's "(GPU 0; X total
// capacity; Y already allocated; ...)" at the start of rest, the closing
// parenthesis optional (pasted messages lose it). ok is false when rest
// does not start so.
func parsePyTorchOld(rest string, e *Explanation) (ok bool) {
	o := ptOld.FindStringSubmatch(rest)
	if o == nil {
		return false
	}
	setDevice(e, o[1])
	fields := map[string]**uint64{
		"totalcapacity": &e.TotalBytes, "alreadyallocated": &e.AllocatedByFrameworkBytes, "free": &e.FreeBytes,
		"allowed": &e.AllowedBytes, "reservedintotalbyPyTorch": &e.ReservedByFrameworkBytes,
		"cached": &e.ReservedUnallocatedBytes, // PyTorch ≤ 1.4: reserved but not allocated
	}
	for _, part := range strings.Split(o[2], ";") {
		if f := ptOldField.FindStringSubmatch(part); f != nil {
			if dst, ok := fields[strings.Join(strings.Fields(f[4]), "")]; ok {
				setSize(dst, f, 1)
			}
		}
	}
	return true
}

// acceptPyTorch tells a PyTorch message from prose that mentions one ("to
// avoid CUDA out of memory errors"): the message names the request, or
// stands at the start of a line or after "SomethingError:".
func acceptPyTorch(c anchorCtx) bool {
	if ptProse.MatchString(head(c.text[c.at:], 200)) {
		return true
	}
	// The end of what comes before (TrimSpace would read a long line's
	// start again at each anchor).
	b := strings.TrimRightFunc(c.before, unicode.IsSpace)
	return b == "" || strings.HasSuffix(b, ":") || strings.HasSuffix(b, "('") || strings.HasSuffix(b, "(\"")
}

// PyTorch's cudaMallocAsync backend:
// "Allocation on device 0 would exceed allowed memory. (out of memory)
// Currently allocated : 7.72 GiB Requested : 2.00 GiB Device limit : 7.79
// GiB Free (according to CUDA): 20.94 MiB PyTorch limit (set by
// user-supplied memory fraction) : 17179869184.00 GiB".
var (
	maDevice    = re(`Allocation\s*on\s*device\s*(\d+)`)
	maAllocated = re(`Currently\s*allocated\s*:\s*` + sz)
	maRequested = re(`Requested\s*:\s*` + sz)
	maLimit     = re(`Device\s*limit\s*:\s*` + sz)
	maFree      = re(`Free\s*\(according\s*to\s*CUDA\)\s*:\s*` + sz)
	maAllowed   = re(`PyTorch\s*limit\s*\(set\s*by\s*user-supplied\s*memory\s*fraction\)\s*:\s*` + sz)
)

func parseMallocAsync(seg, line string, e *Explanation) {
	seg = head(seg, 800)
	if g := maDevice.FindStringSubmatch(seg); g != nil {
		setDevice(e, g[1])
	}
	for _, x := range []struct {
		re  *pattern
		dst **uint64
	}{{maAllocated, &e.AllocatedByFrameworkBytes}, {maRequested, &e.RequestedBytes}, {maLimit, &e.TotalBytes}, {maFree, &e.FreeBytes}, {maAllowed, &e.AllowedBytes}} {
		if g := x.re.FindStringSubmatch(seg); g != nil {
			setSize(x.dst, g, 1)
		}
	}
}

// CuPy: "Out of memory allocating 1,073,741,824 bytes (allocated so far:
// 2,147,483,648 bytes)."
var (
	cupyRequest   = re(`Out\s*of\s*memory\s*allocating\s*(\d{1,3}(?:,\d{3})+|\d+)\s*bytes`)
	cupyAllocated = re(`allocated\s*so\s*far:\s*(\d{1,3}(?:,\d{3})+|\d+)\s*bytes`)
)

func parseCuPy(seg, line string, e *Explanation) {
	seg = head(seg, 300)
	if g := cupyRequest.FindStringSubmatch(seg); g != nil {
		setUint(&e.RequestedBytes, strings.ReplaceAll(g[1], ",", ""))
	}
	if g := cupyAllocated.FindStringSubmatch(seg); g != nil {
		setUint(&e.AllocatedByFrameworkBytes, strings.ReplaceAll(g[1], ",", ""))
	}
}

// PaddlePaddle: "Out of memory error on GPU 0. Cannot allocate 1.000000GB
// memory on GPU 0, 15.437500GB memory has been allocated and available
// memory is only 70.750000MB."
var (
	paddleDevice    = re(`^Out\s*of\s*memory\s*error\s*on\s*GPU\s*(\d+)`)
	paddleRequest   = re(`Cannot\s*allocate\s*` + sz)
	paddleAllocated = re(sz + `\s*memory\s*has\s*been\s*allocated`)
	paddleFree      = re(`available\s*memory\s*is\s*only\s*` + sz)
)

func parsePaddle(seg, line string, e *Explanation) {
	seg = head(seg, 500)
	if g := paddleDevice.FindStringSubmatch(seg); g != nil {
		setDevice(e, g[1])
	}
	for _, x := range []struct {
		re  *pattern
		dst **uint64
	}{{paddleRequest, &e.RequestedBytes}, {paddleAllocated, &e.AllocatedByFrameworkBytes}, {paddleFree, &e.FreeBytes}} {
		if g := x.re.FindStringSubmatch(seg); g != nil {
			setSize(x.dst, g, 1)
		}
	}
}

// llama.cpp (and Ollama, which runs it): "allocating 8192.00 MiB on device
// 0: cudaMalloc failed: out of memory", "failed to allocate CUDA0 buffer of
// size 8589934592", "unable to allocate CUDA0 buffer".
var (
	llamaAlloc  = re(`^allocating\s*` + sz + `\s*on\s*device\s*(\d+)`)
	llamaBuffer = re(`^failed\s*to\s*allocate\s*(?:CUDA|ROCm|Metal|Vulkan|SYCL)(\d*)\s*buffer\s*of\s*size\s*(\d+)`)
	llamaUnable = re(`^unable\s*to\s*allocate\s*(?:CUDA|ROCm|Metal|Vulkan|SYCL)(\d*)`)
)

func parseLlama(seg, line string, e *Explanation) {
	e.key = "llama.cpp"
	if g := llamaAlloc.FindStringSubmatch(seg); g != nil {
		setSize(&e.RequestedBytes, g, 1)
		setDevice(e, g[4])
	} else if g := llamaBuffer.FindStringSubmatch(seg); g != nil {
		if g[1] != "" {
			setDevice(e, g[1])
		}
		setUint(&e.RequestedBytes, g[2])
	} else if g := llamaUnable.FindStringSubmatch(seg); g != nil && g[1] != "" {
		setDevice(e, g[1])
	}
}

// ONNX Runtime's arena: "Failed to allocate memory for requested buffer of size N".
var ortSize = re(`^Failed\s*to\s*allocate\s*memory\s*for\s*requested\s*buffer\s*of\s*size\s*(\d+)`)

func parseORT(seg, line string, e *Explanation) {
	if g := ortSize.FindStringSubmatch(seg); g != nil {
		setUint(&e.RequestedBytes, g[1])
	}
}

// TensorRT: "Requested amount of GPU memory (N bytes) could not be allocated."
var trtSize = re(`^Requested\s*amount\s*of\s*GPU\s*memory\s*\((\d+)\s*bytes\)`)

func parseTRT(seg, line string, e *Explanation) {
	e.key = "tensorrt" // "Error Code 1: Cuda Runtime (out of memory)" and its request: one event
	if g := trtSize.FindStringSubmatch(seg); g != nil {
		setUint(&e.RequestedBytes, g[1])
	}
}

// Hugging Face TGI at warm-up: "Not enough memory to handle N prefill tokens."
var tgiTokens = re(`^Not\s*enough\s*memory\s*to\s*handle\s*(\d+)\s*prefill\s*tokens`)

func parseTGI(seg, line string, e *Explanation) {
	if g := tgiTokens.FindStringSubmatch(seg); g != nil {
		setUint(&e.PrefillTokens, g[1])
	}
}

// TensorFlow eager: "ResourceExhaustedError: failed to allocate memory [Op:MatMul]".
func parseTFFailed(seg, line string, e *Explanation) {
	if g := tfDevice.FindStringSubmatch(head(seg, 400)); g != nil {
		setDevice(e, g[1])
	}
	e.key = "tf-failed"
}

func submatches(s string, m []int) []string {
	g := make([]string, len(m)/2)
	for i := range g {
		if m[2*i] >= 0 {
			g[i] = s[m[2*i]:m[2*i+1]]
		}
	}
	return g
}

// Apple MPS: "MPS backend out of memory (MPS allocated: X, other
// allocations: Y, max allowed: Z). Tried to allocate R on private pool."
var (
	mpsAllocated = re(`MPS\s*allocated:\s*` + sz)
	mpsOther     = re(`other\s*allocations:\s*` + sz)
	mpsMax       = re(`max\s*allowed:\s*` + sz)
	mpsRequest   = re(`Tried\s*to\s*allocate\s*` + sz)
)

func parseMPS(seg, line string, e *Explanation) {
	seg = head(seg, 600)
	for _, x := range []struct {
		re  *pattern
		dst **uint64
	}{{mpsAllocated, &e.AllocatedByFrameworkBytes}, {mpsOther, &e.OtherAllocationsBytes}, {mpsMax, &e.AllowedBytes}, {mpsRequest, &e.RequestedBytes}} {
		if g := x.re.FindStringSubmatch(seg); g != nil {
			setSize(x.dst, g, 1)
		}
	}
}

// Driver allocation failures as TensorFlow and XLA log them:
// "failed to alloc 2.00G (2147483648 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY".
var (
	driverAlloc = re(`^failed\s*to\s*alloc(?:ate)?\s*` + sz + `(.{0,120}?)(CUDA_ERROR_OUT_OF_MEMORY|HIP_ERROR_OutOfMemory)`)
	// XLA's CUDA async allocator adds "Reported by CUDA: Free memory/Total
	// memory: 22635544576/85095874560".
	driverFreeTotal = re(`Free\s*memory/Total\s*memory:\s*(\d+)/(\d+)`)
)

func parseDriver(seg, line string, e *Explanation) {
	e.kind = kindAllocator
	seg = head(seg, 400)
	if g := driverAlloc.FindStringSubmatch(seg); g != nil {
		if strings.Contains(g[4], "host") {
			e.Host = true
		}
		if g[5] == "HIP_ERROR_OutOfMemory" {
			e.Backend = "hip"
		}
		setSize(&e.RequestedBytes, g, 1)
	} else if strings.HasPrefix(seg, "HIP_ERROR") {
		e.Backend = "hip"
	}
	if g := driverFreeTotal.FindStringSubmatch(seg); g != nil {
		setUint(&e.FreeBytes, g[1])
		setUint(&e.TotalBytes, g[2])
	}
	frameworkFromPath(line, e)
}

func parseCUDAError(seg, line string, e *Explanation) {
	if strings.HasPrefix(seg, "hipError") {
		e.Backend = "hip"
	}
	if g := cudaCurrentDevice.FindStringSubmatch(head(seg, 80)); g != nil {
		setDevice(e, g[1])
	}
	// Raised from pin_memory() (a DataLoader's pin memory thread,
	// DeepSpeed's offload buffers): cudaHostAlloc could not lock host RAM.
	before := e.ctx.text[max(0, e.ctx.at-pinReach):e.ctx.at]
	if pinnedCall.MatchString(before) {
		e.Host = true
		e.Confidence = "likely"
		e.Reason = "the error was raised from " + strings.Join(strings.Fields(pinnedCall.FindString(before)), " ") +
			", which page-locks host memory (cudaHostAlloc) rather than allocating GPU memory"
	}
}

// ggml (llama.cpp, Ollama): "CUDA error: out of memory\n  current device: 0,
// in function alloc at ggml-cuda.cu:233".
var cudaCurrentDevice = re(`^CUDA\s*error:\s*out\s*of\s*memory\s*current\s*device:\s*(\d+)`)

// pinnedCall names a call that allocates pinned host memory, in the
// traceback shortly before a CUDA error.
var pinnedCall = re(`\.pin_memory\(\)|pin\s*memory\s*thread|cudaHostAlloc|pin_memory\(data,\s*device\)`)

// pinReach is how far before a CUDA error its traceback is read.
const pinReach = 1500

// frameworkFromPath tells TensorFlow from XLA/JAX by the source path a
// logged line names.
// frameworkFromPath tells TensorFlow from XLA/JAX by the source path that
// the text before a message names, the nearest one winning. JAX builds XLA
// with TensorFlow's tree vendored as external/org_tensorflow (later
// external/xla); TensorFlow itself logs tensorflow/compiler/xla/...
func frameworkFromPath(line string, e *Explanation) {
	l := strings.ReplaceAll(strings.ToLower(line), "external/org_tensorflow/tensorflow", "external/xla")
	jax := max(strings.LastIndex(l, "external/org_tensorflow"), strings.LastIndex(l, "external/xla"), strings.LastIndex(l, "jax"))
	tf := strings.LastIndex(l, "tensorflow")
	switch {
	case jax >= 0 && jax > tf:
		e.Framework = "jax"
	case tf >= 0:
		e.Framework = "tensorflow"
	case strings.Contains(l, "xla/"):
		e.Framework = "jax"
	}
}

// TensorFlow: "OOM when allocating tensor with shape[32,512,512,64] and type
// float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc".
var (
	tfShape = re(`^OOM\s*when\s*allocating\s*tensor\s*(?:with|of)\s*shape\s*\[([\d,\s]{0,200})\]\s*and\s*type\s*(bfloat16|float16|float32|float64|float8_e4m3fn|float8_e5m2|float|half|double|complex128|complex64|qint8|quint8|qint16|quint16|qint32|uint8|uint16|uint32|uint64|int8|int16|int32|int64|bool)`)
	// Older releases print no type: "OOM when allocating tensor with shape[100,4096,32]".
	tfShapeOnly = re(`^OOM\s*when\s*allocating\s*tensor\s*(?:with|of)\s*shape\s*\[([\d,\s]{0,200})\]`)
	tfDevice    = re(`device:GPU:(\d+)`)
	tfAllocator = re(`by\s*allocator\s*GPU_(\d+)_bfc`)
	dtypeSize   = map[string]uint64{
		"bfloat16": 2, "float16": 2, "half": 2, "float": 4, "float32": 4, "float64": 8, "double": 8,
		"float8_e4m3fn": 1, "float8_e5m2": 1, "complex64": 8, "complex128": 16,
		"qint8": 1, "quint8": 1, "qint16": 2, "quint16": 2, "qint32": 4,
		"uint8": 1, "int8": 1, "bool": 1, "uint16": 2, "int16": 2, "uint32": 4, "int32": 4, "uint64": 8, "int64": 8,
	}
)

func parseTFOOM(seg, line string, e *Explanation) {
	seg = head(seg, 600)
	if g := tfShape.FindStringSubmatch(seg); g != nil {
		e.Shape = "[" + strings.Join(shapeDims(g[1]), ",") + "]"
		e.DType = g[2]
		if n, ok := shapeBytes(g[1], dtypeSize[g[2]]); ok {
			e.RequestedBytes, e.RequestedFromShape = &n, true
		}
	} else if g := tfShapeOnly.FindStringSubmatch(seg); g != nil {
		if _, ok := shapeBytes(g[1], 1); ok {
			e.Shape = "[" + strings.Join(shapeDims(g[1]), ",") + "]"
		}
	}
	if g := tfDevice.FindStringSubmatch(seg); g != nil {
		setDevice(e, g[1])
	} else if g := tfAllocator.FindStringSubmatch(seg); g != nil {
		setDevice(e, g[1])
	}
	e.key = "tf|" + e.Shape + "|" + e.DType
	if e.Device != nil {
		e.key += "|" + strconv.Itoa(*e.Device)
	}
}

// shapeDims splits "32, 512,64" into its trimmed dimensions; "" (a scalar)
// has none.
func shapeDims(dims string) []string {
	if strings.TrimSpace(dims) == "" {
		return nil
	}
	ds := strings.Split(dims, ",")
	for i, d := range ds {
		ds[i] = strings.Join(strings.Fields(d), " ")
	}
	return ds
}

// shapeBytes multiplies the dimensions of a shape by the element size;
// ok is false on overflow or a malformed dimension.
func shapeBytes(dims string, elem uint64) (uint64, bool) {
	if elem == 0 {
		return 0, false
	}
	n := elem
	for _, d := range shapeDims(dims) {
		if d == "" || strings.ContainsAny(d, " \t") {
			return 0, false // "[12 34]" or "[12,,34]": not a shape
		}
		v, err := strconv.ParseUint(d, 10, 64)
		if err != nil {
			return 0, false
		}
		hi, lo := bits.Mul64(n, v)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// The BFC allocator (TensorFlow and XLA): "Allocator (GPU_0_bfc) ran out of
// memory trying to allocate 2.00GiB (rounded to 2147483648)", later
// "Stats: Limit: N InUse: M".
var (
	bfcRequest = re(`^(?:Allocator\s*\((\w+)\)\s*)?[Rr]an\s*out\s*of\s*memory\s*trying\s*to\s*allocate\s*` + sz)
	bfcDevice  = re(`GPU_(\d+)_bfc`)
	bfcStats   = re(`Stats:\s*Limit:\s*(\d+)\s*InUse:\s*(\d+)`)
)

// bfcNotAFailure marks the warning the allocator gives when the caller can
// do without the memory: "... with freed_by_count=0. The caller indicates
// that this is not a failure, but may mean that there could be performance
// gains if more memory were available."
var bfcNotAFailure = re(`^.{0,300}?this\s*is\s*not\s*a\s*failure`)

func parseBFC(seg, line string, e *Explanation) {
	e.kind = kindAllocator
	frameworkFromPath(line, e)
	if h := head(seg, 400); strings.Contains(h, "failure") && bfcNotAFailure.MatchString(h) {
		e.Kind = "memory_pressure"
	}
	if g := bfcRequest.FindStringSubmatch(head(seg, 400)); g != nil {
		setSize(&e.RequestedBytes, g, 2)
		if d := bfcDevice.FindStringSubmatch(g[1]); d != nil {
			setDevice(e, d[1])
		}
	}
	if g := bfcStats.FindStringSubmatch(seg); g != nil {
		setUint(&e.AllowedBytes, g[1])
		setUint(&e.AllocatedByFrameworkBytes, g[2])
	}
}

// JAX/XLA: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N
// bytes.", "Failed to allocate request for 2.00GiB (2147483648B) on device
// ordinal 0".
var (
	jaxRequest = re(`(?:Out\s*of\s*memory\s*while\s*trying\s*to\s*allocate|Out\s*of\s*memory\s*allocating|Failed\s*to\s*allocate\s*request\s*for|Attempting\s*to\s*allocate)\s*` + sz)
	// "... That was not possible. There are 3.28G free."
	jaxFree = re(`That\s*was\s*not\s*possible\.\s*There\s*are\s*` + sz + `\s*free`)
	// TPU: "Ran out of memory in memory space hbm. Used 17.48G of 15.48G hbm."
	tpuUsed   = re(`Used\s*` + sz + `\s*of\s*` + sz + `\s*hbm`)
	jaxDevice = re(`device\s*ordinal\s*(\d+)`)
)

func parseJAX(seg, line string, e *Explanation) {
	frameworkFromPath(line, e)
	seg = head(seg, 400)
	if g := jaxRequest.FindStringSubmatch(seg); g != nil {
		setSize(&e.RequestedBytes, g, 1)
	}
	if g := jaxFree.FindStringSubmatch(seg); g != nil {
		setSize(&e.FreeBytes, g, 1)
	}
	if g := tpuUsed.FindStringSubmatch(seg); g != nil {
		setSize(&e.AllocatedByFrameworkBytes, g, 1)
		setSize(&e.TotalBytes, g, 4)
	}
	if g := jaxDevice.FindStringSubmatch(seg); g != nil {
		setDevice(e, g[1])
	}
	if e.RequestedBytes != nil {
		e.key = "xla|" + strconv.FormatUint(*e.RequestedBytes, 10)
	}
}

// vLLM.
var (
	vllmKVNeeded = re(sz + `\s*KV\s*cache\s*is\s*needed,?\s*which\s*is\s*larger\s*than\s*the\s*available\s*KV\s*cache\s*memory\s*\(\s*` + sz + `\s*\)`)
	vllmSeqLen   = re(`max\s*seq\s*len\s*\((\d+)\)`)
	vllmTokens   = re(`stored\s*in\s*KV\s*cache\s*\((\d+)\)`)
	vllmFits     = re(`estimated\s*maximum\s*model\s*length\s*is\s*(\d+)`)
	vllmFree     = re(`^Free\s*memory\s*on\s*device\s*(?:cuda:(\d+)\s*)?\(\s*(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|TiB|KB|MB|GB|TB|B)\s*\)`)
	vllmDesired  = re(`desired\s*GPU\s*memory\s*utilization\s*\(\s*(\d+(?:\.\d+)?)\s*,\s*` + sz + `\s*\)`)
)

func parseVLLM(seg, line string, e *Explanation) {
	seg = head(seg, 800)
	if g := vllmFree.FindStringSubmatch(seg); g != nil {
		if g[1] != "" {
			setDevice(e, g[1])
		}
		if v, ok := toBytes(g[2], g[4]); ok {
			e.FreeBytes = &v
		}
		if v, ok := toBytes(g[3], g[4]); ok {
			e.TotalBytes = &v
		}
		if d := vllmDesired.FindStringSubmatch(seg); d != nil {
			if u, err := strconv.ParseFloat(d[1], 64); err == nil {
				e.GPUMemoryUtilization = &u
			}
			setSize(&e.RequestedBytes, d, 2)
		}
		e.key = "vllm-startup"
		return
	}
	if g := vllmKVNeeded.FindStringSubmatch(seg); g != nil {
		setSize(&e.RequestedBytes, g, 1)
		setSize(&e.FreeBytes, g, 4)
	}
	if g := vllmSeqLen.FindStringSubmatch(seg); g != nil {
		setUint(&e.MaxModelLen, g[1])
	}
	if g := vllmTokens.FindStringSubmatch(seg); g != nil {
		setUint(&e.KVCacheTokens, g[1])
	}
	if g := vllmFits.FindStringSubmatch(seg); g != nil {
		setUint(&e.MaxModelLenFits, g[1])
	}
	e.key = "vllm-kv"
}
