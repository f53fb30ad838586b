package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/fleet/internal/promtest"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// demoRange is what the demo shows for each device over its first
// minutes: the total, and the least and most used memory.
type demoRange struct {
	total            uint64
	minUsed, maxUsed uint64
	hasReserved      bool
	// hasUnattributed: whether vramtop on the host itself can say how much
	// memory no process accounts for (not when a process's is unknown).
	hasUnattributed bool
}

func demoExpectations(t *testing.T, span time.Duration) map[string]demoRange {
	t.Helper()
	// vramtop serve --demo starts the demo demo.Lead into its story.
	start := time.Now().Add(-demo.Lead)
	d := demo.New(start)
	info := d.Info()
	out := make([]sampler.MemSample, len(info.Devices))
	exp := map[string]demoRange{}
	for dt := demo.Lead; dt <= demo.Lead+span; dt += 250 * time.Millisecond {
		if err := d.ReadMemory(start.Add(dt), out); err != nil {
			t.Fatal(err)
		}
		for i, di := range info.Devices {
			id := fmt.Sprint(di.Index)
			if di.MIG != nil {
				id = fmt.Sprintf("%d/%d", di.MIG.ParentIndex, di.MIG.GPUInstanceID)
			}
			m := out[i]
			r, ok := exp[id]
			if !ok {
				r = demoRange{total: m.Total, minUsed: m.Used, maxUsed: m.Used, hasReserved: m.HasReserved}
			}
			r.minUsed, r.maxUsed = min(r.minUsed, m.Used), max(r.maxUsed, m.Used)
			exp[id] = r
		}
	}
	s, err := sampler.New(demo.New(start), sampler.Config{Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Once().Devices {
		r := exp[d.ID]
		r.hasUnattributed = d.Unattributed != nil
		exp[d.ID] = r
	}
	return exp
}

// TestFleetAgainstPrometheus runs the whole path for real: two `vramtop
// serve --demo` exporters, a Prometheus scraping them every second, and
// `vramtop fleet --once --json` reading both hosts back.
func TestFleetAgainstPrometheus(t *testing.T) {
	promBin := promtest.Binary(t)
	if testing.Short() {
		t.Skip("starts Prometheus and two exporters")
	}
	vramtop := testbin.Build(t)

	hosts := []string{"hostA", "hostB"}
	var targets []string
	for _, h := range hosts {
		addr := promtest.FreeAddr(t)
		p := promtest.Start(t, "vramtop serve "+h, vramtop, "serve", "--demo", "--hostname", h, "--listen", addr, "--interval", "500ms")
		promtest.WaitFor(t, 20*time.Second, "exporter "+h+" healthy", func() (bool, string) {
			if p.Exited() {
				t.Fatalf("exporter %s exited:\n%s", h, p.Output())
			}
			code, body := promtest.Get("http://" + addr + "/healthz")
			return code == http.StatusOK, fmt.Sprint(code, " ", body)
		})
		targets = append(targets, addr)
	}
	start := time.Now()

	prom := promtest.StartPrometheus(t, promBin, time.Second, targets...)
	promtest.WaitFor(t, 30*time.Second, "both targets up", func() (bool, string) {
		n, err := prom.TargetsUp()
		return err == nil && n == len(hosts), fmt.Sprintf("%d up, %v", n, err)
	})
	// The targets are up once scraped; wait until the samples are queryable.
	client, err := fleet.NewClient(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	promtest.WaitFor(t, 30*time.Second, "both hosts' series in Prometheus", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := client.Query(ctx, "count by (Hostname) (vramtop_gpu_memory_total_bytes)")
		return err == nil && len(res) == len(hosts), fmt.Sprintf("%d hosts, %v", len(res), err)
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, vramtop, "fleet", "--prometheus", prom.URL, "--once", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vramtop fleet: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	elapsed := time.Since(start)

	var snap sampler.Snapshot
	if err := json.Unmarshal(stdout.Bytes(), &snap); err != nil {
		t.Fatalf("fleet JSON: %v\n%s", err, stdout.String())
	}
	if snap.Source != "fleet" || snap.Err != "" {
		t.Errorf("source %q, error %q", snap.Source, snap.Err)
	}

	// The demo's numbers, over more than the time the exporters have run.
	exp := demoExpectations(t, elapsed+time.Minute)
	for _, h := range hosts {
		got := map[string]sampler.Device{}
		procs := 0
		for _, d := range snap.Devices {
			if d.Hostname == h {
				got[strings.TrimPrefix(d.ID, h+":")] = d
				procs += len(d.Processes)
			}
		}
		if len(got) != len(exp) {
			t.Errorf("%s: %d devices in the fleet, the demo has %d", h, len(got), len(exp))
		}
		for id, want := range exp {
			d, ok := got[id]
			if !ok {
				t.Errorf("%s: device %s missing", h, id)
				continue
			}
			if d.MemoryTotal != want.total {
				t.Errorf("%s:%s: memory_total %d, the demo's is %d", h, id, d.MemoryTotal, want.total)
			}
			if d.MemoryUsed < want.minUsed || d.MemoryUsed > want.maxUsed {
				t.Errorf("%s:%s: memory_used %d outside the demo's [%d, %d]", h, id, d.MemoryUsed, want.minUsed, want.maxUsed)
			}
			if (d.Unattributed != nil) != want.hasUnattributed {
				t.Errorf("%s:%s: unattributed known %v, on the host %v", h, id, d.Unattributed != nil, want.hasUnattributed)
			}
			if (d.MemoryReserved != nil) != want.hasReserved {
				t.Errorf("%s:%s: reserved present %v, the demo's %v", h, id, d.MemoryReserved != nil, want.hasReserved)
			}
		}
		if procs == 0 {
			t.Errorf("%s: no processes reported", h)
		}
	}
}

// TestFleetCommandPrometheusDown: with nothing listening, `vramtop fleet
// --once --json` still prints the document, with the error, and exits 1.
func TestFleetCommandPrometheusDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs vramtop")
	}
	vramtop := testbin.Build(t)
	url := "http://" + promtest.FreeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, vramtop, "fleet", "--prometheus", url, "--once", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("vramtop fleet with Prometheus down: %v, want exit status 1\n%s", err, stderr.String())
	}
	var snap sampler.Snapshot
	if err := json.Unmarshal(stdout.Bytes(), &snap); err != nil {
		t.Fatalf("no JSON document: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(snap.Err, "connection refused") || len(snap.Devices) != 0 {
		t.Errorf("error %q with %d devices, want connection refused and none", snap.Err, len(snap.Devices))
	}
	if msg := strings.TrimSpace(stderr.String()); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "connection refused") {
		t.Errorf("stderr %q, want one line with the cause", msg)
	}
}
