//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// explainFIFO runs vramtop explain on fifo with ctx, failing the test if it
// has not returned 3 s after ctx ended.
func explainFIFO(t *testing.T, ctx context.Context, fifo string) (stdout, stderr string, code int) {
	t.Helper()
	type result struct {
		o, e string
		code int
	}
	done := make(chan result, 1)
	go func() {
		var o, e bytes.Buffer
		code := dispatch(ctx, []string{"explain", fifo}, &o, &e)
		done <- result{o.String(), e.String(), code}
	}()
	select {
	case r := <-done:
		return r.o, r.e, r.code
	case <-time.After(10 * time.Second):
		// Let the open go before failing.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("explain %s still running 10 s on", fifo)
		return "", "", 0
	}
}

// TestExplainFIFOWithoutWriterEndsOnSignal: explain of a FIFO that no one
// writes to ends when SIGINT/SIGTERM (ctx) comes, with the signal's status,
// instead of waiting in open for ever.
func TestExplainFIFOWithoutWriterEndsOnSignal(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, e, code := explainFIFO(t, ctx, fifo)
	if code != 130 || e != "vramtop explain: interrupted\n" {
		t.Errorf("exit %d, stderr %q; want 130 and interrupted", code, e)
	}
}

// TestExplainFIFOWithWriter: a log piped through a FIFO, its writer coming
// later, is explained as from a file.
func TestExplainFIFOWithWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	log, err := os.ReadFile(explainLog)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(log)
		w.Close()
	}()
	out, e, code := explainFIFO(t, context.Background(), fifo)
	want, _, wantCode := runExplainArgs(t, "", explainLog)
	if code != wantCode || out != want || e != "" {
		t.Errorf("exit %d, stderr %q, output %d bytes; want exit %d and the file's %d bytes", code, e, len(out), wantCode, len(want))
	}
}
