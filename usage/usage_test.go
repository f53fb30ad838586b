package usage_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/recsynth"
	"github.com/vramtop/vramtop/replay"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/usage"
)

const gib = 1 << 30

// tenants is a node of two 80 GiB GPUs whose tenants are known functions
// of time, so that what they held can be integrated without a recording:
//
//   - alice (Slurm job 4242, step 0) holds 20 GiB on GPU 0 the whole
//     hour, busy (GPU 0 at 80%), and 5 GiB on GPU 1 from 30 min, her own
//     utilization 3% (idle);
//   - bob (a pod) ramps from 0 to 30 GiB on GPU 1 over the first 30 min,
//     holds 30 GiB until 45 min and exits; GPU 1 is at 0% and his own
//     utilization is not reported;
//   - a process of another PID namespace (user unknown) holds 2 GiB on
//     GPU 1 the whole time.
type tenants struct{ start time.Time }

type tenant struct {
	dev     int
	pid     uint32
	user    string
	job     *sampler.Job
	util    float64
	hasUtil bool
	visible bool
	used    func(el time.Duration) uint64
}

var (
	slurm = &sampler.Job{SlurmJobID: "4242", SlurmStep: "0"}
	pod   = &sampler.Job{K8sPodUID: "7c0e2f4a-91d3-4b6e-a8f5-3d2c1b0e9f87"}
)

func (tn *tenants) list() []tenant {
	return []tenant{
		{dev: 0, pid: 100, user: "alice", job: slurm, visible: true, used: func(time.Duration) uint64 { return 20 * gib }},
		{dev: 1, pid: 101, user: "alice", job: slurm, visible: true, util: 3, hasUtil: true, used: func(el time.Duration) uint64 {
			if el < 30*time.Minute {
				return 0
			}
			return 5 * gib
		}},
		{dev: 1, pid: 200, user: "bob", job: pod, visible: true, used: func(el time.Duration) uint64 {
			switch {
			case el < 30*time.Minute:
				return uint64(30 * gib * el.Seconds() / (30 * 60))
			case el < 45*time.Minute:
				return 30 * gib
			}
			return 0
		}},
		{dev: 1, pid: 300, used: func(time.Duration) uint64 { return 2 * gib }},
	}
}

func (tn *tenants) Info() sampler.SourceInfo {
	return sampler.SourceInfo{Kind: "synthetic", Hostname: "node-7", Devices: []sampler.DeviceInfo{
		{ID: "0", Index: 0, Name: "GPU A"}, {ID: "1", Index: 1, Name: "GPU B"}}}
}

func (tn *tenants) ReadMemory(now time.Time, out []sampler.MemSample) error {
	el := now.Sub(tn.start)
	for i := range out {
		var used uint64
		for _, t := range tn.list() {
			if t.dev == i {
				used += t.used(el)
			}
		}
		util := 80.0
		if i == 1 {
			util = 0
		}
		out[i] = sampler.MemSample{Total: 80 * gib, Used: used, Free: 80*gib - used, Util: util, HasUtil: true}
	}
	return nil
}

func (tn *tenants) ReadProcesses(now time.Time, buf []sampler.ProcSample, _ []error) ([]sampler.ProcSample, error) {
	buf = buf[:0]
	for _, t := range tn.list() {
		if u := t.used(now.Sub(tn.start)); u > 0 {
			buf = append(buf, sampler.ProcSample{Device: t.dev, Process: sampler.Process{PID: t.pid, UsedBytes: sampler.Ptr(u), Type: "compute",
				User: t.user, Visible: t.visible, Job: t.job, StartTime: tn.start.Add(-time.Minute)}})
		}
	}
	return buf, nil
}

func (tn *tenants) ReadProcessUtilization(now time.Time, out map[sampler.UtilKey]float64) error {
	for _, t := range tn.list() {
		if t.hasUtil && t.used(now.Sub(tn.start)) > 0 {
			out[sampler.UtilKey{Device: t.dev, PID: t.pid}] = t.util
		}
	}
	return nil
}

func (*tenants) Close() error { return nil }

// truth integrates the tenants' own functions over [from, to) by the
// midpoint rule at 1 s: GiB-hours, GPU-hours held and idle, per user.
type account struct{ gibH, gpuH, idleH float64 }

func truth(tn *tenants, from, to time.Duration) map[string]account {
	out := map[string]account{}
	for el := from; el < to; el += time.Second {
		mid := el + time.Second/2
		held := map[[2]any]bool{}
		for _, t := range tn.list() {
			u := t.used(mid)
			if u == 0 {
				continue
			}
			name := t.user
			if name == "" {
				name = usage.Unknown
			}
			a := out[name]
			a.gibH += float64(u) / gib / 3600
			k := [2]any{name, t.dev}
			if !held[k] {
				held[k] = true
				a.gpuH += 1.0 / 3600
				// Idle: the process's own utilization where known, else
				// its GPU's (GPU 1 is at 0%).
				if t.hasUtil && t.util < 5 || !t.hasUtil && t.dev == 1 {
					a.idleH += 1.0 / 3600
				}
			}
			out[name] = a
		}
	}
	return out
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f (±%.4f)", what, got, want, tol)
	}
}

func report(t *testing.T, opts usage.Options, paths ...string) usage.Report {
	t.Helper()
	a := usage.New(opts)
	if err := usage.AddRecording(context.Background(), a, paths, func(w replay.Warning) { t.Logf("warning: %s", w) }); err != nil {
		t.Fatal(err)
	}
	return a.Report()
}

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// TestUsageMatchesIntegral: what usage reports of an hour's recording is
// the integral of what the tenants held, computed from their own
// definitions, within one sampling interval of the largest holding.
func TestUsageMatchesIntegral(t *testing.T) {
	tn := &tenants{start: t0}
	path := filepath.Join(t.TempDir(), "node.jsonl.gz")
	const iv = 5 * time.Second
	if _, err := recsynth.Record(path, tn, t0, iv, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	rep := report(t, usage.Options{}, path)
	want := truth(tn, 0, time.Hour)
	// Sample and hold is off by at most one interval of the largest
	// holding (bob's ramp, a process list a poll late).
	tolGiB := 2 * 35 * iv.Hours()
	tolH := 2 * iv.Hours() * 2
	users := map[string]usage.UserRow{}
	for _, u := range rep.Users {
		users[u.User] = u
	}
	if len(users) != 3 {
		t.Fatalf("users %v, want alice, bob and %s", rep.Users, usage.Unknown)
	}
	for name, w := range want {
		u, ok := users[name]
		if !ok {
			t.Errorf("no row for %s", name)
			continue
		}
		near(t, name+" GiB-hours", u.GiBHours, w.gibH, tolGiB)
		near(t, name+" GPU-hours", u.GPUHours, w.gpuH, tolH)
		near(t, name+" idle GPU-hours", u.IdleGPUHours, w.idleH, tolH)
		near(t, name+" share", u.Share, w.gibH/160, tolGiB/160)
	}
	if p := users["alice"].PeakBytes; p != 25*gib {
		t.Errorf("alice's peak %d, want 25 GiB (20 on GPU 0 and 5 on GPU 1 at once)", p)
	}
	if p := users["bob"].PeakBytes; p != 30*gib {
		t.Errorf("bob's peak %d, want 30 GiB", p)
	}
	near(t, "capacity", rep.Totals.CapacityGiBHours, 160, 1e-6)
	near(t, "GPU-hours", rep.Totals.GPUHours, 2, 1e-6)
	if rep.Totals.GPUs != 2 || len(rep.Hosts) != 1 || rep.Hosts[0] != "node-7" {
		t.Errorf("totals %+v hosts %v, want 2 GPUs of node-7", rep.Totals, rep.Hosts)
	}
	jobs := map[string]usage.JobRow{}
	for _, j := range rep.Jobs {
		jobs[j.Job] = j
	}
	if j := jobs["slurm 4242"]; j.User != "alice" {
		t.Errorf("slurm 4242: %+v, want alice's (the steps of a job are one job)", j)
	} else {
		near(t, "slurm 4242 GiB-hours", j.GiBHours, want["alice"].gibH, tolGiB)
	}
	if j := jobs["pod 7c0e2f4a"]; j.User != "bob" {
		t.Errorf("pod: %+v, want bob's", j)
	} else {
		near(t, "pod GiB-hours", j.GiBHours, want["bob"].gibH, tolGiB)
	}
	if j, ok := jobs[""]; !ok || j.User != usage.Unknown {
		t.Errorf("jobs %v: want the unknown user's memory in no job", rep.Jobs)
	}
}

// TestUsageWindowAndGaps: a window cuts the integral where it says, and
// the time between two sessions of a recording (the recorder stopped for
// 20 minutes) is a gap, not memory held; the parts may be named in any
// order.
func TestUsageWindowAndGaps(t *testing.T) {
	tn := &tenants{start: t0}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "rec.jsonl.1"), filepath.Join(dir, "rec.jsonl")
	const iv = 5 * time.Second
	if _, err := recsynth.Record(a, tn, t0, iv, time.Minute, 20*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := recsynth.Record(b, tn, t0.Add(40*time.Minute), iv, time.Minute, 20*time.Minute); err != nil {
		t.Fatal(err)
	}
	rep := report(t, usage.Options{Since: t0.Add(10 * time.Minute)}, b, a)
	want := truth(tn, 10*time.Minute, 20*time.Minute)
	for k, v := range truth(tn, 40*time.Minute, time.Hour) {
		w := want[k]
		w.gibH, w.gpuH, w.idleH = w.gibH+v.gibH, w.gpuH+v.gpuH, w.idleH+v.idleH
		want[k] = w
	}
	tol := 2 * 35 * iv.Hours()
	for _, u := range rep.Users {
		near(t, u.User+" GiB-hours", u.GiBHours, want[u.User].gibH, tol)
		near(t, u.User+" GPU-hours", u.GPUHours, want[u.User].gpuH, 4*iv.Hours())
	}
	// 2 GPUs × 20 min: the last sample before the gap (19:55) stands for
	// one interval, to 20:00, and the next comes at 40:00.
	near(t, "gap hours", rep.Totals.GapHours, 2*(20*time.Minute).Hours(), 1e-6)
	near(t, "GPU-hours recorded", rep.Totals.GPUHours, 2*(30*time.Minute).Hours(), 1e-6)
	if !rep.First.Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("first %v, want the window's start", rep.First)
	}
}
