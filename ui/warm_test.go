package ui

import (
	"io"
	"os"
	"testing"
)

// Warm draws its frame off screen: nothing reaches the terminal.
func TestWarmWritesNothing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	Warm()
	os.Stdout, os.Stderr = stdout, stderr
	w.Close()
	b, _ := io.ReadAll(r)
	if len(b) != 0 {
		t.Fatalf("Warm wrote %d bytes to the terminal: %q", len(b), b[:min(len(b), 200)])
	}
}
