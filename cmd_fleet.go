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

	"github.com/spf13/pflag"

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

// fleetFlags are vramtop fleet's flags.
type fleetFlags struct {
	promURL  *string
	once     *bool
	asJSON   *bool
	interval *time.Duration
	history  *time.Duration
	timeout  *time.Duration
	th       thresholdFlags
	onAlert  *string
}

// fleetFlagSet declares vramtop fleet's flags.
func fleetFlagSet() (*pflag.FlagSet, *fleetFlags) {
	fs := newFlagSet("vramtop fleet", "Usage: vramtop fleet --prometheus URL [flags]\n\nThe live view over every host Prometheus scrapes: vramtop serve exporters (devices and\nprocesses) and dcgm-exporter (devices). Hosts are sorted by memory pressure. A host whose\nexporter is down stays listed with its last values, marked down.\n\nWith --once: exit status 1 when Prometheus cannot be read or any host is down.\n\nFlags:\n")
	fl := &fleetFlags{}
	fl.promURL = fs.String("prometheus", "", "Prometheus's `URL` (http://prometheus:9090) whose targets include vramtop serve or dcgm-exporter")
	fl.once = fs.Bool("once", false, "print the fleet once as a table and exit")
	fl.asJSON = fs.Bool("json", false, "with --once: print one JSON document (the shape of vramtop --once --json, docs/schema/snapshot.schema.json; each device has a hostname)")
	fl.interval = fs.Duration("interval", defaultFleetInterval, "how often to ask Prometheus (1s at the fastest)")
	fl.history = fs.Duration("history", sampler.DefaultHistory, "how much history to read back and keep for the sparklines")
	fl.timeout = fs.Duration("timeout", 10*time.Second, "how long one round of queries to Prometheus may take (--once ends within it)")
	fl.th.add(fs, "")
	fl.onAlert = fs.String("on-alert", "", viewOnAlertUsage+"; the JSON's hostname is the GPU's host")
	return fs, fl
}

func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := fleetFlagSet()
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	if *fl.promURL == "" {
		fmt.Fprintln(stderr, "vramtop fleet: --prometheus URL is required (e.g. --prometheus http://127.0.0.1:9090)")
		return exitUsage
	}
	u, err := prometheusURL(*fl.promURL)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return exitUsage
	}
	*fl.promURL = u
	if *fl.interval < minFleetInterval {
		fmt.Fprintf(stderr, "vramtop fleet: interval %v is below the minimum of %v\n", *fl.interval, minFleetInterval)
		return exitUsage
	}
	if !fl.th.valid(fs, stderr) {
		return exitUsage
	}
	if *fl.asJSON {
		*fl.once = true
	}
	if !*fl.once && !fullScreenOK(stdout, os.Getenv("TERM")) {
		*fl.once = true
	}
	cfg := fleet.Config{URL: *fl.promURL, Interval: *fl.interval, Timeout: *fl.timeout}
	if !*fl.once {
		// The list of hosts shows their devices; a host's processes are
		// read once it is opened. --once lists every host's.
		cfg.History, cfg.OpenHostProcesses = *fl.history, true
	}
	src, err := fleet.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return exitUsage
	}
	s, err := sampler.New(src, sampler.Config{Interval: *fl.interval, History: *fl.history})
	if err != nil {
		src.Close()
		fmt.Fprintf(stderr, "vramtop fleet: %v\n", err)
		return exitUsage
	}
	if *fl.once {
		onceIgnoresHook(stderr, "vramtop fleet", *fl.onAlert, "")
		src.WaitFirst(ctx)
		snap := s.Once()
		s.Close()
		if snap.Err != "" && len(snap.Devices) == 0 && !*fl.asJSON {
			// Nothing was read: the error, once, and no empty table.
			fmt.Fprintf(stderr, "vramtop fleet: %s\n", snap.Err)
			return 1
		}
		if !writeOutput(stdout, stderr, "vramtop fleet", func(w io.Writer) error {
			return writeSnapshot(w, snap, fl.th.Thresholds, *fl.asJSON)
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
	onAlerts, endHook := startViewHook(ctx, *fl.onAlert, "", "vramtop fleet")
	err = runLive(ctx, s, ls, ui.Options{
		Thresholds: fl.th.Thresholds,
		Version:    version,
		Title:      "vramtop fleet",
		User:       currentUser(),
		OnAlerts:   onAlerts,
		OpenHost:   src.SetOpenHost,
		Claim:      src.ClaimText,
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
