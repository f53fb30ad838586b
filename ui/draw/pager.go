package draw

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/ui/common"
)

// Pager is a viewport that scrolls with the view's own keys (↑/↓, page
// keys, home/end or g/G, the wheel): the help and the alerts screens.
type Pager struct {
	vp   viewport.Model
	keys common.KeyMap
}

func NewPager() Pager { return Pager{vp: viewport.New()} }

func (p *Pager) SetKeys(k common.KeyMap) {
	p.keys = k
	p.vp.KeyMap = viewport.KeyMap{Up: k.Up, Down: k.Down, PageUp: k.PageUp, PageDown: k.PageDown}
}

// Update scrolls.
func (p *Pager) Update(msg tea.Msg) tea.Cmd {
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
func (p *Pager) Top() { p.vp.GotoTop() }

// Set lays content into w×h, keeping the scroll position.
func (p *Pager) Set(content string, w, h int) {
	p.vp.SetWidth(w)
	p.vp.SetHeight(max(h, 1))
	y := p.vp.YOffset()
	p.vp.SetContent(content)
	p.vp.SetYOffset(y)
}

// Overflows reports whether the content is taller than the viewport.
func (p *Pager) Overflows() bool { return p.vp.TotalLineCount() > p.vp.Height() }

// ScrollLine says how to scroll and how far down the view is; empty when
// everything fits.
func (p *Pager) ScrollLine() string {
	if !p.Overflows() {
		return ""
	}
	return fmt.Sprintf("  ↑/↓ pgup/pgdn: scroll · %d%%", int(p.vp.ScrollPercent()*100+0.5))
}

func (p *Pager) View() string { return p.vp.View() }
