package ui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/procsignal"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// promptTTL is how long a kill prompt waits for its answer.
const promptTTL = 10 * time.Second

// signalHandle is a process held for signalling (procsignal.Handle).
type signalHandle interface {
	Signal(sig syscall.Signal) error
	Close() error
}

// openFunc holds the process shown for signalling, or says why it cannot.
type openFunc func(procsignal.Target) (signalHandle, error)

func openProcess(t procsignal.Target) (signalHandle, error) {
	h, err := procsignal.Opener{}.Open(t)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// promptExpired ends the prompt gen after promptTTL.
type promptExpired struct{ gen uint64 }

// killContext is what the root knows that decides whether a process may be
// signalled from here.
type killContext struct {
	replay bool   // the snapshots come from a recording
	fleet  bool   // the process runs on another host
	host   string // that host
	demo   bool   // the demo's processes are not real
	euid   int    // the caller's effective UID (0: root)
}

// pendingKill is the open prompt: the process is held from the prompt on,
// so the signal reaches it or nothing.
type pendingKill struct {
	pid   uint32
	key   sampler.ProcessKey
	sig   syscall.Signal
	what  string
	demo  bool // nothing is sent
	h     signalHandle
	until time.Time
	gen   uint64
	// list: the signal is chosen from signalList (F9), sig is the choice.
	list bool
}

// signalList is what F9 offers, as htop's does: SIGTERM first (asks the
// process to end), SIGKILL (cannot be caught) offered beside it.
var signalList = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGKILL}

// killPrompt asks to confirm a signal to the selected process: SIGTERM,
// then SIGKILL on a second K.
type killPrompt struct {
	st       common.Styles
	keys     common.KeyMap
	out      *common.Outbox
	open     openFunc
	now      func() time.Time
	termSent map[sampler.ProcessKey]bool
	p        *pendingKill
	gen      uint64
	width    int
}

func newKillPrompt(out *common.Outbox, now func() time.Time) killPrompt {
	return killPrompt{out: out, open: openProcess, now: now, termSent: map[sampler.ProcessKey]bool{}}
}

// Active reports whether the prompt waits for an answer.
func (k *killPrompt) Active() bool { return k.p != nil }

func (k *killPrompt) SetSize(w, _ int) { k.width = w }

func (k *killPrompt) Bindings() []key.Binding { return []key.Binding{k.keys.Yes, k.keys.No} }

// Ask checks that the row's process may be signalled from here and, if so,
// holds it and opens the prompt; the returned command expires it.
func (k *killPrompt) Ask(r procRow, c killContext, list bool) tea.Cmd {
	if r.kind != rowProc {
		k.out.Status(true, "select a process to signal")
		return nil
	}
	p := r.proc
	switch {
	case c.replay:
		k.out.Status(true, "PID %d is in a recording: there is no live process to signal", p.PID)
		return nil
	case c.fleet:
		k.out.Status(true, "PID %d runs on %s: signal it on that host", p.PID, c.host)
		return nil
	case p.Exited:
		k.out.Status(true, "PID %d has already exited", p.PID)
		return nil
	case !p.Visible:
		k.out.Status(true, "PID %d is in another PID namespace: it cannot be signalled from here", p.PID)
		return nil
	case !c.demo && c.euid != 0 && (p.UID == nil || int64(*p.UID) != int64(c.euid)):
		owner := p.User
		if owner == "" {
			owner = "another user"
		}
		k.out.Status(true, "PID %d belongs to %s: only your own processes can be signalled (root can signal any)", p.PID, owner)
		return nil
	}
	k.close()
	pk := p.Key(r.dev)
	sig := syscall.SIGTERM
	if k.termSent[pk] && !list {
		sig = syscall.SIGKILL
	}
	what := p.Command
	if len(what) > 40 {
		what = what[:39] + "…"
	}
	np := &pendingKill{pid: p.PID, key: pk, sig: sig, what: what, demo: c.demo, list: list}
	if !c.demo {
		h, err := k.open(procsignal.Target{PID: p.PID, StartTime: p.StartTime, UID: p.UID})
		if err != nil {
			k.out.Status(true, "nothing sent: %s", refusal(err))
			return nil
		}
		np.h = h
	}
	k.gen++
	np.gen, np.until = k.gen, k.now().Add(promptTTL)
	k.p = np
	gen := k.gen
	return tea.Tick(promptTTL, func(time.Time) tea.Msg { return promptExpired{gen} })
}

// refusal words an error of procsignal for the status line.
func refusal(err error) string {
	if errors.Is(err, errors.ErrUnsupported) {
		return "signalling a process is not supported on this system"
	}
	return err.Error()
}

// Seen closes the prompt when its process has left the snapshot or
// exited.
func (k *killPrompt) Seen(snap sampler.Snapshot) {
	if k.p == nil || k.p.demo && !snap.Demo {
		return
	}
	d, ok := snap.Device(k.p.key.Device)
	if ok {
		for _, p := range d.Processes {
			if p.Key(d.ID) == k.p.key && !p.Exited {
				return
			}
		}
	}
	pid := k.p.pid
	k.close()
	k.out.Status(true, "PID %d exited before the answer: nothing sent", pid)
}

// close ends the prompt and lets the process go.
func (k *killPrompt) close() {
	if k.p != nil && k.p.h != nil {
		k.p.h.Close()
	}
	k.p = nil
}

// Update takes the answer (y/n) and the expiry.
func (k *killPrompt) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case promptExpired:
		if k.p != nil && msg.gen == k.p.gen {
			pid := k.p.pid
			k.close()
			k.out.Status(true, "the prompt for PID %d expired after %s: nothing sent", pid, draw.Span(promptTTL))
		}
	case tea.KeyPressMsg:
		if k.p == nil {
			return nil
		}
		switch {
		case k.p.list && key.Matches(msg, k.keys.Prev, k.keys.Next):
			k.p.sig = stepSignal(k.p.sig, key.Matches(msg, k.keys.Next))
		case k.p.list && msg.String() >= "1" && msg.String() <= "9" && len(msg.String()) == 1:
			// The signal by number (15, 9 …) as kill(1) takes it: the
			// digit of a listed one.
			for _, s := range signalList {
				if strconv.Itoa(int(s)) == msg.String() {
					k.p.sig = s
				}
			}
		case key.Matches(msg, k.keys.Yes) || k.p.list && msg.String() == "enter":
			k.confirm()
		case key.Matches(msg, k.keys.No):
			k.close()
			k.out.Status(false, "nothing sent")
		case msg.String() == "ctrl+c":
			k.close()
			return tea.Quit
		}
	}
	return nil
}

func (k *killPrompt) confirm() {
	p := k.p
	defer k.close()
	if !k.now().Before(p.until) {
		k.out.Status(true, "the prompt for PID %d expired after %s: nothing sent", p.pid, draw.Span(promptTTL))
		return
	}
	if p.demo {
		// Never signal a real process that happens to have a demo PID.
		if p.sig == syscall.SIGTERM {
			k.termSent[p.key] = true
		}
		k.out.Status(false, "demo: %s not sent, PID %d is not a real process", sigName(p.sig), p.pid)
		return
	}
	if err := p.h.Signal(p.sig); err != nil {
		k.out.Status(true, "%s to PID %d not sent: %s", sigName(p.sig), p.pid, refusal(err))
		return
	}
	switch p.sig {
	case syscall.SIGTERM:
		k.termSent[p.key] = true
		k.out.Status(false, "sent SIGTERM to PID %d (%s); K again offers SIGKILL", p.pid, p.what)
	default:
		k.out.Status(false, "sent %s to PID %d (%s)", sigName(p.sig), p.pid, p.what)
	}
}

// stepSignal is the signal of signalList after cur (before it when not next).
func stepSignal(cur syscall.Signal, next bool) syscall.Signal {
	i := slices.Index(signalList, cur)
	if next {
		i++
	} else {
		i--
	}
	return signalList[(i+len(signalList))%len(signalList)]
}

// View is the question for the footer.
func (k *killPrompt) View() string {
	p := k.p
	if p == nil {
		return ""
	}
	note := ""
	if p.demo {
		note = k.st.Dim.Render("  (demo: nothing is sent)")
	}
	if p.list {
		// The list, the choice marked; what y sends is said in full.
		var b strings.Builder
		for _, s := range signalList {
			name := fmt.Sprintf("%d %s", int(s), strings.TrimPrefix(sigName(s), "SIG"))
			if s == p.sig {
				b.WriteString(k.st.Selected.Render("[" + name + "]"))
			} else {
				b.WriteString(" " + name + " ")
			}
		}
		// The command is left out so that the list fits 80 columns.
		return draw.Fit(k.st.SeverityBadge(advisor.Warn).Render(fmt.Sprintf(" send %s to PID %d? ", sigName(p.sig), p.pid))+
			" "+b.String()+" ←/→ y/n"+note, k.width)
	}
	return draw.Fit(k.st.SeverityBadge(advisor.Warn).Render(fmt.Sprintf(" send %s to PID %d (%s)? ", sigName(p.sig), p.pid, p.what))+
		" y/n"+note, k.width)
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "SIGTERM"
}
