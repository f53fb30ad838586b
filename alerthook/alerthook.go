// Package alerthook runs a user's command when an advisor alert starts
// (`--on-alert CMD`): CMD runs through `sh -c` with the alert as one JSON
// document on its standard input, once per alert, rule and device (and
// process), when it starts firing. Commands run one at a time from a
// bounded queue, each within a timeout, so a slow or hanging command never
// holds up sampling: when the queue is full the alert is dropped and
// counted, with a warning.
package alerthook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vramtop/vramtop/advisor"
)

// Defaults of Options.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultQueueLen = 64
)

// Options configure a Runner.
type Options struct {
	// Hostname goes into each event.
	Hostname string
	// Timeout bounds one run of the command; DefaultTimeout when 0.
	Timeout time.Duration
	// QueueLen is how many alerts may wait for the command;
	// DefaultQueueLen when 0.
	QueueLen int
	// Stderr receives the runner's warnings, and the command's output
	// unless Output is set.
	Stderr io.Writer
	// Output receives the command's standard output and error; Stderr
	// when nil. io.Discard connects them to /dev/null: a full-screen view
	// must not have a command's output written over it.
	Output io.Writer
	// Name prefixes warnings ("vramtop serve").
	Name string
}

// Event is what the command reads on its standard input: the alert's fields
// and the host.
type Event struct {
	Hostname string `json:"hostname,omitempty"`
	advisor.Alert
}

// MarshalJSON writes the alert's fields (as advisor.Alert writes them) with
// the host's name among them.
func (e Event) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.Alert)
	if err != nil || e.Hostname == "" {
		return b, err
	}
	host, err := json.Marshal(e.Hostname)
	if err != nil {
		return nil, err
	}
	// b is a JSON object: "{...}".
	out := append([]byte(`{"hostname":`), host...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

type key struct {
	rule, dev string
	pid       uint32
}

// Runner runs the command for alerts that start. Notify may be called from
// one goroutine at a time; Run runs the commands.
type Runner struct {
	cmd   string
	opts  Options
	queue chan Event

	active  map[key]bool
	next    map[key]bool
	dropped atomic.Uint64
	ran     atomic.Uint64
	outMu   sync.Mutex
}

// New returns a runner of the shell command cmd.
func New(cmd string, opts Options) *Runner {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = DefaultQueueLen
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Name == "" {
		opts.Name = "vramtop"
	}
	return &Runner{cmd: cmd, opts: opts, queue: make(chan Event, opts.QueueLen), active: map[key]bool{}, next: map[key]bool{}}
}

// Notify takes the alerts in force after a snapshot and queues those that
// were not in force after the previous one. It never blocks.
func (r *Runner) Notify(alerts []advisor.Alert) { r.NotifyHosts(alerts, nil) }

// NotifyHosts is Notify where the alerts are of several hosts (a fleet):
// host names the host of each alert's device for its event; Options'
// Hostname where it returns "" or host is nil.
func (r *Runner) NotifyHosts(alerts []advisor.Alert, host func(advisor.Alert) string) {
	clear(r.next)
	for _, a := range alerts {
		k := key{a.Rule, a.DeviceID, a.PID}
		if r.next[k] {
			continue
		}
		r.next[k] = true
		if r.active[k] {
			continue
		}
		ev := Event{Hostname: r.opts.Hostname, Alert: a}
		if host != nil {
			ev.Hostname = cmp.Or(host(a), ev.Hostname)
		}
		select {
		case r.queue <- ev:
		default:
			n := r.dropped.Add(1)
			r.warnf("--on-alert: %d alerts waiting already; dropped %s on %s (%d dropped so far)", r.opts.QueueLen, a.Rule, a.DeviceID, n)
		}
	}
	r.active, r.next = r.next, r.active
}

// Run runs the command for each queued alert until ctx ends; a command
// running then is stopped.
func (r *Runner) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.queue:
			r.runOne(ctx, ev)
		}
	}
}

func (r *Runner) runOne(ctx context.Context, ev Event) {
	defer r.ran.Add(1)
	doc, err := json.Marshal(ev)
	if err != nil {
		r.warnf("--on-alert: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", r.cmd)
	inGroup(c)
	c.Stdin = bytes.NewReader(append(doc, '\n'))
	out := &headTail{}
	if r.opts.Output != io.Discard {
		c.Stdout, c.Stderr = out, out
	}
	// A child that keeps the output open does not keep the runner.
	c.WaitDelay = time.Second
	err = c.Run()
	if out.n > 0 {
		w := r.opts.Output
		if w == nil {
			w = r.opts.Stderr
		}
		r.outMu.Lock()
		w.Write(out.head)
		if left := out.n - int64(len(out.head)+len(out.tail)); left > 0 {
			fmt.Fprintf(w, "\n%s: --on-alert: %d bytes of the command's output left out (its first and last %d KiB are kept)\n", r.opts.Name, left, keepOutput>>10)
		}
		w.Write(out.tail)
		r.outMu.Unlock()
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.warnf("--on-alert: the command for %s on %s ran past %v and was stopped", ev.Rule, ev.DeviceID, r.opts.Timeout)
	case ctx.Err() != nil:
	case err != nil:
		r.warnf("--on-alert: the command for %s on %s: %v", ev.Rule, ev.DeviceID, err)
	}
}

// keepOutput is how much of the start, and of the end, of a command's
// output is kept for the log; the rest is counted and left out, so that a
// command that prints without end costs no memory.
const keepOutput = 4 << 10

// headTail keeps the first and the last keepOutput bytes written to it,
// and counts them all.
type headTail struct {
	head, tail []byte
	n          int64
}

func (h *headTail) Write(b []byte) (int, error) {
	h.n += int64(len(b))
	in := b
	if room := keepOutput - len(h.head); room > 0 {
		k := min(room, len(in))
		h.head = append(h.head, in[:k]...)
		in = in[k:]
	}
	if len(in) >= keepOutput {
		h.tail = append(h.tail[:0], in[len(in)-keepOutput:]...)
	} else if len(in) > 0 {
		if drop := len(h.tail) + len(in) - keepOutput; drop > 0 {
			h.tail = append(h.tail[:0], h.tail[drop:]...)
		}
		h.tail = append(h.tail, in...)
	}
	return len(b), nil
}

func (r *Runner) warnf(format string, args ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.opts.Stderr, r.opts.Name+": "+format+"\n", args...)
}
