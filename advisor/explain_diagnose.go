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

// derive works out the figures the message implies but does not state.
func (e *Explanation) derive() *Derived {
	d := &Derived{}
	reserved := e.deriveReserved(d)
	self := e.likelySelf(d, reserved)
	e.deriveOutside(d, reserved, self)
	if e.ThisProcessBytes != nil && reserved != nil {
		if n, ok := sub(*e.ThisProcessBytes, *reserved); ok {
			d.NonFrameworkBytes = ptr(n)
		}
	}
	e.deriveOthers(d, self)
	e.deriveShortfall(d)
	if *d == (Derived{}) {
		return nil
	}
	return d
}

// deriveReserved works out the reserved memory or the cached part of it,
// whichever the message leaves out, and returns the reserved memory.
func (e *Explanation) deriveReserved(d *Derived) *uint64 {
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
	return reserved
}

// likelySelf returns the index in Processes of the process that is most
// likely this one when the message names none (-1: none).
func (e *Explanation) likelySelf(d *Derived, reserved *uint64) int {
	if e.ThisProcessBytes != nil || reserved == nil {
		return -1
	}
	self, best := -1, uint64(contextAllowance)+1
	for i, p := range e.Processes {
		if over, ok := sub(p.Bytes, *reserved); ok && over <= contextAllowance && over < best {
			self, best = i, over
		}
	}
	if self >= 0 {
		d.LikelyThisProcessPID = ptr(e.Processes[self].PID)
	}
	return self
}

// deriveOutside works out total − free − what this process holds.
func (e *Explanation) deriveOutside(d *Derived, reserved *uint64, self int) {
	if e.TotalBytes == nil || e.FreeBytes == nil || e.spec().noOutside {
		return
	}
	used, ok := sub(*e.TotalBytes, *e.FreeBytes)
	if !ok {
		return
	}
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

// deriveOthers sums the processes listed but this one.
func (e *Explanation) deriveOthers(d *Derived, self int) {
	if len(e.Processes) == 0 {
		return
	}
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

// deriveShortfall works out what the allocator had left under its limit,
// and what was missing.
func (e *Explanation) deriveShortfall(d *Derived) {
	f := e.spec()
	free := e.FreeBytes
	if f.allocatorLimit && e.AllowedBytes != nil && e.AllocatedByFrameworkBytes != nil {
		if a, ok := sub(*e.AllowedBytes, *e.AllocatedByFrameworkBytes); ok {
			d.AllocatorFreeBytes = ptr(a)
			if free == nil {
				free = d.AllocatorFreeBytes
			}
		}
	}
	if f.shortfall != nil {
		if short, applies := f.shortfall(e); applies {
			if short > 0 {
				d.ShortfallBytes = ptr(short)
			}
			return
		}
	}
	if e.RequestedBytes != nil && free != nil {
		if short, ok := sub(*e.RequestedBytes, *free); ok && short > 0 {
			d.ShortfallBytes = ptr(short)
		}
	}
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

func (e *Explanation) frameworkName() string {
	n := e.spec().name
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
	f := e.spec()
	if f.diagnose != nil {
		f.diagnose(e)
		return
	}
	short := e.shortfall()
	why := []string{e.requestSentence(f, short)}
	var list []RemedyEstimate
	why = append(why, e.whereItWent(f)...)
	if s, r, ok := e.fractionLimit(f); ok {
		why = append(why, s)
		list = append(list, r...)
	}
	c := e.causes(f, short)
	if c.verdict != "" {
		why = append(why, c.verdict)
	}
	if f.advice != nil {
		w, rs := f.advice(e, short)
		why = append(why, w...)
		list = append(list, rs...)
	}
	list = append(list, c.remedies...)
	if f.after != nil {
		list = append(list, f.after(e, e.processBytes())...)
	} else {
		list = append(list, TrainingRemediesFor(e.Framework, e.processBytes())...)
		if e.RequestedBytes == nil && e.FreeBytes == nil && e.AllocatedByFrameworkBytes == nil { // who else holds the card is as likely a cause
			list = append(list, TenantRemedies(0, "")...)
		}
		list = append(list, HabitRemedies()...)
	}
	e.Diagnosis = strings.Join(why, " ")
	e.Remedies = capList(RankRemedies(list, short))
}

// diagnoseNoNumbers is the diagnosis of a library's failure that states
// no numbers (what: the sentence saying what failed).
func diagnoseNoNumbers(what string) func(e *Explanation) {
	return func(e *Explanation) {
		B := FormatBytes
		s := what
		if e.Confidence == "likely" {
			s = e.frameworkName() + " failed, likely because memory ran out: " + e.Reason + "."
			if e.FreeBytes != nil && e.TotalBytes != nil {
				s += fmt.Sprintf(" The card had %s free of %s.", B(*e.FreeBytes), B(*e.TotalBytes))
			}
			s += " To confirm, run one small convolution before the model: the real out-of-memory error then shows."
		}
		if e.RequestedBytes != nil {
			s = fmt.Sprintf("The CUDA driver refused an allocation of %s.", B(*e.RequestedBytes))
			if e.Host {
				s = fmt.Sprintf("The CUDA driver refused %s of pinned host memory (not GPU memory).", B(*e.RequestedBytes))
			}
		}
		why := []string{s,
			"Kernel errors are reported asynchronously: the line in the stack trace may not be where memory ran out; CUDA_LAUNCH_BLOCKING=1 makes it honest.",
			"Run vramtop to see who holds the card."}
		list := estimates(NoNumbers, 0)
		list = append(list, TenantRemedies(0, "")...)
		list = append(list, TrainingRemedies(0)...)
		list = append(list, HabitRemedies()...)
		e.Diagnosis = strings.Join(why, " ")
		e.Remedies = capList(RankRemedies(list, 0))
	}
}

// requestSentence says what was asked for against what was free.
func (e *Explanation) requestSentence(f *frameworkSpec, short uint64) string {
	B := FormatBytes
	if e.RequestedBytes == nil && e.Shape != "" {
		return fmt.Sprintf("%s could not allocate a tensor of shape %s on %s; the message gives no type, so no size. Run vramtop to see what holds the card.", e.frameworkName(), e.Shape, e.gpu())
	}
	if e.RequestedBytes == nil {
		return fmt.Sprintf("%s ran out of memory on %s; the message gives no numbers. Run vramtop to see what holds the card.", e.frameworkName(), e.gpu())
	}
	req := B(*e.RequestedBytes)
	if e.RequestedFromShape {
		req += fmt.Sprintf(" (derived: shape %s × %d bytes of %s)", e.Shape, dtypeSize[e.DType], e.DType)
	}
	if f.request != nil {
		if s := f.request(e, req, short); s != "" {
			return s
		}
	}
	switch {
	case e.FreeBytes != nil:
		s := fmt.Sprintf("%s asked %s for %s with %s free", e.frameworkName(), e.gpu(), req, B(*e.FreeBytes))
		if e.TotalBytes != nil {
			s += " of " + B(*e.TotalBytes)
		}
		if short > 0 {
			return s + fmt.Sprintf(": %s short (derived: request − free).", B(short))
		}
		s += ": the request was not larger than the free memory, so what failed was "
		if e.AllowedBytes != nil {
			return s + fmt.Sprintf("the memory fraction limit (%s allowed).", B(*e.AllowedBytes))
		}
		return s + "finding one piece that large (the free memory is in pieces), or the free memory changed in between."
	case e.Derived != nil && e.Derived.AllocatorFreeBytes != nil:
		s := fmt.Sprintf("%s's allocator on %s asked for %s with %s left under its limit of %s (derived)", e.frameworkName(), e.gpu(), req, B(*e.Derived.AllocatorFreeBytes), B(*e.AllowedBytes))
		if short > 0 {
			return s + fmt.Sprintf(": %s short (derived).", B(short))
		}
		return s + ": enough in total but not in one piece (fragmentation in the allocator)."
	}
	return fmt.Sprintf("%s could not allocate %s on %s.", e.frameworkName(), req, e.gpu())
}

// whereItWent says where the memory went: live tensors, the cache, this
// process outside its allocator, other processes.
func (e *Explanation) whereItWent(f *frameworkSpec) []string {
	B := FormatBytes
	var parts []string
	if a := e.AllocatedByFrameworkBytes; a != nil && !f.notLive {
		parts = append(parts, "live tensors "+B(*a))
	}
	if cache := e.cachedUnused(); cache != nil {
		p := "cached but unused " + B(*cache)
		if e.ReservedUnallocatedBytes == nil {
			p += " (derived)"
		}
		parts = append(parts, p)
	}
	d := e.Derived
	if d != nil && d.NonFrameworkBytes != nil {
		parts = append(parts, "outside the allocator in this process (CUDA context, libraries) "+B(*d.NonFrameworkBytes)+" (derived)")
	}
	if p := e.othersPart(); p != "" {
		parts = append(parts, p)
	}
	var why []string
	if len(parts) > 0 {
		why = append(why, "Where the memory went: "+strings.Join(parts, "; ")+".")
	}
	if len(e.Processes) > 0 && e.ThisProcessBytes == nil {
		if d != nil && d.LikelyThisProcessPID != nil {
			why = append(why, fmt.Sprintf("The message names no process as this one (in a container PyTorch sees host PIDs); process %d holds about what this process reserved, so it is most likely this process (derived).", *d.LikelyThisProcessPID))
		} else {
			why = append(why, "The message names no process as this one (in a container PyTorch sees host PIDs): one of the listed processes may be this process.")
		}
	}
	return why
}

// othersPart is the part of whereItWent for memory of other processes.
func (e *Explanation) othersPart() string {
	d := e.Derived
	if d == nil {
		return ""
	}
	nOthers := len(e.Processes)
	if d.LikelyThisProcessPID != nil {
		nOthers--
	}
	if d.OtherProcessesBytes != nil {
		p := fmt.Sprintf("%d other process(es) %s", nOthers, FormatBytes(*d.OtherProcessesBytes))
		if nOthers > 1 {
			p += " (derived: their sum)"
		}
		return p
	}
	if d.OutsideBytes != nil && *d.OutsideBytes >= roundingNoise {
		of := "reserved"
		if e.ThisProcessBytes != nil || d.LikelyThisProcessPID != nil {
			of = "this process"
		}
		return "outside this process's allocator (other processes, other frameworks, CUDA contexts) " + FormatBytes(*d.OutsideBytes) + " (derived: total − free − " + of + ")"
	}
	return ""
}

// fractionLimit tells when a caching allocator's memory fraction limit was
// reached before the card was full, with the remedy.
func (e *Explanation) fractionLimit(f *frameworkSpec) (string, []RemedyEstimate, bool) {
	r := e.reserved()
	if !f.caching || r == nil || e.AllowedBytes == nil || e.RequestedBytes == nil {
		return "", nil, false
	}
	need, ok := add(*r, *e.RequestedBytes)
	if !ok || need <= *e.AllowedBytes || val(e.FreeBytes) == 0 {
		return "", nil, false
	}
	B := FormatBytes
	s := fmt.Sprintf("The allocator's %s reserved plus the %s request pass the %s allowed by the memory fraction limit while the card had memory free (derived).",
		B(*r), B(*e.RequestedBytes), B(*e.AllowedBytes))
	rm, ok := remedyByKey("memory_fraction")
	if !ok {
		return s, nil, true
	}
	// At most what the card had free, and what lies above the limit.
	room := *e.FreeBytes
	if e.TotalBytes != nil {
		if above, ok := sub(*e.TotalBytes, *e.AllowedBytes); ok {
			room = min(room, above)
		}
	}
	return s, []RemedyEstimate{rm.Estimate(room)}, true
}

// A verdict is the cause the numbers point to, and the remedies of the
// causes, the one that covers the shortfall first.
type verdict struct {
	verdict  string
	remedies []RemedyEstimate
}

func (e *Explanation) causes(f *frameworkSpec, short uint64) verdict {
	B := FormatBytes
	cache := e.cachedUnused()
	others, haveOthers := e.others()
	frag := f.caching && cache != nil && *cache > 0
	fragCovers := frag && short > 0 && *cache >= short
	othersCover := haveOthers && short > 0 && others >= short
	live := val(e.AllocatedByFrameworkBytes)
	var v verdict
	switch {
	case fragCovers:
		v.verdict = fmt.Sprintf("The cache holds %s it is not using, enough for the shortfall: fragmentation. Letting the allocator reuse it should be enough.", B(*cache))
	case othersCover:
		v.verdict = fmt.Sprintf("Other processes hold %s, more than the shortfall: the card is shared. Use another GPU, or ask the owner.", B(others))
	case haveOthers && others > live && short == 0:
		v.verdict = fmt.Sprintf("Other processes hold %s, more than this process's live tensors.", B(others))
	case live > 0:
		v.verdict = "Most of it is live memory of this process: make its footprint smaller."
	}
	var fragR, tenR []RemedyEstimate
	if frag {
		fragR = FragmentationRemedies(*cache)
	}
	if haveOthers {
		tenR = TenantRemedies(others, "")
	}
	if !fragCovers && (othersCover || (haveOthers && others > val(cache))) {
		v.remedies = append(tenR, fragR...)
	} else {
		v.remedies = append(fragR, tenR...)
	}
	return v
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
