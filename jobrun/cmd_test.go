package jobrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/jobrun"
	"github.com/vramtop/vramtop/replay"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// vramtop builds the command once, for the tests that run it as a user
// would.
var vramtop = testbin.BuildUnlessShort

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// runWithin runs cmd, killing it after limit.
func runWithin(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err)
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("%v still running after %v", cmd.Args, limit)
	}
	return -1
}

const oomScript = `#!/bin/sh
echo "epoch 1"
sleep 1.2
cat >&2 <<'EOF'
[rank0]: Traceback (most recent call last):
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has 137.90 GiB memory in use. Of the allocated memory 135.20 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
EOF
exit 1
`

func TestRunOOMChildReport(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "train.sh")
	os.WriteFile(script, []byte(oomScript), 0o755)
	rec := filepath.Join(dir, "job.jsonl.gz")

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--demo", "--interval", "100ms", "--record", rec, "--", script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if code := runWithin(t, cmd, 30*time.Second); code != 1 {
		t.Errorf("exit status %d, want the child's 1; stderr:\n%s", code, stderr.String())
	}
	if stdout.String() != "epoch 1\n" {
		t.Errorf("the child's stdout came through as %q", stdout.String())
	}
	out := stderr.String()
	for _, want := range []string{
		"CUDA out of memory. Tried to allocate 4.00 GiB", // the child's own stderr, passed through
		"exited with status 1",
		"GPU 2 (NVIDIA H200",
		"job peak",
		"least headroom",
		"Out of memory, from the job's stderr",
		"expandable_segments:True",
		"┤",
		"recorded to " + rec,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// The recording made meanwhile replays, with the job on GPU 2.
	r, err := replay.Open(context.Background(), []string{rec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := 0; i < r.Len(); i++ {
		for _, p := range r.Snapshot(i).Devices[2].Processes {
			found = found || strings.Contains(p.Command, "train.sh")
		}
	}
	if !found {
		t.Error("the job is not in the recording")
	}
}

func TestRunReportJSON(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "train.sh")
	os.WriteFile(script, []byte(oomScript), 0o755)
	reportFile := filepath.Join(dir, "report.json")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--demo", "--interval", "100ms", "--report", "json", "--report-file", reportFile, "--", script)
	cmd.Stderr = &stderr
	if code := runWithin(t, cmd, 30*time.Second); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	data, err := os.ReadFile(reportFile)
	if err != nil {
		t.Fatal(err)
	}
	var r jobrun.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, data)
	}
	if r.ExitCode != 1 || len(r.GPUs) != 1 || r.GPUs[0].PeakBytes == 0 || r.OOM == nil || !r.OOM.Found || r.Timeline == nil {
		t.Errorf("report: %s", data)
	}
	if !strings.Contains(string(data), `"diagnosis"`) {
		t.Errorf("no diagnosis in the JSON report: %s", data)
	}
}

func TestRunForwardsSIGTERM(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "got")
	ready := filepath.Join(dir, "ready")
	for _, c := range []struct {
		name   string
		script string
		code   int
	}{
		// The child catches it and exits with its own status.
		{"caught", `trap 'echo TERM > ` + marker + `; exit 5' TERM; touch ` + ready + `; while :; do sleep 0.05; done`, 5},
		// The child dies of it: 128+15.
		{"uncaught", `touch ` + ready + `; exec sleep 30`, 128 + 15},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(ready)
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "run", "--demo", "--interval", "100ms", "--", "sh", "-c", c.script)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the child never started")
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGTERM) // to vramtop run, not the child
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if code := exitCode(err); code != c.code {
					t.Errorf("exit status %d, want %d; stderr:\n%s", code, c.code, stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatal("vramtop run still running 10 s after SIGTERM")
			}
			if c.name == "caught" {
				if b, _ := os.ReadFile(marker); string(b) != "TERM\n" {
					t.Errorf("the child did not get SIGTERM")
				}
			} else if !strings.Contains(stderr.String(), "was killed by SIGTERM") {
				t.Errorf("report: %s", stderr.String())
			}
		})
	}
}

func TestRunBadInput(t *testing.T) {
	bin := vramtop(t)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--demo", "--", "/nonexistent/cmd"}, 127, "no such file"},
		{[]string{"run", "--demo"}, 2, "name the command"},
		{[]string{"run", "--demo", "--report", "xml", "--", "true"}, 2, "--report"},
		{[]string{"run", "--demo", "--record", "/nonexistent/dir/x.jsonl", "--", "true"}, 1, "no such file"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if code := exitCode(err); code != c.code || len(lines) != 1 || !strings.Contains(string(out), c.msg) {
			t.Errorf("vramtop %v: exit %d, output %q; want %d and one line about %q", c.args, code, out, c.code, c.msg)
		}
	}
}

// TestRunReportsAndEndsLeftovers: a job whose leader starts `sleep 60 &`
// and exits: the JSON report lists the sleep as left over (and, with
// --kill-leftovers, ended by SIGTERM); durations are seconds, empty lists
// are [].
func TestRunReportsAndEndsLeftovers(t *testing.T) {
	bin := vramtop(t)
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprint("kill=", kill), func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			report := filepath.Join(dir, "report.json")
			args := []string{"run", "--demo", "--report", "json", "--report-file", report, "--kill-grace", "2s"}
			if kill {
				args = append(args, "--kill-leftovers")
			}
			script := `sleep 60 >/dev/null 2>&1 & p=$!; while ! grep -q sleep /proc/$p/cmdline; do sleep 0.01; done; echo $p > ` + pidFile + `; sleep 0.5`
			cmd := exec.Command(bin, append(args, "--", "sh", "-c", script)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if code := runWithin(t, cmd, 30*time.Second); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			b, _ := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid > 0 {
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
			data, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				DurationSeconds *float64 `json:"duration_seconds"`
				PIDs            []int    `json:"pids"`
				Leftovers       []struct {
					PID     int    `json:"pid"`
					Command string `json:"command"`
					Ended   string `json:"ended"`
				} `json:"leftovers"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if r.DurationSeconds == nil || *r.DurationSeconds < 0.5 || *r.DurationSeconds > 20 {
				t.Errorf("duration_seconds %v, want the job's 0.5 s and a little", r.DurationSeconds)
			}
			if len(r.Leftovers) != 1 || r.Leftovers[0].PID != pid || r.Leftovers[0].Command != "sleep 60" {
				t.Fatalf("leftovers %+v, want the sleep %d", r.Leftovers, pid)
			}
			want := ""
			if kill {
				want = "SIGTERM"
			}
			if r.Leftovers[0].Ended != want {
				t.Errorf("ended %q, want %q", r.Leftovers[0].Ended, want)
			}
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			running := err == nil && !bytes.Contains(st, []byte(") Z "))
			if running == kill {
				t.Errorf("the sleep running: %v, with --kill-leftovers %v", running, kill)
			}
		})
	}
}

// TestLeftoverWritesOnAfterRun: a process the job leaves running that
// writes to stderr after vramtop run has exited is still alive after it,
// and its output reaches run's stderr (before, it died of SIGPIPE there).
func TestLeftoverWritesOnAfterRun(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	mark, errFile := filepath.Join(dir, "alive"), filepath.Join(dir, "stderr")
	ef, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	// The leftover writes once run has exited (the test says when, by
	// making the file go), not after a fixed sleep that a slow run could
	// outlast; it gives up after 30 s.
	goFile := filepath.Join(dir, "go")
	script := `(i=0; until [ -e ` + goFile + ` ] || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; echo late >&2; echo alive > ` + mark + `) >/dev/null & exit 0`
	cmd := exec.Command(bin, "run", "--demo", "--", "sh", "-c", script)
	cmd.Stderr = ef
	if code := runWithin(t, cmd, 30*time.Second); code != 0 {
		b, _ := os.ReadFile(errFile)
		t.Fatalf("exit %d: %s", code, b)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The late line goes through the process run left to copy the pipe:
	// it may reach the file a moment after the leftover made its mark.
	var b []byte
	deadline := time.Now().Add(15 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ = os.ReadFile(errFile)
		if _, err := os.Stat(mark); err == nil && strings.Contains(string(b), "late\n") {
			break
		}
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the leftover did not live past its write to stderr after run exited (stderr %q)", b)
	}
	if !strings.Contains(string(b), "late\n") {
		t.Errorf("stderr %q: want the leftover's late line", b)
	}
}

// vramtop run --demo reports the energy of the job's GPU from its counter,
// and the job's share of it: both match the power readings and process
// utilizations of the run's recording, integrated here by trapezoids.
func TestRunDemoEnergyMatchesIntegratedPower(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	rec, report := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "report.json")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--demo", "--interval", "100ms", "--record", rec, "--report", "json", "--report-file", report, "--", "sleep", "4")
	cmd.Stderr = &stderr
	if code := runWithin(t, cmd, 30*time.Second); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r jobrun.Report
	if err := json.Unmarshal(data, &r); err != nil || len(r.GPUs) != 1 {
		t.Fatalf("report: %v\n%s", err, data)
	}
	e := r.GPUs[0].Energy
	if e == nil || e.Method != "counter" || e.Seconds < 3 || e.JobShareBy != "utilization" || r.Energy == nil || r.Energy.Joules != e.Joules {
		t.Fatalf("GPU 2's energy: %s", data)
	}
	rp, err := replay.Open(context.Background(), []string{rec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := map[uint32]bool{}
	for _, p := range r.PIDs {
		job[uint32(p)] = true
	}
	var joules, jobJoules, lastW, lastShare float64
	var last time.Time
	for i := 0; i < rp.Len(); i++ {
		snap := rp.Snapshot(i)
		if snap.Time.Before(e.From) || snap.Time.After(e.To) {
			continue
		}
		d, _ := snap.Device("2")
		var ju, all float64
		for _, p := range d.Processes {
			if p.UtilizationPercent != nil && !p.Exited {
				all += *p.UtilizationPercent
				if job[p.PID] {
					ju += *p.UtilizationPercent
				}
			}
		}
		w, share := *d.PowerWatts, ju/all
		if !last.IsZero() {
			dt := snap.Time.Sub(last).Seconds()
			joules += (lastW + w) / 2 * dt
			jobJoules += (lastW + w) / 2 * dt * (lastShare + share) / 2
		}
		last, lastW, lastShare = snap.Time, w, share
	}
	t.Logf("counter %.1f J, recorded power integrated %.1f J; job %.1f J, integrated %.1f J", e.Joules, joules, e.JobJoules, jobJoules)
	if math.Abs(e.Joules-joules) > 0.02*joules {
		t.Errorf("report: %.1f J from the counter; the recorded power integrated: %.1f J", e.Joules, joules)
	}
	if math.Abs(e.JobJoules-jobJoules) > 0.03*jobJoules || e.JobJoules >= e.Joules {
		t.Errorf("report: the job's share %.1f J; integrated from the recording: %.1f J", e.JobJoules, jobJoules)
	}
	if math.Abs(e.KWh*3.6e6-e.Joules) > 1e-6*e.Joules {
		t.Errorf("%.1f J is not %.9f kWh", e.Joules, e.KWh)
	}
}
