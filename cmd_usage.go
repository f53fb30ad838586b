package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/replay"
	"github.com/vramtop/vramtop/units"
	"github.com/vramtop/vramtop/usage"
)

const usageHead = "Usage: vramtop usage [RECORDING ...] [flags]\n       vramtop usage --prometheus URL [--since 7d] [flags]\n\n" +
	"Accounts for who held GPU memory: per user and per job (Slurm job, pod, container), the GiB-hours\n" +
	"held, the GPU-hours held and how many of them idle (utilization under --idle-below), the peak and\n" +
	"the share of the GPUs' memory, over the window --since to --until. Reads recordings of vramtop\n" +
	"record (the parts of one, or of several hosts; .gz too; - for stdin) or, with --prometheus, the\n" +
	"series vramtop serve exports.\n\n" +
	"The numbers integrate the samples: each stands for the time until its GPU's next sample; where the\n" +
	"next comes more than 3 intervals later, for one interval, and the rest is a gap (not recorded,\n" +
	"never memory held); the last sample stands for one interval.\n\n" +
	"Exit status: 0 accounted, 1 unreadable recordings or Prometheus, 2 bad flags, 130/143 on a signal.\n\nFlags:\n"

// usageFlagSet declares vramtop usage's flags.
func usageFlagSet() (*pflag.FlagSet, *usageFlags) {
	fs := newFlagSet("vramtop usage", usageHead)
	f := &usageFlags{}
	f.since = fs.String("since", "", "the window's start: a `time` (2026-03-14, 2026-03-14 09:00, RFC 3339) or how long before --until (7d, 12h); with --prometheus 1d by default")
	f.until = fs.String("until", "", "the window's end: a `time`, or how long before now (1h); now when --since is a duration or with --prometheus")
	f.asJSON = fs.Bool("json", false, "print one JSON document (docs/schema/usage.schema.json)")
	f.asCSV = fs.Bool("csv", false, "print CSV: one row per user and per job")
	f.idle = fs.Float64("idle-below", usage.DefaultIdleBelow, "utilization (`percent`) under which memory is held idle")
	f.promURL = fs.String("prometheus", "", "read the series vramtop serve exports from Prometheus at `URL` instead of recordings")
	f.step = fs.Duration("step", 0, "with --prometheus: the resolution (default: 1m, coarser for windows past a week)")
	f.timeout = fs.Duration("timeout", 30*time.Second, "with --prometheus: how long each query may take")
	return fs, f
}

func runUsage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := usageFlagSet()
	files, code, ok := parseInterspersed(fs, args, stderr)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "vramtop usage: "+format+"\n", a...)
		return exitUsage
	}
	if msg := f.check(fs, files); msg != "" {
		return fail("%s", msg)
	}
	from, to, err := usageWindow(*f.since, *f.until, time.Now(), *f.promURL != "")
	if err != nil {
		return fail("%v", err)
	}
	a := usage.New(usage.Options{Since: from, Until: to, IdleBelow: *f.idle})
	if *f.promURL != "" {
		u, err := prometheusURL(*f.promURL)
		if err != nil {
			return fail("%v", err)
		}
		err = usage.AddPrometheus(ctx, a, usage.PromOptions{URL: u, Since: from, Until: to, Step: *f.step, Timeout: *f.timeout})
		if code, failed := usageReadFailed(ctx, err, stderr); failed {
			return code
		}
	} else if code, failed := usageReadFailed(ctx, addUsageRecordings(ctx, a, files, stderr), stderr); failed {
		return code
	}
	return writeUsage(a.Report(), *f, stdout, stderr)
}

// usageFlags are vramtop usage's flags.
type usageFlags struct {
	since, until, promURL *string
	asJSON, asCSV         *bool
	idle                  *float64
	step, timeout         *time.Duration
}

// check says what is wrong with the flags and the recordings named, or "".
func (f usageFlags) check(fs *pflag.FlagSet, files []string) string {
	prom := *f.promURL != ""
	switch {
	case *f.asJSON && *f.asCSV:
		return "--json and --csv: choose one"
	case *f.idle <= 0 || *f.idle > 100:
		return fmt.Sprintf("--idle-below %s: want a utilization above 0%% and at most 100%%", fs.Lookup("idle-below").Value)
	case prom && len(files) > 0:
		return "read recordings or --prometheus, not both"
	case !prom && len(files) == 0:
		return "name the recordings to account for (vramtop usage FILE ...), or --prometheus URL"
	case !prom && (fs.Changed("step") || fs.Changed("timeout")):
		return "--step and --timeout go with --prometheus"
	case *f.step < 0 || fs.Changed("step") && *f.step < time.Second:
		return fmt.Sprintf("--step %v: want 1s or more", *f.step)
	case *f.timeout <= 0:
		return fmt.Sprintf("--timeout %v: want a positive duration", *f.timeout)
	}
	return ""
}

// addUsageRecordings accounts for the recordings, warning (a bounded
// number of times) of damaged lines.
func addUsageRecordings(ctx context.Context, a *usage.Accounter, files []string, stderr io.Writer) error {
	nwarn := 0
	warn := func(w replay.Warning) {
		if nwarn++; nwarn <= maxReplayWarnings {
			fmt.Fprintf(stderr, "vramtop usage: warning: %s\n", w)
		}
	}
	err := usage.AddRecording(ctx, a, files, warn)
	if nwarn > maxReplayWarnings {
		fmt.Fprintf(stderr, "vramtop usage: … and %d more damaged lines skipped\n", nwarn-maxReplayWarnings)
	}
	return err
}

// usageReadFailed reports a failed read (an interruption as such) and
// the exit status it gives.
func usageReadFailed(ctx context.Context, err error, stderr io.Writer) (int, bool) {
	if err == nil {
		return 0, false
	}
	if code, ok := signalStatus(ctx); ok || errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "vramtop usage: interrupted")
		if !ok {
			code = 130
		}
		return code, true
	}
	fmt.Fprintf(stderr, "vramtop usage: %s\n", writeErrText(err))
	return 1, true
}

// writeUsage prints the report as the flags ask, with its notes on stderr.
func writeUsage(rep usage.Report, f usageFlags, stdout, stderr io.Writer) int {
	if rep.Duplicates > 0 {
		fmt.Fprintf(stderr, "vramtop usage: note: %d GPU samples came at or before an earlier one of the same GPU (a part named twice, or parts that overlap) and were counted once\n", rep.Duplicates)
	}
	if rep.DevicesLeftOut {
		fmt.Fprintf(stderr, "vramtop usage: warning: more than %d GPUs; the rest were left out\n", usage.MaxDevices)
	}
	if rep.Totals.GPUHours == 0 && (*f.asJSON || *f.asCSV) {
		fmt.Fprintln(stderr, "vramtop usage: note: no GPU was sampled in the window")
	}
	ok := writeOutput(stdout, stderr, "vramtop usage", func(w io.Writer) error {
		switch {
		case *f.asJSON:
			return writeJSON(w, rep)
		case *f.asCSV:
			return usage.WriteCSV(w, rep)
		}
		width := 80
		if file, isF := stdout.(*os.File); isF && isTerminal(stdout) {
			if wd, _, err := term.GetSize(file.Fd()); err == nil && wd > 20 {
				width = wd
			}
		}
		return usage.WriteText(w, rep, usage.TextOptions{Color: usageColor(stdout), Width: width})
	})
	if !ok {
		return 1
	}
	return 0
}

// usageColor reports whether the bars are drawn in colour: on a
// terminal, unless NO_COLOR (or color = "never") says not to, or
// everywhere with CLICOLOR_FORCE (color = "always").
func usageColor(w io.Writer) bool {
	if os.Getenv("CLICOLOR_FORCE") != "" && os.Getenv("CLICOLOR_FORCE") != "0" {
		return true
	}
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(w)
}

// usageWindow reads --since and --until: times, or durations back from
// --until (since) and from now (until). With Prometheus the window ends
// now and starts a day back unless told.
func usageWindow(since, until string, now time.Time, prom bool) (from, to time.Time, err error) {
	if until != "" {
		if to, err = moment(until, now); err != nil {
			return from, to, fmt.Errorf("--until %q: %v", until, err)
		}
	}
	if since == "" && prom {
		since = "1d"
	}
	if since != "" {
		end := to
		if end.IsZero() {
			end = now
		}
		if d, derr := units.ParseDuration(since); derr == nil {
			if d <= 0 {
				return from, to, fmt.Errorf("--since %q: want a duration above 0 or a time", since)
			}
			from = end.Add(-d)
			if to.IsZero() {
				to = now
			}
		} else if from, err = moment(since, now); err != nil {
			return from, to, fmt.Errorf("--since %q: %v", since, err)
		}
	}
	if prom && to.IsZero() {
		to = now
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		return from, to, fmt.Errorf("--until %s is not after --since %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return from, to, nil
}

// moment reads a time as --since and --until take it: a date and time
// (local), RFC 3339, or a duration back from now.
func moment(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if d, err := units.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("want a duration back from now (1h), not a negative one")
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, f := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(f, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("want a time (2026-03-14, 2026-03-14 09:00, 2026-03-14T09:00:00Z) or a duration (7d, 12h)")
}
