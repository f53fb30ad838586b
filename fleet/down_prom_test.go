package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/fleet/internal/promtest"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
)

// startExporter runs `vramtop serve --demo` as host on addr and waits
// until it answers.
func startExporter(t *testing.T, vramtop, host, addr string) *promtest.Proc {
	t.Helper()
	p := promtest.Start(t, "vramtop serve "+host, vramtop, "serve", "--demo", "--hostname", host, "--listen", addr, "--interval", "500ms")
	promtest.WaitFor(t, 20*time.Second, "exporter "+host+" healthy", func() (bool, string) {
		if p.Exited() {
			t.Fatalf("exporter %s exited:\n%s", host, p.Output())
		}
		code, body := promtest.Get("http://" + addr + "/healthz")
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	})
	return p
}

// liveFleet is a fleet view as the fleet command runs it: the source and
// a sampler over it, ticked by hand on the real clock.
type liveFleet struct {
	src *fleet.Source
	s   *sampler.Sampler
}

func (f liveFleet) tick(t *testing.T) sampler.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.src.Refresh(ctx)
	snap, _ := f.s.Tick(time.Now())
	return snap
}

// hostDevices are the devices of host in snap, by ID.
func hostDevices(snap sampler.Snapshot, host string) map[string]sampler.Device {
	out := map[string]sampler.Device{}
	for _, d := range snap.Devices {
		if d.Hostname == host {
			out[d.ID] = d
		}
	}
	return out
}

func procUsed(d sampler.Device) uint64 {
	var n uint64
	for _, p := range d.Processes {
		if p.UsedBytes != nil && !p.Exited {
			n += *p.UsedBytes
		}
	}
	return n
}

// checkDownDevice checks a device of a host that is down: its last
// values, processes (none exited, each one listed once, all among those
// seen while it was live), temperature and power where the demo has
// them, the memory its processes hold not counted as unattributed, and
// the list's age.
func checkDownDevice(t *testing.T, where string, snap sampler.Snapshot, d sampler.Device, want demoRange, seenPIDs map[string]map[uint32]bool) {
	t.Helper()
	if !fleet.IsHostDown(d) {
		t.Errorf("%s %s: error %q, want it marked down", where, d.ID, d.Err)
	}
	if d.MemoryTotal != want.total || d.MemoryUsed < want.minUsed || d.MemoryUsed > want.maxUsed {
		t.Errorf("%s %s: total %d used %d, want its last values", where, d.ID, d.MemoryTotal, d.MemoryUsed)
	}
	if (d.TemperatureC != nil) != want.hasTemp || (d.PowerWatts != nil) != want.hasPower || (d.UtilizationPercent != nil) != want.hasUtil {
		t.Errorf("%s %s: temperature %v, power %v, utilization %v known; the host's %v, %v, %v", where, d.ID,
			d.TemperatureC != nil, d.PowerWatts != nil, d.UtilizationPercent != nil, want.hasTemp, want.hasPower, want.hasUtil)
	}
	if len(d.Processes) == 0 && len(seenPIDs[d.ID]) > 0 {
		t.Errorf("%s %s: no processes, the host listed %d", where, d.ID, len(seenPIDs[d.ID]))
	}
	pids := map[uint32]int{}
	for _, p := range d.Processes {
		pids[p.PID]++
		if p.Exited {
			t.Errorf("%s %s: PID %d shown exited; the host is down, not its processes", where, d.ID, p.PID)
		}
		if !seenPIDs[d.ID][p.PID] {
			t.Errorf("%s %s: PID %d was never listed by the host", where, d.ID, p.PID)
		}
	}
	for pid, n := range pids {
		if n > 1 {
			t.Errorf("%s %s: PID %d listed %d times", where, d.ID, pid, n)
		}
	}
	// (The exporter's process figures can be a poll older than its used
	// memory, so they may add up to more than it.)
	if u := procUsed(d); u > 0 && (d.Unattributed == nil || *d.Unattributed != d.MemoryUsed-min(u, d.MemoryUsed)) {
		t.Errorf("%s %s: unattributed %v of %d used, with %d held by its processes", where, d.ID, d.Unattributed, d.MemoryUsed, u)
	}
	if d.ListedAt.IsZero() || snap.Time.Sub(d.ListedAt) < 2*time.Second {
		t.Errorf("%s %s: processes listed at %v, the snapshot is of %v: want their age shown", where, d.ID, d.ListedAt, snap.Time)
	}
}

// TestFleetHostDownShowsLastProcesses: hostB's exporter dies while a
// fleet view watches, with a real Prometheus between them. hostB's GPUs
// keep their last values, temperature and power included, and their last
// processes, none of them exited, their memory not unattributed, with the
// list's age; its alerts stay, marked last known. A fleet --once --json
// started after the outage shows the same. When the exporter comes back,
// each process is listed once.
func TestFleetHostDownShowsLastProcesses(t *testing.T) {
	promBin := promtest.Binary(t)
	if testing.Short() {
		t.Skip("starts Prometheus and two exporters")
	}
	vramtop := testbin.Build(t)
	addrA, addrB := promtest.FreeAddr(t), promtest.FreeAddr(t)
	startExporter(t, vramtop, "hostA", addrA)
	expB := startExporter(t, vramtop, "hostB", addrB)
	prom := promtest.StartPrometheus(t, promBin, time.Second, addrA, addrB)
	client, err := fleet.NewClient(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	promtest.WaitFor(t, 30*time.Second, "both hosts' processes in Prometheus", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := client.Query(ctx, "count by (hostname) (vramtop_process_gpu_memory_bytes)")
		return err == nil && len(res) == 2, fmt.Sprintf("%d hosts, %v", len(res), err)
	})
	exp := demoExpectations(t, 3*time.Minute)

	src, err := fleet.Open(context.Background(), fleet.Config{URL: prom.URL, Interval: time.Hour, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.WaitFirst(context.Background())
	s, err := sampler.New(src, sampler.Config{Interval: time.Second, History: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := liveFleet{src, s}

	// While hostB is live: the PIDs it lists, and the alerts it exports.
	seenPIDs := map[string]map[uint32]bool{}
	var snap sampler.Snapshot
	for range 3 {
		snap = f.tick(t)
		for id, d := range hostDevices(snap, "hostB") {
			if seenPIDs[id] == nil {
				seenPIDs[id] = map[uint32]bool{}
			}
			for _, p := range d.Processes {
				seenPIDs[id][p.PID] = true
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(hostDevices(snap, "hostB")) != len(exp) {
		t.Fatalf("hostB: %d devices, the demo has %d", len(hostDevices(snap, "hostB")), len(exp))
	}

	expB.Kill()
	promtest.WaitFor(t, 30*time.Second, "hostB's target down", func() (bool, string) {
		n, err := prom.TargetsUp()
		return err == nil && n == 1, fmt.Sprintf("%d up, %v", n, err)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exported, err := client.Query(ctx, `last_over_time(vramtop_alert{hostname="hostB"}[1m]) == 1`)
	if err != nil {
		t.Fatal(err)
	}
	// Three rounds with hostB down, the last one more than 2 s after it was
	// last seen.
	for range 3 {
		time.Sleep(time.Second)
		snap = f.tick(t)
	}
	for id, d := range hostDevices(snap, "hostB") {
		checkDownDevice(t, "live view", snap, d, exp[strings.TrimPrefix(id, "hostB:")], seenPIDs)
	}
	checkLastAlerts(t, "live view", advisor.NewMonitor(advisor.Config{Thresholds: advisor.DefaultThresholds()}).Observe(snap), exported)

	// A fleet started after the outage.
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, vramtop, "fleet", "--prometheus", prom.URL, "--once", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Errorf("fleet --once --json with hostB down exited 0")
	}
	var doc struct {
		sampler.Snapshot
		Alerts []advisor.Alert `json:"alerts"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("fleet JSON: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	devs := hostDevices(doc.Snapshot, "hostB")
	if len(devs) != len(exp) {
		t.Errorf("fleet --once --json: %d devices of hostB, the demo has %d", len(devs), len(exp))
	}
	for id, d := range devs {
		checkDownDevice(t, "fleet --once --json", doc.Snapshot, d, exp[strings.TrimPrefix(id, "hostB:")], seenPIDs)
	}
	checkLastAlerts(t, "fleet --once --json", doc.Alerts, exported)

	// hostB's exporter comes back.
	startExporter(t, vramtop, "hostB", addrB)
	promtest.WaitFor(t, 30*time.Second, "hostB live again in the fleet", func() (bool, string) {
		snap = f.tick(t)
		for _, d := range hostDevices(snap, "hostB") {
			if d.Err != "" {
				return false, d.ID + ": " + d.Err
			}
		}
		return true, ""
	})
	for id, d := range hostDevices(snap, "hostB") {
		pids := map[uint32]int{}
		for _, p := range d.Processes {
			pids[p.PID]++
		}
		for pid, n := range pids {
			if n > 1 {
				t.Errorf("after recovery %s: PID %d listed %d times", id, pid, n)
			}
		}
	}
}

// checkLastAlerts: each alert hostB exported before it went down is among
// alerts, and those that only its exporter reported say they are its last
// known ones.
func checkLastAlerts(t *testing.T, where string, alerts []advisor.Alert, exported []fleet.Sample) {
	t.Helper()
	for _, e := range exported {
		dev := "hostB:" + e.Metric.Get("gpu")
		if gi := e.Metric.Get("GPU_I_ID"); gi != "" {
			dev += "/" + gi
		}
		rule, pid := e.Metric.Get("rule"), e.Metric.Get("pid")
		i := slices.IndexFunc(alerts, func(a advisor.Alert) bool {
			return a.DeviceID == dev && a.Rule == rule && (pid == "" && a.PID == 0 || pid == fmt.Sprint(a.PID))
		})
		if i < 0 {
			t.Errorf("%s: hostB's %s alert on %s (pid %q) is gone with the host", where, rule, dev, pid)
			continue
		}
		if m := alerts[i].Message; strings.Contains(m, "vramtop reports") && !strings.Contains(m, "last known") {
			t.Errorf("%s: hostB's %s alert on %s: %q, not marked as its last known", where, rule, dev, m)
		}
	}
}
