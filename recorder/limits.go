package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/vramtop/vramtop/internal/jsonscan"
)

// Limits on what one line of a recording may hold. A reader decodes a line
// only within them, so a damaged or hostile line costs a bounded amount of
// memory (a few times MaxLine) and is reported, never a crash or gigabytes.
const (
	// MaxLine is the longest line read; a keyframe of 8 GPUs × 1000
	// processes is about 1.5 MiB.
	MaxLine = 4 << 20
	// MaxObjects is the most objects (devices, processes) in one line:
	// 8 GPUs × 1000 processes are 8009.
	MaxObjects = 1 << 16
	// MaxElements is the most elements of lists other than history
	// samples in one line.
	MaxElements = 1 << 16
	// MaxSamples is the most history samples in one line (a line of
	// MaxLine holds about 120000).
	MaxSamples = 1 << 17
	maxDepth   = 16
)

// ErrLimit is wrapped by the errors of lines beyond the limits.
var ErrLimit = errors.New("over the limit")

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Limits checks that the line b stays within the limits before it is
// decoded, in one pass that allocates nothing: at most MaxObjects objects,
// MaxElements elements of lists other than history samples, MaxSamples
// samples ([time, value] pairs) and a nesting depth of maxDepth; its
// brackets and strings must balance. What encoding/json then builds from
// it is bounded by these counts.
func Limits(b []byte) error {
	if len(b) > MaxLine {
		return fmt.Errorf("line longer than %d MiB: %w", MaxLine>>20, ErrLimit)
	}
	var s limitScan
	for i := 0; i < len(b); i++ {
		var err error
		switch c := b[i]; c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			s.startValue(false)
			if i = jsonscan.ClosingQuote(b, i+1); i < 0 {
				return errors.New("a string is not closed")
			}
		case '{', '[':
			err = s.open(c == '{')
		case '}', ']':
			err = s.close(c == '}')
		case ',':
			if s.depth > 0 {
				s.stack[s.depth-1].value = false
			}
		default:
			s.startValue(c == '-' || c >= '0' && c <= '9')
			// The rest of a number, literal or colon changes nothing: skip
			// to the next byte that can.
			for i+1 < len(b) && !structural[b[i+1]] {
				i++
			}
		}
		if err != nil {
			return err
		}
	}
	return s.result()
}

// limitScan is the state of Limits: the open lists and objects and what
// the line has held so far.
type limitScan struct {
	stack                             [maxDepth]limitList
	depth, objects, elements, samples int
}

type limitList struct {
	n, pairs, numbers int
	obj               bool // an object, not a list
	value             bool // a value has started since the last comma
}

// startValue counts a value that starts in the innermost list, if it is
// a list and the value is its next element (a number when number).
func (s *limitScan) startValue(number bool) {
	if s.depth == 0 {
		return
	}
	l := &s.stack[s.depth-1]
	if l.obj || l.value {
		return
	}
	l.value = true
	l.n++
	if number {
		l.numbers++
	}
}

func (s *limitScan) open(obj bool) error {
	s.startValue(false)
	if s.depth == maxDepth {
		return fmt.Errorf("nested deeper than %d: %w", maxDepth, ErrLimit)
	}
	if obj {
		s.objects++
	}
	s.stack[s.depth] = limitList{obj: obj}
	s.depth++
	return nil
}

// close ends the innermost list or object (obj), counting a list's
// elements as history samples ([time, value] pairs) or other elements.
func (s *limitScan) close(obj bool) error {
	if s.depth == 0 || s.stack[s.depth-1].obj != obj {
		return errors.New("brackets do not match")
	}
	s.depth--
	l := s.stack[s.depth]
	switch {
	case l.obj:
	case l.n == 2 && l.numbers == 2:
		// a [time, value] pair: counted by its list
		if s.depth > 0 {
			s.stack[s.depth-1].pairs++
		}
	case l.n > 0 && l.pairs == l.n:
		s.samples += l.n
	default:
		s.elements += l.n
	}
	return nil
}

func (s *limitScan) result() error {
	switch {
	case s.depth != 0:
		return errors.New("brackets do not match (the line is cut short?)")
	case s.objects > MaxObjects:
		return fmt.Errorf("%d objects, more than the %d allowed: %w", s.objects, MaxObjects, ErrLimit)
	case s.elements > MaxElements:
		return fmt.Errorf("lists of %d elements, more than the %d allowed: %w", s.elements, MaxElements, ErrLimit)
	case s.samples > MaxSamples:
		return fmt.Errorf("%d history samples, more than the %d allowed: %w", s.samples, MaxSamples, ErrLimit)
	}
	return nil
}

// structural are the bytes Limits acts on; the others within a token only
// continue it.
var structural = [256]bool{' ': true, '\t': true, '\r': true, '\n': true, '"': true, '{': true, '}': true, '[': true, ']': true, ',': true}

// DecodeRecord decodes a whole record line within the limits.
func DecodeRecord(b []byte, r *Record) error {
	if err := Limits(b); err != nil {
		return err
	}
	return json.Unmarshal(b, r)
}

// DecodeDelta decodes a delta line within the limits.
func DecodeDelta(b []byte, d *Delta) error {
	if err := Limits(b); err != nil {
		return err
	}
	return json.Unmarshal(b, d)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// UnmarshalJSON reads [[t,v],…] (at most MaxSamples) without going
// through encoding/json for each sample.
func (s *Samples) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	out := make(Samples, 0, max(0, bytes.Count(b, []byte{']'})-1))
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

// uint reads the digits at p as an unsigned integer (no sign, no
// overflow past 64 bits).
func (p *parser) uint() (uint64, bool) {
	var v uint64
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.i++
	}
	return v, p.i > start && p.i-start <= 20
}

// int reads an optionally negative integer.
func (p *parser) int() (int64, bool) {
	neg := p.eat('-')
	u, ok := p.uint()
	if !ok || u > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}
