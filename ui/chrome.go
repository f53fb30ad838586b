package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// The chrome around the panes: the header line, the banners and the footer.
// Each is a component the root fills in with what it shows.

// bannerBar shows the alerts in force, the source's warnings and errors;
// empty when there are none. It takes at most an eighth of the screen (four
// lines, one at least): a long message wraps onto a spare line or is
// shortened before the process it names, and what does not fit is counted
// with a pointer to the alerts screen (a).
type bannerBar struct {
	st            common.Styles
	width, screen int // the screen's height sets the banner's room
	alerts        []advisor.Alert
	snap          sampler.Snapshot
}

func (b *bannerBar) Update(tea.Msg) tea.Cmd  { return nil }
func (b *bannerBar) SetSize(w, screen int)   { b.width, b.screen = w, screen }
func (b *bannerBar) Bindings() []key.Binding { return nil }

func (b *bannerBar) View() string {
	st := b.st
	type item struct {
		tag   string // styled, in front of the first line
		text  string
		style lipgloss.Style
	}
	var items []item
	for _, a := range b.alerts {
		items = append(items, item{st.SeverityBadge(a.Severity).Render(" " + strings.ToUpper(a.Severity.String()) + " "), draw.AlertText(b.snap, a), st.Severity(a.Severity)})
	}
	for _, w := range b.snap.Warnings {
		items = append(items, item{st.Warning.Render("!"), w, st.Warning})
	}
	if b.snap.Err != "" {
		items = append(items, item{st.Error.Render("error:"), b.snap.Err, st.Error})
	}
	if len(items) == 0 || b.width <= 0 {
		return ""
	}
	room := draw.Clamp(b.screen/8, 1, 4)
	shown, more := items, 0
	if len(items) > room {
		shown, more = items[:room], len(items)-room
	}
	// Spare lines let a long message wrap onto a second line, in order.
	spare := room - len(shown)
	var lines []string
	for i, it := range shown {
		tagW := common.CellWidth(it.tag) + 1
		w := b.width - tagW
		suffix := ""
		if more > 0 && i == len(shown)-1 {
			suffix = st.Dim.Render(fmt.Sprintf("  +%d more · a: all alerts", more))
			w -= common.CellWidth(suffix)
		}
		if w < 8 {
			lines = append(lines, draw.Fit(st.Dim.Render(fmt.Sprintf("%d alerts · a: all alerts", len(items))), b.width))
			continue
		}
		first, rest := it.text, ""
		if common.CellWidth(it.text) > w && spare > 0 {
			first, rest = splitWords(it.text, w)
			spare--
		}
		lines = append(lines, draw.Fit(it.tag+" "+it.style.Render(shorten(first, w))+suffix, b.width))
		if rest != "" {
			lines = append(lines, draw.Fit(strings.Repeat(" ", tagW)+it.style.Render(shorten(rest, w)), b.width))
		}
	}
	return strings.Join(lines, "\n")
}

// splitWords splits s after the last word that ends within w cells.
func splitWords(s string, w int) (string, string) {
	cut := 0
	for i, r := range s {
		if common.CellWidth(s[:i]) > w {
			break
		}
		if r == ' ' {
			cut = i
		}
	}
	if cut == 0 {
		return s, ""
	}
	return s[:cut], strings.TrimLeft(s[cut:], " ")
}

// lastPID is where the last "PID <number>" of s starts; -1 for none.
func lastPID(s string) int {
	for i := strings.LastIndex(s, "PID "); i >= 0; i = strings.LastIndex(s[:i], "PID ") {
		if j := i + len("PID "); j < len(s) && s[j] >= '0' && s[j] <= '9' {
			return i
		}
	}
	return -1
}

// shorten fits s into w cells; a message too long keeps its end from the
// last "PID <number>" on (which process) and cuts the words before it.
func shorten(s string, w int) string {
	if common.CellWidth(s) <= w {
		return s
	}
	if loc := lastPID(s); loc > 0 {
		tail := s[loc:]
		if tw := common.CellWidth(tail); tw+12 <= w {
			if head := draw.Elide(strings.TrimRight(s[:loc], " "), w-tw-1); strings.HasSuffix(head, "…") && len(head) > len("…") {
				return head + " " + tail
			}
		}
	}
	return draw.Elide(s, w)
}

// footerBar is the last line: the filter input, the kill prompt, the last
// action's result, or the state of the process list and the keys of the
// screen.
type footerBar struct {
	st    common.Styles
	width int
	// One of these, first set first: the line that takes the footer.
	input, prompt, status string
	statusErr             bool
	state                 []string
	hints                 []key.Binding
}

func (f *footerBar) Update(tea.Msg) tea.Cmd  { return nil }
func (f *footerBar) SetSize(w, _ int)        { f.width = w }
func (f *footerBar) Bindings() []key.Binding { return nil }

func (f *footerBar) View() string {
	st := f.st
	switch {
	case f.input != "":
		return draw.Fit(f.input+st.Dim.Render("  enter: keep · esc: clear"), f.width)
	case f.prompt != "":
		return f.prompt
	case f.status != "":
		if f.statusErr {
			return draw.Fit(st.Error.Render(f.status), f.width)
		}
		return draw.Fit(st.Status.Render(f.status), f.width)
	}
	var hs []string
	for _, h := range f.hints {
		if h.Enabled() {
			hs = append(hs, h.Help().Key+" "+footerWord(h))
		}
	}
	l := ""
	if len(f.state) > 0 {
		l = st.Status.Render(strings.Join(f.state, " · ")) + "  "
	}
	return draw.Fit(l+st.Help.Render(strings.Join(hs, " · ")), f.width)
}

// footerWord is the one-word name of a key in the footer.
func footerWord(b key.Binding) string {
	switch b.Help().Key {
	case "tab":
		return "pane"
	case "enter":
		return "detail"
	case "s":
		return "sort"
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
	}
	d := b.Help().Desc
	if i := strings.IndexAny(d, " ,("); i > 0 {
		return d[:i]
	}
	return d
}
