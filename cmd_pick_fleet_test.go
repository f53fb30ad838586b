package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// --prometheus with what it cannot do is bad usage: one line, exit 2.
func TestPickFleetUsage(t *testing.T) {
	isolateConfig(t)
	for _, c := range []struct {
		cmd  string
		args []string
		say  string
	}{
		{"pick", []string{"--prometheus", "127.0.0.1:9090", "--", "python", "train.py"}, "running a command needs a local GPU claim"},
		{"wait", []string{"--prometheus", "127.0.0.1:9090", "--min-free", "1GiB", "--", "python", "train.py"}, "running a command needs a local GPU claim"},
		{"pick", []string{"--prometheus", "127.0.0.1:9090", "--demo"}, "--demo and --prometheus: give one"},
		{"wait", []string{"--prometheus", "127.0.0.1:9090", "--claim-ttl", "5m"}, "--claim-ttl does not go with --prometheus"},
		{"pick", []string{"--prometheus", "http://"}, `--prometheus "http://": want Prometheus's address`},
		{"pick", []string{"--prometheus", "ftp://x:1"}, "want Prometheus's address"},
		{"pick", []string{"--demo", "--json", "--", "true"}, "--json prints the GPUs"},
		{"pick", []string{"--demo", "--max-util", "101"}, "--max-util 101: want a percentage from 0 to 100"},
		{"pick", []string{"--prometheus", "127.0.0.1:9090", "--count", "0"}, "--count 0: want at least 1"},
	} {
		var o, e bytes.Buffer
		code := dispatch(context.Background(), append([]string{c.cmd}, c.args...), &o, &e)
		if code != exitUsage || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 || !strings.Contains(e.String(), c.say) ||
			!strings.HasPrefix(e.String(), "vramtop "+c.cmd+": ") {
			t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.cmd, c.args, code, o.String(), e.String(), c.say)
		}
	}
}

// A Prometheus that is not there, or an exporter given in its place: one
// line that says so, and exit 1, for pick and wait.
func TestPickFleetPrometheusDownOrAnExporter(t *testing.T) {
	isolateConfig(t)
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			w.Write([]byte("# HELP vramtop_up 1 when ...\n# TYPE vramtop_up gauge\nvramtop_up{hostname=\"a\"} 1\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer exporter.Close()
	down := freeAddr(t) // no scheme: taken as http://
	for _, c := range []struct {
		url, say string
	}{
		{down, "cannot reach Prometheus at http://" + down + ": connection refused"},
		{exporter.URL, "answers like an exporter"},
	} {
		for _, cmd := range []string{"pick", "wait"} {
			var o, e bytes.Buffer
			code := dispatch(context.Background(), []string{cmd, "--prometheus", c.url}, &o, &e)
			if code != 1 || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 || !strings.Contains(e.String(), c.say) {
				t.Errorf("%s --prometheus %s: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", cmd, c.url, code, o.String(), e.String(), c.say)
			}
		}
	}
}

// Ctrl-C ends wait --prometheus at once, its query to Prometheus in flight
// included: exit 130 and one line.
func TestWaitFleetCtrlC(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select { // never answers while the test runs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release) // before Close, which waits for the handlers
	cmd := exec.Command(bin, "wait", "--prometheus", hang.URL, "--min-free", "1GiB")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("wait never asked Prometheus: %s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(8 * time.Second): // within the query's own 10 s timeout
		cmd.Process.Kill()
		<-done
		t.Fatalf("still waiting on Prometheus after Ctrl-C: %s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || strings.TrimSpace(stderr.String()) != "vramtop wait: interrupted" {
		t.Errorf("exit %d, stderr %q; want 130 and one line saying it was interrupted", code, stderr.String())
	}
}
