// Package alerts is the alerts screen of the live view (a): every alert in
// force, since when, where, and its whole message.
package alerts

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// Screen lists every alert in force: its severity, since when, on which GPU
// and process, and its whole message; then the source's warnings and
// errors. It scrolls.
type Screen struct {
	ctx    *common.Context
	width  int
	height int
	alerts []advisor.Alert
	since  map[string]time.Time // when the view first saw an alert that carries no Since
	snap   sampler.Snapshot
	pg     draw.Pager
}

// New returns the alerts screen, with none in force.
func New(ctx *common.Context) *Screen {
	a := &Screen{ctx: ctx, pg: draw.NewPager(), since: map[string]time.Time{}}
	a.pg.SetKeys(ctx.Keys)
	return a
}

func alertKey(x advisor.Alert) string {
	return fmt.Sprintf("%s|%s|%d", x.Rule, x.DeviceID, x.PID)
}

// setAlerts sets the alerts in force at snap.
func (a *Screen) setAlerts(alerts []advisor.Alert, snap sampler.Snapshot) {
	a.alerts, a.snap = alerts, snap
	seen := make(map[string]time.Time, len(alerts))
	for _, x := range alerts {
		k := alertKey(x)
		t, ok := a.since[k]
		if !ok {
			t = snap.Time
		}
		seen[k] = t
	}
	a.since = seen
	a.refresh()
}

func (a *Screen) SetSize(w, h int) {
	if w == a.width && h == a.height {
		return
	}
	a.width, a.height = w, h
	a.refresh()
}

func (a *Screen) Bindings() []key.Binding {
	return []key.Binding{a.ctx.Keys.Up, a.ctx.Keys.Down, a.ctx.Keys.PageUp, a.ctx.Keys.PageDown, a.ctx.Keys.Alerts, a.ctx.Keys.Back}
}

// Update takes the alerts in force (common.Shown) and scrolls; opened, it
// shows the first alert; restyled, it lays its content out again.
func (a *Screen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case common.Shown:
		a.setAlerts(msg.Alerts, msg.All)
		return nil
	case common.Opened:
		a.pg.Top()
		return nil
	case common.Restyled:
		a.pg.SetKeys(a.ctx.Keys)
		a.refresh()
		return nil
	}
	return a.pg.Update(msg)
}

func (a *Screen) refresh() {
	if a.width <= 0 || a.height <= 0 {
		return
	}
	a.pg.Set(a.content(), a.width, a.height-2)
}

func (a *Screen) View() string {
	if a.width <= 0 || a.height <= 0 {
		return ""
	}
	head := a.ctx.Styles.Title.Render(fmt.Sprintf("%s — alerts (%d in force)", a.ctx.Title, len(a.alerts))) + a.ctx.Styles.Dim.Render("   (a or esc to close)")
	return draw.Fit(head, a.width) + "\n" + a.pg.View() + "\n" + a.ctx.Styles.Dim.Render(draw.Fit(a.pg.ScrollLine(), a.width))
}

// content is one block per alert: a line of what, where and since when,
// then the message wrapped under it.
func (a *Screen) content() string {
	st := a.ctx.Styles
	var lines []string
	if len(a.alerts) == 0 {
		lines = append(lines, st.Dim.Render("  no alerts in force"))
	}
	const indent = "       "
	wrapW := max(a.width-len(indent), 10)
	for _, x := range a.alerts {
		since := x.Since
		if since.IsZero() {
			since = a.since[alertKey(x)]
		}
		where := "GPU " + x.DeviceID
		if d, ok := a.snap.Device(x.DeviceID); ok {
			where = "GPU " + draw.DeviceLabel(d) + " " + draw.ShortName(d.Name)
			if d.Hostname != "" {
				where = d.Hostname + " " + where
			}
		}
		parts := []string{st.SeverityBadge(x.Severity).Render(" " + draw.Fit(strings.ToUpper(x.Severity.String()), 4) + " "), st.Accent.Render(where)}
		if x.PID != 0 {
			parts = append(parts, "PID "+fmt.Sprint(x.PID)+" "+a.processName(x))
		}
		if !since.IsZero() {
			s := "since " + since.Format("15:04:05")
			if d := a.snap.Time.Sub(since); d >= time.Second {
				s += " (" + draw.Age(d) + ")"
			}
			parts = append(parts, st.Dim.Render(s))
		}
		parts = append(parts, st.Dim.Render(x.Rule))
		lines = append(lines, strings.Join(parts, "  "))
		for _, l := range strings.Split(draw.Wordwrap(draw.AlertText(a.snap, x), wrapW), "\n") {
			lines = append(lines, indent+st.Severity(x.Severity).Render(l))
		}
	}
	for _, w := range a.snap.Warnings {
		lines = append(lines, st.Warning.Render("! "+w))
	}
	if a.snap.Err != "" {
		lines = append(lines, st.Error.Render("error: "+a.snap.Err))
	}
	return draw.ClampLines(strings.Join(lines, "\n"), a.width, 1<<20)
}

// processName is the user and command of the alert's process.
func (a *Screen) processName(x advisor.Alert) string {
	d, ok := a.snap.Device(x.DeviceID)
	if !ok {
		return ""
	}
	for _, p := range d.Processes {
		if p.PID == x.PID {
			u := p.User
			if u == "" {
				u = "?"
			}
			return u + " " + draw.FirstWord(p.Command)
		}
	}
	return ""
}
