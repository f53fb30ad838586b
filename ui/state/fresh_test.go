package state

import (
	"testing"
	"time"
)

// The display turns stale only on the check of the last snapshot, once one
// was shown; its age then ticks until a snapshot comes; a replay is never
// checked.
func TestFreshnessStaleOnlyForTheLastSnapshot(t *testing.T) {
	var f Freshness
	if f.Arrive(fixedStart, 2*time.Second, false) != nil {
		t.Error("a replay's snapshot scheduled a stale check")
	}
	if f.Arrive(fixedStart, 2*time.Second, true) == nil {
		t.Fatal("a live snapshot scheduled no stale check")
	}
	old := StaleCheck{f.gen}
	f.Arrive(fixedStart.Add(2*time.Second), 2*time.Second, true)
	if _, changed := f.Update(old, true); changed || f.stale {
		t.Error("the check of an older snapshot made the display stale")
	}
	if _, changed := f.Update(StaleCheck{f.gen}, false); changed || f.stale {
		t.Error("stale before anything was shown")
	}
	cmd, changed := f.Update(StaleCheck{f.gen}, true)
	if !changed || !f.stale || cmd == nil || !f.arrived.Equal(fixedStart.Add(2*time.Second)) {
		t.Fatalf("the last snapshot's check: changed %v, stale %v, tick %v, arrived %v", changed, f.stale, cmd != nil, f.arrived)
	}
	if cmd, changed := f.Update(StaleTick{f.gen}, true); !changed || cmd == nil {
		t.Error("the age stopped ticking while stale")
	}
	tick := StaleTick{f.gen}
	f.Arrive(fixedStart.Add(9*time.Second), 2*time.Second, true)
	if f.stale {
		t.Error("a new snapshot left the display stale")
	}
	if _, changed := f.Update(tick, true); changed {
		t.Error("the age kept ticking after a new snapshot")
	}
	if f.ended {
		t.Error("ended before the source did")
	}
	f.End()
	if !f.ended {
		t.Error("the source's end was not kept")
	}
}
