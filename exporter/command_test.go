package exporter

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// syncBuffer is a buffer a running process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeCommand runs the built `vramtop serve --demo`: it serves, stops
// cleanly on SIGTERM and SIGINT, and a taken port is one line and status 1.
func TestServeCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs vramtop")
	}
	bin := testbin.Build(t)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			out := &syncBuffer{}
			cmd := exec.Command(bin, "serve", "--demo", "--hostname", "node-x", "--listen", addr)
			cmd.Stdout, cmd.Stderr = out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var waitErr error
			exited := make(chan struct{})
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
				}
			})

			// The very first answer has the GPUs: the exporter serves
			// once it has sampled them.
			var body string
			deadline := time.Now().Add(20 * time.Second)
			for {
				if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no answer on %s within 20 s; output:\n%s", addr, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !strings.Contains(body, "DCGM_FI_DEV_FB_USED{") {
				t.Errorf("the first scrape has no device series:\n%s", body)
			}
			if !strings.Contains(body, `hostname="node-x"`) {
				t.Errorf("--hostname not in the labels:\n%s", body)
			}

			// The port is taken now: a second exporter says so in one line.
			var second bytes.Buffer
			c2 := exec.Command(bin, "serve", "--demo", "--listen", addr)
			c2.Stdout, c2.Stderr = &second, &second
			err = c2.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("second exporter on a taken port: %v, want exit status 1", err)
			}
			if msg := strings.TrimSpace(second.String()); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "already in use") {
				t.Errorf("second exporter said %q, want one line saying the address is in use", msg)
			}

			// Clients that never finish: one sent half a request, one
			// only connected. They do not turn the stop into a failure.
			half, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer half.Close()
			io.WriteString(half, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
			idle, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			time.Sleep(100 * time.Millisecond)

			syscall.Kill(cmd.Process.Pid, sig)
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("after %v with half-open connections: %v, want exit status 0\n%s", sig, waitErr, out.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still running 10 s after %v", sig)
			}
		})
	}
}

// TestServeOnAlert: --on-alert runs the command with each alert that
// starts as JSON on its standard input.
func TestServeOnAlert(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs vramtop")
	}
	bin := testbin.Build(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	file := filepath.Join(t.TempDir(), "alerts.jsonl")
	out := &syncBuffer{}
	// Every demo GPU is over 2% full: a threshold alert for each.
	cmd := exec.Command(bin, "serve", "--demo", "--hostname", "node-x", "--listen", addr, "--warn", "1", "--crit", "2", "--on-alert", "cat >> "+file)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	var lines []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(file)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) > 0 && len(lines) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command wrote %q within 20 s; output:\n%s", b, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Give it a few more snapshots: the alerts stay in force, so nothing
	// is run again for them.
	time.Sleep(2 * time.Second)
	b, _ := os.ReadFile(file)
	again := strings.Split(strings.TrimSpace(string(b)), "\n")
	seen := map[string]bool{}
	for _, l := range again {
		var ev struct {
			Hostname string `json:"hostname"`
			Rule     string `json:"rule"`
			DeviceID string `json:"device_id"`
			Severity string `json:"severity"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		k := ev.Rule + "@" + ev.DeviceID
		if seen[k] {
			t.Errorf("the command ran twice for %s while it stayed in force", k)
		}
		seen[k] = true
		if ev.Hostname != "node-x" {
			t.Errorf("event hostname %q", ev.Hostname)
		}
	}
	if !seen["threshold@0"] {
		t.Errorf("no threshold alert for GPU 0 among %v", again)
	}
}
