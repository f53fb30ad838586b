package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/sampler"
)

// defaultSettle is how long a GPU must keep qualifying before wait takes
// it: long enough that a job between two steps, or restarting, does not
// look like a free card.
const defaultSettle = 10 * time.Second

// waitFlags are vramtop wait's flags.
type waitFlags struct {
	sf      sourceFlags
	pf      pickFlags
	settle  *time.Duration
	timeout *time.Duration
	cf      claimFlags
}

// waitFlagSet declares vramtop wait's flags.
func waitFlagSet() (*pflag.FlagSet, *waitFlags) {
	fs := newFlagSet("vramtop wait", "Usage: vramtop wait --min-free SIZE [--count N] [--max-util PCT] [--settle D] [--timeout D] [--demo | --prometheus URL] [--json] [-- CMD [ARGS...]]\n\n"+
		"Waits until --count GPUs each have --min-free free (and at most --max-util utilization), and\n"+
		"have kept it for --settle, then prints them as vramtop pick does, freest first:\n"+
		"CUDA_VISIBLE_DEVICES=$(vramtop wait --min-free 40GiB) python train.py starts the job on the first\n"+
		"card that frees up. Exit status: 0 picked, 1 timed out, 2 bad usage, 130 or 143 interrupted.\n\n"+
		"GPUs another vramtop user claimed do not qualify, and the GPUs printed are claimed until a new\n"+
		"process shows up on them or --claim-ttl passes: two waiters never get the same GPU. With\n"+
		"-- CMD, wait runs CMD on the GPUs (CUDA_VISIBLE_DEVICES set), holds the claim while it runs and\n"+
		"exits with its status. Claims are advisory, between vramtop users only.\n\n"+
		"With --prometheus, wait watches every host that Prometheus scrapes, as vramtop fleet reads them,\n"+
		"and prints one HOST:GPU line per GPU: hosts that are down never qualify, nor GPUs claimed on\n"+
		"their host (vramtop serve exports the claims). It claims nothing: run the job on the host with\n"+
		"vramtop wait -- CMD there, which claims the GPU.\n\n")
	fl := &waitFlags{}
	fl.sf.addDemo(fs)
	fs.DurationVar(&fl.sf.interval, "interval", sampler.DefaultInterval, "device memory sampling `interval` (50ms at the fastest; with --prometheus how often to ask it, default 5s, 1s at the fastest)")
	fl.pf.add(fs, "wait for GPUs with at least this much free `size` (40GiB = 40·2^30 bytes, 40GB = 40·10^9)", "how many GPUs to wait for (`n`)")
	fl.settle = fs.Duration("settle", defaultSettle, "how long the GPUs must keep qualifying (0: at once)")
	fl.timeout = fs.Duration("timeout", 0, "give up after this long, with exit status 1 (0: wait until interrupted)")
	fl.cf.add(fs)
	return fs, fl
}

// runWait blocks until enough GPUs qualify and have kept qualifying for
// the settle time, then prints them as pick does.
func runWait(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := waitFlagSet()
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	argv, ok := commandArgs(fs, stderr)
	if !ok || !fl.pf.validWith(argv, stderr) {
		return exitUsage
	}
	opt, ok := fl.pf.options(fs.Name(), stderr)
	if !ok || !fl.cf.valid(fs.Name(), stderr) || !fl.pf.sizeByPast(&opt, fl.sf.demo == "on" && fl.pf.prometheus == "", stderr) {
		return exitUsage
	}
	switch {
	case *fl.settle < 0 || *fl.timeout < 0:
		fmt.Fprintln(stderr, "vramtop wait: --settle and --timeout cannot be negative")
		return exitUsage
	case *fl.timeout > 0 && *fl.timeout < *fl.settle:
		fmt.Fprintf(stderr, "vramtop wait: --timeout %v is shorter than --settle %v: the GPUs could never settle in time; "+
			"give a longer --timeout or a shorter --settle\n", *fl.timeout, *fl.settle)
		return exitUsage
	}
	if *fl.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *fl.timeout)
		defer cancel()
	}
	w := newWaiter(opt, *fl.settle)
	var status func(string)
	if isTerminal(stderr) {
		status = func(line string) { fmt.Fprintf(stderr, "\r\x1b[Kvramtop wait: %s", line) }
	}
	if fl.pf.prometheus != "" {
		interval := defaultFleetInterval
		if fs.Changed("interval") {
			interval = max(fl.sf.interval, minFleetInterval)
		}
		return waitFleet(ctx, fs.Name(), fl.pf, fl.cf.uuid, w, interval, status, stdout, stderr)
	}
	s, code := fl.sf.newSampler(stderr)
	if s == nil {
		return code
	}
	w.cl = newClaimer(fs.Name(), opt.MinFree, argv, fl.cf.noClaim, stderr)
	if argv == nil {
		w.ttl = fl.cf.ttl
	}
	picks, held, snap, err := w.wait(ctx, s, status)
	if status != nil {
		fmt.Fprint(stderr, "\r\x1b[K")
	}
	if err != nil {
		return waitFailed(ctx, fs.Name(), err, stderr)
	}
	if fl.cf.uuid {
		byUUID(snap, picks)
	}
	return handOut(ctx, fs.Name(), fl.sf, fl.cf, fl.pf.asJSON, argv, snap, picks, held, stdout, stderr)
}

// waitFailed ends a wait that timed out or was interrupted: one line, and
// 130 for Ctrl-C, 143 for SIGTERM, 1 otherwise.
func waitFailed(ctx context.Context, name string, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	if code, ok := signalStatus(ctx); ok {
		return code
	}
	return 1
}

// waiter follows snapshots until opt.Count devices have qualified for
// settle without a break.
type waiter struct {
	opt    advisor.PickOptions // opt.MaxUtil too
	settle time.Duration
	since  map[string]time.Time // device ID → since when it qualifies
	reason string               // why no pick yet, for the status line and the timeout
	// cl, when set, skips GPUs claimed by others and claims the picks,
	// until ttl from now (0: while the command runs).
	cl  *claimer
	ttl time.Duration
	// view, when set, is what the waiter picks from instead of a
	// snapshot: the snapshot less the devices that cannot be handed out,
	// and a few words on those (a fleet's hosts down, its GPUs claimed on
	// their hosts: fleet.Pickable).
	view func(sampler.Snapshot) (sampler.Snapshot, string)
	// unsure, when not nil, reports whether a pick among view (view's
	// or the GPUs settled of it) could differ once processes not read
	// are read (fleet.ProcessesMatter): observe then waits for the next
	// snapshot, as unsure has them read.
	unsure func(view sampler.Snapshot) bool
}

func newWaiter(opt advisor.PickOptions, settle time.Duration) *waiter {
	// Until the first snapshot (a timeout may come first), the reason is
	// what it waits for.
	want := fmt.Sprintf("%d GPUs", opt.Count)
	if opt.Count == 1 {
		want = "a GPU"
	}
	if opt.MinFree > 0 {
		want += " with at least " + advisor.FormatBytes(opt.MinFree) + " free"
	}
	return &waiter{opt: opt, settle: settle, since: map[string]time.Time{},
		reason: "the GPUs not read yet (waiting for " + want + ")"}
}

// qualifies reports whether device i of snap is one pick would take with
// at least opt.MinFree free, and is not busier than opt.MaxUtil.
func (w *waiter) qualifies(snap sampler.Snapshot, i int) bool {
	one := snap
	one.Devices = snap.Devices[i : i+1]
	opt := w.opt
	opt.Count = 1
	_, err := advisor.PickDevices(one, opt)
	return err == nil
}

// candidates is what snap leaves to pick from, and a few words on what it
// leaves out.
func (w *waiter) candidates(snap sampler.Snapshot) (sampler.Snapshot, string) {
	switch {
	case w.view != nil:
		return w.view(snap)
	case w.cl != nil:
		w.cl.refresh()
		return w.cl.unclaimed(snap)
	}
	return snap, ""
}

// observe takes the snapshot of time snap.Time and returns the picks once
// opt.Count devices have qualified since settle ago or earlier.
func (w *waiter) observe(snap sampler.Snapshot) ([]advisor.Pick, bool) {
	now := snap.Time
	view, left := w.candidates(snap)
	settled := view
	settled.Devices = nil
	seen := map[string]bool{}
	qualifying := 0
	var soonest time.Duration = -1
	for i := range view.Devices {
		d := &view.Devices[i]
		if !w.qualifies(view, i) {
			continue
		}
		seen[d.ID] = true
		qualifying++
		t, ok := w.since[d.ID]
		if !ok {
			t = now
			w.since[d.ID] = now
		}
		if left := w.settle - now.Sub(t); left > 0 {
			if soonest < 0 || left < soonest {
				soonest = left
			}
			continue
		}
		settled.Devices = append(settled.Devices, *d)
	}
	for id := range w.since {
		if !seen[id] {
			delete(w.since, id) // a break: it starts over
		}
	}
	if len(settled.Devices) >= w.opt.Count {
		picks, err := advisor.PickDevices(settled, w.opt)
		if err == nil {
			if w.unsure == nil || !w.unsure(settled) {
				return picks, true
			}
			return nil, false
		}
	}
	_, err := advisor.PickDevices(view, w.opt)
	if err != nil && qualifying < w.opt.Count && w.unsure != nil && w.unsure(view) {
		return nil, false // the reason may name the freest
	}
	switch {
	case qualifying >= w.opt.Count:
		w.reason = fmt.Sprintf("%d of %d GPUs qualify, settling (%v left of %v)", qualifying, len(snap.Devices), soonest.Round(time.Second), w.settle)
	case err != nil:
		w.reason = err.Error()
	default:
		w.reason = fmt.Sprintf("%d of %d GPUs qualify", qualifying, len(snap.Devices))
	}
	if left != "" && qualifying < w.opt.Count {
		w.reason += "; " + left
	}
	return nil, false
}

// wait feeds the sampler's snapshots to observe until it picks (and, with
// a claimer, has claimed the picks) or ctx ends. status, when not nil, is
// told why there is no pick yet. snap is the snapshot picked from.
func (w *waiter) wait(ctx context.Context, s *sampler.Sampler, status func(string)) (picks []advisor.Pick, held []*claims.Held, snap sampler.Snapshot, err error) {
	ctx, cancel := context.WithCancel(ctx)
	snaps := s.Subscribe()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	shown := ""
	for {
		select {
		case <-ctx.Done():
			why := "interrupted"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "timed out"
			}
			if w.reason != "" {
				why += ": " + w.reason
			}
			return nil, nil, snap, errors.New(why)
		case snap = <-snaps:
			if picks, ok := w.observe(snap); ok {
				if w.cl == nil {
					return picks, nil, snap, nil
				}
				var until time.Time
				if w.ttl > 0 {
					until = time.Now().Add(w.ttl)
				}
				if held, ok := w.cl.take(snap, picks, until); ok {
					return picks, held, snap, nil
				}
				w.reason = "another vramtop claimed the GPU first"
			}
			if status != nil && w.reason != shown {
				shown = w.reason
				status(w.reason + "; Ctrl-C stops")
			}
		}
	}
}
