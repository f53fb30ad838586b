package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs Load with $VRAMTOP_CONFIG set to path and returns its
// error, failing the test if it does not return within 2 s.
func loadWithin(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Load(env(map[string]string{"VRAMTOP_CONFIG": path}))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		t.Fatalf("Load(%s) still reading after 2 s", path)
		return nil
	}
}

// TestHugeConfigFileRefused: a config file over 1 MiB, or one that never
// ends (/dev/zero), is refused in one line instead of read whole.
func TestHugeConfigFileRefused(t *testing.T) {
	big := filepath.Join(t.TempDir(), "config.toml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(200 << 20) // 200 MB of holes: no disk used
	f.Close()
	for path, want := range map[string]string{
		big:         "is larger than 1 MiB",
		"/dev/zero": "is not a regular file",
	} {
		err := loadWithin(t, path)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying it %s", path, err, want)
		}
	}
}

// TestFIFOConfigRefused: a config path that is a FIFO is refused at once,
// not waited on (with no writer, every command would hang in open).
func TestFIFOConfigRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	// Whatever happens, a reader blocked in open is let go at the end.
	defer func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}()
	err := loadWithin(t, fifo)
	if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("%v; want it refused as not a regular file", err)
	}
}
