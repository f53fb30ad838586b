package jobrun

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/guptarohit/asciigraph"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/sampler"
)

// Report is what `vramtop run` says about a job when it ends. Its JSON form
// is the --report json document.
type Report struct {
	Command []string  `json:"command"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// DurationSeconds is how long the job ran, from its start to the
	// leader's exit.
	DurationSeconds float64 `json:"duration_seconds"`
	// ExitCode is vramtop run's own exit status: the child's, or 128+N
	// when signal N killed it.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Source is where the numbers come from: "nvml", or "demo".
	Source string `json:"source"`
	Demo   bool   `json:"demo,omitempty"`
	// IntervalSeconds is the sampling interval.
	IntervalSeconds float64 `json:"interval_seconds"`
	// PIDs lists the job's processes seen (the child and its descendants).
	PIDs []int `json:"pids"`
	// Leftovers are the job's processes still running when its leader
	// exited (a background process of its group, an orphaned grandchild),
	// with the GPU memory they held at the last sample.
	Leftovers []Leftover `json:"leftovers"`
	// GPUs are the GPUs the job held memory on, by device ID.
	GPUs []GPUReport `json:"gpus"`
	// PeakBytes is the job's highest memory, all GPUs together, and when.
	PeakBytes uint64    `json:"peak_bytes"`
	PeakAt    time.Time `json:"peak_at,omitzero"`
	// Energy sums the energy of the GPUs that report it; nil where none does.
	Energy *EnergyTotal `json:"energy,omitempty"`
	// Timeline is the job's memory on all its GPUs over the run, split in
	// equal spans, each holding its span's peak (bytes; null: no sample).
	Timeline *Timeline `json:"timeline,omitempty"`
	// OOM is the diagnosis of an out-of-memory message the job wrote to
	// stderr.
	OOM *advisor.Explanation `json:"oom,omitempty"`
	// Recording is the file the run was recorded to.
	Recording string   `json:"recording,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// GPUReport is the job on one GPU.
type GPUReport struct {
	ID         string    `json:"id"`
	Name       string    `json:"name,omitempty"`
	TotalBytes uint64    `json:"total_bytes"`
	PeakBytes  uint64    `json:"peak_bytes"`
	PeakAt     time.Time `json:"peak_at"`
	// MinFreeBytes is the least free memory the GPU had during the run.
	MinFreeBytes uint64    `json:"min_free_bytes"`
	MinFreeAt    time.Time `json:"min_free_at"`
	// JobAtMinFree is the job's memory on the GPU at that moment, Others
	// the other processes holding memory on it then.
	JobAtMinFree uint64  `json:"job_at_min_free_bytes"`
	Others       []Other `json:"others_at_min_free"`
	// UnattributedAtMinFree is memory no listed process accounted for.
	UnattributedAtMinFree *uint64 `json:"unattributed_at_min_free_bytes,omitempty"`
	// Energy is what the GPU drew while the job ran and the job's share;
	// nil where it is unknown, EnergyUnknown then says why.
	Energy        *Energy `json:"energy,omitempty"`
	EnergyUnknown string  `json:"energy_unknown,omitempty"`
}

// EnergyTotal is the energy of the job's GPUs whose energy is known.
type EnergyTotal struct {
	Joules    float64 `json:"joules"`
	KWh       float64 `json:"kwh"`
	JobJoules float64 `json:"job_joules"`
	JobKWh    float64 `json:"job_kwh"`
}

// Other is a process of someone else (or another job) on a GPU.
type Other struct {
	PID     uint32  `json:"pid"`
	User    string  `json:"user,omitempty"`
	Command string  `json:"command,omitempty"`
	Bytes   *uint64 `json:"bytes,omitempty"`
	// Visible is false for a process of another PID namespace (a
	// container), which /proc here does not name.
	Visible bool `json:"visible"`
}

// Leftover is a process of the job that outlived its leader.
type Leftover struct {
	PID     int    `json:"pid"`
	Command string `json:"command,omitempty"`
	// GPUBytes is its memory on all GPUs at the last sample.
	GPUBytes uint64 `json:"gpu_bytes"`
	// Ended says how --kill-leftovers ended it: "SIGTERM" or "SIGKILL";
	// empty when it was left running (or ended on its own).
	Ended string `json:"ended,omitempty"`
}

// Timeline is the job's memory over the run, peak-held.
type Timeline struct {
	Start       time.Time  `json:"start"`
	StepSeconds float64    `json:"step_seconds"`
	Bytes       []*float64 `json:"bytes"`
}

// Text renders the report for a terminal: a few lines per GPU, a plot,
// the OOM diagnosis.
func (r Report) Text(width int) string {
	var b strings.Builder
	ended := fmt.Sprintf("exited with status %d", r.ExitCode)
	if r.Signal != "" {
		ended = fmt.Sprintf("was killed by %s (status %d)", r.Signal, r.ExitCode)
	}
	took := time.Duration(r.DurationSeconds * float64(time.Second)).Round(time.Millisecond)
	fmt.Fprintf(&b, "\n── vramtop run: %s %s after %s ──\n", shortCommand(ShellQuote(r.Command), 60), ended, took)
	switch {
	case len(r.GPUs) > 0:
	case len(r.PIDs) == 0:
		fmt.Fprintf(&b, "The job held no GPU memory that the driver reported.\n")
	default:
		fmt.Fprintf(&b, "The job (%s) held no GPU memory that the driver reported.\n", pidList(r.PIDs))
	}
	for _, g := range r.GPUs {
		fmt.Fprintf(&b, "GPU %s (%s, %s): job peak %s at %s\n", g.ID, g.Name, Bytes(g.TotalBytes),
			Bytes(g.PeakBytes), r.clock(g.PeakAt))
		b.WriteString(energyText(g.Energy, g.EnergyUnknown))
		if g.MinFreeAt.IsZero() {
			b.WriteString("  free memory unknown (the GPU did not report it)\n")
			continue
		}
		fmt.Fprintf(&b, "  least headroom: %s free at %s (job held %s then)\n",
			Bytes(g.MinFreeBytes), r.clock(g.MinFreeAt), Bytes(g.JobAtMinFree))
		if len(g.Others) == 0 && (g.UnattributedAtMinFree == nil || *g.UnattributedAtMinFree == 0) {
			b.WriteString("  no other process on it then\n")
		}
		for i, o := range g.Others {
			if i == 5 {
				fmt.Fprintf(&b, "  … and %d more processes\n", len(g.Others)-i)
				break
			}
			size := "n/a"
			if o.Bytes != nil {
				size = Bytes(*o.Bytes)
			}
			who := o.User + " " + shortCommand(strings.Fields(o.Command), 40)
			if !o.Visible && o.Command == "" {
				who = "(another PID namespace: a container?)"
			}
			fmt.Fprintf(&b, "  also on it then: pid %d, %s: %s\n", o.PID, size, who)
		}
		if u := g.UnattributedAtMinFree; u != nil && *u > 0 {
			fmt.Fprintf(&b, "  also on it then: %s held by no listed process\n", Bytes(*u))
		}
	}
	if len(r.GPUs) > 1 {
		fmt.Fprintf(&b, "All GPUs together: peak %s at %s\n", Bytes(r.PeakBytes), r.clock(r.PeakAt))
		if e := r.Energy; e != nil {
			fmt.Fprintf(&b, "  energy of those that report it: %s, the job's share %s\n", joules(e.Joules, e.KWh), joules(e.JobJoules, e.JobKWh))
		}
	}
	if plot := r.plot(width); plot != "" {
		b.WriteString(plot)
		b.WriteString("\n")
	}
	if r.OOM != nil && r.OOM.Found {
		b.WriteString("\nOut of memory, from the job's stderr:\n")
		b.WriteString(strings.TrimRight(r.OOM.TextWith(advisor.TextOptions{All: true}), "\n")) // run has no --all: every remedy
		b.WriteString("\n")
	}
	for i, l := range r.Leftovers {
		if i == 0 {
			b.WriteString("Processes of the job still running after it exited:\n")
		}
		if i == 10 {
			fmt.Fprintf(&b, "  … and %d more\n", len(r.Leftovers)-i)
			break
		}
		state := "still running"
		if l.Ended != "" {
			state = "ended by " + l.Ended
		}
		fmt.Fprintf(&b, "  pid %d, %s on the GPUs, %s: %s\n", l.PID, Bytes(l.GPUBytes), state, shortCommand(strings.Fields(l.Command), 50))
	}
	if n := len(r.Leftovers); n > 0 && r.Leftovers[0].Ended == "" {
		b.WriteString("  (vramtop run --kill-leftovers ends them: SIGTERM, then SIGKILL after a grace period)\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if r.Recording != "" {
		fmt.Fprintf(&b, "recorded to %s (vramtop replay %s)\n", r.Recording, r.Recording)
	}
	return b.String()
}

// clock writes t as a clock time and as an offset into the run.
func (r Report) clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return fmt.Sprintf("%s (+%s)", t.Format("15:04:05"), t.Sub(r.Start).Round(time.Second))
}

func (r Report) plot(width int) string {
	tl := r.Timeline
	if tl == nil || len(tl.Bytes) < 2 || len(r.GPUs) == 0 {
		return ""
	}
	unit, div := "GiB", float64(1<<30)
	if r.PeakBytes < 1<<30 {
		unit, div = "MiB", float64(1<<20)
	}
	series := make([]float64, len(tl.Bytes))
	any := false
	for i, v := range tl.Bytes {
		if v == nil {
			series[i] = math.NaN()
			continue
		}
		series[i] = *v / div
		any = true
	}
	if !any {
		return ""
	}
	label := "the job's GPU memory"
	if len(r.GPUs) == 1 {
		label = "the job's memory on GPU " + r.GPUs[0].ID
	} else if len(r.GPUs) > 1 {
		label = "the job's memory, all its GPUs"
	}
	caption := fmt.Sprintf("%s (%s, peak per column) from %s to %s", label, unit,
		r.Start.Format("15:04:05"), r.End.Format("15:04:05"))
	return "\n" + asciigraph.Plot(series, asciigraph.Height(8), asciigraph.Width(width),
		asciigraph.LowerBound(0), asciigraph.Precision(1), asciigraph.Caption(caption))
}

// timeline splits [start, end] into n spans holding the peak of each
// (peak-held), carrying the last value over spans with no sample: memory
// held stays held until the next sample says otherwise.
func timeline(times []time.Time, values []uint64, start, end time.Time, n int) *Timeline {
	if len(times) == 0 || n < 2 || !end.After(start) {
		return nil
	}
	w := sampler.WindowOf(times, values)
	// Buckets is [from, to): stretch to past the last sample.
	b := w.Buckets(start, end.Add(1), n)
	tl := &Timeline{Start: start, StepSeconds: (end.Sub(start) / time.Duration(n)).Seconds(), Bytes: make([]*float64, n)}
	var last *float64
	for i, v := range b {
		if !math.IsNaN(v) {
			x := v
			last = &x
		}
		tl.Bytes[i] = last
	}
	return tl
}

// Bytes writes a byte count in binary units: "61.2 GiB".
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// shortCommand is argv as one line of at most n characters. The job's own
// argv is the caller's, but it may carry a file name or an argument from
// anywhere: it is made inert here, as a leftover's command line is where
// it is read.
func shortCommand(argv []string, n int) string {
	s := inert.String(strings.Join(argv, " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ShellQuote is argv as a shell would take it back: an argument with a
// space or a character the shell reads quoted ('…'), the others as they are.
func ShellQuote(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if a == "" || strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r))
		}) >= 0 {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return out
}

func pidList(pids []int) string {
	sort.Ints(pids)
	var parts []string
	for i, p := range pids {
		if i == 6 {
			parts = append(parts, fmt.Sprintf("… %d in all", len(pids)))
			break
		}
		parts = append(parts, fmt.Sprint(p))
	}
	if len(parts) == 1 {
		return "pid " + parts[0]
	}
	return "pids " + strings.Join(parts, ", ")
}
