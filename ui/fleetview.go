package ui

import (
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/hosts"
)

// fleetView is which host of a fleet is open. A snapshot whose devices
// carry hostnames is a fleet's: it is shown as the list of its hosts until
// one is opened, then as that host's GPUs and processes.
type fleetView struct {
	on   bool             // the snapshot shown is a fleet's
	host string           // the open host; "" shows the list of hosts
	view sampler.Snapshot // the snapshot shown, reduced to the open host
	tell func(string)     // told the open host (Options.OpenHost); nil for none
}

// see takes the snapshot shown; it reports whether the view turned into a
// fleet's or out of being one.
func (f *fleetView) see(s sampler.Snapshot) (turned bool) {
	on := draw.IsFleet(s)
	turned, f.on = on != f.on, on
	f.view = s
	if f.on && f.host != "" {
		f.view = hosts.Snapshot(s, f.host)
	}
	return turned
}

// open opens host h, the list of hosts when h is "", and tells the source.
func (f *fleetView) open(h string) {
	f.host = h
	if f.tell != nil {
		f.tell(h)
	}
}

// hostList reports whether the list of a fleet's hosts is on screen.
func (f *fleetView) hostList() bool { return f.on && f.host == "" }
