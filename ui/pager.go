package ui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// pager is a viewport that scrolls with the view's own keys (↑/↓, page
// keys, home/end or g/G, the wheel): the help and the alerts screens.
type pager struct {
	vp   viewport.Model
	keys keyMap
}

func newPager() pager { return pager{vp: viewport.New()} }

func (p *pager) setKeys(k keyMap) {
	p.keys = k
	p.vp.KeyMap = viewport.KeyMap{Up: k.Up, Down: k.Down, PageUp: k.PageUp, PageDown: k.PageDown}
}

// Update scrolls.
func (p *pager) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, p.keys.Top):
			p.vp.GotoTop()
			return nil
		case key.Matches(k, p.keys.Bottom):
			p.vp.GotoBottom()
			return nil
		}
	}
	var cmd tea.Cmd
	p.vp, cmd = p.vp.Update(msg)
	return cmd
}

// Top scrolls back to the first line.
func (p *pager) Top() { p.vp.GotoTop() }

// Set lays content into w×h, keeping the scroll position.
func (p *pager) Set(content string, w, h int) {
	p.vp.SetWidth(w)
	p.vp.SetHeight(max(h, 1))
	y := p.vp.YOffset()
	p.vp.SetContent(content)
	p.vp.SetYOffset(y)
}

// Overflows reports whether the content is taller than the viewport.
func (p *pager) Overflows() bool { return p.vp.TotalLineCount() > p.vp.Height() }

// ScrollLine says how to scroll and how far down the view is; empty when
// everything fits.
func (p *pager) ScrollLine() string {
	if !p.Overflows() {
		return ""
	}
	return fmt.Sprintf("  ↑/↓ pgup/pgdn: scroll · %d%%", int(p.vp.ScrollPercent()*100+0.5))
}

func (p *pager) View() string { return p.vp.View() }
