package advisor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vramtop/vramtop/sampler"
)

// PickOptions are what `vramtop pick` asks for.
type PickOptions struct {
	// MinFree is the least free memory a device must have (0: any).
	MinFree uint64
	// Count is how many devices are wanted (at least 1).
	Count int
	// MaxUtil, when set, is the highest utilization (percent) a device
	// may have; a device that reports none qualifies.
	MaxUtil *float64
	// AllHosts takes the devices of every host of the snapshot (a fleet's),
	// not only those of the snapshot's own host.
	AllHosts bool
}

// Pick is one chosen device.
type Pick struct {
	DeviceID string
	Index    int
	// Value names the device in CUDA_VISIBLE_DEVICES: its index, or a MIG
	// instance's UUID ("MIG-...") where known, else its ID.
	Value string
	Free  uint64
}

// ErrTooFewGPUs is what PickDevices's error is (errors.Is) when fewer
// devices qualify than were asked for.
var ErrTooFewGPUs = errors.New("too few GPUs qualify")

// pickError is a one-line reason that is ErrTooFewGPUs.
type pickError string

func (e pickError) Error() string        { return string(e) }
func (e pickError) Is(target error) bool { return target == ErrTooFewGPUs }

func pickErrorf(format string, args ...any) error { return pickError(fmt.Sprintf(format, args...)) }

// pickable is true for devices a job can be sent to: not a MIG parent (its
// instances are listed), not failed, read at least once, on this host.
func pickable(d *sampler.Device) bool {
	return !d.MIGEnabled && d.Err == "" && d.MemoryTotal > 0
}

// freerThan orders devices for picking: more free memory first, then fewer
// processes, then the lower index and ID.
func freerThan(a, b *sampler.Device) bool {
	if a.MemoryFree != b.MemoryFree {
		return a.MemoryFree > b.MemoryFree
	}
	if na, nb := liveProcesses(a), liveProcesses(b); na != nb {
		return na < nb
	}
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.ID < b.ID
}

func liveProcesses(d *sampler.Device) int {
	n := 0
	for j := range d.Processes {
		if !d.Processes[j].Exited {
			n++
		}
	}
	return n
}

// VisibleDevicesValue is how CUDA_VISIBLE_DEVICES names d: the index of a
// whole GPU (NVML's PCI order: on hosts with mixed GPU models set
// CUDA_DEVICE_ORDER=PCI_BUS_ID too), the UUID of a MIG instance where known,
// else its ID.
func VisibleDevicesValue(d *sampler.Device) string {
	if d.MIG != nil {
		if strings.HasPrefix(d.UUID, "MIG-") {
			return d.UUID
		}
		return d.ID
	}
	return strconv.Itoa(d.Index)
}

// busy reports whether d is above opt.MaxUtil.
func (opt PickOptions) busy(d *sampler.Device) bool {
	return opt.MaxUtil != nil && d.UtilizationPercent != nil && *d.UtilizationPercent > *opt.MaxUtil
}

// PickDevices returns the freest devices of snap, freest first: opt.Count
// of them, each with at least opt.MinFree free and not above opt.MaxUtil.
// MIG parents and failed devices are skipped; MIG instances compete as
// devices of their own. When fewer than opt.Count qualify the error
// (ErrTooFewGPUs) says how many did and what the freest has, or that the
// GPUs with the memory are too busy.
func PickDevices(snap sampler.Snapshot, opt PickOptions) ([]Pick, error) {
	if opt.Count < 1 {
		opt.Count = 1
	}
	var cands []*sampler.Device
	for i := range snap.Devices {
		d := &snap.Devices[i]
		if !pickable(d) || !opt.AllHosts && d.Hostname != "" && d.Hostname != snap.Hostname {
			continue
		}
		cands = append(cands, d)
	}
	if len(cands) == 0 {
		if snap.Err != "" {
			return nil, pickErrorf("reading the GPUs failed: %s", snap.Err)
		}
		return nil, pickErrorf("no usable GPU found")
	}
	// Insertion sort: a handful of devices, and no allocation for a closure.
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0 && freerThan(cands[j], cands[j-1]); j-- {
			cands[j], cands[j-1] = cands[j-1], cands[j]
		}
	}
	var picks []Pick
	busy := 0 // devices with the memory, above MaxUtil
	for _, d := range cands {
		if d.MemoryFree < opt.MinFree || d.MemoryFree == 0 {
			break // sorted: the rest have less
		}
		if len(picks) == opt.Count {
			break
		}
		if opt.busy(d) {
			busy++
			continue
		}
		picks = append(picks, Pick{DeviceID: d.ID, Index: d.Index, Value: VisibleDevicesValue(d), Free: d.MemoryFree})
	}
	if len(picks) < opt.Count {
		f := cands[0]
		need := "free memory"
		if opt.MinFree > 0 {
			need = "at least " + FormatBytes(opt.MinFree) + " free"
		}
		switch {
		case busy > 0 && len(picks) == 0:
			return nil, pickErrorf("the GPUs with %s are above %g%% utilization", need, *opt.MaxUtil)
		case len(picks) == 0:
			return nil, pickErrorf("no GPU has %s (the freest, %s, has %s)", need, gpuName(f), FormatBytes(f.MemoryFree))
		case busy > 0:
			return nil, pickErrorf("%d GPUs asked, only %d %s %s and at most %g%% utilization; %d more with the memory %s busier", opt.Count, len(picks),
				plural(len(picks), "has", "have"), need, *opt.MaxUtil, busy, plural(busy, "is", "are"))
		}
		return nil, pickErrorf("%d GPUs asked, only %d %s %s", opt.Count, len(picks), plural(len(picks), "has", "have"), need)
	}
	return picks, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// JoinPicks writes picks as a CUDA_VISIBLE_DEVICES value: "2,0".
func JoinPicks(picks []Pick) string {
	vs := make([]string, len(picks))
	for i, p := range picks {
		vs[i] = p.Value
	}
	return strings.Join(vs, ",")
}
