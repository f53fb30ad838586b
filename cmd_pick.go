package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/units"
)

// runPick prints the freest GPU (or a comma list, freest first) and exits
// 1 with one line on stderr when too few have the memory asked for.
func runPick(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop pick", "Usage: vramtop pick [--min-free SIZE] [--count N] [--demo]\n\n"+
		"Prints the index of the freest GPU (a comma list, freest first, with --count),\n"+
		"for CUDA_VISIBLE_DEVICES=$(vramtop pick) python train.py. MIG instances are\n"+
		"printed by UUID. Exits 1 when too few GPUs qualify. On a host with mixed GPU\n"+
		"models also set CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA numbers GPUs as NVML does.\n\n", stderr)
	var sf sourceFlags
	sf.addDemo(fs)
	var pf pickFlags
	pf.add(fs, "pick only GPUs with at least this much free `size` (20GiB = 20·2^30 bytes, 20GB = 20·10^9, 512MiB, 1.5TiB, bytes)", "how many GPUs to pick (`n`)")
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	opt, ok := pf.options(fs.Name(), stderr)
	if !ok {
		return exitUsage
	}
	s, code := sf.newSampler(stderr)
	if s == nil {
		return code
	}
	snap := s.Once()
	s.Close()
	picks, err := advisor.PickDevices(snap, opt)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop pick: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, advisor.JoinPicks(picks))
	return 0
}

// pickFlags are --min-free and --count, of pick and wait.
type pickFlags struct {
	minFree string
	count   int
}

func (p *pickFlags) add(fs *pflag.FlagSet, minFreeUsage, countUsage string) {
	fs.StringVar(&p.minFree, "min-free", "0", minFreeUsage)
	fs.IntVar(&p.count, "count", 1, countUsage)
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
	return advisor.PickOptions{MinFree: size, Count: p.count}, true
}
