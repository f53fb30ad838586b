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

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop replay", "Usage: vramtop replay FILE [FILE.1 ...] [flags]\n\nPlays a recording of vramtop record (or vramtop run --record) in the live view:\nspace plays/pauses, ←/→ step, [ ] a minute, g/G the ends, > the speed (×1, ×4, ×16).\nName the rotated parts of a recording to replay them together.\n\n", stderr)
	once := fs.Bool("once", false, "print the snapshot at --at (default: the end) as a table and exit")
	asJSON := fs.Bool("json", false, "with --once: print the snapshot as the --once --json document (docs/schema/snapshot.schema.json)")
	at := fs.String("at", "", "the `moment`: 03:12:00 (on the recording's day), 2026-03-14 03:12:00, RFC 3339, +1h5m from the start, -10m from the end, start, end")
	var th thresholdFlags
	th.add(fs, "")
	files, code, ok := parseInterspersed(fs, args, stderr)
	if !ok {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "vramtop replay: name the recording to replay (vramtop replay FILE)")
		return exitUsage
	}
	if !th.valid(fs, stderr) {
		return exitUsage
	}
	if *asJSON {
		*once = true
	}
	if len(files) == 1 && files[0] != replay.Stdin {
		if _, err := os.Stat(files[0] + ".1"); err == nil {
			fmt.Fprintf(stderr, "vramtop replay: note: older parts of this recording exist (%s.1 …); name them too to replay them\n", files[0])
		}
	}
	// Warnings are printed as they come, while reading and while
	// snapshots are rebuilt, the first maxReplayWarnings one by one.
	nwarn, inView := 0, false
	warn := func(w replay.Warning) {
		if inView {
			return // the live view has the terminal
		}
		if nwarn++; nwarn <= maxReplayWarnings {
			fmt.Fprintf(stderr, "vramtop replay: warning: %s\n", w)
		}
	}
	// Reading waits on its input (a FIFO with no writer yet, a slow
	// pipe); a signal ends the wait at once.
	type opened struct {
		rec *replay.Recording
		err error
	}
	loaded := make(chan opened, 1)
	var mu sync.Mutex
	// The live view from the start of one file shows its first frame
	// while the rest is indexed.
	background := !*once && *at == "" && len(files) == 1 && fullScreenOK(stdout, os.Getenv("TERM"))
	go func() {
		w := func(w replay.Warning) { mu.Lock(); warn(w); mu.Unlock() }
		var o opened
		if background {
			o.rec, o.err = replay.OpenBackground(ctx, files[0], w)
		} else {
			o.rec, o.err = replay.Open(ctx, files, w)
		}
		loaded <- o
	}()
	var rec *replay.Recording
	var err error
	select {
	case <-ctx.Done():
		code, _ := signalStatus(ctx)
		fmt.Fprintln(stderr, "vramtop replay: interrupted")
		return code
	case o := <-loaded:
		rec, err = o.rec, o.err
	}
	mu.Lock()
	if nwarn > maxReplayWarnings {
		fmt.Fprintf(stderr, "vramtop replay: … and %d more damaged lines skipped\n", nwarn-maxReplayWarnings)
	}
	mu.Unlock()
	if err != nil {
		fmt.Fprintf(stderr, "vramtop replay: %v\n", err)
		return 1
	}
	defer rec.Close()
	var moment time.Time
	if *at != "" {
		if moment, err = replay.ParseMoment(*at, rec); err != nil {
			fmt.Fprintf(stderr, "vramtop replay: --at %v\n", err)
			return exitUsage
		}
	}
	if !*once && !fullScreenOK(stdout, os.Getenv("TERM")) {
		*once = true
	}
	if *once {
		i := rec.Len() - 1
		if !moment.IsZero() {
			i = rec.Index(moment)
		}
		snap := rec.Snapshot(i)
		if !writeOutput(stdout, stderr, "vramtop replay", func(w io.Writer) error {
			return writeSnapshot(w, snap, th.Thresholds, *asJSON)
		}) {
			return 1
		}
		return 0
	}

	mu.Lock()
	inView = true
	mu.Unlock()
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
	err = ui.Run(ctx, p.Snapshots(), ui.Options{
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
