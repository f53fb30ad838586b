// Package promtest runs real processes for tests: a Prometheus server
// (Debian's prometheus binary, named by VRAMTOP_PROMETHEUS, started with a
// temporary configuration and data directory on a loopback port, no service
// manager) and the programs it scrapes. Everything it starts runs in its own
// process group and is stopped by t.Cleanup, on failure too.
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
)

// EnvBinary names the prometheus binary.
const EnvBinary = "VRAMTOP_PROMETHEUS"

// Binary returns the prometheus binary named by VRAMTOP_PROMETHEUS. The test
// is skipped when it is unset, and fails when CI=true: CI must run it.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is not set: install Debian's prometheus package and set %s=$(command -v prometheus)", EnvBinary, EnvBinary)
		}
		t.Skipf("%s is not set (the path of a prometheus binary)", EnvBinary)
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s=%s: %v", EnvBinary, bin, err)
	}
	return bin
}

// FreeAddr returns a loopback address with a port free at the moment.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Proc is a process started by Start.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Output is what the process wrote so far (stdout and stderr, first MiB).
func (p *Proc) Output() string { return p.out.String() }

// Kill ends the process group at once (SIGKILL), as a crash would, and
// waits for it.
func (p *Proc) Kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start runs a program in its own process group. t.Cleanup stops the group
// (SIGTERM, then SIGKILL after 5 s) and, when the test failed, logs its
// output.
func Start(t testing.TB, name string, argv ...string) *Proc {
	t.Helper()
	return StartEnv(t, name, nil, argv...)
}

// StartEnv is Start with env (KEY=value) added to the environment.
func StartEnv(t testing.TB, name string, env []string, argv ...string) *Proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.Output())
		}
	})
	return p
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL  string
	Proc *Proc
}

// StartPrometheus runs bin scraping targets (host:port, /metrics) every
// scrapeInterval, with a temporary configuration and data directory on a
// free loopback port, and waits until it is ready.
func StartPrometheus(t testing.TB, bin string, scrapeInterval time.Duration, targets ...string) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	iv := fmt.Sprintf("%dms", scrapeInterval.Milliseconds())
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
  evaluation_interval: %s
scrape_configs:
  - job_name: vramtop
    static_configs:
      - targets: [%s]
`, iv, iv, iv, strings.Join(quoted, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	p := Start(t, "prometheus", bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	prom := &Prometheus{URL: "http://" + addr, Proc: p}
	WaitFor(t, 30*time.Second, "prometheus ready", func() (bool, string) {
		if p.Exited() {
			t.Fatalf("prometheus exited:\n%s", p.Output())
		}
		code, body := Get(prom.URL + "/-/ready")
		return code == http.StatusOK, body
	})
	return prom
}

// TargetsUp returns how many targets Prometheus last scraped successfully.
func (p *Prometheus) TargetsUp() (int, error) {
	code, body := Get(p.URL + "/api/v1/targets?state=active")
	if code != http.StatusOK {
		return 0, fmt.Errorf("targets: HTTP %d %s", code, body)
	}
	var r struct {
		Data struct {
			ActiveTargets []struct {
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return 0, err
	}
	n := 0
	for _, tg := range r.Data.ActiveTargets {
		if tg.Health == "up" {
			n++
		}
	}
	return n, nil
}

// Get fetches url with a short timeout; code 0 when it failed.
func Get(url string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// WaitFor polls cond every 200 ms until it holds, failing the test after
// timeout with the last detail cond gave.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var detail string
	for {
		var ok bool
		ok, detail = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last: %s", timeout, what, detail)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
