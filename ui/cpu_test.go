package ui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
)

// TestMain doubles as the program of the CPU measurement: with
// VRAMTOP_UI_DEMO8 set, the test binary is the live view over the demo of
// 8 GPUs at 1 Hz.
func TestMain(m *testing.M) {
	if os.Getenv("VRAMTOP_UI_DEMO8") != "" {
		os.Exit(runDemo8())
	}
	os.Exit(testbin.Run(m))
}

func runDemo8() int {
	s, err := sampler.New(demo.NewGPUs(time.Now(), 8), sampler.Config{Interval: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snaps := s.Subscribe()
	go s.Run(ctx)
	if err := Run(ctx, snaps, Options{Thresholds: advisor.DefaultThresholds(), User: demo.User, SetInterval: s.SetInterval}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestCPUDemo8 measures the CPU of the whole process (sampler and live
// view) over VRAMTOP_CPU_SECONDS with the demo of 8 GPUs at 1 Hz, in a
// 120×40 tmux pane, from /proc/PID/stat. Opt-in:
//
//	VRAMTOP_CPU_SECONDS=60 go test ./ui -run TestCPUDemo8 -v
func TestCPUDemo8(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("VRAMTOP_CPU_SECONDS"))
	if secs <= 0 {
		t.Skip("set VRAMTOP_CPU_SECONDS to measure")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	sock := fmt.Sprintf("vramtop-cpu-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("-f", "/dev/null", "new-session", "-d", "-s", "cpu", "-x", "120", "-y", "40",
		"env VRAMTOP_UI_DEMO8=1 TERM=xterm-256color "+os.Args[0]+" -test.run=^$")
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	time.Sleep(2 * time.Second)
	pid, err := strconv.Atoi(strings.TrimSpace(tmux("display-message", "-p", "-t", "cpu", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	ticks := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// Fields after the command's closing parenthesis; utime and stime
		// are fields 14 and 15 of the line.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.Atoi(f[11])
		s, _ := strconv.Atoi(f[12])
		return u + s
	}
	a := ticks()
	time.Sleep(time.Duration(secs) * time.Second)
	b := ticks()
	const clkTck = 100 // USER_HZ on Linux
	pct := float64(b-a) / clkTck / float64(secs) * 100
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	rss := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			rss = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	t.Logf("8 demo GPUs at 1 Hz, 120×40, %d s: %.2f%% of one core, RSS %s", secs, pct, rss)
	if !strings.Contains(tmux("capture-pane", "-p", "-t", "cpu"), "GPU") {
		t.Error("the live view was not on screen")
	}
}
