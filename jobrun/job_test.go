package jobrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

const gib = 1 << 30

// pidSource is a fake GPU source: the PIDs listed in a file (one a line,
// written by the job's own processes) hold 1 GiB each on GPU 0 while they
// live; a process of someone else (tenant) holds 5 GiB there throughout.
// GPU 1 is never touched.
type pidSource struct {
	file   string
	tenant uint32

	mu   sync.Mutex
	live []uint32
}

func (s *pidSource) Info() sampler.SourceInfo {
	return sampler.SourceInfo{Kind: "fake", Hostname: "test", Devices: []sampler.DeviceInfo{
		{ID: "0", Index: 0, Name: "Fake GPU"}, {ID: "1", Index: 1, Name: "Fake GPU"},
	}}
}

func (s *pidSource) readLive() {
	data, _ := os.ReadFile(s.file)
	s.live = s.live[:0]
	seen := map[uint32]bool{}
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || seen[uint32(pid)] {
			continue
		}
		// Only a live process holds memory (a zombie does not).
		st, err := os.ReadFile("/proc/" + f + "/stat")
		if err != nil || bytes.Contains(st, []byte(") Z ")) {
			continue
		}
		seen[uint32(pid)] = true
		s.live = append(s.live, uint32(pid))
	}
}

func (s *pidSource) ReadMemory(now time.Time, out []sampler.MemSample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readLive()
	used := uint64(5*gib) + uint64(len(s.live))*gib
	out[0] = sampler.MemSample{Total: 80 * gib, Used: used, Free: 80*gib - used}
	out[1] = sampler.MemSample{Total: 80 * gib, Used: 0, Free: 80 * gib}
	return nil
}

func (s *pidSource) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf = append(buf, sampler.ProcSample{Process: sampler.Process{PID: s.tenant, UsedBytes: sampler.Ptr(uint64(5 * gib)), Type: "compute", User: "bob", Command: "python serve.py", Visible: true}})
	for _, pid := range s.live {
		buf = append(buf, sampler.ProcSample{Process: sampler.Process{PID: pid, UsedBytes: sampler.Ptr(uint64(gib)), Type: "compute", User: "me", Command: "job", Visible: true}})
	}
	return buf, nil
}

func (s *pidSource) ReadProcessUtilization(time.Time, map[sampler.UtilKey]float64) error { return nil }
func (s *pidSource) Close() error                                                        { return nil }

func newSampler(t *testing.T, src sampler.Source) *sampler.Sampler {
	t.Helper()
	s, err := sampler.New(src, sampler.Config{Interval: 50 * time.Millisecond, History: time.Minute, ProcessInterval: sampler.JobProcessInterval})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runJob runs a shell script as a job over src, with a bounded wait.
func runJob(t *testing.T, src sampler.Source, script string, sigs chan os.Signal) (Report, string) {
	t.Helper()
	var stderr bytes.Buffer
	type result struct {
		r   Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Run(context.Background(), Config{
			Argv: []string{"sh", "-c", script}, Sampler: newSampler(t, src),
			Stdout: os.Stdout, Stderr: &stderr, Signals: sigs,
		})
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("Run: %v", res.err)
		}
		return res.r, stderr.String()
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not end within 30 s")
	}
	return Report{}, ""
}

func TestGrandchildrenAreOneJob(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	src := &pidSource{file: pids, tenant: uint32(os.Getpid())}
	// The child starts two grandchildren: one in its process group, one
	// in a session of its own (found through its parent only), and a
	// great-grandchild. Each writes its PID for the fake GPU to see.
	script := `
pids=` + pids + `
sh -c 'echo $$ >> '$pids'; sleep 1.5' &
setsid sh -c 'echo $$ >> '$pids'; sh -c "echo \$\$ >> '$pids'; sleep 1.5" & sleep 1.5; wait' &
wait
exit 0`
	r, _ := runJob(t, src, script, nil)
	if r.ExitCode != 0 {
		t.Fatalf("exit code %d", r.ExitCode)
	}
	if len(r.GPUs) != 1 || r.GPUs[0].ID != "0" {
		t.Fatalf("GPUs in the report: %+v, want GPU 0 only", r.GPUs)
	}
	g := r.GPUs[0]
	if g.PeakBytes != 3*gib {
		t.Errorf("job peak on GPU 0 = %s, want 3 GiB (three descendants at 1 GiB)", Bytes(g.PeakBytes))
	}
	if r.PeakBytes != 3*gib {
		t.Errorf("job peak, all GPUs = %s, want 3 GiB", Bytes(r.PeakBytes))
	}
	// Least headroom: 80 − 5 − 3 GiB, with the tenant named.
	if g.MinFreeBytes != 72*gib || g.JobAtMinFree != 3*gib {
		t.Errorf("least headroom %s with the job at %s; want 72 GiB and 3 GiB", Bytes(g.MinFreeBytes), Bytes(g.JobAtMinFree))
	}
	if len(g.Others) != 1 || g.Others[0].PID != uint32(os.Getpid()) || g.Others[0].User != "bob" {
		t.Errorf("others at the least headroom: %+v, want bob's process only", g.Others)
	}
	if g.PeakAt.Before(r.Start) || g.PeakAt.After(r.End) || g.MinFreeAt.IsZero() {
		t.Errorf("peak at %v, least headroom at %v; the run was %v to %v", g.PeakAt, g.MinFreeAt, r.Start, r.End)
	}
	// Every process of the tree was seen.
	data, err := os.ReadFile(pids)
	if n := len(strings.Fields(string(data))); err != nil || n != 3 {
		t.Fatalf("the descendants wrote %d PIDs (%v), want 3", n, err)
	}
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		found := false
		for _, p := range r.PIDs {
			found = found || p == pid
		}
		if !found {
			t.Errorf("descendant %d missing from the job's PIDs %v", pid, r.PIDs)
		}
	}
	text := r.Text(60)
	for _, want := range []string{"GPU 0 (Fake GPU, 80.0 GiB): job peak 3.0 GiB", "least headroom: 72.0 GiB free", "bob", "python serve.py", "┤"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

const pytorchOOM = `Traceback (most recent call last):
  File "train.py", line 42, in <module>
    loss = model(batch).sum()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.02 GiB memory in use. Of the allocated memory 74.50 GiB is allocated by PyTorch, and 2.81 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`

func TestOOMChild(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "oom.txt")
	os.WriteFile(log, []byte(pytorchOOM+"\n"), 0o644)
	pids := filepath.Join(dir, "pids")
	src := &pidSource{file: pids, tenant: uint32(os.Getpid())}
	// The job lives for a few snapshots (published every 500 ms), so that one
	// sees it on any machine.
	script := `echo $$ >> ` + pids + `; echo step 1; sleep 1.5; cat ` + log + ` >&2; exit 1`
	r, stderr := runJob(t, src, script, nil)
	if r.ExitCode != 1 {
		t.Errorf("exit code %d, want the child's 1", r.ExitCode)
	}
	// The child's stderr passes through untouched.
	if stderr != pytorchOOM+"\n" {
		t.Errorf("stderr passed through as %q", stderr)
	}
	if r.OOM == nil || !r.OOM.Found || r.OOM.Framework != "pytorch" {
		t.Fatalf("OOM not diagnosed: %+v", r.OOM)
	}
	text := r.Text(60)
	for _, want := range []string{"exited with status 1", "Out of memory, from the job's stderr", "fragmentation", "expandable_segments:True", "job peak 1.0 GiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

func TestOOMFarBackInALongLog(t *testing.T) {
	// An OOM followed by megabytes of other output is still found.
	var s scanner
	s.Write([]byte("starting\n"))
	s.Write([]byte(pytorchOOM[:100]))
	s.Write([]byte(pytorchOOM[100:] + "\nretrying with a smaller batch\n"))
	line := bytes.Repeat([]byte("x"), 99)
	line = append(line, '\n')
	for i := 0; i < 30000; i++ {
		s.Write(line)
	}
	if !strings.Contains(s.text(), "Tried to allocate 2.00 GiB") {
		t.Error("the OOM message scrolled out of what is kept")
	}
	if len(s.text()) > 3*tailMax {
		t.Errorf("kept %d bytes", len(s.text()))
	}
}

func TestSignalForwarding(t *testing.T) {
	dir := t.TempDir()
	src := &pidSource{file: filepath.Join(dir, "pids"), tenant: 1}
	marker := filepath.Join(dir, "got")
	ready := filepath.Join(dir, "ready")
	sigs := make(chan os.Signal, 1)
	go func() {
		// Signal once the child's trap is set.
		for i := 0; i < 300; i++ {
			if _, err := os.Stat(ready); err == nil {
				sigs <- syscall.SIGTERM
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	script := `trap 'echo TERM > ` + marker + `; exit 7' TERM; touch ` + ready + `; while :; do sleep 0.05; done`
	r, _ := runJob(t, src, script, sigs)
	if b, _ := os.ReadFile(marker); string(b) != "TERM\n" {
		t.Errorf("the child did not get SIGTERM (marker %q)", b)
	}
	if r.ExitCode != 7 {
		t.Errorf("exit code %d, want the child's 7", r.ExitCode)
	}
	// A child that does not catch it dies of it: 128+15.
	ready2 := filepath.Join(dir, "ready2")
	go func() {
		for i := 0; i < 300; i++ {
			if _, err := os.Stat(ready2); err == nil {
				sigs <- syscall.SIGTERM
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r, _ = runJob(t, src, `touch `+ready2+`; exec sleep 20`, sigs)
	if r.ExitCode != 128+15 || r.Signal != "SIGTERM" {
		t.Errorf("killed child: exit code %d, signal %q; want 143, SIGTERM", r.ExitCode, r.Signal)
	}
	if !strings.Contains(r.Text(60), "was killed by SIGTERM (status 143)") {
		t.Errorf("report: %s", r.Text(60))
	}
}

func TestCommandNotFound(t *testing.T) {
	_, err := Run(context.Background(), Config{
		Argv: []string{"/nonexistent/command"}, Sampler: newSampler(t, &pidSource{file: "/nonexistent"}),
	})
	if err == nil {
		t.Fatal("a missing command started")
	}
	r, _ := Run(context.Background(), Config{Argv: []string{"/nonexistent/command"}, Sampler: newSampler(t, &pidSource{file: "/nonexistent"})})
	if r.ExitCode != 127 {
		t.Errorf("exit code %d, want 127", r.ExitCode)
	}
}

func TestParseStat(t *testing.T) {
	st, ok := parseStat([]byte("4242 (my (odd) prog) S 17 4242 4242 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615"))
	if !ok || st.ppid != 17 || st.pgrp != 4242 || st.start != 98765 {
		t.Errorf("parseStat = %+v, %v", st, ok)
	}
	if _, ok := parseStat([]byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

func TestTimelineHoldsPeaks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	var vals []uint64
	for i := 0; i < 100; i++ {
		times = append(times, t0.Add(time.Duration(i)*100*time.Millisecond))
		v := uint64(gib)
		if i == 37 {
			v = 9 * gib // a 100 ms spike
		}
		vals = append(vals, v)
	}
	tl := timeline(times, vals, t0, t0.Add(10*time.Second), 10)
	max := 0.0
	for _, b := range tl.Bytes {
		if b != nil && *b > max {
			max = *b
		}
	}
	if max != 9*gib {
		t.Errorf("the spike is %v in the timeline, want 9 GiB", max)
	}
	// More columns than samples: no gaps, values carried over.
	tl = timeline(times[:3], vals[:3], t0, t0.Add(10*time.Second), 60)
	if tl.Bytes[0] == nil || tl.Bytes[59] == nil || *tl.Bytes[59] != gib {
		t.Errorf("sparse timeline has gaps: first %v last %v", tl.Bytes[0], tl.Bytes[59])
	}
	if timeline(nil, nil, t0, t0.Add(time.Second), 60) != nil {
		t.Error("a timeline without samples")
	}
	// The report of a job with no samples renders without a plot (and
	// without panicking).
	r := Report{Command: []string{"true"}, Start: t0, End: t0.Add(time.Millisecond), DurationSeconds: 0.001}
	if strings.Contains(r.Text(60), "┤") {
		t.Error("a plot without samples")
	}
}

func TestCancelStopsJobWithoutSignals(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	done := make(chan Report, 1)
	go func() {
		r, _ := Run(ctx, Config{
			Argv: []string{"sleep", "30"}, Sampler: newSampler(t, &pidSource{file: filepath.Join(dir, "pids")}),
		})
		done <- r
	}()
	select {
	case r := <-done:
		if r.ExitCode != 143 {
			t.Errorf("exit code %d, want 143 (SIGTERM)", r.ExitCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling did not stop the job")
	}
}

func TestJobNeverOnAGPU(t *testing.T) {
	dir := t.TempDir()
	// The fake GPU lists only the tenant: the job holds no GPU memory.
	r, _ := runJob(t, &pidSource{file: filepath.Join(dir, "pids"), tenant: 1}, "sleep 0.3", nil)
	if len(r.GPUs) != 0 || r.PeakBytes != 0 {
		t.Errorf("GPUs %+v, peak %d; want none", r.GPUs, r.PeakBytes)
	}
	text := r.Text(60)
	if !strings.Contains(text, "held no GPU memory") || strings.Contains(text, "┤") {
		t.Errorf("report:\n%s", text)
	}
}

// leftoverJob runs a job whose leader starts `sleep 60 &` (which holds
// 1 GiB on the fake GPU) and exits; it returns the report and the
// sleep's PID.
func leftoverJob(t *testing.T, kill bool) (Report, int) {
	t.Helper()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	src := &pidSource{file: pids, tenant: 1}
	// The leader waits for the sleep to be exec'd (on a busy machine the
	// forked shell may not have got that far), then for a sample or two.
	script := `sleep 60 >/dev/null 2>&1 & p=$!; while ! grep -q sleep /proc/$p/cmdline; do sleep 0.01; done; echo $p >> ` + pids + `; sleep 0.8`
	done := make(chan Report, 1)
	go func() {
		r, err := Run(context.Background(), Config{
			Argv: []string{"sh", "-c", script}, Sampler: newSampler(t, src),
			Stdout: os.Stdout, Stderr: os.Stderr, KillLeftovers: kill, KillGrace: 2 * time.Second,
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var r Report
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not end within 30 s")
	}
	data, _ := os.ReadFile(pids)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("the job wrote no PID: %q", data)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return r, pid
}

func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !bytes.Contains(st, []byte(") Z "))
}

func TestLeftoverProcessesAreReported(t *testing.T) {
	r, pid := leftoverJob(t, false)
	if len(r.Leftovers) != 1 || r.Leftovers[0].PID != pid {
		t.Fatalf("leftovers %+v, want the background sleep %d", r.Leftovers, pid)
	}
	l := r.Leftovers[0]
	if l.GPUBytes != gib || l.Ended != "" || !strings.Contains(l.Command, "sleep 60") {
		t.Errorf("leftover %+v: want 1 GiB, not ended, command sleep 60", l)
	}
	if !alive(pid) {
		t.Error("the leftover was ended without --kill-leftovers")
	}
	text := r.Text(60)
	if !strings.Contains(text, fmt.Sprintf("pid %d, 1.0 GiB on the GPUs, still running: sleep 60", pid)) || !strings.Contains(text, "--kill-leftovers") {
		t.Errorf("the report does not name the leftover:\n%s", text)
	}
}

func TestKillLeftovers(t *testing.T) {
	r, pid := leftoverJob(t, true)
	if len(r.Leftovers) != 1 || r.Leftovers[0].PID != pid || r.Leftovers[0].Ended != "SIGTERM" {
		t.Fatalf("leftovers %+v, want the sleep %d ended by SIGTERM", r.Leftovers, pid)
	}
	if alive(pid) {
		t.Error("the leftover still runs after --kill-leftovers")
	}
	if !strings.Contains(r.Text(60), "ended by SIGTERM") {
		t.Errorf("report:\n%s", r.Text(60))
	}
}

func TestKillLeftoversEscalatesToSIGKILL(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	// The leftover ignores SIGTERM. The leader waits for its PID, written
	// once the trap is set (on a busy machine the shell may not have got
	// that far within a fixed sleep), then for a sample or two.
	script := `sh -c 'trap "" TERM; echo $$ >> ` + pids + `; while :; do sleep 0.1; done' >/dev/null 2>&1 & i=0; until [ -s ` + pids + ` ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done; sleep 0.8`
	r, err := Run(context.Background(), Config{
		Argv: []string{"sh", "-c", script}, Sampler: newSampler(t, &pidSource{file: pids, tenant: 1}),
		Stderr: os.Stderr, KillLeftovers: true, KillGrace: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(pids)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	var ended string
	for _, l := range r.Leftovers {
		if l.PID == pid {
			ended = l.Ended
		}
	}
	if ended != "SIGKILL" {
		t.Errorf("the TERM-ignoring leftover %d: ended %q, want SIGKILL (leftovers %+v)", pid, ended, r.Leftovers)
	}
	// SIGKILL is sent, not waited for: the process may take a moment to go.
	for deadline := time.Now().Add(10 * time.Second); pid > 0 && alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if pid > 0 && alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Error("it still runs")
	}
}

func TestReportJSONListsAndSeconds(t *testing.T) {
	r := (&watch{tree: newTree("/nonexistent", 1), gpus: map[string]*gpuWatch{}}).report([]string{"true"},
		time.Unix(100, 0), time.Unix(112, 500e6))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"pids":[]`, `"leftovers":[]`, `"gpus":[]`, `"duration_seconds":12.5`} {
		if !strings.Contains(s, want) {
			t.Errorf("report JSON lacks %s:\n%s", want, s)
		}
	}
}
