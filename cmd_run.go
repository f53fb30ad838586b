package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/jobrun"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/runlog"
	"github.com/vramtop/vramtop/sampler"
)

// demoJobDevice is the demo GPU a job started with --demo shows on (the
// H200).
const demoJobDevice = 2

// jobInterval is vramtop run's default sampling interval.
const jobInterval = 250 * time.Millisecond

// runFlags are vramtop run's flags.
type runFlags struct {
	sf            sourceFlags
	record        *string
	reportFmt     *string
	reportFile    *string
	killLeftovers *bool
	killGrace     *time.Duration
}

// runFlagSet declares vramtop run's flags.
func runFlagSet() (*pflag.FlagSet, *runFlags) {
	fs := newFlagSet("vramtop run", "Usage: vramtop run [flags] -- CMD [ARGS...]\n\n"+
		"Runs CMD with its input and output untouched, follows the GPU memory of it and every\n"+
		"process it starts, and when it ends reports the peak per GPU, the least headroom, who\n"+
		"else held memory then, the energy each GPU drew (J and kWh) and the job's share, a plot,\n"+
		"and the diagnosis of an out-of-memory error in its stderr.\n"+
		"The exit status is CMD's (128+N when signal N killed it).\n\n")
	fl := &runFlags{}
	fs.SetInterspersed(false) // the flags after CMD are CMD's
	fl.sf.add(fs)
	// A job is watched closely: device memory four times a second, so the
	// growth just before an out-of-memory error shows in the report.
	if f := fs.Lookup("interval"); f != nil {
		f.Value.Set(jobInterval.String())
		f.DefValue = jobInterval.String()
	}
	fl.record = fs.String("record", "", "also record the GPUs to `FILE` while the job runs (see vramtop replay)")
	fl.reportFmt = fs.String("report", "text", "the report's format: text or json (schema: docs/schema/run-report.schema.json)")
	fl.reportFile = fs.String("report-file", "", "write the report to `FILE` instead of stderr")
	fl.killLeftovers = fs.Bool("kill-leftovers", false, "when the command exits, end the processes it left running (SIGTERM, then SIGKILL after --kill-grace)")
	fl.killGrace = fs.Duration("kill-grace", jobrun.DefaultKillGrace, "with --kill-leftovers: how long to wait between SIGTERM and SIGKILL")
	return fs, fl
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := runFlagSet()
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "vramtop run: name the command to run: vramtop run [flags] -- CMD [ARGS...]")
		return exitUsage
	}
	if *fl.killGrace <= 0 {
		fmt.Fprintf(stderr, "vramtop run: --kill-grace %v: want a positive duration\n", *fl.killGrace)
		return exitUsage
	}
	if *fl.reportFmt != "text" && *fl.reportFmt != "json" {
		fmt.Fprintf(stderr, "vramtop run: --report %q: want text or json\n", *fl.reportFmt)
		return exitUsage
	}
	return runJob(ctx, "vramtop run", jobSpec{
		sf: fl.sf, argv: argv, record: *fl.record, reportFmt: *fl.reportFmt, reportFile: *fl.reportFile,
		killLeftovers: *fl.killLeftovers, killGrace: *fl.killGrace,
	}, stdout, stderr)
}

// jobSpec is a job for runJob: vramtop run's, or the command vramtop wait
// and vramtop pick start on the GPUs they claimed.
type jobSpec struct {
	sf   sourceFlags
	argv []string
	// env, when not nil, is the command's environment.
	env []string
	// record is the recording's path ("": none); reportFmt is text, json
	// or "" (no report); reportFile where it goes ("": stderr).
	record, reportFmt, reportFile string
	killLeftovers                 bool
	killGrace                     time.Duration
}

// runJob runs j.argv as a watched job and returns its exit status, after
// the report j asks for. Errors are one line after name.
func runJob(ctx context.Context, name string, j jobSpec, stdout, stderr io.Writer) int {
	if j.killGrace <= 0 {
		j.killGrace = jobrun.DefaultKillGrace
	}
	sf, argv := j.sf, j.argv
	// Everything that can fail is checked before the job starts.
	var rep io.Writer = stderr
	if j.reportFile != "" {
		f, err := os.OpenFile(j.reportFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "%s: report file: %v\n", name, err)
			return exitUsage
		}
		defer f.Close()
		rep = f
	}
	sf.jobEnergy = true
	src, s, code := sf.start(name, sampler.Config{ProcessInterval: sampler.JobProcessInterval}, stderr)
	if s == nil {
		return code
	}
	var rec *recorder.Writer
	if j.record != "" {
		var err error
		rec, err = recorder.Open(recorder.Options{
			Path: j.record, Interval: sf.interval, History: sf.history, Program: "vramtop " + version,
			ProcessInterval: sampler.JobProcessInterval,
		})
		if err != nil {
			s.Close()
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	}

	// Signals go to the job; vramtop run ends when the job does.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	cfg := jobrun.Config{
		Argv: argv, Env: j.env, Sampler: s, Record: rec,
		Stdin: os.Stdin, Stdout: stdout, Stderr: stderr,
		Signals: sigs, Foreground: true,
		KillLeftovers: j.killLeftovers, KillGrace: j.killGrace,
	}
	if d, ok := src.(*demo.Demo); ok {
		// The child's real PID is on no demo GPU: show it on one, with a
		// made-up footprint, so the report has something to say.
		me := currentUser()
		if me == "" {
			me = "you"
		}
		cmdline := strings.Join(argv, " ")
		cfg.OnStart = func(pid int) {
			d.AddProcess(demoJobDevice, uint32(pid), me, cmdline, demoJobBytes)
		}
	}
	r, err := jobrun.Run(ctx, cfg)
	if rec != nil {
		if cerr := rec.Close(); cerr != nil {
			r.Notes = append(r.Notes, "recording: "+cerr.Error())
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return r.ExitCode
	}
	if src.Info().Demo {
		r.Notes = append(r.Notes, fmt.Sprintf("--demo: the GPUs are the built-in demo and the job's memory on GPU %d is simulated", demoJobDevice))
	}
	keepRun(name, r, stderr)
	switch j.reportFmt {
	case "":
	case "json":
		enc := json.NewEncoder(rep)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	default:
		_, err = io.WriteString(rep, r.Text(60))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: writing the report: %v\n", name, err)
	}
	if j.reportFile != "" && j.reportFmt == "text" {
		fmt.Fprintf(stderr, "%s: report written to %s\n", name, filepath.Clean(j.reportFile))
	}
	return r.ExitCode
}

// keepRun adds the job to the run history (runlog), for wait --like.
func keepRun(name string, r jobrun.Report, stderr io.Writer) {
	path, err := runlog.Path()
	if err == nil {
		e := runlog.Entry{
			Command: r.Command, Start: r.Start, DurationSeconds: r.DurationSeconds, ExitCode: r.ExitCode,
			PeakBytes: r.PeakBytes, GPUs: len(r.GPUs), Demo: r.Demo,
		}
		e.Dir, _ = os.Getwd()
		for _, g := range r.GPUs {
			e.GPUPeakBytes = max(e.GPUPeakBytes, g.PeakBytes)
		}
		err = runlog.Append(path, e)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: the run is not kept in the history: %v\n", name, err)
	}
}

// demoJobBytes is the made-up footprint of a job run with --demo: a model
// loading over 10 s, then training steps that peak every 5 s.
func demoJobBytes(t time.Duration) uint64 {
	const gib = 1 << 30
	s := t.Seconds()
	load := min(s/10, 1) * 24 * gib
	var step float64
	if s > 10 {
		phase := s - 10
		step = 6 * gib * (phase - float64(int(phase/5))*5) / 5
	}
	return uint64(600<<20 + load + step)
}
