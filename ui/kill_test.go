//go:build linux

package ui

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/procs"
)

// shownChild starts a process and returns it with a snapshot that shows it
// on GPU 0 as /proc describes it (start time, UID), shifted by shift.
func shownChild(t *testing.T, shift time.Duration) (*exec.Cmd, sampler.Snapshot) {
	t.Helper()
	c, info := testbin.Sleeper(t)
	used, uid := uint64(draw.GiB), info.UID
	snap := sampler.Snapshot{Time: time.Now(), Interval: time.Second, Devices: []sampler.Device{{
		ID: "0", Name: "H200", MemoryTotal: 100 * draw.GiB, MemoryUsed: 2 * draw.GiB, MemoryFree: 98 * draw.GiB,
		Processes: []sampler.Process{{PID: uint32(c.Process.Pid), User: "me", UID: &uid, Command: "sleep 60", UsedBytes: &used,
			Type: "compute", Visible: true, StartTime: info.StartTime.Add(shift)}},
	}}}
	return c, snap
}

// liveModel is the view with the real signalling (procsignal) and the
// caller's UID.
func liveModel(t *testing.T, snap sampler.Snapshot) *Model {
	t.Helper()
	m := New(nil, Options{User: "me", Now: time.Now})
	setRules(m, testRules{})
	m.euid = os.Geteuid()
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	selectProc(t, m, func(r procs.Row) bool { return r.Kind == procs.RowProc })
	return m
}

// K then y ends the process shown.
func TestKillSignalsTheProcessShown(t *testing.T) {
	c, snap := shownChild(t, 0)
	m := liveModel(t, snap)
	keys(m, "K")
	if !m.prompt.Active() {
		t.Fatalf("K should open the prompt:\n%s", screenText(m))
	}
	keys(m, "y")
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the process was not ended:\n%s", screenText(m))
	}
	if ws, _ := c.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("the process ended by %v, want SIGTERM", c.ProcessState)
	}
	if s := screenText(m); !strings.Contains(s, "sent SIGTERM") {
		t.Errorf("the status should say SIGTERM was sent:\n%s", s)
	}
}

// A snapshot whose process started at another time than the one now
// behind its PID (the PID was reused) gets no prompt and no signal; nor
// does a process that exited before K.
func TestKillRefusesAReusedOrExitedPID(t *testing.T) {
	c, snap := shownChild(t, -5*time.Second)
	m := liveModel(t, snap)
	keys(m, "K")
	if m.prompt.Active() || !strings.Contains(screenText(m), "is no longer the process shown") {
		t.Errorf("a reused PID should be refused:\n%s", screenText(m))
	}
	keys(m, "y")
	if c.Process.Signal(syscall.Signal(0)) != nil {
		t.Error("the process behind the reused PID was signalled")
	}

	gone, snap2 := shownChild(t, 0)
	m2 := liveModel(t, snap2)
	gone.Process.Kill()
	gone.Wait()
	keys(m2, "K")
	if m2.prompt.Active() || !strings.Contains(screenText(m2), "has exited") {
		t.Errorf("an exited process should be refused:\n%s", screenText(m2))
	}
}
