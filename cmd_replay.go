package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/replay"
	"github.com/vramtop/vramtop/ui"
)

// The player is what the live view's replay keys drive.
var _ ui.ReplayControl = (*replay.Player)(nil)

// maxReplayWarnings bounds the damaged-line warnings printed one by one.
const maxReplayWarnings = 20

// replayFlags are vramtop replay's flags.
type replayFlags struct {
	once   *bool
	asJSON *bool
	at     *string
	th     thresholdFlags
}

// replayFlagSet declares vramtop replay's flags.
func replayFlagSet() (*pflag.FlagSet, *replayFlags) {
	fs := newFlagSet("vramtop replay", "Usage: vramtop replay FILE [FILE.1 ...] [flags]\n\nPlays a recording of vramtop record (or vramtop run --record) in the live view:\nspace plays/pauses, ←/→ step, [ ] a minute, g/G the ends, > the speed (×1, ×4, ×16).\nName the rotated parts of a recording to replay them together.\n\n")
	fl := &replayFlags{}
	fl.once = fs.Bool("once", false, "print the snapshot at --at (default: the end) as a table and exit")
	fl.asJSON = fs.Bool("json", false, "with --once: print the snapshot as the --once --json document (docs/schema/snapshot.schema.json)")
	fl.at = fs.String("at", "", "the `moment`: 03:12:00 (on the recording's day), 2026-03-14 03:12:00, RFC 3339, +1h5m from the start, -10m from the end, start, end")
	fl.th.add(fs, "")
	return fs, fl
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := replayFlagSet()
	files, code, ok := parseInterspersed(fs, args, stderr)
	if !ok {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "vramtop replay: name the recording to replay (vramtop replay FILE)")
		return exitUsage
	}
	if !fl.th.valid(fs, stderr) {
		return exitUsage
	}
	if *fl.asJSON {
		*fl.once = true
	}
	if len(files) == 1 && files[0] != replay.Stdin {
		if _, err := os.Stat(files[0] + ".1"); err == nil {
			fmt.Fprintf(stderr, "vramtop replay: note: older parts of this recording exist (%s.1 …); name them too to replay them\n", files[0])
		}
	}
	background := !*fl.once && *fl.at == "" && len(files) == 1 && fullScreenOK(stdout, os.Getenv("TERM"))
	l := &replayLoad{stderr: stderr}
	rec, code, ok := l.open(ctx, files, background)
	if !ok {
		return code
	}
	defer rec.Close()
	var moment time.Time
	var err error
	if *fl.at != "" {
		if moment, err = replay.ParseMoment(*fl.at, rec); err != nil {
			fmt.Fprintf(stderr, "vramtop replay: --at %v\n", err)
			return exitUsage
		}
	}
	if !*fl.once && !fullScreenOK(stdout, os.Getenv("TERM")) {
		*fl.once = true
	}
	if *fl.once {
		i := rec.Len() - 1
		if !moment.IsZero() {
			i = rec.Index(moment)
		}
		snap := rec.Snapshot(i)
		if !writeOutput(stdout, stderr, "vramtop replay", func(w io.Writer) error {
			return writeSnapshot(w, snap, fl.th.Thresholds, *fl.asJSON)
		}) {
			return 1
		}
		return 0
	}

	l.quiet()
	return viewReplay(ctx, rec, moment, files, fl.th, stderr)
}

// replayLoad reads a recording, printing its damaged-line warnings as
// they come (while reading and while snapshots are rebuilt), the first
// maxReplayWarnings one by one, until the live view has the terminal.
type replayLoad struct {
	stderr io.Writer
	mu     sync.Mutex
	nwarn  int
	inView bool
}

func (l *replayLoad) warn(w replay.Warning) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inView {
		return // the live view has the terminal
	}
	if l.nwarn++; l.nwarn <= maxReplayWarnings {
		fmt.Fprintf(l.stderr, "vramtop replay: warning: %s\n", w)
	}
}

// quiet stops the warnings: the live view takes the terminal.
func (l *replayLoad) quiet() {
	l.mu.Lock()
	l.inView = true
	l.mu.Unlock()
}

// open reads the files, all of them before it returns, or (background)
// the start of one file, indexing the rest while the live view shows the
// first frame. Reading waits on its input (a FIFO with no writer yet, a
// slow pipe); a signal ends the wait at once.
func (l *replayLoad) open(ctx context.Context, files []string, background bool) (*replay.Recording, int, bool) {
	type opened struct {
		rec *replay.Recording
		err error
	}
	loaded := make(chan opened, 1)
	go func() {
		var o opened
		if background {
			o.rec, o.err = replay.OpenBackground(ctx, files[0], l.warn)
		} else {
			o.rec, o.err = replay.Open(ctx, files, l.warn)
		}
		loaded <- o
	}()
	var o opened
	select {
	case <-ctx.Done():
		code, _ := signalStatus(ctx)
		fmt.Fprintln(l.stderr, "vramtop replay: interrupted")
		return nil, code, false
	case o = <-loaded:
	}
	l.mu.Lock()
	if l.nwarn > maxReplayWarnings {
		fmt.Fprintf(l.stderr, "vramtop replay: … and %d more damaged lines skipped\n", l.nwarn-maxReplayWarnings)
	}
	l.mu.Unlock()
	if o.err != nil {
		fmt.Fprintf(l.stderr, "vramtop replay: %v\n", o.err)
		return nil, 1, false
	}
	return o.rec, 0, true
}

// viewReplay plays rec in the live view from moment (the start where
// zero) until the user quits or a signal comes.
func viewReplay(ctx context.Context, rec *replay.Recording, moment time.Time, files []string, th thresholdFlags, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := replay.NewPlayer(rec, moment, moment.IsZero())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	me := currentUser()
	if rec.Demo() {
		me = demo.User
	}
	if slices.Contains(files, replay.Stdin) {
		// Standard input held the recording: the keys come from the
		// terminal.
		if tty, err := os.Open("/dev/tty"); err == nil {
			defer tty.Close()
			os.Stdin = tty
		}
	}
	err := ui.Run(ctx, p.Snapshots(), ui.Options{
		Thresholds: th.Thresholds,
		Version:    version,
		User:       me,
		Replay:     p,
		Title:      "vramtop replay " + filepath.Base(files[len(files)-1]),
		// The stale check follows the replayed clock, not the wall clock.
		Now: func() time.Time { t, _, _ := p.Position(); return t },
	})
	cancel()
	<-done
	if code, ok := signalStatus(ctx); ok {
		return code
	}
	if err != nil {
		fmt.Fprintf(stderr, "vramtop replay: %v\n", err)
		return 1
	}
	return 0
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments ("replay FILE --once --json"); "--" ends the
// flags.
func parseInterspersed(fs *pflag.FlagSet, args []string, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		if code, ok := parse(fs, args, stderr); !ok {
			return nil, code, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
