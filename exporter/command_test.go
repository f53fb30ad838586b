package exporter

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
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

			var body string
			deadline := time.Now().Add(20 * time.Second)
			for {
				if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
					if strings.Contains(body, "DCGM_FI_DEV_FB_USED{") {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no demo metrics on %s within 20 s; output:\n%s\nlast body:\n%s", addr, out.String(), body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if !strings.Contains(body, `Hostname="node-x"`) {
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

			syscall.Kill(cmd.Process.Pid, sig)
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("after %v: %v\n%s", sig, waitErr, out.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still running 10 s after %v", sig)
			}
		})
	}
}
