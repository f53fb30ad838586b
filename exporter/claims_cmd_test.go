//go:build unix

package exporter

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/metricname"
)

// TestServeExportsClaims runs `vramtop serve --demo` beside a claim on one
// of the demo's GPUs: the page says it is claimed, by whom and for how
// much, and says 0 once the claim is released.
func TestServeExportsClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs vramtop")
	}
	bin := testbin.Build(t)
	dir := filepath.Join(t.TempDir(), "claims")
	store, err := claims.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	uuid := demo.New(time.Now()).Info().Devices[1].UUID
	h, err := store.TryClaim(claims.Claim{UUID: uuid, User: "alice", PID: os.Getpid(), Bytes: 40 << 30, Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := &syncBuffer{}
	cmd := exec.Command(bin, "serve", "--demo", "--hostname", "node-x", "--listen", addr, "--interval", "200ms")
	cmd.Env = append(os.Environ(), claims.EnvDir+"="+dir)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	claimed := func(v string) func(string) bool {
		return func(page string) bool {
			for _, l := range strings.Split(page, "\n") {
				if strings.HasPrefix(l, metricname.Claimed+"{") && strings.Contains(l, `UUID="`+uuid+`"`) {
					return strings.HasSuffix(l, "} "+v)
				}
			}
			return false
		}
	}
	page := scrapeUntil(t, addr, out, claimed("1"))
	if !strings.Contains(page, `gpu="1",hostname="node-x",model_name=`) || !strings.Contains(page, `,user="alice"} 1`) {
		t.Errorf("the claim's series has not the GPU's labels and the user:\n%s", page)
	}
	if !strings.Contains(page, metricname.ClaimedBytes+"{") || !strings.Contains(page, `user="alice"} 4.294967296e+10`) {
		t.Errorf("no size of the claim:\n%s", page)
	}
	if n := strings.Count(page, "\n"+metricname.Claimed+"{"); n != len(demo.New(time.Now()).Info().Devices) {
		t.Errorf("%d claim series, want one per demo GPU", n)
	}
	h.Release()
	scrapeUntil(t, addr, out, claimed("0"))
}

// scrapeUntil scrapes addr until ok holds for the page, for at most 20 s.
func scrapeUntil(t *testing.T, addr string, out *syncBuffer, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var page string
	for {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			page = string(b)
			if ok(page) {
				return page
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never held what was waited for; last:\n%s\noutput:\n%s", page, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
