package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Limits on what one line of a recording may hold. A reader decodes a line
// only within them, so a damaged or hostile line costs a bounded amount of
// memory (a few times MaxLine) and is reported, never a crash or gigabytes.
const (
	// MaxLine is the longest line read; a keyframe of 8 GPUs × 1000
	// processes is about 1.5 MiB.
	MaxLine = 4 << 20
	// MaxDevices is the most devices one line lists.
	MaxDevices = 1024
	// MaxProcesses is the most processes one device of a line lists.
	MaxProcesses = 16384
	// MaxSamples is the most history samples in one list.
	MaxSamples = 1 << 20
	// MaxStrings is the most warnings (or field names) in one list.
	MaxStrings = 1024
)

// ErrLimit is wrapped by the errors of lines beyond the limits.
var ErrLimit = errors.New("over the limit")

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// countElems counts the elements of the JSON array b (valid JSON, as
// encoding/json hands it to UnmarshalJSON); -1 when b is not an array.
func countElems(b []byte) int {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) || b[i] != '[' {
		return -1
	}
	// An empty list: the next non-space byte closes it.
	j := i + 1
	for j < len(b) && isSpace(b[j]) {
		j++
	}
	if j < len(b) && b[j] == ']' {
		return 0
	}
	depth, n, inStr := 0, 1, false
	for ; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return n
			}
		case ',':
			if depth == 1 {
				n++
			}
		}
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// decodeList decodes the JSON array b into *out after checking that it
// holds at most limit elements.
func decodeList[T any](b []byte, out *[]T, limit int, what string) error {
	n := countElems(b)
	if n < 0 {
		if string(b) == "null" {
			*out = nil
			return nil
		}
		return fmt.Errorf("%s: not a list", what)
	}
	if n > limit {
		return fmt.Errorf("%d %s in one list, more than the %d allowed: %w", n, what, limit, ErrLimit)
	}
	list := make([]T, 0, n)
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*out = list
	return nil
}

// DevRecs, ProcRecs, DevDeltas, ProcDeltas, Strings and Ints are lists
// decoded within the limits.
type (
	DevRecs    []DevRec
	ProcRecs   []ProcRec
	DevDeltas  []DevDelta
	ProcDeltas []ProcDelta
	Strings    []string
	Ints       []int
	DevInfos   []DeviceInfo
)

// UnmarshalJSON decodes at most MaxDevices devices.
func (l *DevRecs) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]DevRec)(l), MaxDevices, "devices")
}

// UnmarshalJSON decodes at most MaxProcesses processes.
func (l *ProcRecs) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]ProcRec)(l), MaxProcesses, "processes")
}

// UnmarshalJSON decodes at most MaxDevices devices.
func (l *DevDeltas) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]DevDelta)(l), MaxDevices, "devices")
}

// UnmarshalJSON decodes at most MaxProcesses processes.
func (l *ProcDeltas) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]ProcDelta)(l), MaxProcesses, "processes")
}

// UnmarshalJSON decodes at most MaxStrings strings.
func (l *Strings) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]string)(l), MaxStrings, "strings")
}

// UnmarshalJSON decodes at most MaxProcesses numbers.
func (l *Ints) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]int)(l), MaxProcesses, "numbers")
}

// UnmarshalJSON decodes at most MaxDevices devices.
func (l *DevInfos) UnmarshalJSON(b []byte) error {
	return decodeList(b, (*[]DeviceInfo)(l), MaxDevices, "devices")
}

// UnmarshalJSON reads [[t,v],…] (at most MaxSamples) without going
// through encoding/json for each sample.
func (s *Samples) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	n := countElems(b)
	if n < 0 {
		return errors.New("history samples: not a list")
	}
	if n > MaxSamples {
		return fmt.Errorf("%d history samples in one list, more than the %d allowed: %w", n, MaxSamples, ErrLimit)
	}
	out := make(Samples, 0, n)
	p := parser{b: b}
	p.skip()
	if !p.eat('[') {
		return errors.New("history samples: not a list")
	}
	p.skip()
	if p.eat(']') {
		*s = out
		return nil
	}
	for {
		p.skip()
		if !p.eat('[') {
			return errors.New("history sample: want [time, value]")
		}
		p.skip()
		t, ok := p.int()
		p.skip()
		if !ok || !p.eat(',') {
			return errors.New("history sample: want an integer time")
		}
		p.skip()
		v, ok := p.uint()
		p.skip()
		if !ok || !p.eat(']') {
			return errors.New("history sample: want a byte count")
		}
		out = append(out, Sample{T: t, V: v})
		p.skip()
		if p.eat(']') {
			break
		}
		if !p.eat(',') {
			return errors.New("history samples: want , or ]")
		}
	}
	*s = out
	return nil
}

type parser struct {
	b []byte
	i int
}

func (p *parser) skip() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) number() []byte {
	j := p.i
	for j < len(p.b) && (p.b[j] == '-' || p.b[j] >= '0' && p.b[j] <= '9') {
		j++
	}
	n := p.b[p.i:j]
	p.i = j
	return n
}

func (p *parser) int() (int64, bool) {
	v, err := strconv.ParseInt(string(p.number()), 10, 64)
	return v, err == nil
}

func (p *parser) uint() (uint64, bool) {
	v, err := strconv.ParseUint(string(p.number()), 10, 64)
	return v, err == nil
}
