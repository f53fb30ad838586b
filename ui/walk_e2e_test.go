package ui

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

// TestWalkTmux opens `vramtop --demo` in tmux panes of 80×24, 100×30 and
// 120×40, as it first shows and with the kill prompt, the signal list and
// the alerts screen, and reads every screen as a user would: no figure cut,
// no parenthesis left open before an ellipsis, no GPU called full that is
// not, no key cut in the footer, the demo's note of the prompt whole or
// short, no PID or figure wrapped from its number or unit.
func TestWalkTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but tmux is not installed")
		}
		t.Skip("tmux is not installed")
	}
	bin := testbin.Build(t)
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			sock := fmt.Sprintf("vramtop-walk-%d-%d", os.Getpid(), sz[0])
			tmux := func(args ...string) string {
				t.Helper()
				out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			tmux("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", fmt.Sprint(sz[0]), "-y", fmt.Sprint(sz[1]),
				"TERM=xterm-256color "+bin+" --demo; sleep 30")
			t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
			tmux("set-option", "-g", "window-size", "manual")
			waitFor := func(what string, ok func(string) bool) string {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for {
					s := tmux("capture-pane", "-p", "-t", "w")
					if ok(s) {
						return s
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: not seen; screen:\n%s", what, s)
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
			check := func(screen string, s string) {
				t.Helper()
				for _, b := range cutFigures(s) {
					t.Errorf("%s: a figure cut: %s", screen, b)
				}
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				for i, l := range lines {
					l = strings.TrimSpace(l)
					next := ""
					if i+1 < len(lines) {
						next = strings.TrimSpace(lines[i+1])
					}
					if i := strings.Index(l, "…"); i >= 0 && (strings.HasPrefix(l, "WARN") || strings.HasPrefix(l, "CRIT") || strings.HasPrefix(l, "INFO")) &&
						strings.Count(l[:i], "(") > strings.Count(l[:i], ")") {
						t.Errorf("%s: a parenthesis left open: %q", screen, l)
					}
					if strings.Contains(l, "full…") || strings.Contains(l, "clears…") {
						t.Errorf("%s: a note of one word: %q", screen, l)
					}
					if strings.HasSuffix(l, " PID") && next != "" && next[0] >= '0' && next[0] <= '9' || strings.HasPrefix(l, "GiB ") {
						t.Errorf("%s: a number wrapped from its name or unit: %q", screen, l)
					}
				}
				if last := strings.TrimSpace(lines[len(lines)-1]); strings.HasSuffix(last, "…") {
					t.Errorf("%s: the last line (footer or prompt) is cut: %q", screen, last)
				}
			}
			s := waitFor("the processes", has("PID", "python train.py", "WARN"))
			time.Sleep(1500 * time.Millisecond) // the alerts of the first seconds
			s = waitFor("the processes", has("PID"))
			check("main", s)
			tmux("send-keys", "-t", "w", "Tab")
			tmux("send-keys", "-t", "w", "K")
			s = waitFor("the kill prompt", has("send SIGTERM to PID"))
			check("kill prompt", s)
			if !strings.Contains(s, "(demo: nothing is sent)") && !strings.Contains(s, "(demo)") {
				t.Errorf("the prompt should say nothing is sent in the demo:\n%s", s)
			}
			tmux("send-keys", "-t", "w", "n")
			tmux("send-keys", "-t", "w", "F9")
			s = waitFor("the signal list", has("9 KILL"))
			check("signal list", s)
			if !strings.Contains(s, "(demo") {
				t.Errorf("the signal list should say it is the demo:\n%s", s)
			}
			tmux("send-keys", "-t", "w", "Escape")
			// (a key right after Escape would read as Alt and the key)
			waitFor("the list closed", func(s string) bool { return !strings.Contains(s, "9 KILL") })
			tmux("send-keys", "-t", "w", "a")
			s = waitFor("the alerts", has("alerts (", "in force"))
			check("alerts", s)
			tmux("send-keys", "-t", "w", "q")
		})
	}
}
