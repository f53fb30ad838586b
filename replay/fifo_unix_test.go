//go:build unix

package replay_test

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReplayOfAFIFOEndsOnSignal: replay waits for a writer to open a FIFO;
// SIGINT or SIGTERM ends the wait within a second, with 130 or 143.
func TestReplayOfAFIFOEndsOnSignal(t *testing.T) {
	bin := vramtop(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip("no FIFO here:", err)
			}
			var e bytes.Buffer
			cmd := exec.Command(bin, "replay", "--once", fifo)
			cmd.Stderr = &e
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			time.Sleep(500 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("replay of a FIFO nobody writes ended by itself: %v (%s)", err, e.String())
			default:
			}
			cmd.Process.Signal(sig)
			sent := time.Now()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
					t.Errorf("after %v: %v, want exit %d", sig, err, 128+int(sig))
				}
				if d := time.Since(sent); d > time.Second {
					t.Errorf("ended %v after %v", d, sig)
				}
				if !strings.Contains(e.String(), "interrupted") || strings.Contains(e.String(), "goroutine") {
					t.Errorf("stderr %q", e.String())
				}
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 5 s after %v", sig)
			}
		})
	}
}

// TestReplayOfAFIFOReadsWhatIsWritten: a FIFO (or pipe) is read to its end
// like a file.
func TestReplayOfAFIFOReadsWhatIsWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl.gz")
	if _, e, code := run(t, "record", "-q", "--demo", "--interval", "250ms", "--duration", "1s", "-o", path); code != 0 {
		t.Fatalf("record: %d %s", code, e)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	go exec.Command("sh", "-c", "cat "+path+" > "+fifo).Run()
	out, e, code := run(t, "replay", "--json", fifo)
	if code != 0 || !strings.Contains(out, `"devices"`) {
		t.Errorf("replay FIFO: exit %d, stderr %q", code, e)
	}
}
