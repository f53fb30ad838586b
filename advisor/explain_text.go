package advisor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/vramtop/vramtop/sampler"
)

// LiveView is what the cards hold now, added by WithLive.
type LiveView struct {
	Source  string       `json:"source"`
	Demo    bool         `json:"demo,omitempty"`
	Devices []LiveDevice `json:"devices"`
	// Freest is the ID of the device with the most free memory.
	Freest string `json:"freest,omitempty"`
	// Note says whether the freest device would hold the process, or how
	// the device that ran out stands now.
	Note string `json:"note,omitempty"`
}

// LiveDevice is one device's memory now.
type LiveDevice struct {
	ID         string `json:"id"`
	Index      int    `json:"index"`
	Name       string `json:"name,omitempty"`
	UUID       string `json:"uuid,omitempty"`
	TotalBytes uint64 `json:"total_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	Processes  int    `json:"processes"`
	Err        string `json:"error,omitempty"`
}

// WithLive returns e with what the cards in snap hold now: every device's
// free memory, the freest device, and whether it would hold the process
// that ran out (its memory plus the shortfall, an estimate).
func (e Explanation) WithLive(snap sampler.Snapshot) Explanation {
	lv := &LiveView{Source: snap.Source, Demo: snap.Demo}
	best := -1
	for _, d := range snap.Devices {
		if d.MIGEnabled {
			continue // its memory belongs to the MIG instances listed after it
		}
		lv.Devices = append(lv.Devices, LiveDevice{ID: d.ID, Index: d.Index, Name: d.Name, UUID: d.UUID, TotalBytes: d.MemoryTotal,
			UsedBytes: d.MemoryUsed, FreeBytes: d.MemoryFree, Processes: len(d.Processes), Err: d.Err})
		if d.Err == "" && (best < 0 || d.MemoryFree > lv.Devices[best].FreeBytes) {
			best = len(lv.Devices) - 1
		}
	}
	var notes []string
	if e.Device != nil {
		for _, d := range lv.Devices {
			if d.Index == *e.Device && d.Err == "" {
				notes = append(notes, fmt.Sprintf("GPU %s now: %s used, %s free of %s.", d.ID, FormatBytes(d.UsedBytes), FormatBytes(d.FreeBytes), FormatBytes(d.TotalBytes)))
				break
			}
		}
	}
	if best >= 0 {
		b := lv.Devices[best]
		lv.Freest = b.ID
		need := e.processBytes()
		if need == 0 && e.RequestedBytes != nil {
			need = *e.RequestedBytes
		}
		if n, ok := add(need, e.shortfall()); ok && need > 0 {
			need = n
		}
		s := fmt.Sprintf("Freest now: GPU %s with %s free of %s", b.ID, FormatBytes(b.FreeBytes), FormatBytes(b.TotalBytes))
		switch {
		case need == 0:
			s += "."
		case b.FreeBytes >= need:
			sel := strconv.Itoa(b.Index)
			if strings.Contains(b.ID, "/") { // a MIG instance is selected by its UUID
				sel = "<its MIG UUID>"
				if b.UUID != "" {
					sel = b.UUID
				}
			}
			s += fmt.Sprintf(", enough for the ~%s this job needed (estimate): CUDA_VISIBLE_DEVICES=%s.", FormatBytes(need), sel)
		default:
			s += fmt.Sprintf(", less than the ~%s this job needed (estimate): no card would hold it as it is.", FormatBytes(need))
		}
		notes = append(notes, s)
	}
	if snap.Demo {
		notes = append(notes, "(These are the built-in demo GPUs, not real ones.)")
	}
	lv.Note = strings.Join(notes, " ")
	e.Live = lv
	return e
}

// textRemedies is how many remedies Text lists.
const textRemedies = 6

// Text renders the explanation for a terminal: the numbers, the diagnosis
// and the remedies, a few lines.
func (e Explanation) Text() string {
	var b strings.Builder
	if !e.Found {
		b.WriteString("No out-of-memory message found (looked for PyTorch, TensorFlow, JAX/XLA, vLLM, MPS, CUDA, cuBLAS/cuDNN,\n" +
			"llama.cpp, ONNX Runtime, TensorRT, TGI, SGLang, CuPy, PaddlePaddle, MXNet, Triton and DeepSpeed messages,\n" +
			"and for host RAM running out).\n")
		e.writeLive(&b)
		return b.String()
	}
	b.WriteString(e.heading())
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d", e.Line)
		if e.MessagesFound > 1 {
			fmt.Fprintf(&b, "; the last of %d messages", e.MessagesFound)
		}
		b.WriteString(")")
	}
	b.WriteString("\n")
	if e.Message != "" {
		fmt.Fprintf(&b, "  %s\n", shortText(e.Message, 200))
	}
	if e.Confidence != "" {
		fmt.Fprintf(&b, "  %-26s %s\n", "confidence", e.Confidence+": "+e.Reason)
	}
	row := func(label, value string) { fmt.Fprintf(&b, "  %-26s %s\n", label, value) }
	size := func(label string, p *uint64) {
		if p != nil {
			row(label, FormatBytes(*p))
		}
	}
	if e.RequestedBytes != nil {
		v := fmt.Sprintf("%s (%d bytes)", FormatBytes(*e.RequestedBytes), *e.RequestedBytes)
		if e.RequestedFromShape {
			v += fmt.Sprintf(" (derived: shape %s × %d bytes of %s)", e.Shape, dtypeSize[e.DType], e.DType)
		}
		row("requested", v)
	} else if e.Shape != "" {
		row("tensor", e.Shape+" "+e.DType)
	}
	size("total capacity", e.TotalBytes)
	size("free", e.FreeBytes)
	size("allowed (limit)", e.AllowedBytes)
	size("this process", e.ThisProcessBytes)
	size("allocated by framework", e.AllocatedByFrameworkBytes)
	size("  in private pools", e.PrivatePoolsBytes)
	size("reserved by framework", e.ReservedByFrameworkBytes)
	size("reserved but unallocated", e.ReservedUnallocatedBytes)
	size("other allocations", e.OtherAllocationsBytes)
	size("peak allocated", e.PeakAllocatedBytes)
	size("largest allocation", e.MaxAllocSizeBytes)
	size("largest free block", e.LargestFreeBlockBytes)
	if e.NumAllocs != nil {
		row("allocations", strconv.FormatUint(*e.NumAllocs, 10))
	}
	if e.CacheFlushes != nil {
		row("cache flushes", strconv.FormatUint(*e.CacheFlushes, 10)+" in the last step")
	}
	for _, p := range e.Processes {
		v := FormatBytes(p.Bytes)
		if p.Name != "" {
			v += " (" + p.Name + ")"
		}
		row("process "+strconv.FormatUint(p.PID, 10), v)
	}
	if e.MaxModelLen != nil {
		row("max_model_len", strconv.FormatUint(*e.MaxModelLen, 10)+" tokens")
	}
	if e.KVCacheTokens != nil {
		row("KV cache holds", strconv.FormatUint(*e.KVCacheTokens, 10)+" tokens")
	}
	if d := e.Derived; d != nil && d.ShortfallBytes != nil {
		row("shortfall (derived)", fmt.Sprintf("%s (%d bytes)", FormatBytes(*d.ShortfallBytes), *d.ShortfallBytes))
	}
	if e.Diagnosis != "" {
		b.WriteString("\n")
		b.WriteString(wrap(e.Diagnosis, 100, ""))
	}
	if len(e.Remedies) > 0 {
		b.WriteString("\nWhat to try")
		if e.shortfall() > 0 {
			fmt.Fprintf(&b, " (✓: the estimated saving covers the %s shortfall)", FormatBytes(e.shortfall()))
		}
		b.WriteString(":\n")
		for i, r := range e.Remedies {
			if i == textRemedies {
				fmt.Fprintf(&b, "  (%d more in the JSON output)\n", len(e.Remedies)-i)
				break
			}
			mark := " "
			if r.Covers {
				mark = "✓"
			}
			line := fmt.Sprintf("%2d. %s %s. Saving: %s. Cost: %s.", i+1, mark, r.Name, r.Saving, r.Cost)
			b.WriteString(" " + wrap(line, 99, "      "))
			if r.How != "" {
				b.WriteString("      " + wrap(r.How, 94, "      "))
			}
		}
	}
	e.writeLive(&b)
	return b.String()
}

// heading is the first line of Text: what ran out, and where.
func (e Explanation) heading() string {
	switch e.Kind {
	case "host":
		s := "Host memory (RAM) ran out, not GPU memory"
		if e.Confidence != "" {
			s = "Likely host memory (RAM) ran out, not GPU memory"
		}
		return s
	case "pinned_host":
		return e.frameworkName() + ": pinned host memory ran out (RAM locked for GPU transfers, not GPU memory)"
	case "gpu_shared_memory":
		return "Triton kernel needs more shared memory than " + e.gpu() + " has per block (not GPU memory)"
	case "memory_pressure":
		return e.frameworkName() + ": memory pressure on the GPU (a warning, not an out-of-memory error)"
	}
	if e.Confidence != "" {
		return e.frameworkName() + " error, likely out of memory on " + e.gpu()
	}
	return e.frameworkName() + " out of memory on " + e.gpu()
}

func (e Explanation) writeLive(b *strings.Builder) {
	if e.Live == nil {
		return
	}
	b.WriteString("\nNow:\n")
	for _, d := range e.Live.Devices {
		if d.Err != "" {
			fmt.Fprintf(b, "  GPU %-4s %s\n", d.ID, d.Err)
			continue
		}
		fmt.Fprintf(b, "  GPU %-4s %10s free of %-10s %d process(es)  %s\n", d.ID, FormatBytes(d.FreeBytes), FormatBytes(d.TotalBytes), d.Processes, d.Name)
	}
	if e.Live.Note != "" {
		b.WriteString(wrap(e.Live.Note, 100, "  "))
	}
}

// wrap breaks s into lines of at most width columns (words longer than
// that stay whole); lines after the first start with indent, which counts
// towards their width. x/ansi does the breaking (display width, wide
// characters); the hanging indent is ours.
func wrap(s string, width int, indent string) string {
	s = strings.Join(strings.Fields(s), " ")
	first, rest, _ := strings.Cut(ansi.Wordwrap(s, width, ""), "\n")
	var b strings.Builder
	b.WriteString(first)
	if rest != "" {
		rest = strings.Join(strings.Fields(rest), " ")
		for line := range strings.SplitSeq(ansi.Wordwrap(rest, max(width-ansi.StringWidth(indent), 1), ""), "\n") {
			b.WriteString("\n" + indent + line)
		}
	}
	b.WriteString("\n")
	return b.String()
}
