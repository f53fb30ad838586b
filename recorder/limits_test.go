package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"testing"
)

// limitsBefore is Limits as it was before it skipped ahead over strings and
// tokens: the reference the fast one must agree with.
func limitsBefore(b []byte) error {
	if len(b) > MaxLine {
		return fmt.Errorf("line longer than %d MiB: %w", MaxLine>>20, ErrLimit)
	}
	type list struct {
		n, pairs, numbers int
		obj               bool // an object, not a list
		value             bool // a value has started since the last comma
	}
	var stack [maxDepth]list
	depth, objects, elements, samples := 0, 0, 0, 0
	open := func(obj bool) error {
		if depth > 0 && !stack[depth-1].obj && !stack[depth-1].value {
			stack[depth-1].value = true
			stack[depth-1].n++
		}
		if depth == maxDepth {
			return fmt.Errorf("nested deeper than %d: %w", maxDepth, ErrLimit)
		}
		stack[depth] = list{obj: obj}
		depth++
		return nil
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			if depth > 0 && !stack[depth-1].obj && !stack[depth-1].value {
				stack[depth-1].value = true
				stack[depth-1].n++
			}
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return errors.New("a string is not closed")
			}
		case '{':
			objects++
			if err := open(true); err != nil {
				return err
			}
		case '[':
			if err := open(false); err != nil {
				return err
			}
		case '}', ']':
			if depth == 0 || stack[depth-1].obj != (c == '}') {
				return errors.New("brackets do not match")
			}
			depth--
			l := stack[depth]
			if l.obj {
				break
			}
			switch {
			case l.n == 2 && l.numbers == 2:
				// a [time, value] pair: counted by its list
				if depth > 0 {
					stack[depth-1].pairs++
				}
			case l.n > 0 && l.pairs == l.n:
				samples += l.n
			default:
				elements += l.n
			}
		case ',':
			if depth > 0 {
				stack[depth-1].value = false
			}
		default:
			if depth > 0 && !stack[depth-1].obj {
				if !stack[depth-1].value {
					stack[depth-1].value = true
					stack[depth-1].n++
					if c == '-' || c >= '0' && c <= '9' {
						stack[depth-1].numbers++
					}
				}
			}
		}
	}
	switch {
	case depth != 0:
		return errors.New("brackets do not match (the line is cut short?)")
	case objects > MaxObjects:
		return fmt.Errorf("%d objects, more than the %d allowed: %w", objects, MaxObjects, ErrLimit)
	case elements > MaxElements:
		return fmt.Errorf("lists of %d elements, more than the %d allowed: %w", elements, MaxElements, ErrLimit)
	case samples > MaxSamples:
		return fmt.Errorf("%d history samples, more than the %d allowed: %w", samples, MaxSamples, ErrLimit)
	}
	return nil
}

// recordedLines are the lines of a recording of the demo (format 1).
func recordedLines(tb testing.TB) [][]byte {
	tb.Helper()
	f, err := os.Open("../replay/testdata/format1.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, MaxLine)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines
}

func sameVerdict(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || a.Error() == b.Error() && errors.Is(a, ErrLimit) == errors.Is(b, ErrLimit)
}

func TestLimitsAgreesWithTheReference(t *testing.T) {
	cases := []string{
		`{"t":"2026-12-01T10:00:00Z","d":[{"id":"0","h":[[1,2],[3,4]]}]}`,
		`{"s":"a \"quoted\" word","x":"\\"}`,
		`{"s":"ends in a backslash \\\"}`,
		`{"s":"not closed`,
		`[1,2,[3,[4,[5]]]]`,
		`{"a":[true,false,null,-1.5e3,"x"]}`,
		`{"a":[[1,2],[3,4],[5]]}`,
		`{"a":[}`,
		`{"a" : [ 1 , 2 ] , "b" : { } }`,
		fmt.Sprintf("%s%s", "[", "1,2,3"),
	}
	for _, c := range cases {
		if got, want := Limits([]byte(c)), limitsBefore([]byte(c)); !sameVerdict(got, want) {
			t.Errorf("Limits(%q) = %v, the reference says %v", c, got, want)
		}
	}
	for i, l := range recordedLines(t) {
		if got, want := Limits(l), limitsBefore(l); !sameVerdict(got, want) || got != nil {
			t.Errorf("line %d of the recording: Limits %v, reference %v, want both nil", i+1, got, want)
		}
	}
}

func FuzzLimitsAgreesWithTheReference(f *testing.F) {
	for _, l := range recordedLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"s":"\\\"","a":[[1,2]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Limits(b), limitsBefore(b); !sameVerdict(got, want) {
			t.Fatalf("Limits(%q) = %v, the reference says %v", b, got, want)
		}
	})
}

// BenchmarkLimits checks the lines of a recording of the demo, as opening
// a recording does for each line.
func BenchmarkLimits(b *testing.B) {
	lines := recordedLines(b)
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	for _, fn := range []struct {
		name string
		f    func([]byte) error
	}{{"before", limitsBefore}, {"now", Limits}} {
		b.Run(fn.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, l := range lines {
					if err := fn.f(l); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
