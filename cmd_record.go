package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop record", "Usage: vramtop record -o FILE [flags]\n\nAppends a snapshot of every GPU to FILE at each interval, one JSON line each,\nuntil interrupted (Ctrl-C, SIGTERM) or --duration has passed.\n\n", stderr)
	var sf sourceFlags
	sf.add(fs)
	out := fs.StringP("output", "o", "", "append the recording to `FILE` (gzip compressed when it ends in .gz)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	maxSize := fs.String("max-size", "", "rotate when the file reaches this `size` (100MB = 100·10^6 bytes, 100MiB = 100·2^20): FILE becomes FILE.1, …")
	keep := fs.Int("keep", recorder.DefaultKeep, "how many rotated parts to keep")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors")
	onAlert := fs.String("on-alert", "", "run `CMD` (sh -c) with an alert as JSON on stdin when the alert starts (at the --warn and --crit lines)")
	var th thresholdFlags
	th.add(fs, "with --on-alert")
	if code, ok := parseNoArgs(fs, args, stderr, " (the file is given with -o)"); !ok {
		return code
	}
	if !th.valid(fs, stderr) {
		return exitUsage
	}
	if *out == "" {
		fmt.Fprintln(stderr, "vramtop record: name the recording with -o FILE")
		return exitUsage
	}
	if *duration < 0 {
		fmt.Fprintf(stderr, "vramtop record: --duration %v is negative\n", *duration)
		return exitUsage
	}
	if *keep < 1 {
		fmt.Fprintf(stderr, "vramtop record: --keep %d: keep at least 1 part\n", *keep)
		return exitUsage
	}
	var size int64
	if *maxSize != "" {
		var err error
		if size, err = recorder.ParseSize(*maxSize); err != nil {
			fmt.Fprintf(stderr, "vramtop record: --max-size: %v\n", err)
			return exitUsage
		}
		if size < 4<<10 {
			fmt.Fprintf(stderr, "vramtop record: --max-size %s is too small (4KiB at least)\n", *maxSize)
			return exitUsage
		}
	}
	// Open the file first: a file that cannot be written is reported before
	// any GPU is touched.
	// -o - writes the recording to standard output.
	where := *out
	if *out == "-" {
		where = "standard output"
	}
	w, err := recorder.Open(recorder.Options{
		Path: *out, MaxSize: size, Keep: *keep,
		Interval: sf.interval, History: sf.history, Program: "vramtop " + version,
		Stdout: stdout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "vramtop record: %v\n", err)
		return 1
	}
	s, code := sf.newSampler(stderr)
	if s == nil {
		w.Close()
		return code
	}
	// A closed terminal ends the recording cleanly too.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	var until time.Time
	if *duration > 0 {
		until = time.Now().Add(*duration)
	}
	if !*quiet {
		fmt.Fprintf(stderr, "vramtop record: recording to %s every %v; Ctrl-C stops\n", where, sf.interval)
	}
	n := 0
	mon := advisor.NewMonitor(advisor.Config{Thresholds: th.Thresholds, User: currentUser()})
	hookCtx, stopHook := context.WithCancel(ctx)
	hook, hookDone := startAlertHook(hookCtx, *onAlert, sf.host, "vramtop record", stderr)
	err = recorder.Loop(ctx, s, until, nil, func(snap sampler.Snapshot) error {
		n++
		if *onAlert != "" {
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
	if !*quiet {
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
