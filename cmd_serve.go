package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/alerthook"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/exporter"
	"github.com/vramtop/vramtop/sampler"
)

// defaultListen is loopback only: exporting to other hosts is a choice
// (--listen :9400), not a default.
const defaultListen = "127.0.0.1:9400"

// serveFlags are vramtop serve's flags.
type serveFlags struct {
	sf         sourceFlags
	listen     *string
	hostname   *string
	maxProcs   *int
	noCommands *bool
	onAlert    *string
	th         thresholdFlags
}

// serveFlagSet declares vramtop serve's flags.
func serveFlagSet() (*pflag.FlagSet, *serveFlags) {
	fs := newFlagSet("vramtop serve", "Usage: vramtop serve [flags]\n\nServes the GPUs' memory as Prometheus metrics: dcgm-exporter's DCGM_FI_DEV_FB_*, _GPU_TEMP,\n_POWER_USAGE and _GPU_UTIL, and vramtop_*. SIGTERM or Ctrl-C stops it (exit status 0).\n\nFlags:\n")
	fl := &serveFlags{}
	fl.sf.add(fs)
	fl.listen = fs.String("listen", defaultListen, "`address` to serve /metrics and /healthz on (:9400 for every interface)")
	fl.hostname = fs.String("hostname", "", "the hostname label of every series (default: this machine's host name)")
	fl.maxProcs = fs.Int("max-process-series", exporter.DefaultMaxProcessSeries, "per-process series of each GPU: the `N` processes using the most memory (-1: all); the GPU series are always complete")
	fl.noCommands = fs.Bool("no-command-labels", false, "leave command lines out of the per-process series (a command line may hold a token or a password)")
	fl.onAlert = fs.String("on-alert", "", "run `CMD` (sh -c) with an alert as JSON on stdin when the alert starts")
	fl.th.add(fs, "vramtop_alert")
	return fs, fl
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := serveFlagSet()
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	if !fl.th.valid(fs, stderr) {
		return exitUsage
	}
	if *fl.maxProcs < -1 {
		fmt.Fprintf(stderr, "vramtop serve: --max-process-series %d: want a count, or -1 for all\n", *fl.maxProcs)
		return exitUsage
	}
	if _, _, err := net.SplitHostPort(*fl.listen); err != nil {
		fmt.Fprintf(stderr, "vramtop serve: --listen %q: want host:port or :port, as :9400 or 127.0.0.1:9400\n", *fl.listen)
		return exitUsage
	}
	// Take the port before touching the GPUs: a second exporter fails
	// fast, with one line.
	ln, err := exporter.Listen(*fl.listen)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop serve: %v\n", err)
		return 1
	}
	defer ln.Close()
	s, code := fl.sf.newSampler(stderr)
	if s == nil {
		return code
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := advisor.Config{Thresholds: fl.th.Thresholds, User: currentUser()}
	opts := exporter.Options{
		Hostname:         *fl.hostname,
		Version:          version,
		Monitor:          advisor.NewMonitor(cfg),
		MaxProcessSeries: *fl.maxProcs,
		NoCommandLabels:  *fl.noCommands,
	}
	// The claims of vramtop pick and wait on this host, for the fleet's
	// pick (vramtop_gpu_claimed).
	if cs, err := claims.Open(claims.Dir()); err != nil {
		fmt.Fprintf(stderr, "vramtop serve: GPU claims are not exported: %v\n", err)
	} else {
		opts.Claims = claims.Watch(ctx, cs, claimsRefresh).Claims
	}
	coll := exporter.New(s.Latest, opts)
	hook, hookDone := startAlertHook(ctx, *fl.onAlert, cmp.Or(*fl.hostname, fl.sf.host), "vramtop serve", stderr)
	snaps := s.Subscribe()
	sampled := make(chan error, 1)
	go func() { sampled <- s.Run(ctx) }()
	// The first scrape has the GPUs: serve once the first sample is in.
	select {
	case snap := <-snaps:
		hook(coll.Observe(snap))
	case <-ctx.Done():
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case snap := <-snaps:
				hook(coll.Observe(snap))
			}
		}
	}()
	fmt.Fprintf(stderr, "vramtop serve: serving http://%s/metrics\n", ln.Addr())
	err = exporter.Serve(ctx, ln, exporter.Handler(coll), 2*time.Second)
	cancel()
	<-sampled
	<-hookDone
	if err != nil {
		fmt.Fprintf(stderr, "vramtop serve: %v\n", err)
		return 1
	}
	return 0
}

// startAlertHook runs cmd for each alert that starts (--on-alert), until ctx
// ends; notify takes the alerts in force after each snapshot, and done is
// closed once the runner has stopped. Without cmd, notify does nothing.
func startAlertHook(ctx context.Context, cmd, hostname, name string, stderr io.Writer) (notify func([]advisor.Alert), done <-chan struct{}) {
	ch := make(chan struct{})
	if cmd == "" {
		close(ch)
		return func([]advisor.Alert) {}, ch
	}
	if hostname == "" {
		hostname, _ = os.Hostname()
	}
	r := alerthook.New(cmd, alerthook.Options{Hostname: hostname, Stderr: stderr, Name: name})
	go func() { r.Run(ctx); close(ch) }()
	return r.Notify, ch
}

// viewOnAlertUsage is --on-alert's help in a full-screen view.
const viewOnAlertUsage = "run `CMD` (sh -c) with an alert as JSON on stdin when the alert starts; its output goes to /dev/null, not over the screen (its failures are listed when the view ends)"

// onceIgnoresHook says that --on-alert has nothing to do in a one-shot
// table (--once, or a stdout that is not a terminal).
// hint, when not empty, says what does watch without a screen.
func onceIgnoresHook(stderr io.Writer, name, cmd, hint string) {
	if cmd != "" {
		fmt.Fprintf(stderr, "%s: --on-alert runs its command only in the live view, not for the one-shot table (--once, or an output that is not a terminal)%s\n", name, hint)
	}
}

// startViewHook is --on-alert for a full-screen view (the live view, the
// fleet), whose screen nothing else may write on: the command's output goes
// to /dev/null, and the runner's warnings (a command that failed or ran too
// long, an alert dropped) are kept, the first maxViewWarnings of them, for
// finish to print once the view has given the terminal back. onAlerts takes
// the snapshots the view judges and their alerts (ui.Options.OnAlerts);
// each alert's event names the host of its device (a fleet's host) or,
// where the device has none, hostname (none when ""). finish
// stops the runner. Without cmd, onAlerts is nil and finish does nothing.
func startViewHook(ctx context.Context, cmd, hostname, name string) (onAlerts func(sampler.Snapshot, []advisor.Alert), finish func(stderr io.Writer)) {
	if cmd == "" {
		return nil, func(io.Writer) {}
	}
	warnings := &keptWarnings{}
	r := alerthook.New(cmd, alerthook.Options{Hostname: hostname, Stderr: warnings, Output: io.Discard, Name: name})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	onAlerts = func(snap sampler.Snapshot, alerts []advisor.Alert) {
		r.NotifyHosts(alerts, func(a advisor.Alert) string {
			for _, d := range snap.Devices {
				if d.ID == a.DeviceID {
					return d.Hostname
				}
			}
			return ""
		})
	}
	finish = func(stderr io.Writer) {
		cancel()
		<-done
		warnings.writeTo(stderr, name)
	}
	return onAlerts, finish
}

// maxViewWarnings is how many of the hook's warnings a view keeps for the
// end; the rest are counted.
const maxViewWarnings = 20

// keptWarnings keeps the first maxViewWarnings writes (the runner writes a
// warning in one) and counts the rest.
type keptWarnings struct {
	mu   sync.Mutex
	kept [][]byte
	more int
}

func (k *keptWarnings) Write(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kept) < maxViewWarnings {
		k.kept = append(k.kept, bytes.Clone(b))
	} else {
		k.more++
	}
	return len(b), nil
}

func (k *keptWarnings) writeTo(w io.Writer, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, b := range k.kept {
		w.Write(b)
	}
	if k.more > 0 {
		fmt.Fprintf(w, "%s: --on-alert: %d more warnings left out\n", name, k.more)
	}
}
