// Package banner is the live view's lines of alerts under the header: the
// advisor's alerts in force, the source's warnings and errors.
package banner

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

// Bar shows the alerts in force, the source's warnings and errors;
// empty when there are none. It takes at most an eighth of the screen (four
// lines, one at least): a long message wraps onto a spare line or is
// shortened before the process it names, and what does not fit is counted
// with a pointer to the alerts screen (a).
type Bar struct {
	ctx           *common.Context
	width, screen int // the screen's height sets the banner's room
	alerts        []advisor.Alert
	snap          sampler.Snapshot
}

// New returns the banner, empty until the first snapshot.
func New(ctx *common.Context) *Bar { return &Bar{ctx: ctx} }

// Update takes the alerts in force and the snapshot they are of.
func (b *Bar) Update(msg tea.Msg) tea.Cmd {
	if s, ok := msg.(common.Shown); ok {
		b.alerts, b.snap = s.Alerts, s.All
	}
	return nil
}

// SetSize gives the width and the screen's height, which sets the room.
func (b *Bar) SetSize(w, screen int)   { b.width, b.screen = w, screen }
func (b *Bar) Bindings() []key.Binding { return nil }

func (b *Bar) View() string {
	st := b.ctx.Styles
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
// last "PID <number>" on (which process) and cuts the words before it,
// where what is left of them still says how much ("GPU 0 at 77.3% … PID
// 41230 …"); else it drops words from its end ("GPU 1 full… PID 30411"
// would read as a full GPU).
func shorten(s string, w int) string {
	if common.CellWidth(s) <= w {
		return s
	}
	if loc := lastPID(s); loc > 0 {
		tail := s[loc:]
		if tw := common.CellWidth(tail); tw+12 <= w {
			if head := draw.Elide(strings.TrimRight(s[:loc], " "), w-tw-1); strings.HasSuffix(head, "…") && len(head) > len("…") && saysHowMuch(head) {
				return head + " " + tail
			}
		}
	}
	return draw.Elide(s, w)
}

// saysHowMuch reports whether an alert's text holds a figure after the
// device it names ("GPU 0 at 77.3%", not "GPU 1 full").
func saysHowMuch(s string) bool {
	f := strings.Fields(s)
	if len(f) > 2 && f[0] == "GPU" {
		f = f[2:]
	}
	return strings.ContainsAny(strings.Join(f, " "), "0123456789")
}
