package advisor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vramtop/vramtop/sampler"
)

// Advise returns the advice for a target in snap, most severe first: every
// rule firing on the device (for a process: those about it and those about
// its device), each with its remedies, with the monitor's state (hysteresis,
// idle times). On the snapshot last given to Observe it reuses that
// evaluation; on another it records it as Observe does.
func (m *Monitor) Advise(snap sampler.Snapshot, t Target) []Advice {
	m.mu.Lock()
	defer m.mu.Unlock()
	fs := m.buf
	if !m.lastOK || !snap.Time.Equal(m.lastTime) || snap.Seq != m.lastSeq {
		fs = m.observe(&snap)
	}
	return advise(&snap, t, m.cfg, fs)
}

func advise(snap *sampler.Snapshot, t Target, cfg Config, fs []finding) []Advice {
	di := -1
	for i := range snap.Devices {
		if snap.Devices[i].ID == t.DeviceID {
			di = i
			break
		}
	}
	if di < 0 {
		return nil
	}
	d := &snap.Devices[di]
	pj := -1
	if t.PID != 0 {
		for j := range d.Processes {
			if d.Processes[j].PID == t.PID && (pj < 0 || !d.Processes[j].Exited) {
				pj = j
			}
		}
		if pj < 0 {
			return nil
		}
	}
	a := adviser{snap: snap, d: d, di: di, pj: pj, cfg: cfg}
	var out []Advice
	for i := range fs {
		f := &fs[i]
		if f.dev != di || pj >= 0 && f.proc >= 0 && f.proc != pj {
			continue
		}
		out = append(out, a.advice(f))
	}
	out = append(out, a.preallocation()...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

type adviser struct {
	snap *sampler.Snapshot
	d    *sampler.Device
	di   int
	pj   int // the target process; -1 for the device
	cfg  Config
	// sized is set once the escalation list has been given, so that it
	// is attached to the first near-full advice only.
	sized bool
}

func (a *adviser) advice(f *finding) Advice {
	adv := Advice{Rule: f.Rule, Severity: f.Severity, Title: f.Message, PID: f.PID}
	switch f.Rule {
	case RuleThreshold:
		subject := a.subject()
		if subject < 0 || a.sized {
			break
		}
		a.sized = true
		p := &a.d.Processes[subject]
		adv.Shortfall = f.shortfall
		adv.Remedies, adv.Detail = processRemedies(p, f.shortfall)
		if f.shortfall > 0 {
			adv.Detail += fmt.Sprintf(" %s must go to get back under the %s warning line.", FormatBytes(f.shortfall), pct(a.cfg.Thresholds.Warn))
		}
		adv.Remedies = append(adv.Remedies, a.tenantRemedies(p)...)
	case RuleTimeToFull:
		adv.Detail = fmt.Sprintf("A straight-line fit over the last %s of %s's used memory projects it full in %s.",
			durText(a.cfg.TrendWindow), gpuName(a.d), minutesText(f.ETA))
		var p *sampler.Process
		if g := a.grower(); g >= 0 {
			p = &a.d.Processes[g]
			adv.Detail += fmt.Sprintf(" %s grows the most; memory that keeps growing is a leak or a cache without a bound (a list of tensors, a KV cache), not a model too big for the card.", procLabel(p))
		}
		adv.Remedies = append(HabitRemedies(), a.tenantRemedies(p)...)
	case RuleSpikeHeadroom:
		p := &a.d.Processes[f.proc]
		adv.Shortfall = f.shortfall
		adv.Remedies, adv.Detail = processRemedies(p, f.shortfall)
		a.sized = a.sized || f.proc == a.subject()
		adv.Detail = fmt.Sprintf("Its peak needs %s more than is free now; other processes took the room since. ", FormatBytes(f.shortfall)) + adv.Detail
		adv.Remedies = append(adv.Remedies, a.tenantRemedies(p)...)
	case RuleLeakSuspect:
		adv.Detail = "Memory that grows step after step is a leak, not a model too big for the card: tensors kept in a list, a loss logged as a tensor (keeping its graph), a cache without a bound. Restarting only postpones the out-of-memory error."
		adv.Remedies = HabitRemedies()
	case RuleOtherTenants:
		adv.Detail = "A job that fitted yesterday can run out of memory today because someone else now holds memory on the same card."
		var mine *sampler.Process
		if s := a.subject(); s >= 0 {
			mine = &a.d.Processes[s]
		}
		adv.Remedies = a.tenantRemedies(mine)
	case RuleUnattributed:
		adv.Detail = "vramtop names the processes of its own PID namespace; run it in the host's (on the host, or docker run --pid=host) to name the others. nvidia-smi on the host names them too."
		if f.Severity > Info { // near full: the memory matters
			adv.Remedies = TenantRemedies(f.Bytes, a.freerValue())
		}
	case RuleIdleHolder:
		p := &a.d.Processes[f.proc]
		if a.cfg.User != "" && p.User == a.cfg.User {
			adv.Detail = "If you are done with it, end it (or restart the notebook kernel). torch.cuda.empty_cache() returns its cached blocks to the driver for others; live tensors stay."
		} else {
			adv.Detail = "Others may need this memory; its owner can end the process, or call torch.cuda.empty_cache() to return cached blocks."
		}
		for _, r := range Remedies(Habits | Tenants) {
			if r.Key == "empty_cache" || r.Key == "ask_tenant" && p.User != a.cfg.User {
				adv.Remedies = append(adv.Remedies, r.Estimate(0))
			}
		}
	case RuleFreerGPU:
		e := &a.snap.Devices[f.freer]
		for _, r := range Remedies(Tenants) {
			if r.Key == "another_gpu" {
				est := r.Estimate(0)
				est.Saving = fmt.Sprintf("%s has %s free, %s more than %s", gpuName(e), FormatBytes(e.MemoryFree), FormatBytes(e.MemoryFree-a.d.MemoryFree), gpuName(a.d))
				est.SavingBytes = e.MemoryFree - a.d.MemoryFree
				est.How = strings.ReplaceAll(est.How, "$(vramtop pick)", f.Suggest)
				adv.Remedies = append(adv.Remedies, est)
			}
		}
	}
	return adv
}

// subject is the process whose remedies a device-level near-full advice
// gives: the target process, else the user's largest, else the largest.
func (a *adviser) subject() int {
	if a.pj >= 0 {
		return a.pj
	}
	best := -1
	if a.cfg.User != "" {
		for j := range a.d.Processes {
			p := &a.d.Processes[j]
			if p.Exited || p.User != a.cfg.User || p.UsedBytes == nil {
				continue
			}
			if best < 0 || p.Used() > a.d.Processes[best].Used() {
				best = j
			}
		}
	}
	if best < 0 {
		best = largest(a.d)
	}
	return best
}

// grower is the target process, else the live process whose memory grew
// the most over the trend window; -1 when none grew.
func (a *adviser) grower() int {
	if a.pj >= 0 {
		return a.pj
	}
	from := a.snap.Time.Add(-a.cfg.TrendWindow)
	best, bestRate := -1, 0.0
	for j := range a.d.Processes {
		p := &a.d.Processes[j]
		if p.Exited {
			continue
		}
		if r := growthRate(p.History.Since(from)); r > bestRate {
			best, bestRate = j, r
		}
	}
	return best
}

// othersHold is what the live processes of users other than owner hold
// (those over the tenant floor, and those of other PID namespaces), with
// the unattributed memory over its floor.
func (a *adviser) othersHold(owner string) uint64 {
	var held uint64
	for j := range a.d.Processes {
		p := &a.d.Processes[j]
		if p.Exited || p.UsedBytes == nil || p.Used() < a.cfg.TenantFloor {
			continue
		}
		if !p.Visible || p.User != owner {
			held += p.Used()
		}
	}
	if a.d.Unattributed != nil && *a.d.Unattributed >= a.cfg.UnattributedFloor {
		held += *a.d.Unattributed
	}
	return held
}

// freerValue is the CUDA_VISIBLE_DEVICES value of the freest other device
// with clearly more free memory; "" when none.
func (a *adviser) freerValue() string {
	if e := freerDevice(a.snap, a.di, a.cfg.FreerMinExtra); e >= 0 {
		return VisibleDevicesValue(&a.snap.Devices[e])
	}
	return ""
}

// tenantRemedies are the remedies for memory that others than p's owner
// hold on the card (p nil: the user's point of view), when they hold any
// or a freer GPU exists; the example command is p's.
func (a *adviser) tenantRemedies(p *sampler.Process) []RemedyEstimate {
	owner := a.cfg.User
	if p != nil && p.User != "" {
		owner = p.User
	}
	held := a.othersHold(owner)
	v := a.freerValue()
	if held == 0 && v == "" {
		return nil
	}
	var out []RemedyEstimate
	for _, r := range TenantRemedies(held, v) {
		if held == 0 && strings.Contains(r.How, "vramtop shows who holds") {
			continue // nobody to ask
		}
		if p != nil && p.Visible {
			if c := shortCommand(p.Command); c != "" {
				r.How = strings.ReplaceAll(r.How, "python train.py", c)
			}
		}
		out = append(out, r)
	}
	return out
}

// processRemedies are the remedies for a process near full, in escalation
// order for what it seems to do, ranked by whether they cover shortfall;
// detail says what they were estimated on.
func processRemedies(p *sampler.Process, shortfall uint64) ([]RemedyEstimate, string) {
	used := p.Used()
	kind, fw := processKind(p.Command), framework(p.Command)
	var list []RemedyEstimate
	var detail string
	switch kind {
	case kindInference:
		list = InferenceRemedies(used)
		detail = fmt.Sprintf("Remedies for %s, which serves or evaluates a model (from its command), savings estimated on its %s.", procLabel(p), FormatBytes(used))
	case kindTraining:
		list = TrainingRemedies(used)
		detail = fmt.Sprintf("Remedies for %s, which trains a model (from its command), in the order to try; savings estimated on its %s.", procLabel(p), FormatBytes(used))
	default:
		list = TrainingRemedies(used)
		detail = fmt.Sprintf("Remedies for %s in the order to try for training (its command does not say; for inference: inference_mode, a smaller batch, quantization, splitting the model); savings estimated on its %s.", procLabel(p), FormatBytes(used))
	}
	list = RankRemedies(list, shortfall)
	switch fw {
	case "tensorflow":
		list = append(list, TensorFlowRemedies()...)
	case "pytorch", "":
		for _, r := range FragmentationRemedies(0) {
			if strings.Contains(r.How, "expandable_segments") {
				list = append(list, r)
			}
		}
	}
	return list, detail
}

// preallocation is advice about frameworks that take most of the card up
// front whatever the model needs: TensorFlow, JAX, vLLM.
func (a *adviser) preallocation() []Advice {
	var out []Advice
	for j := range a.d.Processes {
		p := &a.d.Processes[j]
		if a.pj >= 0 && j != a.pj || p.Exited || p.UsedBytes == nil || a.d.MemoryTotal == 0 {
			continue
		}
		share := float64(p.Used()) / float64(a.d.MemoryTotal) * 100
		if share < 50 {
			continue
		}
		adv := Advice{Rule: RulePreallocation, Severity: Info, PID: p.PID}
		head := fmt.Sprintf("%s: %s holds %s of the card (%s)", gpuName(a.d), procLabel(p), pct(share), FormatBytes(p.Used()))
		switch framework(p.Command) {
		case "tensorflow":
			adv.Title = head + ": TensorFlow takes nearly all memory up front, whatever the model needs"
			adv.Remedies = TensorFlowRemedies()
		case "jax":
			adv.Title = head + ": JAX preallocates 75% of the card up front"
			adv.Remedies = []RemedyEstimate{
				{Name: "JAX without preallocation", Saving: "the preallocated memory the model does not use (unknown here)", Cost: "possible fragmentation", Effort: "easy", How: "XLA_PYTHON_CLIENT_PREALLOCATE=false"},
				{Name: "JAX memory fraction", Saving: "caps what this process takes", Cost: "none", Effort: "easy", How: "XLA_PYTHON_CLIENT_MEM_FRACTION=.5"},
			}
		case "vllm":
			adv.Title = head + ": vLLM reserves --gpu-memory-utilization (default 0.9) of the card for weights and KV cache"
			adv.Remedies = []RemedyEstimate{
				{Name: "lower vLLM's memory share", Saving: "the KV cache beyond what the load needs (estimate unknown)", Cost: "fewer concurrent sequences", Effort: "easy", How: "vllm serve ... --gpu-memory-utilization 0.5 (and --max-model-len to bound the cache)"},
			}
		default:
			continue
		}
		// Advice that no rule fires for carries no severity of its own:
		// every WARN on a screen is in the alerts list.
		if a.cfg.User != "" && p.User != a.cfg.User || liveProcesses(a.d) > 1 {
			adv.Title += "; it shares the card"
		}
		out = append(out, adv)
	}
	return out
}
