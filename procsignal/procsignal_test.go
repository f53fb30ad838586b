//go:build linux

package procsignal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

// child starts a process that sleeps until signalled and returns it with
// the Target a snapshot would show for it.
func child(t *testing.T) (*exec.Cmd, Target) {
	t.Helper()
	c, info := testbin.Sleeper(t)
	uid := info.UID
	return c, Target{PID: uint32(c.Process.Pid), StartTime: info.StartTime, UID: &uid}
}

// alive reports whether the child is still running (not signalled).
func alive(c *exec.Cmd) bool {
	return c.Process.Signal(syscall.Signal(0)) == nil && c.ProcessState == nil
}

// terminatedBy waits for c and reports the signal that ended it.
func terminatedBy(t *testing.T, c *exec.Cmd) syscall.Signal {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the child was not ended by the signal")
	}
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

func modes() map[string]Opener {
	return map[string]Opener{"pidfd": {}, "kill": {NoPidfd: true}}
}

func TestSignalReachesTheProcessShown(t *testing.T) {
	for name, o := range modes() {
		t.Run(name, func(t *testing.T) {
			c, tg := child(t)
			h, err := o.Open(tg)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if name == "pidfd" && !h.Pidfd() {
				t.Log("this kernel offers no pidfd: the kill path was tested twice")
			}
			if err := h.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if sig := terminatedBy(t, c); sig != syscall.SIGTERM {
				t.Errorf("the child ended by %v, want SIGTERM", sig)
			}
		})
	}
}

func TestProcessThatExitedIsRefused(t *testing.T) {
	for name, o := range modes() {
		t.Run(name+"/before open", func(t *testing.T) {
			c, tg := child(t)
			c.Process.Kill()
			c.Wait()
			if _, err := o.Open(tg); !errors.Is(err, ErrExited) {
				t.Errorf("open of an exited process: %v, want %v", err, ErrExited)
			}
		})
		t.Run(name+"/while the prompt is open", func(t *testing.T) {
			c, tg := child(t)
			h, err := o.Open(tg)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			c.Process.Kill()
			c.Wait()
			if err := h.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
				t.Errorf("signal to an exited process: %v, want %v", err, ErrExited)
			}
		})
	}
}

// A PID that names a process started at another time than the one shown
// (the shown one exited and its PID was given to a new one) gets nothing.
func TestReusedPIDIsRefused(t *testing.T) {
	for name, o := range modes() {
		t.Run(name, func(t *testing.T) {
			c, tg := child(t)
			tg.StartTime = tg.StartTime.Add(-3 * time.Second) // the process shown was an older one
			h, err := o.Open(tg)
			if !errors.Is(err, ErrChanged) {
				t.Fatalf("open: %v, want %v", err, ErrChanged)
			}
			if h != nil {
				t.Error("a handle was returned with the error")
			}
			if !alive(c) {
				t.Error("the process with the reused PID was signalled")
			}
		})
	}
}

// fakeProc writes a /proc with one process: pid, started startTicks after
// a boot at boot, of real UID uid.
func fakeProc(t *testing.T, root string, pid uint32, boot time.Time, startTicks uint64, uid uint32) {
	t.Helper()
	dir := filepath.Join(root, strconv.FormatUint(uint64(pid), 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "stat"), fmt.Appendf(nil, "cpu  1 2 3 4\nbtime %d\n", boot.Unix()), 0o644); err != nil {
		t.Fatal(err)
	}
	write("stat", fmt.Sprintf("%d (sleep) S 1 %d %d 0 -1 4194304 100 0 0 0 50 10 0 0 20 0 1 0 %d 123456789 2048\n", pid, pid, pid, startTicks))
	write("status", fmt.Sprintf("Name:\tsleep\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid))
	write("cmdline", "sleep\x0060\x00")
}

// Without a pidfd the check runs again right before kill: a PID reused
// between the prompt and the confirmation gets nothing.
func TestReuseBetweenPromptAndConfirmation(t *testing.T) {
	c, tg := child(t)
	root := t.TempDir()
	boot := time.Unix(1_700_000_000, 0)
	uid := *tg.UID
	fakeProc(t, root, tg.PID, boot, 4200, uid)
	shown := tg
	shown.StartTime = boot.Add(42 * time.Second)
	o := Opener{ProcRoot: root, NoPidfd: true}
	h, err := o.Open(shown)
	if err != nil {
		t.Fatalf("open of the process as shown: %v", err)
	}
	defer h.Close()
	fakeProc(t, root, tg.PID, boot, 9900, uid) // the PID now names a process started later
	if err := h.Signal(syscall.SIGTERM); !errors.Is(err, ErrChanged) {
		t.Errorf("signal after the PID was reused: %v, want %v", err, ErrChanged)
	}
	if !alive(c) {
		t.Error("the process with the reused PID was signalled")
	}
}

// With a pidfd the process is held from the prompt on; the check right
// after taking it compares /proc with what was shown.
func TestPidfdCheckedAgainstProc(t *testing.T) {
	c, tg := child(t)
	root := t.TempDir()
	boot := time.Unix(1_700_000_000, 0)
	fakeProc(t, root, tg.PID, boot, 9900, *tg.UID)
	shown := tg
	shown.StartTime = boot.Add(42 * time.Second)
	if _, err := (Opener{ProcRoot: root}).Open(shown); !errors.Is(err, ErrChanged) {
		t.Errorf("open: %v, want %v", err, ErrChanged)
	}
	if !alive(c) {
		t.Error("signalled")
	}
}

func TestOwnerIsComparedByUID(t *testing.T) {
	c, tg := child(t)
	other := int(*tg.UID) + 4242
	if other == 0 {
		other = 1
	}
	// Someone else's process, for a caller who is not root.
	if _, err := (Opener{Euid: &other}).Open(tg); !errors.Is(err, ErrNotOwner) {
		t.Errorf("open as UID %d: %v, want %v", other, err, ErrNotOwner)
	}
	// The snapshot said another UID than /proc says now.
	root := 0
	wrong := *tg.UID + 1
	changed := tg
	changed.UID = &wrong
	if _, err := (Opener{Euid: &root}).Open(changed); !errors.Is(err, ErrChanged) {
		t.Errorf("open with a changed owner: %v, want %v", err, ErrChanged)
	}
	if !alive(c) {
		t.Error("signalled")
	}
}

func TestUnknownStartOrOwnerIsRefused(t *testing.T) {
	_, tg := child(t)
	noStart := tg
	noStart.StartTime = time.Time{}
	noUID := tg
	noUID.UID = nil
	for _, x := range []Target{noStart, noUID, {}} {
		if _, err := (Opener{}).Open(x); !errors.Is(err, ErrUnknown) {
			t.Errorf("open %+v: %v, want %v", x, err, ErrUnknown)
		}
	}
}

func TestClosedHandleSignalsNothing(t *testing.T) {
	c, tg := child(t)
	h, err := (Opener{}).Open(tg)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if err := h.Signal(syscall.SIGTERM); err == nil {
		t.Error("a closed handle sent a signal")
	}
	if !alive(c) {
		t.Error("signalled")
	}
}

// Two readers of /proc may see the boot time one second apart: the same
// start then reads exactly one second off, and is still the process
// shown; any other difference is another process.
func TestBootTimeWobble(t *testing.T) {
	c, tg := child(t)
	boot := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		bootShift time.Duration
		ticks     uint64
		ok        bool
	}{
		{0, 4200, true},
		{time.Second, 4200, true},
		{-time.Second, 4200, true},
		{0, 4201, false},           // 10 ms later: another process
		{time.Second, 4150, false}, // half a second off: another process
		{2 * time.Second, 4200, false},
	} {
		root := t.TempDir()
		fakeProc(t, root, tg.PID, boot.Add(tt.bootShift), tt.ticks, *tg.UID)
		shown := tg
		shown.StartTime = boot.Add(42 * time.Second)
		h, err := (Opener{ProcRoot: root, NoPidfd: true}).Open(shown)
		if tt.ok != (err == nil) {
			t.Errorf("boot %+v, ticks %d: open %v, want ok=%v", tt.bootShift, tt.ticks, err, tt.ok)
		}
		h.Close()
	}
	if !alive(c) {
		t.Error("signalled")
	}
}
