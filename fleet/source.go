// Package fleet is a sampler.Source over many hosts, read back from
// Prometheus: the series that `vramtop serve` exports, and dcgm-exporter's
// framebuffer gauges for hosts that run only dcgm-exporter (those give
// device rows, no processes). Prometheus, and whatever scales it, does the
// aggregation; this package only asks it.
package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vramtop/vramtop/exporter"
	"github.com/vramtop/vramtop/sampler"
)

// The instant queries of each tick; they run concurrently. Only the totals
// carry every label of a device (its name, UUID, PCI bus): the other series
// are aggregated down to the labels that identify a device, which keeps the
// answers (and their decoding, most of a tick's cost) small.
const (
	QueryDevices = `vramtop_gpu_memory_total_bytes`
	QueryValues  = `max by (__name__, Hostname, gpu, GPU_I_ID) ({__name__=~"vramtop_gpu_memory_(used|free|reserved)_bytes|vramtop_gpu_utilization_ratio|vramtop_up"})`
	QueryProcs   = `max by (__name__, Hostname, gpu, GPU_I_ID, pid, user, command, type) ({__name__=~"vramtop_process_gpu_memory_(bytes|unknown)"})`
	// dcgm-exporter's series of the devices vramtop does not export: a
	// host running both is read from vramtop alone.
	QueryDCGM = `{__name__=~"DCGM_FI_DEV_FB_(TOTAL|USED|FREE|RESERVED)|DCGM_FI_DEV_GPU_UTIL"} unless on (Hostname, gpu, GPU_I_ID) vramtop_gpu_memory_total_bytes`
)

// MaxBackfillPoints bounds the points per device of the history range
// query: the sparklines have fewer columns than this, and each point keeps
// the maximum of its step (max_over_time), so no spike is lost.
const MaxBackfillPoints = 720

// Config configures a fleet Source.
type Config struct {
	// URL is Prometheus's base URL.
	URL string
	// Interval is how often Prometheus is asked (the sampler's interval).
	Interval time.Duration
	// History is how far back the sparklines are read back at start; no
	// range query when 0.
	History time.Duration
	// Timeout bounds each query; default 10 s.
	Timeout time.Duration
	// HTTPClient is the client to use; a default one when nil.
	HTTPClient *http.Client
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Source reads a fleet from Prometheus. Like every Source, it is used by
// the sampler's goroutine only.
type Source struct {
	cfg    Config
	client *Client
	ctx    context.Context
	cancel context.CancelFunc

	lastTry time.Time
	lastErr error
	tried   bool

	// cur is the fleet as of the last successful refresh.
	cur      []devData
	curByID  map[string]int
	procs    []procData
	info     sampler.SourceInfo // as returned by the last Info
	order    []int              // info.Devices[i] is cur[order[i]], -1 when gone
	infoIdx  map[string]int     // device ID -> index in info.Devices
	warnings []string

	mu       sync.Mutex
	backfill map[string]history
}

type devData struct {
	info sampler.DeviceInfo
	mem  sampler.MemSample
}

type procData struct {
	dev string // device ID
	p   sampler.ProcSample
}

type history struct {
	times  []time.Time
	values []uint64
}

// Open returns a source over the Prometheus at cfg.URL. When cfg.History is
// set it reads the history back first (one range query per kind of
// series); a failure there is a warning, not an error: the live view works
// without it.
func Open(ctx context.Context, cfg Config) (*Source, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client, err := NewClient(cfg.URL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Source{cfg: cfg, client: client, ctx: ctx, cancel: cancel, curByID: map[string]int{}}
	if cfg.History > 0 {
		if err := s.readHistory(); err != nil {
			s.warnings = append(s.warnings, "history not read back from Prometheus: "+err.Error())
		}
	}
	return s, nil
}

// Close stops queries in flight.
func (s *Source) Close() error {
	s.cancel()
	return nil
}

// Info refreshes the fleet when due and returns its device list.
func (s *Source) Info() sampler.SourceInfo {
	s.refreshIfDue()
	info := sampler.SourceInfo{
		Kind:     "fleet",
		Hostname: s.client.base.Host,
		Devices:  make([]sampler.DeviceInfo, len(s.cur)),
		Warnings: s.warnings,
	}
	s.order = s.order[:0]
	s.infoIdx = make(map[string]int, len(s.cur))
	for i, d := range s.cur {
		info.Devices[i] = d.info
		s.order = append(s.order, i)
		s.infoIdx[d.info.ID] = i
	}
	s.info = info
	return info
}

// ReadMemory fills out from the last answer of Prometheus. When the last
// refresh failed it returns that error: the sampler then keeps every
// device's last known values and shows the error.
func (s *Source) ReadMemory(now time.Time, out []sampler.MemSample) error {
	s.refreshIfDue()
	if s.lastErr != nil {
		return s.lastErr
	}
	for i := range out {
		j := -1
		if i < len(s.order) {
			j = s.order[i]
		}
		if j < 0 {
			out[i] = sampler.MemSample{Err: errGone}
			continue
		}
		out[i] = s.cur[j].mem
	}
	return nil
}

var errGone = errors.New("no longer reported by Prometheus")

// ReadProcesses returns the processes of the last answer.
func (s *Source) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	if s.lastErr != nil {
		return buf[:0], s.lastErr
	}
	buf = buf[:0]
	for _, p := range s.procs {
		if i, ok := s.infoIdx[p.dev]; ok {
			ps := p.p
			ps.Device = i
			buf = append(buf, ps)
		}
	}
	return buf, nil
}

// ReadProcessUtilization has nothing to read: vramtop does not export
// per-process utilization.
func (s *Source) ReadProcessUtilization(time.Time, map[sampler.UtilKey]float64) error { return nil }

// Backfill returns the history read back for a device, once.
func (s *Source) Backfill(id string) ([]time.Time, []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.backfill[id]
	if !ok {
		return nil, nil
	}
	delete(s.backfill, id)
	return h.times, h.values
}

func (s *Source) refreshIfDue() {
	now := s.cfg.Now()
	if s.tried && now.Sub(s.lastTry) < s.cfg.Interval/2 {
		return
	}
	s.tried = true
	s.lastTry = now
	s.lastErr = s.refresh()
}

func (s *Source) refresh() error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	queries := []string{QueryDevices, QueryValues, QueryProcs, QueryDCGM}
	results := make([][]Sample, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() { results[i], errs[i] = s.client.Query(ctx, q) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			// Keep the last fleet: the sampler shows it with the error
			// and the next tick tries again.
			return err
		}
	}
	s.build(slices.Concat(results[0], results[1]), results[2], results[3])
	return nil
}

// key identifies a device across series: host, GPU index, GPU instance.
type key struct{ host, gpu, gi string }

func (k key) id() string {
	id := k.host + ":" + k.gpu
	if k.gi != "" {
		id += "/" + k.gi
	}
	return id
}

// HostOf is the host a series belongs to: its Hostname label (vramtop,
// dcgm-exporter), else hostname, else the scrape target's host.
func HostOf(m map[string]string) string {
	for _, l := range []string{exporter.LabelHostname, "hostname"} {
		if h := m[l]; h != "" {
			return h
		}
	}
	inst := m["instance"]
	if h, _, ok := strings.Cut(inst, ":"); ok && !strings.Contains(h, "[") {
		return h
	}
	return inst
}

func keyOf(m map[string]string) key {
	return key{host: HostOf(m), gpu: m[exporter.LabelGPU], gi: m[exporter.LabelGPUInstID]}
}

type building struct {
	k     key
	info  sampler.DeviceInfo
	mem   sampler.MemSample
	total bool // total known directly
}

func (s *Source) build(vram, procs, dcgm []Sample) {
	devs := map[key]*building{}
	get := func(m map[string]string) *building {
		k := keyOf(m)
		b := devs[k]
		if b == nil {
			b = &building{k: k}
			idx, _ := strconv.Atoi(k.gpu)
			b.info = sampler.DeviceInfo{ID: k.id(), Index: idx, Hostname: k.host}
			if k.gi != "" {
				gi, _ := strconv.Atoi(k.gi)
				b.info.MIG = &sampler.MIGInfo{ParentIndex: idx, GPUInstanceID: gi, Profile: m[exporter.LabelGPUProfile]}
			}
			devs[k] = b
		}
		if b.info.Name == "" {
			b.info.Name = m[exporter.LabelModelName]
		}
		if b.info.UUID == "" {
			b.info.UUID = m[exporter.LabelUUID]
		}
		if b.info.PCIBusID == "" {
			b.info.PCIBusID = m[exporter.LabelPCIBusID]
		}
		return b
	}
	down := map[string]bool{}
	for _, smp := range vram {
		name := smp.Metric["__name__"]
		if name == exporter.Up {
			if smp.Value == 0 {
				down[HostOf(smp.Metric)] = true
			}
			continue
		}
		if _, ok := smp.Metric[exporter.LabelGPU]; !ok {
			continue
		}
		b := get(smp.Metric)
		v := bytesOf(smp.Value)
		switch name {
		case exporter.MemoryTotal:
			b.mem.Total, b.total = v, true
		case exporter.MemoryUsed:
			b.mem.Used = v
		case exporter.MemoryFree:
			b.mem.Free = v
		case exporter.MemoryReserved:
			b.mem.Reserved, b.mem.HasReserved = v, true
		case exporter.Utilization:
			b.mem.Util, b.mem.HasUtil = smp.Value*100, true
		}
	}
	fromVramtop := make(map[key]bool, len(devs))
	for k := range devs {
		fromVramtop[k] = true
	}
	for _, smp := range dcgm {
		if _, ok := smp.Metric[exporter.LabelGPU]; !ok || fromVramtop[keyOf(smp.Metric)] {
			continue
		}
		b := get(smp.Metric)
		b.info.NoProcessList = true
		v := bytesOf(smp.Value * (1 << 20))
		switch smp.Metric["__name__"] {
		case "DCGM_FI_DEV_FB_TOTAL":
			b.mem.Total, b.total = v, true
		case exporter.DCGMFBUsed:
			b.mem.Used = v
		case exporter.DCGMFBFree:
			b.mem.Free = v
		case exporter.DCGMFBReserved:
			b.mem.Reserved, b.mem.HasReserved = v, true
		case "DCGM_FI_DEV_GPU_UTIL":
			b.mem.Util, b.mem.HasUtil = smp.Value, true
		}
	}
	// A GPU with MIG instances is their parent.
	for k, b := range devs {
		if k.gi != "" {
			if p := devs[key{k.host, k.gpu, ""}]; p != nil {
				p.info.MIGEnabled = true
			}
		}
		if !b.total {
			// dcgm-exporter's default counters have no total: NVML v2's
			// parts add up to it.
			b.mem.Total = b.mem.Used + b.mem.Free + b.mem.Reserved
		}
		if down[k.host] {
			b.mem.Err = fmt.Errorf("the exporter on %s has no recent GPU sample", k.host)
		}
	}
	list := make([]*building, 0, len(devs))
	for _, b := range devs {
		list = append(list, b)
	}
	slices.SortFunc(list, func(a, b *building) int {
		return cmp.Or(
			strings.Compare(a.k.host, b.k.host),
			cmp.Compare(a.info.Index, b.info.Index),
			cmp.Compare(giOrder(a.k.gi), giOrder(b.k.gi)),
			strings.Compare(a.k.gpu, b.k.gpu),
		)
	})
	s.cur = s.cur[:0]
	clear(s.curByID)
	for i, b := range list {
		s.cur = append(s.cur, devData{info: b.info, mem: b.mem})
		s.curByID[b.info.ID] = i
	}
	// Devices already listed keep their place until the next Info.
	for i, d := range s.info.Devices {
		j, ok := s.curByID[d.ID]
		if !ok {
			j = -1
		}
		if i < len(s.order) {
			s.order[i] = j
		}
	}

	s.procs = s.procs[:0]
	for _, smp := range procs {
		k := keyOf(smp.Metric)
		if _, ok := devs[k]; !ok {
			continue
		}
		pid, err := strconv.ParseUint(smp.Metric["pid"], 10, 32)
		if err != nil {
			continue
		}
		user := smp.Metric["user"]
		known := smp.Metric["__name__"] != exporter.ProcessUnknown
		var used uint64
		if known {
			used = bytesOf(smp.Value)
		}
		s.procs = append(s.procs, procData{dev: k.id(), p: sampler.ProcSample{
			PID: uint32(pid), UsedBytes: used, HasUsed: known,
			Type: smp.Metric["type"], User: user, Command: smp.Metric["command"],
			// The exporter saw it; from here it is a name, not a PID we
			// could inspect.
			Visible: user != "",
		}})
	}
}

// giOrder puts a GPU before its instances, instances by number.
func giOrder(gi string) int {
	if gi == "" {
		return -1
	}
	n, _ := strconv.Atoi(gi)
	return n
}

func bytesOf(v float64) uint64 {
	if math.IsNaN(v) || v <= 0 {
		return 0
	}
	if v >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(v))
}

// readHistory reads the used memory of the last cfg.History back, each
// point the maximum of its step.
func (s *Source) readHistory() error {
	end := s.cfg.Now()
	start := end.Add(-s.cfg.History)
	step := max(s.cfg.Interval, s.cfg.History/MaxBackfillPoints)
	step = step.Round(time.Second)
	if step < time.Second {
		step = time.Second
	}
	win := strconv.FormatInt(int64(step/time.Second), 10) + "s"
	ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.Timeout)
	defer cancel()
	vram, err := s.client.QueryRange(ctx, "max_over_time("+exporter.MemoryUsed+"["+win+"])", start, end, step)
	if err != nil {
		return err
	}
	dcgm, err := s.client.QueryRange(ctx, "max_over_time("+exporter.DCGMFBUsed+"["+win+"]) * 1048576", start, end, step)
	if err != nil {
		return err
	}
	bf := map[string]history{}
	add := func(series []Series, skip func(string) bool) {
		for _, ser := range series {
			if _, ok := ser.Metric[exporter.LabelGPU]; !ok {
				continue
			}
			id := keyOf(ser.Metric).id()
			if skip(id) {
				continue
			}
			h := history{times: ser.Times, values: make([]uint64, len(ser.Values))}
			for i, v := range ser.Values {
				h.values[i] = bytesOf(v)
			}
			bf[id] = h
		}
	}
	add(vram, func(string) bool { return false })
	add(dcgm, func(id string) bool { _, ok := bf[id]; return ok })
	s.mu.Lock()
	s.backfill = bf
	s.mu.Unlock()
	return nil
}
