package demo

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// User is the demo's "you": the user running vramtop on the demo server.
// Processes of other users show as other tenants.
const User = "alice"

// The demo server's story, in elapsed time since the demo started. Every
// value is a pure function of now − start (plus seeded, deterministic
// noise), so a test with a fixed clock sees the same numbers on every run.
const (
	// GPU 0: alice's training job ramps up, then spikes periodically.
	demoRamp       = 150 * time.Second
	demoSpikeFirst = 165 * time.Second
	demoSpikeEvery = 30 * time.Second
	// GPU 0: bob's job arrives.
	demoBobArrives = 2 * time.Minute
	// GPU 1: carol's server leaks 1 MiB every 125 ms (8 MiB/s) until it is
	// restarted (a new PID); the gap is the restart.
	demoLeakStep     = 125 * time.Millisecond
	demoLeakLife     = 7000 * time.Second
	demoLeakRestart  = 10 * time.Second
	demoLeakStartAgo = 20 * time.Minute
	// GPU 2: frank's embedding job exits.
	demoFrankExits = 4 * time.Minute
)

// demoPodContainer is the container of the demo's Kubernetes pod.
const demoPodContainer = "5e8d1c3b7a2f40968e1d2c3b4a5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071"

// demoMiB is one MiB in bytes.
const demoMiB = 1 << 20

// Real card sizes in MiB.
const (
	h100Total     = 81559
	h100Reserved  = 523
	h200Total     = 143771
	h200Reserved  = 616
	a100Total     = 81920
	a100Reserved  = 536
	a100MIG3g40gb = 40192
	v100Total     = 32768
	v100Reserved  = 402 // part of v1 "used": the card cannot tell it apart
)

type demoDevKind int

const (
	kindH100 demoDevKind = iota
	kindH200
	kindA100MIGParent
	kindA100MIGInstance
	kindV100v1
)

// demoDev is one entry of the demo's device list.
type demoDev struct {
	info sampler.DeviceInfo
	kind demoDevKind
	// gpu is the physical GPU the entry belongs to (the parent for a MIG
	// instance); seed varies the noise per device.
	gpu  int
	seed uint64
	// unattributedMiB is memory on the device no listed process owns.
	unattributedMiB func(t time.Duration) uint64
	// util is the device's GPU utilization (percent); nil: not supported.
	util func(t time.Duration) float64
	// children are the MIG instances of a MIG parent (indices in devs).
	children []int
	// energyBaseMJ is the energy counter at the demo's start (the card has
	// run a while); energyAt and energyMJ cache the integral of its power
	// from the start up to the grid point energyAt (see energyCounter).
	energyBaseMJ uint64
	energyAt     time.Duration
	energyMJ     float64
}

// demoProc is one scripted process. Its memory counts on its device whether
// or not the driver reports it per process (hasUsed).
type demoProc struct {
	dev       int // index in devs
	user      string
	uid       uint32
	hasUID    bool
	command   string
	typ       string
	container string
	// job is the Slurm job or Kubernetes pod its cgroup names; nil: none.
	job     *sampler.Job
	visible bool
	hasUsed bool
	// cpu is its host CPU use (100 = one core) and hostMiB its resident
	// host memory, for a visible process; nil cpu: an idle process (0%).
	cpu     func(t time.Duration) float64
	hostMiB uint64
	// life returns whether the process is alive at t, and its PID and
	// start time (relative to the demo's start).
	life func(t time.Duration) (alive bool, pid uint32, started time.Duration)
	// mem is its memory in MiB at t (only called while alive).
	mem func(t time.Duration) uint64
	// util is its SM utilization (percent); nil: no samples.
	util func(t time.Duration) float64
}

// addedProc is a process put on a demo GPU by AddProcess.
type addedProc struct {
	dev     int
	pid     uint32
	user    string
	command string
	bytes   func(elapsed time.Duration) uint64
	// first is when a reading first saw the process; elapsed counts from
	// there. Zero until then.
	first   time.Time
	removed bool
}

// Demo is the built-in demo source: a believable server whose GPUs run a
// scripted, time-driven story. It reports Kind "demo" and Demo true, so
// every screen labels it as demo data.
//
// The story, each part visible within the first five minutes:
//   - GPU 0 (H100): alice's training job ramps up over 2.5 min, then spikes
//     every ~30 s for 200–400 ms toward (and sometimes past) 90%; bob's job
//     arrives on the same card at 2 min.
//   - GPU 1 (H100): carol's server leaks 8 MiB/s (its memory only grows until
//     it is restarted, about every two hours); dave's idle Jupyter kernel
//     holds 9.5 GiB at 0% utilization.
//   - GPU 2 (H200): erin's inference server; frank's embedding job exits at
//     4 min; a process of another PID namespace (a container) and memory no
//     process accounts for.
//   - GPU 3 (A100 80GB) in MIG mode: two 3g.40gb instances, "3/1" and
//     "3/2", each with its own memory and process; no device utilization.
//   - GPU 4 (V100, with five GPUs or more): memory v1 only (no reserved), no
//     utilization, no temperature, and processes whose memory the driver
//     does not report.
//   - GPUs 5 and up: ranks of a distributed training job.
//
// Every GPU with a power reading has a total-energy counter: its power
// integrated over the story. A process put on a GPU with AddProcess loads
// it (35% SM utilization), so its power and counter rise while it runs.
//
// Only AddProcess and RemoveProcess may be called from another goroutine
// than the sampler's.
type Demo struct {
	start time.Time
	devs  []demoDev
	procs []demoProc
	// backfillTo, when set, is the moment up to which Backfill gives the
	// devices' history from start.
	backfillTo time.Time

	mu    sync.Mutex
	added []*addedProc
}

// New returns the demo server with five GPUs (seven devices: GPU 3's
// two MIG instances are devices of their own).
// Hostname is the demo host's name, on every output (snapshots, metrics,
// alert payloads).
const Hostname = "demo-node"

func New(start time.Time) *Demo { return NewGPUs(start, 5) }

// BackfillTo makes Backfill give each device's used memory from the demo's
// start up to t, a sample a second: a live view opened Lead into the
// story shows the story so far. It returns d.
func (d *Demo) BackfillTo(t time.Time) *Demo {
	d.backfillTo = t
	return d
}

// Backfill is the device's used memory from the demo's start up to the time
// set with BackfillTo, one sample a second; nothing when none was set.
func (d *Demo) Backfill(deviceID string) (times []time.Time, values []uint64) {
	dev := -1
	for i := range d.devs {
		if d.devs[i].info.ID == deviceID {
			dev = i
		}
	}
	if dev < 0 || !d.backfillTo.After(d.start) {
		return nil, nil
	}
	out := make([]sampler.MemSample, len(d.devs))
	for t := d.start; t.Before(d.backfillTo); t = t.Add(time.Second) {
		d.ReadMemory(t, out)
		if out[dev].Err == nil {
			times = append(times, t)
			values = append(values, out[dev].Used)
		}
	}
	return times, values
}

// Lead is how far into its story the demo starts when vramtop runs it
// (--demo): the training run has ramped up and its spikes have begun by the
// first screen.
const Lead = 3 * time.Minute

// NewGPUs returns the demo server with n physical GPUs (at least 4).
// GPUs past the fifth run ranks of a distributed training job.
func NewGPUs(start time.Time, n int) *Demo {
	n = max(n, 4)
	d := &Demo{start: start}
	for g := 0; g < n; g++ {
		d.addGPU(g, n)
	}
	return d
}

func demoUUID(seed uint64) string {
	a, b := mix(seed^0x5eed), mix(seed^0xfeed)
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x",
		uint32(a), uint16(a>>32), uint16(a>>48)&0x0fff|0x4000, uint16(b)&0x3fff|0x8000, b>>16&0xffffffffffff)
}

func (d *Demo) addDev(dv demoDev) int {
	// A few hundred kWh since the driver loaded.
	dv.energyBaseMJ = 900_000_000_000 + mix(dv.seed^0xe6)%300_000_000_000
	d.devs = append(d.devs, dv)
	return len(d.devs) - 1
}

func (d *Demo) addGPU(g, n int) {
	seed := uint64(g+1) * 0x9e3779b97f4a7c15
	info := sampler.DeviceInfo{
		ID:       fmt.Sprint(g),
		Index:    g,
		UUID:     demoUUID(seed),
		PCIBusID: fmt.Sprintf("00000000:%02X:00.0", []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}[g%8]+g/8),
	}
	switch {
	case g == 0:
		info.Name = "NVIDIA H100 80GB HBM3"
		i := d.addDev(demoDev{info: info, kind: kindH100, gpu: g, seed: seed,
			unattributedMiB: constMiB(0), util: d.gpu0Util})
		d.gpu0(i)
	case g == 1:
		info.Name = "NVIDIA H100 80GB HBM3"
		i := d.addDev(demoDev{info: info, kind: kindH100, gpu: g, seed: seed,
			unattributedMiB: constMiB(0), util: func(t time.Duration) float64 {
				return clampPct(27 + 12*math.Sin(2*math.Pi*t.Seconds()/97) + 10*smoothNoise(seed, t, time.Second))
			}})
		d.gpu1(i, seed)
	case g == 2:
		info.Name = "NVIDIA H200"
		i := d.addDev(demoDev{info: info, kind: kindH200, gpu: g, seed: seed,
			unattributedMiB: func(t time.Duration) uint64 { return 1536 },
			util: func(t time.Duration) float64 {
				// Request bursts on the inference server.
				return clampPct(45 + 25*math.Sin(2*math.Pi*t.Seconds()/41) + 20*smoothNoise(seed, t, 700*time.Millisecond))
			}})
		d.gpu2(i, seed)
	case g == 3:
		info.Name = "NVIDIA A100-SXM4-80GB"
		info.MIGEnabled = true
		parent := d.addDev(demoDev{info: info, kind: kindA100MIGParent, gpu: g, seed: seed})
		for gi := 1; gi <= 2; gi++ {
			mi := sampler.DeviceInfo{
				ID:       fmt.Sprintf("%d/%d", g, gi),
				Index:    g,
				Name:     "NVIDIA A100-SXM4-80GB MIG 3g.40gb",
				UUID:     "MIG-" + demoUUID(seed + uint64(gi))[4:],
				PCIBusID: info.PCIBusID,
				MIG:      &sampler.MIGInfo{ParentIndex: g, GPUInstanceID: gi, ComputeInstanceID: 0, Profile: "3g.40gb"},
			}
			ci := d.addDev(demoDev{info: mi, kind: kindA100MIGInstance, gpu: g, seed: seed + uint64(gi),
				unattributedMiB: constMiB(0)})
			d.devs[parent].children = append(d.devs[parent].children, ci)
		}
		d.gpu3(d.devs[parent].children)
	case g == 4:
		info.Name = "Tesla V100-SXM2-32GB"
		i := d.addDev(demoDev{info: info, kind: kindV100v1, gpu: g, seed: seed,
			unattributedMiB: constMiB(v100Reserved)})
		d.gpu4(i)
	default:
		kind, name := kindH100, "NVIDIA H100 80GB HBM3"
		if g%2 == 1 {
			kind, name = kindH200, "NVIDIA H200"
		}
		info.Name = name
		i := d.addDev(demoDev{info: info, kind: kind, gpu: g, seed: seed,
			unattributedMiB: constMiB(0), util: func(t time.Duration) float64 {
				return clampPct(95 + 3*smoothNoise(seed, t, 400*time.Millisecond))
			}})
		d.rank(i, g, n, seed)
	}
}

func constMiB(v uint64) func(time.Duration) uint64 {
	return func(time.Duration) uint64 { return v }
}

// always is the life of a process that runs for the whole demo.
func always(pid uint32, started time.Duration) func(time.Duration) (bool, uint32, time.Duration) {
	return func(time.Duration) (bool, uint32, time.Duration) { return true, pid, started }
}

// between is the life of a process alive in [from, to).
func between(pid uint32, from, to time.Duration) func(time.Duration) (bool, uint32, time.Duration) {
	return func(t time.Duration) (bool, uint32, time.Duration) { return t >= from && t < to, pid, from }
}

// ramp goes from 0 to 1 over [from, from+over), smoothly.
func ramp(t, from, over time.Duration) float64 {
	x := float64(t-from) / float64(over)
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	return x * x * (3 - 2*x)
}

// GPU 0: alice's training job and bob's job.
func (d *Demo) gpu0(dev int) {
	d.procs = append(d.procs, demoProc{
		dev: dev, user: "alice", uid: 1001, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python train.py --model llama-8b --batch 32",
		// A Slurm batch job's first step.
		job: &sampler.Job{SlurmJobID: "4242", SlurmStep: "0"},
		cpu: func(t time.Duration) float64 {
			return 100 + 60*ramp(t, 0, demoRamp) + 8*smoothNoise(0xa1, t, time.Second)
		},
		hostMiB: 14200,
		life:    always(41230, -4*time.Second),
		mem:     d.aliceMiB,
		util: func(t time.Duration) float64 {
			u := d.gpu0Util(t)
			if t >= demoBobArrives {
				u -= 9
			}
			return clampPct(u)
		},
	}, demoProc{
		dev: dev, user: "bob", uid: 1002, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python eval.py --ckpt /data/ckpt/step-4000 --batch 8",
		cpu:     func(t time.Duration) float64 { return 35 + 5*smoothNoise(0xb0, t, time.Second) },
		hostMiB: 5300,
		life:    between(52817, demoBobArrives, math.MaxInt64),
		mem: func(t time.Duration) uint64 {
			return 520 + uint64(6480*ramp(t, demoBobArrives, 15*time.Second))
		},
		util: func(t time.Duration) float64 { return 9 * ramp(t, demoBobArrives, 15*time.Second) },
	})
}

// aliceMiB is the training job: the model and optimizer state load over
// demoRamp, each step's activations come and go (a sawtooth), and every ~30
// s an evaluation pass spikes for 200–400 ms.
func (d *Demo) aliceMiB(t time.Duration) uint64 {
	r := ramp(t, 0, demoRamp)
	steady := 610 + 55400*r
	step := 1800 * time.Millisecond
	saw := 800 * float64(t%step) / float64(step) * r
	return uint64(steady+saw) + d.spikeMiB(t)
}

// spikeMiB is the extra memory of an evaluation pass at t, or 0.
func (d *Demo) spikeMiB(t time.Duration) uint64 {
	if t < demoSpikeFirst {
		return 0
	}
	k := uint64((t - demoSpikeFirst) / demoSpikeEvery)
	// Each spike starts within 2 s of its slot and lasts 200–400 ms; its
	// height follows a fixed pattern with noise, so some spikes cross 90%
	// (with bob's job on the card) and some stay below.
	h := mix(0xa11ce ^ k)
	at := demoSpikeFirst + time.Duration(k)*demoSpikeEvery + time.Duration(h%2000)*time.Millisecond
	dur := 200*time.Millisecond + time.Duration(h>>16%201)*time.Millisecond
	if t < at || t >= at+dur {
		return 0
	}
	pattern := [...]float64{0.5, 0.9, 0.65, 1.0, 0.75}
	return uint64(14000*pattern[k%uint64(len(pattern))]) + h>>32%500
}

func (d *Demo) gpu0Util(t time.Duration) float64 {
	u := 93*ramp(t, 0, demoRamp) + 3*smoothNoise(1, t, 500*time.Millisecond)
	if t >= demoBobArrives {
		u += 2
	}
	if d.spikeMiB(t) > 0 {
		u = 100
	}
	return clampPct(u)
}

// GPU 1: carol's leaking server and dave's idle Jupyter kernel.
func (d *Demo) gpu1(dev int, seed uint64) {
	cycle := demoLeakLife + demoLeakRestart
	// carol's server instance k starts at -demoLeakStartAgo + k*cycle.
	carol := func(t time.Duration) (alive bool, k int64, into time.Duration) {
		s := t + demoLeakStartAgo
		k = int64(s / cycle)
		if s < 0 {
			k = 0
		}
		into = s - time.Duration(k)*cycle
		return into >= 0 && into < demoLeakLife, k, into
	}
	d.procs = append(d.procs, demoProc{
		dev: dev, user: "carol", uid: 1003, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python serve.py --model mistral-7b-instruct --port 8080",
		cpu:     func(t time.Duration) float64 { return 22 + 4*smoothNoise(0xc0, t, 2*time.Second) },
		hostMiB: 3900,
		life: func(t time.Duration) (bool, uint32, time.Duration) {
			alive, k, _ := carol(t)
			return alive, 30411 + uint32(k)*37, -demoLeakStartAgo + time.Duration(k)*cycle
		},
		mem: func(t time.Duration) uint64 {
			_, _, into := carol(t)
			return 14000 + uint64(into/demoLeakStep)
		},
		util: func(t time.Duration) float64 { return d.devs[dev].util(t) },
	}, demoProc{
		dev: dev, user: "dave", uid: 1004, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python -m ipykernel_launcher -f /home/dave/.local/share/jupyter/runtime/kernel-5f2c.json",
		hostMiB: 2100,
		life:    always(27182, -3*time.Hour),
		mem:     constMiB(9734),
		util:    func(time.Duration) float64 { return 0 },
	})
}

// GPU 2: erin's inference server, frank's short job, a container's process
// in another PID namespace, and unattributed memory.
func (d *Demo) gpu2(dev int, seed uint64) {
	d.procs = append(d.procs, demoProc{
		dev: dev, user: "erin", uid: 1005, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-70B-Instruct --gpu-memory-utilization 0.65",
		// A Kubernetes pod's container (containerd, burstable QoS).
		job: &sampler.Job{K8sPodUID: "7c0e2f4a-91d3-4b6e-a8f5-3d2c1b0e9f87", K8sQOS: "burstable",
			ContainerID: demoPodContainer, Runtime: "containerd"},
		cpu:     func(t time.Duration) float64 { return 64 + 10*smoothNoise(0xe0, t, time.Second) },
		hostMiB: 31800,
		life:    always(19088, -26*time.Hour),
		mem:     constMiB(93450),
		util: func(t time.Duration) float64 {
			if t < demoFrankExits {
				return clampPct(d.devs[dev].util(t) - 12) // frank's share
			}
			return d.devs[dev].util(t)
		},
	}, demoProc{
		dev: dev, user: "frank", uid: 1006, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python embed_corpus.py --shard 3 --batch 256",
		cpu:     func(time.Duration) float64 { return 97 },
		hostMiB: 6900,
		life:    between(55102, -90*time.Second, demoFrankExits),
		mem:     func(t time.Duration) uint64 { return 6100 + uint64(300*smoothNoise(seed, t, 3*time.Second)+300) },
		util:    func(time.Duration) float64 { return 12 },
	}, demoProc{
		// NVML reports it, but /proc here does not show it.
		dev: dev, typ: "compute", container: "9b1e4a7c2f5d",
		hasUsed: true,
		life:    always(48213, -5*time.Hour),
		mem:     constMiB(10850),
	})
}

// GPU 3 in MIG mode: one process per instance.
func (d *Demo) gpu3(inst []int) {
	d.procs = append(d.procs, demoProc{
		dev: inst[0], user: "grace", uid: 1007, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python train_resnet.py --data /datasets/imagenet --epochs 90",
		cpu:     func(t time.Duration) float64 { return 380 + 40*smoothNoise(0x9a, t, time.Second) },
		hostMiB: 22400,
		life:    always(33750, -47*time.Minute),
		mem: func(t time.Duration) uint64 {
			return 24576 + uint64(600*(1+smoothNoise(31, t, 2*time.Second)))
		},
	}, demoProc{
		dev: inst[1], user: "heidi", uid: 1008, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: "python bert_pretrain.py --fp16 --seq-len 512",
		cpu:     func(t time.Duration) float64 { return 100 * ramp(t, 0, 80*time.Second) },
		hostMiB: 8700,
		life:    always(35021, -10*time.Second),
		mem: func(t time.Duration) uint64 {
			return 540 + uint64(30200*ramp(t, 0, 80*time.Second))
		},
	})
}

// GPU 4: an older card with memory v1 only and no per-process memory.
func (d *Demo) gpu4(dev int) {
	d.procs = append(d.procs, demoProc{
		dev: dev, user: "ivan", uid: 1009, hasUID: true, typ: "compute", visible: true,
		command: "gmx mdrun -deffnm npt -nb gpu",
		cpu:     func(time.Duration) float64 { return 1590 },
		hostMiB: 1200,
		life:    always(40961, -2*time.Hour),
		mem:     func(t time.Duration) uint64 { return 12400 + uint64(200*(1+smoothNoise(41, t, 5*time.Second))) },
	}, demoProc{
		dev: dev, user: "root", uid: 0, hasUID: true, typ: "graphics", visible: true,
		command: "/usr/lib/xorg/Xorg vt1 -displayfd 3",
		cpu:     func(time.Duration) float64 { return 0.3 },
		hostMiB: 95,
		life:    always(2214, -30*24*time.Hour),
		mem:     constMiB(41),
	})
}

// GPUs 5 and up: one rank of a distributed training job each.
func (d *Demo) rank(dev, g, n int, seed uint64) {
	total := uint64(h100Total)
	if d.devs[dev].kind == kindH200 {
		total = h200Total
	}
	base := float64(total) * 0.72
	d.procs = append(d.procs, demoProc{
		dev: dev, user: "judy", uid: 1010, hasUID: true, typ: "compute", visible: true, hasUsed: true,
		command: fmt.Sprintf("python pretrain.py --model llama-70b --local-rank %d --world-size %d", g-5, n-5),
		cpu:     func(t time.Duration) float64 { return 110 + 10*smoothNoise(seed^0xcc, t, time.Second) },
		hostMiB: 41000,
		life:    always(60100+uint32(g), -75*time.Minute),
		mem: func(t time.Duration) uint64 {
			step := 2300 * time.Millisecond
			return uint64(base + 1500*float64((t+time.Duration(g)*97*time.Millisecond)%step)/float64(step))
		},
		util: func(t time.Duration) float64 { return d.devs[dev].util(t) },
	})
}

// Info returns the demo server and its devices.
func (d *Demo) Info() sampler.SourceInfo {
	devs := make([]sampler.DeviceInfo, len(d.devs))
	for i, dv := range d.devs {
		devs[i] = dv.info
		if dv.info.MIG != nil {
			m := *dv.info.MIG
			devs[i].MIG = &m
		}
	}
	return sampler.SourceInfo{
		Kind:          "demo",
		Demo:          true,
		Hostname:      Hostname,
		DriverVersion: "580.95.05",
		NVMLVersion:   "13.580.95.05",
		CUDAVersion:   "13.0",
		Devices:       devs,
	}
}

func (d *Demo) elapsed(now time.Time) time.Duration {
	return max(now.Sub(d.start), 0)
}

// procMiB is the memory of the scripted processes on device i at t, in MiB.
func (d *Demo) procMiB(i int, t time.Duration) uint64 {
	var sum uint64
	for k := range d.procs {
		p := &d.procs[k]
		if p.dev != i {
			continue
		}
		if alive, _, _ := p.life(t); alive {
			sum += p.mem(t)
		}
	}
	return sum
}

// addedBytes is the memory of the processes added with AddProcess on
// device i; the caller holds d.mu.
func (d *Demo) addedBytes(i int, now time.Time) uint64 {
	var sum uint64
	for _, a := range d.added {
		if a.dev != i || a.removed {
			continue
		}
		if a.first.IsZero() {
			a.first = now
		}
		sum += a.bytes(now.Sub(a.first))
	}
	return sum
}

// usedBytes is the used memory of a non-MIG-parent device, without any
// reservation, capped at what the card has.
func (d *Demo) usedBytes(i int, t time.Duration, now time.Time, capMiB uint64) uint64 {
	dv := &d.devs[i]
	used := (d.procMiB(i, t) + dv.unattributedMiB(t)) * demoMiB
	used += d.addedBytes(i, now)
	return min(used, capMiB*demoMiB)
}

// ReadMemory fills one reading per device. It does not allocate.
func (d *Demo) ReadMemory(now time.Time, out []sampler.MemSample) error {
	t := d.elapsed(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.devs {
		if i >= len(out) {
			break
		}
		dv := &d.devs[i]
		var m sampler.MemSample
		switch dv.kind {
		case kindH100, kindH200:
			total, reserved := uint64(h100Total), uint64(h100Reserved)
			if dv.kind == kindH200 {
				total, reserved = h200Total, h200Reserved
			}
			m.Total, m.Reserved, m.HasReserved = total*demoMiB, reserved*demoMiB, true
			m.Used = d.usedBytes(i, t, now, total-reserved)
			m.Free = m.Total - m.Reserved - m.Used
			u := d.devUtil(i, t)
			m.Util, m.HasUtil = math.Round(u), true
			m.TempC, m.HasTemp = d.temp(dv, t), true
			m.PowerW, m.HasPower = d.devPower(i, t)
			// The SM clock boosts under load and drops when idle; the
			// memory clock stays (H100 SXM 2619 MHz, H200 3201 MHz).
			m.SMClockMHz, m.HasSMClock = 1980, true
			if u < 1 {
				m.SMClockMHz = 345
			}
			m.MemClockMHz, m.HasMemClock = 2619, true
			if dv.kind == kindH200 {
				m.MemClockMHz = 3201
			}
		case kindA100MIGParent:
			m.Total, m.Reserved, m.HasReserved = a100Total*demoMiB, a100Reserved*demoMiB, true
			for _, c := range dv.children {
				m.Used += d.usedBytes(c, t, now, a100MIG3g40gb)
			}
			m.Free = m.Total - m.Reserved - m.Used
			// In MIG mode the device reports no utilization.
			m.TempC, m.HasTemp = 38+int(4*smoothNoise(dv.seed, t, 20*time.Second)), true
			m.PowerW, m.HasPower = d.devPower(i, t)
			m.SMClockMHz, m.HasSMClock, m.MemClockMHz, m.HasMemClock = 1410, true, 1593, true
		case kindA100MIGInstance:
			m.Total, m.HasReserved = a100MIG3g40gb*demoMiB, true
			m.Used = d.usedBytes(i, t, now, a100MIG3g40gb)
			m.Free = m.Total - m.Used
		case kindV100v1:
			// Memory v1: used includes the reservation, which is unknown.
			m.Total = v100Total * demoMiB
			m.Used = d.usedBytes(i, t, now, v100Total)
			m.Free = m.Total - m.Used
			m.PowerW, m.HasPower = d.devPower(i, t)
			m.SMClockMHz, m.HasSMClock, m.MemClockMHz, m.HasMemClock = 1530, true, 877, true
		}
		if m.HasPower {
			m.EnergyMJ, m.HasEnergy = d.energyCounter(i, t), true
		}
		out[i] = m
	}
	return nil
}

// addedUtil is the SM utilization of each process put on a demo GPU with
// AddProcess (the job of vramtop run --demo): it loads the card this much
// more while it runs.
const addedUtil = 35

// devUtil is device i's utilization at t, with the load of the processes
// added to it; the caller holds d.mu.
func (d *Demo) devUtil(i int, t time.Duration) float64 {
	u := d.devs[i].util(t)
	for _, a := range d.added {
		if a.dev == i && !a.removed && !a.first.IsZero() {
			u += addedUtil
		}
	}
	return clampPct(u)
}

// devPower is device i's power draw at t (W), false where it reports
// none (a MIG instance); the caller holds d.mu.
func (d *Demo) devPower(i int, t time.Duration) (float64, bool) {
	dv := &d.devs[i]
	switch dv.kind {
	case kindH100, kindH200:
		return d.power(dv, d.devUtil(i, t), t), true
	case kindA100MIGParent:
		return math.Round(210 + 25*smoothNoise(dv.seed, t, time.Second)), true
	case kindV100v1:
		return math.Round(165 + 20*smoothNoise(dv.seed, t, 2*time.Second)), true
	}
	return 0, false
}

// energyStep is the grid on which the demo integrates its power into the
// energy counter.
const energyStep = 50 * time.Millisecond

// energyCounter is device i's total-energy counter at t (mJ): its base
// plus its power integrated from the demo's start by trapezoids on a
// 50 ms grid. The integral up to the last grid point is cached, so a
// reading costs the steps since the previous one; a reading earlier than
// the cache starts again from the start. The caller holds d.mu.
func (d *Demo) energyCounter(i int, t time.Duration) uint64 {
	dv := &d.devs[i]
	if t < dv.energyAt {
		dv.energyAt, dv.energyMJ = 0, 0
	}
	p := func(at time.Duration) float64 { w, _ := d.devPower(i, at); return w }
	for dv.energyAt+energyStep <= t {
		next := dv.energyAt + energyStep
		dv.energyMJ += (p(dv.energyAt) + p(next)) / 2 * energyStep.Seconds() * 1000
		dv.energyAt = next
	}
	part := (p(dv.energyAt) + p(t)) / 2 * (t - dv.energyAt).Seconds() * 1000
	return dv.energyBaseMJ + uint64(dv.energyMJ+part)
}

// temp follows the device's load with a minute's lag, like a heatsink.
func (d *Demo) temp(dv *demoDev, t time.Duration) int {
	lagged := dv.util(max(t-time.Minute, 0))*0.5 + dv.util(max(t-20*time.Second, 0))*0.5
	return int(math.Round(31 + 0.42*lagged + smoothNoise(dv.seed^7, t, 4*time.Second)))
}

// power is idle power plus a share of the board limit at the load u.
func (d *Demo) power(dv *demoDev, u float64, t time.Duration) float64 {
	idle, limit := 71.0, 700.0
	return math.Round(idle + (limit-idle)*0.9*u/100 + 8*smoothNoise(dv.seed^9, t, 300*time.Millisecond))
}

// ReadProcesses appends every process alive at now.
func (d *Demo) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	t := d.elapsed(now)
	for k := range d.procs {
		p := &d.procs[k]
		alive, pid, started := p.life(t)
		if !alive {
			continue
		}
		ps := sampler.ProcSample{Device: p.dev, Process: sampler.Process{
			PID: pid, Type: p.typ, User: p.user,
			Command: p.command, Container: p.container, Visible: p.visible,
			StartTime: d.start.Add(started),
		}}
		if p.hasUID {
			ps.UID = sampler.Ptr(p.uid)
		}
		if p.hasUsed {
			ps.UsedBytes = sampler.Ptr(p.mem(t) * demoMiB)
		}
		if p.visible {
			ps.Job = p.job
			cpu := 0.0
			if p.cpu != nil {
				cpu = math.Round(max(p.cpu(t), 0)*10) / 10
			}
			ps.CPUPercent, ps.HostMemoryBytes = sampler.Ptr(cpu), sampler.Ptr(p.hostMiB*demoMiB)
		}
		buf = append(buf, ps)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.added {
		if a.removed {
			continue
		}
		if a.first.IsZero() {
			a.first = now
		}
		buf = append(buf, sampler.ProcSample{Device: a.dev, Process: sampler.Process{
			PID: a.pid, Type: "compute", User: a.user,
			UsedBytes: sampler.Ptr(a.bytes(now.Sub(a.first))), Command: a.command, Visible: true, StartTime: a.first,
		}})
	}
	return buf, nil
}

// ReadProcessUtilization reports the SM utilization of the processes that
// have it (not those on MIG instances or the V100).
func (d *Demo) ReadProcessUtilization(now time.Time, out map[sampler.UtilKey]float64) error {
	t := d.elapsed(now)
	for k := range d.procs {
		p := &d.procs[k]
		if p.util == nil {
			continue
		}
		if alive, pid, _ := p.life(t); alive {
			out[sampler.UtilKey{Device: p.dev, PID: pid}] = math.Round(p.util(t))
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.added {
		if !a.removed && !a.first.IsZero() && d.devs[a.dev].util != nil {
			out[sampler.UtilKey{Device: a.dev, PID: a.pid}] = addedUtil
		}
	}
	return nil
}

// Close does nothing: the demo holds no resources.
func (d *Demo) Close() error { return nil }

// AddProcess puts a process on demo device `device` (an index in
// Info().Devices; a MIG parent or an index out of range is ignored):
// `vramtop run --demo` shows its child there. bytes gives the process's
// memory as a function of the time since a reading first saw it, which is
// also its start time; the device's used memory includes it. Safe to call
// from any goroutine.
func (d *Demo) AddProcess(device int, pid uint32, user, command string, bytes func(elapsed time.Duration) uint64) {
	if device < 0 || device >= len(d.devs) || d.devs[device].kind == kindA100MIGParent {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.added = append(d.added, &addedProc{dev: device, pid: pid, user: user, command: command, bytes: bytes})
}

// RemoveProcess takes a process added with AddProcess off its device (the
// child exited). Safe to call from any goroutine.
func (d *Demo) RemoveProcess(pid uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.added {
		if a.pid == pid {
			a.removed = true
		}
	}
}

// mix is splitmix64's finalizer: a seeded, deterministic hash.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// noiseAt is a value in [-1, 1] for lattice point i.
func noiseAt(seed uint64, i int64) float64 {
	return float64(mix(seed*0x2545f4914f6cdd1d^uint64(i))>>11)/float64(1<<53)*2 - 1
}

// smoothNoise is deterministic noise in [-1, 1] that varies smoothly with
// t, with features about `scale` long.
func smoothNoise(seed uint64, t, scale time.Duration) float64 {
	i := int64(t / scale)
	f := float64(t%scale) / float64(scale)
	f = f * f * (3 - 2*f)
	return noiseAt(seed, i)*(1-f) + noiseAt(seed, i+1)*f
}

func clampPct(u float64) float64 { return min(max(u, 0), 100) }
