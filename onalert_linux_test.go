package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vramtop/vramtop/alerthook"
	"github.com/vramtop/vramtop/exporter"
	"github.com/vramtop/vramtop/internal/hostile"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
)

// onAlertHook is an --on-alert command that appends the alert to the file
// events and writes on its stdout and stderr, which must not reach the
// screen.
func onAlertHook(events string) string {
	return "cat >> " + events + "; echo hook-wrote-stdout; echo hook-wrote-stderr >&2"
}

// readHookEvents are the events the hook appended to path.
func readHookEvents(t *testing.T, path string) []alerthook.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var evs []alerthook.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var ev alerthook.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("the hook read %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// viewInPTY runs vramtop with args in a terminal of 100×30 until done
// says the events at path are enough (or 20 s pass), then quits it with q
// and returns everything it wrote to the terminal and the events.
func viewInPTY(t *testing.T, path string, done func([]alerthook.Event) bool, args ...string) (screen string, evs []alerthook.Event) {
	t.Helper()
	ptm, pts := openPTYPair(t)
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 100, Row: 30}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testbin.Build(t), args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptm.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return // EIO once the program and its hooks have closed the terminal
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for evs = readHookEvents(t, path); !done(evs) && time.Now().Before(deadline); evs = readHookEvents(t, path) {
		time.Sleep(50 * time.Millisecond)
	}
	ptm.Write([]byte("q"))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("vramtop %v: %v", args, err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Errorf("vramtop %v did not quit on q", args)
	}
	<-read
	mu.Lock()
	defer mu.Unlock()
	return out.String(), evs
}

// The live view's --on-alert runs the command when an alert starts, with
// the alert and the host (the demo's) on its stdin; what the command
// prints never reaches the screen.
func TestLiveViewOnAlert(t *testing.T) {
	isolateConfig(t)
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	screen, evs := viewInPTY(t, path, func(evs []alerthook.Event) bool { return len(evs) > 0 },
		"--demo", "--warn", "5", "--crit", "10", "--on-alert", onAlertHook(path))
	if len(evs) == 0 {
		t.Fatalf("the hook never ran; the screen:\n%q", lastBytes(screen, 3000))
	}
	for _, ev := range evs {
		if ev.Hostname != "demo-node" {
			t.Errorf("event %s on %s names the host %q, want the demo's demo-node", ev.Rule, ev.DeviceID, ev.Hostname)
		}
	}
	if !slices.ContainsFunc(evs, func(ev alerthook.Event) bool { return ev.Rule == "threshold" && ev.DeviceID == "0" }) {
		t.Errorf("no threshold alert on GPU 0 at --warn 5: %+v", evs)
	}
	if strings.Contains(screen, "hook-wrote") {
		t.Errorf("the hook's output reached the terminal:\n%q", lastBytes(screen, 3000))
	}
}

// A hook that fails is said on stderr once the live view has given the
// terminal back, not over the screen.
func TestLiveViewOnAlertFailureAfterTheView(t *testing.T) {
	isolateConfig(t)
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	screen, evs := viewInPTY(t, path, func(evs []alerthook.Event) bool { return len(evs) > 0 },
		"--demo", "--warn", "5", "--crit", "10", "--on-alert", "cat >> "+path+"; exit 3")
	if len(evs) == 0 {
		t.Fatal("the hook never ran")
	}
	// The view leaves the alternate screen (CSI ? 1049 l); the warning
	// comes after it.
	end := strings.LastIndex(screen, "\x1b[?1049l")
	warn := strings.Index(screen, "vramtop: --on-alert: the command for ")
	if end < 0 || warn < end || !strings.Contains(screen[warn:], "exit status 3") {
		t.Errorf("want the failure said after the view ends (at %d, the view ended at %d):\n%q", warn, end, lastBytes(screen, 2000))
	}
}

// fleet's --on-alert names the host of the GPU an alert is about (not
// this machine, nor Prometheus's address), for each host.
func TestFleetOnAlertNamesTheHost(t *testing.T) {
	isolateConfig(t)
	s, err := sampler.New(newDemo(), sampler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := s.Tick(time.Now())
	s.Close()
	results := map[string]string{}
	for i, host := range []string{"gpu-node7", "gpu-node8"} {
		page := exporter.New(func() (sampler.Snapshot, bool) { return snap, true }, exporter.Options{Hostname: host, Version: "t"}).Page(nil)
		for q, res := range scraped(t, page) {
			res = strings.ReplaceAll(res, `"10.0.0.1:9400"`, `"10.0.0.`+string(rune('1'+i))+`:9400"`)
			if results[q] != "" && res != "" {
				res = "," + res
			}
			results[q] += res
		}
	}
	srv := httptest.NewServer(hostile.Prometheus(results))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	hosts := func(evs []alerthook.Event) map[string]bool {
		m := map[string]bool{}
		for _, ev := range evs {
			if ev.Rule == "threshold" {
				m[ev.Hostname+" "+ev.DeviceID] = true
			}
		}
		return m
	}
	want := []string{"gpu-node7 gpu-node7:0", "gpu-node8 gpu-node8:0"}
	screen, evs := viewInPTY(t, path, func(evs []alerthook.Event) bool {
		h := hosts(evs)
		return h[want[0]] && h[want[1]]
	}, "fleet", "--prometheus", srv.URL, "--interval", "1s", "--warn", "5", "--crit", "10", "--on-alert", onAlertHook(path))
	h := hosts(evs)
	for _, w := range want {
		if !h[w] {
			t.Errorf("no threshold alert %q; the hook read %+v", w, evs)
		}
	}
	for _, ev := range evs {
		if host, _, _ := strings.Cut(ev.DeviceID, ":"); ev.Hostname != host {
			t.Errorf("the alert %s on %s names the host %q, want %q", ev.Rule, ev.DeviceID, ev.Hostname, host)
		}
	}
	if strings.Contains(screen, "hook-wrote") {
		t.Errorf("the hook's output reached the terminal:\n%q", lastBytes(screen, 3000))
	}
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
