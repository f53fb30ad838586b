package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui"
)

// Fleet cadence: Prometheus scrapes every 15 s or so by default; asking it
// every second would mostly read the same values again.
const (
	defaultFleetInterval = 5 * time.Second
	minFleetInterval     = time.Second
)

func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop fleet", "Usage: vramtop fleet --prometheus URL [flags]\n\nThe live view over every host Prometheus scrapes: vramtop serve exporters (devices and\nprocesses) and dcgm-exporter (devices). Hosts are sorted by memory pressure. A host whose\nexporter is down stays listed with its last values, marked down.\n\nWith --once: exit status 1 when Prometheus cannot be read or any host is down.\n\nFlags:\n", stderr)
	promURL := fs.String("prometheus", "", "Prometheus's `URL` (http://prometheus:9090) whose targets include vramtop serve or dcgm-exporter")
	once := fs.Bool("once", false, "print the fleet once as a table and exit")
	asJSON := fs.Bool("json", false, "with --once: print one JSON document (the shape of vramtop --once --json, docs/schema/snapshot.schema.json; each device has a hostname)")
	interval := fs.Duration("interval", defaultFleetInterval, "how often to ask Prometheus (1s at the fastest)")
	history := fs.Duration("history", sampler.DefaultHistory, "how much history to read back and keep for the sparklines")
	timeout := fs.Duration("timeout", 10*time.Second, "how long one round of queries to Prometheus may take (--once ends within it)")
	var th thresholdFlags
	th.add(fs, "")
	onAlert := fs.String("on-alert", "", viewOnAlertUsage+"; the JSON's hostname is the GPU's host")
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	if *promURL == "" {
		fmt.Fprintln(stderr, "vramtop fleet: --prometheus URL is required (e.g. --prometheus http://127.0.0.1:9090)")
		return exitUsage
	}
	u, err := prometheusURL(*promURL)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return exitUsage
	}
	*promURL = u
	if *interval < minFleetInterval {
		fmt.Fprintf(stderr, "vramtop fleet: interval %v is below the minimum of %v\n", *interval, minFleetInterval)
		return exitUsage
	}
	if !th.valid(fs, stderr) {
		return exitUsage
	}
	if *asJSON {
		*once = true
	}
	if !*once && !fullScreenOK(stdout, os.Getenv("TERM")) {
		*once = true
	}
	cfg := fleet.Config{URL: *promURL, Interval: *interval, Timeout: *timeout}
	if !*once {
		// The list of hosts shows their devices; a host's processes are
		// read once it is opened. --once lists every host's.
		cfg.History, cfg.OpenHostProcesses = *history, true
	}
	src, err := fleet.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return exitUsage
	}
	s, err := sampler.New(src, sampler.Config{Interval: *interval, History: *history})
	if err != nil {
		src.Close()
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return exitUsage
	}
	if *once {
		onceIgnoresHook(stderr, "vramtop fleet", *onAlert, "")
		src.WaitFirst(ctx)
		snap := s.Once()
		s.Close()
		if snap.Err != "" && len(snap.Devices) == 0 && !*asJSON {
			// Nothing was read: the error, once, and no empty table.
			fmt.Fprintf(stderr, "vramtop fleet: %s\n", snap.Err)
			return 1
		}
		if !writeOutput(stdout, stderr, "vramtop fleet", func(w io.Writer) error {
			return writeSnapshot(w, snap, th.Thresholds, *asJSON)
		}) {
			return 1
		}
		if snap.Err != "" {
			fmt.Fprintf(stderr, "vramtop fleet: %s\n", snap.Err)
			return 1
		}
		if down := downHosts(snap); len(down) > 0 {
			fmt.Fprintf(stderr, "vramtop fleet: %d of %d hosts down: %s\n", len(down), countHosts(snap), strings.Join(down, ", "))
			return 1
		}
		return 0
	}
	ls := beginLive(false, false)
	onAlerts, endHook := startViewHook(ctx, *onAlert, "", "vramtop fleet")
	err = runLive(ctx, s, ls, ui.Options{
		Thresholds: th.Thresholds,
		Version:    version,
		Title:      "vramtop fleet",
		User:       currentUser(),
		OnAlerts:   onAlerts,
		OpenHost:   src.SetOpenHost,
	})
	endHook(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return 1
	}
	return 0
}

// downHosts are the hosts of snap whose exporter is down or stale, sorted.
func downHosts(snap sampler.Snapshot) []string {
	var out []string
	for _, d := range snap.Devices {
		if fleet.IsHostDown(d) && !slices.Contains(out, d.Hostname) {
			out = append(out, d.Hostname)
		}
	}
	slices.Sort(out)
	return out
}

func countHosts(snap sampler.Snapshot) int {
	hosts := map[string]bool{}
	for _, d := range snap.Devices {
		hosts[d.Hostname] = true
	}
	return len(hosts)
}

// prometheusURL is --prometheus as a URL: without a scheme it is http://
// (--prometheus 127.0.0.1:9090), as curl takes it.
func prometheusURL(s string) (string, error) {
	t := strings.TrimSpace(s)
	if !strings.Contains(t, "://") {
		t = "http://" + t
	}
	u, err := url.Parse(t)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Port() == "" && strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("--prometheus %q: want Prometheus's address, as http://127.0.0.1:9090 or 127.0.0.1:9090", s)
	}
	return t, nil
}
