package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
)

const gib = 1 << 30

var t0 = time.Date(2026, 3, 14, 3, 12, 0, 0, time.UTC)

// snapAt is a snapshot at t0+at of GPUs with these GiB free (of 80), and
// utilization where util gives one.
func snapAt(at time.Duration, freeGiB []uint64, util ...float64) sampler.Snapshot {
	s := sampler.Snapshot{Time: t0.Add(at), Hostname: "h"}
	for i, f := range freeGiB {
		d := sampler.Device{ID: string(rune('0' + i)), Index: i, Name: "H100", MemoryTotal: 80 * gib, MemoryFree: f * gib, MemoryUsed: (80 - f) * gib}
		if i < len(util) {
			u := util[i]
			d.UtilizationPercent = &u
		}
		s.Devices = append(s.Devices, d)
	}
	return s
}

// step feeds w one snapshot and reports what it picked ("" for none).
func step(w *waiter, s sampler.Snapshot) string {
	picks, ok := w.observe(s)
	if !ok {
		return ""
	}
	return advisor.JoinPicks(picks)
}

func TestWaitSettles(t *testing.T) {
	w := newWaiter(advisor.PickOptions{MinFree: 40 * gib, Count: 1}, 10*time.Second)
	for _, c := range []struct {
		at   time.Duration
		free []uint64
		want string
	}{
		{0, []uint64{10, 20}, ""},               // none qualifies
		{1 * time.Second, []uint64{10, 50}, ""}, // GPU 1 starts qualifying
		{6 * time.Second, []uint64{10, 50}, ""},
		{10 * time.Second, []uint64{10, 50}, ""}, // 9 s of 10
		{11 * time.Second, []uint64{10, 50}, "1"},
	} {
		if got := step(w, snapAt(c.at, c.free)); got != c.want {
			t.Fatalf("at %v free %v: picked %q, want %q (%s)", c.at, c.free, got, c.want, w.reason)
		}
	}
}

// A momentary dip starts the settle time over.
func TestWaitDipStartsOver(t *testing.T) {
	w := newWaiter(advisor.PickOptions{MinFree: 40 * gib, Count: 1}, 10*time.Second)
	seq := []struct {
		at   time.Duration
		free uint64
	}{{0, 50}, {5 * time.Second, 50}, {6 * time.Second, 30}, {7 * time.Second, 50}, {16 * time.Second, 50}}
	for _, s := range seq {
		if got := step(w, snapAt(s.at, []uint64{s.free})); got != "" {
			t.Fatalf("picked %q at %v, within 10 s of the dip at 6 s", got, s.at)
		}
	}
	if got := step(w, snapAt(17*time.Second, []uint64{50})); got != "0" {
		t.Errorf("at 17 s (10 s after the dip): picked %q, want GPU 0 (%s)", got, w.reason)
	}
}

// With --count 2 the second GPU must settle too; the picks are the freest
// first.
func TestWaitCountAndOrder(t *testing.T) {
	w := newWaiter(advisor.PickOptions{MinFree: 40 * gib, Count: 2}, 5*time.Second)
	if got := step(w, snapAt(0, []uint64{45, 10, 20})); got != "" {
		t.Fatalf("picked %q at once", got)
	}
	if got := step(w, snapAt(5*time.Second, []uint64{45, 70, 20})); got != "" {
		t.Fatalf("picked %q with GPU 1 qualifying for 0 s", got)
	}
	if !strings.Contains(w.reason, "settling") {
		t.Errorf("reason %q, want it to say the GPUs are settling", w.reason)
	}
	if got := step(w, snapAt(10*time.Second, []uint64{45, 70, 20})); got != "1,0" {
		t.Errorf("picked %q, want 1,0 (both settled, the freest first)", got)
	}
}

// A GPU busier than --max-util does not qualify, however free.
func TestWaitMaxUtil(t *testing.T) {
	w := newWaiter(advisor.PickOptions{MinFree: 10 * gib, Count: 1, MaxUtil: sampler.Ptr(50.0)}, 0)
	if got := step(w, snapAt(0, []uint64{70, 30}, 95, 20)); got != "1" {
		t.Errorf("picked %q, want GPU 1 (GPU 0 is 95%% busy)", got)
	}
	w = newWaiter(advisor.PickOptions{MinFree: 10 * gib, Count: 1, MaxUtil: sampler.Ptr(50.0)}, 0)
	if got := step(w, snapAt(0, []uint64{70}, 95)); got != "" || !strings.Contains(w.reason, "above 50% utilization") {
		t.Errorf("picked %q (reason %q), want none because GPU 0 is too busy", got, w.reason)
	}
}

func runWaitArgs(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = dispatch(ctx, append([]string{"wait"}, args...), &o, &e)
	return o.String(), e.String(), code
}

// With the demo and no settle time, wait prints what pick prints.
func TestWaitDemoPicksAsPick(t *testing.T) {
	freshClaims(t)
	out, errOut, code := runWaitArgs(context.Background(), "--demo", "--min-free", "1GiB", "--count", "2", "--settle", "0", "--interval", "100ms")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	freshClaims(t) // what wait claimed is not pick's to skip
	want, _, _ := runPickArgs("--demo", "--min-free", "1GiB", "--count", "2")
	if out != want || strings.Count(out, ",") != 1 {
		t.Errorf("wait printed %q, pick %q", out, want)
	}
}

func TestWaitTimeoutAndUsage(t *testing.T) {
	start := time.Now()
	out, errOut, code := runWaitArgs(context.Background(), "--demo", "--min-free", "1TiB", "--timeout", "300ms", "--settle", "0", "--interval", "100ms")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "vramtop wait: timed out: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line saying it timed out", code, out, errOut)
	}
	if !strings.Contains(errOut, "at least 1 TiB free") {
		t.Errorf("stderr %q does not say what it waited for", errOut)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("a 300 ms timeout took %v", time.Since(start))
	}
	// Cancelled (Ctrl-C): it ends at once too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, errOut, code := runWaitArgs(ctx, "--demo", "--min-free", "1TiB"); code != 1 || !strings.Contains(errOut, "interrupted") {
		t.Errorf("cancelled: exit %d, stderr %q", code, errOut)
	}
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--demo", "--min-free", "lots"}, `invalid size "lots"`},
		{[]string{"--demo", "--count", "0"}, "want at least 1"},
		{[]string{"--demo", "--max-util", "120"}, "--max-util 120"},
		{[]string{"--demo", "--settle", "-1s"}, "cannot be negative"},
		{[]string{"--demo", "--settle", "soon"}, `--settle "soon": want a duration`},
		{[]string{"--demo", "extra"}, `unexpected argument "extra"`},
	} {
		out, errOut, code := runWaitArgs(context.Background(), c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.say) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.say)
		}
	}
}

// On a terminal, wait keeps one status line on stderr, redrawn in place,
// and clears it before its last word.
func TestWaitStatusOnATerminal(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to run vramtop on a terminal")
	}
	cmd := exec.Command(script, "-q", "-e", "-c", bin+" wait --demo --min-free 1TiB --timeout 1500ms --settle 0 --interval 200ms", "/dev/null")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v), want 1 at the timeout; output %q", code, err, out)
	}
	s := string(out)
	if !strings.HasPrefix(s, "\r\x1b[Kvramtop wait: no GPU has at least 1 TiB free") || !strings.Contains(s, "Ctrl-C stops") {
		t.Errorf("no status line first: %q", s)
	}
	if !strings.Contains(s, "\r\x1b[Kvramtop wait: timed out: ") {
		t.Errorf("the status line is not cleared before the last word: %q", s)
	}
}

// Ctrl-C or SIGTERM ends a wait with the shell's status for the signal.
func TestWaitSignals(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(bin, "wait", "--demo", "--min-free", "1TiB", "--interval", "200ms")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cmd.Process.Signal(c.sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("still waiting 10 s after %v", c.sig)
		}
		if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.Contains(stderr.String(), "vramtop wait: interrupted") {
			t.Errorf("%v: exit %d, stderr %q; want %d and a line saying it was interrupted", c.sig, code, stderr.String(), c.code)
		}
	}
}
