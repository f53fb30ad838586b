package advisor

import (
	"bytes"
	"slices"
	"strings"
)

// Finding messages in a long log fast: most of a training log is steps,
// losses and progress bars. Three passes, each over less of the log:
//
//  1. scanKeywords: literal searches (strings.Index, vectorised) over the
//     whole log for words every message holds one of; they mark candidate
//     lines (a line ends at \n or \r: progress bars redraw with \r).
//  2. scanTriggers: a candidate line and its neighbours, lower-cased with
//     spaces and colour codes removed, must hold a phrase of a message
//     ("outofmemory", "oomwhenallocating"); a line of memory statistics
//     ("memory allocated 12 GiB") holds none.
//  3. Around each line that passes, a region of a few lines before and
//     enough after for the longest message is cleaned (escapes, colours,
//     logger prefixes) and searched with the message patterns.

// scanKeywords are searched for as they are, in the cases messages print
// them; each costs a pass over the log, so a keyword that every message
// holding it holds another of is left out ("OOM when allocating" has
// "alloc"). Each message holds one whole even when a terminal wrapped it
// inside another word ("out of mem" / "ory" still holds "out of").
var scanKeywords = []string{
	"memory", "Memory", "MEMORY", "alloc", "Alloc", "ALLOC",
	"CUDNN_STATUS", "CUBLAS_STATUS", "Killed", "SIGKILL", "exitcode", "code 137", "status 137",
	"out of", "Out of", "OUT_OF", "ran out", "Stats:", "Limit:", "KV cache", "bus error", "Bus error",
}

// scanTriggers: a candidate line is searched only when its neighbourhood,
// squeezed (lower case, no white space, no colour codes), holds one of
// these. Every message pattern holds one.
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

var scanTriggerBytes = func() [][]byte {
	out := make([][]byte, len(scanTriggers))
	for i, t := range scanTriggers {
		out[i] = []byte(t)
	}
	return out
}()

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
	// scanBlock is how much of the log the keyword pass searches at a
	// time, so that every keyword's search of it stays in the cache.
	scanBlock = 256 << 10
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

// candidateLines returns the start of each line holding a keyword, in
// order, each once.
func candidateLines(log string) []int {
	var starts []int
	var block []int
	longest := 0
	for _, k := range scanKeywords {
		longest = max(longest, len(k))
	}
	for lo := 0; lo < len(log); lo += scanBlock {
		hi := min(len(log), lo+scanBlock+longest-1)
		chunk := log[lo:hi]
		block = block[:0]
		for _, k := range scanKeywords {
			for off := 0; ; {
				i := strings.Index(chunk[off:], k)
				if i < 0 {
					break
				}
				p := lo + off + i
				if p >= lo+scanBlock {
					break // the next block finds it
				}
				s := lineStart(log, p)
				block = append(block, s)
				// The rest of this line is a candidate already.
				e := lineEnd(log, p)
				if e <= p {
					e = p + 1
				}
				off = e - lo
				if off >= len(chunk) {
					break
				}
			}
		}
		slices.Sort(block)
		for _, s := range block {
			if n := len(starts); n == 0 || starts[n-1] != s {
				starts = append(starts, s)
			}
		}
	}
	return starts
}

// triggered tells whether the line starting at s, with the end of the line
// before and the start of the line after, holds a trigger. A short line may
// be a piece of a message that a terminal wrapped: then the 512 bytes
// around it are tried too, whatever lines they cross.
func triggered(log string, s int, buf []byte) (bool, []byte) {
	e := lineEnd(log, s)
	buf = buf[:0]
	if p := prevLine(log, s); p >= 0 {
		pe := lineEnd(log, p)
		buf = squeeze(buf, log[max(p, pe-512):pe])
	}
	buf = squeeze(buf, log[s:e])
	if n := nextLine(log, e); n >= 0 {
		ne := lineEnd(log, n)
		buf = squeeze(buf, log[n:min(ne, n+512)])
	}
	if hasTrigger(buf) {
		return true, buf
	}
	if e-s >= shortLine {
		return false, buf
	}
	buf = squeeze(buf[:0], log[max(0, s-512):min(len(log), e+512)])
	return hasTrigger(buf), buf
}

// shortLine: a line shorter than this may be a piece of a wrapped message.
const shortLine = 100

func hasTrigger(buf []byte) bool {
	for _, t := range scanTriggerBytes {
		if bytes.Contains(buf, t) {
			return true
		}
	}
	return false
}

// regions returns the parts of the log to search for messages, in order,
// not overlapping.
func regions(log string) []region {
	var out []region
	var buf []byte
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
	for _, s := range candidateLines(log) {
		inside := len(out) > 0 && s < out[len(out)-1].end
		ok, b := triggered(log, s, buf)
		buf = b
		if !ok {
			continue
		}
		if inside { // a line that passes extends the region
			extend(s, regionEnd(log, s))
			continue
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
			continue
		}
		open(start, regionEnd(log, s))
	}
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
