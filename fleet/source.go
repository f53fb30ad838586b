// Package fleet is a sampler.Source over many hosts, read back from
// Prometheus: the series that `vramtop serve` exports, and dcgm-exporter's
// gauges for hosts that run only dcgm-exporter (those give device rows, no
// processes). Prometheus, and whatever scales it, does the aggregation; this
// package only asks it.
//
// The queries run on a goroutine of the source's own, each within
// Config.Timeout: the sampler (and so the screen) never waits for
// Prometheus, and Close cancels what is in flight.
package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
)

// The instant queries of each round; they run concurrently. Prometheus's
// time is about linear in the series a query selects, so a round asks for
// the few that change: used memory and utilization (and temperature and
// power). The values are aggregated down to the labels that identify a
// device, which keeps the answers (and their decoding) small. Every label
// of a device (its name, UUID, PCI bus, the scrape target) and the memory
// that does not change while its driver is loaded (total, reserved) come
// from QueryDevices and QueryReserved, asked on the first round, when a
// device appears and every identityEvery rounds; free memory is what is
// left (NVML's total is used + free + reserved, to the byte). Hosts are
// named by hostname (vramtop, dcgm-exporter since 2026-05) or Hostname
// (before).
const (
	QueryDevices  = `vramtop_gpu_memory_total_bytes`
	QueryReserved = `max by (hostname, Hostname, gpu, GPU_I_ID) (vramtop_gpu_memory_reserved_bytes)`
	QueryValues   = `max by (__name__, hostname, Hostname, gpu, GPU_I_ID) ({__name__=~"vramtop_gpu_memory_used_bytes|vramtop_gpu_utilization_ratio|vramtop_up|DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_POWER_USAGE"})`
	// QueryProcs are the processes with series of their own and, for the
	// devices with more (over serve's --max-process-series), how many
	// more and the memory they use: every host's (the live view asks
	// those of the host open on screen only, ProcsQuery).
	QueryProcs = `max by (__name__, hostname, Hostname, gpu, GPU_I_ID, pid, user, command, type, container_id) ({__name__=~"vramtop_process_gpu_memory_(bytes|unknown)"})` +
		` or max by (__name__, hostname, Hostname, gpu, GPU_I_ID) ({__name__=~"vramtop_gpu_processes_unexported|vramtop_gpu_memory_unexported_bytes"}` +
		` unless on (instance, job, hostname, Hostname, gpu, GPU_I_ID) (vramtop_gpu_processes_unexported == 0))`
	// QueryDCGM are dcgm-exporter's series of the devices vramtop does not
	// export (a host running both is read from vramtop alone), asked on the
	// rounds that read the devices' labels; the other rounds ask for those
	// of the scrape targets that had such devices then (DCGMQuery), none
	// where none had: the series a host running both exporters sends
	// twice are not read on every round.
	QueryDCGM = `{__name__=~"DCGM_FI_DEV_FB_(TOTAL|USED|FREE|RESERVED)|DCGM_FI_DEV_GPU_UTIL"} unless on (hostname, Hostname, gpu, GPU_I_ID) vramtop_gpu_memory_total_bytes`
	// QueryTargets are the scrape targets, 0 for those Prometheus could
	// not scrape last time (down); a target that was not there when the
	// devices' labels were read makes the round read them.
	QueryTargets = `up`
	// QueryAlerts are the alerts each host's vramtop says are in force:
	// the fleet shows them from its first answer, before the history its
	// own rules need has been read.
	QueryAlerts = `max by (hostname, Hostname, gpu, GPU_I_ID, rule, severity, pid) (vramtop_alert == 1)`
	// QueryClaims are the GPUs claimed on their hosts (vramtop pick and
	// wait there), by whom and for how much, as each host's serve exports
	// them: a pick across the fleet skips them.
	QueryClaims = `max by (__name__, hostname, Hostname, gpu, GPU_I_ID, user) ({__name__=~"vramtop_gpu_claimed|vramtop_gpu_claimed_bytes"} > 0)`
)

// DownLookback is how far back the last values of a host whose exporter is
// down are looked for; a host down for longer is no longer listed.
const DownLookback = time.Hour

// StaleKeep is how long a host whose series vanished without its target
// being down (the target was removed, or its series went stale) stays
// listed with its last values.
const StaleKeep = 10 * time.Minute

// HostDownPrefix starts the error of each device of a host that is down or
// stale: the device then shows its last values.
const HostDownPrefix = "host down: "

// IsHostDown reports whether a device of a fleet snapshot belongs to a host
// that is down or stale (its values are the last ones seen).
func IsHostDown(d sampler.Device) bool { return strings.HasPrefix(d.Err, HostDownPrefix) }

// MaxBackfillPoints bounds the points per device of the history range
// query: the sparklines have fewer columns than this, and each point keeps
// the maximum of its step (max_over_time), so no spike is lost.
const MaxBackfillPoints = 720

// DCGMQuery is dcgm-exporter's series that the label matcher sel
// (`instance=~"10\\.0\\.0\\.2:9400"`) selects.
func DCGMQuery(sel string) string {
	return `{__name__=~"DCGM_FI_DEV_FB_(TOTAL|USED|FREE|RESERVED)|DCGM_FI_DEV_GPU_UTIL", ` + sel + `}`
}

// identityEvery is how many rounds apart the devices' labels are read
// again (a renamed host or a replaced GPU shows within a minute at 5 s).
const identityEvery = 12

// historyWait is how long the devices wait for the history after the first
// answer: long enough for a healthy Prometheus, short enough that a slow
// one does not keep the screen empty.
const historyWait = 3 * time.Second

// Config configures a fleet Source.
type Config struct {
	// URL is Prometheus's base URL.
	URL string
	// Interval is how often Prometheus is asked (the sampler's interval).
	Interval time.Duration
	// History is how far back the sparklines are read back at start; no
	// range query when 0.
	History time.Duration
	// Timeout bounds each round of queries; default 10 s.
	Timeout time.Duration
	// HTTPClient gives the transport; the default one when nil.
	HTTPClient *http.Client
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// OpenHostProcesses reads the processes of the host named by
	// SetOpenHost only, none while it names none: the live view's list of
	// hosts shows their devices, a host's processes once it is opened.
	// Every host's processes each round when false (--once).
	OpenHostProcesses bool
}

// Source reads a fleet from Prometheus. Its queries run on a goroutine of
// its own; the sampler's goroutine reads their latest results.
type Source struct {
	cfg    Config
	client *Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the poller has stopped
	first  chan struct{} // closed after the first round of queries
	kick   chan chan struct{}
	// nudge asks the poller for a round now (a host was opened); wake
	// tells the sampler that round has ended (sampler.Waker).
	nudge chan struct{}
	wake  chan struct{}

	// listed is the round the last ReadProcesses listed, for Omitted
	// (both on the sampler's goroutine).
	listed *fleetState

	mu       sync.Mutex
	openHost string // SetOpenHost's
	// procHosts: ReadProcessesOf's hosts.
	procHosts map[string]bool
	state     *fleetState // the last successful round; nil before
	err       error       // the last round's error
	answered  time.Time   // when the first successful round ended
	histDone  bool        // history read back (or not asked for)
	// histRunning: the history is being read (or read again).
	histRunning bool
	histErr     error
	histTries   int
	// histPoints is how many points a device the history asks for:
	// MaxBackfillPoints, fewer after an answer over MaxAnswerBytes.
	histPoints int
	backfill   map[string]history
	// backfillSeq counts the times backfill was set.
	backfillSeq uint64

	// The sampler goroutine's: the devices as of the last Info.
	info    sampler.SourceInfo
	infoIdx map[string]int

	// The poller's: what each device last looked like, for hosts that go
	// down, and the down targets already looked up.
	seen     map[string]*seenDevice
	lookedUp map[string]bool
	// ident holds each device's series of QueryDevices (all its labels,
	// its total memory) and its reserved memory, read identRound.
	ident      map[key]Labels
	total      map[key]float64
	reserved   map[key]float64
	rounds     int
	identRound int
	// identDue: a device went, the next round reads the labels again
	// (dcgm-exporter may still export it).
	identDue bool
	// targets are the scrape targets (up or not) and dcgmTargets those
	// with devices of dcgm-exporter's only (a regexp of them), as of
	// identRound.
	targets     map[string]float64
	dcgmTargets string
}

type fleetState struct {
	devs  []devData
	byID  map[string]int
	procs []procData
	// omitted are, by device ID, the processes the exporters left out.
	omitted map[string]omittedProcs
	// alerts are those the hosts' exporters report in force.
	alerts []sampler.ReportedAlert
	// claims are, by device ID, the GPUs claimed on their hosts.
	claims map[string]Claim
	// listedAt are, by device ID, when the processes of the devices of
	// hosts that are down were last read (their last values); the others
	// were read this round.
	listedAt map[string]time.Time
	// Whose processes the round read: every host's (procsAll), one
	// host's (procsOne, procsHost) or none. unread are the devices of
	// hosts that are down whose processes were never read.
	procsAll  bool
	procsOne  bool
	procsHost string
	unread    map[string]bool
	// procsHosts: the round read the processes of these hosts
	// (ReadProcessesOf; procsOne is then false).
	procsHosts map[string]bool
}

// read reports whether the round read the processes of the devices of
// host.
func (st *fleetState) read(host string) bool {
	return st.procsAll || st.procsOne && st.procsHost == host || st.procsHosts[host]
}

type devData struct {
	info sampler.DeviceInfo
	mem  sampler.MemSample
}

type procData struct {
	dev string // device ID
	p   sampler.ProcSample
}

type seenDevice struct {
	dev      devData
	k        key
	instance string
	at       time.Time // when it was last seen
	// gone: not listed since at; procs, omitted and alerts are then its
	// last ones, shown as they were.
	gone    bool
	procs   []sampler.ProcSample
	omitted omittedProcs
	alerts  []sampler.ReportedAlert
	// procsRead: procs and omitted were read (the host's processes were
	// asked for when it was last listed, or read back since).
	procsRead bool
}

type history struct {
	times  []time.Time
	values []uint64
}

// Open returns a source over the Prometheus at cfg.URL and starts asking
// it. When cfg.History is set it reads the history back too, once the
// first round has listed the devices (at most MaxBackfillPoints a device,
// fewer where more would not fit in MaxAnswerBytes); a failure there is a
// warning, retried each round until it succeeds (an answer over the limit
// with half as many points).
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
	s := &Source{
		cfg: cfg, client: client, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), first: make(chan struct{}), kick: make(chan chan struct{}),
		nudge: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		histDone: cfg.History <= 0, histPoints: MaxBackfillPoints,
		seen: map[string]*seenDevice{}, lookedUp: map[string]bool{},
		ident: map[key]Labels{}, total: map[key]float64{}, reserved: map[key]float64{},
	}
	go s.poll()
	return s, nil
}

// Close stops the queries, those in flight too.
func (s *Source) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// WaitFirst waits until the first round of queries has ended (answered,
// failed or timed out: within Config.Timeout, and the first try at the
// history, asked after it, within three times that) or ctx ends.
func (s *Source) WaitFirst(ctx context.Context) {
	select {
	case <-s.first:
	case <-ctx.Done():
	}
}

// poll asks Prometheus every interval until the source is closed.
func (s *Source) poll() {
	defer close(s.done)
	histRunning := false
	histc := make(chan struct{}, 1)
	var kicked []chan struct{}
	nudged := false
	for round := 0; ; round++ {
		st, err := s.refresh()
		s.mu.Lock()
		if err == nil {
			s.state = st
			if s.answered.IsZero() {
				s.answered = s.cfg.Now()
			}
		}
		s.err = err
		// The history is asked once the devices are known, for as many
		// points as fit in an answer for them; under the same lock as
		// the first fleet, so Info holds the devices back for it.
		needHist := !s.histDone && !histRunning
		var points int
		if needHist {
			s.histRunning = true
			points = s.histPoints
			if s.state != nil {
				points = historyPoints(points, len(s.state.devs))
			}
		}
		s.mu.Unlock()
		if needHist {
			histRunning = true
			end := s.cfg.Now() // the clock is read on this goroutine
			go func() {
				err := s.readHistory(points, end)
				s.mu.Lock()
				s.histTries++
				s.histRunning = false
				s.histErr = err
				switch {
				case err == nil:
					s.histDone = true
				case errors.Is(err, ErrAnswerTooLarge) && points > minBackfillPoints:
					// The same answer will not shrink: the next try
					// asks for half as many points.
					s.histPoints = max(points/2, minBackfillPoints)
				case errors.Is(err, ErrAnswerTooLarge):
					s.histDone = true
				}
				s.mu.Unlock()
				histc <- struct{}{}
			}()
		}
		if round == 0 {
			if histRunning {
				// The first round includes the first try at the
				// history (WaitFirst).
				<-histc
				histRunning = false
			}
			close(s.first)
		}
		for _, ch := range kicked {
			close(ch)
		}
		kicked = kicked[:0]
		if nudged {
			// The host just opened has its processes read: the
			// sampler need not wait for its next tick.
			nudged = false
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
		t := time.NewTimer(s.cfg.Interval)
		for waiting := true; waiting; {
			select {
			case <-s.ctx.Done():
				t.Stop()
				if histRunning {
					<-histc
				}
				return
			case <-histc:
				histRunning = false
			case ch := <-s.kick:
				kicked = append(kicked, ch)
				t.Stop()
				waiting = false
			case <-s.nudge:
				nudged = true
				t.Stop()
				waiting = false
			case <-t.C:
				waiting = false
			}
		}
	}
}

// Refresh runs a round of queries now and waits for it to end (or ctx).
func (s *Source) Refresh(ctx context.Context) {
	ch := make(chan struct{})
	select {
	case s.kick <- ch:
	case <-ctx.Done():
		return
	case <-s.done:
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	case <-s.done:
	}
}

// SetOpenHost names the host whose processes each round reads
// (Config.OpenHostProcesses), "" for none; a host newly named is read at
// once. It returns at once.
func (s *Source) SetOpenHost(host string) {
	s.mu.Lock()
	changed := s.openHost != host
	s.openHost = host
	s.mu.Unlock()
	if changed && host != "" {
		select {
		case s.nudge <- struct{}{}:
		default:
		}
	}
}

// ReadProcessesOf adds hosts to those whose processes each round reads
// from now on (Config.OpenHostProcesses), besides the one open (a pick
// across the fleet reads those of the GPUs it must order by them: fleet's
// ProcessesMatter); a round that reads the new ones starts at once, and
// Wake receives when it has ended. It returns at once.
func (s *Source) ReadProcessesOf(hosts []string) {
	s.mu.Lock()
	changed := false
	for _, h := range hosts {
		if h != "" && !s.procHosts[h] {
			if s.procHosts == nil {
				s.procHosts = map[string]bool{}
			}
			s.procHosts[h], changed = true, true
		}
	}
	s.mu.Unlock()
	if changed {
		select {
		case s.nudge <- struct{}{}:
		default:
		}
	}
}

// Wake receives when a round asked for by SetOpenHost or
// ReadProcessesOf has ended (sampler.Waker): the sampler then reads it at once.
func (s *Source) Wake() <-chan struct{} { return s.wake }

// NotListed reports whether the last ReadProcesses' round left the
// processes of device dev (an index into the last Info's devices) unread:
// those of a host not open (sampler.PartialLister).
func (s *Source) NotListed(dev int) bool {
	if s.listed == nil || dev < 0 || dev >= len(s.info.Devices) {
		return false
	}
	d := s.info.Devices[dev]
	if d.NoProcessList {
		return false
	}
	if s.listed.unread[d.ID] {
		return true
	}
	if _, gone := s.listed.listedAt[d.ID]; gone {
		return false
	}
	return !s.listed.read(d.Hostname)
}

// Info returns the device list of the last answer. Until the history is
// read back (or historyWait has passed since the first answer) the list is
// held back, so each device's sparkline starts with its history.
func (s *Source) Info() sampler.SourceInfo {
	s.mu.Lock()
	st := s.state
	var warnings []string
	hold := false
	switch {
	case st == nil && s.err == nil:
		warnings = append(warnings, "connecting to Prometheus at "+s.client.base.Host+"…")
	case s.histRunning && st != nil && s.cfg.Now().Sub(s.answered) < historyWait:
		hold = true
		warnings = append(warnings, "reading the history back from Prometheus…")
	case s.histErr != nil && !s.histDone:
		warnings = append(warnings, fmt.Sprintf("history not read back from Prometheus: %v (retrying)", s.histErr))
	case s.histErr != nil:
		warnings = append(warnings, fmt.Sprintf("history not read back from Prometheus: %v", s.histErr))
	}
	s.mu.Unlock()

	info := sampler.SourceInfo{Kind: "fleet", Hostname: s.client.base.Host, Warnings: warnings}
	s.infoIdx = make(map[string]int, len(s.info.Devices))
	if st != nil && !hold {
		info.Devices = make([]sampler.DeviceInfo, len(st.devs))
		for i, d := range st.devs {
			info.Devices[i] = d.info
			s.infoIdx[d.info.ID] = i
		}
	}
	s.info = info
	return info
}

// ReadMemory fills out from the last answer of Prometheus. When the last
// round failed it returns that error: the sampler then keeps every
// device's last known values and shows the error.
func (s *Source) ReadMemory(now time.Time, out []sampler.MemSample) error {
	s.mu.Lock()
	st, err := s.state, s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for i := range out {
		j, ok := -1, false
		if st != nil && i < len(s.info.Devices) {
			j, ok = st.byID[s.info.Devices[i].ID]
		}
		if !ok {
			out[i] = sampler.MemSample{Err: errGone}
			continue
		}
		out[i] = st.devs[j].mem
	}
	return nil
}

var errGone = errors.New("no longer reported by Prometheus")

// Omitted says how many processes of device dev (an index into the last
// Info's devices) its exporter left out of the last ReadProcesses' round,
// and their memory where known (sampler.Omitter).
func (s *Source) Omitted(dev int) (n int, bytes uint64, known bool) {
	if s.listed == nil || dev < 0 || dev >= len(s.info.Devices) {
		return 0, 0, false
	}
	o := s.listed.omitted[s.info.Devices[dev].ID]
	return o.n, o.bytes, o.known
}

// ReadProcesses returns the processes of the last answer.
func (s *Source) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	s.mu.Lock()
	st, err := s.state, s.err
	s.mu.Unlock()
	buf = buf[:0]
	if err != nil {
		return buf, err
	}
	s.listed = st
	if st == nil {
		return buf, nil
	}
	for _, p := range st.procs {
		if i, ok := s.infoIdx[p.dev]; ok {
			ps := p.p
			ps.Device = i
			buf = append(buf, ps)
		}
	}
	return buf, nil
}

// ListedAt is when the processes of device dev (an index into the last
// Info's devices) were read: zero (this round) but for a host that is down,
// whose processes are the last ones seen (sampler.ListTimer).
func (s *Source) ListedAt(dev int) time.Time {
	if s.listed == nil || dev < 0 || dev >= len(s.info.Devices) {
		return time.Time{}
	}
	return s.listed.listedAt[s.info.Devices[dev].ID]
}

// ReportedAlerts are the alerts the hosts' own exporters report in force
// in the last answer (sampler.AlertReporter).
func (s *Source) ReportedAlerts() []sampler.ReportedAlert {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil
	}
	return s.state.alerts
}

// alertsOf turns the vramtop_alert series into alerts of the devices they
// name. Only the advisor's rule names and severities are taken: the labels
// come from any host Prometheus scrapes.
func alertsOf(smps []Sample, devs map[key]*building) []sampler.ReportedAlert {
	var out []sampler.ReportedAlert
	for _, smp := range smps {
		b := devs[keyOf(smp.Metric)]
		rule, sev := smp.Metric.Get("rule"), smp.Metric.Get("severity")
		if b == nil || !slices.Contains(advisor.Rules, rule) || sev != "info" && sev != "warn" && sev != "crit" {
			continue
		}
		a := sampler.ReportedAlert{Rule: rule, Severity: sev, DeviceID: b.info.ID}
		if p := smp.Metric.Get("pid"); p != "" {
			pid, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				continue
			}
			a.PID = uint32(pid)
		}
		a.Message = b.info.Hostname + "'s vramtop reports " + rule + " (" + sev + ") on GPU " + b.info.ID[len(b.info.Hostname)+1:]
		if a.PID != 0 {
			a.Message += ", PID " + strconv.FormatUint(uint64(a.PID), 10)
		}
		out = append(out, a)
	}
	return out
}

// Claim is a claim on a GPU that its host's vramtop serve exports
// (vramtop_gpu_claimed): who claimed it, and the memory asked for where
// the claim says.
type Claim struct {
	User  string
	Bytes uint64
}

// Claims are the GPUs claimed on their hosts in the last answer, by device
// ID; nil before the first. The map is shared: not to be written.
func (s *Source) Claims() map[string]Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil
	}
	return s.state.claims
}

// ClaimText says who claimed d on its host as the live view says it
// (ui.Options.Claim): "alice, 40 GiB" (serve exports no end of the claim),
// "someone" for a claim without its user; "" when nobody did.
func (s *Source) ClaimText(d sampler.Device) string {
	c, ok := s.Claims()[d.ID]
	if !ok {
		return ""
	}
	return claims.Claim{User: c.User, Bytes: c.Bytes}.Short(advisor.FormatBytes)
}

// Err is the error of the last round of queries; nil when it answered.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// claimsOf turns the claim series into claims of the devices they name.
func claimsOf(smps []Sample, devs map[key]*building) map[string]Claim {
	var out map[string]Claim
	for _, smp := range smps {
		b := devs[keyOf(smp.Metric)]
		if b == nil {
			continue
		}
		if out == nil {
			out = map[string]Claim{}
		}
		c := out[b.info.ID]
		if u := smp.Metric.Get("user"); u != "" {
			// Inert already (every label is); bounded as serve bounds it.
			c.User = claims.Clip(u, 64)
		}
		if smp.Metric.Get(labelName) == metricname.ClaimedBytes {
			c.Bytes = bytesOf(smp.Value)
		}
		out[b.info.ID] = c
	}
	return out
}

// ReadProcessUtilization has nothing to read: vramtop does not export
// per-process utilization.
func (s *Source) ReadProcessUtilization(time.Time, map[sampler.UtilKey]float64) error { return nil }

// BackfillSeq counts the times history was read back
// (sampler.LateBackfiller: a read again can come after the devices were
// shown).
func (s *Source) BackfillSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backfillSeq
}

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

// timeoutError says which limit a round ran into.
func (s *Source) timeoutError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("prometheus at %s: no answer within %v", s.client.base.Host, s.cfg.Timeout)
	}
	return err
}

// The queries of a round, by their place in it.
const (
	qValues = iota
	qProcs
	qDCGM
	qTargets
	qDevices
	qAlerts
	qReserved
	qClaims
	nQueries
)

// aRound is one round of queries: what it asks, what it got.
type aRound struct {
	queries [nQueries]string
	results [nQueries][]Sample
	errs    [nQueries]error
	// ident: the round reads the devices' labels.
	ident bool
	// open is the host open on screen (Config.OpenHostProcesses).
	open string
}

// plan is round number n's queries, and the fleet it starts.
func (s *Source) plan(n int) (*aRound, *fleetState) {
	r := &aRound{ident: n == 0 || s.identDue || n-s.identRound >= identityEvery}
	q := &r.queries
	q[qValues], q[qTargets], q[qAlerts], q[qClaims] = QueryValues, QueryTargets, QueryAlerts, QueryClaims
	switch {
	case r.ident:
		q[qDevices], q[qReserved], q[qDCGM] = QueryDevices, QueryReserved, QueryDCGM
	case s.dcgmTargets != "":
		q[qDCGM] = DCGMQuery(labelInstance + "=~" + strconv.Quote(s.dcgmTargets))
	}
	s.mu.Lock()
	r.open = s.openHost
	var also []string
	for h := range s.procHosts {
		also = append(also, h)
	}
	s.mu.Unlock()
	st := &fleetState{procsAll: !s.cfg.OpenHostProcesses}
	if st.procsAll {
		q[qProcs] = QueryProcs
	} else if len(also) == 0 {
		// The host open on screen, as its devices were last labelled: a
		// host none of whose devices is labelled yet is read once they
		// are.
		s.askOpenHost(r, st)
	} else {
		s.askHosts(r, st, also)
	}
	return r, st
}

// askHosts adds the processes of hosts, and of the host open on screen,
// to r, where their devices are labelled.
func (s *Source) askHosts(r *aRound, st *fleetState, hosts []string) {
	if r.open != "" && !slices.Contains(hosts, r.open) {
		hosts = append(hosts, r.open)
	}
	slices.Sort(hosts)
	// The hosts by the label that names them; those named by their scrape
	// targets alone as one matcher of them all.
	named := map[string][]string{}
	var insts []string
	for _, h := range hosts {
		switch sel := s.hostSelector(h); {
		case sel == "":
			continue
		case strings.HasPrefix(sel, labelInstance+"=~"):
			re, _ := strconv.Unquote(strings.TrimPrefix(sel, labelInstance+"=~"))
			insts = append(insts, re)
		default:
			label, v, _ := strings.Cut(sel, "=")
			name, _ := strconv.Unquote(v)
			named[label] = append(named[label], regexp.QuoteMeta(name))
		}
		if st.procsHosts == nil {
			st.procsHosts = map[string]bool{}
		}
		st.procsHosts[h] = true
	}
	var qs []string
	for _, label := range []string{metricname.LabelHostname, metricname.LabelHostnameOld} {
		if vs := named[label]; len(vs) > 0 {
			qs = append(qs, "("+ProcsQuery(label+"=~"+strconv.Quote(strings.Join(vs, "|")))+")")
		}
	}
	if len(insts) > 0 {
		qs = append(qs, "("+ProcsQuery(labelInstance+"=~"+strconv.Quote(strings.Join(insts, "|")))+")")
	}
	r.queries[qProcs] = strings.Join(qs, " or ")
}

// askOpenHost adds the processes of the host open on screen to r, where
// its devices are labelled.
func (s *Source) askOpenHost(r *aRound, st *fleetState) {
	if r.open == "" || r.queries[qProcs] != "" {
		return
	}
	if sel := s.hostSelector(r.open); sel != "" {
		r.queries[qProcs] = ProcsQuery(sel)
		st.procsOne, st.procsHost = true, r.open
	}
}

// ask runs the queries of r that have no answer yet, at once.
func (s *Source) ask(ctx context.Context, r *aRound) error {
	var wg sync.WaitGroup
	for i, q := range r.queries {
		if q != "" && r.results[i] == nil && r.errs[i] == nil {
			wg.Go(func() {
				r.results[i], r.errs[i] = s.client.Query(ctx, q)
				if r.results[i] == nil && r.errs[i] == nil {
					r.results[i] = []Sample{} // answered, with nothing
				}
			})
		}
	}
	wg.Wait()
	for _, err := range r.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// refresh runs one round of queries and builds the fleet from them.
func (s *Source) refresh() (*fleetState, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	n := s.rounds
	s.rounds++
	r, st := s.plan(n)
	err := s.ask(ctx, r)
	if err == nil && !r.ident && (s.unidentified(r.results[qValues]) || s.newTarget(r.results[qTargets])) {
		// A device or a scrape target appeared (or a target went down
		// or came back) since the labels were read.
		r.ident = true
		r.queries[qDevices], r.queries[qReserved], r.queries[qDCGM] = QueryDevices, QueryReserved, QueryDCGM
		r.results[qDCGM] = nil
		err = s.ask(ctx, r)
	}
	if err == nil && r.ident {
		s.identify(r.results[qDevices], r.results[qReserved], r.results[qTargets])
		s.identRound, s.identDue = n, false
		if !st.procsAll {
			// The open host's devices may be labelled now (it came
			// back, say): its processes this round all the same.
			s.askOpenHost(r, st)
			err = s.ask(ctx, r)
		}
	}
	if err != nil {
		// Keep the last fleet: the sampler shows it with the error and
		// the next round tries again.
		return nil, s.timeoutError(err)
	}
	now := s.cfg.Now()
	list, devs := build(identity{s.ident, s.total, s.reserved}, r.results[qValues], r.results[qDCGM])
	if r.ident {
		s.dcgmTargets = dcgmTargets(list)
	}
	listed := s.list(st, list, now)
	st.procs, st.omitted = procsOf(r.results[qProcs], devs, st.procsHost)
	st.alerts = alertsOf(r.results[qAlerts], devs)
	st.claims = claimsOf(r.results[qClaims], devs)

	// Hosts that were listed and are gone: down (their target is) or
	// stale. They stay, with their last values.
	downTargets := downTargetsOf(r.results[qTargets])
	if err := s.forgetAndLookBack(ctx, listed, downTargets, now); err != nil {
		return nil, s.timeoutError(err)
	}
	s.remember(listed)
	if !st.procsAll && r.open != "" {
		if err := s.readGoneProcesses(ctx, listed, r.open); err != nil {
			return nil, s.timeoutError(err)
		}
	}
	s.keepGone(st, listed, downTargets, now)
	st.byID = make(map[string]int, len(st.devs))
	for i, d := range st.devs {
		st.byID[d.info.ID] = i
	}
	return st, nil
}

// list puts the devices of list in st and remembers them as seen now; it
// returns their IDs.
func (s *Source) list(st *fleetState, list []*building, now time.Time) map[string]bool {
	listed := make(map[string]bool, len(list))
	st.devs = make([]devData, 0, len(list))
	for _, b := range list {
		listed[b.info.ID] = true
		d := devData{info: b.info, mem: b.mem}
		if sd := s.seen[b.info.ID]; sd != nil {
			*sd = seenDevice{dev: d, k: b.k, instance: b.instance, at: now}
		} else {
			s.seen[b.info.ID] = &seenDevice{dev: d, k: b.k, instance: b.instance, at: now}
		}
		st.devs = append(st.devs, d)
	}
	return listed
}

// downTargetsOf are the scrape targets of targets (QueryTargets' answer)
// that are down.
func downTargetsOf(targets []Sample) map[string]bool {
	down := map[string]bool{}
	for _, smp := range targets {
		if inst := smp.Metric.Get(labelInstance); inst != "" && smp.Value == 0 {
			down[inst] = true
		}
	}
	return down
}

// identify keeps the labels and total memory of each device of devices
// (QueryDevices' answer), the reserved memory of reserved
// (QueryReserved's) and the scrape targets of targets (QueryTargets').
func (s *Source) identify(devices, reserved, targets []Sample) {
	clear(s.ident)
	clear(s.total)
	clear(s.reserved)
	for _, smp := range devices {
		k := keyOf(smp.Metric)
		s.ident[k] = smp.Metric
		s.total[k] = smp.Value
	}
	for _, smp := range reserved {
		s.reserved[keyOf(smp.Metric)] = smp.Value
	}
	s.targets = make(map[string]float64, len(targets))
	for _, smp := range targets {
		s.targets[smp.Metric.Get(labelInstance)] = smp.Value
	}
}

// dcgmTargets are the scrape targets of the devices of list that only
// dcgm-exporter exports, as a regexp.
func dcgmTargets(list []*building) string {
	set := map[string]bool{}
	for _, b := range list {
		if b.info.NoProcessList && b.instance != "" {
			set[regexp.QuoteMeta(b.instance)] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), "|")
}

// newTarget reports whether targets (QueryTargets' answer) hold one that
// was not there when the labels were read, or that has gone down or come
// back since.
func (s *Source) newTarget(targets []Sample) bool {
	for _, smp := range targets {
		if v, ok := s.targets[smp.Metric.Get(labelInstance)]; !ok || v != smp.Value {
			return true
		}
	}
	return false
}

// hostSelector is the label matcher of the series of host's vramtop, as
// its devices were last labelled: the label the host is named by, else its
// scrape targets; "" when no device of vramtop's is known on host.
func (s *Source) hostSelector(host string) string {
	var insts []string
	for k, m := range s.ident {
		if k.host != host {
			continue
		}
		switch {
		case m.Get(metricname.LabelHostname) == host:
			return metricname.LabelHostname + "=" + strconv.Quote(host)
		case m.Get(metricname.LabelHostnameOld) == host:
			return metricname.LabelHostnameOld + "=" + strconv.Quote(host)
		}
		if inst := regexp.QuoteMeta(m.Get(labelInstance)); !slices.Contains(insts, inst) {
			insts = append(insts, inst)
		}
	}
	if len(insts) == 0 {
		return ""
	}
	slices.Sort(insts)
	return labelInstance + "=~" + strconv.Quote(strings.Join(insts, "|"))
}

// ProcsQuery is QueryProcs for the series that the label matcher sel
// (`hostname="node1"`) selects.
func ProcsQuery(sel string) string {
	return `max by (__name__, hostname, Hostname, gpu, GPU_I_ID, pid, user, command, type, container_id) ({__name__=~"vramtop_process_gpu_memory_(bytes|unknown)", ` + sel + `})` +
		` or max by (__name__, hostname, Hostname, gpu, GPU_I_ID) ({__name__=~"vramtop_gpu_processes_unexported|vramtop_gpu_memory_unexported_bytes", ` + sel + `}` +
		` unless on (instance, job, hostname, Hostname, gpu, GPU_I_ID) (vramtop_gpu_processes_unexported{` + sel + `} == 0))`
}

// readGoneProcesses reads the processes of host's devices that are gone
// and whose processes were never read (the host went down while it was
// not open), as they were when it was last listed.
func (s *Source) readGoneProcesses(ctx context.Context, listed map[string]bool, host string) error {
	at := map[string]time.Time{}
	for id, sd := range s.seen {
		if !listed[id] && !sd.procsRead && sd.dev.info.Hostname == host && !sd.dev.info.NoProcessList && sd.instance != "" {
			at[sd.instance] = sd.at
		}
	}
	if len(at) == 0 {
		return nil
	}
	smps, err := s.lastScrapes(ctx, at)
	if err != nil {
		return err
	}
	var procSmps []Sample
	for _, smp := range smps {
		if smp.Metric.Get(labelName) != metricname.Alert {
			procSmps = append(procSmps, smp)
		}
	}
	devs := map[key]*building{}
	for id, sd := range s.seen {
		if !listed[id] && !sd.procsRead && sd.dev.info.Hostname == host {
			devs[sd.k] = &building{k: sd.k, info: sd.dev.info}
		}
	}
	ps, omitted := procsOf(procSmps, devs, host)
	for id, sd := range s.seen {
		if listed[id] || sd.procsRead || sd.dev.info.Hostname != host || at[sd.instance].IsZero() {
			continue
		}
		sd.procs, sd.omitted, sd.procsRead = nil, omitted[id], true
		for _, p := range ps {
			if p.dev == id {
				sd.procs = append(sd.procs, p.p)
			}
		}
	}
	return nil
}

// forgetAndLookBack forgets the devices gone for longer than they are
// kept, and reads back from Prometheus's history the last values of the
// hosts whose targets are down and that this view never saw.
func (s *Source) forgetAndLookBack(ctx context.Context, listed, downTargets map[string]bool, now time.Time) error {
	for inst := range s.lookedUp {
		if !downTargets[inst] {
			delete(s.lookedUp, inst)
		}
	}
	known := map[string]bool{}
	for id, sd := range s.seen {
		if listed[id] {
			continue
		}
		if !downTargets[sd.instance] && now.Sub(sd.at) > StaleKeep || now.Sub(sd.at) > DownLookback {
			delete(s.seen, id)
			continue
		}
		known[sd.instance] = true
	}
	var unknown []string
	for inst := range downTargets {
		if !known[inst] && !s.lookedUp[inst] {
			unknown = append(unknown, inst)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	// Down since before this fleet view started (fleet --once): their
	// last values come from Prometheus's history.
	slices.Sort(unknown)
	return s.lookBack(ctx, unknown, now)
}

// keepGone adds to st the devices seen before and not listed now, with
// their last values, processes (where they were read) and alerts, each
// marked with why and since when.
func (s *Source) keepGone(st *fleetState, listed, downTargets map[string]bool, now time.Time) {
	liveHosts := make(map[string]bool, len(st.devs))
	for _, d := range st.devs {
		liveHosts[d.info.Hostname] = true
	}
	var gone []devData
	for id, sd := range s.seen {
		if listed[id] {
			continue
		}
		d := sd.dev
		since := clockTime(sd.at, now)
		switch {
		case liveHosts[d.info.Hostname] && !downTargets[sd.instance]:
			// The host reports, this GPU no longer does (lost, or
			// its series went stale): the host is not down.
			d.mem.Err = fmt.Errorf("no series since %s (last values shown)", since)
		case downTargets[sd.instance]:
			d.mem.Err = fmt.Errorf("%sexporter not answering since %s (last values shown)", HostDownPrefix, since)
		default:
			d.mem.Err = fmt.Errorf("%sno series since %s (last values shown)", HostDownPrefix, since)
		}
		gone = append(gone, d)
	}
	if len(gone) == 0 {
		return
	}
	st.listedAt = make(map[string]time.Time, len(gone))
	for _, d := range gone {
		id := d.info.ID
		sd := s.seen[id]
		for _, a := range sd.alerts {
			a.Message += "; last known, " + d.mem.Err.Error()
			st.alerts = append(st.alerts, a)
		}
		if !sd.procsRead {
			if st.unread == nil {
				st.unread = map[string]bool{}
			}
			st.unread[id] = true
			continue
		}
		st.listedAt[id] = sd.at
		for _, p := range sd.procs {
			st.procs = append(st.procs, procData{dev: id, p: p})
		}
		if sd.omitted.n > 0 {
			if st.omitted == nil {
				st.omitted = map[string]omittedProcs{}
			}
			st.omitted[id] = sd.omitted
		}
	}
	st.devs = append(st.devs, gone...)
	sortDevices(st.devs)
}

// remember keeps, for the devices seen before that are not listed now and
// were listed by the last round, that round's processes (where it read
// them), omitted processes and alerts.
func (s *Source) remember(listed map[string]bool) {
	var justGone map[string]*seenDevice
	for id, sd := range s.seen {
		if listed[id] || sd.gone {
			continue
		}
		sd.gone = true
		s.identDue = true
		if justGone == nil {
			justGone = map[string]*seenDevice{}
		}
		justGone[id] = sd
	}
	prev := s.state
	if len(justGone) == 0 || prev == nil {
		return
	}
	for _, p := range prev.procs {
		if sd := justGone[p.dev]; sd != nil {
			sd.procs = append(sd.procs, p.p)
		}
	}
	for _, a := range prev.alerts {
		if sd := justGone[a.DeviceID]; sd != nil {
			sd.alerts = append(sd.alerts, a)
		}
	}
	for id, sd := range justGone {
		sd.omitted = prev.omitted[id]
		sd.procsRead = prev.read(sd.dev.info.Hostname) && !prev.unread[id]
	}
}

// unidentified reports whether a device of the values has no labels read.
func (s *Source) unidentified(values []Sample) bool {
	for _, smp := range values {
		if smp.Metric.Get(labelName) != metricname.MemoryUsed {
			continue
		}
		if _, ok := s.ident[keyOf(smp.Metric)]; !ok {
			return true
		}
	}
	return false
}

// clockTime is when t was, as a user reads it: the time of day, with the
// date when it was not today.
func clockTime(t, now time.Time) string {
	if t.Local().YearDay() != now.Local().YearDay() || t.Year() != now.Year() {
		return t.Local().Format("2006-01-02 15:04:05")
	}
	return t.Local().Format("15:04:05")
}

// lookBackValues are the series of a device's last values read back for a
// host that is down: vramtop's and dcgm-exporter's.
const lookBackValues = `{__name__=~"vramtop_gpu_memory_(total|used|free|reserved)_bytes|vramtop_gpu_utilization_ratio|DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_FB_(TOTAL|USED|FREE|RESERVED)|DCGM_FI_DEV_GPU_UTIL",`

// lookBackProcs are the series of a host's processes and alerts, read
// back as they were at its last scrape.
const lookBackProcs = `{__name__=~"vramtop_process_gpu_memory_(bytes|unknown)|vramtop_gpu_processes_unexported|vramtop_gpu_memory_unexported_bytes|vramtop_alert",`

// lookBackParallel bounds the queries of processes asked at once for the
// hosts that are down.
const lookBackParallel = 4

// lookBack reads the last values and the last sample time of the devices
// behind the down targets insts and remembers them as seen then, with the
// processes and alerts of their last scrape.
func (s *Source) lookBack(ctx context.Context, insts []string, now time.Time) error {
	quoted := make([]string, len(insts))
	for i, in := range insts {
		quoted[i] = regexp.QuoteMeta(in)
		s.lookedUp[in] = true
	}
	sel := "instance=~" + strconv.Quote(strings.Join(quoted, "|"))
	win := "[" + strconv.FormatInt(int64(DownLookback/time.Second), 10) + "s]"
	values := `last_over_time(` + lookBackValues + sel + `}` + win + `)`
	// timestamp() of a selector is its sample's time; the subquery's step
	// is 1 s (Prometheus 2.42 found nothing at a 5 s step when the last
	// samples were seconds old).
	seen := `max by (instance) (max_over_time(timestamp(DCGM_FI_DEV_FB_USED{` + sel + `})` + strings.TrimSuffix(win, "]") + `:1s]))`
	var vals, times []Sample
	var verr, terr error
	var wg sync.WaitGroup
	wg.Go(func() { vals, verr = s.client.Query(ctx, values) })
	wg.Go(func() { times, terr = s.client.Query(ctx, seen) })
	wg.Wait()
	if err := cmp.Or(verr, terr); err != nil {
		return err
	}
	at := map[string]time.Time{}
	for _, smp := range times {
		// Milliseconds, as Prometheus keeps them: the processes are
		// asked at that very time.
		at[smp.Metric.Get(labelInstance)] = time.UnixMilli(int64(math.Round(smp.Value * 1000)))
	}
	var vram, dcgm []Sample
	for _, smp := range vals {
		switch name := smp.Metric.Get(labelName); {
		case strings.HasPrefix(name, "vramtop_"), name == metricname.DCGMGPUTemp, name == metricname.DCGMPowerUsage:
			// Temperature and power go to the devices of either.
			vram = append(vram, smp)
		default:
			dcgm = append(dcgm, smp)
		}
	}
	procs, err := s.lastScrapes(ctx, at)
	if err != nil {
		return err
	}
	var procSmps, alertSmps []Sample
	for _, smp := range procs {
		if smp.Metric.Get(labelName) == metricname.Alert {
			if smp.Value == 1 {
				alertSmps = append(alertSmps, smp)
			}
			continue
		}
		procSmps = append(procSmps, smp)
	}
	list, devs := build(identity{}, vram, dcgm)
	ps, omitted := procsOf(procSmps, devs, "")
	alerts := alertsOf(alertSmps, devs)
	for _, b := range list {
		t, ok := at[b.instance]
		if !ok {
			t = now.Add(-DownLookback)
		}
		sd := &seenDevice{dev: devData{info: b.info, mem: b.mem}, k: b.k, instance: b.instance, at: t, gone: true, omitted: omitted[b.info.ID], procsRead: true}
		for _, p := range ps {
			if p.dev == b.info.ID {
				sd.procs = append(sd.procs, p.p)
			}
		}
		for _, a := range alerts {
			if a.DeviceID == b.info.ID {
				sd.alerts = append(sd.alerts, a)
			}
		}
		s.seen[b.info.ID] = sd
	}
	return nil
}

// lastScrapes are the process and alert series of each instance in at as
// they were at its last scrape, at that time: what a process that had
// exited by then left behind is not among them.
func (s *Source) lastScrapes(ctx context.Context, at map[string]time.Time) ([]Sample, error) {
	insts := slices.Sorted(maps.Keys(at))
	results := make([][]Sample, len(insts))
	errs := make([]error, len(insts))
	sem := make(chan struct{}, lookBackParallel)
	var wg sync.WaitGroup
	for i, inst := range insts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			q := lookBackProcs + labelInstance + "=" + strconv.Quote(inst) + "}"
			results[i], errs[i] = s.client.QueryAt(ctx, q, at[inst])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return slices.Concat(results...), nil
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

// HostOf is the host a series belongs to: its hostname label (vramtop,
// dcgm-exporter), else Hostname (both, before 2026-05), else the scrape
// target's host.
func HostOf(m Labels) string { return keyOf(m).host }

// labelName and labelInstance are Prometheus's labels of a series' name and
// its scrape target.
const (
	labelName     = "__name__"
	labelInstance = "instance"
)

// keyOf is the device a series belongs to, read in one pass over its
// labels.
func keyOf(m Labels) key {
	var host, old, inst string
	var k key
	for _, l := range m {
		switch l.Name {
		case metricname.LabelHostname:
			host = l.Value
		case metricname.LabelHostnameOld:
			old = l.Value
		case labelInstance:
			inst = l.Value
		case metricname.LabelGPU:
			k.gpu = l.Value
		case metricname.LabelGPUInstID:
			k.gi = l.Value
		}
	}
	switch {
	case host != "":
		k.host = host
	case old != "":
		k.host = old
	default:
		k.host = inst
		if h, _, ok := strings.Cut(inst, ":"); ok && !strings.Contains(h, "[") {
			k.host = h
		}
	}
	return k
}

type building struct {
	k        key
	info     sampler.DeviceInfo
	mem      sampler.MemSample
	instance string
	total    bool // total known directly
	free     bool // free known directly
}

// identity is what the fleet knows of each vramtop device from the rounds
// that read its labels: the labels, total and reserved memory.
type identity struct {
	labels          map[key]Labels
	total, reserved map[key]float64
}

// build makes the device list, sorted, from the vramtop series (values;
// in a look back, totals too) with each device's labels and the memory
// that does not change from idents, and dcgm-exporter's series; it returns
// the devices by key too.
func build(idents identity, vram, dcgm []Sample) ([]*building, map[key]*building) {
	devs := make(map[key]*building, len(idents.labels))
	get := func(m Labels) *building {
		k := keyOf(m)
		b := devs[k]
		if b == nil {
			b = newBuilding(k)
			devs[k] = b
		}
		b.identify(m)
		return b
	}
	// The hosts whose exporter has no recent sample.
	down := map[string]bool{}
	// Temperature and power may come from dcgm-exporter on the same host:
	// they go to devices known from the memory series.
	var extras []Sample
	for _, smp := range vram {
		name := smp.Metric.Get(labelName)
		switch {
		case name == metricname.Up:
			if smp.Value == 0 {
				down[HostOf(smp.Metric)] = true
			}
		case smp.Metric.Get(metricname.LabelGPU) == "":
		case isExtra(name):
			extras = append(extras, smp)
		case name == metricname.MemoryTotal && math.IsNaN(smp.Value):
			// Not known: the parts add up to it.
		default:
			get(smp.Metric).setVramtop(name, smp.Value)
		}
	}
	for _, smp := range dcgm {
		if smp.Metric.Get(metricname.LabelGPU) == "" {
			continue
		}
		if b := devs[keyOf(smp.Metric)]; b != nil && !b.info.NoProcessList {
			// vramtop's series of the device win.
			continue
		}
		if name := smp.Metric.Get(labelName); isExtra(name) {
			extras = append(extras, smp)
		} else {
			get(smp.Metric).setDCGM(name, smp.Value)
		}
	}
	for _, smp := range extras {
		if b := devs[keyOf(smp.Metric)]; b != nil {
			b.setExtra(smp.Metric.Get(labelName), smp.Value)
		}
	}
	for k, b := range devs {
		if m, ok := idents.labels[k]; ok {
			b.identify(m)
		}
		if b.info.NoProcessList {
			// dcgm-exporter's: its own series say it all.
		} else if v, ok := idents.total[k]; ok && !b.total && !math.IsNaN(v) {
			b.setVramtop(metricname.MemoryTotal, v)
		}
		if v, ok := idents.reserved[k]; ok && !b.info.NoProcessList && !b.mem.HasReserved && !math.IsNaN(v) {
			b.setVramtop(metricname.MemoryReserved, v)
		}
		// A GPU with MIG instances is their parent.
		if p := devs[key{k.host, k.gpu, ""}]; k.gi != "" && p != nil {
			p.info.MIGEnabled = true
		}
		b.finish(down[k.host])
	}
	list := slices.Collect(maps.Values(devs))
	slices.SortFunc(list, func(a, b *building) int { return compareDevices(&a.info, &b.info) })
	return list, devs
}

// newBuilding is the device of k, known by its key alone.
func newBuilding(k key) *building {
	b := &building{k: k}
	idx, _ := strconv.Atoi(k.gpu)
	b.info = sampler.DeviceInfo{ID: k.id(), Index: idx, Hostname: k.host}
	if k.gi != "" {
		gi, _ := strconv.Atoi(k.gi)
		b.info.MIG = &sampler.MIGInfo{ParentIndex: idx, GPUInstanceID: gi}
	}
	return b
}

// isExtra: temperature and power, which either exporter may give.
func isExtra(name string) bool {
	return name == metricname.DCGMGPUTemp || name == metricname.DCGMPowerUsage
}

// setVramtop takes the value of one of vramtop's series of the device.
func (b *building) setVramtop(name string, value float64) {
	v := bytesOf(value)
	switch name {
	case metricname.MemoryTotal:
		b.mem.Total, b.total = v, true
	case metricname.MemoryUsed:
		b.mem.Used = v
	case metricname.MemoryFree:
		b.mem.Free, b.free = v, true
	case metricname.MemoryReserved:
		b.mem.Reserved, b.mem.HasReserved = v, true
	case metricname.Utilization:
		b.mem.Util, b.mem.HasUtil = value*100, true
	}
}

// setDCGM takes the value of one of dcgm-exporter's series (MiB, percent)
// of a device vramtop does not export.
func (b *building) setDCGM(name string, value float64) {
	b.info.NoProcessList = true
	v := bytesOf(value * (1 << 20))
	switch name {
	case metricname.DCGMFBTotal:
		b.mem.Total, b.total = v, true
	case metricname.DCGMFBUsed:
		b.mem.Used = v
	case metricname.DCGMFBFree:
		b.mem.Free, b.free = v, true
	case metricname.DCGMFBReserved:
		b.mem.Reserved, b.mem.HasReserved = v, true
	case metricname.DCGMGPUUtil:
		b.mem.Util, b.mem.HasUtil = value, true
	}
}

// setExtra takes the device's temperature or power.
func (b *building) setExtra(name string, value float64) {
	if math.IsNaN(value) {
		return
	}
	switch name {
	case metricname.DCGMGPUTemp:
		b.mem.TempC, b.mem.HasTemp = int(math.Round(value)), true
	case metricname.DCGMPowerUsage:
		b.mem.PowerW, b.mem.HasPower = value, true
	}
}

// finish completes the device once every series is read: a total from
// its parts where none was given, free memory from the total where it was
// not asked for, and the error of a host whose exporter has no recent
// sample.
func (b *building) finish(hostDown bool) {
	switch {
	case !b.total:
		// dcgm-exporter's default counters have no total: NVML v2's
		// parts add up to it.
		b.mem.Total = b.mem.Used + b.mem.Free + b.mem.Reserved
	case !b.free && b.mem.Total >= b.mem.Used+b.mem.Reserved:
		// NVML's total is used + free + reserved, to the byte (v1's
		// used counts the reserved memory, which it does not report).
		b.mem.Free = b.mem.Total - b.mem.Used - b.mem.Reserved
	}
	if hostDown {
		b.mem.Err = fmt.Errorf("the exporter on %s has no recent GPU sample", b.k.host)
	}
}

// identify fills what b does not know yet of its labels from m.
func (b *building) identify(m Labels) {
	for _, l := range m {
		var f *string
		switch l.Name {
		case metricname.LabelModelName, metricname.LabelModelNameOwn:
			f = &b.info.Name
		case metricname.LabelUUID:
			f = &b.info.UUID
		case metricname.LabelPCIBusID:
			f = &b.info.PCIBusID
		case labelInstance:
			f = &b.instance
		case metricname.LabelGPUProfile:
			if b.info.MIG == nil {
				continue
			}
			f = &b.info.MIG.Profile
		default:
			continue
		}
		if *f == "" {
			*f = l.Value
		}
	}
}

// compareDevices orders by host, GPU index, GPU before its instances,
// instances by number.
func compareDevices(a, b *sampler.DeviceInfo) int {
	return cmp.Or(
		strings.Compare(a.Hostname, b.Hostname),
		cmp.Compare(a.Index, b.Index),
		cmp.Compare(giOrder(a.MIG), giOrder(b.MIG)),
		strings.Compare(a.ID, b.ID),
	)
}

func sortDevices(ds []devData) {
	slices.SortFunc(ds, func(a, b devData) int { return compareDevices(&a.info, &b.info) })
}

// omittedProcs are the processes of a device that its host's exporter left
// out (over serve --max-process-series): how many, and their memory where
// the exporter says (vramtop_gpu_memory_unexported_bytes; an exporter
// before it, or one of them without a known usage, leaves it unknown).
type omittedProcs struct {
	n     int
	bytes uint64
	known bool
}

// procsOf are the processes of the listed devices (of host only, where
// not ""), and by device ID those their exporters left out.
func procsOf(procs []Sample, devs map[key]*building, host string) ([]procData, map[string]omittedProcs) {
	out := make([]procData, 0, len(procs))
	var omitted map[string]omittedProcs
	for _, smp := range procs {
		b := devs[keyOf(smp.Metric)]
		if b == nil || host != "" && b.info.Hostname != host {
			continue
		}
		switch name := smp.Metric.Get(labelName); name {
		case metricname.ProcessesUnlisted, metricname.MemoryUnlisted:
			if omitted == nil {
				omitted = map[string]omittedProcs{}
			}
			o := omitted[b.info.ID]
			if name == metricname.ProcessesUnlisted {
				o.n = int(math.Round(smp.Value))
			} else {
				o.bytes, o.known = bytesOf(smp.Value), true
			}
			omitted[b.info.ID] = o
			continue
		}
		pid, err := strconv.ParseUint(smp.Metric.Get("pid"), 10, 32)
		if err != nil {
			continue
		}
		user := smp.Metric.Get("user")
		known := smp.Metric.Get(labelName) != metricname.ProcessUnknown
		var used *uint64
		if known {
			used = sampler.Ptr(bytesOf(smp.Value))
		}
		out = append(out, procData{dev: b.info.ID, p: sampler.ProcSample{Process: sampler.Process{
			PID: uint32(pid), UsedBytes: used,
			Type: smp.Metric.Get("type"), User: user, Command: smp.Metric.Get("command"),
			Container: smp.Metric.Get(metricname.LabelContainerID),
			// The exporter saw it; from here it is a name, not a PID we
			// could inspect.
			Visible: user != "",
		}}})
	}
	for id, o := range omitted {
		if o.n < 1 {
			delete(omitted, id)
		}
	}
	return out, omitted
}

// giOrder puts a GPU before its instances, instances by number.
func giOrder(m *sampler.MIGInfo) int {
	if m == nil {
		return -1
	}
	return m.GPUInstanceID
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

// minBackfillPoints is the fewest points a device the history is read
// back with.
const minBackfillPoints = 12

// historyPointBytes bounds what one point of a range query's answer takes
// (`[1764417600,"85899345920"],` is 28 bytes), its series' labels shared
// among its points included.
const historyPointBytes = 48

// historyPoints is how many points a device the history asks for: at
// most points, as many as fit in MaxAnswerBytes for devices, at least
// minBackfillPoints.
func historyPoints(points, devices int) int {
	if devices > 0 {
		points = min(points, MaxAnswerBytes/historyPointBytes/devices)
	}
	return max(points, minBackfillPoints)
}

// readHistory reads the used memory of the cfg.History up to end back, at
// most points a device, each point the maximum of its step.
func (s *Source) readHistory(points int, end time.Time) error {
	start := end.Add(-s.cfg.History)
	step := max(s.cfg.Interval, s.cfg.History/time.Duration(points))
	step = step.Round(time.Second)
	if step < time.Second {
		step = time.Second
	}
	win := strconv.FormatInt(int64(step/time.Second), 10) + "s"
	ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.Timeout)
	defer cancel()
	var vram, dcgm []Series
	var verr, derr error
	var wg sync.WaitGroup
	wg.Go(func() {
		vram, verr = s.client.QueryRange(ctx, "max_over_time("+metricname.MemoryUsed+"["+win+"])", start, end, step)
	})
	wg.Go(func() {
		dcgm, derr = s.client.QueryRange(ctx, "max_over_time("+metricname.DCGMFBUsed+"["+win+"]) * 1048576", start, end, step)
	})
	wg.Wait()
	if err := cmp.Or(verr, derr); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer within %v", 3*s.cfg.Timeout)
		}
		return err
	}
	bf := map[string]history{}
	add := func(series []Series, skip func(string) bool) {
		for _, ser := range series {
			if ser.Metric.Get(metricname.LabelGPU) == "" {
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
	s.backfillSeq++
	s.mu.Unlock()
	return nil
}
