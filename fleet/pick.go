package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/sampler"
)

// A pick across the fleet (vramtop pick --prometheus, vramtop wait
// --prometheus) chooses among the GPUs of every host the fleet lists as
// vramtop pick chooses on one host (advisor.PickDevices: the most free
// memory first, then the fewest processes), leaving out the hosts that are
// down and the GPUs claimed on their hosts. It claims nothing itself: a
// claim is a lock on the GPU's host.

// Choice is one GPU chosen across the fleet.
type Choice struct {
	// Host is the GPU's host, as the fleet names it (its hostname label).
	Host string
	// GPU names the GPU in CUDA_VISIBLE_DEVICES on Host: its index, a MIG
	// instance's UUID, or its UUID where asked.
	GPU string
	// Device is the GPU as the snapshot it was chosen from has it.
	Device *sampler.Device
}

// String is the choice as a pick prints it: HOST:GPU.
func (c Choice) String() string { return c.Host + ":" + c.GPU }

// ErrNoGPUs is Choose's error when Prometheus lists no GPU at all.
var ErrNoGPUs = errors.New("no GPU series")

// maxNoted bounds the hosts and GPUs a note on what was left out names.
const maxNoted = 5

// Pickable is snap less the devices a pick across the fleet must not hand
// out, and a few words on them (for a message; "" when none): every device
// while Prometheus cannot be read (snap.Err: the values are the last
// ones), those of hosts that are down or stale (IsHostDown), any other
// whose values are not fresh (an error), and the GPUs claimed on their
// hosts.
func Pickable(snap sampler.Snapshot, claimed map[string]Claim) (sampler.Snapshot, string) {
	out := snap
	out.Devices = nil
	if snap.Err != "" {
		return out, "" // PickDevices says the error
	}
	out.Devices = make([]sampler.Device, 0, len(snap.Devices))
	var down []string
	var said []string
	more := 0
	say := func(s string) {
		if len(said) < maxNoted {
			said = append(said, s)
		} else {
			more++
		}
	}
	for i := range snap.Devices {
		d := &snap.Devices[i]
		switch c, isClaimed := claimed[d.ID]; {
		case IsHostDown(*d):
			if !slices.Contains(down, d.Hostname) {
				down = append(down, d.Hostname)
			}
		case d.Err != "":
			if !d.MIGEnabled {
				say(d.ID + " not read: " + claims.Clip(d.Err, 120))
			}
		case isClaimed:
			say(d.ID + " claimed by " + c.describe())
		default:
			out.Devices = append(out.Devices, *d)
		}
	}
	var note []string
	if len(down) > 0 {
		slices.Sort(down)
		n := len(down)
		if n > maxNoted {
			down = append(down[:maxNoted], fmt.Sprintf("%d more", n-maxNoted))
		}
		note = append(note, fmt.Sprintf("%d %s down (%s)", n, plural(n, "host", "hosts"), strings.Join(down, ", ")))
	}
	note = append(note, said...)
	if more > 0 {
		note = append(note, fmt.Sprintf("%d more GPUs not free to pick", more))
	}
	return out, strings.Join(note, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// describe is c in a few words: "alice (40 GiB)".
func (c Claim) describe() string {
	who := c.User
	if who == "" {
		who = "someone"
	}
	if c.Bytes > 0 {
		who += " (" + advisor.FormatBytes(c.Bytes) + ")"
	}
	return who
}

// Choose picks opt.Count GPUs among snap's hosts, freest first, each with
// at least opt.MinFree free and not above opt.MaxUtil, none of a host
// that is down and none of claimed (by device ID; Source.Claims). byUUID
// names them by UUID where known. When too few qualify the error is
// PickDevices's (advisor.ErrTooFewGPUs) and says what was left out.
func Choose(snap sampler.Snapshot, claimed map[string]Claim, opt advisor.PickOptions, byUUID bool) ([]Choice, error) {
	if snap.Err == "" && len(snap.Devices) == 0 {
		return nil, fmt.Errorf("prometheus at %s: %w of vramtop serve or dcgm-exporter (does it scrape them?)", snap.Hostname, ErrNoGPUs)
	}
	view, note := Pickable(snap, claimed)
	opt.AllHosts = true
	picks, err := advisor.PickDevices(view, opt)
	if err != nil {
		if note != "" {
			err = fmt.Errorf("%w; %s", err, note)
		}
		return nil, err
	}
	return Choices(view, picks, byUUID), nil
}

// Choices are picks of the fleet snapshot snap as HOST:GPU choices, by
// UUID where byUUID asks and the GPU has one.
func Choices(snap sampler.Snapshot, picks []advisor.Pick, byUUID bool) []Choice {
	out := make([]Choice, 0, len(picks))
	for _, p := range picks {
		i := slices.IndexFunc(snap.Devices, func(d sampler.Device) bool { return d.ID == p.DeviceID })
		if i < 0 {
			continue
		}
		d := &snap.Devices[i]
		gpu := p.Value
		if byUUID && d.UUID != "" {
			gpu = d.UUID
		}
		if gpu == d.ID {
			// A MIG instance without a UUID: its ID less the host.
			gpu = strings.TrimPrefix(d.ID, d.Hostname+":")
		}
		out = append(out, Choice{Host: d.Hostname, GPU: gpu, Device: d})
	}
	return out
}
