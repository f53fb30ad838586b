package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/sampler"
)

// fleetPickTimeout bounds a round of queries of pick and wait
// --prometheus, as fleet's --timeout does by default.
const fleetPickTimeout = 10 * time.Second

// openFleet opens the fleet source at url, asked every interval, and a
// sampler over it; ok is false, with one line on stderr, when it cannot.
// With lean the source reads no host's processes but those asked for
// (ReadProcessesOf, ReadTiedProcesses): a pick needs them for --json
// (which counts them) and to order GPUs equally free
// (fleet.ProcessesMatter) only.
func openFleet(ctx context.Context, name, url string, interval time.Duration, lean bool, stderr io.Writer) (*fleet.Source, *sampler.Sampler, bool) {
	src, err := fleet.Open(ctx, fleet.Config{URL: url, Interval: interval, Timeout: fleetPickTimeout, OpenHostProcesses: lean})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, false
	}
	s, err := sampler.New(src, sampler.Config{Interval: interval, History: time.Minute})
	if err != nil {
		src.Close()
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, false
	}
	return src, s, true
}

// firstRound waits for the fleet's first answer: ok is false, with one
// line on stderr and the exit status, when it was interrupted or
// Prometheus could not be read (down, or an exporter where Prometheus was
// wanted).
func firstRound(ctx context.Context, name string, src *fleet.Source, stderr io.Writer) (code int, ok bool) {
	src.WaitFirst(ctx)
	if code, ok := signalStatus(ctx); ok {
		fmt.Fprintf(stderr, "%s: interrupted\n", name)
		return code, false
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "%s: timed out: no answer from Prometheus yet\n", name)
		return 1, false
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: interrupted\n", name)
		return 1, false
	}
	if err := src.Err(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1, false
	}
	return 0, true
}

// pickFleet is pick --prometheus: the freest GPUs of the fleet, as HOST:GPU
// lines or JSON.
func pickFleet(ctx context.Context, name string, pf pickFlags, uuid bool, opt advisor.PickOptions, stdout, stderr io.Writer) int {
	src, s, ok := openFleet(ctx, name, pf.prometheus, defaultFleetInterval, !pf.asJSON, stderr)
	if !ok {
		return exitUsage
	}
	defer s.Close()
	if code, ok := firstRound(ctx, name, src, stderr); !ok {
		return code
	}
	snap := s.Once()
	if !pf.asJSON {
		// GPUs equally free: their processes order them.
		view, _ := fleet.Pickable(snap, src.Claims())
		var err error
		if snap, err = src.ReadTiedProcesses(ctx, snap, fleet.ProcessesMatter(view, opt)); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	choices, err := fleet.Choose(snap, src.Claims(), opt, uuid)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return writeChoices(stdout, stderr, name, pf, choices)
}

// waitFleet is wait --prometheus: w follows the fleet until enough GPUs
// qualify, less the hosts down and the GPUs claimed on their hosts.
func waitFleet(ctx context.Context, name string, pf pickFlags, uuid bool, w *waiter, interval time.Duration, status func(string), stdout, stderr io.Writer) int {
	src, s, ok := openFleet(ctx, name, pf.prometheus, interval, !pf.asJSON, stderr)
	if !ok {
		return exitUsage
	}
	defer s.Close()
	if code, ok := firstRound(ctx, name, src, stderr); !ok {
		return code
	}
	w.opt.AllHosts = true
	w.view = func(snap sampler.Snapshot) (sampler.Snapshot, string) { return fleet.Pickable(snap, src.Claims()) }
	w.unsure = func(view sampler.Snapshot) bool {
		hosts := fleet.ProcessesMatter(view, w.opt)
		// GPUs equally free: their processes order them, from the
		// round this starts at once on.
		src.ReadProcessesOf(hosts)
		return len(hosts) > 0
	}
	picks, _, snap, err := w.wait(ctx, s, status)
	if status != nil {
		fmt.Fprint(stderr, "\r\x1b[K")
	}
	if err != nil {
		return waitFailed(ctx, name, err, stderr)
	}
	return writeChoices(stdout, stderr, name, pf, fleet.Choices(snap, picks, uuid))
}

// writeChoices prints choices, one HOST:GPU line each, or as JSON.
func writeChoices(stdout, stderr io.Writer, name string, pf pickFlags, choices []fleet.Choice) int {
	if !writeOutput(stdout, stderr, name, func(w io.Writer) error {
		if pf.asJSON {
			gpus := make([]pickedGPU, len(choices))
			for i, c := range choices {
				gpus[i] = pickedOf(c.Device, c.GPU)
				gpus[i].Host = c.Host
			}
			return writePickJSON(w, gpus, pf.prometheus)
		}
		for _, c := range choices {
			if _, err := fmt.Fprintln(w, c.String()); err != nil {
				return err
			}
		}
		return nil
	}) {
		return 1
	}
	return 0
}

// pickDocument is what pick and wait print with --json
// (docs/schema/pick.schema.json).
type pickDocument struct {
	// Prometheus is the server a choice across the fleet read.
	Prometheus string      `json:"prometheus,omitempty"`
	GPUs       []pickedGPU `json:"gpus"`
}

// pickedGPU is one GPU handed out, freest first.
type pickedGPU struct {
	// Host is the GPU's host, in a choice across the fleet.
	Host string `json:"host,omitempty"`
	// GPU is how CUDA_VISIBLE_DEVICES names it (on Host): the line
	// printed without --json is HOST:GPU, or the GPUs joined by commas.
	GPU   string `json:"gpu"`
	ID    string `json:"id"`
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name,omitempty"`

	MemoryTotal        uint64   `json:"memory_total_bytes"`
	MemoryUsed         uint64   `json:"memory_used_bytes"`
	MemoryFree         uint64   `json:"memory_free_bytes"`
	UtilizationPercent *float64 `json:"utilization_percent,omitempty"`
	// Processes counts the live processes on it; absent where they are
	// not known (a host seen through dcgm-exporter alone).
	Processes *int `json:"processes,omitempty"`
}

func pickedOf(d *sampler.Device, gpu string) pickedGPU {
	p := pickedGPU{GPU: gpu, ID: d.ID, Index: d.Index, UUID: d.UUID, Name: d.Name,
		MemoryTotal: d.MemoryTotal, MemoryUsed: d.MemoryUsed, MemoryFree: d.MemoryFree, UtilizationPercent: d.UtilizationPercent}
	if !d.NoProcessList {
		n := 0
		for _, pr := range d.Processes {
			if !pr.Exited {
				n++
			}
		}
		p.Processes = &n
	}
	return p
}

// localPicks are picks of this host's snap as the JSON lists them.
func localPicks(snap sampler.Snapshot, picks []advisor.Pick) []pickedGPU {
	out := make([]pickedGPU, 0, len(picks))
	for _, p := range picks {
		if d := deviceByID(snap, p.DeviceID); d != nil {
			out = append(out, pickedOf(d, p.Value))
		}
	}
	return out
}

func writePickJSON(w io.Writer, gpus []pickedGPU, prometheus string) error {
	b, err := json.MarshalIndent(pickDocument{Prometheus: prometheus, GPUs: gpus}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
