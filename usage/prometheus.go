package usage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/metricname"
)

// PromOptions say where and what AddPrometheus reads.
type PromOptions struct {
	URL          string
	Since, Until time.Time
	// Step is the resolution: a sample every Step; DefaultStep, or
	// coarser for windows past MaxSteps of it, when 0.
	Step time.Duration
	// Timeout bounds each query.
	Timeout time.Duration
}

// DefaultStep is the resolution of a Prometheus window by default.
const DefaultStep = time.Minute

// MaxSteps is the most steps a window takes at the default step (a week
// of minutes); a longer window takes a coarser step.
const MaxSteps = 7 * 24 * 60

// chunkSteps is how many steps one range query asks for: the answer of a
// query is bounded (fleet.MaxAnswerBytes), so a long window is read in
// pieces, each integrated before the next is asked for.
const chunkSteps = 240

// StepFor is the step a window takes by default.
func StepFor(window time.Duration) time.Duration {
	step := DefaultStep
	if n := window / step; n > MaxSteps {
		step = ((window/MaxSteps + time.Minute - 1) / time.Minute) * time.Minute
	}
	return step
}

// The series read: those vramtop serve exports.
var promQueries = []string{metricname.MemoryTotal, metricname.MemoryUsed, metricname.Utilization, metricname.ProcessMemory}

// AddPrometheus reads the window of the series vramtop serve exports
// (vramtop_gpu_memory_total_bytes, _used_bytes, vramtop_gpu_utilization_ratio
// and vramtop_process_gpu_memory_bytes) with range queries, a piece of
// the window at a time, and adds them to a: one Sample per host and step.
// A GPU is sampled at a step where its total memory is; its processes are
// those with a value there. Processes past serve's --max-process-series
// are not exported, so their memory counts as unattributed.
func AddPrometheus(ctx context.Context, a *Accounter, o PromOptions) error {
	c, err := fleet.NewClient(o.URL, nil)
	if err != nil {
		return err
	}
	if o.Step <= 0 {
		o.Step = StepFor(o.Until.Sub(o.Since))
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	// Step-aligned, so that pieces meet without a sample twice.
	start := o.Since.Truncate(o.Step)
	if start.Before(o.Since) {
		start = start.Add(o.Step)
	}
	seen := false
	for from := start; from.Before(o.Until); from = from.Add(chunkSteps * o.Step) {
		to := from.Add((chunkSteps - 1) * o.Step)
		if to.After(o.Until) {
			to = o.Until
		}
		var got [4][]fleet.Series
		for i, q := range promQueries {
			qctx, cancel := context.WithTimeout(ctx, o.Timeout)
			got[i], err = c.QueryRange(qctx, q, from, to, o.Step)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return promError(c.URL(), err, o.Timeout)
			}
		}
		if len(got[0]) > 0 {
			seen = true
		}
		addChunk(a, got, from, to, o.Step)
	}
	if !seen {
		return fmt.Errorf("prometheus at %s has no %s series from %s to %s: is vramtop serve scraped?",
			hostOf(c.URL()), metricname.MemoryTotal, o.Since.Format(time.RFC3339), o.Until.Format(time.RFC3339))
	}
	return nil
}

func hostOf(u string) string {
	_, h, _ := strings.Cut(u, "://")
	h, _, _ = strings.Cut(h, "/")
	return h
}

// promError says what went wrong in the user's words, not Go's.
func promError(u string, err error, timeout time.Duration) error {
	host := hostOf(u)
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("prometheus at %s did not answer within %v (--timeout)", host, timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("prometheus at %s: connection refused (is it running, on that port?)", host)
	case errors.As(err, &dns):
		return fmt.Errorf("prometheus at %s: no such host", host)
	case errors.As(err, &op):
		return fmt.Errorf("prometheus at %s: cannot connect (%v)", host, op.Err)
	}
	return err
}

type promDev struct{ host, gpu, gi string }

func devOf(m fleet.Labels) promDev {
	return promDev{host: fleet.HostOf(m), gpu: m.Get(metricname.LabelGPU), gi: m.Get(metricname.LabelGPUInstID)}
}

func (d promDev) id() string {
	if d.gi != "" {
		return d.gpu + "/" + d.gi
	}
	return d.gpu
}

// addChunk turns the answers for [from, to] into samples, host by host,
// step by step, and adds them.
func addChunk(a *Accounter, got [4][]fleet.Series, from, to time.Time, step time.Duration) {
	n := int(to.Sub(from)/step) + 1
	at := func(t time.Time) int {
		k := int((t.Sub(from) + step/2) / step)
		if k < 0 || k >= n {
			return -1
		}
		return k
	}
	type devSeries struct {
		total, used, util []float64 // -1: no value at that step
		procs             []procSeries
	}
	devs := map[promDev]*devSeries{}
	values := func(s fleet.Series) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = -1
		}
		for i, t := range s.Times {
			if k := at(t); k >= 0 && s.Values[i] >= 0 {
				v[k] = s.Values[i]
			}
		}
		return v
	}
	get := func(m fleet.Labels) *devSeries {
		k := devOf(m)
		d := devs[k]
		if d == nil {
			d = &devSeries{}
			devs[k] = d
		}
		return d
	}
	for _, s := range got[0] {
		get(s.Metric).total = values(s)
	}
	for _, s := range got[1] {
		get(s.Metric).used = values(s)
	}
	for _, s := range got[2] {
		get(s.Metric).util = values(s)
	}
	for _, s := range got[3] {
		m := s.Metric
		job := ""
		switch {
		case m.Get(metricname.LabelHPCJob) != "":
			job = "slurm " + m.Get(metricname.LabelHPCJob)
		case m.Get(metricname.LabelPodUID) != "":
			job = "pod " + cutBytes(m.Get(metricname.LabelPodUID), 8)
		case m.Get(metricname.LabelContainerID) != "":
			job = JobName(nil, m.Get(metricname.LabelContainerID))
		}
		d := get(m)
		d.procs = append(d.procs, procSeries{user: m.Get("user"), job: job, v: values(s)})
	}
	hosts := map[string][]promDev{}
	for k := range devs {
		hosts[k.host] = append(hosts[k.host], k)
	}
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		names = append(names, h)
		slices.SortFunc(hosts[h], func(x, y promDev) int { return strings.Compare(x.id(), y.id()) })
	}
	slices.Sort(names)
	var s Sample
	for k := range n {
		t := from.Add(time.Duration(k) * step)
		for _, h := range names {
			s = Sample{Host: h, Time: t, Interval: step, Devices: s.Devices[:0]}
			for _, dk := range hosts[h] {
				d := devs[dk]
				if d.total == nil || d.total[k] < 0 {
					continue
				}
				dev := Device{ID: dk.id(), Total: uint64(d.total[k])}
				if d.used != nil && d.used[k] >= 0 {
					dev.Used = uint64(d.used[k])
				}
				if d.util != nil && d.util[k] >= 0 {
					u := d.util[k] * 100
					dev.Util = &u
				}
				for _, p := range d.procs {
					if p.v[k] > 0 {
						dev.Procs = append(dev.Procs, Proc{User: p.user, Job: p.job, Used: uint64(p.v[k])})
					}
				}
				s.Devices = append(s.Devices, dev)
			}
			if len(s.Devices) > 0 {
				a.Add(s)
			}
		}
	}
}

type procSeries struct {
	user, job string
	v         []float64
}

// cutBytes is the first n bytes of s, at the start of a character.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
