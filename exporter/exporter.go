// Package exporter publishes the sampler's latest Snapshot as Prometheus
// metrics: dcgm-exporter's framebuffer, temperature, power and utilization
// gauges (so existing dashboards work unchanged) and vramtop's own series in
// base units. A scrape reads the snapshot the sampler already published; it
// never calls NVML. The page is encoded once per snapshot and the same bytes
// go to every scraper.
package exporter

import (
	"cmp"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
)

// MaxCommandLen is the longest command label, in characters; longer command
// lines are cut and end in "…".
const MaxCommandLen = 60

// DefaultMaxProcessSeries is how many processes of each device get series
// by default: the ones using the most memory. Each PID is a series of its
// own, so without a bound Prometheus's series would follow process churn.
const DefaultMaxProcessSeries = 20

// Options configure a Collector.
type Options struct {
	// Hostname is the hostname label; the snapshot's host name when empty.
	Hostname string
	// Version is reported by vramtop_build_info.
	Version string
	// Monitor evaluates the advisor's rules for vramtop_alert
	// (*advisor.Monitor); no alert series when nil.
	Monitor Alerter
	// StaleAfter is the sample age beyond which vramtop_up is 0; by default
	// three sampling intervals, at least 5 s.
	StaleAfter time.Duration
	// NoCommandLabels leaves the command label out of the per-process
	// series (serve --no-command-labels): a command line may hold a token
	// or a password, and whoever can scrape the exporter reads it.
	NoCommandLabels bool
	// MaxProcessSeries bounds the per-process series of each device to the
	// processes using the most memory; DefaultMaxProcessSeries when 0, no
	// bound when negative. The device series are always complete.
	MaxProcessSeries int
	// Claims returns the GPU claims held on this host, by UUID, and a
	// generation that changes only when they do (claims.Watcher.Claims):
	// each device then has a vramtop_gpu_claimed series. No such series
	// when nil.
	Claims func() (map[string]claims.Claim, uint64)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Alerter evaluates alert rules over successive snapshots
// (advisor.Monitor).
type Alerter interface {
	Observe(sampler.Snapshot) []advisor.Alert
}

// LatestFunc returns the most recent Snapshot (Sampler.Latest).
type LatestFunc func() (sampler.Snapshot, bool)

// Collector turns the latest Snapshot into metrics: Page is the text page
// /metrics serves, written here once per snapshot. The tests hand the same
// metrics to client_golang's registry (collect_test.go), which checks them
// and encodes them for comparison with Page; the program does not link it
// (its package initialisation alone, a Go and a process collector in a
// default registry and protobuf's descriptors, cost every command, the live
// view too).
type Collector struct {
	latest LatestFunc
	opts   Options

	mu       sync.Mutex
	alerts   []advisor.Alert
	alertSeq uint64
	observed bool

	// The encoded page of the snapshot pageSeq and the claims of
	// generation pageClaims (all but the three series that change with
	// the clock).
	pageMu     sync.Mutex
	pageSeq    uint64
	pageClaims uint64
	pageOK     bool
	page       []byte
}

// New returns a collector reading snapshots from latest.
func New(latest LatestFunc, opts Options) *Collector {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MaxProcessSeries == 0 {
		opts.MaxProcessSeries = DefaultMaxProcessSeries
	}
	return &Collector{latest: latest, opts: opts}
}

// Observe feeds a snapshot to the advisor's monitor and returns the alerts
// in force. Call it for every published snapshot (Sampler.Subscribe) so the
// rules see each one; a scrape of a snapshot that was never observed
// observes it itself.
func (c *Collector) Observe(snap sampler.Snapshot) []advisor.Alert {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observeLocked(snap)
	return c.alerts
}

func (c *Collector) observeLocked(snap sampler.Snapshot) {
	if c.opts.Monitor == nil {
		return
	}
	if c.observed && snap.Seq == c.alertSeq {
		return
	}
	c.alerts = c.opts.Monitor.Observe(snap)
	c.alertSeq = snap.Seq
	c.observed = true
}

func (c *Collector) alertsFor(snap sampler.Snapshot) []advisor.Alert {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observeLocked(snap)
	return c.alerts
}

// Healthy reports whether a recent snapshot without a whole-source error
// exists, with a reason when it does not (for /healthz).
func (c *Collector) Healthy() (bool, string) {
	snap, ok := c.latest()
	return c.health(snap, ok)
}

func (c *Collector) health(snap sampler.Snapshot, ok bool) (bool, string) {
	if !ok {
		return false, "no sample yet"
	}
	age := c.opts.Now().Sub(snap.Time)
	if stale := c.staleAfter(snap); age > stale {
		return false, "last sample is " + age.Round(time.Millisecond).String() + " old (stale after " + stale.String() + ")"
	}
	if snap.Err != "" {
		return false, "sampling failed: " + snap.Err
	}
	return true, "ok"
}

func (c *Collector) staleAfter(snap sampler.Snapshot) time.Duration {
	if c.opts.StaleAfter > 0 {
		return c.opts.StaleAfter
	}
	d := 3 * max(snap.Interval, sampler.MinPublishInterval)
	return max(d, 5*time.Second)
}

// Page appends the text exposition of the latest snapshot to buf. The
// series of the snapshot are encoded once per snapshot; only the build
// info, vramtop_up and the sample's age are written per call.
func (c *Collector) Page(buf []byte) []byte {
	snap, ok := c.latest()
	buf = appendFamilies(buf, c.clockFamilies(snap, ok))
	if !ok {
		return buf
	}
	cl, gen := c.claims()
	c.pageMu.Lock()
	defer c.pageMu.Unlock()
	if !c.pageOK || c.pageSeq != snap.Seq || c.pageClaims != gen {
		c.page = appendFamilies(c.page[:0], c.snapshotFamilies(snap, cl))
		c.pageSeq, c.pageClaims, c.pageOK = snap.Seq, gen, true
	}
	return append(buf, c.page...)
}

// claims are the claims held now (nil: none read) and their generation.
func (c *Collector) claims() (map[string]claims.Claim, uint64) {
	if c.opts.Claims == nil {
		return nil, 0
	}
	return c.opts.Claims()
}

// family is one metric: its name, help and samples, all gauges.
type family struct {
	name, help string
	samples    []sample
}

type sample struct {
	labels labels
	value  float64
}

type label struct{ name, value string }

type labels []label

// clockFamilies are the series that change with the clock, not with the
// snapshot: the build info, vramtop_up and the sample's age.
func (c *Collector) clockFamilies(snap sampler.Snapshot, ok bool) []family {
	fams := []family{{name: metricname.BuildInfo, help: "vramtop's version; always 1.",
		samples: []sample{{labels{{"goversion", runtime.Version()}, {"version", c.opts.Version}}, 1}}}}
	host := c.host(snap, ok)
	up := 0.0
	if healthy, _ := c.health(snap, ok); healthy {
		up = 1
	}
	fams = append(fams, family{name: metricname.Up, help: "1 when the exporter has a recent sample of the GPUs and the last poll succeeded, 0 otherwise.",
		samples: []sample{{labels{{metricname.LabelHostname, host}}, up}}})
	if ok {
		age := c.opts.Now().Sub(snap.Time).Seconds()
		fams = append(fams, family{name: metricname.SampleAge, help: "Seconds since the GPUs were last sampled.",
			samples: []sample{{labels{{metricname.LabelHostname, host}}, max(age, 0)}}})
	}
	return fams
}

func (c *Collector) host(snap sampler.Snapshot, ok bool) string {
	if c.opts.Hostname != "" || !ok {
		return c.opts.Hostname
	}
	return snap.Hostname
}

// The families of a snapshot, in the order they are written.
const (
	fFBUsed = iota
	fFBFree
	fFBReserved
	fTemp
	fPower
	fUtilPct
	fSMClock
	fMemClock
	fTotal
	fUsed
	fFree
	fReserved
	fUnattributed
	fUtil
	fUnexported
	fUnexportedMem
	fProcMem
	fProcUnknown
	fAlert
	fClaimed
	fClaimedBytes
	nFamilies
)

var familyHeads = [nFamilies]family{
	fFBUsed:        {name: metricname.DCGMFBUsed, help: "Framebuffer memory used (in MiB)."},
	fFBFree:        {name: metricname.DCGMFBFree, help: "Framebuffer memory free (in MiB)."},
	fFBReserved:    {name: metricname.DCGMFBReserved, help: "Framebuffer memory reserved (in MiB)."},
	fTemp:          {name: metricname.DCGMGPUTemp, help: "GPU temperature (in C)."},
	fPower:         {name: metricname.DCGMPowerUsage, help: "Power draw (in W)."},
	fUtilPct:       {name: metricname.DCGMGPUUtil, help: "GPU utilization (in %)."},
	fSMClock:       {name: metricname.DCGMSMClock, help: "SM clock frequency (in MHz)."},
	fMemClock:      {name: metricname.DCGMMemClock, help: "Memory clock frequency (in MHz)."},
	fTotal:         {name: metricname.MemoryTotal, help: "GPU memory in total, in bytes."},
	fUsed:          {name: metricname.MemoryUsed, help: "GPU memory in use (NVML v2: without the driver's reservation), in bytes."},
	fFree:          {name: metricname.MemoryFree, help: "GPU memory free, in bytes."},
	fReserved:      {name: metricname.MemoryReserved, help: "GPU memory reserved by the driver, in bytes."},
	fUnattributed:  {name: metricname.MemoryUnattributed, help: "GPU memory in use that no listed process accounts for (other containers or PID namespaces, leaked contexts, the driver), in bytes."},
	fUtil:          {name: metricname.Utilization, help: "GPU utilization as the driver samples it, 0 to 1."},
	fUnexported:    {name: metricname.ProcessesUnlisted, help: "Processes on a device that have no series of their own (over --max-process-series: the ones using the least memory)."},
	fUnexportedMem: {name: metricname.MemoryUnlisted, help: "GPU memory the processes without series of their own use (over --max-process-series), in bytes; absent while one of them has no known usage."},
	fProcMem:       {name: metricname.ProcessMemory, help: "GPU memory a process uses on a device (its CUDA context included), in bytes."},
	fProcUnknown:   {name: metricname.ProcessUnknown, help: "1 for a process the driver lists on a device without saying how much memory it uses."},
	fAlert:         {name: metricname.Alert, help: "1 while an advisor rule fires on a GPU (or a process on it, with pid)."},
	fClaimed:       {name: metricname.Claimed, help: "1 while a vramtop user's claim (vramtop pick or wait) holds the GPU, with who claimed it (user); 0 otherwise."},
	fClaimedBytes:  {name: metricname.ClaimedBytes, help: "GPU memory the claim on the GPU asked for (--min-free), in bytes; absent while it is not claimed or the claim does not say."},
}

// snapshotFamilies are the series of a snapshot: devices, their processes
// (the largest MaxProcessSeries of each device), the alerts and, with
// Options.Claims, the claims cl on the devices.
func (c *Collector) snapshotFamilies(snap sampler.Snapshot, cl map[string]claims.Claim) []family {
	fams := familyHeads
	host := c.host(snap, true)
	var order []int
	for i := range snap.Devices {
		order = c.collectDevice(&fams, &snap.Devices[i], host, order)
		if c.opts.Claims != nil {
			collectClaim(&fams, &snap.Devices[i], host, cl)
		}
	}
	c.collectAlerts(&fams, snap, host)
	out := make([]family, 0, nFamilies)
	for _, f := range fams {
		if len(f.samples) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func (f *family) add(v float64, ls labels) { f.samples = append(f.samples, sample{ls, v}) }

// deviceLabels are dcgm-exporter's labels for a device: gpu is the GPU's
// index (the parent's for a MIG instance), device is "nvidiaN", and a MIG
// instance adds GPU_I_PROFILE and GPU_I_ID. model is the model label's name:
// dcgm's modelName on the DCGM_* families, model_name on vramtop's own.
func deviceLabels(d *sampler.Device, host, model string) labels {
	idx := d.Index
	if d.MIG != nil {
		idx = d.MIG.ParentIndex
	}
	gpu := strconv.Itoa(idx)
	// In the order of their names, as the page writes them.
	ls := make(labels, 0, 8)
	if d.MIG != nil {
		ls = append(ls, label{metricname.LabelGPUInstID, strconv.Itoa(d.MIG.GPUInstanceID)}, label{metricname.LabelGPUProfile, d.MIG.Profile})
	}
	return append(ls,
		label{metricname.LabelUUID, d.UUID},
		label{metricname.LabelDevice, "nvidia" + gpu},
		label{metricname.LabelGPU, gpu},
		label{metricname.LabelHostname, host},
		label{model, d.Name},
		label{metricname.LabelPCIBusID, d.PCIBusID},
	)
}

// MiB converts bytes to MiB as DCGM does (nvUsed / (1024 * 1024), integer
// division): the value is rounded down.
func MiB(b uint64) float64 { return float64(b / (1 << 20)) }

// collectDevice adds a device's series; order is scratch space, returned
// for the next device.
func (c *Collector) collectDevice(fams *[nFamilies]family, d *sampler.Device, host string, order []int) []int {
	// A device that failed this poll or was never read has no numbers
	// worth exporting: its series are absent, not zero.
	if d.Err != "" || d.MemoryTotal == 0 {
		return order
	}
	ls := deviceLabels(d, host, metricname.LabelModelName)
	// The same labels with vramtop's own spelling of the model: both sort
	// between hostname and pci_bus_id, so the order of names holds.
	own := slices.Clone(ls)
	for i := range own {
		if own[i].name == metricname.LabelModelName {
			own[i].name = metricname.LabelModelNameOwn
		}
	}
	// dcgm-exporter reports a MIG-enabled GPU through its instances.
	if !d.MIGEnabled {
		fams[fFBUsed].add(MiB(d.MemoryUsed), ls)
		fams[fFBFree].add(MiB(d.MemoryFree), ls)
		if d.MemoryReserved != nil {
			fams[fFBReserved].add(MiB(*d.MemoryReserved), ls)
		}
	}
	if d.TemperatureC != nil {
		fams[fTemp].add(float64(*d.TemperatureC), ls)
	}
	if d.PowerWatts != nil {
		fams[fPower].add(*d.PowerWatts, ls)
	}
	if d.UtilizationPercent != nil {
		fams[fUtilPct].add(*d.UtilizationPercent, ls)
		fams[fUtil].add(*d.UtilizationPercent/100, own)
	}
	if d.SMClockMHz != nil {
		fams[fSMClock].add(float64(*d.SMClockMHz), ls)
	}
	if d.MemoryClockMHz != nil {
		fams[fMemClock].add(float64(*d.MemoryClockMHz), ls)
	}
	fams[fTotal].add(float64(d.MemoryTotal), own)
	fams[fUsed].add(float64(d.MemoryUsed), own)
	fams[fFree].add(float64(d.MemoryFree), own)
	if d.MemoryReserved != nil {
		fams[fReserved].add(float64(*d.MemoryReserved), own)
	}
	if d.Unattributed != nil {
		fams[fUnattributed].add(float64(*d.Unattributed), own)
	}

	// The live processes, one per PID, largest first; those past the
	// bound are counted, not listed.
	order = order[:0]
	for j := range d.Processes {
		p := &d.Processes[j]
		if p.Exited {
			continue
		}
		order = append(order, j)
	}
	order = dedupPIDs(d.Processes, order)
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(d.Processes[b].Used(), d.Processes[a].Used()), cmp.Compare(a, b))
	})
	listed := order
	if n := c.opts.MaxProcessSeries; n >= 0 && len(order) > n {
		listed = order[:n]
	}
	fams[fUnexported].add(float64(len(order)-len(listed)), own)
	// Their memory, so that a reader of the series (the fleet view) does
	// not count it as unattributed.
	if unlisted, ok := usedBy(d.Processes, order[len(listed):]); ok {
		fams[fUnexportedMem].add(float64(unlisted), own)
	}
	gpu := strconv.Itoa(d.Index)
	var gi string
	if d.MIG != nil {
		gpu, gi = strconv.Itoa(d.MIG.ParentIndex), strconv.Itoa(d.MIG.GPUInstanceID)
	}
	for _, j := range listed {
		p := &d.Processes[j]
		// In the order of their names, as the page writes them.
		pl := make(labels, 0, 11)
		if gi != "" {
			pl = append(pl, label{metricname.LabelGPUInstID, gi})
		}
		pl = append(pl, label{metricname.LabelUUID, d.UUID})
		if !c.opts.NoCommandLabels {
			pl = append(pl, label{"command", ShortCommand(p.Command)})
		}
		if p.Container != "" {
			pl = append(pl, label{metricname.LabelContainerID, validUTF8(p.Container)})
		}
		pl = append(pl, label{metricname.LabelGPU, gpu}, label{metricname.LabelHostname, host})
		if p.Job != nil && p.Job.SlurmJobID != "" {
			pl = append(pl, label{metricname.LabelHPCJob, validUTF8(p.Job.SlurmJobID)})
		}
		pl = append(pl, label{"pid", strconv.FormatUint(uint64(p.PID), 10)})
		if p.Job != nil && p.Job.K8sPodUID != "" {
			pl = append(pl, label{metricname.LabelPodUID, validUTF8(p.Job.K8sPodUID)})
		}
		pl = append(pl, label{"type", p.Type}, label{"user", validUTF8(p.User)})
		if p.UsedBytes == nil {
			// Its memory is counted in used, but nobody can say how
			// much is its: vramtop shows n/a, and no unattributed.
			fams[fProcUnknown].add(1, pl)
			continue
		}
		fams[fProcMem].add(float64(*p.UsedBytes), pl)
	}
	return order
}

// collectClaim adds a device's claim series: 1 with the claimer's user
// while cl holds a claim on its UUID, else 0. A device without numbers has
// none, as it has no other series.
func collectClaim(fams *[nFamilies]family, d *sampler.Device, host string, cl map[string]claims.Claim) {
	if d.Err != "" || d.MemoryTotal == 0 {
		return
	}
	ls := deviceLabels(d, host, metricname.LabelModelNameOwn)
	c, ok := cl[d.UUID]
	if d.UUID == "" || !ok {
		fams[fClaimed].add(0, ls)
		return
	}
	if c.User != "" {
		// Sorts after every device label (pci_bus_id).
		ls = append(ls, label{"user", validUTF8(c.User)})
	}
	fams[fClaimed].add(1, ls)
	if c.Bytes > 0 {
		fams[fClaimedBytes].add(float64(c.Bytes), ls)
	}
}

// usedBy is the memory the processes ps[order...] use; not ok when one of
// them has no known usage.
func usedBy(ps []sampler.Process, order []int) (uint64, bool) {
	var sum uint64
	for _, j := range order {
		if ps[j].UsedBytes == nil {
			return 0, false
		}
		sum += *ps[j].UsedBytes
	}
	return sum, true
}

// dedupPIDs keeps the first entry of each PID in order (a process listed
// twice on one device by a garbling driver is one series).
func dedupPIDs(ps []sampler.Process, order []int) []int {
	if len(order) < 2 {
		return order
	}
	seen := make(map[uint32]struct{}, len(order))
	out := order[:0]
	for _, j := range order {
		if _, dup := seen[ps[j].PID]; dup {
			continue
		}
		seen[ps[j].PID] = struct{}{}
		out = append(out, j)
	}
	return out
}

func (c *Collector) collectAlerts(fams *[nFamilies]family, snap sampler.Snapshot, host string) {
	if c.opts.Monitor == nil {
		return
	}
	type key struct {
		dev, rule string
		pid       uint32
	}
	alerts := c.alertsFor(snap)
	if len(alerts) == 0 {
		return
	}
	byID := make(map[string]int, len(snap.Devices))
	for i := range snap.Devices {
		byID[snap.Devices[i].ID] = i
	}
	seen := map[key]bool{}
	for _, a := range alerts {
		k := key{a.DeviceID, a.Rule, a.PID}
		if seen[k] {
			continue
		}
		seen[k] = true
		gpu := a.DeviceID
		var mig *label
		if i, ok := byID[a.DeviceID]; ok {
			d := &snap.Devices[i]
			gpu = strconv.Itoa(d.Index)
			if d.MIG != nil {
				gpu = strconv.Itoa(d.MIG.ParentIndex)
				mig = &label{metricname.LabelGPUInstID, strconv.Itoa(d.MIG.GPUInstanceID)}
			}
		}
		var ls labels
		if mig != nil {
			ls = append(ls, *mig)
		}
		ls = append(ls, label{metricname.LabelGPU, gpu}, label{metricname.LabelHostname, host})
		if a.PID != 0 {
			ls = append(ls, label{"pid", strconv.FormatUint(uint64(a.PID), 10)})
		}
		ls = append(ls, label{"rule", a.Rule}, label{"severity", a.Severity.String()})
		fams[fAlert].add(1, ls)
	}
}

// appendFamilies writes fams in Prometheus's text format (version 0.0.4),
// each sample's labels sorted by name as client_golang writes them (they
// are built in that order; a sample that is not is sorted here).
func appendFamilies(buf []byte, fams []family) []byte {
	var sorted labels
	byName := func(a, b label) int { return strings.Compare(a.name, b.name) }
	for _, f := range fams {
		buf = append(buf, "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = appendEscaped(buf, f.help, false)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, " gauge\n"...)
		for _, s := range f.samples {
			buf = append(buf, f.name...)
			if len(s.labels) > 0 {
				sorted = s.labels
				if !slices.IsSortedFunc(sorted, byName) {
					sorted = slices.SortedFunc(slices.Values(s.labels), byName)
				}
				buf = append(buf, '{')
				for i, l := range sorted {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = append(buf, l.name...)
					buf = append(buf, '=', '"')
					// The sources make what they read inert; this keeps a
					// control character out of the page whatever the
					// source (no allocation for a clean value).
					buf = appendEscaped(buf, inert.String(l.value), true)
					buf = append(buf, '"')
				}
				buf = append(buf, '}')
			}
			buf = append(buf, ' ')
			buf = appendFloat(buf, s.value)
			buf = append(buf, '\n')
		}
	}
	return buf
}

// appendEscaped escapes a backslash and a newline (HELP text), and a double
// quote too in a label value.
func appendEscaped(buf []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\':
			buf = append(buf, '\\', '\\')
		case ch == '\n':
			buf = append(buf, '\\', 'n')
		case ch == '"' && quote:
			buf = append(buf, '\\', '"')
		default:
			buf = append(buf, ch)
		}
	}
	return buf
}

// appendFloat writes v as client_golang's text encoder does.
func appendFloat(buf []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(buf, '1')
	case v == 0:
		return append(buf, '0')
	case v == -1:
		return append(buf, "-1"...)
	}
	return strconv.AppendFloat(buf, v, 'g', -1, 64)
}

// validUTF8 replaces what is not UTF-8 (a label value must be).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// ShortCommand shortens a command line for a label: the program's base name
// and its arguments, at most MaxCommandLen characters.
func ShortCommand(cmd string) string {
	cmd = validUTF8(strings.TrimSpace(cmd))
	if cmd == "" {
		return ""
	}
	prog, args, _ := strings.Cut(cmd, " ")
	out := filepath.Base(prog)
	if args != "" {
		out += " " + strings.Join(strings.Fields(args), " ")
	}
	if utf8.RuneCountInString(out) <= MaxCommandLen {
		return out
	}
	r := []rune(out)
	return string(r[:MaxCommandLen-1]) + "…"
}
