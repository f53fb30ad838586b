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

// textRemedies is how many remedies Text lists without All.
const textRemedies = 6

// TextOptions says how TextWith lays an explanation out.
type TextOptions struct {
	// Width is the terminal's width in columns: lines are at most this wide
	// (a word or a number with its unit longer than that stays whole). 0 is
	// DefaultTextWidth; below MinTextWidth, MinTextWidth.
	Width int
	// All lists every remedy; without it the first six, and how many more.
	All bool
}

// DefaultTextWidth is the width of Text, and the widest TextWith lays out
// (longer lines read badly); MinTextWidth the narrowest.
const (
	DefaultTextWidth = 100
	MinTextWidth     = 40
)

// labelWidth is the width of the label column of the numbers' rows.
const labelWidth = 26

// Text renders the explanation for a terminal DefaultTextWidth columns
// wide: the numbers, the diagnosis and the first remedies, a few lines.
func (e Explanation) Text() string { return e.TextWith(TextOptions{}) }

// TextWith renders the explanation as Text does, laid out as o says.
func (e Explanation) TextWith(o TextOptions) string {
	width := o.Width
	if width <= 0 || width > DefaultTextWidth {
		width = DefaultTextWidth
	}
	width = max(width, MinTextWidth)
	var b strings.Builder
	if !e.Found {
		b.WriteString(wrap("No out-of-memory message found (looked for PyTorch, TensorFlow, JAX/XLA, vLLM, MPS, CUDA, cuBLAS/cuDNN, "+
			"llama.cpp, ONNX Runtime, TensorRT, TGI, SGLang, CuPy, PaddlePaddle, MXNet, Triton and DeepSpeed messages, "+
			"and for host RAM running out).", width, ""))
		e.writeLive(&b, width)
		return b.String()
	}
	head := e.heading()
	if e.Line > 0 {
		head += fmt.Sprintf(" (line %d", e.Line)
		if e.MessagesFound > 1 {
			head += fmt.Sprintf("; the last of %d messages", e.MessagesFound)
		}
		head += ")"
	}
	b.WriteString(wrap(head, width, "  "))
	if e.Message != "" {
		b.WriteString(wrapAfter("  ", shortText(e.Message, 200), width, "  "))
	}
	e.writeNumbers(&b, width)
	if e.Diagnosis != "" {
		b.WriteString("\n")
		b.WriteString(wrap(e.Diagnosis, width, ""))
	}
	e.writeRemedies(&b, width, o.All)
	e.writeLive(&b, width)
	return b.String()
}

// writeNumbers writes the numbers the message gave and those derived
// from them, a row each: the label in its column, the value wrapped beside
// it.
func (e Explanation) writeNumbers(b *strings.Builder, width int) {
	valueIndent := strings.Repeat(" ", 2+labelWidth+1)
	row := func(label, value string) {
		b.WriteString(wrapAfter(fmt.Sprintf("  %-*s ", labelWidth, label), value, width, valueIndent))
	}
	if e.Confidence != "" {
		row("confidence", e.Confidence+": "+e.Reason)
	}
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
}

// writeRemedies writes what to try: the first textRemedies remedies and
// how many more there are, or all of them.
func (e Explanation) writeRemedies(b *strings.Builder, width int, all bool) {
	if len(e.Remedies) > 0 {
		title := "What to try"
		if e.shortfall() > 0 {
			title += fmt.Sprintf(" (✓: the estimated saving covers the %s shortfall)", FormatBytes(e.shortfall()))
		}
		b.WriteString("\n" + wrap(title+":", width, "  "))
		const indent = "      "
		for i, r := range e.Remedies {
			if i == textRemedies && !all {
				b.WriteString(wrapAfter("  ", fmt.Sprintf("(%d more: --all lists them all, as does the JSON output)", len(e.Remedies)-i), width, "   "))
				break
			}
			mark := " "
			if r.Covers {
				mark = "✓"
			}
			// The number and the mark are the line's prefix, not words to
			// wrap: a remedy without ✓ keeps its blank, so every name
			// starts in the column of the indent.
			head := fmt.Sprintf("%2d. %s ", i+1, mark)
			b.WriteString(wrapAfter(head, fmt.Sprintf("%s. Saving: %s. Cost: %s.", r.Name, r.Saving, r.Cost), width, indent))
			if r.How != "" {
				b.WriteString(wrapAfter(indent, r.How, width, indent))
			}
		}
	}
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

func (e Explanation) writeLive(b *strings.Builder, width int) {
	if e.Live == nil {
		return
	}
	b.WriteString("\nNow:\n")
	for _, d := range e.Live.Devices {
		if d.Err != "" {
			b.WriteString(wrapLine(fmt.Sprintf("  GPU %-4s %s", d.ID, d.Err), width, "    "))
			continue
		}
		cols := fmt.Sprintf("  GPU %-4s %10s free of %-10s %d process(es)", d.ID, FormatBytes(d.FreeBytes), FormatBytes(d.TotalBytes), d.Processes)
		switch {
		case d.Name == "" || ansi.StringWidth(cols)+2+ansi.StringWidth(d.Name) <= width:
			b.WriteString(wrapLine(cols+"  "+d.Name, width, "    "))
		case ansi.StringWidth(cols) <= width: // the name under the columns
			b.WriteString(cols + "\n" + wrapAfter("    ", d.Name, width, "    "))
		default:
			b.WriteString(wrapLine(cols+"  "+d.Name, width, "    "))
		}
	}
	if e.Live.Note != "" {
		b.WriteString(wrap(e.Live.Note, width, "  "))
	}
}

// wrap breaks s into lines of at most width display columns; lines after
// the first start with indent. A word longer than a line stays whole, and
// a number stays on the line of the unit after it (12.3 GiB, 4 bytes, 512
// tokens) and of the word before it in GPU 1 and line 12, as does the word
// before a lone dash, sign or ellipsis, and the word after a lone ≈ or ~.
func wrap(s string, width int, indent string) string { return wrapAfter("", s, width, indent) }

// wrapAfter is prefix, then s wrapped as wrap does, its first line
// beginning after prefix.
func wrapAfter(prefix, s string, width int, indent string) string {
	var b strings.Builder
	b.WriteString(prefix)
	start := ansi.StringWidth(prefix)
	col := start
	for _, w := range wrapWords(s) {
		ww := ansi.StringWidth(w)
		if col > start && col+1+ww > width {
			b.WriteString("\n" + indent)
			start = ansi.StringWidth(indent)
			col = start
		} else if col > start {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += ww
	}
	b.WriteString("\n")
	return b.String()
}

// wrapLine is line as it is where it fits in width, wrapped after its
// leading spaces where it does not.
func wrapLine(line string, width int, indent string) string {
	line = strings.TrimRight(line, " ")
	if ansi.StringWidth(line) <= width {
		return line + "\n"
	}
	rest := strings.TrimLeft(line, " ")
	lead := line[:len(line)-len(rest)]
	return wrapAfter(lead, rest, width, indent)
}

// wrapWords splits s at its spaces into the pieces wrap may break
// between: a number and the unit after it are one piece.
func wrapWords(s string) []string {
	f := strings.Fields(s)
	out := f[:0]
	for _, w := range f {
		if n := len(out); n > 0 && (endsInNumber(out[n-1]) && isUnit(w) || w == "−" || w == "-" || w == "×" || w == "…" || out[n-1] == "≈" || out[n-1] == "~" ||
			(strings.HasSuffix(out[n-1], "GPU") || strings.HasSuffix(out[n-1], "line")) && startsWithDigit(w)) {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

// endsInNumber reports whether w ends in a digit, as "12.3", "(2048" and
// "~96" do.
func endsInNumber(w string) bool {
	return w != "" && w[len(w)-1] >= '0' && w[len(w)-1] <= '9'
}

func startsWithDigit(w string) bool { return w != "" && w[0] >= '0' && w[0] <= '9' }

// wrapUnits are the words a number is not parted from, in the forms the
// explanations and the logs write them.
var wrapUnits = map[string]bool{
	"B": true, "KiB": true, "MiB": true, "GiB": true, "TiB": true, "PiB": true,
	"kB": true, "KB": true, "MB": true, "GB": true, "TB": true, "PB": true,
	"byte": true, "bytes": true, "token": true, "tokens": true, "%": true,
	"ms": true, "s": true, "m": true, "h": true, "min": true, "d": true,
	"W": true, "MHz": true, "°C": true, "blocks": true, "devices": true, "GPUs": true,
}

// isUnit reports whether w is a unit, with the punctuation a sentence
// puts after it (GiB, GiB. GiB; GiB) bytes).
func isUnit(w string) bool {
	return wrapUnits[strings.TrimRight(w, ".,;:)]!?`'\"")]
}
