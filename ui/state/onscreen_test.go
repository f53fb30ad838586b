package state

import (
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// judged is what the root shows: a snapshot and its alerts.
type judged struct {
	Snap   sampler.Snapshot
	Alerts []advisor.Alert
}

// While paused the screen keeps its snapshot and that snapshot's alerts;
// resuming shows the newest, with its own.
func TestPauseKeepsTheSnapshotAndItsAlerts(t *testing.T) {
	at := func(s int, rule string) judged {
		return judged{sampler.Snapshot{Time: fixedStart.Add(time.Duration(s) * time.Second)},
			[]advisor.Alert{{Rule: rule, DeviceID: "0"}}}
	}
	var o OnScreen[judged]
	if o.TogglePause() || !o.paused {
		t.Fatal("pausing before any snapshot showed one")
	}
	if o.Receive(at(1, "a")) || o.have {
		t.Error("a snapshot shown while paused")
	}
	if o.TogglePause() || o.have {
		t.Fatal("resuming before anything was shown showed a snapshot")
	}
	if !o.Receive(at(2, "b")) || o.shown.Alerts[0].Rule != "b" {
		t.Fatal("a snapshot not shown while running")
	}
	o.TogglePause()
	o.Receive(at(3, "c"))
	o.Receive(at(4, "d"))
	if !o.shown.Snap.Time.Equal(fixedStart.Add(2*time.Second)) || o.shown.Alerts[0].Rule != "b" {
		t.Errorf("paused: shows %v with %q, want the snapshot at pause with its alert", o.shown.Snap.Time, o.shown.Alerts[0].Rule)
	}
	if !o.TogglePause() || !o.shown.Snap.Time.Equal(fixedStart.Add(4*time.Second)) || o.shown.Alerts[0].Rule != "d" {
		t.Errorf("resumed: shows %v with %q, want the newest with its alert", o.shown.Snap.Time, o.shown.Alerts[0].Rule)
	}
}
