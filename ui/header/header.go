// Package header is the top line of the live view: what is shown, from
// where, and whether it is live.
package header

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// State is what the header says of the root's state; the snapshot comes
// with common.Shown.
type State struct {
	Title        string        // "vramtop test", "vramtop fleet"
	Interval     time.Duration // 0 hides it (a replay)
	Replay       bool
	ReplayStatus string
	Paused       bool
	Stale        bool
	Arrived      time.Time // of the last snapshot
	Now          time.Time
	Ended        bool
}

// Bar is the top line.
type Bar struct {
	ctx   *common.Context
	width int
	s     State
	// From the snapshot shown: the whole one, whether one came, whether
	// it is a fleet's, of how many hosts, and the host open.
	snap  sampler.Snapshot
	have  bool
	fleet bool
	hosts int
	host  string
}

// New returns the header, saying nothing yet.
func New(ctx *common.Context) *Bar { return &Bar{ctx: ctx} }

// Update takes what the header says: the root's State and the snapshot
// shown.
func (h *Bar) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case State:
		h.s = msg
	case common.Shown:
		h.snap, h.have, h.host = msg.All, true, msg.Host
		h.fleet = draw.IsFleet(msg.All)
		names := map[string]bool{}
		for _, d := range msg.All.Devices {
			names[d.Hostname] = true
		}
		h.hosts = len(names)
	}
	return nil
}

func (h *Bar) SetSize(w, _ int)        { h.width = w }
func (h *Bar) Bindings() []key.Binding { return nil }

// View is one line: what is shown, from where, and the badges that say
// whether it is live. When it does not fit, the least useful parts go
// first (driver, interval, host); the badges and the time stay.
func (h *Bar) View() string {
	st, hs, width := h.ctx.Styles, h.s, h.width
	s := h.snap
	type part struct {
		text string
		keep int // higher stays longer
	}
	parts := []part{{st.Title.Render(hs.Title), 9}}
	if h.fleet {
		parts = append(parts, part{fmt.Sprintf("fleet of %d hosts", h.hosts), 5})
		if h.host != "" {
			parts = append(parts, part{"host " + st.Accent.Render(h.host), 7})
		}
	} else if s.Hostname != "" {
		parts = append(parts, part{s.Hostname, 6})
	}
	if s.DriverVersion != "" {
		d := "driver " + s.DriverVersion
		if s.CUDAVersion != "" {
			d += " · CUDA " + s.CUDAVersion
		}
		parts = append(parts, part{d, 2})
	}
	if hs.Interval > 0 {
		parts = append(parts, part{"every " + hs.Interval.String(), 4})
	}
	if h.have {
		parts = append(parts, part{s.Time.Format("15:04:05"), 8})
	}
	var badges []string
	if s.Demo {
		badges = append(badges, st.Badge.Render(" DEMO "))
	}
	if hs.Replay {
		badges = append(badges, st.Badge.Render(" REPLAY ")+" "+hs.ReplayStatus)
	}
	if hs.Paused {
		badges = append(badges, st.SeverityBadge(advisor.Warn).Render(" PAUSED "))
	}
	if hs.Stale {
		badges = append(badges, st.SeverityBadge(advisor.Crit).Render(" STALE ")+
			st.Error.Render(" no new data for "+draw.Age(hs.Now.Sub(hs.Arrived).Truncate(time.Second))))
	}
	if hs.Ended && !hs.Replay {
		badges = append(badges, st.SeverityBadge(advisor.Warn).Render(" SOURCE ENDED "))
	}
	r := strings.Join(badges, " ")
	rw := lipgloss.Width(r)
	if rw >= width {
		return draw.Fit(r, width)
	}
	lw := width - rw - 1
	if r == "" {
		lw = width
	}
	sep := st.Dim.Render(" · ")
	join := func() string {
		texts := make([]string, len(parts))
		for i, p := range parts {
			texts[i] = p.text
		}
		return strings.Join(texts, sep)
	}
	l := join()
	for lipgloss.Width(l) > lw && len(parts) > 1 {
		low := 0
		for i, p := range parts {
			if p.keep < parts[low].keep {
				low = i
			}
		}
		parts = append(parts[:low], parts[low+1:]...)
		l = join()
	}
	return draw.Fit(l, lw) + strings.Repeat(" ", width-lw-rw) + r
}
