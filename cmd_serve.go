package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/alerthook"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/exporter"
)

// defaultListen is loopback only: exporting to other hosts is a choice
// (--listen :9400), not a default.
const defaultListen = "127.0.0.1:9400"

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop serve", "Usage: vramtop serve [flags]\n\nServes the GPUs' memory as Prometheus metrics: dcgm-exporter's DCGM_FI_DEV_FB_*, _GPU_TEMP,\n_POWER_USAGE and _GPU_UTIL, and vramtop_*. SIGTERM or Ctrl-C stops it (exit status 0).\n\nFlags:\n", stderr)
	var sf sourceFlags
	sf.add(fs)
	listen := fs.String("listen", defaultListen, "`address` to serve /metrics and /healthz on (:9400 for every interface)")
	hostname := fs.String("hostname", "", "the hostname label of every series (default: this machine's host name)")
	maxProcs := fs.Int("max-process-series", exporter.DefaultMaxProcessSeries, "per-process series of each GPU: the `N` processes using the most memory (-1: all); the GPU series are always complete")
	noCommands := fs.Bool("no-command-labels", false, "leave command lines out of the per-process series (a command line may hold a token or a password)")
	onAlert := fs.String("on-alert", "", "run `CMD` (sh -c) with an alert as JSON on stdin when the alert starts")
	var th thresholdFlags
	th.add(fs, "vramtop_alert")
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	if !th.valid(fs, stderr) {
		return exitUsage
	}
	if *maxProcs < -1 {
		fmt.Fprintf(stderr, "vramtop serve: --max-process-series %d: want a count, or -1 for all\n", *maxProcs)
		return exitUsage
	}
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		fmt.Fprintf(stderr, "vramtop serve: --listen %q: want host:port or :port, as :9400 or 127.0.0.1:9400\n", *listen)
		return exitUsage
	}
	// Take the port before touching the GPUs: a second exporter fails
	// fast, with one line.
	ln, err := exporter.Listen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop serve: %v\n", err)
		return 1
	}
	defer ln.Close()
	s, code := sf.newSampler(stderr)
	if s == nil {
		return code
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := advisor.Config{Thresholds: th.Thresholds, User: currentUser()}
	opts := exporter.Options{
		Hostname:         *hostname,
		Version:          version,
		Monitor:          advisor.NewMonitor(cfg),
		MaxProcessSeries: *maxProcs,
		NoCommandLabels:  *noCommands,
	}
	// The claims of vramtop pick and wait on this host, for the fleet's
	// pick (vramtop_gpu_claimed).
	if cs, err := claims.Open(claims.Dir()); err != nil {
		fmt.Fprintf(stderr, "vramtop serve: GPU claims are not exported: %v\n", err)
	} else {
		opts.Claims = claims.Watch(ctx, cs, claimsRefresh).Claims
	}
	coll := exporter.New(s.Latest, opts)
	hook, hookDone := startAlertHook(ctx, *onAlert, cmp.Or(*hostname, sf.host), "vramtop serve", stderr)
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
