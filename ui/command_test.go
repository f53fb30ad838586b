package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/procs"
)

// A process's container shows in the --once table as in the live view, and
// a process of another PID namespace says so in both.
func TestContainerShownInTableAndLiveView(t *testing.T) {
	used := uint64(3 << 30)
	snap := sampler.Snapshot{
		Time: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Hostname: "h", Source: "nvml",
		Devices: []sampler.Device{{
			ID: "0", Name: "H200", MemoryTotal: 100 << 30, MemoryUsed: 2 * used, MemoryFree: 100<<30 - 2*used,
			Processes: []sampler.Process{
				{PID: 11, User: "ann", Command: "python serve.py", UsedBytes: &used, Type: "compute", Visible: true,
					Container: "4f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e"},
				{PID: 12, UsedBytes: &used, Type: "compute", Container: "0123456789abcdef"},
			},
		}},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, snap, advisor.DefaultThresholds()); err != nil {
		t.Fatal(err)
	}
	want := []string{"[4f9c2d1e8b7a] python serve.py", "(other PID namespace; container 0123456789ab)"}
	for i, w := range want {
		if got := procs.CommandCell(snap.Devices[0].Processes[i]); got != w {
			t.Errorf("live view's command cell %q, want %q", got, w)
		}
		if !strings.Contains(b.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, b.String())
		}
	}
}
