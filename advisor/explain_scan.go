package advisor

import "strings"

// Finding messages in a long log fast: most of a training log is steps,
// losses, memory statistics and progress bars. Two passes, the second over
// little of the log:
//
//  1. One pass of an automaton (triggerMatcher) over the whole log finds
//     the phrases of a message ("outofmemory", "oomwhenallocating") in its
//     squeezed form: lower case, without spaces and colour codes; a line of
//     memory statistics ("memory allocated 12 GiB") holds none. Only the
//     lines around what it finds are looked at: a line holding a keyword
//     (a word every message holds one of, as printed) whose neighbourhood
//     holds a phrase passes.
//  2. Around each line that passes, a region of a few lines before and
//     enough after for the longest message is cleaned (escapes, colours,
//     logger prefixes) and searched with the message patterns.

// scanKeywords are searched for as they are, in the cases messages print
// them, in the lines near a trigger; a keyword that every message holding
// it holds another of is left out ("OOM when allocating" has "alloc").
// Each message holds one whole even when a terminal wrapped it inside
// another word ("out of mem" / "ory" still holds "out of").
var scanKeywords = []string{
	"memory", "Memory", "MEMORY", "alloc", "Alloc", "ALLOC",
	"CUDNN_STATUS", "CUBLAS_STATUS", "Killed", "SIGKILL", "exitcode", "code 137", "status 137",
	"out of", "Out of", "OUT_OF", "ran out", "Stats:", "Limit:", "KV cache", "bus error", "Bus error",
}

// scanTriggers: a line holding a keyword is searched only when its
// neighbourhood, squeezed (lower case, no white space, no colour codes),
// holds one of these. Every message pattern holds one.
var scanTriggers = []string{
	"outofmemory", "out_of_memory", "alloc_failed", "cudaerrormemoryallocation",
	"wouldexceedallowedmemory", "allocationondevice", "notenoughmemory",
	"failedtoalloc", "unabletoallocate", "requestedamountofgpumemory",
	"resourceexhausted", "resource_exhausted", "oomwhenallocating",
	"noavailablememory", "kvcacheisneeded", "maxseqlen(", "freememoryondevice",
	"insufficientmemory", "totalcapacity", "stats:limit:", "cudnn_status_",
	"killed", "code137", "status137", "exit137", "code:137", "exitcode:-9",
	"sigkill", "outofresource", "can'tallocatememory", "cudahostalloc",
	"allocatorcacheflushes", "cannotallocatememory", "memoryerror", "outofsharedmemory",
	"insufficientsharedmemory", "cublas_status_", "thatwasnotpossible", "memoryspacehbm",
	"cudaruntime(outofmemory)",
	// Short ones, for messages wrapped over lines that each carry a logger
	// prefix (which squeezing does not remove): BFC statistics, vLLM.
	"limit:", "kvcache",
}

const (
	// scanBefore lines (at most scanBeforeBytes) are kept before a line
	// that passes, room for a message wrapped over lines; scanAfterBytes
	// after it, the text after a message's start that parsers read (maxSeg).
	scanBefore      = 8
	scanBeforeBytes = 4 << 10
	scanAfterBytes  = maxSeg + 4<<10
	// scanMaxLine bounds a line: a longer one (a log without line breaks)
	// is read in pieces of this size.
	scanMaxLine = 64 << 10
	// scanMaxRegion bounds a region, so that a log of nothing but
	// messages is cleaned and searched a piece at a time.
	scanMaxRegion = 4 << 20
)

// A region is a part of the log to clean and search: log[start:end],
// whose first byte is on input line line (0-based).
type region struct {
	start, end, line int
}

// lineStart returns where the line holding p starts: after the last \n or
// \r before p, at most scanMaxLine back.
func lineStart(log string, p int) int {
	lo := max(0, p-scanMaxLine)
	if i := lastBreak(log[lo:p]); i >= 0 {
		return lo + i + 1
	}
	if lo == 0 {
		return 0
	}
	return cutPoint(log, lo)
}

// lineEnd returns where the line holding p ends: at the next \n or \r, at
// most scanMaxLine on.
func lineEnd(log string, p int) int {
	hi := min(len(log), p+scanMaxLine)
	if i := firstBreak(log[p:hi]); i >= 0 {
		return p + i
	}
	if hi == len(log) {
		return hi
	}
	return cutPoint(log, hi)
}

// firstBreak returns the index of the first \n or \r in s, or -1. It
// searches windows growing from 256 bytes, so that a short line costs
// little whichever break ends it.
func firstBreak(s string) int {
	for w := 256; ; w *= 8 {
		win := s[:min(w, len(s))]
		i, j := strings.IndexByte(win, '\n'), strings.IndexByte(win, '\r')
		if i < 0 || (j >= 0 && j < i) {
			i = j
		}
		if i >= 0 || len(win) == len(s) {
			return i
		}
	}
}

// lastBreak returns the index of the last \n or \r in s, or -1.
func lastBreak(s string) int {
	for w := 256; ; w *= 8 {
		lo := max(0, len(s)-w)
		win := s[lo:]
		i := max(strings.LastIndexByte(win, '\n'), strings.LastIndexByte(win, '\r'))
		if i >= 0 {
			return lo + i
		}
		if lo == 0 {
			return -1
		}
	}
}

// cutPoint moves p back to a place where cutting a line without a break
// splits no number or word: after a space or punctuation, at most 64 bytes
// back.
func cutPoint(log string, p int) int {
	for i := p; i > 0 && i > p-64; i-- {
		c := log[i-1]
		if c == ' ' || c == '\t' || c == ',' || c == ';' || c == '|' {
			return i
		}
	}
	return p
}

// prevLine returns the start of the line before the one starting at s
// (a \r\n counts as one break), or -1 at the start of the log.
func prevLine(log string, s int) int {
	if s <= 0 {
		return -1
	}
	e := s - 1 // the break ending the previous line
	if log[e] == '\n' && e > 0 && log[e-1] == '\r' {
		e--
	}
	return lineStart(log, e)
}

// nextLine returns the start of the line after the one ending at e, or -1
// at the end of the log.
func nextLine(log string, e int) int {
	if e >= len(log) {
		return -1
	}
	if log[e] == '\r' && e+1 < len(log) && log[e+1] == '\n' {
		e++
	}
	if log[e] == '\r' || log[e] == '\n' {
		e++
	}
	if e >= len(log) {
		return -1
	}
	return e
}

// squeeze appends s lower-cased (ASCII), without white space, control
// characters, ANSI colour codes and Markdown's * and `.
func squeeze(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x1b: // ESC [ ... final byte
			if i+1 < len(s) && s[i+1] == '[' {
				i += 2
				for i < len(s) && (s[i] < '@' || s[i] > '~') {
					i++
				}
			}
		case c <= ' ' || c == 0x7f || c == '*' || c == '`': // and Markdown's emphasis and code
		case c >= 'A' && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// candidate tells whether the line log[s:e] holds a keyword.
func candidate(line string) bool {
	for _, k := range scanKeywords {
		if strings.Contains(line, k) {
			return true
		}
	}
	return false
}

// triggered tells whether the line starting at s and ending at e, with the
// end of the line before and the start of the line after, holds a trigger.
// A short line may be a piece of a message that a terminal wrapped: then
// the 512 bytes around it are tried too, whatever lines they cross.
func triggered(log string, s, e int) bool {
	m := triggers()
	var before, after string
	if p := prevLine(log, s); p >= 0 {
		pe := lineEnd(log, p)
		before = log[max(p, pe-512):pe]
	}
	if n := nextLine(log, e); n >= 0 {
		ne := lineEnd(log, n)
		after = log[n:min(ne, n+512)]
	}
	if m.any(before, log[s:e], after) {
		return true
	}
	if e-s >= shortLine {
		return false
	}
	return m.any(log[max(0, s-512):min(len(log), e+512)])
}

// shortLine: a line shorter than this may be a piece of a wrapped message.
const shortLine = 100

// nearTriggers calls visit with the start and end of each line whose
// neighbourhood, as triggered reads it, may hold a trigger, in order, each
// once: one pass of the trigger automaton over the log finds the triggers,
// and only the lines around them are looked at.
func nearTriggers(log string, visit func(s, e int)) {
	sc := triggerScan{m: triggers()}
	last, lastEnd := -1, -1 // the last line visited
	// The line holding the last trigger's end, and the lines around it.
	cs, ce, prev, next := -1, -1, -1, -1
	for b := sc.next(log); b >= 0; b = sc.next(log) {
		a := b - 1 // a trigger's last byte: no line break
		if a < cs || a >= ce {
			cs, ce = lineStart(log, a), lineEnd(log, a)
			prev, next = prevLine(log, cs), nextLine(log, ce)
		}
		// The lines whose window holds a: from the line before a's
		// (its window reaches into the next line) or a short line up to
		// 612 bytes before, to the line after a's or a short line up to
		// 512 bytes after.
		from := cs
		if prev >= 0 {
			from = prev
		}
		if w := max(0, b-(512+shortLine)); w < cs {
			from = min(from, lineStart(log, w))
		}
		to := max(next, a+512)
		s := from
		if s <= last {
			if s = nextLine(log, lastEnd); s < 0 {
				return
			}
		}
		for s >= 0 && s <= to {
			e := lineEnd(log, s)
			visit(s, e)
			last, lastEnd = s, e
			s = nextLine(log, e)
		}
	}
}

// regions returns the parts of the log to search for messages, in order,
// not overlapping.
func regions(log string) []region {
	var out []region
	lines, counted := 0, 0 // input lines before offset counted
	open := func(start, end int) {
		lines += strings.Count(log[counted:start], "\n")
		counted = start
		out = append(out, region{start: start, end: end, line: lines})
	}
	// extend makes the last region end at end, or, when that would make it
	// longer than scanMaxRegion, ends it at s and opens the next there.
	extend := func(s, end int) {
		last := &out[len(out)-1]
		if end-last.start <= scanMaxRegion {
			last.end = max(last.end, end)
			return
		}
		last.end = min(last.end, s)
		open(s, end)
	}
	nearTriggers(log, func(s, e int) {
		if !candidate(log[s:e]) || !triggered(log, s, e) {
			return
		}
		if len(out) > 0 && s < out[len(out)-1].end { // a line that passes extends the region
			extend(s, regionEnd(log, s))
			return
		}
		start := s
		for i := 0; i < scanBefore; i++ {
			p := prevLine(log, start)
			if p < 0 || s-p > scanBeforeBytes {
				break
			}
			start = p
		}
		if n := len(out); n > 0 && start <= out[n-1].end {
			extend(s, regionEnd(log, s)) // adjoining: one region
			return
		}
		open(start, regionEnd(log, s))
	})
	return out
}

// regionEnd returns the end of the region that a passing line starting at
// s opens: the end of the last line that starts within scanAfterBytes of
// the end of s's line.
func regionEnd(log string, s int) int {
	e := lineEnd(log, s)
	if e+scanAfterBytes >= len(log) {
		return len(log)
	}
	return lineEnd(log, lineStart(log, e+scanAfterBytes))
}
