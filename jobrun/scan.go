package jobrun

import (
	"bytes"
	"sync"
)

// Sizes of what the stderr scanner keeps.
const (
	tailMax   = 1 << 20  // the last MiB of stderr
	aroundOOM = 64 << 10 // kept before and after a line that looks like an OOM
	lineCarry = 64 << 10 // a partial line kept for keyword matching
)

// oomWords are cheap markers of an out-of-memory message, matched in
// lower case; advisor.Explain does the real parsing on the text kept around
// them.
var oomWords = [][]byte{
	[]byte("out of memory"), []byte("oom"), []byte("resource_exhausted"),
	[]byte("alloc_failed"), []byte("no available memory"), []byte("outofmemory"),
}

// scanner keeps what advisor.Explain needs from a job's stderr: its tail,
// and the text around the last line that looks like an out-of-memory
// message, even when much more output follows it. It is an io.Writer that
// never fails, so the tee to the terminal never stalls on it.
type scanner struct {
	mu    sync.Mutex
	total int64  // bytes seen
	tail  []byte // the last bytes seen, between tailMax and 2×tailMax once full
	line  []byte // the current line so far, lower case, at most lineCarry
	// kept is the text around the last OOM-looking line, starting at
	// stream offset keptStart; more is how much more to append to it.
	kept      []byte
	keptStart int64
	more      int
	sawOOM    bool
}

func (s *scanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for rest := p; len(rest) > 0; {
		chunk := rest
		i := bytes.IndexByte(rest, '\n')
		if i >= 0 {
			chunk = rest[:i+1]
		}
		rest = rest[len(chunk):]
		s.add(chunk)
		if len(s.line)+len(chunk) <= lineCarry {
			s.line = append(s.line, bytes.ToLower(chunk)...)
		}
		if i >= 0 {
			if hasOOMWord(s.line) {
				s.sawOOM = true
				n := min(aroundOOM, len(s.tail))
				s.kept = append(s.kept[:0], s.tail[len(s.tail)-n:]...)
				s.keptStart = s.total - int64(n)
				s.more = aroundOOM
			}
			s.line = s.line[:0]
		}
	}
	return len(p), nil
}

func (s *scanner) add(b []byte) {
	if s.more > 0 && len(s.kept) > 0 {
		n := min(s.more, len(b))
		s.kept = append(s.kept, b[:n]...)
		s.more -= n
	}
	s.tail = append(s.tail, b...)
	if len(s.tail) > 2*tailMax {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-tailMax:]...)
	}
	s.total += int64(len(b))
}

// text returns what to explain: the tail, preceded by the text around the
// last OOM-looking line when that has left the tail.
func (s *scanner) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sawOOM && s.keptStart < s.total-int64(len(s.tail)) {
		return string(s.kept) + "\n" + string(s.tail)
	}
	return string(s.tail)
}

func hasOOMWord(l []byte) bool {
	for _, w := range oomWords {
		if bytes.Contains(l, w) {
			return true
		}
	}
	return false
}
