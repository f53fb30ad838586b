package advisor

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

func adviceOf(as []Advice, rule string) *Advice {
	for i := range as {
		if as[i].Rule == rule {
			return &as[i]
		}
	}
	return nil
}

func remedyNamed(rs []RemedyEstimate, prefix string) *RemedyEstimate {
	for i := range rs {
		if strings.HasPrefix(rs[i].Name, prefix) {
			return &rs[i]
		}
	}
	return nil
}

func TestAdviseTrainingNearFullEscalation(t *testing.T) {
	// alice's training job holds 70 GiB of a 100 GiB card at 92%: 12 GiB
	// must go to get back under the 80% line; every training remedy covers
	// that, so they stay in escalation order.
	p := synProc(4242, "alice", "python train.py --batch 64", 70*oneGiB)
	s := synSnap(synDev("0", synTotal, 92*oneGiB, p))
	as := Advise(s, Target{DeviceID: "0", PID: 4242}, Config{User: "alice"})
	a := adviceOf(as, RuleThreshold)
	if a == nil {
		t.Fatalf("no threshold advice: %+v", as)
	}
	if a.Severity != Crit || a.Shortfall != 12*oneGiB {
		t.Errorf("severity %v, shortfall %s", a.Severity, FormatBytes(a.Shortfall))
	}
	mustContain(t, "detail", a.Detail, "PID 4242 (alice, python train.py)", "trains a model", "70 GiB", "12 GiB must go")
	order := []string{"halve the batch size", "gradient accumulation", "mixed precision", "gradient checkpointing", "model parallelism"}
	if len(a.Remedies) < len(order) {
		t.Fatalf("remedies %+v", a.Remedies)
	}
	for i, w := range order {
		if !strings.HasPrefix(a.Remedies[i].Name, w) || !a.Remedies[i].Covers {
			t.Errorf("remedy %d = %+v, want %q covering the shortfall", i, a.Remedies[i], w)
		}
	}
	if mp := remedyNamed(a.Remedies, "mixed precision"); mp.Saving != "~30% ≈ 21 GiB of 70 GiB (estimate)" || mp.Cost == "" {
		t.Errorf("mixed precision %+v", mp)
	}
	if fr := remedyNamed(a.Remedies, "expandable segments"); fr == nil || fr.How != "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" {
		t.Errorf("no allocator setting for a PyTorch job: %+v", a.Remedies)
	}
}

func TestAdviseRanksRemediesByShortfall(t *testing.T) {
	// 99 GiB used: 19 GiB must go. Of a 40 GiB job, mixed precision saves
	// ~12 GiB (not enough); the halvings save ~20 GiB (enough).
	p := synProc(4242, "alice", "python train.py", 40*oneGiB)
	s := synSnap(synDev("0", synTotal, 99*oneGiB, p))
	a := adviceOf(Advise(s, Target{DeviceID: "0", PID: 4242}, Config{}), RuleThreshold)
	if a == nil || a.Shortfall != 19*oneGiB {
		t.Fatalf("advice %+v", a)
	}
	var names []string
	for _, r := range a.Remedies[:5] {
		names = append(names, r.Name)
	}
	got := strings.Join(names, " | ")
	if !strings.HasPrefix(a.Remedies[3].Name, "model parallelism") || !strings.HasPrefix(a.Remedies[4].Name, "mixed precision") || a.Remedies[4].Covers {
		t.Errorf("mixed precision should come after the remedies that cover 19 GiB: %s", got)
	}
}

func TestAdviseInferenceAndPreallocation(t *testing.T) {
	p := synProc(19088, "erin", "python -m vllm.entrypoints.openai.api_server --model llama-70b", 91*oneGiB)
	s := synSnap(synDev("0", synTotal, 92*oneGiB, p))
	as := Advise(s, Target{DeviceID: "0", PID: 19088}, Config{User: "erin"})
	a := adviceOf(as, RuleThreshold)
	if a == nil || len(a.Remedies) == 0 || !strings.HasPrefix(a.Remedies[0].Name, "torch.inference_mode()") && !a.Remedies[0].Covers {
		t.Fatalf("inference remedies: %+v", a)
	}
	if remedyNamed(a.Remedies, "gradient checkpointing") != nil {
		t.Errorf("training remedy offered to a server: %+v", a.Remedies)
	}
	if q := remedyNamed(a.Remedies, "8-bit quantization"); q == nil || q.SavingBytes != uint64(float64(91*oneGiB)*0.75) {
		t.Errorf("quantization saving not in bytes of the process: %+v", q)
	}
	pre := adviceOf(as, RulePreallocation)
	if pre == nil {
		t.Fatalf("no preallocation advice for vLLM at 91%%: %+v", as)
	}
	mustContain(t, "title", pre.Title, "GPU 0: PID 19088 (erin, python vllm…api_server)", "vLLM reserves --gpu-memory-utilization")
}

func TestAdviseTensorFlowGrabAll(t *testing.T) {
	tf := synProc(5150, "bob", "python train_tf_keras.py", 95*oneGiB)
	mine := synProc(6000, "alice", "python train.py", 3*oneGiB)
	s := synSnap(synDev("0", synTotal, 98*oneGiB, tf, mine))
	as := Advise(s, Target{DeviceID: "0"}, Config{User: "alice"})
	pre := adviceOf(as, RulePreallocation)
	if pre == nil || pre.PID != 5150 || pre.Severity != Info {
		t.Fatalf("preallocation advice %+v in %+v", pre, as)
	}
	mustContain(t, "title", pre.Title, "PID 5150 (bob", "95% of the card", "TensorFlow takes nearly all memory up front", "it shares the card")
	// Every severity above info that the advice shows is an alert's.
	alerts := NewMonitor(Config{User: "alice"}).Observe(s)
	for _, t0 := range []Target{{DeviceID: "0"}, {DeviceID: "0", PID: 5150}, {DeviceID: "0", PID: 6000}} {
		for _, a := range Advise(s, t0, Config{User: "alice"}) {
			if a.Severity <= Info {
				continue
			}
			found := false
			for _, al := range alerts {
				found = found || al.Rule == a.Rule && al.Severity == a.Severity && al.DeviceID == "0" && (a.PID == 0 || al.PID == a.PID)
			}
			if !found {
				t.Errorf("advice %q (%s, %s) has a severity no alert has: alerts %+v", a.Title, a.Rule, a.Severity, alerts)
			}
		}
	}
	if g := remedyNamed(pre.Remedies, "TensorFlow memory growth"); g == nil || !strings.Contains(g.How, "set_memory_growth") {
		t.Errorf("no memory growth remedy: %+v", pre.Remedies)
	}
}

func TestAdviseOtherTenantsPointsToTheFreestGPU(t *testing.T) {
	mine := synProc(100, "alice", "python train.py", 40*oneGiB)
	bob := synProc(200, "bob", "python serve.py", 45*oneGiB)
	s := synSnap(synDev("0", synTotal, 85*oneGiB, mine, bob), synDev("1", synTotal, 50*oneGiB), synDev("2", synTotal, 5*oneGiB))
	as := Advise(s, Target{DeviceID: "0"}, Config{User: "alice"})
	ot := adviceOf(as, RuleOtherTenants)
	if ot == nil {
		t.Fatalf("no other_tenants advice: %+v", as)
	}
	g := remedyNamed(ot.Remedies, "use a freer GPU")
	if g == nil || !strings.Contains(g.How, "CUDA_VISIBLE_DEVICES=2") || g.SavingBytes != 45*oneGiB {
		t.Errorf("freer GPU remedy %+v", g)
	}
	// The near-full advice of the device gives alice's job's remedies, not bob's.
	th := adviceOf(as, RuleThreshold)
	if th == nil || !strings.Contains(th.Detail, "PID 100 (alice") {
		t.Errorf("threshold advice is not about alice's job: %+v", th)
	}
	fg := adviceOf(as, RuleFreerGPU)
	if fg == nil || len(fg.Remedies) != 1 || fg.Remedies[0].How != "CUDA_VISIBLE_DEVICES=2 python train.py" {
		t.Errorf("freer_gpu advice %+v", fg)
	}
	for i := 1; i < len(as); i++ {
		if as[i].Severity > as[i-1].Severity {
			t.Errorf("advice not most severe first: %v after %v", as[i].Severity, as[i-1].Severity)
		}
	}
}

func TestAdviseForAProcessLeavesOutOtherProcesses(t *testing.T) {
	leaky := withHistory(synProc(55, "alice", "python train.py", 0), time.Second, leakSeries())
	other := withHistory(synProc(66, "alice", "python train2.py", 0), time.Second, leakSeries())
	s := synSnap(synDev("0", synTotal, leaky.Used()+other.Used(), leaky, other))
	as := Advise(s, Target{DeviceID: "0", PID: 66}, Config{})
	if len(as) != 1 || as[0].Rule != RuleLeakSuspect || as[0].PID != 66 {
		t.Fatalf("advice for PID 66: %+v", as)
	}
	if r := remedyNamed(as[0].Remedies, "keep no memory alive"); r == nil || !strings.Contains(r.How, "loss.item()") {
		t.Errorf("leak advice without the habits: %+v", as[0].Remedies)
	}
	if len(Advise(s, Target{DeviceID: "0"}, Config{})) != 2 {
		t.Errorf("device advice should hold both leaks")
	}
	if Advise(s, Target{DeviceID: "0", PID: 999}, Config{}) != nil || Advise(s, Target{DeviceID: "7"}, Config{}) != nil {
		t.Error("advice for a target that does not exist")
	}
}

func TestMonitorAdviseIncludesIdleHolder(t *testing.T) {
	m := NewMonitor(Config{User: "alice"})
	var as []Advice
	for i := 0; i <= 30; i++ {
		p := synProc(77, "alice", "python -m ipykernel_launcher -f k.json", 9*oneGiB)
		p.UtilizationPercent = sampler.Ptr(0.0)
		s := synAt(synSnap(synDev("1", synTotal, 9*oneGiB, p)), synNow.Add(time.Duration(i)*time.Minute))
		as = m.Advise(s, Target{DeviceID: "1", PID: 77})
	}
	a := adviceOf(as, RuleIdleHolder)
	if a == nil {
		t.Fatalf("no idle advice after 30 min: %+v", as)
	}
	mustContain(t, "detail", a.Detail, "If you are done with it")
	if r := remedyNamed(a.Remedies, "return cached blocks"); r == nil || !strings.Contains(r.How, "torch.cuda.empty_cache()") {
		t.Errorf("remedies %+v", a.Remedies)
	}
	if Advise(synSnap(synDev("1", synTotal, 0)), Target{DeviceID: "1"}, Config{}) != nil {
		t.Error("advice for an idle card with nothing to say")
	}
}

func TestAdviseSpikeNamesTheShortfall(t *testing.T) {
	vals := synFlat(600, 20*oneGiB)
	vals[300] = 30 * oneGiB
	p := withHistory(synProc(31, "alice", "python train.py", 0), time.Second, vals)
	s := synSnap(synDev("0", synTotal, 96*oneGiB, p))
	a := adviceOf(Advise(s, Target{DeviceID: "0", PID: 31}, Config{}), RuleSpikeHeadroom)
	if a == nil || a.Shortfall != 6*oneGiB {
		t.Fatalf("spike advice %+v", a)
	}
	mustContain(t, "detail", a.Detail, "6 GiB more than is free")
	// 30% of 20 GiB (6 GiB) covers exactly the 6 GiB shortfall.
	if mp := remedyNamed(a.Remedies, "mixed precision"); mp == nil || !mp.Covers {
		t.Errorf("mixed precision covers the shortfall: %+v", mp)
	}
}

func TestAdviseTimeToFullPointsAtTheGrowth(t *testing.T) {
	grow := withHistory(synProc(7, "carol", "python serve.py", 0), time.Second, synRamp(601, 10*oneGiB, int64(oneGiB/60)))
	flat := withHistory(synProc(8, "dave", "python -m ipykernel_launcher", 0), time.Second, synFlat(601, 60*oneGiB))
	used := grow.Used() + flat.Used()
	d := synDev("1", synTotal, used, grow, flat)
	d.History = synSeries(synNow, time.Second, synRamp(601, used-10*oneGiB, int64(oneGiB/60)))
	s := synSnap(d, synDev("2", synTotal, 0))
	a := adviceOf(Advise(s, Target{DeviceID: "1"}, Config{User: "alice"}), RuleTimeToFull)
	if a == nil {
		t.Fatal("no time_to_full advice")
	}
	mustContain(t, "detail", a.Detail, "PID 7 (carol, python serve.py) grows the most", "leak")
	if remedyNamed(a.Remedies, "halve the batch size") != nil {
		t.Errorf("a smaller batch does not stop growth: %+v", a.Remedies)
	}
	if r := remedyNamed(a.Remedies, "keep no memory alive"); r == nil {
		t.Errorf("no habits against growth: %+v", a.Remedies)
	}
	// carol's job's tenants are dave's 60 GiB; the freest card is GPU 2.
	g := remedyNamed(a.Remedies, "use a freer GPU")
	if g == nil || g.How != "CUDA_VISIBLE_DEVICES=2 python serve.py" || g.SavingBytes != 60*oneGiB {
		t.Errorf("freer GPU remedy %+v", g)
	}
}

// An alert's JSON gives its ETA in seconds, as every duration in vramtop's
// JSON is.
func TestAlertJSONDurationsInSeconds(t *testing.T) {
	b, err := json.Marshal(Alert{Rule: "time_to_full", DeviceID: "0", Message: "full soon", ETA: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["eta_seconds"] != 90.0 || got["rule"] != "time_to_full" || got["device_id"] != "0" {
		t.Errorf("alert JSON %s: want eta_seconds 90 beside the other fields", b)
	}
	if _, ok := got["eta"]; ok {
		t.Errorf("alert JSON %s still has eta in nanoseconds", b)
	}
}

// Advise returns the advice for a target in snap, most severe first: every
// rule firing on the device (for a process: those about it and those about
// its device), each with its remedies. It is stateless: the threshold has no
// hysteresis and idle_holder, which needs time, is left out (Monitor.Advise
// has both).
func Advise(snap sampler.Snapshot, t Target, cfg Config) []Advice {
	cfg = cfg.WithDefaults()
	only := -1
	for i := range snap.Devices {
		if snap.Devices[i].ID == t.DeviceID {
			only = i
		}
	}
	if only < 0 {
		return nil
	}
	fs, _ := evaluate(&snap, cfg, nil, nil, only)
	return advise(&snap, t, cfg, fs)
}
