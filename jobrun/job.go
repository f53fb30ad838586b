// Package jobrun runs a command as a watched job: it starts the command in
// its own process group, passes its input and output through, forwards
// signals to it, follows the GPU memory of its whole process tree through a
// sampler, and reports the job's peaks, headroom and any out-of-memory
// crash when it ends.
package jobrun

import (
	"errors"
	"io"
	"os"
	"sort"
	"time"

	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// Config describes a job to run.
type Config struct {
	// Argv is the command and its arguments.
	Argv []string
	// Env, when not nil, is the command's environment (else vramtop's).
	Env []string
	// Sampler samples the GPUs; Run drives it and closes it.
	Sampler *sampler.Sampler
	// Record, when set, receives every snapshot; Run does not close it.
	Record *recorder.Writer
	// Stdin, Stdout and Stderr are the child's. Files are handed to it as
	// they are; Stderr also goes through the OOM scanner.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signals are forwarded to the child's process group until it exits.
	Signals <-chan os.Signal
	// Foreground makes the child's process group the terminal's
	// foreground group (when Stdin is the controlling terminal), so it can
	// read the terminal and gets Ctrl-C itself.
	Foreground bool
	// ProcRoot is where /proc is mounted; "/proc" when empty.
	ProcRoot string
	// OnStart is called with the child's PID once it started (the demo
	// puts it on a GPU).
	OnStart func(pid int)
	// PlotWidth is the plot's width in columns; 60 when 0.
	PlotWidth int
	// KillLeftovers ends the job's processes still running when its
	// leader exits: SIGTERM, then SIGKILL after KillGrace (DefaultKillGrace
	// when 0).
	KillLeftovers bool
	KillGrace     time.Duration
}

// DefaultKillGrace is how long leftovers get between SIGTERM and SIGKILL.
const DefaultKillGrace = 5 * time.Second

// ErrStart wraps a failure to start the command.
var ErrStart = errors.New("cannot start")

// watch accumulates what the report needs, one snapshot at a time. Only
// the sampler loop's goroutine touches it until the loop has ended.
type watch struct {
	tree *tree
	gpus map[string]*gpuWatch
	// The job's memory on all GPUs, one sample per snapshot.
	times  []time.Time
	values []uint64
	peak   uint64
	peakAt time.Time
	source string
	demo   bool
	intvl  time.Duration
	notes  []string
	// recordFailed is set once writing the recording failed.
	recordFailed bool
	// lastBytes is each member's memory on all GPUs at the last snapshot.
	lastBytes map[int]uint64
}

type gpuWatch struct {
	order      int
	name       string
	total      uint64
	touched    bool
	peak       uint64
	peakAt     time.Time
	minFree    uint64
	minFreeAt  time.Time
	hasMinFree bool
	jobAtMin   uint64
	others     []Other
	unattAtMin *uint64
	energy     energyMeter
}

func newWatch(t *tree) *watch {
	return &watch{tree: t, gpus: map[string]*gpuWatch{}, lastBytes: map[int]uint64{}}
}

func (w *watch) observe(snap sampler.Snapshot) {
	members := w.tree.scan()
	w.source, w.demo, w.intvl = snap.Source, snap.Demo, snap.Interval
	clear(w.lastBytes)
	var sum uint64
	for i, d := range snap.Devices {
		if d.MIGEnabled {
			continue // its memory and processes are its instances'
		}
		g := w.gpus[d.ID]
		if g == nil {
			g = &gpuWatch{order: i}
			w.gpus[d.ID] = g
		}
		g.name, g.total = d.Name, d.MemoryTotal
		var job uint64
		var others []Other
		for _, p := range d.Processes {
			if p.Exited {
				continue
			}
			if _, in := members[int(p.PID)]; in {
				job += p.Used()
				w.lastBytes[int(p.PID)] += p.Used()
				g.touched = true
				continue
			}
			others = append(others, Other{PID: p.PID, User: p.User, Command: p.Command, Bytes: p.UsedBytes, Visible: p.Visible})
		}
		g.energy.observe(snap.Time, d, w.tree.ever)
		sum += job
		if job > g.peak || g.touched && g.peakAt.IsZero() {
			g.peak, g.peakAt = job, snap.Time
		}
		if d.Err == "" && d.MemoryTotal > 0 && (!g.hasMinFree || d.MemoryFree < g.minFree) {
			g.minFree, g.minFreeAt, g.hasMinFree = d.MemoryFree, snap.Time, true
			g.jobAtMin, g.others, g.unattAtMin = job, others, d.Unattributed
		}
	}
	w.times = append(w.times, snap.Time)
	w.values = append(w.values, sum)
	if sum > w.peak || w.peakAt.IsZero() {
		w.peak, w.peakAt = sum, snap.Time
	}
}

func (w *watch) report(argv []string, start, end time.Time) Report {
	r := Report{
		Command: argv, Start: start, End: end,
		DurationSeconds: end.Sub(start).Seconds(),
		Source:          w.source, Demo: w.demo, IntervalSeconds: w.intvl.Seconds(),
		PeakBytes: w.peak, PeakAt: w.peakAt, Notes: w.notes,
		GPUs: []GPUReport{}, PIDs: []int{}, Leftovers: []Leftover{},
	}
	for pid := range w.tree.ever {
		r.PIDs = append(r.PIDs, pid)
	}
	sort.Ints(r.PIDs)
	var ids []string
	for id, g := range w.gpus {
		if g.touched {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return w.gpus[ids[i]].order < w.gpus[ids[j]].order })
	for _, id := range ids {
		g := w.gpus[id]
		e, unknown := g.energy.energy()
		r.GPUs = append(r.GPUs, GPUReport{
			ID: id, Name: g.name, TotalBytes: g.total, PeakBytes: g.peak, PeakAt: g.peakAt,
			MinFreeBytes: g.minFree, MinFreeAt: g.minFreeAt, JobAtMinFree: g.jobAtMin,
			Others: nonNil(g.others), UnattributedAtMinFree: g.unattAtMin,
			Energy: e, EnergyUnknown: unknown,
		})
		if e != nil {
			if r.Energy == nil {
				r.Energy = &EnergyTotal{}
			}
			r.Energy.Joules += e.Joules
			r.Energy.JobJoules += e.JobJoules
			r.Energy.KWh, r.Energy.JobKWh = r.Energy.Joules/3.6e6, r.Energy.JobJoules/3.6e6
		}
	}
	if len(w.times) == 0 {
		r.Notes = append(r.Notes, "the job ended before the first GPU sample")
	}
	if len(r.GPUs) == 0 {
		r.PeakAt = time.Time{}
	}
	return r
}

func nonNil(o []Other) []Other {
	if o == nil {
		return []Other{}
	}
	return o
}
