package exporter

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/metricname"
)

// TestServeNoCommandLabels runs the built `vramtop serve --demo`: its
// process series carry the command lines, and with --no-command-labels
// they do not (the series themselves stay).
func TestServeNoCommandLabels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs vramtop")
	}
	bin := testbin.Build(t)
	for _, noCmd := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		args := []string{"serve", "--demo", "--listen", addr}
		if noCmd {
			args = append(args, "--no-command-labels")
		}
		out := &syncBuffer{}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var body string
		deadline := time.Now().Add(20 * time.Second)
		for body == "" {
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
			} else if time.Now().After(deadline) {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				cmd.Wait()
				t.Fatalf("no answer on %s within 20 s; output:\n%s", addr, out.String())
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
		if !strings.Contains(body, metricname.ProcessMemory+"{") {
			t.Errorf("%v: no process series:\n%s", args, body)
		}
		if has := strings.Contains(body, `command="`); has == noCmd {
			t.Errorf("%v: command labels exported: %v, want %v", args, has, !noCmd)
		}
	}
}
