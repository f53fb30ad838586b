package advisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The scan as it was before the trigger automaton: one search per keyword
// over the whole log, then one search per trigger over each candidate
// line's neighbourhood. Tests check that regions finds what it found.

const refScanBlock = 256 << 10

var refTriggerBytes = func() [][]byte {
	out := make([][]byte, len(scanTriggers))
	for i, t := range scanTriggers {
		out[i] = []byte(t)
	}
	return out
}()

// candidateLines returns the start of each line holding a keyword, in
// order, each once.
func candidateLinesRef(log string) []int {
	var starts []int
	var block []int
	longest := 0
	for _, k := range scanKeywords {
		longest = max(longest, len(k))
	}
	for lo := 0; lo < len(log); lo += refScanBlock {
		hi := min(len(log), lo+refScanBlock+longest-1)
		chunk := log[lo:hi]
		block = block[:0]
		for _, k := range scanKeywords {
			for off := 0; ; {
				i := strings.Index(chunk[off:], k)
				if i < 0 {
					break
				}
				p := lo + off + i
				if p >= lo+refScanBlock {
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
func triggeredRef(log string, s int, buf []byte) (bool, []byte) {
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
	if hasTriggerRef(buf) {
		return true, buf
	}
	if e-s >= shortLine {
		return false, buf
	}
	buf = squeeze(buf[:0], log[max(0, s-512):min(len(log), e+512)])
	return hasTriggerRef(buf), buf
}

func hasTriggerRef(buf []byte) bool {
	for _, t := range refTriggerBytes {
		if bytes.Contains(buf, t) {
			return true
		}
	}
	return false
}

// regions returns the parts of the log to search for messages, in order,
// not overlapping.
func regionsRef(log string) []region {
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
	for _, s := range candidateLinesRef(log) {
		inside := len(out) > 0 && s < out[len(out)-1].end
		ok, b := triggeredRef(log, s, buf)
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

// scanInputs are logs of every kind the tests have: the testdata, each
// wrapped and prefixed as TestExplainRealMessagesWrapped wraps it, and the
// generated shapes.
func scanInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{}
	for _, name := range explainLogs() {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		in[name] = string(b)
		in[name+" 80 columns"] = wrapLog(string(b), 80, "")
		in[name+" 50 columns"] = wrapLog(string(b), 50, "")
		in[name+" rank prefix"] = wrapLog(string(b), 1<<20, "[rank3]: ")
		in[name+" colours"] = wrapLog(string(b), 60, "\x1b[31m")
		in[name+" CRLF"] = strings.ReplaceAll(string(b), "\n", "\r\n")
	}
	for _, sh := range logShapes {
		in[sh.name] = sh.gen(1 << 20)
	}
	in["training log without OOM"] = strings.TrimSuffix(trainingLog(2<<20), benchOOM)
	in["progress bar"] = progressLine(2 << 20)
	return in
}

// The trigger automaton finds the regions that searching for each trigger
// in each candidate line's neighbourhood found, but for vLLM's "KV cache
// usage" lines (triggerGuards): there the explanation is the same.
func TestRegionsAsBefore(t *testing.T) {
	for name, log := range scanInputs(t) {
		got, want := regions(log), regionsRef(log)
		if strings.Contains(log, "KV cache usage") {
			a, _ := json.Marshal(explainRegions(log, got, true))
			b, _ := json.Marshal(explainRegions(log, want, true))
			if string(a) != string(b) {
				t.Errorf("%s: explained\n%s\nbefore\n%s", name, a, b)
			}
			if n, m := regionBytes(got), regionBytes(want); n >= m {
				t.Errorf("%s: %d bytes in regions, before %d", name, n, m)
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: regions %v, before %v", name, head(fmt.Sprint(got), 300), head(fmt.Sprint(want), 300))
		}
	}
}

// The automaton finds a trigger where one of the searches did.
func TestTriggerMatcherAsContains(t *testing.T) {
	m := triggers()
	for name, log := range scanInputs(t) {
		for _, l := range strings.Split(log, "\n") {
			sq := squeeze(nil, l)
			if bytes.Contains(sq, []byte("kvcacheu")) {
				continue
			}
			if got, want := m.any(l), hasTriggerRef(sq); got != want {
				t.Errorf("%s: %q: automaton %v, searches %v", name, head(l, 200), got, want)
			}
		}
	}
	for _, tr := range scanTriggers {
		if !m.any("xx "+strings.ToUpper(tr)+" yy") || !m.any(tr[:1]+" \x1b[31m"+tr[1:]) {
			t.Errorf("%q not found", tr)
		}
	}
	for _, l := range []string{"memory allocated 12 GiB | out of men", "GPU KV cache usage: 43.3%, CPU KV \x1b[1mcache Usage: 0.0%"} {
		if m.any(l) {
			t.Errorf("a trigger found in %q", l)
		}
	}
	if !m.any("(24.0 GiB KV cache", "(EngineCore pid=1) is needed") || !m.any("stored in KV cache") {
		t.Errorf("KV cache not found")
	}
}

func regionBytes(rs []region) int {
	n := 0
	for _, r := range rs {
		n += r.end - r.start
	}
	return n
}
