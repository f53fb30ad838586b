// Package footer is the last line of the live view: the filter input, a
// question, the last action's result, or the state of the process list and
// the keys of the screen.
package footer

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// State is what the root gives the footer to show, the first set first:
// the input, the prompt, then (after the status line) the state and the
// keys.
type State struct {
	Input  string // the filter being typed
	Prompt string // a question waiting for its answer
	State  []string
	Hints  []key.Binding
}

// Bar is the last line: the filter input, the kill prompt, the last
// action's result (common.StatusLine), or the state of the process list
// and the keys of the screen.
type Bar struct {
	ctx       *common.Context
	width     int
	s         State
	status    string
	statusErr bool
}

// New returns the footer.
func New(ctx *common.Context) *Bar { return &Bar{ctx: ctx} }

// Update takes what to show (State) and the status line.
func (f *Bar) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case State:
		f.s = msg
	case common.StatusLine:
		f.status, f.statusErr = msg.Text, msg.Err
	}
	return nil
}

func (f *Bar) SetSize(w, _ int)        { f.width = w }
func (f *Bar) Bindings() []key.Binding { return nil }

func (f *Bar) View() string {
	st := f.ctx.Styles
	switch {
	case f.s.Input != "":
		return draw.Fit(f.s.Input+st.Dim.Render("  enter: keep · esc: clear"), f.width)
	case f.s.Prompt != "":
		return f.s.Prompt
	case f.status != "":
		if f.statusErr {
			return draw.Fit(st.Error.Render(f.status), f.width)
		}
		return draw.Fit(st.Status.Render(f.status), f.width)
	}
	// Keys that share a hint (< and > sort by the column left / right) are
	// one hint.
	var hs []string
	seen := map[string]bool{}
	for _, h := range f.s.Hints {
		if k := h.Help().Key; h.Enabled() && !seen[k] {
			seen[k] = true
			hs = append(hs, k+" "+footerWord(h))
		}
	}
	l := ""
	if len(f.s.State) > 0 {
		l = st.Status.Render(strings.Join(f.s.State, " · ")) + "  "
	}
	// Whole keys, as many as fit: a key cut ("K …", "s so…") says nothing.
	for len(hs) > 1 && common.CellWidth(l)+common.CellWidth(strings.Join(hs, " · ")) > f.width {
		hs = hs[:len(hs)-1]
	}
	return draw.Fit(l+st.Help.Render(strings.Join(hs, " · ")), f.width)
}

// footerWord is the short name of a key in the footer; no two keys of a
// screen share one.
func footerWord(b key.Binding) string {
	switch b.Help().Key {
	case "tab":
		return "pane"
	case "enter":
		return "detail"
	case "s":
		return "sort"
	case "F6":
		return "sort by"
	case "< >", "< .":
		return "sort ←/→"
	case "F9":
		return "signal"
	case "u":
		return "users"
	case "m":
		return "mine"
	case "K":
		return "kill"
	case "a":
		return "alerts"
	case "z":
		return "span"
	case "space/p":
		return "play"
	case ">":
		return "speed"
	case "→":
		return "step"
	case "↑/k":
		return "up"
	case "↓/j":
		return "down"
	}
	d := b.Help().Desc
	if i := strings.IndexAny(d, " ,("); i > 0 {
		return d[:i]
	}
	return d
}
