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
	// Whether the demo reports temperature, power and utilization.
	hasTemp, hasPower, hasUtil bool
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
				r = demoRange{total: m.Total, minUsed: m.Used, maxUsed: m.Used, hasReserved: m.HasReserved,
					hasTemp: m.HasTemp, hasPower: m.HasPower, hasUtil: m.HasUtil}
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
	procs := map[string]*promtest.Proc{}
	for _, h := range hosts {
		addr := promtest.FreeAddr(t)
		args := []string{vramtop, "serve", "--demo", "--hostname", h, "--listen", addr, "--interval", "500ms"}
		if h == "hostB" {
			// hostB exports the largest process of each GPU alone.
			args = append(args, "--max-process-series", "1")
		}
		p := promtest.Start(t, "vramtop serve "+h, args...)
		promtest.WaitFor(t, 20*time.Second, "exporter "+h+" healthy", func() (bool, string) {
			if p.Exited() {
				t.Fatalf("exporter %s exited:\n%s", h, p.Output())
			}
			code, body := promtest.Get("http://" + addr + "/healthz")
			return code == http.StatusOK, fmt.Sprint(code, " ", body)
		})
		targets = append(targets, addr)
		procs[h] = p
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
		res, err := client.Query(ctx, "count by (hostname) (vramtop_gpu_memory_total_bytes)")
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
		// hostB's processes past the largest of each GPU are counted as
		// omitted, with their memory.
		omitted := 0
		for id, d := range got {
			switch {
			case h == "hostA" && d.OmittedProcesses > 0:
				t.Errorf("%s:%s: %d processes omitted, with every process exported", h, id, d.OmittedProcesses)
			case d.OmittedProcesses > 0:
				omitted += d.OmittedProcesses
				if (d.OmittedBytes != nil) != exp[id].hasUnattributed {
					t.Errorf("%s:%s: the omitted processes' memory known %v, the host knows its unattributed memory: %v",
						h, id, d.OmittedBytes != nil, exp[id].hasUnattributed)
				}
			}
			if h == "hostB" && len(d.Processes) > 1 {
				t.Errorf("%s:%s: %d processes listed, the exporter exports 1", h, id, len(d.Processes))
			}
		}
		if h == "hostB" && omitted == 0 {
			t.Errorf("%s: no processes counted as omitted (--max-process-series 1)", h)
		}
		// serve exports temperature and power under dcgm-exporter's
		// names, and the fleet reads them back.
		temps := 0
		for id, d := range got {
			want := exp[id]
			if (d.TemperatureC != nil) != want.hasTemp || (d.PowerWatts != nil) != want.hasPower || (d.UtilizationPercent != nil) != want.hasUtil {
				t.Errorf("%s:%s: temperature %v, power %v, utilization %v known; the demo's %v, %v, %v", h, id,
					d.TemperatureC != nil, d.PowerWatts != nil, d.UtilizationPercent != nil, want.hasTemp, want.hasPower, want.hasUtil)
			}
			if d.TemperatureC != nil {
				temps++
			}
		}
		if temps == 0 {
			t.Errorf("%s: no device with a temperature", h)
		}
	}

	// hostB's exporter dies: Prometheus marks its target down, and the
	// fleet still lists hostB, marked down, with its last values, and
	// --once exits 1.
	procs["hostB"].Kill()
	killed := time.Now()
	promtest.WaitFor(t, 30*time.Second, "hostB's target down", func() (bool, string) {
		n, err := prom.TargetsUp()
		return err == nil && n == 1, fmt.Sprintf("%d up, %v", n, err)
	})
	stdout.Reset()
	stderr.Reset()
	cmd = exec.CommandContext(ctx, vramtop, "fleet", "--prometheus", prom.URL, "--once", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("vramtop fleet with hostB down: %v, want exit status 1\n%s", err, stderr.String())
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "vramtop fleet: 1 of 2 hosts down: hostB" {
		t.Errorf("stderr %q, want the down host named", msg)
	}
	snap = sampler.Snapshot{}
	if err := json.Unmarshal(stdout.Bytes(), &snap); err != nil {
		t.Fatalf("fleet JSON: %v\n%s", err, stdout.String())
	}
	downs := 0
	for _, d := range snap.Devices {
		switch d.Hostname {
		case "hostA":
			if d.Err != "" {
				t.Errorf("%s: error %q on the live host", d.ID, d.Err)
			}
		case "hostB":
			downs++
			if !fleet.IsHostDown(d) || !strings.Contains(d.Err, "exporter not answering since") {
				t.Errorf("%s: error %q, want it marked down", d.ID, d.Err)
			}
			want := exp[strings.TrimPrefix(d.ID, "hostB:")]
			if d.MemoryTotal != want.total || d.MemoryUsed < want.minUsed || d.MemoryUsed > want.maxUsed {
				t.Errorf("%s: total %d used %d, want its last values (total %d, used in [%d, %d])", d.ID, d.MemoryTotal, d.MemoryUsed, want.total, want.minUsed, want.maxUsed)
			}
			// "since 15:04:05": the last sample, within the 5 s of the
			// look-back's step of the kill.
			_, when, _ := strings.Cut(d.Err, "since ")
			at, perr := time.ParseInLocation("15:04:05", strings.Fields(when)[0], time.Local)
			if perr != nil {
				t.Errorf("%s: no time in %q: %v", d.ID, d.Err, perr)
				continue
			}
			k := killed.Local()
			at = time.Date(k.Year(), k.Month(), k.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.Local)
			if at.After(k.Add(time.Second)) || at.Before(k.Add(-10*time.Second)) {
				t.Errorf("%s: down since %v, the exporter was killed at %v", d.ID, at.Format(time.TimeOnly), k.Format(time.TimeOnly))
			}
		}
	}
	if downs != len(exp) {
		t.Errorf("%d devices of hostB listed after its exporter died, want %d", downs, len(exp))
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
