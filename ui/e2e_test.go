package ui

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

// TestEndToEndTmux runs `vramtop --demo` in a real terminal (a tmux pane)
// and looks at the screen: GPUs, bars, processes, help, a resize to 60×15
// and back, and q restoring the terminal within a second.
func TestEndToEndTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		// CI installs tmux (.ci/run): there a missing tmux is a failure,
		// not a silently skipped test.
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but tmux is not installed: the end-to-end test must run in CI")
		}
		t.Skip("tmux is not installed")
	}
	bin := testbin.Build(t)

	// A tmux server of our own, so nothing else is touched.
	sock := fmt.Sprintf("vramtop-e2e-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", "sh")
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	tmux("set-option", "-g", "window-size", "manual")

	capture := func() string { return tmux("capture-pane", "-p", "-t", "e2e") }
	waitFor := func(what string, limit time.Duration, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			s := capture()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen within %v; screen:\n%s", what, limit, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	has := func(subs ...string) func(string) bool {
		return func(s string) bool {
			for _, x := range subs {
				if !strings.Contains(s, x) {
					return false
				}
			}
			return true
		}
	}

	tmux("send-keys", "-t", "e2e", "TERM=xterm-256color "+bin+" --demo; echo vramtop-exited-$?", "Enter")
	s := waitFor("GPUs, bars and processes", 10*time.Second, has("H100", "H200", "█", "PID", "python train.py", "DEMO"))
	if strings.Count(s, "\n") < 29 {
		t.Errorf("the screen should fill 30 lines:\n%s", s)
	}

	tmux("send-keys", "-t", "e2e", "?")
	waitFor("help", 2*time.Second, has("search user, command", "reserved"))
	tmux("send-keys", "-t", "e2e", "?")
	waitFor("back from help", 2*time.Second, has("H100", "PID"))
	// htop's function keys: F1 help, F6 the sort picker.
	tmux("send-keys", "-t", "e2e", "F1")
	waitFor("help on F1", 2*time.Second, has("What the columns hold", "GPU%"))
	tmux("send-keys", "-t", "e2e", "F1")
	waitFor("back from help on F1", 2*time.Second, has("H100", "PID"))
	tmux("send-keys", "-t", "e2e", "F6")
	waitFor("the sort picker", 2*time.Second, has("sort by", "[MEM]"))
	tmux("send-keys", "-t", "e2e", "Escape")
	waitFor("the picker closed", 2*time.Second, func(s string) bool { return !strings.Contains(s, "[MEM]") })

	// Sort by PID: tab to the processes, s three times (memory, peak, age,
	// PID); the PIDs on screen ascend.
	tmux("send-keys", "-t", "e2e", "Tab")
	tmux("send-keys", "-t", "e2e", "s", "s", "s")
	sorted := waitFor("sorted by PID", 2*time.Second, has("PID▼", "sorted by PID"))
	pids := pidsOnScreen(sorted)
	if len(pids) < 3 || !sort.IntsAreSorted(pids) {
		t.Errorf("PIDs on screen after sorting by PID: %v\n%s", pids, sorted)
	}
	tmux("send-keys", "-t", "e2e", "I")
	waitFor("the sort reversed", 2*time.Second, has("PID▲"))

	// The mouse, as a terminal sends it (SGR): a click on the AGE title
	// sorts by age, a second reverses it; a click on GPU 1 opens its detail.
	clickAt := func(x, y int) {
		tmux("send-keys", "-t", "e2e", "-l", fmt.Sprintf("\x1b[<0;%d;%dM\x1b[<0;%d;%dm", x+1, y+1, x+1, y+1))
	}
	at := func(s, sub string) (x, y int) {
		for i, l := range strings.Split(s, "\n") {
			if j := strings.Index(l, sub); j >= 0 {
				return len([]rune(l[:j])), i
			}
		}
		t.Fatalf("%q not on screen:\n%s", sub, s)
		return 0, 0
	}
	x, y := at(capture(), "AGE")
	clickAt(x, y)
	waitFor("sorted by age after a click", 2*time.Second, has("AGE▼"))
	clickAt(x, y)
	waitFor("age reversed after a second click", 2*time.Second, has("AGE▲"))
	// GPU 1's line in the list: "  1   H100 …".
	y = gpuLine(capture(), "1", "H100")
	if y < 0 {
		t.Fatalf("GPU 1 is not listed:\n%s", capture())
	}
	clickAt(8, y)
	waitFor("GPU 1's detail after a click", 2*time.Second, has("GPU 1 NVIDIA", "esc: back"))
	tmux("send-keys", "-t", "e2e", "Escape")
	waitFor("back from the detail", 2*time.Second, has("PID", "python train.py"))

	tmux("resize-window", "-t", "e2e", "-x", "60", "-y", "15")
	small := waitFor("the 60×15 screen", 2*time.Second, func(s string) bool {
		return strings.Contains(s, "GPU") || strings.Contains(s, "too small")
	})
	for i, l := range strings.Split(strings.TrimRight(small, "\n"), "\n") {
		if n := len([]rune(l)); n > 60 {
			t.Errorf("line %d is %d wide at 60×15: %q", i, n, l)
		}
	}
	tmux("resize-window", "-t", "e2e", "-x", "100", "-y", "30")
	waitFor("the 100×30 screen again", 2*time.Second, has("H100", "PID", "python train.py"))

	start := time.Now()
	tmux("send-keys", "-t", "e2e", "F10")
	waitFor("exit after F10", time.Second, has("vramtop-exited-0"))
	t.Logf("F10 exited in %v", time.Since(start).Round(time.Millisecond))
	checkRestored(t, func(format string) string {
		return strings.TrimSpace(tmux("display-message", "-p", "-t", "e2e", format))
	})

	// TERM=dumb cannot take the screen: the one-shot table, as in a pipe.
	tmux("send-keys", "-t", "e2e", "clear; TERM=dumb "+bin+" --demo; echo vramtop-dumb-$?", "Enter")
	dumb := waitFor("the table under TERM=dumb", 10*time.Second, has("vramtop-dumb-0"))
	// (The alerts end the table; its top may have scrolled off the pane.)
	if !(strings.Contains(dumb, "GMEM%") && strings.Contains(dumb, "GPU%") && strings.Contains(dumb, "COMMAND")) && !(strings.Contains(dumb, "SEVERITY") && strings.Contains(dumb, "MESSAGE")) {
		t.Errorf("TERM=dumb should print the table:\n%s", dumb)
	}
	if alt := strings.TrimSpace(tmux("display-message", "-p", "-t", "e2e", "#{alternate_on}")); alt != "0" {
		t.Errorf("TERM=dumb opened the alternate screen")
	}
}

// pidsOnScreen are the PIDs of the process lines of screen s, in order.
func pidsOnScreen(s string) []int {
	var pids []int
	for _, l := range processLines(s) {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "● ")); len(f) > 1 {
			if n, err := strconv.Atoi(f[1]); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// gpuLine is the last line of screen s that lists GPU id with name in it
// ("  1   H100 …"); -1 for none.
func gpuLine(s, id, name string) int {
	y := -1
	for i, l := range strings.Split(s, "\n") {
		if f := strings.Fields(strings.TrimLeft(l, "›▶ ")); len(f) > 1 && f[0] == id && strings.Contains(l, name) {
			y = i
		}
	}
	return y
}

// checkRestored checks that the terminal is as it was after the program
// exited, from tmux's formats (display reads one).
func checkRestored(t *testing.T, display func(format string) string) {
	t.Helper()
	if alt := display("#{alternate_on}"); alt != "0" {
		t.Errorf("still in the alternate screen after exit (alternate_on=%s)", alt)
	}
	if mouse := display("#{mouse_any_flag}#{mouse_button_flag}"); mouse != "00" {
		t.Errorf("mouse reporting left on after exit (%s)", mouse)
	}
	if cur := display("#{cursor_flag}"); cur != "1" {
		t.Errorf("cursor hidden after exit (cursor_flag=%s)", cur)
	}
}
