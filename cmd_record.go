package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// recordFlags are vramtop record's flags.
type recordFlags struct {
	sf       sourceFlags
	out      *string
	duration *time.Duration
	maxSize  *string
	keep     *int
	quiet    *bool
	onAlert  *string
	th       thresholdFlags
}

// recordFlagSet declares vramtop record's flags.
func recordFlagSet() (*pflag.FlagSet, *recordFlags) {
	fs := newFlagSet("vramtop record", "Usage: vramtop record -o FILE [flags]\n\nAppends a snapshot of every GPU to FILE at each interval, one JSON line each,\nuntil interrupted (Ctrl-C, SIGTERM) or --duration has passed.\n\n")
	fl := &recordFlags{}
	fl.sf.add(fs)
	fl.out = fs.StringP("output", "o", "", "append the recording to `FILE` (gzip compressed when it ends in .gz)")
	fl.duration = fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	fl.maxSize = fs.String("max-size", "", "rotate when the file reaches this `size` (100MB = 100·10^6 bytes, 100MiB = 100·2^20): FILE becomes FILE.1, …")
	fl.keep = fs.Int("keep", recorder.DefaultKeep, "how many rotated parts to keep")
	fl.quiet = fs.BoolP("quiet", "q", false, "print nothing but errors")
	fl.onAlert = fs.String("on-alert", "", "run `CMD` (sh -c) with an alert as JSON on stdin when the alert starts (at the --warn and --crit lines)")
	fl.th.add(fs, "with --on-alert")
	return fs, fl
}

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := recordFlagSet()
	if code, ok := parseNoArgs(fs, args, stderr, " (the file is given with -o)"); !ok {
		return code
	}
	if !fl.th.valid(fs, stderr) {
		return exitUsage
	}
	if *fl.out == "" {
		fmt.Fprintln(stderr, "vramtop record: name the recording with -o FILE")
		return exitUsage
	}
	if *fl.duration < 0 {
		fmt.Fprintf(stderr, "vramtop record: --duration %v is negative\n", *fl.duration)
		return exitUsage
	}
	if *fl.keep < 1 {
		fmt.Fprintf(stderr, "vramtop record: --keep %d: keep at least 1 part\n", *fl.keep)
		return exitUsage
	}
	var size int64
	if *fl.maxSize != "" {
		var err error
		if size, err = recorder.ParseSize(*fl.maxSize); err != nil {
			fmt.Fprintf(stderr, "vramtop record: --max-size: %v\n", err)
			return exitUsage
		}
		if size < 4<<10 {
			fmt.Fprintf(stderr, "vramtop record: --max-size %s is too small (4KiB at least)\n", *fl.maxSize)
			return exitUsage
		}
	}
	// Open the file first: a file that cannot be written is reported before
	// any GPU is touched.
	// -o - writes the recording to standard output.
	where := *fl.out
	if *fl.out == "-" {
		where = "standard output"
	}
	w, err := recorder.Open(recorder.Options{
		Path: *fl.out, MaxSize: size, Keep: *fl.keep,
		Interval: fl.sf.interval, History: fl.sf.history, Program: "vramtop " + version,
		Stdout: stdout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "vramtop record: %v\n", err)
		return 1
	}
	s, code := fl.sf.newSampler(stderr)
	if s == nil {
		w.Close()
		return code
	}
	// A closed terminal ends the recording cleanly too.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	var until time.Time
	if *fl.duration > 0 {
		until = time.Now().Add(*fl.duration)
	}
	if !*fl.quiet {
		fmt.Fprintf(stderr, "vramtop record: recording to %s every %v; Ctrl-C stops\n", where, fl.sf.interval)
	}
	n := 0
	mon := advisor.NewMonitor(advisor.Config{Thresholds: fl.th.Thresholds, User: currentUser()})
	hookCtx, stopHook := context.WithCancel(ctx)
	hook, hookDone := startAlertHook(hookCtx, *fl.onAlert, fl.sf.host, "vramtop record", stderr)
	err = recorder.Loop(ctx, s, until, nil, func(snap sampler.Snapshot) error {
		n++
		if *fl.onAlert != "" {
			hook(mon.Observe(snap))
		}
		return w.Write(snap)
	})
	stopHook()
	<-hookDone
	s.Close()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "vramtop record: %v (%d snapshots recorded)\n", err, n)
		return 1
	}
	if !*fl.quiet {
		fmt.Fprintf(stderr, "vramtop record: %d snapshots recorded to %s\n", n, where)
	}
	// Stopped by a signal, the recording is complete, and the status says
	// how it ended.
	if code, ok := signalStatus(ctx); ok {
		return code
	}
	return 0
}

// signalStatus is the exit status of a command that a signal ended: 130
// for SIGINT, 143 for SIGTERM, 129 for SIGHUP (main, or the command itself
// for SIGHUP, cancels ctx with the signal as its cause). ok is false when
// no signal ended ctx.
func signalStatus(ctx context.Context) (code int, ok bool) {
	if ctx.Err() == nil {
		return 0, false
	}
	c := context.Cause(ctx)
	if c == nil {
		return 0, false
	}
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if strings.HasPrefix(c.Error(), s.String()+" signal") {
			return 128 + int(s), true
		}
	}
	return 0, false
}
