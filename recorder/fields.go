package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/vramtop/vramtop/sampler"
)

// The fields a line records of a device and of a process are those of
// sampler.Device and sampler.Process (and of DevRec and ProcRec, for what
// a line says of them relative to itself) that carry a rec tag: its short
// name, and omitempty where an empty value is left out of a keyframe. The
// tables below are read from those tags once, at start-up; the keyframes,
// the delta lines, their decoding, and what replay checks and makes inert
// all go through them, so a new field with a tag is recorded, compared,
// read back and replayed with no other change. A field of a type that has
// no codec in codecs stops the program at start-up (and every test).

// field is one recorded field: its name in a line and where it lies in
// its record (DevRec or ProcRec).
type field struct {
	tag       string
	name      string // the Go field, for messages
	omitEmpty bool
	off       uintptr
	c         *codec
}

// codec reads and writes one type of field through a pointer to it.
type codec struct {
	// empty: the value a line leaves out (the zero value, or a number
	// JSON cannot carry).
	empty func(p unsafe.Pointer) bool
	// equal: the two values are written alike (two empty ones are).
	equal func(a, b unsafe.Pointer) bool
	// add appends the value as JSON (null where empty and a pointer).
	add func(b []byte, p unsafe.Pointer) ([]byte, error)
	// decode sets the field from one JSON value (never null).
	decode func(p unsafe.Pointer, v []byte) error
	zero   func(p unsafe.Pointer)
	copy   func(dst, src unsafe.Pointer)
	// text: a string, which replay makes inert; time: a time.Time.
	text, time bool
}

// table is the recorded fields of one record type, in the order of their
// declaration (and so of their place in a line).
type table struct {
	fields []field
	byTag  map[string]int
}

// lookup finds the index of the field of a member's name.
func (t *table) lookup(key []byte) (int, bool) {
	if i, ok := t.byTag[string(key)]; ok {
		return i, true
	}
	// encoding/json, which read these lines before, matched names
	// regardless of case.
	for i := range t.fields {
		if bytes.EqualFold([]byte(t.fields[i].tag), key) {
			return i, true
		}
	}
	return 0, false
}

// without is t less the fields named.
func (t *table) without(tags ...string) *table {
	out := &table{byTag: map[string]int{}}
	for _, f := range t.fields {
		if !contains(tags, f.tag) {
			out.byTag[f.tag] = len(out.fields)
			out.fields = append(out.fields, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tableOf reads the rec tags of t's fields and of the fields of the
// structs it embeds, in their order.
func tableOf(t reflect.Type) *table {
	out := &table{byTag: map[string]int{}}
	var walk func(t reflect.Type, base uintptr)
	walk = func(t reflect.Type, base uintptr) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, ok := sf.Tag.Lookup("rec")
			if !ok {
				if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
					walk(sf.Type, base+sf.Offset)
				}
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			c := codecs[sf.Type]
			if c == nil {
				panic(fmt.Sprintf("recorder: %s.%s (rec:%q) is of type %v, which has no codec in recorder/fields.go", t.Name(), sf.Name, tag, sf.Type))
			}
			if _, dup := out.byTag[name]; dup || name == "" {
				panic(fmt.Sprintf("recorder: %s.%s: rec name %q is empty or taken", t.Name(), sf.Name, name))
			}
			out.byTag[name] = len(out.fields)
			out.fields = append(out.fields, field{tag: name, name: sf.Name, omitEmpty: opts == "omitempty", off: base + sf.Offset, c: c})
		}
	}
	walk(t, 0)
	if len(out.fields) > 255 {
		panic("recorder: more than 255 recorded fields in " + t.Name())
	}
	return out
}

var (
	devTable  = tableOf(reflect.TypeFor[DevRec]())
	procTable = tableOf(reflect.TypeFor[ProcRec]())

	// What a delta line compares: not the identity of a device (id) or a
	// process (pid, st), nor the time a process was last seen (ls), which
	// a delta line states on its own terms.
	devFields  = devTable.without("id")
	procFields = procTable.without("pid", "st", "ls")
	// What a delta line may set: a new process in full, and a device's
	// fields but its identity.
	devPatchFields  = devFields
	procPatchFields = procTable
)

func at(base unsafe.Pointer, f *field) unsafe.Pointer { return unsafe.Add(base, f.off) }

// codecs holds a codec for each type a recorded field may have.
var codecs = map[reflect.Type]*codec{
	reflect.TypeFor[string]():       textCodec(),
	reflect.TypeFor[bool]():         valueCodec(strconv.AppendBool, parseBool),
	reflect.TypeFor[uint32]():       valueCodec(appendUint[uint32], parseUint[uint32]),
	reflect.TypeFor[uint64]():       valueCodec(appendUint[uint64], parseUint[uint64]),
	reflect.TypeFor[int64]():        valueCodec(appendInt[int64], parseInt[int64]),
	reflect.TypeFor[int]():          valueCodec(appendInt[int], parseInt[int]),
	reflect.TypeFor[*uint32]():      ptrCodec(appendUint[uint32], parseUint[uint32], nil),
	reflect.TypeFor[*uint64]():      ptrCodec(appendUint[uint64], parseUint[uint64], nil),
	reflect.TypeFor[*int]():         ptrCodec(appendInt[int], parseInt[int], nil),
	reflect.TypeFor[*float64]():     ptrCodec(appendFloat, parseFloat, isFinite),
	reflect.TypeFor[time.Time]():    timeCodec(),
	reflect.TypeFor[*sampler.Job](): jsonCodec[sampler.Job](),
}

func valueCodec[T comparable](add func([]byte, T) []byte, parse func([]byte) (T, error)) *codec {
	return &codec{
		empty: func(p unsafe.Pointer) bool { var z T; return *(*T)(p) == z },
		equal: func(a, b unsafe.Pointer) bool { return *(*T)(a) == *(*T)(b) },
		add:   func(b []byte, p unsafe.Pointer) ([]byte, error) { return add(b, *(*T)(p)), nil },
		decode: func(p unsafe.Pointer, v []byte) error {
			x, err := parse(v)
			if err == nil {
				*(*T)(p) = x
			}
			return err
		},
		zero: func(p unsafe.Pointer) { var z T; *(*T)(p) = z },
		copy: func(dst, src unsafe.Pointer) { *(*T)(dst) = *(*T)(src) },
	}
}

// ptrCodec is for an optional value (*T, nil where unknown); ok, where
// given, says which values a line can carry (the others are left out).
func ptrCodec[T comparable](add func([]byte, T) []byte, parse func([]byte) (T, error), ok func(T) bool) *codec {
	empty := func(p unsafe.Pointer) bool {
		v := *(**T)(p)
		return v == nil || ok != nil && !ok(*v)
	}
	return &codec{
		empty: empty,
		equal: func(a, b unsafe.Pointer) bool {
			if ea, eb := empty(a), empty(b); ea || eb {
				return ea == eb
			}
			return **(**T)(a) == **(**T)(b)
		},
		add: func(b []byte, p unsafe.Pointer) ([]byte, error) {
			if empty(p) {
				return append(b, "null"...), nil
			}
			return add(b, **(**T)(p)), nil
		},
		decode: func(p unsafe.Pointer, v []byte) error {
			x, err := parse(v)
			if err == nil {
				*(**T)(p) = &x
			}
			return err
		},
		zero: func(p unsafe.Pointer) { *(**T)(p) = nil },
		copy: func(dst, src unsafe.Pointer) { *(**T)(dst) = *(**T)(src) },
	}
}

func textCodec() *codec {
	c := valueCodec(appendString, parseString)
	c.text = true
	return c
}

// timeCodec writes a time as Unix nanoseconds, the zero time as 0.
func timeCodec() *codec {
	get := func(p unsafe.Pointer) int64 { return UnixNano(*(*time.Time)(p)) }
	return &codec{
		empty: func(p unsafe.Pointer) bool { return get(p) == 0 },
		equal: func(a, b unsafe.Pointer) bool { return get(a) == get(b) },
		add:   func(b []byte, p unsafe.Pointer) ([]byte, error) { return strconv.AppendInt(b, get(p), 10), nil },
		decode: func(p unsafe.Pointer, v []byte) error {
			n, err := parseInt[int64](v)
			if err == nil {
				*(*time.Time)(p) = FromUnixNano(n)
			}
			return err
		},
		zero: func(p unsafe.Pointer) { *(*time.Time)(p) = time.Time{} },
		copy: func(dst, src unsafe.Pointer) { *(*time.Time)(dst) = *(*time.Time)(src) },
		time: true,
	}
}

// jsonCodec is for a pointer to a comparable struct, written as
// encoding/json writes it.
func jsonCodec[T comparable]() *codec {
	return &codec{
		empty: func(p unsafe.Pointer) bool { return *(**T)(p) == nil },
		equal: func(a, b unsafe.Pointer) bool {
			x, y := *(**T)(a), *(**T)(b)
			if x == nil || y == nil {
				return x == y
			}
			return *x == *y
		},
		add: func(b []byte, p unsafe.Pointer) ([]byte, error) {
			j, err := json.Marshal(*(**T)(p))
			return append(b, j...), err
		},
		decode: func(p unsafe.Pointer, v []byte) error {
			x := new(T)
			if err := json.Unmarshal(v, x); err != nil {
				return err
			}
			*(**T)(p) = x
			return nil
		},
		zero: func(p unsafe.Pointer) { *(**T)(p) = nil },
		copy: func(dst, src unsafe.Pointer) { *(**T)(dst) = *(**T)(src) },
	}
}

type unsigned interface{ ~uint32 | ~uint64 }
type signed interface{ ~int | ~int64 }

func appendUint[T unsigned](b []byte, v T) []byte { return strconv.AppendUint(b, uint64(v), 10) }
func appendInt[T signed](b []byte, v T) []byte    { return strconv.AppendInt(b, int64(v), 10) }

var errNotNumber = errors.New("not an integer in range")

func parseUint[T unsigned](v []byte) (T, error) {
	p := parser{b: v}
	n, ok := p.uint()
	if !ok || p.i != len(v) || uint64(T(n)) != n {
		return 0, errNotNumber
	}
	return T(n), nil
}

func parseInt[T signed](v []byte) (T, error) {
	p := parser{b: v}
	n, ok := p.int()
	if !ok || p.i != len(v) || int64(T(n)) != n {
		return 0, errNotNumber
	}
	return T(n), nil
}

func parseBool(v []byte) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("not true or false")
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFloat writes f as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func parseFloat(v []byte) (float64, error) {
	if len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, errors.New("not a number")
	}
	f, err := strconv.ParseFloat(unsafe.String(&v[0], len(v)), 64)
	if err != nil {
		return 0, errors.New("not a number in range")
	}
	return f, nil
}

// appendString writes s as encoding/json does: plain text as it is, the
// rest through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func parseString(v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", errors.New("not a string")
	}
	in := v[1 : len(v)-1]
	plain := utf8.Valid(in)
	for _, c := range in {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		return string(in), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}
