package usage_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/usage"
)

// prometheusWith starts Debian's prometheus (VRAMTOP_PROMETHEUS) on a
// loopback port over a TSDB backfilled from the OpenMetrics text om with
// promtool (beside it), and returns its URL. It skips where the binary is
// not named, outside CI.
func prometheusWith(t *testing.T, om string) string {
	t.Helper()
	bin := os.Getenv("VRAMTOP_PROMETHEUS")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but VRAMTOP_PROMETHEUS is not set")
		}
		t.Skip("VRAMTOP_PROMETHEUS is not set (the path of a prometheus binary)")
	}
	promtool := filepath.Join(filepath.Dir(bin), "promtool")
	if _, err := os.Stat(promtool); err != nil {
		if promtool, err = exec.LookPath("promtool"); err != nil {
			t.Skip("no promtool beside " + bin)
		}
	}
	dir := t.TempDir()
	src, data := filepath.Join(dir, "history.om"), filepath.Join(dir, "data")
	os.WriteFile(src, []byte(om), 0o644)
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", src, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.listen-address="+addr,
		"--storage.tsdb.retention.time=100y")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30 s:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestUsageFromPrometheusMatchesIntegral: the series vramtop serve
// exports, as Prometheus keeps them, are accounted as the integral of
// what they held. Two hosts: on node-a alice (Slurm job 77) holds 10 GiB
// of GPU 0 (at 50%) for the whole window; on node-b bob (a pod) holds
// 4 GiB of GPU 1 (at 0%: idle) for its first 30 minutes, then nothing.
func TestUsageFromPrometheusMatchesIntegral(t *testing.T) {
	// Whole hours, well in the past: backfilled blocks are of 2 hours.
	t0 := time.Now().Add(-6 * time.Hour).Truncate(time.Hour)
	var b strings.Builder
	family := func(name string, series map[string]func(el time.Duration) (float64, bool)) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for labels, f := range series {
			for el := -10 * time.Minute; el <= 70*time.Minute; el += time.Minute {
				if v, ok := f(el); ok {
					fmt.Fprintf(&b, "%s{%s} %g %d\n", name, labels, v, t0.Add(el).Unix())
				}
			}
		}
	}
	always := func(v float64) func(time.Duration) (float64, bool) {
		return func(time.Duration) (float64, bool) { return v, true }
	}
	devA, devB := `gpu="0",hostname="node-a"`, `gpu="1",hostname="node-b"`
	family("vramtop_gpu_memory_total_bytes", map[string]func(time.Duration) (float64, bool){devA: always(80 * gib), devB: always(80 * gib)})
	bob := func(el time.Duration) (float64, bool) {
		if el >= 0 && el < 30*time.Minute {
			return 4 * gib, true
		}
		// Zero, not absent: a backfilled series has no staleness
		// marker, so Prometheus would carry its last value 5 minutes on.
		return 0, true
	}
	family("vramtop_gpu_memory_used_bytes", map[string]func(time.Duration) (float64, bool){devA: always(10 * gib), devB: bob})
	family("vramtop_gpu_utilization_ratio", map[string]func(time.Duration) (float64, bool){devA: always(0.5), devB: always(0)})
	family("vramtop_process_gpu_memory_bytes", map[string]func(time.Duration) (float64, bool){
		devA + `,hpc_job="77",pid="100",type="compute",user="alice"`:                                 always(10 * gib),
		devB + `,pid="200",pod_uid="7c0e2f4a-91d3-4b6e-a8f5-3d2c1b0e9f87",type="compute",user="bob"`: bob,
	})
	b.WriteString("# EOF\n")
	url := prometheusWith(t, b.String())

	a := usage.New(usage.Options{Since: t0, Until: t0.Add(time.Hour)})
	if err := usage.AddPrometheus(context.Background(), a, usage.PromOptions{URL: url, Since: t0, Until: t0.Add(time.Hour), Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	rep := a.Report()
	users := map[string]usage.UserRow{}
	for _, u := range rep.Users {
		users[u.User] = u
	}
	// At a step of a minute, within one step of the holdings.
	const tol = 1.0 / 60
	near(t, "alice GiB-hours", users["alice"].GiBHours, 10, 10*tol)
	near(t, "alice GPU-hours", users["alice"].GPUHours, 1, tol)
	near(t, "alice idle", users["alice"].IdleGPUHours, 0, 0)
	near(t, "bob GiB-hours", users["bob"].GiBHours, 2, 4*tol)
	near(t, "bob GPU-hours", users["bob"].GPUHours, 0.5, tol)
	near(t, "bob idle", users["bob"].IdleGPUHours, 0.5, tol)
	near(t, "capacity", rep.Totals.CapacityGiBHours, 160, 160*tol)
	if users["alice"].PeakBytes != 10*gib || users["bob"].PeakBytes != 4*gib {
		t.Errorf("peaks alice %d bob %d", users["alice"].PeakBytes, users["bob"].PeakBytes)
	}
	if strings.Join(rep.Hosts, ",") != "node-a,node-b" {
		t.Errorf("hosts %v", rep.Hosts)
	}
	jobs := map[string]string{}
	for _, j := range rep.Jobs {
		jobs[j.Job] = j.User
	}
	if jobs["slurm 77"] != "alice" || jobs["pod 7c0e2f4a"] != "bob" {
		t.Errorf("jobs %v, want alice's slurm 77 and bob's pod", jobs)
	}

	// A window with nothing in it says so.
	a = usage.New(usage.Options{})
	err := usage.AddPrometheus(context.Background(), a, usage.PromOptions{URL: url, Since: t0.Add(-48 * time.Hour), Until: t0.Add(-47 * time.Hour), Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "no vramtop_gpu_memory_total_bytes series") {
		t.Errorf("empty window: %v", err)
	}
}
