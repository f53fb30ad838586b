package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/nvmlsource"
)

func TestMain(m *testing.M) {
	if code, ok := holderMain(); ok {
		os.Exit(code) // a claim's holder, started by a pick or wait of a test
	}
	// No test claims a GPU in the directory every user shares.
	dir, err := os.MkdirTemp("", "vramtop-claims-test")
	if err != nil {
		panic(err)
	}
	os.Setenv(claims.EnvDir, dir)
	// Nor keeps its runs in the user's history.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	code := testbin.Run(m)
	endHolders(dir)
	os.RemoveAll(dir)
	os.Exit(code)
}

func vramtop(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(testbin.Build(t), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run vramtop: %v", err)
	}
	return o.String(), e.String(), code
}

// The release build injects the version through the ldflags in
// .goreleaser.yaml; building with exactly those flags must make --version
// print it, and the build must print no C warnings.
func TestReleaseVersionInjection(t *testing.T) {
	cfg, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-X ([\w./-]+)=\{\{\s*\.Version\s*\}\}`).FindSubmatch(cfg)
	if m == nil {
		t.Fatal(".goreleaser.yaml injects no -X ...={{.Version}}")
	}
	path := filepath.Join(t.TempDir(), "vramtop")
	out := testbin.BuildWith(t, path, "-ldflags", "-X "+string(m[1])+"=9.8.7-test -extldflags=-Wl,-z,lazy")
	if strings.Contains(strings.ToLower(out), "warning") {
		t.Errorf("the build printed warnings:\n%s", out)
	}
	got, err := exec.Command(path, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != "vramtop 9.8.7-test" {
		t.Errorf("--version printed %q, want %q", got, "vramtop 9.8.7-test")
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--warn", "95", "--crit", "90", "--demo", "--once"},
		{"--interval", "10ms", "--demo", "--once"},
		{"no-such-command"},
		{"--demo", "--once", "extra"},
	} {
		_, stderr, code := vramtop(t, args...)
		if code != 2 {
			t.Errorf("vramtop %v: exit %d, want 2", args, code)
		}
		if strings.Contains(stderr, "goroutine ") || stderr == "" {
			t.Errorf("vramtop %v: want a short error, got %q", args, stderr)
		}
	}
}

// Without the NVIDIA driver, vramtop names the missing library, suggests the
// demo and exits 2, in one line.
func TestNoDriverMessage(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	if !nvmlsource.Supported {
		t.Skip("built without NVML: TestBuildWithoutCgo checks that message")
	}
	_, stderr, code := vramtop(t, "--once")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
	}
	if !strings.Contains(stderr, "libnvidia-ml.so.1") || !strings.Contains(stderr, "--demo") {
		t.Errorf("stderr %q should name libnvidia-ml.so.1 and suggest --demo", stderr)
	}
	if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
		t.Errorf("want one line, got %d:\n%s", n+1, stderr)
	}
}

func TestOnceJSONDemo(t *testing.T) {
	stdout, stderr, code := vramtop(t, "--demo", "--once", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Time     string `json:"time"`
		Hostname string `json:"hostname"`
		Driver   string `json:"driver_version"`
		Demo     bool   `json:"demo"`
		Devices  []struct {
			Index     *int    `json:"index"`
			Name      string  `json:"name"`
			UUID      string  `json:"uuid"`
			Total     *uint64 `json:"memory_total_bytes"`
			Used      *uint64 `json:"memory_used_bytes"`
			Free      *uint64 `json:"memory_free_bytes"`
			Reserved  *uint64 `json:"memory_reserved_bytes"`
			Processes []struct {
				PID  uint32  `json:"pid"`
				User string  `json:"user"`
				Cmd  string  `json:"command"`
				Used *uint64 `json:"used_bytes"`
				Type string  `json:"type"`
			} `json:"processes"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if !doc.Demo || doc.Time == "" || doc.Hostname == "" || doc.Driver == "" {
		t.Errorf("header fields missing or not marked demo: %+v", doc)
	}
	if len(doc.Devices) < 4 {
		t.Fatalf("demo has %d devices, want at least 4", len(doc.Devices))
	}
	procs, noReserved := 0, 0
	for _, d := range doc.Devices {
		if d.Index == nil || d.Name == "" || d.Total == nil || d.Used == nil || d.Free == nil {
			t.Errorf("device fields missing: %+v", d)
			continue
		}
		if *d.Used > *d.Total || *d.Free > *d.Total {
			t.Errorf("device %d: used %d / free %d over total %d", *d.Index, *d.Used, *d.Free, *d.Total)
		}
		if d.Reserved == nil {
			noReserved++
		}
		procs += len(d.Processes)
	}
	if procs == 0 {
		t.Error("no processes in the demo")
	}
	if noReserved == 0 {
		t.Error("the demo's v1-only device should omit memory_reserved_bytes")
	}
	if strings.Contains(stdout, "18446744073709551615") {
		t.Error("an unavailable value leaked as 2^64-1")
	}
}

// --once and --once --json carry the alerts in force, with their rule,
// severity, device, process and message: the demo's GPU 0 is over the
// warning line, and both outputs say so.
func TestOnceCarriesAlerts(t *testing.T) {
	stdout, stderr, code := vramtop(t, "--demo", "--once", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Alerts []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			Device   string `json:"device_id"`
			PID      uint32 `json:"pid"`
			Message  string `json:"message"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	var threshold string
	for _, a := range doc.Alerts {
		if a.Rule == "threshold" && a.Device == "0" && a.Severity == "warn" {
			threshold = a.Message
		}
	}
	if threshold == "" {
		t.Fatalf("no threshold warning on GPU 0 in the JSON's alerts: %+v", doc.Alerts)
	}
	table, stderr, code := vramtop(t, "--demo", "--once")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	found := false
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[0] == "WARN" && f[1] == "threshold" && f[2] == "0" && strings.Contains(l, "GPU 0 at ") {
			found = true
		}
	}
	if !strings.Contains(table, "SEVERITY") || !found {
		t.Errorf("the --once table has no line for GPU 0's threshold warning (%q):\n%s", threshold, table)
	}
}
