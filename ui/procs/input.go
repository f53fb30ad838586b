package procs

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// lineInput is the one-line editor of the filter. (bubbles' textinput needs
// a clipboard module this build does not carry; a filter needs little: type,
// move, delete.)
type lineInput struct {
	prompt  string
	hint    string
	value   []rune
	pos     int
	width   int
	limit   int
	focused bool
	cursor  lipgloss.Style
	dim     lipgloss.Style
}

func (in *lineInput) SetValue(s string) {
	in.value = []rune(s)
	if in.limit > 0 && len(in.value) > in.limit {
		in.value = in.value[:in.limit]
	}
	in.pos = len(in.value)
}

func (in *lineInput) Value() string  { return string(in.value) }
func (in *lineInput) Focus()         { in.focused = true }
func (in *lineInput) Blur()          { in.focused = false }
func (in *lineInput) SetWidth(w int) { in.width = w }
func (in *lineInput) CursorEnd()     { in.pos = len(in.value) }
func (in *lineInput) Focused() bool  { return in.focused }

// Update edits the value on a key press.
func (in *lineInput) Update(msg tea.Msg) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || !in.focused {
		return
	}
	switch k.String() {
	case "backspace", "ctrl+h":
		if in.pos > 0 {
			in.value = append(in.value[:in.pos-1], in.value[in.pos:]...)
			in.pos--
		}
	case "delete", "ctrl+d":
		if in.pos < len(in.value) {
			in.value = append(in.value[:in.pos], in.value[in.pos+1:]...)
		}
	case "left", "ctrl+b":
		in.pos = max(in.pos-1, 0)
	case "right", "ctrl+f":
		in.pos = min(in.pos+1, len(in.value))
	case "home", "ctrl+a":
		in.pos = 0
	case "end", "ctrl+e":
		in.pos = len(in.value)
	case "ctrl+u":
		in.value = in.value[in.pos:]
		in.pos = 0
	case "ctrl+w":
		i := in.pos
		for i > 0 && unicode.IsSpace(in.value[i-1]) {
			i--
		}
		for i > 0 && !unicode.IsSpace(in.value[i-1]) {
			i--
		}
		in.value = append(in.value[:i], in.value[in.pos:]...)
		in.pos = i
	default:
		t := k.Text
		if t == "" || strings.IndexFunc(t, unicode.IsControl) >= 0 {
			return
		}
		r := []rune(t)
		if in.limit > 0 && len(in.value)+len(r) > in.limit {
			return
		}
		in.value = append(in.value[:in.pos], append(r, in.value[in.pos:]...)...)
		in.pos += len(r)
	}
}

// View shows the prompt, the value and the cursor.
func (in *lineInput) View() string {
	if len(in.value) == 0 && !in.focused {
		return in.prompt + in.dim.Render(in.hint)
	}
	before := string(in.value[:in.pos])
	at, after := " ", ""
	if in.pos < len(in.value) {
		at, after = string(in.value[in.pos]), string(in.value[in.pos+1:])
	}
	s := in.prompt + before
	if in.focused {
		s += in.cursor.Render(at)
	} else {
		s += at
	}
	s += after
	if len(in.value) == 0 {
		s += in.dim.Render(in.hint)
	}
	return s
}
