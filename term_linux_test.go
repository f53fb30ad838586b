package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its terminal side.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}

// The live view opens only on a terminal that can move the cursor:
// TERM=dumb and a pipe get the one-shot table.
func TestFullScreenOnlyOnACapableTerminal(t *testing.T) {
	pts := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		name string
		out  *os.File
		term string
		want bool
	}{
		{"terminal", pts, "xterm-256color", true},
		{"terminal, TERM unset", pts, "", true},
		{"dumb terminal", pts, "dumb", false},
		{"pipe", w, "xterm-256color", false},
	} {
		if got := fullScreenOK(tt.out, tt.term); got != tt.want {
			t.Errorf("%s: fullScreenOK = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// explain with a terminal for stdin says that it reads it and how to end
// it; with a pipe it says nothing.
func TestExplainSaysItReadsTheTerminal(t *testing.T) {
	pts := openPTY(t)
	old := explainStdin
	t.Cleanup(func() { explainStdin = old })
	explainStdin = pts
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var o, e bytes.Buffer
	isolateConfig(t)
	dispatch(ctx, []string{"explain"}, &o, &e)
	if !strings.Contains(e.String(), "reading the log from standard input") || !strings.Contains(e.String(), "Ctrl-D") {
		t.Errorf("on a terminal explain should say it reads standard input and how to end it: %q", e.String())
	}
	explainStdin = strings.NewReader("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
	e.Reset()
	dispatch(context.Background(), []string{"explain"}, &o, &e)
	if strings.Contains(e.String(), "standard input") {
		t.Errorf("from a pipe explain should not: %q", e.String())
	}
}
