// Package ui is vramtop's terminal interface. It renders Snapshots; it never
// samples and never imports NVML.
package ui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/procs"
)

// Options configure the live view.
type Options struct {
	Thresholds advisor.Thresholds
	Bell       bool
	// Notify sends desktop notifications through the terminal (OSC 9 or
	// OSC 777, the bell elsewhere): a GPU turning critical, a leak or a
	// time-to-full forecast starting, a watched GPU (w) becoming free.
	Notify bool
	// SetInterval changes the sampler's interval (+/- keys); nil when the
	// source cannot change it (replay).
	SetInterval func(time.Duration)
	Version     string
	// User is whose processes are "mine" (the m key, the K key, the
	// highlighting): the current user, or demo.User in demo mode.
	User string
	// Now is the clock for the stale check; time.Now when nil.
	Now func() time.Time
	// Replay is set when the snapshots come from a recording; the replay
	// keys then drive it.
	Replay ReplayControl
	// Title replaces "vramtop" at the left of the header ("vramtop replay
	// run.jsonl.gz", "vramtop fleet").
	Title string
	// Claim says who claimed the GPU d with vramtop pick or wait, in a
	// few words ("alice, 40 GiB, until 14:02:05"; a fleet's as its
	// host's vramtop serve exports it: "alice, 40 GiB"), or "" when nobody
	// did; nil where claims do not apply (replay). It is called while
	// drawing and must return at once.
	Claim func(d sampler.Device) string
	// OpenHost is told the host of a fleet whose GPUs are open on screen,
	// "" when the list of hosts is back (the fleet then reads that host's
	// processes only). It must return at once.
	OpenHost func(host string)
	// OnAlerts, when set, is given each snapshot the rules judge and the
	// alerts in force after it, the ones the view shows (--on-alert). It
	// is called from the view's goroutine and must return at once.
	OnAlerts func(sampler.Snapshot, []advisor.Alert)
}

// ReplayControl drives a replay. The UI calls it from its own goroutine;
// implementations must be safe to call while the replay publishes snapshots,
// and each call must return at once (the effect arrives as snapshots).
type ReplayControl interface {
	Toggle()                // play / pause
	Step(n int)             // n samples forward (negative: back), pausing
	SeekBy(d time.Duration) // jump by d (negative: back)
	SeekStart()             // the first moment of the recording
	SeekEnd()               // the last moment
	CycleSpeed()            // ×1 → ×4 → ×16 → ×1
	Status() string         // one short line for the header: "▶ ×4 03:12:05 (41%)"
}

// maxFPS is the renderer's rate until the pacer takes its ticker over (and
// where it cannot): frames are then drawn on demand (pace.go).
const maxFPS = 20

// Run shows the live view until the user quits or ctx ends.
func Run(ctx context.Context, snaps <-chan sampler.Snapshot, opts Options) error {
	pc := &pacer{out: &output{File: os.Stdout}}
	p := tea.NewProgram(paced{New(snaps, opts), pc}, tea.WithContext(ctx), tea.WithFPS(maxFPS), tea.WithOutput(pc.out))
	pc.prog = p
	defer pc.stop()
	_, err := p.Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // asked to stop
	}
	if errors.Is(err, tea.ErrInterrupted) {
		return nil
	}
	return err
}

// noColor reports whether the NO_COLOR convention asks for no colour.
func noColor() bool {
	v, ok := os.LookupEnv("NO_COLOR")
	return ok && v != ""
}

// WriteTable prints one snapshot as a plain table (vramtop --once): the
// devices, then the processes. Colour only when w is a terminal that takes
// it (and NO_COLOR is not set).
func WriteTable(w io.Writer, snap sampler.Snapshot, th advisor.Thresholds) error {
	cw := colorprofile.NewWriter(w, os.Environ())
	st := common.NewStyles(true, cw.Profile <= colorprofile.ASCII)
	_, err := io.WriteString(cw, procs.RenderTable(st, snap, th))
	return err
}

// KeyRow is a line of the key table: the keys and what they do.
type KeyRow = common.KeyRow

// KeyTable is the live view's keys, as the help screen lists them (the
// README's table and the man page's KEYS section are made from it).
func KeyTable() []KeyRow { return common.KeyTable() }
