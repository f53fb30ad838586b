//go:build unix

package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/hostproc"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
	"golang.org/x/sys/unix"
)

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
	cmd.Env = cfg.Env
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
	leftovers := w.leftovers(cfg.ProcRoot, pid)
	if cfg.KillLeftovers && len(leftovers) > 0 {
		grace := cfg.KillGrace
		if grace <= 0 {
			grace = DefaultKillGrace
		}
		endLeftovers(ctx, w.tree, pid, leftovers, grace)
	}
	// The child is gone; its descendants may hold the pipe open a while.
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		// Closing the pipe would kill them (SIGPIPE) on their next write:
		// a detached drain takes it over and copies it on to Stderr.
		stderrR.SetReadDeadline(time.Now())
		<-copied
		if handOff(stderrR, cfg.Stderr) {
			w.notes = append(w.notes, "processes of the job still hold its stderr open; their output goes on to this stderr (the OOM scan saw it up to the job's exit)")
		} else {
			w.notes = append(w.notes, "processes of the job still hold its stderr open; the OOM scan saw their output up to the job's exit")
		}
	}
	stderrR.Close()

	r := w.report(cfg.Argv, start, end)
	r.Leftovers = leftovers
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

// leftovers lists the job's processes alive now that its leader is gone.
func (w *watch) leftovers(procRoot string, leader int) []Leftover {
	out := []Leftover{}
	for pid := range w.tree.scan() {
		if pid == leader {
			continue // reaped; its PID may name another process soon
		}
		out = append(out, Leftover{PID: pid, Command: cmdline(procRoot, pid), GPUBytes: w.lastBytes[pid]})
	}
	slices.SortFunc(out, func(a, b Leftover) int { return a.PID - b.PID })
	return out
}

// cmdline is a process's command line, its arguments joined by spaces and
// made inert, as the sampler reads it (a leftover may be any program).
func cmdline(procRoot string, pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(hostproc.CommandLine(b))
}

// endLeftovers sends SIGTERM to the job's group and to each leftover,
// waits up to grace for them to exit, then sends SIGKILL to those still
// there, noting in each how it ended. A cancelled ctx cuts the grace short.
func endLeftovers(ctx context.Context, t *tree, leader int, left []Leftover, grace time.Duration) {
	alive := func() map[int]uint64 { return t.scan() }
	syscall.Kill(-leader, syscall.SIGTERM)
	for i := range left {
		if syscall.Kill(left[i].PID, syscall.SIGTERM) == nil {
			left[i].Ended = "SIGTERM"
		}
	}
	deadline := time.Now().Add(grace)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if len(alive()) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			deadline = time.Now()
		case <-tick.C:
		}
	}
	still := alive()
	syscall.Kill(-leader, syscall.SIGKILL)
	for i := range left {
		if _, ok := still[left[i].PID]; ok {
			syscall.Kill(left[i].PID, syscall.SIGKILL)
			left[i].Ended = "SIGKILL"
		}
	}
}

// copyTee copies r to out and scan, write by write; a failing out (a
// closed terminal) does not stop the scan or block the child.
// handOff gives the read end r of the job's stderr pipe to a detached
// cat, in a session of its own, that copies it to out (a file) until the
// last writer closes it, so that processes the job left running write on
// as they would without vramtop.
func handOff(r *os.File, out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	c := exec.Command("cat")
	c.Stdin, c.Stdout = r, f
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if c.Start() != nil {
		return false
	}
	go c.Wait()
	return true
}

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
	if name := unix.SignalName(s); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}
