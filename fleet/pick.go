package fleet

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/metricname"
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

// ProcessesMatter is the hosts whose processes, not read, a pick among
// view (Pickable's) with opt needs to choose as it would with every
// host's processes read, or to name the same GPU as the freest:
// advisor.PickDevices orders GPUs of equal free memory by their
// processes. Those are the hosts of GPUs not read that could be picked
// and are as free (to the byte) as another such GPU at or above the last
// one picked (at the top when too few qualify); nil when none. A pick
// across the fleet reads those only (Source.ReadTiedProcesses, and
// Source.ReadProcessesOf while it waits).
func ProcessesMatter(view sampler.Snapshot, opt advisor.PickOptions) []string {
	if opt.Count < 1 {
		opt.Count = 1
	}
	busy := func(d *sampler.Device) bool {
		return opt.MaxUtil != nil && d.UtilizationPercent != nil && *d.UtilizationPercent > *opt.MaxUtil
	}
	// The free memory from which ties count, and which GPUs count: with
	// enough GPUs that qualify (PickDevices picks then), the last one
	// picked's and those that qualify; else the freest's (the error
	// names it) and every one. Not by PickDevices, whose sort is for a
	// host's few GPUs.
	var frees []uint64
	var top uint64
	for i := range view.Devices {
		d := &view.Devices[i]
		if !pickableDevice(d) {
			continue
		}
		top = max(top, d.MemoryFree)
		if d.MemoryFree > 0 && d.MemoryFree >= opt.MinFree && !busy(d) {
			frees = append(frees, d.MemoryFree)
		}
	}
	enough := len(frees) >= opt.Count
	from := top
	if enough {
		slices.Sort(frees)
		from = frees[len(frees)-opt.Count]
	}
	byFree := map[uint64][]*sampler.Device{}
	for i := range view.Devices {
		d := &view.Devices[i]
		if !pickableDevice(d) || d.MemoryFree < from {
			continue
		}
		if enough && (d.MemoryFree < opt.MinFree || busy(d)) {
			continue
		}
		byFree[d.MemoryFree] = append(byFree[d.MemoryFree], d)
	}
	var hosts []string
	for _, ds := range byFree {
		if len(ds) < 2 {
			continue
		}
		for _, d := range ds {
			if d.ProcessesNotRead && !slices.Contains(hosts, d.Hostname) {
				hosts = append(hosts, d.Hostname)
			}
		}
	}
	slices.Sort(hosts)
	return hosts
}

// pickableDevice is a GPU advisor.PickDevices takes among the fleet's.
func pickableDevice(d *sampler.Device) bool {
	return !d.MIGEnabled && d.Err == "" && d.MemoryTotal > 0
}

// ReadTiedProcesses reads the processes of the devices of hosts in snap whose
// processes were not read (ProcessesMatter's hosts), at once and with no
// other query, and puts them in a copy of snap: a pick then orders those
// GPUs as it would with every host's processes read.
func (s *Source) ReadTiedProcesses(ctx context.Context, snap sampler.Snapshot, hosts []string) (sampler.Snapshot, error) {
	if len(hosts) == 0 {
		return snap, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = regexp.QuoteMeta(h)
	}
	re := strconv.Quote(strings.Join(names, "|"))
	q := "(" + ProcsQuery(metricname.LabelHostname+"=~"+re) + ") or (" + ProcsQuery(metricname.LabelHostnameOld+"=~"+re) + ")"
	smps, err := s.client.Query(ctx, q)
	if err != nil {
		return snap, s.timeoutError(err)
	}
	// The devices asked for, by the key their series carry, decoded as a
	// round's processes are (procsOf).
	want := map[string]sampler.DeviceInfo{}
	for _, d := range snap.Devices {
		if d.ProcessesNotRead && slices.Contains(hosts, d.Hostname) {
			want[d.ID] = sampler.DeviceInfo{ID: d.ID, Hostname: d.Hostname}
		}
	}
	devs := map[key]*building{}
	for _, smp := range smps {
		k := keyOf(smp.Metric)
		if info, ok := want[k.id()]; ok && devs[k] == nil {
			devs[k] = &building{k: k, info: info}
		}
	}
	ps, _ := procsOf(smps, devs, "")
	byID := map[string][]sampler.Process{}
	for _, p := range ps {
		if !slices.ContainsFunc(byID[p.dev], func(q sampler.Process) bool { return q.PID == p.p.PID }) {
			byID[p.dev] = append(byID[p.dev], p.p.Process)
		}
	}
	out := snap
	out.Devices = slices.Clone(snap.Devices)
	for i := range out.Devices {
		d := &out.Devices[i]
		if d.ProcessesNotRead && slices.Contains(hosts, d.Hostname) {
			d.Processes, d.ProcessesNotRead = byID[d.ID], false
		}
	}
	return out, nil
}
