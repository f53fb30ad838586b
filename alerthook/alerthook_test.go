package alerthook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readEvents(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("the command read %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

var (
	full  = advisor.Alert{Rule: "threshold", Severity: advisor.Crit, DeviceID: "0", Message: "GPU 0 is 96% full"}
	leak  = advisor.Alert{Rule: "leak_suspect", Severity: advisor.Warn, DeviceID: "1", PID: 4242}
	other = advisor.Alert{Rule: "threshold", Severity: advisor.Warn, DeviceID: "1"}
)

// TestRunsOncePerAlertStart: the command gets each alert as JSON on its
// standard input when the alert starts, not again while it stays in force,
// and again when it starts anew.
func TestRunsOncePerAlertStart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "alerts.jsonl")
	var stderr syncBuf
	r := New("cat >> "+out, Options{Hostname: "node7", Stderr: &stderr})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	r.Notify([]advisor.Alert{full})
	r.Notify([]advisor.Alert{full})
	r.Notify([]advisor.Alert{full, leak, leak})
	r.Notify(nil)
	r.Notify([]advisor.Alert{full})
	waitFor(t, "three runs", func() bool { return r.Ran() == 3 })
	evs := readEvents(t, out)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Rule+"@"+ev.DeviceID)
		if ev.Hostname != "node7" {
			t.Errorf("event hostname %q, want node7", ev.Hostname)
		}
	}
	if strings.Join(got, " ") != "threshold@0 leak_suspect@1 threshold@0" {
		t.Errorf("the command ran for %q, want threshold@0 leak_suspect@1 threshold@0", got)
	}
	if len(evs) > 0 && (evs[0].Message != full.Message || evs[0].Severity != advisor.Crit) {
		t.Errorf("first event %+v, want the alert's message and severity", evs[0])
	}
	if len(evs) > 1 && evs[1].PID != 4242 {
		t.Errorf("leak event pid %d, want 4242", evs[1].PID)
	}
	if s := stderr.String(); s != "" {
		t.Errorf("warnings: %q", s)
	}
}

// TestFullQueueDrops: with nobody running the commands, Notify still
// returns at once; what does not fit is dropped, counted and warned about.
func TestFullQueueDrops(t *testing.T) {
	var stderr syncBuf
	r := New("true", Options{QueueLen: 1, Stderr: &stderr, Name: "vramtop serve"})
	returned := make(chan struct{})
	go func() {
		r.Notify([]advisor.Alert{full, leak, other})
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Notify blocked on a full queue")
	}
	if n := r.Dropped(); n != 2 {
		t.Errorf("%d dropped, want 2", n)
	}
	if s := stderr.String(); strings.Count(s, "\n") != 2 || !strings.Contains(s, "vramtop serve: --on-alert") || !strings.Contains(s, "(2 dropped so far)") {
		t.Errorf("warnings %q, want two lines counting the drops", s)
	}
}

// TestTimeout: a command that hangs is stopped after the timeout, and the
// next alert's command still runs.
func TestTimeout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "after")
	var stderr syncBuf
	// The command that does not hang must end within the timeout too: it
	// runs only shell builtins (no grep, no touch to start), and the
	// timeout leaves a starting shell 1 s under -race on a loaded machine
	// (at 300 ms with grep and touch it was stopped there about 1 in 20).
	r := New(`read -r ev; case $ev in *leak_suspect*) sleep 30.0417; sleep 30.0417;; *) : > `+out+`;; esac`, Options{Timeout: time.Second, Stderr: &stderr})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	r.Notify([]advisor.Alert{leak})
	r.Notify([]advisor.Alert{leak, full})
	waitFor(t, "both runs", func() bool { return r.Ran() == 2 })
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("two runs took %v", el)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the second command did not run: %v", err)
	}
	if s := stderr.String(); !strings.Contains(s, "ran past 1s") || strings.Count(s, "\n") != 1 {
		t.Errorf("warnings %q, want the timeout's, once", s)
	}
	// What the command started was stopped with it: SIGKILL to its group
	// is sent, not waited for, so its sleep may take a moment to go.
	waitFor(t, "the timed-out command's sleep to end", func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 30.041[7]").Output()
		return len(out) == 0
	})
}

// TestOutputBounded: a command that prints without end (here 20 MB) leaves
// the log its first and last few KiB and how much was left out between,
// not all of it (a command printing a gigabyte grew serve by as much).
func TestOutputBounded(t *testing.T) {
	var stderr syncBuf
	r := New(`echo START; yes x | head -c 20000000; echo; echo END`, Options{Timeout: 30 * time.Second, Stderr: &stderr, Name: "vramtop serve"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	r.Notify([]advisor.Alert{leak})
	waitFor(t, "the run", func() bool { return r.Ran() == 1 })
	s := stderr.String()
	if len(s) > 12<<10 || !strings.HasPrefix(s, "START\n") || !strings.HasSuffix(s, "x\n\nEND\n") ||
		!strings.Contains(s, "vramtop serve: --on-alert: 19991") {
		head, tail := s[:min(len(s), 80)], s[max(0, len(s)-80):]
		t.Errorf("%d bytes logged (%q … %q); want at most %d: the start, the end and how much was left out", len(s), head, tail, 12<<10)
	}
}

// TestNotifyHostsNamesEachAlertsHost: alerts of several hosts (a fleet)
// each carry the host of their device; one host may not say, and then the
// runner's own name is given.
func TestNotifyHostsNamesEachAlertsHost(t *testing.T) {
	out := filepath.Join(t.TempDir(), "alerts.jsonl")
	r := New("cat >> "+out, Options{Hostname: "prometheus-host"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	a := advisor.Alert{Rule: "threshold", Severity: advisor.Warn, DeviceID: "node1:0"}
	b := advisor.Alert{Rule: "threshold", Severity: advisor.Warn, DeviceID: "node2:3"}
	c := advisor.Alert{Rule: "threshold", Severity: advisor.Warn, DeviceID: "x"}
	r.NotifyHosts([]advisor.Alert{a, b, c}, func(a advisor.Alert) string {
		host, _, _ := strings.Cut(a.DeviceID, ":")
		if host == a.DeviceID {
			return ""
		}
		return host
	})
	waitFor(t, "three runs", func() bool { return r.Ran() == 3 })
	var got []string
	for _, ev := range readEvents(t, out) {
		got = append(got, ev.Hostname+" "+ev.DeviceID)
	}
	if want := "node1 node1:0,node2 node2:3,prometheus-host x"; strings.Join(got, ",") != want {
		t.Errorf("events of %q, want %q", got, want)
	}
}

// TestDiscardedOutput: with Output io.Discard (the live view, whose screen
// the command must not write over) the command's output goes nowhere and
// the runner's warnings still go to Stderr.
func TestDiscardedOutput(t *testing.T) {
	dir := t.TempDir()
	var stderr syncBuf
	r := New(`echo to-stdout; echo to-stderr >&2; o=$(readlink /proc/$$/fd/1); e=$(readlink /proc/$$/fd/2); echo "$o $e" > `+dir+`/fds; exit 3`,
		Options{Stderr: &stderr, Output: io.Discard, Name: "vramtop"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	r.Notify([]advisor.Alert{full})
	waitFor(t, "one run", func() bool { return r.Ran() == 1 })
	s := stderr.String()
	if strings.Contains(s, "to-std") {
		t.Errorf("the command's output reached stderr: %q", s)
	}
	if !strings.Contains(s, "vramtop: --on-alert: the command for threshold on 0: exit status 3") {
		t.Errorf("stderr %q, want the warning that the command failed", s)
	}
	if fds, err := os.ReadFile(dir + "/fds"); err != nil || strings.Count(string(fds), "/dev/null") != 2 {
		t.Errorf("the command's stdout and stderr should be /dev/null:\n%s", fds)
	}
}

// Dropped is how many alerts were dropped because the queue was full.
func (r *Runner) Dropped() uint64 { return r.dropped.Load() }

// Ran is how many times the command has run to its end (or timeout).
func (r *Runner) Ran() uint64 { return r.ran.Load() }
