// Package inert makes text that comes from outside vramtop safe to print.
//
// Process names and command lines, cgroup paths, Prometheus labels and
// error bodies, recordings and logs are written by other people. Each such
// string passes through String (or Bytes) once, where it enters vramtop, so
// that no screen, table, stderr line, report or exported label can carry a
// control sequence. The rule:
//
//   - C0 controls (U+0000–U+001F, TAB, LF and CR included: a field is one
//     line), DEL (U+007F) and C1 controls (U+0080–U+009F) become
//     Placeholder. ESC is a C0 control, so no escape sequence survives,
//     and neither does an 8-bit CSI or OSC.
//   - The bidirectional embeddings, overrides and isolates (U+202A–U+202E,
//     U+2066–U+2069), which reorder what a terminal shows, become
//     Placeholder.
//   - A byte that is not part of valid UTF-8 becomes Placeholder, each
//     byte on its own (as encoding/json decodes it), so a raw 0x9b or 0x9d
//     byte, which some terminals take for CSI or OSC, never reaches one.
//
// Everything else is kept as it is, U+FFFD included. A string that needs
// no change is returned as it is, without allocating.
package inert

import (
	"unicode/utf8"
)

// Placeholder stands in for each character or byte the rule replaces:
// U+FFFD REPLACEMENT CHARACTER, the character a terminal shows for a byte
// that is not UTF-8, so one visible mark means "something here could not
// be shown".
const Placeholder = "\uFFFD"

// String returns s with every control character, bidirectional override or
// isolate and byte that is not UTF-8 replaced by Placeholder; s itself when
// there is none.
func String(s string) string {
	i := firstBad(s)
	if i < 0 {
		return s
	}
	return unsafeString(appendFrom(make([]byte, 0, len(s)+8), s, i))
}

// Bytes is String of b, as a new string.
func Bytes(b []byte) string {
	s := unsafeString(b)
	i := firstBad(s)
	if i < 0 {
		return string(b)
	}
	return unsafeString(appendFrom(make([]byte, 0, len(b)+8), s, i))
}

// Append appends the inert form of s to dst.
func Append(dst []byte, s string) []byte {
	i := firstBad(s)
	if i < 0 {
		return append(dst, s...)
	}
	return appendFrom(dst, s, i)
}

// AppendBytes appends the inert form of b to dst.
func AppendBytes(dst, b []byte) []byte { return Append(dst, unsafeString(b)) }

// Is reports whether s is inert already: String(s) == s.
func Is(s string) bool { return firstBad(s) < 0 }

// IsBad reports whether the rune r is one the rule replaces (a valid
// rune: invalid UTF-8 is told by utf8.DecodeRune).
func IsBad(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// asciiBad marks the ASCII bytes the rule replaces.
var asciiBad = func() (t [utf8.RuneSelf]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t[0x7f] = true
	return t
}()

// firstBad is the offset of the first character or byte of s the rule
// replaces; -1 when there is none.
func firstBad(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiBad[c] {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || IsBad(r) {
			return i
		}
		i += n
	}
	return -1
}

// appendFrom appends s to dst, replacing from offset i on (s[:i] is clean).
func appendFrom(dst []byte, s string, i int) []byte {
	dst = append(dst, s[:i]...)
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiBad[c] {
				dst = append(dst, Placeholder...)
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || IsBad(r) {
			dst = append(dst, Placeholder...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return dst
}
