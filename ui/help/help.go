// Package help is the help screen of the live view: every key it takes and
// what the marks and columns mean.
package help

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// Screen lists every key the view takes and what the marks mean, in a
// viewport that scrolls when it does not fit.
type Screen struct {
	ctx    *common.Context
	groups [][]key.Binding
	width  int
	height int
	pg     draw.Pager
}

// New returns the help screen of ctx's keys.
func New(ctx *common.Context) *Screen {
	h := &Screen{ctx: ctx, pg: draw.NewPager()}
	h.pg.SetKeys(ctx.Keys)
	return h
}

func (h *Screen) SetSize(w, hh int) {
	if w == h.width && hh == h.height {
		return
	}
	h.width, h.height = w, hh
	h.refresh()
}

// Key is the help screen's key: ? and F1.
func (h *Screen) Key() key.Binding { return h.ctx.Keys.Help }

func (h *Screen) Bindings() []key.Binding {
	k := &h.ctx.Keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Help, k.Back}
}

// Update scrolls; opened, it lists the keys enabled now from the top.
func (h *Screen) Update(msg tea.Msg) tea.Cmd {
	switch msg.(type) {
	case common.Opened:
		h.groups = h.keys()
		h.refresh()
		h.pg.Top()
		return nil
	case common.Restyled:
		h.pg.SetKeys(h.ctx.Keys)
		h.refresh()
		return nil
	}
	return h.pg.Update(msg)
}

// keys are the keymap's enabled now, by theme, then the keys of the full
// screens that declare their own.
func (h *Screen) keys() [][]key.Binding {
	groups := h.ctx.Keys.HelpGroups()
	listed := map[string]bool{}
	for _, g := range groups {
		for _, b := range g {
			listed[b.Help().Key] = true
		}
	}
	var own []key.Binding
	for _, b := range h.ctx.ScreenKeys {
		if !listed[b.Help().Key] {
			own = append(own, b)
		}
	}
	if len(own) > 0 {
		groups = append(groups, own)
	}
	return groups
}

// refresh lays the content out at the width and fits the viewport to the
// height: a scroll line under it when the content does not fit.
func (h *Screen) refresh() {
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

func (h *Screen) View() string {
	if h.width <= 0 || h.height <= 0 {
		return ""
	}
	if !h.pg.Overflows() {
		return h.pg.View()
	}
	return h.pg.View() + "\n" + h.ctx.Styles.Dim.Render(draw.Fit(h.pg.ScrollLine()+" · ? or esc: close", h.width))
}

// content is the key list, in as many columns as the width takes, and the
// legend of the marks.
func (h *Screen) content() string {
	st := h.ctx.Styles
	var lines []string
	for _, g := range h.groups {
		for _, b := range g {
			if b.Enabled() {
				lines = append(lines, st.Accent.Render(draw.Fit(b.Help().Key, 9))+" "+b.Help().Desc)
			}
		}
	}
	th := h.ctx.Th
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
		common.ColumnLegend(h.width),
	}, "\n")
	title := st.Title.Render(h.ctx.Title+" — keys") + st.Dim.Render("   (? or esc to close)")
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
