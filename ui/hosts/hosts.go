// Package hosts is the first screen of a fleet: its hosts by memory
// pressure, each with its GPUs in compact lines.
package hosts

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/gpus"
)

// host is one machine of a fleet snapshot.
type host struct {
	name     string
	devices  []sampler.Device
	pressure float64 // the highest used% of its GPUs
	used     uint64
	total    uint64
	errs     int
	unlisted int    // devices whose processes are not listed
	down     int    // devices of the host known only by their last values
	downWhy  string // why and since when ("exporter not answering since 09:08:00 …")
}

// isDown reports whether the whole host is down: every device holds its
// last values.
func (x host) isDown() bool { return x.down > 0 && x.down == len(x.devices) }

// hostsOf groups the devices by host, most pressed first.
func hostsOf(snap sampler.Snapshot) []host {
	idx := map[string]int{}
	var hs []host
	for _, d := range snap.Devices {
		i, ok := idx[d.Hostname]
		if !ok {
			i = len(hs)
			idx[d.Hostname] = i
			hs = append(hs, host{name: d.Hostname})
		}
		h := &hs[i]
		h.devices = append(h.devices, d)
		h.used += d.MemoryUsed
		h.total += d.MemoryTotal
		if p := d.UsedPercent(); p > h.pressure {
			h.pressure = p
		}
		switch why, down := draw.HostDown(d); {
		case down:
			h.down++
			h.downWhy = why
		case d.Err != "":
			h.errs++
		}
		if d.NoProcessList {
			h.unlisted++
		}
	}
	sort.SliceStable(hs, func(i, j int) bool {
		// Hosts that answer first: a down host's values are old.
		if a, b := hs[i].isDown(), hs[j].isDown(); a != b {
			return b
		}
		if hs[i].pressure != hs[j].pressure {
			return hs[i].pressure > hs[j].pressure
		}
		return hs[i].name < hs[j].name
	})
	return hs
}

// List is the first screen of a fleet: hosts by memory pressure, each
// with its GPUs in compact rows; enter opens the host selected
// (common.OpenHost).
type List struct {
	ctx    *common.Context
	out    *common.Outbox
	width  int
	height int

	snap     sampler.Snapshot
	hosts    []host
	sev      draw.SevIndex // the advisor's severity of each device
	sel, off int
	selName  string
}

// New returns the list, empty until the first snapshot.
func New(ctx *common.Context, out *common.Outbox) *List { return &List{ctx: ctx, out: out} }

func (h *List) SetSize(w, hh int) {
	h.width, h.height = w, hh
	h.scroll()
}

func (h *List) setSnapshot(snap sampler.Snapshot) {
	h.snap = snap
	h.hosts = hostsOf(snap)
	h.sel = draw.Clamp(h.sel, 0, len(h.hosts)-1)
	for i, x := range h.hosts {
		if x.name == h.selName {
			h.sel = i
		}
	}
	h.remember()
	h.scroll()
}

func (h *List) remember() {
	if h.sel >= 0 && h.sel < len(h.hosts) {
		h.selName = h.hosts[h.sel].name
	}
}

// blockHeight is the lines a host takes: its line and one per GPU.
func (x host) blockHeight() int { return 1 + len(x.devices) }

// scroll keeps the selected host's block on screen.
func (h *List) scroll() {
	if h.height <= 0 || len(h.hosts) == 0 {
		return
	}
	if h.sel < h.off {
		h.off = h.sel
	}
	for h.off < h.sel {
		lines := 0
		for i := h.off; i <= h.sel; i++ {
			lines += h.hosts[i].blockHeight()
		}
		if lines <= h.height {
			break
		}
		h.off++
	}
}

// Bindings are the keys the list takes.
func (h *List) Bindings() []key.Binding {
	k := &h.ctx.Keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Enter}
}

// Update takes the whole snapshot (common.Shown: every host) and the keys:
// moving the selection, and enter opening the host selected.
func (h *List) Update(msg tea.Msg) tea.Cmd {
	if s, ok := msg.(common.Shown); ok {
		h.sev = s.Sev
		h.setSnapshot(s.All)
		return nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if _, wheel := msg.(tea.MouseWheelMsg); !ok && !wheel {
		return nil
	}
	if ok && key.Matches(k, h.ctx.Keys.Enter) {
		if name, ok := h.selected(); ok {
			h.out.Post(common.OpenHost{Name: name})
		}
		return nil
	}
	if w, isWheel := msg.(tea.MouseWheelMsg); isWheel {
		switch w.Button {
		case tea.MouseWheelUp:
			h.sel--
		case tea.MouseWheelDown:
			h.sel++
		}
	}
	switch {
	case !ok:
	case key.Matches(k, h.ctx.Keys.Up):
		h.sel--
	case key.Matches(k, h.ctx.Keys.Down):
		h.sel++
	case key.Matches(k, h.ctx.Keys.PageUp):
		h.sel -= 5
	case key.Matches(k, h.ctx.Keys.PageDown):
		h.sel += 5
	case key.Matches(k, h.ctx.Keys.Top):
		h.sel = 0
	case key.Matches(k, h.ctx.Keys.Bottom):
		h.sel = len(h.hosts) - 1
	}
	h.sel = draw.Clamp(h.sel, 0, len(h.hosts)-1)
	h.remember()
	h.scroll()
	return nil
}

// selected returns the selected host's name.
func (h *List) selected() (string, bool) {
	if h.sel < 0 || h.sel >= len(h.hosts) {
		return "", false
	}
	return h.hosts[h.sel].name, true
}

func (h List) View() string {
	if h.width <= 0 || h.height <= 0 {
		return ""
	}
	if len(h.hosts) == 0 {
		return h.ctx.Styles.Dim.Render(draw.Fit("  no hosts reported yet", h.width))
	}
	g := gpus.NewCompact(h.ctx, h.sev, h.width-2)
	var lines []string
	for i := h.off; i < len(h.hosts) && len(lines) < h.height; i++ {
		x := h.hosts[i]
		sev := advisor.Info
		for _, d := range x.devices {
			sev = max(sev, h.sev.Of(d).Severity)
		}
		name := x.name
		if name == "" {
			name = "(unnamed host)"
		}
		line := fmt.Sprintf("%s  %d GPU  max %s  used %s / %s", name, len(x.devices), draw.Pct(x.pressure), draw.Bytes(x.used), draw.Bytes(x.total))
		if x.unlisted == len(x.devices) {
			line += "  processes not listed (dcgm-exporter)"
		}
		if x.errs > 0 {
			line += h.ctx.Styles.Error.Render(fmt.Sprintf("  %d with errors", x.errs))
		}
		if x.down > 0 {
			line = strings.Replace(line, "  max ", "  last seen: max ", 1)
			what := "DOWN"
			if !x.isDown() {
				what = fmt.Sprintf("%d GPU DOWN", x.down)
			}
			line += "  " + h.ctx.Styles.SeverityBadge(advisor.Warn).Render(" "+what+" ") + " " + h.ctx.Styles.Warning.Render(x.downWhy)
		}
		marker := "  "
		if i == h.sel {
			marker = h.ctx.Styles.Accent.Render("▶ ")
		}
		line = marker + h.ctx.Styles.Severity(sev).Render(draw.Fit(line, h.width-2))
		if i == h.sel {
			line = h.ctx.Styles.Selected.Render(line)
		}
		lines = append(lines, line)
		hs := sampler.Snapshot{Time: h.snap.Time, Interval: h.snap.Interval, Devices: x.devices}
		for _, d := range x.devices {
			if len(lines) >= h.height {
				break
			}
			lines = append(lines, "  "+g.Line(hs, d))
		}
	}
	return strings.Join(lines, "\n")
}
