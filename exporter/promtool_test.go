package exporter

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
)

// promtool finds Prometheus's promtool: VRAMTOP_PROMTOOL, else PATH (Debian's
// prometheus package, which .ci/run installs, ships it). Under CI=true a
// missing promtool fails the test; elsewhere it skips.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VRAMTOP_PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("promtool not found (set VRAMTOP_PROMTOOL or install Debian's prometheus package)")
	}
	t.Skip("promtool not found (VRAMTOP_PROMTOOL or PATH)")
	return ""
}

// `promtool check metrics` finds nothing to say about the page of
// `serve --demo` (every device, process, alert and claim family) outside the
// DCGM_* families, whose label names (modelName) are dcgm-exporter's.
func TestPromtoolCheckMetrics(t *testing.T) {
	tool := promtool(t)
	start := time.Date(2026, 3, 14, 2, 0, 0, 0, time.UTC)
	now := start
	smp, err := sampler.New(demo.New(start), sampler.Config{Interval: time.Second, History: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var snap sampler.Snapshot
	for i := 0; i <= 600; i++ {
		now = start.Add(time.Duration(i) * time.Second)
		if s, ok := smp.Tick(now); ok {
			snap = s
		}
	}
	held := map[string]claims.Claim{snap.Devices[0].UUID: {UUID: snap.Devices[0].UUID, User: "alice", PID: 4121, Bytes: 40 << 30, Time: now}}
	c := New(func() (sampler.Snapshot, bool) { return snap, true },
		Options{Version: "test", Monitor: advisor.NewMonitor(advisor.Config{}), Now: func() time.Time { return now },
			Claims: func() (map[string]claims.Claim, uint64) { return held, 1 }})
	page := c.Page(nil)
	for _, fam := range []string{metricname.DCGMFBUsed, metricname.DCGMSMClock, metricname.DCGMMemClock, metricname.MemoryUsed, metricname.ProcessMemory, metricname.Alert, metricname.Claimed, metricname.ClaimedBytes} {
		if !bytes.Contains(page, []byte("\n"+fam+"{")) {
			t.Fatalf("the demo's page has no %s series:\n%s", fam, page)
		}
	}
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	var findings []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.HasPrefix(l, "DCGM_") {
			findings = append(findings, l)
		}
	}
	if len(findings) > 0 {
		t.Errorf("promtool check metrics: %d findings outside the DCGM_* families (exit %v):\n%s", len(findings), err, strings.Join(findings, "\n"))
	}
}
