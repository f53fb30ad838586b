package common

import (
	"image/color"

	"charm.land/lipgloss/v2"

	"github.com/vramtop/vramtop/advisor"
)

// Styles is every style the screen uses, built once from the terminal's
// background. With noColor only text attributes (bold, faint, reverse) are
// used, and the memory bars tell used, reserved and free apart by glyph.
type Styles struct {
	noColor bool

	Title     lipgloss.Style
	Header    lipgloss.Style
	Dim       lipgloss.Style
	Accent    lipgloss.Style
	Badge     lipgloss.Style // neutral badge: DEMO, PAUSED, REPLAY
	Warning   lipgloss.Style // a warning about the source (driver bug, ...)
	Error     lipgloss.Style
	ColHeader lipgloss.Style
	Mine      lipgloss.Style
	Others    lipgloss.Style
	Exited    lipgloss.Style
	Unattr    lipgloss.Style
	Selected  lipgloss.Style // selected row in the focused pane
	Cursor    lipgloss.Style // selected row in an unfocused pane
	Status    lipgloss.Style
	Help      lipgloss.Style
	Box       lipgloss.Style
	Reserved  lipgloss.Style // reserved part of a memory bar
	Free      lipgloss.Style // free part of a memory bar

	// Paints of the styles applied per row or per cell (see paint).
	PMine, POthers, PExited, PUnattr, PSelected, PCursor, PColHeader, PDim Paint
	PReserved, PFree, PAccent                                              Paint
	PSev                                                                   [3]Paint

	sev      [3]lipgloss.Style
	sevBadge [3]lipgloss.Style
}

// Bar glyphs: used, reserved, free. Different glyphs keep them apart without
// colour.
const (
	GlyphUsed     = "█"
	GlyphReserved = "▒"
	GlyphFree     = "░"
)

// NewStyles builds the styles for a dark or light background.
func NewStyles(isDark, noColor bool) Styles {
	s := Styles{noColor: noColor}
	ld := lipgloss.LightDark(isDark)
	c := func(light, dark string) color.Color {
		if noColor {
			return lipgloss.NoColor{}
		}
		return ld(lipgloss.Color(light), lipgloss.Color(dark))
	}
	ok := c("#1a7f37", "#5fd787")
	warn := c("#9a6700", "#ffd75f")
	crit := c("#cf222e", "#ff5f5f")
	dim := c("#6e7781", "#8a8a8a")
	accent := c("#0550ae", "#87afff")
	other := c("#8250df", "#d7afff")

	s.Title = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Header = lipgloss.NewStyle()
	s.Dim = lipgloss.NewStyle().Foreground(dim)
	s.Accent = lipgloss.NewStyle().Foreground(accent)
	s.Badge = lipgloss.NewStyle().Bold(true).Reverse(true)
	s.Warning = lipgloss.NewStyle().Foreground(warn)
	s.Error = lipgloss.NewStyle().Foreground(crit).Bold(true)
	s.ColHeader = lipgloss.NewStyle().Bold(true).Underline(true)
	s.Mine = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Others = lipgloss.NewStyle().Foreground(other)
	s.Exited = lipgloss.NewStyle().Faint(true).Foreground(dim)
	s.Unattr = lipgloss.NewStyle().Italic(true).Foreground(dim)
	s.Selected = lipgloss.NewStyle().Reverse(true)
	s.Cursor = lipgloss.NewStyle().Underline(true)
	s.Status = lipgloss.NewStyle().Foreground(accent)
	s.Help = lipgloss.NewStyle().Foreground(dim)
	s.Box = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(dim).Padding(0, 1)
	s.Reserved = lipgloss.NewStyle().Foreground(dim)
	s.Free = lipgloss.NewStyle().Foreground(dim).Faint(true)

	for i, col := range []color.Color{ok, warn, crit} {
		s.sev[i] = lipgloss.NewStyle().Foreground(col)
		s.sevBadge[i] = lipgloss.NewStyle().Bold(true).Reverse(true).Foreground(col)
	}
	s.sev[advisor.Crit] = s.sev[advisor.Crit].Bold(true)
	s.PMine, s.POthers, s.PExited, s.PUnattr = PaintOf(s.Mine), PaintOf(s.Others), PaintOf(s.Exited), PaintOf(s.Unattr)
	s.PSelected, s.PCursor, s.PColHeader, s.PDim = PaintOf(s.Selected), PaintOf(s.Cursor), PaintOf(s.ColHeader), PaintOf(s.Dim)
	s.PReserved, s.PFree, s.PAccent = PaintOf(s.Reserved), PaintOf(s.Free), PaintOf(s.Accent)
	for i := range s.sev {
		s.PSev[i] = PaintOf(s.sev[i])
	}
	return s
}

// Severity is the one place a severity becomes a style: bars, plots, badges,
// alerts and advice all use it.
func (s Styles) Severity(v advisor.Severity) lipgloss.Style {
	return s.sev[clampSev(v)]
}

// SeverityBadge is Severity for a label on a reversed background.
func (s Styles) SeverityBadge(v advisor.Severity) lipgloss.Style {
	return s.sevBadge[clampSev(v)]
}

func clampSev(v advisor.Severity) int {
	return min(max(int(v), 0), 2)
}

// Level is the index of a severity in PSev: Info, Warn, Crit.
func Level(v advisor.Severity) int { return clampSev(v) }
