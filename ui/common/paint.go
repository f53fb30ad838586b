package common

import (
	"strings"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Paint is a style reduced to the escape codes around its text: applying it
// costs two string concatenations, where lipgloss.Style.Render measures and
// pads every line. For one-line text that is already laid out (table rows,
// bar segments).
type Paint struct{ Pre, Post string }

func PaintOf(s lipgloss.Style) Paint {
	const probe = "\x00"
	r := s.Render(probe)
	i := strings.Index(r, probe)
	if i < 0 {
		return Paint{}
	}
	return Paint{Pre: r[:i], Post: r[i+len(probe):]}
}

func (p Paint) On(s string) string {
	if p.Pre == "" && p.Post == "" {
		return s
	}
	return p.Pre + s + p.Post
}

// CellWidth is the number of terminal cells s takes, escape codes excluded.
// It is exact and fast for ASCII and the symbols this screen draws (box
// drawing, blocks, arrows, punctuation); other text goes through the full
// grapheme-aware measure.
func CellWidth(s string) int {
	w := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
			continue
		case c < 0x80:
			if c >= 0x20 && c != 0x7f {
				w++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !narrowSymbol(r) {
			return ansi.StringWidth(s)
		}
		w++
		i += size
	}
	return w
}

// narrowSymbol reports whether r is one cell wide in every terminal.
func narrowSymbol(r rune) bool {
	switch {
	case r >= 0xa0 && r <= 0x2ff: // Latin-1 and extended Latin: ° × · é
		return true
	case r >= 0x2010 && r <= 0x2027: // dashes, bullets, ellipsis
		return true
	case r >= 0x2190 && r <= 0x21ff: // arrows
		return true
	case r >= 0x2500 && r <= 0x25ff: // box drawing, blocks, shapes
		return true
	case r >= 0x2800 && r <= 0x28ff: // braille: the plots
		return true
	}
	return false
}

// skipEscape returns the index after the escape sequence at s[i].
func skipEscape(s string, i int) int {
	i++ // ESC
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[': // CSI: parameters, then a final byte 0x40–0x7e
		for i++; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return i
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ESC \
		for i++; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	}
	return i + 1
}
