// Package exporter publishes the sampler's latest Snapshot as Prometheus
// metrics: dcgm-exporter's framebuffer gauges (so existing dashboards work
// unchanged) and vramtop's own series in base units. A scrape reads the
// snapshot the sampler already published; it never calls NVML.
package exporter

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// Label names. The device labels are spelled as dcgm-exporter spells them
// (gpu, UUID, pci_bus_id, device, modelName, Hostname, GPU_I_ID,
// GPU_I_PROFILE), so vramtop's series join with dcgm-exporter's.
const (
	LabelGPU        = "gpu"
	LabelUUID       = "UUID"
	LabelPCIBusID   = "pci_bus_id"
	LabelDevice     = "device"
	LabelModelName  = "modelName"
	LabelHostname   = "Hostname"
	LabelGPUInstID  = "GPU_I_ID"
	LabelGPUProfile = "GPU_I_PROFILE"
)

// Metric names.
const (
	DCGMFBUsed     = "DCGM_FI_DEV_FB_USED"
	DCGMFBFree     = "DCGM_FI_DEV_FB_FREE"
	DCGMFBReserved = "DCGM_FI_DEV_FB_RESERVED"

	MemoryTotal        = "vramtop_gpu_memory_total_bytes"
	MemoryUsed         = "vramtop_gpu_memory_used_bytes"
	MemoryFree         = "vramtop_gpu_memory_free_bytes"
	MemoryReserved     = "vramtop_gpu_memory_reserved_bytes"
	MemoryUnattributed = "vramtop_gpu_memory_unattributed_bytes"
	Utilization        = "vramtop_gpu_utilization_ratio"
	ProcessMemory      = "vramtop_process_gpu_memory_bytes"
	ProcessUnknown     = "vramtop_process_gpu_memory_unknown"
	Alert              = "vramtop_alert"
	BuildInfo          = "vramtop_build_info"
	Up                 = "vramtop_up"
	SampleAge          = "vramtop_last_sample_age_seconds"
)

// MaxCommandLen is the longest command label, in characters; longer command
// lines are cut and end in "…".
const MaxCommandLen = 60

// Options configure a Collector.
type Options struct {
	// Hostname is the Hostname label; the snapshot's host name when empty.
	Hostname string
	// Version is reported by vramtop_build_info.
	Version string
	// Monitor evaluates the advisor's rules for vramtop_alert
	// (*advisor.Monitor); no alert series when nil.
	Monitor Alerter
	// StaleAfter is the sample age beyond which vramtop_up is 0; by default
	// three sampling intervals, at least 5 s.
	StaleAfter time.Duration
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

// Collector is a prometheus.Collector over the latest Snapshot. It is
// unchecked (Describe sends nothing) because, like dcgm-exporter, MIG
// instances carry labels that whole GPUs do not.
type Collector struct {
	latest LatestFunc
	opts   Options

	mu       sync.Mutex
	alerts   []advisor.Alert
	alertSeq uint64
	observed bool
}

// New returns a collector reading snapshots from latest.
func New(latest LatestFunc, opts Options) *Collector {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &Collector{latest: latest, opts: opts}
}

// Observe feeds a snapshot to the advisor's monitor. Call it for every
// published snapshot (Sampler.Subscribe) so the rules see each one; a
// scrape of a snapshot that was never observed observes it itself.
func (c *Collector) Observe(snap sampler.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observeLocked(snap)
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

// Describe sends nothing: the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the latest snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	build := prometheus.NewDesc(BuildInfo, "vramtop's version; always 1.",
		[]string{"version", "goversion"}, nil)
	ch <- prometheus.MustNewConstMetric(build, prometheus.GaugeValue, 1, c.opts.Version, runtime.Version())

	snap, ok := c.latest()
	host := c.opts.Hostname
	if host == "" && ok {
		host = snap.Hostname
	}
	up := 0.0
	if healthy, _ := c.health(snap, ok); healthy {
		up = 1
	}
	ch <- gauge(Up, "1 when the exporter has a recent sample of the GPUs and the last poll succeeded, 0 otherwise.",
		up, labels{{LabelHostname, host}})
	if !ok {
		return
	}
	age := c.opts.Now().Sub(snap.Time).Seconds()
	ch <- gauge(SampleAge, "Seconds since the GPUs were last sampled.", max(age, 0), labels{{LabelHostname, host}})

	for _, d := range snap.Devices {
		c.collectDevice(ch, d, host)
	}
	c.collectAlerts(ch, snap, host)
}

type label struct{ name, value string }

type labels []label

func gauge(name, help string, v float64, ls labels) prometheus.Metric {
	names := make([]string, len(ls))
	values := make([]string, len(ls))
	for i, l := range ls {
		names[i], values[i] = l.name, l.value
	}
	desc := prometheus.NewDesc(name, help, names, nil)
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, values...)
}

// deviceLabels are dcgm-exporter's labels for a device: gpu is the GPU's
// index (the parent's for a MIG instance), device is "nvidiaN", and a MIG
// instance adds GPU_I_PROFILE and GPU_I_ID.
func deviceLabels(d sampler.Device, host string) labels {
	idx := d.Index
	if d.MIG != nil {
		idx = d.MIG.ParentIndex
	}
	gpu := strconv.Itoa(idx)
	ls := labels{
		{LabelGPU, gpu},
		{LabelUUID, d.UUID},
		{LabelPCIBusID, d.PCIBusID},
		{LabelDevice, "nvidia" + gpu},
		{LabelModelName, d.Name},
	}
	if d.MIG != nil {
		ls = append(ls, label{LabelGPUProfile, d.MIG.Profile}, label{LabelGPUInstID, strconv.Itoa(d.MIG.GPUInstanceID)})
	}
	return append(ls, label{LabelHostname, host})
}

// MiB converts bytes to MiB as DCGM does (nvUsed / (1024 * 1024), integer
// division): the value is rounded down.
func MiB(b uint64) float64 { return float64(b / (1 << 20)) }

func (c *Collector) collectDevice(ch chan<- prometheus.Metric, d sampler.Device, host string) {
	// A device that failed this poll or was never read has no numbers
	// worth exporting: its series are absent, not zero.
	if d.Err != "" || d.MemoryTotal == 0 {
		return
	}
	ls := deviceLabels(d, host)
	// dcgm-exporter reports a MIG-enabled GPU through its instances.
	if !d.MIGEnabled {
		ch <- gauge(DCGMFBUsed, "Framebuffer memory used (in MiB).", MiB(d.MemoryUsed), ls)
		ch <- gauge(DCGMFBFree, "Framebuffer memory free (in MiB).", MiB(d.MemoryFree), ls)
		if d.MemoryReserved != nil {
			ch <- gauge(DCGMFBReserved, "Framebuffer memory reserved (in MiB).", MiB(*d.MemoryReserved), ls)
		}
	}
	ch <- gauge(MemoryTotal, "GPU memory in total, in bytes.", float64(d.MemoryTotal), ls)
	ch <- gauge(MemoryUsed, "GPU memory in use (NVML v2: without the driver's reservation), in bytes.", float64(d.MemoryUsed), ls)
	ch <- gauge(MemoryFree, "GPU memory free, in bytes.", float64(d.MemoryFree), ls)
	if d.MemoryReserved != nil {
		ch <- gauge(MemoryReserved, "GPU memory reserved by the driver, in bytes.", float64(*d.MemoryReserved), ls)
	}
	if d.Unattributed != nil {
		ch <- gauge(MemoryUnattributed, "GPU memory in use that no listed process accounts for (other containers or PID namespaces, leaked contexts, the driver), in bytes.", float64(*d.Unattributed), ls)
	}
	if d.UtilizationPercent != nil {
		ch <- gauge(Utilization, "GPU utilization as the driver samples it, 0 to 1.", *d.UtilizationPercent/100, ls)
	}
	gpu := ls[0]
	seen := map[uint32]bool{}
	for _, p := range d.Processes {
		if p.Exited || seen[p.PID] {
			continue
		}
		seen[p.PID] = true
		pl := labels{gpu, {LabelUUID, d.UUID}, {"pid", strconv.FormatUint(uint64(p.PID), 10)},
			{"user", p.User}, {"command", ShortCommand(p.Command)}, {"type", p.Type}}
		if d.MIG != nil {
			pl = append(pl, label{LabelGPUInstID, strconv.Itoa(d.MIG.GPUInstanceID)})
		}
		pl = append(pl, label{LabelHostname, host})
		if p.UsedBytes == nil {
			// Its memory is counted in used, but nobody can say how
			// much is its: vramtop shows n/a, and no unattributed.
			ch <- gauge(ProcessUnknown, "1 for a process the driver lists on a device without saying how much memory it uses.", 1, pl)
			continue
		}
		ch <- gauge(ProcessMemory, "GPU memory a process uses on a device (its CUDA context included), in bytes.", float64(*p.UsedBytes), pl)
	}
}

func (c *Collector) collectAlerts(ch chan<- prometheus.Metric, snap sampler.Snapshot, host string) {
	if c.opts.Monitor == nil {
		return
	}
	type key struct {
		dev, rule string
		pid       uint32
	}
	seen := map[key]bool{}
	for _, a := range c.alertsFor(snap) {
		k := key{a.DeviceID, a.Rule, a.PID}
		if seen[k] {
			continue
		}
		seen[k] = true
		gpu := a.DeviceID
		var mig *label
		if d, ok := snap.Device(a.DeviceID); ok {
			dl := deviceLabels(d, host)
			gpu = dl[0].value
			if d.MIG != nil {
				mig = &label{LabelGPUInstID, strconv.Itoa(d.MIG.GPUInstanceID)}
			}
		}
		ls := labels{{LabelGPU, gpu}, {"rule", a.Rule}, {"severity", a.Severity.String()}}
		if mig != nil {
			ls = append(ls, *mig)
		}
		if a.PID != 0 {
			ls = append(ls, label{"pid", strconv.FormatUint(uint64(a.PID), 10)})
		}
		ls = append(ls, label{LabelHostname, host})
		ch <- gauge(Alert, "1 while an advisor rule fires on a GPU (or a process on it, with pid).", 1, ls)
	}
}

// ShortCommand shortens a command line for a label: the program's base name
// and its arguments, at most MaxCommandLen characters.
func ShortCommand(cmd string) string {
	cmd = strings.TrimSpace(cmd)
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
