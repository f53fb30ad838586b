package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/internal/jsonscan"
)

// Label is one label of a series.
type Label struct{ Name, Value string }

// Labels are a series' labels in the order of the answer (Prometheus
// writes them sorted by name). A series has a handful: Get's scan is
// cheaper than a map.
type Labels []Label

// Get is the value of the label name; "" when the series has none (to
// Prometheus an empty label is no label).
func (ls Labels) Get(name string) string {
	for i := range ls {
		if ls[i].Name == name {
			return ls[i].Value
		}
	}
	return ""
}

// The result types decodeAnswer decodes; others are only named.
const (
	resultVector = "vector"
	resultMatrix = "matrix"
)

// answer is what decodeAnswer read of an answer of Prometheus's HTTP API:
// its status, the error of an error answer, and the result (samples for a
// vector, series for a matrix). Warnings and infos are skipped.
type answer struct {
	status, errorType, errMsg string
	resultType                string
	samples                   []Sample
	series                    []Series
}

// decodeAnswer decodes an answer of Prometheus's HTTP API
// ({"status":"success","data":{"resultType":"vector","result":[...]}})
// in one pass over body, without reflection: the samples' labels are
// slices of one array, and each distinct label name and value of the
// answer is one string (hostnames, metric names and GPU indexes repeat
// across series). want is the result type to decode; another is only
// named in resultType. Nothing of the result refers to body.
func decodeAnswer(body []byte, want string) (answer, error) {
	d := decoder{b: body, strs: make(map[string]string, 256)}
	var a answer
	err := d.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "status":
			a.status, err = d.stringValue()
		case "errorType":
			a.errorType, err = d.stringValue()
		case "error":
			a.errMsg, err = d.stringValue()
		case "data":
			err = d.data(&a, want)
		default:
			err = d.skip()
		}
		return err
	})
	if err == nil {
		if d.ws(); d.i < len(d.b) {
			err = d.errorf("data after the answer")
		}
	}
	if err != nil {
		return answer{}, err
	}
	// The labels array is complete: each sample's or series' labels are
	// their span of it.
	for i := range a.samples {
		a.samples[i].Metric = d.metric(i)
	}
	for i := range a.series {
		a.series[i].Metric = d.metric(i)
	}
	return a, nil
}

// decoder reads one JSON answer: b[i:] is what is left of it.
type decoder struct {
	b    []byte
	i    int
	strs map[string]string // the strings of the answer, each once
	// labels holds the labels of every sample (or series), spans[n] the
	// end of the nth one's.
	labels []Label
	spans  []int
	// prevLabels are the last series' labels.
	prevLabels []Label
}

var errEOF = errors.New("unexpected end of the answer")

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d of the answer: %s", d.i, fmt.Sprintf(format, args...))
}

// ws skips white space.
func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space; 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *decoder) expect(c byte) error {
	switch d.peek() {
	case c:
		d.i++
		return nil
	case 0:
		return errEOF
	}
	return d.errorf("want %q, found %q", c, d.b[d.i])
}

// object reads an object, calling member with each key; member reads the
// value.
func (d *decoder) object(member func(key []byte) error) error {
	if empty, err := d.open('{', '}'); empty || err != nil {
		return err
	}
	for {
		k, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
		if more, err := d.more('}'); !more {
			return err
		}
	}
}

// open reads the start of an object or array, and its end when it is
// empty.
func (d *decoder) open(start, end byte) (empty bool, err error) {
	if err := d.expect(start); err != nil {
		return false, err
	}
	if d.peek() == end {
		d.i++
		return true, nil
	}
	return false, nil
}

// more reads what follows a member or element: a comma (more follow) or
// end.
func (d *decoder) more(end byte) (bool, error) {
	switch d.peek() {
	case ',':
		d.i++
		return true, nil
	case end:
		d.i++
		return false, nil
	case 0:
		return false, errEOF
	}
	return false, d.errorf("want ',' or '%c', found %q", end, d.b[d.i])
}

// array reads an array, calling elem for each element.
func (d *decoder) array(elem func() error) error {
	if empty, err := d.open('[', ']'); empty || err != nil {
		return err
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if more, err := d.more(']'); !more {
			return err
		}
	}
}

// str reads a string. Without escapes it is a slice of the answer; with
// them, a decoded copy.
func (d *decoder) str() ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	start := d.i
	n := bytes.IndexByte(d.b[start:], '"')
	if n < 0 {
		return nil, errEOF
	}
	if bytes.IndexByte(d.b[start:start+n], '\\') >= 0 {
		return d.escaped(start - 1)
	}
	d.i = start + n + 1
	return d.b[start : start+n], nil
}

// escaped reads the string that starts (its quote) at start and has
// escapes (\" \\ \n \u00e9 ...), as encoding/json decodes them.
func (d *decoder) escaped(start int) ([]byte, error) {
	j := jsonscan.ClosingQuote(d.b, start+1)
	if j < 0 {
		return nil, errEOF
	}
	var s string
	if err := json.Unmarshal(d.b[start:j+1], &s); err != nil {
		d.i = start
		return nil, d.errorf("string: %v", err)
	}
	d.i = j + 1
	return []byte(s), nil
}

// stringValue reads a string as a string of its own.
func (d *decoder) stringValue() (string, error) {
	b, err := d.str()
	return text(b), err
}

// intern is b as a string, one string for equal bytes within the answer.
// Every label name and value is one: each is made inert (internal/inert)
// here, once per distinct string, since any host that Prometheus scrapes
// writes its labels.
func (d *decoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := inert.Bytes(b)
	d.strs[string(b)] = s
	return s
}

// text is b as a string of its own, made inert: a byte that is not UTF-8
// becomes U+FFFD as encoding/json decodes it, and a control character or
// bidirectional override too.
func text(b []byte) string { return inert.Bytes(b) }

// skip reads a value of any kind, without keeping it.
func (d *decoder) skip() error {
	switch c := d.peek(); c {
	case 0:
		return errEOF
	case '"':
		return d.skipString()
	case '{', '[':
		// Nested values: only strings can hide a bracket.
		depth := 0
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '"':
				if err := d.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.i++
					return nil
				}
			}
			d.i++
		}
		return errEOF
	default:
		// A number, true, false or null.
		start := d.i
		for d.i < len(d.b) && isLiteral(d.b[d.i]) {
			d.i++
		}
		if d.i == start {
			return d.errorf("unexpected %q", c)
		}
		return nil
	}
}

// skipString reads the string at d.i without decoding it.
func (d *decoder) skipString() error {
	q := jsonscan.ClosingQuote(d.b, d.i+1)
	if q < 0 {
		return errEOF
	}
	d.i = q + 1
	return nil
}

func isLiteral(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// number reads a JSON number, or a string holding one ("NaN", "+Inf",
// "-Inf" and "1e+09" as Prometheus writes values).
func (d *decoder) number() (float64, error) {
	var b []byte
	d.ws()
	at := d.i
	if d.peek() == '"' {
		var err error
		if b, err = d.str(); err != nil {
			return 0, err
		}
	} else {
		start := d.i
		if err := d.skip(); err != nil {
			return 0, err
		}
		b = d.b[start:d.i]
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		d.i = at
		return 0, d.errorf("number %q", b)
	}
	return v, nil
}

// point reads a [time, "value"] pair; the time only when withTime (an
// instant query's samples are all of one time).
func (d *decoder) point(withTime bool) (time.Time, float64, error) {
	if err := d.expect('['); err != nil {
		return time.Time{}, 0, err
	}
	var ts float64
	var err error
	if withTime {
		ts, err = d.number()
	} else {
		err = d.skip()
	}
	if err != nil {
		return time.Time{}, 0, err
	}
	if err := d.expect(','); err != nil {
		return time.Time{}, 0, err
	}
	v, err := d.number()
	if err != nil {
		return time.Time{}, 0, err
	}
	if err := d.expect(']'); err != nil {
		return time.Time{}, 0, err
	}
	if !withTime {
		return time.Time{}, v, nil
	}
	// Prometheus's times are milliseconds.
	return time.UnixMilli(int64(math.Round(ts * 1e3))), v, nil
}

// data reads the data object: resultType, then result of that type. A
// result before its type is decoded once the type is known.
func (d *decoder) data(a *answer, want string) error {
	resultAt := -1
	err := d.object(func(k []byte) error {
		switch string(k) {
		case "resultType":
			b, err := d.str()
			a.resultType = d.intern(b)
			return err
		case "result":
			if a.resultType == "" {
				resultAt = d.i
				return d.skip()
			}
			return d.result(a, want)
		}
		return d.skip()
	})
	if err != nil || resultAt < 0 {
		return err
	}
	end := d.i
	d.i = resultAt
	if err := d.result(a, want); err != nil {
		return err
	}
	d.i = end
	return nil
}

// result reads the result: a vector's samples or a matrix's series when
// that is the type wanted; anything else is skipped.
func (d *decoder) result(a *answer, want string) error {
	switch {
	case a.resultType != want:
		return d.skip()
	case want == resultVector:
		return d.array(func() error { return d.sample(a) })
	case want == resultMatrix:
		return d.array(func() error { return d.series(a) })
	}
	return d.skip()
}

// sample reads one sample of a vector: {"metric":{...},"value":[t,"v"]}.
// A native histogram's sample has no value: it is not kept.
func (d *decoder) sample(a *answer) error {
	start, at := len(d.labels), d.i
	var v float64
	hasValue := false
	err := d.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "metric":
			err = d.labelSet()
		case "value":
			_, v, err = d.point(false)
			hasValue = true
		default:
			err = d.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if !hasValue {
		d.labels = d.labels[:start]
		return nil
	}
	if len(a.samples) == 0 {
		// The samples of one answer are about the size of the first,
		// with as many labels: room for them all at once.
		if n := (len(d.b) - d.i) / max(d.i-at, 16); n > 0 {
			a.samples = make([]Sample, 0, n+1)
			d.spans = make([]int, 0, n+1)
			d.labels = slices.Grow(d.labels, n*(len(d.labels)-start))
		}
	}
	a.samples = append(a.samples, Sample{Value: v})
	d.spans = append(d.spans, len(d.labels))
	return nil
}

// series reads one series of a matrix: {"metric":{...},"values":[[t,"v"],...]}.
// Native histograms' points are not kept.
func (d *decoder) series(a *answer) error {
	var s Series
	err := d.object(func(k []byte) error {
		switch string(k) {
		case "metric":
			return d.labelSet()
		case "values":
			return d.array(func() error {
				t, v, err := d.point(true)
				s.Times = append(s.Times, t)
				s.Values = append(s.Values, v)
				return err
			})
		}
		return d.skip()
	})
	if err != nil {
		return err
	}
	a.series = append(a.series, s)
	d.spans = append(d.spans, len(d.labels))
	return nil
}

// labelSet reads a series' labels onto d.labels. The series of an answer
// mostly have the same label names in the same places, and often values
// of the series before (its host, its GPU): those are compared before the
// strings are looked up.
func (d *decoder) labelSet() error {
	start := len(d.labels)
	prev := d.prevLabels
	err := d.object(func(k []byte) error {
		v, err := d.str()
		if err != nil {
			return err
		}
		var l Label
		if i := len(d.labels) - start; i < len(prev) {
			if p := prev[i]; p.Name == string(k) {
				l.Name = p.Name
				if p.Value == string(v) {
					l.Value = p.Value
				}
			}
		}
		if l.Name == "" {
			l.Name = d.intern(k)
		}
		if l.Value == "" {
			l.Value = d.intern(v)
		}
		d.labels = append(d.labels, l)
		return nil
	})
	d.prevLabels = d.labels[start:len(d.labels):len(d.labels)]
	return err
}

// metric is the labels of the nth sample or series.
func (d *decoder) metric(n int) Labels {
	start := 0
	if n > 0 {
		start = d.spans[n-1]
	}
	end := d.spans[n]
	return d.labels[start:end:end]
}
