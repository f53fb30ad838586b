package advisor

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vramtop/vramtop/internal/inert"
)

// A cleanLine is one line of the log with escapes decoded, colour codes and
// logger prefixes removed; src is its 0-based line in the input.
type cleanLine struct {
	text string
	raw  string // before logger prefixes were removed
	src  int
}

// flatLog is the cleaned log as one string: the cleaned lines concatenated
// with nothing between them, so that a message wrapped over lines (at a
// space or in the middle of a word) reads as one. Message patterns allow
// optional whitespace wherever the original had a space.
type flatLog struct {
	text  string
	start []int // start[i]: offset of line i in text
	src   []int // src[i]: input line of line i
	lines []string
	raw   []string
	trim  [][2]int32 // trim[i]: where line i's text starts and ends, + 1 (0: not known yet)
}

// lineAt returns the index of the cleaned line holding offset p.
func (f *flatLog) lineAt(p int) int {
	lo, hi := 0, len(f.start)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if f.start[mid] <= p {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func flatten(log string) *flatLog {
	lines := cleanLines(log)
	f := &flatLog{start: make([]int, len(lines)), src: make([]int, len(lines)), lines: make([]string, len(lines)), raw: make([]string, len(lines))}
	var b strings.Builder
	for i, l := range lines {
		f.start[i] = b.Len()
		f.src[i] = l.src
		f.lines[i] = l.text
		f.raw[i] = l.raw
		b.WriteString(l.text)
	}
	f.text = b.String()
	return f
}

// cleanLines splits the log into lines and cleans each: JSON log records
// give their string values, JSON/Python escapes are decoded, ANSI codes,
// control characters and logger prefixes are removed.
func cleanLines(log string) []cleanLine {
	if !utf8.ValidString(log) {
		log = strings.ToValidUTF8(log, "\uFFFD")
	}
	log = strings.ReplaceAll(log, "\r\n", "\n")
	var out []cleanLine
	lines := strings.Split(log, "\n")
	for i, raw := range lines {
		raw = stripLabel(lines, i)
		for _, part := range strings.Split(raw, "\r") { // progress bars redraw with \r
			for _, dec := range decodeNested(part, 3) {
				for _, l := range strings.Split(strings.ReplaceAll(dec, "\r", "\n"), "\n") {
					raw := stripControl(stripANSI(l))
					out = append(out, cleanLine{text: stripPrefixes(raw), raw: raw, src: i})
				}
			}
		}
	}
	return out
}

// srunLabel is srun --label's task number before each line: "3: ".
var srunLabel = re(`^\s*(\d{1,4}):\s`)

// stripLabel returns lines[i] without srun's label when the line before or
// after carries the same one: a line a terminal wrapped may start with
// "7: " too ("…manager.h:10" / "7: cudaMalloc failed").
func stripLabel(lines []string, i int) string {
	m := srunLabel.FindStringSubmatch(lines[i])
	if m == nil {
		return lines[i]
	}
	for _, j := range []int{i - 1, i + 1} {
		if j >= 0 && j < len(lines) {
			if n := srunLabel.FindStringSubmatch(lines[j]); n != nil && n[1] == m[1] {
				return lines[i][len(m[0]):]
			}
		}
	}
	return lines[i]
}

// decodeNested decodes a line, then what it carries, up to depth times: a
// JSON record whose message is itself a JSON record or escaped text (a
// container runtime's log of an application's JSON log).
func decodeNested(line string, depth int) []string {
	out := decodeLine(line)
	if depth <= 1 || len(out) == 1 && out[0] == line {
		return out
	}
	var all []string
	for _, o := range out {
		for _, l := range strings.Split(o, "\n") {
			all = append(all, decodeNested(l, depth-1)...)
		}
	}
	return all
}

// decodeLine returns the text a line carries: the string values of a JSON
// record (in document order), or the line with backslash escapes decoded
// when it carries escaped text, or the line itself.
func decodeLine(line string) []string {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		if vals, ok := jsonStrings(t); ok {
			return vals
		}
	}
	if strings.Contains(line, `\n`) || strings.Contains(line, `\u00`) || strings.Contains(line, `\x1b`) ||
		strings.Contains(line, `\"`) || strings.Contains(line, `\033`) || strings.Contains(line, `\e[`) {
		return []string{unescape(line)}
	}
	return []string{line}
}

// messageKeys name the field of a JSON log record that holds the message.
var messageKeys = []string{"msg", "message", "log", "text", "MESSAGE", "Message", "textPayload", "@message"}

// jsonStrings returns the message of a JSON log record, or, when it has no
// message field, every string of the document in document order (so that a
// message wrapped over several records reads as one).
func jsonStrings(s string) ([]string, bool) {
	var rec map[string]any
	if json.Unmarshal([]byte(s), &rec) == nil {
		for _, k := range messageKeys {
			if v, ok := rec[k].(string); ok {
				return []string{v}, true
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var vals []string
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, false
		}
		if str, ok := tok.(string); ok {
			vals = append(vals, str)
		}
	}
	return vals, len(vals) > 0
}

// unescape decodes \n, \t, \r, \", \\, \/, \uXXXX, \xXX, \033 and \e in
// text that was escaped but is not a whole JSON document (a truncated
// record, a Python repr). Unknown escapes are kept as they are.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch n {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\n')
		case '"', '\\', '/', '\'':
			b.WriteByte(n)
		case 'e':
			b.WriteByte(0x1b)
		case 'u':
			if i+6 <= len(s) {
				if v, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += 5
					continue
				}
			}
			b.WriteString(`\u`)
		case 'x':
			if i+4 <= len(s) {
				if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
					b.WriteRune(rune(v))
					i += 3
					continue
				}
			}
			b.WriteString(`\x`)
		case '0':
			if strings.HasPrefix(s[i+1:], "033") {
				b.WriteByte(0x1b)
				i += 3
				continue
			}
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
			b.WriteByte(n)
		}
		i++
	}
	return b.String()
}

var ansiRE = re(`\x1b(?:\[[0-9;:?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])`)

func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansiRE.ReplaceAllString(s, "")
}

// stripControl makes a line inert (internal/inert): what is left of a
// control character once the ANSI sequences are gone, or a bidirectional
// override, becomes U+FFFD; a tab becomes a space.
func stripControl(s string) string {
	if inert.Is(s) {
		return s
	}
	return inert.String(strings.ReplaceAll(s, "\t", " "))
}

// prefixREs are logger and launcher prefixes, stripped from the start of a
// line again and again while one matches.
var prefixREs = []*pattern{
	// torchrun / torch.distributed: "[rank3]:", "[default0]:" (srun's "3: ":
	// stripLabel).
	re(`^\s*\[(?:rank|default|local_rank)\d+\]:\s?`),
	// Ray: "(RayWorkerWrapper pid=1234, ip=10.0.0.1)".
	re(`^\s*\([\w-]*\s?pid=\d+(?:,\s*ip=[\w.:]+)?\)\s?`),
	// Timestamps: ISO, with optional brackets, zone; "12:00:00.123"; CRI "stdout F".
	re(`^\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?:?\s*`),
	re(`^\s*\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s*`),
	re(`^(?:stdout|stderr) [FP] `),
	// Python logging "ERROR:root:", "WARNING:__main__:".
	re(`^\s*(?:CRITICAL|ERROR|WARNING|INFO|DEBUG):[\w.<>-]*:\s?`),
	// Levels: "ERROR ", "[ERROR]", "ERROR - ", "E " (glog), loguru "| ERROR | mod:fn:12 - ".
	re(`^\s*\|?\s*\[?(?:CRITICAL|ERROR|WARNING|WARN|INFO|DEBUG|FATAL|TRACE)\]?\s*(?:\|\s*[\w.<>]+:[\w.<>]+:\d+\s*-\s*|[:|-]\s*)?`),
	// llama.cpp's log: "1.06.520.077 E " (minutes, seconds, ms, µs, level).
	re(`^\s*\d+\.\d{2}\.\d{3}\.\d{3} [IWEDT] `),
	// vLLM "05-01 12:00:00 [file.py:123] ".
	re(`^\s*\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s*`),
	// glog / absl: "E0501 12:00:00.123456 12345 file.cc:123] ", TF ": W tensorflow/x.cc:12] ".
	re(`^\s*[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[\w./-]+:\d+\]\s?`),
	re(`^\s*:?\s*[IWEF] [\w./-]+:\d+\]\s?`),
	re(`^\s*\[[\w./-]+\.(?:py|cc|cpp|h|go):\d+\]\s?`),
	// pytest failure lines "E       ".
	re(`^E {2,}`),
}

func stripPrefixes(s string) string {
	for n := 0; n < 8; n++ {
		changed := false
		for _, re := range prefixREs {
			if loc := re.FindStringIndex(s); loc != nil && loc[1] > 0 {
				s = s[loc[1]:]
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	return s
}

// excerpt returns the cleaned text of lines [from, to] joined with spaces,
// cut to at most n bytes at a rune boundary. It copies no more than that
// of a long line.
func (f *flatLog) excerpt(from, to, n int) string {
	var b bytes.Buffer
	for i := from; i <= to && i < len(f.lines) && b.Len() <= n; i++ {
		t := f.trimmed(i)
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t[:min(len(t), n+1-min(n, b.Len()))])
	}
	s := b.String()
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// trimmed returns line i without the white space around it, worked out
// once a line.
func (f *flatLog) trimmed(i int) string {
	if f.trim == nil {
		f.trim = make([][2]int32, len(f.lines))
	}
	if f.trim[i] == [2]int32{} {
		l := f.lines[i]
		t := strings.TrimLeftFunc(l, unicode.IsSpace)
		lo := len(l) - len(t)
		hi := lo + len(strings.TrimRightFunc(t, unicode.IsSpace))
		f.trim[i] = [2]int32{int32(lo) + 1, int32(hi) + 1}
	}
	return f.lines[i][f.trim[i][0]-1 : f.trim[i][1]-1]
}
