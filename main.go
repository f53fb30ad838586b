// Command vramtop shows GPU memory live, warns before a card runs out, and
// says what to do about it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vramtop/vramtop/units"
	"io"
	"os"
	"os/signal"
	"os/user"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/starttrace"
	"github.com/vramtop/vramtop/nvmlsource"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui"
)

// version is set at build time: -ldflags "-X main.version=1.2.3"; when
// it is not, main sets it from the module version and VCS revision the Go
// toolchain recorded (buildVersion).
var version = ""

// exitUsage is the exit status for bad flags or arguments.
const exitUsage = 2

func main() {
	if code, ok := holderMain(); ok {
		os.Exit(code) // vramtop as the holder of claims (cmd_claims.go)
	}
	starttrace.Mark("main")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// VRAMTOP_CPUPROFILE=FILE writes a CPU profile of the run (go tool pprof).
	if path := os.Getenv("VRAMTOP_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
		}
	}
	// VRAMTOP_MEMPROFILE=FILE: each SIGUSR1 writes a profile of what is
	// live on the heap to FILE (go tool pprof -sample_index=inuse_space).
	// Without it the heap is not sampled at all: the runtime's table of
	// sampled call stacks is resident memory that nothing would read.
	runtime.MemProfileRate = 0
	if path := os.Getenv("VRAMTOP_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 4096
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for range usr1 {
				writeHeapProfile(path)
			}
		}()
	}
	version = buildVersion(version, debug.ReadBuildInfo)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	stop()
	os.Exit(code)
}

// writeHeapProfile writes what is live on the heap to path, after a
// collection.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	runtime.GC()
	pprof.WriteHeapProfile(f)
	f.Close()
}

// demoFlag is --demo (always), --demo=auto (when no GPU driver is found) or
// --demo=false.
type demoFlag string

func (d *demoFlag) String() string { return string(*d) }

// Type is "bool": --demo alone means on (NoOptDefVal), and help shows no
// value for it.
func (d *demoFlag) Type() string { return "bool" }
func (d *demoFlag) Set(s string) error {
	switch s {
	case "true", "1", "on":
		*d = "on"
	case "false", "0", "off":
		*d = ""
	case "auto":
		*d = "auto"
	default:
		return fmt.Errorf("want true, false or auto")
	}
	return nil
}

// sourceFlags are the flags of every command that samples GPUs.
type sourceFlags struct {
	demo     demoFlag
	interval time.Duration
	history  time.Duration
	// host is the source's host name where it has its own (the demo's
	// demo-node); "" for this machine's.
	host string
	// jobEnergy reads the GPUs' energy counters with every gauge reading,
	// for a job's energy (run); other commands read them every 30 s.
	jobEnergy bool
}

func (f *sourceFlags) add(fs *pflag.FlagSet) {
	f.addDemo(fs)
	f.addInterval(fs)
	fs.DurationVar(&f.history, "history", sampler.DefaultHistory, "how much history to keep")
}

// addDemo adds only --demo, for commands that read the GPUs once (explain
// --live, pick): they keep no history and sample at no interval.
func (f *sourceFlags) addDemo(fs *pflag.FlagSet) {
	fs.Var(&f.demo, "demo", "show the built-in demo GPUs (--demo=auto or --demo auto: only when no NVIDIA driver is found)")
	fs.Lookup("demo").NoOptDefVal = "true"
}

// addInterval adds --interval.
func (f *sourceFlags) addInterval(fs *pflag.FlagSet) {
	fs.DurationVar(&f.interval, "interval", sampler.DefaultInterval, "device memory sampling `interval` (50ms at the fastest)")
}

// open returns the source the flags ask for: NVML, or the demo.
func (f *sourceFlags) open(stderr io.Writer) (sampler.Source, error) {
	if f.demo == "on" {
		f.host = demo.Hostname
		return newDemo(), nil
	}
	src, err := nvmlsource.Open()
	if err != nil && f.demo == "auto" {
		switch {
		case errors.Is(err, sampler.ErrNoDriver):
			fmt.Fprintln(stderr, "vramtop: no NVIDIA driver found; showing the built-in demo")
			f.host = demo.Hostname
			return newDemo(), nil
		case errors.Is(err, nvmlsource.ErrNotBuilt):
			fmt.Fprintln(stderr, "vramtop: this build has no NVML support; showing the built-in demo")
			f.host = demo.Hostname
			return newDemo(), nil
		}
	}
	return src, err
}

// newDemo is the demo demo.Lead into its story, with the story so far as the
// devices' history.
func newDemo() *demo.Demo {
	now := time.Now()
	return demo.New(now.Add(-demo.Lead)).BackfillTo(now)
}

// newSampler opens the source and a sampler over it. Errors are printed
// as one line; the returned code is then non-zero.
func (f *sourceFlags) newSampler(stderr io.Writer) (*sampler.Sampler, int) {
	_, s, code := f.start("vramtop", sampler.Config{}, stderr)
	return s, code
}

// start opens the source and a sampler over it at the flags' interval and
// history (cfg gives the rest). Errors are printed as one line after name;
// the returned code is then non-zero.
func (f *sourceFlags) start(name string, cfg sampler.Config, stderr io.Writer) (sampler.Source, *sampler.Sampler, int) {
	src, err := f.open(stderr)
	starttrace.Mark("source-open")
	if e, ok := src.(interface{ SetEnergyEvery(time.Duration) }); ok && f.jobEnergy {
		e.SetEnergyEvery(0)
	}
	if err != nil {
		switch {
		case errors.Is(err, sampler.ErrNoDriver):
			fmt.Fprintf(stderr, "%s: %v; is the NVIDIA driver installed? Try --demo to see the built-in demo\n", name, err)
		case errors.Is(err, nvmlsource.ErrNotBuilt):
			fmt.Fprintf(stderr, "%s: %v; use a Linux build with NVML (cgo) for live GPUs, or --demo, explain, replay and fleet here\n", name, err)
		default:
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
		}
		return nil, nil, exitUsage
	}
	cfg.Interval, cfg.History = f.interval, f.history
	s, err := sampler.New(src, cfg)
	if err != nil {
		src.Close()
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, exitUsage
	}
	return src, s, 0
}

// thresholdFlags are --warn and --crit.
type thresholdFlags struct{ advisor.Thresholds }

// add adds the flags; what, when not empty, says what the thresholds
// drive ("vramtop_alert").
func (t *thresholdFlags) add(fs *pflag.FlagSet, what string) {
	t.Thresholds = advisor.DefaultThresholds()
	if what != "" {
		what += ": "
	}
	fs.Float64Var(&t.Warn, "warn", t.Warn, what+"warn when a GPU's memory use passes this `percent`")
	fs.Float64Var(&t.Crit, "crit", t.Crit, what+"critical when a GPU's memory use passes this `percent`")
}

// valid reports whether the thresholds make sense, printing why not after
// the command's name.
func (t *thresholdFlags) valid(fs *pflag.FlagSet, stderr io.Writer) bool {
	if err := t.Validate(); err != nil {
		// Name the file and line (or the variable) of a value set there
		// and not on the command line.
		var from []string
		for _, k := range []string{"warn", "crit"} {
			v, ok := settingsInEffect.Get(k)
			if f := fs.Lookup(k); ok && f != nil && f.Value.String() == mustPercentText(v.Value) {
				from = append(from, fmt.Sprintf("%s = %s at %s", k, v.Value, v.Origin))
			}
		}
		if len(from) > 0 {
			fmt.Fprintf(stderr, "%s: %v; %s\n", fs.Name(), err, strings.Join(from, ", "))
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		}
		return false
	}
	// 0.8 is a fraction more likely than 0.8%: say so, and go on.
	for _, f := range []struct {
		name string
		v    float64
	}{{"warn", t.Warn}, {"crit", t.Crit}} {
		if f.v > 0 && f.v < 1 {
			fmt.Fprintf(stderr, "%s: warning: --%s %g is %g%% of the memory, not %g%%; a percentage is written as 80 or 80%%\n",
				fs.Name(), f.name, f.v, f.v, f.v*100)
		}
	}
	return true
}

// mustPercentText is a percentage setting as its flag prints it ("80%"
// is 80).
func mustPercentText(s string) string {
	v, err := units.ParsePercent(s)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// newFlagSet is the flag set of a command named name ("vramtop serve");
// head is its help: "Usage: vramtop serve [flags]", a blank line, what it
// does. Flags are GNU style (--name value, --name=value) and may follow
// arguments. A command declares its flags in a function of its own that
// calls newFlagSet (the command table's flags), and its run parses its
// arguments with that flag set before it does anything else.
func newFlagSet(name, head string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), head)
		fmt.Fprint(fs.Output(), fs.FlagUsages())
	}
	return fs
}

// helpHead is the help that newFlagSet gave fs, without the flags.
func helpHead(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.Usage()
	fs.SetOutput(io.Discard)
	return strings.TrimSuffix(b.String(), fs.FlagUsages())
}

// parse parses args into fs; help prints usage and returns 0, bad flags
// print one line and return exitUsage. ok is true when the command should
// go on.
func parse(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	userValues(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			fs.SetOutput(io.Discard)
			return 0, false
		}
		fmt.Fprintf(stderr, "%s: %s (see %s --help)\n", fs.Name(), flagError(err), fs.Name())
		return exitUsage, false
	}
	return 0, true
}

// parseNoArgs is parse for a command that takes no arguments: one left over
// is printed, with hint after it, and returns exitUsage.
func parseNoArgs(fs *pflag.FlagSet, args []string, stderr io.Writer, hint string) (code int, ok bool) {
	if code, ok := parse(fs, args, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q%s\n", fs.Name(), fs.Arg(0), hint)
		return exitUsage, false
	}
	return 0, true
}

// topFlags are the live view's flags.
type topFlags struct {
	sf      sourceFlags
	once    *bool
	asJSON  *bool
	th      thresholdFlags
	bell    *bool
	notify  *bool
	onAlert *string
}

// topFlagSet declares the live view's flags.
func topFlagSet() (*pflag.FlagSet, *topFlags) {
	fs := newFlagSet("vramtop", "Usage: vramtop [flags]\n\n")
	fl := &topFlags{}
	fl.sf.add(fs)
	fl.once = fs.Bool("once", false, "print one sample as a table and exit")
	fl.asJSON = fs.Bool("json", false, "with --once: print one JSON document (schema: docs/schema/snapshot.schema.json)")
	fl.th.add(fs, "")
	fl.bell = fs.Bool("bell", false, "ring the terminal bell when a GPU turns critical")
	fl.notify = fs.Bool("notify", false, "desktop notifications through the terminal (OSC 9/777, the bell elsewhere) when a GPU turns critical, a leak or time-to-full alert starts, or a GPU watched with w is free")
	fl.onAlert = fs.String("on-alert", "", viewOnAlertUsage)
	return fs, fl
}

func runTop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := topFlagSet()
	if code, ok := parseNoArgs(fs, args, stderr, " (see vramtop --help)"); !ok {
		return code
	}
	if !fl.th.valid(fs, stderr) {
		return exitUsage
	}
	if *fl.asJSON && !*fl.once {
		*fl.once = true
	}
	if !*fl.once && !fullScreenOK(stdout, os.Getenv("TERM")) {
		*fl.once = true
	}
	var ls *liveStart
	// The live view draws a frame per snapshot: one a second, whatever the
	// sampling interval (fast mode's samples show as peaks).
	cfg := sampler.Config{PublishInterval: time.Second}
	if !*fl.once {
		ls = beginLive(true, fl.sf.demo != "on")
		cfg = ls.config(cfg)
	}
	_, s, code := fl.sf.start("vramtop", cfg, stderr)
	if s == nil {
		return code
	}
	if *fl.once {
		onceIgnoresHook(stderr, "vramtop", *fl.onAlert, "; vramtop serve --on-alert CMD watches without a screen")
		snap := s.Once()
		s.Close()
		if !writeOutput(stdout, stderr, "vramtop", func(w io.Writer) error {
			return writeSnapshot(w, snap, fl.th.Thresholds, *fl.asJSON)
		}) {
			return 1
		}
		return 0
	}
	// Whose processes are "mine": the demo's user in the demo.
	me := currentUser()
	if me == "" {
		me = os.Getenv("USER")
	}
	if fl.sf.demo == "on" {
		me = demo.User
	}
	host := fl.sf.host
	if host == "" {
		host, _ = os.Hostname()
	}
	onAlerts, endHook := startViewHook(ctx, *fl.onAlert, host, "vramtop")
	err := runLive(ctx, s, ls, ui.Options{
		Thresholds:  fl.th.Thresholds,
		Bell:        *fl.bell,
		Notify:      *fl.notify,
		SetInterval: s.SetInterval,
		Version:     version,
		User:        me,
		Claim:       watchClaims(ctx),
		OnAlerts:    onAlerts,
	})
	endHook(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop: %v\n", err)
		return 1
	}
	return 0
}

// runLive runs the sampler and the live view over it until the view ends,
// settling ls's start-up on the way.
func runLive(ctx context.Context, s *sampler.Sampler, ls *liveStart, opts ui.Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	snaps := s.Subscribe()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	ls.settle()
	defer ls.stop()
	err := ui.Run(ctx, snaps, opts)
	cancel()
	<-done
	return err
}

// writeSnapshot prints snap as --once does: a table, or the JSON document,
// each with the alerts in force (the advisor's rules over snap, and those a
// fleet's hosts report).
func writeSnapshot(w io.Writer, snap sampler.Snapshot, th advisor.Thresholds, asJSON bool) error {
	if asJSON {
		alerts := advisor.NewMonitor(advisor.Config{Thresholds: th}).Observe(snap)
		if alerts == nil {
			alerts = []advisor.Alert{}
		}
		return writeJSON(w, onceDoc{Snapshot: snap, Alerts: alerts})
	}
	return ui.WriteTable(w, snap, th)
}

// onceDoc is the --once --json document: the snapshot and its alerts.
type onceDoc struct {
	sampler.Snapshot
	Alerts []advisor.Alert `json:"alerts"`
}

// currentUser is the name of the user running vramtop ("" when unknown).
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fullScreenOK reports whether the live view can take the screen: stdout
// is a terminal that can move the cursor (TERM=dumb cannot, so it gets the
// one-shot table, as a pipe does).
func fullScreenOK(w io.Writer, term string) bool {
	return term != "dumb" && isTerminal(w)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
