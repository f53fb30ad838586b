package state

import (
	"slices"
	"testing"

	"github.com/vramtop/vramtop/sampler"
)

// A fleet's snapshot shows the list of its hosts; opening one shows its
// GPUs only and tells the source; esc's Open("") goes back to the list.
// A single host's snapshot is no fleet's, whatever host was open.
func TestFleetOpensAHost(t *testing.T) {
	fleet := sampler.Snapshot{Time: fixedStart, Devices: []sampler.Device{
		{ID: "a:0", Hostname: "a"}, {ID: "b:0", Hostname: "b"}, {ID: "b:1", Hostname: "b"},
	}}
	var told []string
	f := NewFleet(func(h string) { told = append(told, h) })
	if !f.See(fleet) || !f.on || !f.HostList() || len(f.view.Devices) != 3 {
		t.Fatalf("a fleet's first snapshot: turned on %v, list %v, %d devices", f.on, f.HostList(), len(f.view.Devices))
	}
	f.Open("b")
	if f.See(fleet) || f.HostList() || len(f.view.Devices) != 2 || f.view.Devices[0].Hostname != "b" {
		t.Errorf("host b open: list %v, devices %+v", f.HostList(), f.view.Devices)
	}
	f.Open("")
	f.See(fleet)
	if !f.HostList() || len(f.view.Devices) != 3 {
		t.Errorf("back to the list: list %v, %d devices", f.HostList(), len(f.view.Devices))
	}
	if !slices.Equal(told, []string{"b", ""}) {
		t.Errorf("the source was told %q, want b then the list", told)
	}
	one := sampler.Snapshot{Time: fixedStart, Devices: []sampler.Device{{ID: "0"}}}
	f.Open("b")
	if !f.See(one) || f.on || f.HostList() || len(f.view.Devices) != 1 {
		t.Errorf("one host's snapshot: on %v, %d devices", f.on, len(f.view.Devices))
	}
}
