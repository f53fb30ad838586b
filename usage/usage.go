// Package usage accounts for who held GPU memory over a window: per user
// and per job (Slurm job, Kubernetes pod, container), the GiB-hours held,
// the GPU-hours held, of which while idle, the peak and the share of the
// cards' memory. Samples come in one host moment at a time (a recording's
// line, a Prometheus step) and are integrated as they come: memory grows
// with the number of users, jobs and GPUs (each bounded), never with the
// number of samples.
//
// The integral: a GPU's sample stands for the time from it to that GPU's
// next sample (sample and hold). Where the next sample comes more than
// MaxGapFactor intervals later (the recorder was stopped, the host was
// down), the sample stands for one interval only and the rest is a gap:
// not recorded, counted in Totals.GapHours, never as memory held. The last
// sample of each GPU stands for one interval. Everything is clipped to
// the window [Since, Until).
package usage

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Sample is one moment of one host: what each of its GPUs held.
type Sample struct {
	Host string
	Time time.Time
	// Interval is the sampling interval: how long a sample stands for
	// when no next one follows within MaxGapFactor of it.
	Interval time.Duration
	Devices  []Device
}

// Device is one GPU (or MIG instance) in a Sample.
type Device struct {
	ID    string // the host's key for it: "0", "0/3"
	Total uint64
	Used  uint64
	// Util is the GPU's utilization in percent; nil where unknown.
	Util  *float64
	Procs []Proc
}

// Proc is one process holding memory on a device.
type Proc struct {
	User string // "" where not known (another PID namespace)
	// Job names the Slurm job, pod or container it belongs to
	// ("slurm 4242", "pod 7c0e2f4a", "containerd 5e8d1c3b7a2f"); "" for
	// none.
	Job  string
	Used uint64
	// Util is the process's own utilization in percent; nil where
	// unknown.
	Util *float64
}

// Options configure an Accounter.
type Options struct {
	// Since and Until bound the window; zero: unbounded on that side.
	Since, Until time.Time
	// IdleBelow is the utilization, in percent, under which memory held is
	// held idle; DefaultIdleBelow when 0.
	IdleBelow float64
}

// DefaultIdleBelow is the utilization under which a GPU held is idle.
const DefaultIdleBelow = 5.0

// MaxGapFactor is how many intervals after a sample the next one may come
// and still be taken as following it; past that the time between is a gap.
const MaxGapFactor = 3

// Bounds on what is kept: past them, further users, jobs or GPUs are
// counted together under Other (users, jobs) or left out (GPUs, warned).
const (
	MaxUsers   = 10000
	MaxJobs    = 20000
	MaxDevices = 8192
)

// Other is the name of the row that gathers users or jobs past the bounds.
const Other = "(other)"

// Unknown is the user of processes whose user is not known.
const Unknown = "(unknown)"

type holderKey struct{ user, job string }

// holder is one (user, job) on one GPU in one sample.
type holder struct {
	k       holderKey
	bytes   uint64
	util    float64
	hasUtil bool
}

// devState is the last sample of one GPU, waiting for the next.
type devState struct {
	t        time.Time
	interval time.Duration
	total    uint64
	used     uint64
	attr     uint64
	util     *float64
	holders  []holder
	// inWindow: some of its time fell in the window.
	inWindow bool
}

type devKey struct{ host, id string }

// Row is one user's or one job's account.
type Row struct {
	byteSec    float64
	heldSec    float64
	idleSec    float64
	unknownSec float64 // held with utilization unknown
	peak       uint64
	peakAt     time.Time
	first      time.Time
	last       time.Time
	user       string // a job's user (its first); "several" when not one
	jobs       map[string]bool
	hosts      map[string]bool
}

// Accounter integrates samples. It is not safe for concurrent use.
type Accounter struct {
	opts      Options
	devs      map[devKey]*devState
	users     map[string]*Row
	jobs      map[string]*Row
	hosts     map[string]bool
	dupes     int
	droppedDv bool
	// Totals over every GPU.
	capByteSec, usedByteSec, attrByteSec, unattrByteSec, cardSec, gapSec float64
	first, last                                                          time.Time
	// lineSums is scratch: each user's and job's bytes in one sample.
	lineSums map[string]uint64
	jobSums  map[string]uint64
}

// New returns an Accounter for opts.
func New(opts Options) *Accounter {
	if opts.IdleBelow == 0 {
		opts.IdleBelow = DefaultIdleBelow
	}
	return &Accounter{opts: opts, devs: map[devKey]*devState{}, users: map[string]*Row{}, jobs: map[string]*Row{},
		hosts: map[string]bool{}, lineSums: map[string]uint64{}, jobSums: map[string]uint64{}}
}

// jobKey is a job's row: a job by its name, memory in no job by its user.
func jobKey(k holderKey) string {
	if k.job == "" {
		return "\x00" + k.user
	}
	return k.job
}

// overlap is how much of [t, t+d) lies in the window.
func (a *Accounter) overlap(t time.Time, d time.Duration) float64 {
	lo, hi := t, t.Add(d)
	if !a.opts.Since.IsZero() && lo.Before(a.opts.Since) {
		lo = a.opts.Since
	}
	if !a.opts.Until.IsZero() && hi.After(a.opts.Until) {
		hi = a.opts.Until
	}
	if !hi.After(lo) {
		return 0
	}
	return hi.Sub(lo).Seconds()
}

func (a *Accounter) inWindow(t time.Time) bool {
	return (a.opts.Since.IsZero() || !t.Before(a.opts.Since)) && (a.opts.Until.IsZero() || t.Before(a.opts.Until))
}

// Add takes one sample. A GPU's sample at or before its previous one (a
// part named twice, overlapping parts) is left out: counted in
// Duplicates.
func (a *Accounter) Add(s Sample) {
	if s.Interval <= 0 {
		s.Interval = time.Second
	}
	clear(a.lineSums)
	clear(a.jobSums)
	any := false
	for i := range s.Devices {
		d := &s.Devices[i]
		k := devKey{s.Host, d.ID}
		st := a.devs[k]
		if st == nil {
			if len(a.devs) >= MaxDevices {
				a.droppedDv = true
				continue
			}
			st = &devState{}
			a.devs[k] = st
		} else {
			if !s.Time.After(st.t) {
				a.dupes++
				continue
			}
			a.close(k, st, s.Time.Sub(st.t))
		}
		any = true
		st.t, st.interval, st.total, st.used, st.util = s.Time, s.Interval, d.Total, d.Used, d.Util
		st.holders = st.holders[:0]
		st.attr = 0
		for _, p := range d.Procs {
			if p.Used == 0 {
				continue
			}
			u := p.User
			if u == "" {
				u = Unknown
			}
			hk := holderKey{u, p.Job}
			j := slices.IndexFunc(st.holders, func(h holder) bool { return h.k == hk })
			if j < 0 {
				st.holders = append(st.holders, holder{k: hk})
				j = len(st.holders) - 1
			}
			h := &st.holders[j]
			h.bytes += p.Used
			if p.Util != nil {
				h.util += *p.Util
				h.hasUtil = true
			}
			st.attr += p.Used
			a.lineSums[u] += p.Used
			a.jobSums[jobKey(hk)] += p.Used
		}
	}
	if !any {
		return
	}
	a.hosts[s.Host] = true
	if a.inWindow(s.Time) {
		for u, b := range a.lineSums {
			if r := a.row(a.users, u, MaxUsers); b > r.peak {
				r.peak, r.peakAt = b, s.Time
			}
		}
		for j, b := range a.jobSums {
			if r := a.row(a.jobs, j, MaxJobs); b > r.peak {
				r.peak, r.peakAt = b, s.Time
			}
		}
	}
}

// row returns m's row for name, made where new, or Other's past max rows.
func (a *Accounter) row(m map[string]*Row, name string, max int) *Row {
	if r := m[name]; r != nil {
		return r
	}
	if len(m) >= max {
		name = Other
		if r := m[name]; r != nil {
			return r
		}
	}
	r := &Row{jobs: map[string]bool{}, hosts: map[string]bool{}}
	m[name] = r
	return r
}

// close integrates GPU k's last sample st, the next one coming after next
// (0: none comes).
func (a *Accounter) close(k devKey, st *devState, next time.Duration) {
	span := next
	if next <= 0 || next > MaxGapFactor*st.interval {
		span = st.interval
		if next > 0 {
			a.gapSec += a.overlap(st.t.Add(span), next-span)
		}
	}
	dt := a.overlap(st.t, span)
	if dt == 0 {
		return
	}
	st.inWindow = true
	from, to := st.t, st.t.Add(span)
	if !a.opts.Since.IsZero() && from.Before(a.opts.Since) {
		from = a.opts.Since
	}
	if !a.opts.Until.IsZero() && to.After(a.opts.Until) {
		to = a.opts.Until
	}
	if a.first.IsZero() || from.Before(a.first) {
		a.first = from
	}
	if to.After(a.last) {
		a.last = to
	}
	a.cardSec += dt
	a.capByteSec += float64(st.total) * dt
	a.usedByteSec += float64(st.used) * dt
	a.attrByteSec += float64(st.attr) * dt
	if st.used > st.attr {
		a.unattrByteSec += float64(st.used-st.attr) * dt
	}
	a.closeJobs(st, dt, from, to, k.host)
	a.closeUsers(st, dt, from, to, k.host)
}

// idle says whether holders of util (known: measured; else the card's)
// held the card idle, or whether that is unknown.
func (a *Accounter) idle(st *devState, util float64, known bool) (isIdle, unknown bool) {
	if !known {
		if st.util == nil {
			return false, true
		}
		util = *st.util
	}
	return util < a.opts.IdleBelow, false
}

// closeJobs accounts for dt seconds of each job's holding in st.
func (a *Accounter) closeJobs(st *devState, dt float64, from, to time.Time, host string) {
	for _, h := range st.holders {
		r := a.row(a.jobs, jobKey(h.k), MaxJobs)
		a.account(r, h.bytes, dt, from, to, host)
		if r.user == "" {
			r.user = h.k.user
		} else if r.user != h.k.user {
			r.user = "several"
		}
		if h.k.job != "" {
			r.jobs[h.k.job] = true
		}
		if i, u := a.idle(st, h.util, h.hasUtil); i {
			r.idleSec += dt
		} else if u {
			r.unknownSec += dt
		}
	}
}

// closeUsers accounts for dt seconds of each user's holding in st: a
// user's card is held once, however many of their processes are on it.
func (a *Accounter) closeUsers(st *devState, dt float64, from, to time.Time, host string) {
	for i, h := range st.holders {
		if slices.IndexFunc(st.holders[:i], func(o holder) bool { return o.k.user == h.k.user }) >= 0 {
			continue
		}
		var bytes uint64
		var util float64
		known := false
		for _, o := range st.holders[i:] {
			if o.k.user == h.k.user {
				bytes += o.bytes
				if o.hasUtil {
					util += o.util
					known = true
				}
			}
		}
		r := a.row(a.users, h.k.user, MaxUsers)
		a.account(r, bytes, dt, from, to, host)
		for _, o := range st.holders[i:] {
			if o.k.user == h.k.user && o.k.job != "" && len(r.jobs) < 1000 {
				r.jobs[o.k.job] = true
			}
		}
		if i, u := a.idle(st, util, known); i {
			r.idleSec += dt
		} else if u {
			r.unknownSec += dt
		}
	}
}

func (a *Accounter) account(r *Row, bytes uint64, dt float64, from, to time.Time, host string) {
	r.byteSec += float64(bytes) * dt
	r.heldSec += dt
	if r.first.IsZero() || from.Before(r.first) {
		r.first = from
	}
	if to.After(r.last) {
		r.last = to
	}
	if len(r.hosts) < 1000 {
		r.hosts[host] = true
	}
}

// Report is the account of a window.
type Report struct {
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	First     time.Time `json:"first_sample,omitzero"`
	Last      time.Time `json:"last_sample_end,omitzero"`
	IdleBelow float64   `json:"idle_below_percent"`
	Hosts     []string  `json:"hosts"`
	Totals    Totals    `json:"totals"`
	Users     []UserRow `json:"users"`
	Jobs      []JobRow  `json:"jobs"`
	// Duplicates counts GPU samples left out for coming at or before the
	// GPU's previous one.
	Duplicates int `json:"duplicate_samples,omitempty"`
	// DevicesLeftOut is true when GPUs past MaxDevices were left out.
	DevicesLeftOut bool `json:"devices_left_out,omitempty"`
}

// Totals are over every GPU recorded in the window.
type Totals struct {
	GPUs                 int     `json:"gpus"`
	GPUHours             float64 `json:"gpu_hours"`
	CapacityGiBHours     float64 `json:"capacity_gib_hours"`
	UsedGiBHours         float64 `json:"used_gib_hours"`
	AttributedGiBHours   float64 `json:"attributed_gib_hours"`
	UnattributedGiBHours float64 `json:"unattributed_gib_hours"`
	GapHours             float64 `json:"gap_hours"`
}

// Account is what a user's or a job's row holds.
type Account struct {
	GiBHours        float64   `json:"gib_hours"`
	GPUHours        float64   `json:"gpu_hours"`
	IdleGPUHours    float64   `json:"idle_gpu_hours"`
	UnknownGPUHours float64   `json:"util_unknown_gpu_hours"`
	PeakBytes       uint64    `json:"peak_bytes"`
	PeakAt          time.Time `json:"peak_at,omitzero"`
	Share           float64   `json:"share"`
	First           time.Time `json:"first,omitzero"`
	Last            time.Time `json:"last,omitzero"`
	Hosts           []string  `json:"hosts"`
}

// UserRow is one user's account.
type UserRow struct {
	User string `json:"user"`
	Account
	Jobs []string `json:"jobs"`
}

// JobRow is one job's account; Job is "" for a user's memory in no job.
type JobRow struct {
	Job  string `json:"job"`
	User string `json:"user"`
	Account
}

const gib = 1 << 30

// Report closes every GPU's last sample and returns the account, users
// and jobs by GiB-hours, most first. It is meant to be called once, after
// the last Add.
func (a *Accounter) Report() Report {
	keys := make([]devKey, 0, len(a.devs))
	for k := range a.devs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y devKey) int { return cmp.Or(cmp.Compare(x.host, y.host), cmp.Compare(x.id, y.id)) })
	for _, k := range keys {
		a.close(k, a.devs[k], 0)
	}
	gpus := 0
	for _, k := range keys {
		if a.devs[k].inWindow {
			gpus++
		}
	}
	rep := Report{Since: a.opts.Since, Until: a.opts.Until, First: a.first, Last: a.last, IdleBelow: a.opts.IdleBelow,
		Duplicates: a.dupes, DevicesLeftOut: a.droppedDv, Users: []UserRow{}, Jobs: []JobRow{}}
	for h := range a.hosts {
		rep.Hosts = append(rep.Hosts, h)
	}
	slices.Sort(rep.Hosts)
	rep.Totals = Totals{
		GPUs: gpus, GPUHours: a.cardSec / 3600, CapacityGiBHours: a.capByteSec / gib / 3600,
		UsedGiBHours: a.usedByteSec / gib / 3600, AttributedGiBHours: a.attrByteSec / gib / 3600,
		GapHours: a.gapSec / 3600,
	}
	rep.Totals.UnattributedGiBHours = a.unattrByteSec / gib / 3600
	acct := func(r *Row) Account {
		ac := Account{GiBHours: r.byteSec / gib / 3600, GPUHours: r.heldSec / 3600, IdleGPUHours: r.idleSec / 3600,
			UnknownGPUHours: r.unknownSec / 3600, PeakBytes: r.peak, PeakAt: r.peakAt, First: r.first, Last: r.last, Hosts: []string{}}
		if a.capByteSec > 0 {
			ac.Share = r.byteSec / a.capByteSec
		}
		for h := range r.hosts {
			ac.Hosts = append(ac.Hosts, h)
		}
		slices.Sort(ac.Hosts)
		return ac
	}
	for name, r := range a.users {
		row := UserRow{User: name, Account: acct(r), Jobs: []string{}}
		for j := range r.jobs {
			row.Jobs = append(row.Jobs, j)
		}
		slices.Sort(row.Jobs)
		rep.Users = append(rep.Users, row)
	}
	for key, r := range a.jobs {
		row := JobRow{Job: key, User: r.user, Account: acct(r)}
		if u, ok := strings.CutPrefix(key, "\x00"); ok {
			row.Job, row.User = "", u
		}
		if key == Other {
			row.User = ""
		}
		rep.Jobs = append(rep.Jobs, row)
	}
	slices.SortFunc(rep.Users, func(x, y UserRow) int {
		return cmp.Or(cmp.Compare(y.GiBHours, x.GiBHours), cmp.Compare(x.User, y.User))
	})
	slices.SortFunc(rep.Jobs, func(x, y JobRow) int {
		return cmp.Or(cmp.Compare(y.GiBHours, x.GiBHours), cmp.Compare(x.Job, y.Job), cmp.Compare(x.User, y.User))
	})
	a.devs = map[devKey]*devState{}
	return rep
}
