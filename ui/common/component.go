// Package common is what the parts of the live view share: the contract
// every part keeps (Component), the Context passed to each by pointer (the
// styles, the keys, the thresholds), and the outbox of their requests to
// the root.
package common

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// Component is one part of the screen. The root model routes keys to the
// focused component and data (snapshots, sizes) to all; a component asks
// the root for what it does not own (open a screen, signal a process,
// show a status line) by posting a request to the outbox.
type Component interface {
	// Update takes a message routed to the component.
	Update(msg tea.Msg) tea.Cmd
	// View renders the component at its size.
	View() string
	// SetSize gives the component its size.
	SetSize(w, h int)
	// Bindings are the keys it takes, for the footer and the help screen.
	Bindings() []key.Binding
}

// Screen is a part that takes the whole terminal: the root opens it over
// everything on its key and closes it on that key or esc.
type Screen interface {
	Component
	// Key is the key that opens and closes it, with its help.
	Key() key.Binding
}

// Requests of components to the root model.
type (
	// OpenDetail opens the detail screen of a device, or of a process
	// (PID and its start time, to tell a reused PID apart).
	OpenDetail struct {
		Dev   string
		PID   uint32
		Start int64
	}
	// StatusLine sets the footer's status line ("" clears it).
	StatusLine struct {
		Text string
		Err  bool
	}
	// Signal asks to signal a process (K: SIGTERM, then SIGKILL; F9: a
	// signal chosen from a list). Process is false for a row that is no
	// process (a device's unattributed memory, a user's total).
	Signal struct {
		Dev     string
		Proc    sampler.Process
		Process bool
		List    bool
	}
	// OpenHost opens a host of a fleet.
	OpenHost struct{ Name string }
)

// Outbox carries requests from the components to the root model, which
// handles them right after the message that caused them, in order.
type Outbox struct{ msgs []tea.Msg }

func (o *Outbox) Post(msg tea.Msg) { o.msgs = append(o.msgs, msg) }

func (o *Outbox) Status(err bool, format string, args ...any) {
	o.Post(StatusLine{Text: fmt.Sprintf(format, args...), Err: err})
}

// Take returns the requests posted and empties the box.
func (o *Outbox) Take() []tea.Msg {
	m := o.msgs
	o.msgs = nil
	return m
}

// Context is what every part shares, passed by pointer: the styles (built
// again once the terminal's background is known), the keys (the root
// enables or disables some by what is shown), the thresholds, the view's
// title and whose processes are "mine".
type Context struct {
	Styles Styles
	Keys   KeyMap
	Th     advisor.Thresholds
	Title  string
	User   string
	// ScreenKeys are the keys of the full screens (Screen.Key), for the
	// help screen: those not in Keys are listed after them.
	ScreenKeys []key.Binding
	// Claim says who claimed a GPU (Options.Claim); nil: no claims.
	Claim func(d sampler.Device) string
}

// Messages the root sends to a part.
type (
	// Opened says the part's screen has just been opened.
	Opened struct{}
	// Closed says the part's screen has just been closed.
	Closed struct{}
	// Restyled says the styles or keys of the Context changed.
	Restyled struct{}
	// Shown is what the screen shows, sent to every part each time it
	// changes: the one way snapshots reach the parts.
	Shown struct {
		Snap   sampler.Snapshot // shown: a fleet's reduced to the open host's devices
		All    sampler.Snapshot // the whole snapshot, every host of a fleet
		Host   string           // the open host of a fleet; "" for none
		Alerts []advisor.Alert  // in force at All
		// Sev is the advisor's severity of each device, from Alerts
		// (advisor.DeviceSeverities): rows, bars and banner agree.
		Sev map[string]advisor.DeviceState
	}
	// Focus says whether the part has the keyboard.
	Focus bool
	// Span is the span of the graphs (z).
	Span time.Duration
)
