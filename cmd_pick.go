package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/runlog"
	"github.com/vramtop/vramtop/units"
)

// pickCmdFlags are vramtop pick's flags.
type pickCmdFlags struct {
	sf sourceFlags
	pf pickFlags
	cf claimFlags
}

// pickFlagSet declares vramtop pick's flags.
func pickFlagSet() (*pflag.FlagSet, *pickCmdFlags) {
	fs := newFlagSet("vramtop pick", "Usage: vramtop pick [--min-free SIZE] [--count N] [--max-util PCT] [--uuid] [--demo | --prometheus URL] [--json] [-- CMD [ARGS...]]\n\n"+
		"Prints the index of the freest GPU (a comma list, freest first, with --count),\n"+
		"for CUDA_VISIBLE_DEVICES=$(vramtop pick) python train.py. MIG instances are\n"+
		"printed by UUID. Exits 1 when too few GPUs qualify. On a host with mixed GPU\n"+
		"models also set CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA numbers GPUs as NVML does.\n\n"+
		"GPUs another vramtop user claimed are skipped, and the GPUs printed are claimed until a new\n"+
		"process shows up on them or --claim-ttl passes, so that two picks at once get different\n"+
		"GPUs. With -- CMD, pick runs CMD with CUDA_VISIBLE_DEVICES set, holds the claim while it\n"+
		"runs, and exits with its status. Claims are advisory, between vramtop users only.\n\n"+
		"With --prometheus, pick chooses among the GPUs of every host that Prometheus scrapes, as\n"+
		"vramtop fleet reads them, and prints one HOST:GPU line per GPU: hosts that are down are never\n"+
		"picked, nor GPUs claimed on their host (vramtop serve exports the claims). It claims nothing:\n"+
		"run the job on the host with vramtop pick -- CMD there, which claims the GPU.\n\n")
	fl := &pickCmdFlags{}
	fl.sf.addDemo(fs)
	fl.pf.add(fs, "pick only GPUs with at least this much free `size` (20GiB = 20·2^30 bytes, 20GB = 20·10^9, 512MiB, 1.5TiB, bytes)", "how many GPUs to pick (`n`)")
	fl.cf.add(fs)
	return fs, fl
}

// runPick prints the freest GPU (or a comma list, freest first) and exits
// 1 with one line on stderr when too few have the memory asked for. It
// skips GPUs other vramtop users claimed and claims the ones it prints
// (see package claims); with a command after --, it runs it on them. With
// --prometheus it picks across the fleet instead (pickFleet).
func runPick(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := pickFlagSet()
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
	if fl.pf.prometheus != "" {
		return pickFleet(ctx, fs.Name(), fl.pf, fl.cf.uuid, opt, stdout, stderr)
	}
	s, code := fl.sf.newSampler(stderr)
	if s == nil {
		return code
	}
	snap := s.Once()
	s.Close()
	cl := newClaimer(fs.Name(), opt.MinFree, argv, fl.cf.noClaim, stderr)
	until := time.Time{}
	if argv == nil {
		until = time.Now().Add(fl.cf.ttl)
	}
	// Another pick may claim a GPU between reading the claims and taking
	// one: each lost race makes the GPU claimed, and the pick is tried
	// again without it.
	for range len(snap.Devices) + 1 {
		cl.refresh()
		free, claimed := cl.unclaimed(snap)
		picks, err := advisor.PickDevices(free, opt)
		if err != nil {
			if claimed != "" {
				err = fmt.Errorf("%v; %s", err, claimed)
			}
			fmt.Fprintf(stderr, "vramtop pick: %v\n", err)
			return 1
		}
		held, ok := cl.take(snap, picks, until)
		if !ok {
			continue
		}
		if fl.cf.uuid {
			byUUID(snap, picks)
		}
		return handOut(ctx, fs.Name(), fl.sf, fl.cf, fl.pf.asJSON, argv, snap, picks, held, stdout, stderr)
	}
	fmt.Fprintln(stderr, "vramtop pick: the GPUs were claimed by others meanwhile")
	return 1
}

// pickFlags are what pick and wait choose by (--min-free, --count,
// --max-util), and --like, --like-last and --margin, which size --min-free
// by an earlier run; where from (--prometheus) and how the GPUs are
// printed (--json).
type pickFlags struct {
	fs         *pflag.FlagSet
	minFree    string
	count      int
	maxUtil    float64
	like       string
	likeLast   bool
	margin     string
	prometheus string
	asJSON     bool
}

func (p *pickFlags) add(fs *pflag.FlagSet, minFreeUsage, countUsage string) {
	p.fs = fs
	fs.StringVar(&p.minFree, "min-free", "0", minFreeUsage)
	fs.IntVar(&p.count, "count", 1, countUsage)
	fs.Float64Var(&p.maxUtil, "max-util", 100, "and at most this utilization `percent` (a GPU that reports none qualifies)")
	fs.StringVar(&p.prometheus, "prometheus", "", "choose among the GPUs of every host this Prometheus `URL` scrapes (http://prometheus:9090; vramtop serve or dcgm-exporter), printed as HOST:GPU lines")
	fs.BoolVar(&p.asJSON, "json", false, "print the GPUs as one JSON document (docs/schema/pick.schema.json)")
	fs.StringVar(&p.like, "like", "", "size --min-free by the peak on one GPU of the earlier run (vramtop run, or wait/pick -- CMD) most like this `command` line, plus --margin")
	fs.BoolVar(&p.likeLast, "like-last", false, "size --min-free by the peak of the last run, plus --margin")
	fs.StringVar(&p.margin, "margin", "10%", "with --like or --like-last: how much to add to the peak, a `percent`")
}

// sizeByPast sets opt.MinFree from the run history when --like or
// --like-last asks, saying on stderr which run it took; ok is false, with
// one line on stderr, when it cannot.
func (p *pickFlags) sizeByPast(opt *advisor.PickOptions, demo bool, stderr io.Writer) (ok bool) {
	name := p.fs.Name()
	if p.like == "" && !p.likeLast {
		if p.fs.Changed("margin") {
			fmt.Fprintf(stderr, "%s: --margin goes with --like or --like-last\n", name)
			return false
		}
		return true
	}
	switch {
	case p.like != "" && p.likeLast:
		fmt.Fprintf(stderr, "%s: --like and --like-last: give one\n", name)
		return false
	case p.fs.Changed("min-free"):
		fmt.Fprintf(stderr, "%s: --min-free and --like%s: give one\n", name, map[bool]string{true: "-last"}[p.likeLast])
		return false
	}
	pct, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(p.margin, "%")), 64)
	if err != nil || math.IsNaN(pct) || pct < 0 || pct > 1000 {
		fmt.Fprintf(stderr, "%s: --margin %q: want a percentage from 0%% to 1000%%\n", name, p.margin)
		return false
	}
	path, err := runlog.Path()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return false
	}
	runs, _, err := runlog.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: the run history: %v\n", name, pathError(err))
		return false
	}
	var r runlog.Entry
	var found bool
	how := "the last run"
	if p.likeLast {
		r, found = runlog.Last(runs, demo)
	} else {
		var score float64
		r, score, found = runlog.Like(runs, p.like, demo)
		how = fmt.Sprintf("the run most like it (%.0f%% alike)", score*100)
		if score == 1 {
			how = "the last run of that command"
		}
	}
	if !found {
		what := "no run with GPU memory"
		if !p.likeLast {
			what = fmt.Sprintf("no earlier run like %q", claims.Clip(p.like, 200))
		}
		fmt.Fprintf(stderr, "%s: %s in %s (vramtop run -- CMD keeps them)\n", name, what, path)
		return false
	}
	opt.MinFree = uint64(float64(r.GPUPeakBytes) * (1 + pct/100))
	fmt.Fprintf(stderr, "%s: %s: %s peaked at %s on one GPU; --min-free %s (+%g%%)\n", name, how,
		claims.Clip(r.Describe(), 300), advisor.FormatBytes(r.GPUPeakBytes), advisor.FormatBytes(opt.MinFree), pct)
	return true
}

// pathError is err without Go's "open FILE:" prefix.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// options are the flags as PickOptions; ok is false, with one line on
// stderr after name, when they make no sense.
func (p *pickFlags) options(name string, stderr io.Writer) (opt advisor.PickOptions, ok bool) {
	size, err := units.ParseSize(p.minFree)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --min-free: %v\n", name, err)
		return opt, false
	}
	if p.count < 1 {
		fmt.Fprintf(stderr, "%s: --count %d: want at least 1\n", name, p.count)
		return opt, false
	}
	if math.IsNaN(p.maxUtil) || p.maxUtil < 0 || p.maxUtil > 100 {
		fmt.Fprintf(stderr, "%s: --max-util %g: want a percentage from 0 to 100\n", name, p.maxUtil)
		return opt, false
	}
	opt = advisor.PickOptions{MinFree: size, Count: p.count}
	if p.maxUtil < 100 {
		opt.MaxUtil = &p.maxUtil
	}
	return opt, true
}

// validWith checks --prometheus and --json against the other flags and the
// command argv (nil when none), and makes --prometheus a URL; false, with
// one line on stderr, when they do not go together.
func (p *pickFlags) validWith(argv []string, stderr io.Writer) bool {
	name := p.fs.Name()
	if p.prometheus == "" {
		if p.asJSON && argv != nil {
			fmt.Fprintf(stderr, "%s: --json prints the GPUs, and with -- CMD they go to the command: give one\n", name)
			return false
		}
		return true
	}
	if argv != nil {
		fmt.Fprintf(stderr, "%s: --prometheus with -- CMD: running a command needs a local GPU claim; run %s -- CMD on the host it chooses\n", name, name)
		return false
	}
	if p.fs.Changed("demo") {
		fmt.Fprintf(stderr, "%s: --demo and --prometheus: give one\n", name)
		return false
	}
	for _, f := range []string{"claim-ttl", "report", "report-file"} {
		if p.fs.Changed(f) {
			fmt.Fprintf(stderr, "%s: --%s does not go with --prometheus (a choice across the fleet reads Prometheus and claims nothing)\n", name, f)
			return false
		}
	}
	u, err := prometheusURL(p.prometheus)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return false
	}
	p.prometheus = u
	return true
}
