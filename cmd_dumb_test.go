package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

// Under TERM=dumb on a terminal, replay and fleet print their one-shot
// table, as the live view does, rather than take the screen.
func TestDumbTerminalGetsTheTable(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to run vramtop on a terminal")
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	if out, err := exec.Command(bin, "record", "-q", "--demo", "--duration", "1500ms", "--interval", "250ms", "-o", rec).CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	// A full-screen view would wait for keys: the deadline ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-q", "-e", "-c", bin+" replay "+rec, "/dev/null")
	cmd.Env = append(os.Environ(), "TERM=dumb", "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("replay under TERM=dumb: %v\n%q", err, out)
	}
	s := string(out)
	if strings.Contains(s, "\x1b[?1049h") || !strings.Contains(s, "USED") || !strings.Contains(s, "H100") {
		t.Errorf("replay under TERM=dumb should print the table, not open the screen:\n%q", s)
	}
}
