// Package prompt is the live view's question before a signal: it holds the
// process shown from the question on (procsignal), and sends SIGTERM, then
// SIGKILL on a second K, or a signal chosen from a list, after y.
package prompt

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
	"golang.org/x/sys/unix"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/procsignal"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// TTL is how long a kill prompt waits for its answer.
const TTL = 10 * time.Second

// Handle is a process held for signalling (procsignal.Handle).
type Handle interface {
	Signal(sig syscall.Signal) error
	Close() error
}

// OpenFunc holds the process shown for signalling, or says why it cannot.
type OpenFunc func(procsignal.Target) (Handle, error)

// OpenProcess holds the process through procsignal.
func OpenProcess(t procsignal.Target) (Handle, error) {
	h, err := procsignal.Opener{}.Open(t)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Expired ends the prompt Gen after TTL.
type Expired struct{ Gen uint64 }

// Context is what the root knows that decides whether a process may be
// signalled from here.
type Context struct {
	Replay bool   // the snapshots come from a recording
	Fleet  bool   // the process runs on another host
	Host   string // that host
	Demo   bool   // the demo's processes are not real
	EUID   int    // the caller's effective UID (0: root)
}

// Ask asks the prompt to open for a request (common.Signal), in a context.
type Ask struct {
	Req common.Signal
	Ctx Context
}

// pendingKill is the open prompt: the process is held from the prompt on,
// so the signal reaches it or nothing.
type pendingKill struct {
	pid   uint32
	key   sampler.ProcessKey
	sig   syscall.Signal
	what  string
	demo  bool // nothing is sent
	h     Handle
	until time.Time
	gen   uint64
	// list: the signal is chosen from signalList (F9), sig is the choice.
	list bool
}

// signalList is what F9 offers, as htop's does: SIGTERM first (asks the
// process to end), SIGKILL (cannot be caught) offered beside it.
var signalList = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGKILL}

// Prompt asks to confirm a signal to the selected process: SIGTERM,
// then SIGKILL on a second K.
type Prompt struct {
	ctx      *common.Context
	out      *common.Outbox
	open     OpenFunc
	now      func() time.Time
	termSent map[sampler.ProcessKey]bool
	p        *pendingKill
	gen      uint64
	width    int
}

// New returns the prompt, closed; open holds a process for signalling
// (OpenProcess), now is the clock its time limit is read on.
func New(ctx *common.Context, out *common.Outbox, now func() time.Time, open OpenFunc) *Prompt {
	return &Prompt{ctx: ctx, out: out, open: open, now: now, termSent: map[sampler.ProcessKey]bool{}}
}

// Active reports whether the prompt waits for an answer.
func (k *Prompt) Active() bool { return k.p != nil }

// Peek is what the prompt offers: the signal y sends and the generation
// whose Expired closes it.
type Peek struct {
	Signal syscall.Signal
	Gen    uint64
}

// Peek says what the prompt offers; the zero Peek when it is closed.
func (k *Prompt) Peek() Peek {
	if k.p == nil {
		return Peek{}
	}
	return Peek{Signal: k.p.sig, Gen: k.p.gen}
}

func (k *Prompt) SetSize(w, _ int) { k.width = w }

func (k *Prompt) Bindings() []key.Binding { return []key.Binding{k.ctx.Keys.Yes, k.ctx.Keys.No} }

// ask checks that the request's process may be signalled from here and,
// if so, holds it and opens the prompt; the returned command expires it.
func (k *Prompt) ask(r common.Signal, c Context) tea.Cmd {
	if !r.Process {
		k.out.Status(true, "select a process to signal")
		return nil
	}
	list := r.List
	p := r.Proc
	switch {
	case c.Replay:
		k.out.Status(true, "PID %d is in a recording: there is no live process to signal", p.PID)
		return nil
	case c.Fleet:
		k.out.Status(true, "PID %d runs on %s: signal it on that host", p.PID, c.Host)
		return nil
	case p.Exited:
		k.out.Status(true, "PID %d has already exited", p.PID)
		return nil
	case !p.Visible:
		k.out.Status(true, "PID %d is in another PID namespace: it cannot be signalled from here", p.PID)
		return nil
	case !c.Demo && c.EUID != 0 && (p.UID == nil || int64(*p.UID) != int64(c.EUID)):
		owner := p.User
		if owner == "" {
			owner = "another user"
		}
		k.out.Status(true, "PID %d belongs to %s: only your own processes can be signalled (root can signal any)", p.PID, owner)
		return nil
	}
	k.close()
	pk := p.Key(r.Dev)
	sig := syscall.SIGTERM
	if k.termSent[pk] && !list {
		sig = syscall.SIGKILL
	}
	what := draw.Fit(p.Command, 40) // a character boundary, never half of one
	np := &pendingKill{pid: p.PID, key: pk, sig: sig, what: what, demo: c.Demo, list: list}
	if !c.Demo {
		h, err := k.open(procsignal.Target{PID: p.PID, StartTime: p.StartTime, UID: p.UID})
		if err != nil {
			k.out.Status(true, "nothing sent: %s", refusal(err))
			return nil
		}
		np.h = h
	}
	k.gen++
	np.gen, np.until = k.gen, k.now().Add(TTL)
	k.p = np
	gen := k.gen
	return tea.Tick(TTL, func(time.Time) tea.Msg { return Expired{gen} })
}

// refusal words an error of procsignal for the status line.
func refusal(err error) string {
	if errors.Is(err, errors.ErrUnsupported) {
		return "signalling a process is not supported on this system"
	}
	return err.Error()
}

// seen closes the prompt when its process has left the snapshot or
// exited.
func (k *Prompt) seen(snap sampler.Snapshot) {
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
func (k *Prompt) close() {
	if k.p != nil && k.p.h != nil {
		k.p.h.Close()
	}
	k.p = nil
}

// Update takes a request (Ask), the snapshot shown (a prompt whose
// process has gone closes), the answer (y/n) and the expiry.
func (k *Prompt) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case Ask:
		return k.ask(msg.Req, msg.Ctx)
	case common.Shown:
		k.seen(msg.Snap)
	case Expired:
		if k.p != nil && msg.Gen == k.p.gen {
			pid := k.p.pid
			k.close()
			k.out.Status(true, "the prompt for PID %d expired after %s: nothing sent", pid, draw.Span(TTL))
		}
	case tea.KeyPressMsg:
		if k.p == nil {
			return nil
		}
		switch {
		case k.p.list && key.Matches(msg, k.ctx.Keys.Prev, k.ctx.Keys.Next):
			k.p.sig = stepSignal(k.p.sig, key.Matches(msg, k.ctx.Keys.Next))
		case k.p.list && msg.String() >= "1" && msg.String() <= "9" && len(msg.String()) == 1:
			// The signal by number (15, 9 …) as kill(1) takes it: the
			// digit of a listed one.
			for _, s := range signalList {
				if strconv.Itoa(int(s)) == msg.String() {
					k.p.sig = s
				}
			}
		case key.Matches(msg, k.ctx.Keys.Yes) || k.p.list && msg.String() == "enter":
			k.confirm()
		case key.Matches(msg, k.ctx.Keys.No):
			k.close()
			k.out.Status(false, "nothing sent")
		case msg.String() == "ctrl+c":
			k.close()
			return tea.Quit
		}
	}
	return nil
}

func (k *Prompt) confirm() {
	p := k.p
	defer k.close()
	if !k.now().Before(p.until) {
		k.out.Status(true, "the prompt for PID %d expired after %s: nothing sent", p.pid, draw.Span(TTL))
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
func (k *Prompt) View() string {
	p := k.p
	if p == nil {
		return ""
	}
	// What has to be said goes first: the question, the keys; then the
	// demo's note, whole or in short; the command gives way first.
	st := k.ctx.Styles
	notes := []string{""}
	if p.demo {
		notes = []string{"  (demo: nothing is sent)", "  (demo)", ""}
	}
	if p.list {
		// The list, the choice marked; what y sends is said in full.
		var b strings.Builder
		for _, s := range signalList {
			name := fmt.Sprintf("%d %s", int(s), strings.TrimPrefix(sigName(s), "SIG"))
			if s == p.sig {
				b.WriteString(st.Selected.Render("[" + name + "]"))
			} else {
				b.WriteString(" " + name + " ")
			}
		}
		// The command is left out so that the list fits 80 columns.
		q := st.SeverityBadge(advisor.Warn).Render(fmt.Sprintf(" send %s to PID %d? ", sigName(p.sig), p.pid)) + " " + b.String() + " ←/→ y/n"
		return draw.Fit(q+st.Dim.Render(fittingNote(notes, k.width-common.CellWidth(q))), k.width)
	}
	ask := func(what string) string {
		if what != "" {
			what = " (" + what + ")"
		}
		return st.SeverityBadge(advisor.Warn).Render(fmt.Sprintf(" send %s to PID %d%s? ", sigName(p.sig), p.pid, what)) + " y/n"
	}
	q := ask(p.what)
	if room := k.width - common.CellWidth(ask("")) - common.CellWidth(notes[0]); common.CellWidth(q)+common.CellWidth(notes[0]) > k.width && room >= 12 {
		q = ask(draw.Fit(p.what, room-3)) // the command shortened, the note whole
	}
	return draw.Fit(q+st.Dim.Render(fittingNote(notes, k.width-common.CellWidth(q))), k.width)
}

// fittingNote is the first of notes, longest first, within room cells.
func fittingNote(notes []string, room int) string {
	for _, n := range notes {
		if common.CellWidth(n) <= room {
			return n
		}
	}
	return ""
}

// sigName is the signal's name as kill -l and htop's list say it (SIGTERM).
func sigName(s syscall.Signal) string { return unix.SignalName(s) }
