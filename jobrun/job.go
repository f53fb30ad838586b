// Package jobrun runs a command as a watched job: it starts the command in
// its own process group, passes its input and output through, forwards
// signals to it, follows the GPU memory of its whole process tree through a
// sampler, and reports the job's peaks, headroom and any out-of-memory
// crash when it ends.
package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// Config describes a job to run.
type Config struct {
	// Argv is the command and its arguments.
	Argv []string
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
}

// ErrStart wraps a failure to start the command.
var ErrStart = errors.New("cannot start")

// Run runs the job to its end and returns its report. When cfg.Signals is
// nil, cancelling ctx sends SIGTERM to the job (a caller that forwards
// signals itself leaves the job to end on its own). An error means the
// command could not start; the report's ExitCode then says what a shell
// would (127: not found, 126: not executable).
func Run(ctx context.Context, cfg Config) (Report, error) {
	if len(cfg.Argv) == 0 {
		return Report{ExitCode: 2}, fmt.Errorf("%w: no command given", ErrStart)
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	defer cfg.Sampler.Close()
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Stdin, cmd.Stdout = cfg.Stdin, cfg.Stdout
	scan := &scanner{}
	// The child writes to a pipe; a goroutine copies to Stderr and the
	// scanner, byte for byte, as it comes.
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		return Report{ExitCode: 1}, err
	}
	cmd.Stderr = stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fg := cfg.Foreground && foregroundTTY(cfg.Stdin)
	if fg {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = int(cfg.Stdin.(*os.File).Fd())
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		stderrR.Close()
		stderrW.Close()
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return Report{ExitCode: code}, fmt.Errorf("%w %s: %v", ErrStart, cfg.Argv[0], unwrapExec(err))
	}
	stderrW.Close()
	pid := cmd.Process.Pid
	if cfg.OnStart != nil {
		cfg.OnStart(pid)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		copyTee(cfg.Stderr, scan, stderrR)
		stderrR.Close()
	}()
	// Forward signals to the whole group until the child is reaped.
	fwdDone := make(chan struct{})
	var ctxDone <-chan struct{}
	if cfg.Signals == nil {
		ctxDone = ctx.Done()
	}
	var fwdWG sync.WaitGroup
	fwdWG.Add(1)
	go func() {
		defer fwdWG.Done()
		for {
			select {
			case <-fwdDone:
				return
			case sig := <-cfg.Signals:
				if s, ok := sig.(syscall.Signal); ok {
					syscall.Kill(-pid, s)
				}
			case <-ctxDone:
				// Without signals to forward, a cancelled ctx stops the job.
				syscall.Kill(-pid, syscall.SIGTERM)
				ctxDone = nil
			}
		}
	}()

	// Watch the GPUs until the child exits.
	w := newWatch(newTree(cfg.ProcRoot, pid))
	loopCtx, stopLoop := context.WithCancel(context.Background())
	loopErr := make(chan error, 1)
	go func() {
		loopErr <- recorder.Loop(loopCtx, cfg.Sampler, time.Time{}, nil, func(snap sampler.Snapshot) error {
			w.observe(snap)
			if cfg.Record != nil {
				if err := cfg.Record.Write(snap); err != nil && !w.recordFailed {
					w.recordFailed = true
					w.notes = append(w.notes, "recording stopped: "+err.Error())
				}
			}
			return nil
		})
	}()
	waitErr := cmd.Wait()
	end := time.Now()
	close(fwdDone)
	fwdWG.Wait()
	if fg {
		reclaimTerminal(cfg.Stdin.(*os.File))
	}
	stopLoop()
	<-loopErr
	// The child is gone; its descendants may hold the pipe open a while.
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		w.notes = append(w.notes, "processes of the job still hold its stderr open; the OOM scan saw their output up to the job's exit")
	}

	r := w.report(cfg.Argv, start, end)
	r.ExitCode, r.Signal = exitStatus(cmd.ProcessState, waitErr)
	if cfg.PlotWidth <= 0 {
		cfg.PlotWidth = 60
	}
	r.Timeline = timeline(w.times, w.values, start, end, cfg.PlotWidth)
	if e := advisor.Explain(scan.text()); e.Found {
		r.OOM = &e
	}
	if cfg.Record != nil {
		r.Recording = cfg.Record.Path()
	}
	return r, nil
}

// copyTee copies r to out and scan, write by write; a failing out (a
// closed terminal) does not stop the scan or block the child.
func copyTee(out io.Writer, scan io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)
	outOK := out != nil
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if outOK {
				if _, werr := out.Write(buf[:n]); werr != nil {
					outOK = false
				}
			}
			scan.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// exitStatus is the shell's view of how the child ended.
func exitStatus(ps *os.ProcessState, err error) (int, string) {
	if ps == nil {
		return 1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), signalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}

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
}

func newWatch(t *tree) *watch { return &watch{tree: t, gpus: map[string]*gpuWatch{}} }

func (w *watch) observe(snap sampler.Snapshot) {
	members := w.tree.scan()
	w.source, w.demo, w.intvl = snap.Source, snap.Demo, snap.Interval
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
				g.touched = true
				continue
			}
			others = append(others, Other{PID: p.PID, User: p.User, Command: p.Command, Bytes: p.UsedBytes, Visible: p.Visible})
		}
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
		Duration: end.Sub(start).Round(time.Millisecond).String(),
		Source:   w.source, Demo: w.demo, Interval: w.intvl.String(),
		PeakBytes: w.peak, PeakAt: w.peakAt, Notes: w.notes,
		GPUs: []GPUReport{},
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
		r.GPUs = append(r.GPUs, GPUReport{
			ID: id, Name: g.name, TotalBytes: g.total, PeakBytes: g.peak, PeakAt: g.peakAt,
			MinFreeBytes: g.minFree, MinFreeAt: g.minFreeAt, JobAtMinFree: g.jobAtMin,
			Others: nonNil(g.others), UnattributedAtMinFree: g.unattAtMin,
		})
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
