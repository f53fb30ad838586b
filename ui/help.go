package ui

import (
	"fmt"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
)

// helpScreen lists every key the current screen takes and what the marks
// mean, in a viewport that scrolls when it does not fit.
type helpScreen struct {
	st     common.Styles
	keys   common.KeyMap
	th     advisor.Thresholds
	title  string
	groups [][]key.Binding
	width  int
	height int
	pg     draw.Pager
}

func newHelpScreen() helpScreen {
	return helpScreen{pg: draw.NewPager()}
}

func (h *helpScreen) setStyles(st common.Styles, keys common.KeyMap, th advisor.Thresholds, title string) {
	h.st, h.keys, h.th, h.title = st, keys, th, title
	h.pg.SetKeys(keys)
	h.refresh()
}

// SetGroups sets the keys listed, by theme.
func (h *helpScreen) SetGroups(groups [][]key.Binding) {
	h.groups = groups
	h.refresh()
}

func (h *helpScreen) SetSize(w, hh int) {
	if w == h.width && hh == h.height {
		return
	}
	h.width, h.height = w, hh
	h.refresh()
}

func (h *helpScreen) Bindings() []key.Binding {
	return []key.Binding{h.keys.Up, h.keys.Down, h.keys.PageUp, h.keys.PageDown, h.keys.Top, h.keys.Bottom, h.keys.Help, h.keys.Back}
}

// Update scrolls.
func (h *helpScreen) Update(msg tea.Msg) tea.Cmd { return h.pg.Update(msg) }

// Top scrolls back to the first line.
func (h *helpScreen) Top() { h.pg.Top() }

// refresh lays the content out at the width and fits the viewport to the
// height: a scroll line under it when the content does not fit.
func (h *helpScreen) refresh() {
	if h.width <= 0 || h.height <= 0 {
		return
	}
	content := h.content()
	vh := h.height
	if lipgloss.Height(content) > vh {
		vh--
	}
	h.pg.Set(content, h.width, vh)
}

func (h *helpScreen) View() string {
	if h.width <= 0 || h.height <= 0 {
		return ""
	}
	if !h.pg.Overflows() {
		return h.pg.View()
	}
	return h.pg.View() + "\n" + h.st.Dim.Render(draw.Fit(h.pg.ScrollLine()+" · ? or esc: close", h.width))
}

// columnLegend says what each column of the process table holds; the
// README's legend is checked against it.
const columnLegend = "MEM the process's GPU memory · GMEM% its share of its GPU's memory · GPU% its SM utilization " +
	"(nvtop's GPU%, nvitop's %SM) · PEAK the most it held · CPU% host CPU (100 = one core) · RSS host memory · AGE since it started · " +
	"▼ the sort column, ▲ reversed (I)"

// content is the key list, in as many columns as the width takes, and the
// legend of the marks.
func (h *helpScreen) content() string {
	st := h.st
	var lines []string
	for _, g := range h.groups {
		for _, b := range g {
			if b.Enabled() {
				lines = append(lines, st.Accent.Render(draw.Fit(b.Help().Key, 9))+" "+b.Help().Desc)
			}
		}
	}
	th := h.th
	legend := strings.Join([]string{
		st.Title.Render("What the marks mean"),
		st.Severity(advisor.Info).Render(common.GlyphUsed+common.GlyphUsed) + " used  " + st.Reserved.Render(common.GlyphReserved+common.GlyphReserved) + " reserved by the driver  " + st.Free.Render(common.GlyphFree+common.GlyphFree) + " free",
		fmt.Sprintf("bars and graphs turn %s at %.0f%% and %s at %.0f%% (--warn, --crit); dotted lines mark those levels",
			st.Severity(advisor.Warn).Render("yellow / WARN"), th.Warn, st.Severity(advisor.Crit).Render("red / CRIT"), th.Crit),
		"graphs keep the peak of each column: a short spike the sampler saw stays visible",
		st.Mine.Render("● bold") + " your processes   " + st.Others.Render("others'") + "   " + st.Exited.Render("dim: exited (peak kept)") + "   " + st.Unattr.Render("unattributed: memory no visible process owns"),
		"(other PID namespace): a process in a container; run vramtop in the host PID namespace to name it",
		"",
		st.Title.Render("What the columns hold"),
		columnLegend,
	}, "\n")
	title := st.Title.Render(h.title+" — keys") + st.Dim.Render("   (? or esc to close)")
	// As many columns of keys as the width takes.
	colW := 0
	for _, l := range lines {
		colW = max(colW, lipgloss.Width(l))
	}
	ncol := draw.Clamp(h.width/(colW+3), 1, 4)
	rows := (len(lines) + ncol - 1) / ncol
	var cols []string
	for c := 0; c < ncol; c++ {
		lo, hi := c*rows, min((c+1)*rows, len(lines))
		if lo >= hi {
			break
		}
		col := make([]string, 0, rows)
		for _, l := range lines[lo:hi] {
			col = append(col, draw.Fit(l, colW+3))
		}
		cols = append(cols, strings.Join(col, "\n"))
	}
	grid := lipgloss.JoinHorizontal(lipgloss.Top, cols...)
	// The legend wraps at the width rather than lose its ends.
	// ansi.Wordwrap breaks after any hyphen: a flag (--warn) or a name
	// (nvidia-smi) is kept whole by wrapping it with hyphens that do not
	// break, of the same width.
	legend = strings.ReplaceAll(ansi.Wordwrap(strings.ReplaceAll(legend, "-", "\u2011"), h.width, ""), "\u2011", "-")
	return draw.ClampLines(title+"\n\n"+grid+"\n\n"+legend, h.width, 1<<20)
}
