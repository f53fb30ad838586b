package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
)

// demoRun drives the built-in demo with a fake clock: samples every 250 ms
// for the first 6 minutes (the spikes of GPU 0 last 200–400 ms), every
// second after; a Monitor (the user being the demo's "alice") sees a
// snapshot every 5 s. at is called at each checkpoint with the alerts.
func demoRun(t *testing.T, until time.Duration, at map[time.Duration]func(sampler.Snapshot, []Alert)) {
	t.Helper()
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	now := start
	s, err := sampler.New(demo.New(start), sampler.Config{Interval: 250 * time.Millisecond, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMonitor(Config{User: demo.User})
	var lastObs time.Duration = -time.Hour
	checked := map[time.Duration]bool{}
	for el := time.Duration(0); el <= until; {
		now = start.Add(el)
		snap, ok := s.Tick(now)
		check := at[el]
		if ok && (el-lastObs >= 5*time.Second || check != nil) {
			as := m.Observe(snap)
			lastObs = el
			if check != nil {
				check(snap, as)
				checked[el] = true
			}
		}
		if el < 6*time.Minute {
			el += 250 * time.Millisecond
		} else {
			el += time.Second
		}
	}
	// A checkpoint between two steps, or without a snapshot, would
	// otherwise check nothing and pass.
	for el := range at {
		if !checked[el] {
			t.Errorf("checkpoint %v was never reached", el)
		}
	}
}

func TestDemoRules(t *testing.T) {
	sawMIGParent := false
	checkAll := func(as []Alert) {
		for _, a := range as {
			if a.DeviceID == "3" {
				sawMIGParent = true
			}
			if !strings.Contains(a.Message, "GPU "+a.DeviceID) {
				t.Errorf("message does not name its GPU: %+v", a)
			}
		}
	}
	demoRun(t, 31*time.Minute, map[time.Duration]func(sampler.Snapshot, []Alert){
		// A minute in, before bob's job arrives: nothing but the memory
		// no visible process owns on GPU 2.
		time.Minute: func(_ sampler.Snapshot, as []Alert) {
			checkAll(as)
			if len(as) != 1 || as[0].Rule != RuleUnattributed || as[0].DeviceID != "2" || as[0].Bytes != 1536*oneMiB {
				t.Errorf("at 1 min want only GPU 2's 1.5 GiB unattributed, got %+v", as)
			}
		},
		5 * time.Minute: func(_ sampler.Snapshot, as []Alert) {
			checkAll(as)
			checkDemoAt5Min(t, as)
		},
		10 * time.Minute: func(_ sampler.Snapshot, as []Alert) {
			checkAll(as)
			lk := alertsOf(as, RuleLeakSuspect)
			if len(lk) != 1 || lk[0].PID != 30411 {
				t.Fatalf("carol's leak on GPU 1: %+v", lk)
			}
			if r := lk[0].RatePerMin / float64(oneMiB); r < 470 || r > 490 {
				t.Errorf("leak rate %.0f MiB/min, want 480", r)
			}
			if len(alertsOf(as, RuleIdleHolder)) != 0 {
				t.Errorf("idle after 10 min: %+v", alertsOf(as, RuleIdleHolder))
			}
		},
		31 * time.Minute: func(_ sampler.Snapshot, as []Alert) {
			checkAll(as)
			id := alertsOf(as, RuleIdleHolder)
			if len(id) != 1 || id[0].PID != 27182 || id[0].DeviceID != "1" {
				t.Fatalf("dave's idle kernel: %+v", id)
			}
			mustContain(t, "message", id[0].Message, "PID 27182 (dave, python ipykernel_launcher) has held 9.51 GiB at 0% utilization for 3")
		},
	})
	if sawMIGParent {
		t.Error("an alert on the MIG parent GPU 3")
	}
}

// checkDemoAt5Min checks the demo's alerts 5 minutes in: bob's job beside
// alice's, GPU 0 over its warning line, GPU 1 filling, no leak yet.
func checkDemoAt5Min(t *testing.T, as []Alert) {
	t.Helper()
	if ot := alertsOf(as, RuleOtherTenants); len(ot) != 1 || ot[0].DeviceID != "0" || !strings.Contains(ot[0].Message, "PID 52817 (bob, python eval.py)") {
		t.Errorf("bob's job beside alice's on GPU 0: %+v", ot)
	}
	// alice's evaluation spikes push GPU 0 over the warning line
	// every 30 s: the threshold holds between them.
	if th := alertsOf(as, RuleThreshold); len(th) != 1 || th[0].DeviceID != "0" || th[0].Severity < Warn {
		t.Errorf("GPU 0's threshold: %+v", th)
	} else {
		mustContain(t, "message", th[0].Message, "PID 41230 (alice, python train.py)")
	}
	var ttf []string
	for _, a := range alertsOf(as, RuleTimeToFull) {
		ttf = append(ttf, a.DeviceID)
		if a.DeviceID == "1" {
			mustContain(t, "message", a.Message, "GPU 1 full in ~", "(+480 MiB/min), mostly PID 30411 (carol, python serve.py)")
			if a.ETA < 80*time.Minute || a.ETA > 100*time.Minute {
				t.Errorf("GPU 1 fills 44 GiB at 480 MiB/min in ~94 min, said %v", a.ETA)
			}
		}
	}
	if strings.Join(ttf, ",") != "1" {
		t.Errorf("time_to_full on %v, want GPU 1 only (GPU 0's job has finished loading)", ttf)
	}
	if fg := alertsOf(as, RuleFreerGPU); len(fg) != 1 || fg[0].Suggest != "1" {
		t.Errorf("freer GPU for GPU 0: %+v", fg)
	}
	if len(alertsOf(as, RuleLeakSuspect)) != 0 {
		t.Errorf("a leak after 5 min of history: %+v", alertsOf(as, RuleLeakSuspect))
	}
}

func TestDemoAdviceForTheTrainingJob(t *testing.T) {
	demoRun(t, 5*time.Minute, map[time.Duration]func(sampler.Snapshot, []Alert){
		5 * time.Minute: func(snap sampler.Snapshot, _ []Alert) {
			as := Advise(snap, Target{DeviceID: "0", PID: 41230}, Config{User: demo.User})
			d, _ := snap.Device("0")
			var alice sampler.Process
			for _, p := range d.Processes {
				if p.PID == 41230 {
					alice = p
				}
			}
			ot := adviceOf(as, RuleOtherTenants)
			if ot == nil || remedyNamed(ot.Remedies, "use a freer GPU") == nil || !strings.Contains(remedyNamed(ot.Remedies, "use a freer GPU").How, "CUDA_VISIBLE_DEVICES=1") {
				t.Errorf("other tenants advice: %+v", ot)
			}
			// GPU 0 is over its warning line (held from the last spike): the
			// remedies are estimated on alice's own memory.
			var sized *Advice
			for i := range as {
				if remedyNamed(as[i].Remedies, "mixed precision") != nil {
					sized = &as[i]
				}
			}
			if sized == nil {
				t.Fatalf("no near-full advice with remedies on GPU 0: %+v", as)
			}
			mp := remedyNamed(sized.Remedies, "mixed precision")
			if want := uint64(float64(alice.Used()) * 0.3); mp.SavingBytes != want {
				t.Errorf("mixed precision saves %s, want 30%% of alice's %s", FormatBytes(mp.SavingBytes), FormatBytes(alice.Used()))
			}
			mustContain(t, "detail", sized.Detail, "PID 41230 (alice, python train.py), which trains a model")
		},
	})
}
