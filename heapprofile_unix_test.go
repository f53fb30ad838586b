//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

// VRAMTOP_MEMPROFILE=FILE: a running vramtop writes a heap profile (gzip,
// as go tool pprof reads it) to FILE when it gets SIGUSR1, and goes on.
func TestHeapProfileOnSIGUSR1(t *testing.T) {
	dir := t.TempDir()
	prof, rec := filepath.Join(dir, "heap.prof"), filepath.Join(dir, "rec.jsonl")
	cmd := exec.Command(testbin.Build(t), "record", "--demo", "-o", rec)
	cmd.Env = append(os.Environ(), "VRAMTOP_MEMPROFILE="+prof)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	// The recording exists once main has set the handler up (a SIGUSR1
	// before that would end the program).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(rec); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatalf("vramtop is gone after SIGUSR1: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		if b, err := os.ReadFile(prof); err == nil && len(b) > 2 && bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no heap profile was written")
		}
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("vramtop ended after writing the profile: %v", err)
	}
}
