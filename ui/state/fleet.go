package state

import (
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
)

// Fleet is which host of a fleet is open. A snapshot whose devices carry
// hostnames is a fleet's: it is shown as the list of its hosts until one is
// opened, then as that host's GPUs and processes.
type Fleet struct {
	on   bool             // the snapshot shown is a fleet's
	host string           // the open host; "" shows the list of hosts
	view sampler.Snapshot // the snapshot shown, reduced to the open host
	tell func(string)     // told the open host (Options.OpenHost); nil for none
}

// NewFleet is a Fleet that tells tell (nil: nothing) each host opened.
func NewFleet(tell func(string)) Fleet { return Fleet{tell: tell} }

// See takes the snapshot shown; it reports whether the view turned into a
// fleet's or out of being one.
func (f *Fleet) See(s sampler.Snapshot) (turned bool) {
	on := draw.IsFleet(s)
	turned, f.on = on != f.on, on
	f.view = s
	if f.on && f.host != "" {
		f.view = oneHost(s, f.host)
	}
	return turned
}

// Open opens host h, the list of hosts when h is "", and tells the source.
func (f *Fleet) Open(h string) {
	f.host = h
	if f.tell != nil {
		f.tell(h)
	}
}

// HostList reports whether the list of a fleet's hosts is on screen.
func (f *Fleet) HostList() bool { return f.on && f.host == "" }

// On reports whether the snapshot shown is a fleet's.
func (f *Fleet) On() bool { return f.on }

// Host is the open host; "" while the list of hosts is shown.
func (f *Fleet) Host() string { return f.host }

// View is the snapshot shown, reduced to the open host.
func (f *Fleet) View() sampler.Snapshot { return f.view }

// oneHost is snap reduced to host name's devices.
func oneHost(snap sampler.Snapshot, name string) sampler.Snapshot {
	out := snap
	out.Devices = nil
	for _, d := range snap.Devices {
		if d.Hostname == name {
			out.Devices = append(out.Devices, d)
		}
	}
	out.Hostname = name
	return out
}
