package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	_, pts := openPTYPair(t)
	return pts
}

// openPTYPair opens a pseudo-terminal and returns its controlling side
// (what a terminal emulator reads) and its terminal side.
func openPTYPair(t *testing.T) (ptm, pts *os.File) {
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
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
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

// explain on a terminal lays its text out to the terminal's width, so that
// the terminal breaks no line (nor a number from its unit); --all lists
// every remedy.
func TestExplainFitsTheTerminal(t *testing.T) {
	isolateConfig(t)
	read := func(args ...string) string {
		ptm, pts := openPTYPair(t)
		if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 60, Row: 24}); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(ptm) // until the terminal side is closed (EIO)
			got <- strings.ReplaceAll(string(b), "\r\n", "\n")
		}()
		var e bytes.Buffer
		code := dispatch(context.Background(), append([]string{"explain", explainLog}, args...), pts, &e)
		pts.Close()
		if code != 0 {
			t.Fatalf("explain %v: exit %d: %s", args, code, e.String())
		}
		return <-got
	}
	out := read()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if w := len([]rune(line)); w > 60 && len(strings.Fields(line)) > 1 {
			t.Errorf("a line of %d columns on a terminal of 60:\n%s", w, line)
		}
	}
	if !strings.Contains(out, "(3 more: --all lists them all") {
		t.Errorf("without --all the text should say how many remedies it left out:\n%s", out)
	}
	all := read("--all")
	if strings.Contains(all, "more:") || !strings.Contains(all, " 9. ") {
		t.Errorf("--all should list all nine remedies:\n%s", all)
	}
}
