package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/exporter"
)

// defaultListen is loopback only: exporting to other hosts is a choice
// (--listen :9400), not a default.
const defaultListen = "127.0.0.1:9400"

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop serve", "Usage: vramtop serve [flags]\n\nServes the GPUs' memory as Prometheus metrics: dcgm-exporter's DCGM_FI_DEV_FB_* and vramtop_*.\n\nFlags:\n", stderr)
	var sf sourceFlags
	sf.add(fs)
	listen := fs.String("listen", defaultListen, "`address` to serve /metrics and /healthz on (:9400 for every interface)")
	hostname := fs.String("hostname", "", "the Hostname label of every series (default: this machine's host name)")
	var th thresholdFlags
	th.add(fs, "vramtop_alert")
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	if !th.valid(fs, stderr) {
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
	cfg := advisor.Config{Thresholds: th.Thresholds, User: currentUser()}
	coll := exporter.New(s.Latest, exporter.Options{
		Hostname: *hostname,
		Version:  version,
		Monitor:  advisor.NewMonitor(cfg),
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	snaps := s.Subscribe()
	sampled := make(chan error, 1)
	go func() { sampled <- s.Run(ctx) }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case snap := <-snaps:
				coll.Observe(snap)
			}
		}
	}()
	fmt.Fprintf(stderr, "vramtop serve: serving http://%s/metrics\n", ln.Addr())
	err = exporter.Serve(ctx, ln, exporter.Handler(coll), 5*time.Second)
	cancel()
	<-sampled
	if err != nil {
		fmt.Fprintf(stderr, "vramtop serve: %v\n", err)
		return 1
	}
	return 0
}
