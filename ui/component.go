package ui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// component is one part of the screen. The root model routes keys to the
// focused component and data (snapshots, sizes) to all; a component asks
// the root for what it does not own (open a screen, signal a process,
// show a status line) by posting a request to the outbox.
type component interface {
	// Update takes a message routed to the component.
	Update(msg tea.Msg) tea.Cmd
	// View renders the component at its size.
	View() string
	// SetSize gives the component its size.
	SetSize(w, h int)
	// Bindings are the keys it takes, for the footer and the help screen.
	Bindings() []key.Binding
}

// Requests of components to the root model.
type (
	// openDetail opens the detail screen of a device, or of a process
	// (pid and its start time, to tell a reused PID apart).
	openDetail struct {
		dev   string
		pid   uint32
		start int64
	}
	// killRequest asks to signal the process of a row: SIGTERM (SIGKILL
	// after a SIGTERM), or a signal chosen from a list.
	killRequest struct {
		row  procRow
		list bool
	}
	// statusLine sets the footer's status line.
	statusLine struct {
		text string
		err  bool
	}
)

// outbox carries requests from the components to the root model, which
// handles them right after the message that caused them, in order.
type outbox struct{ msgs []tea.Msg }

func (o *outbox) post(msg tea.Msg) { o.msgs = append(o.msgs, msg) }

func (o *outbox) status(err bool, format string, args ...any) {
	o.post(statusLine{text: fmt.Sprintf(format, args...), err: err})
}

// take returns the requests posted and empties the box.
func (o *outbox) take() []tea.Msg {
	m := o.msgs
	o.msgs = nil
	return m
}

// matchesAny reports whether k is one of bs.
func matchesAny(k tea.KeyPressMsg, bs []key.Binding) bool {
	return key.Matches(k, bs...)
}

// The components of this package that keep the contract.
var (
	_ component = (*procPane)(nil)
	_ component = (*helpScreen)(nil)
	_ component = (*alertsScreen)(nil)
	_ component = (*killPrompt)(nil)
	_ component = (*headerBar)(nil)
	_ component = (*bannerBar)(nil)
	_ component = (*footerBar)(nil)
)
