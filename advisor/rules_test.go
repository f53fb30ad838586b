package advisor

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

const synTotal = 100 * oneGiB

func TestThresholdBoundaries(t *testing.T) {
	cases := []struct {
		name   string
		th     Thresholds
		used   uint64
		want   Severity
		firing bool
	}{
		{"exactly at warn", Thresholds{80, 90}, 80 * oneGiB, Warn, true},
		{"one byte below warn", Thresholds{80, 90}, 80*oneGiB - 1, 0, false},
		{"exactly at crit", Thresholds{80, 90}, 90 * oneGiB, Crit, true},
		{"one byte below crit", Thresholds{80, 90}, 90*oneGiB - 1, Warn, true},
		{"full", Thresholds{80, 90}, synTotal, Crit, true},
		{"idle", Thresholds{80, 90}, 0, 0, false},
		{"own lines: at 70", Thresholds{70, 95}, 70 * oneGiB, Warn, true},
		{"own lines: 94.9%", Thresholds{70, 95}, 95*oneGiB - 1, Warn, true},
		{"own lines: at 95", Thresholds{70, 95}, 95 * oneGiB, Crit, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := synProc(4242, "alice", "/usr/bin/python3 /home/alice/train.py --lr 3e-4", c.used/2)
			s := synSnap(synDev("0", synTotal, c.used, p))
			got := alertsOf(observeOnce(Config{Thresholds: c.th}, s), RuleThreshold)
			if !c.firing {
				if len(got) != 0 {
					t.Fatalf("threshold fired at %d bytes: %+v", c.used, got)
				}
				return
			}
			if len(got) != 1 || got[0].Severity != c.want {
				t.Fatalf("want one %v threshold alert, got %+v", c.want, got)
			}
			mustContain(t, "message", got[0].Message, "GPU 0 at ", "over the", "PID 4242 (alice, python3 train.py)", FormatBytes(c.used/2))
			if got[0].Bytes != c.used || got[0].DeviceID != "0" || got[0].PID != 0 {
				t.Errorf("alert fields %+v", got[0])
			}
		})
	}
}

func TestThresholdHysteresis(t *testing.T) {
	m := NewMonitor(Config{Thresholds: Thresholds{80, 90}}) // hysteresis 2 points
	steps := []struct {
		used uint64
		want Severity
		on   bool
		say  string
	}{
		{79 * oneGiB, 0, false, ""},
		{80 * oneGiB, Warn, true, "over the 80% warning line"},
		{79 * oneGiB, Warn, true, "just under the 80% warning line (clears below 78%)"},
		{78 * oneGiB, Warn, true, "just under"}, // exactly 2 points below: still on
		{78*oneGiB - 1, 0, false, ""},           // clears
		{79 * oneGiB, 0, false, ""},             // no flapping back on below the line
		{90 * oneGiB, Crit, true, "over the 90% critical line"},
		{88 * oneGiB, Crit, true, "just under the 90% critical line"},
		{88*oneGiB - 1, Warn, true, "over the 80% warning line"}, // down to warn, not off
		{85 * oneGiB, Warn, true, ""},
		{90 * oneGiB, Crit, true, ""},
		{50 * oneGiB, 0, false, ""}, // straight from critical to clear
	}
	for i, st := range steps {
		now := synNow.Add(time.Duration(i) * time.Second)
		s := synAt(synSnap(synDev("0", synTotal, st.used)), now)
		got := alertsOf(m.Observe(s), RuleThreshold)
		if !st.on {
			if len(got) != 0 {
				t.Fatalf("step %d (%s used): want no threshold alert, got %+v", i, FormatBytes(st.used), got)
			}
			continue
		}
		if len(got) != 1 || got[0].Severity != st.want {
			t.Fatalf("step %d (%s used): want %v, got %+v", i, FormatBytes(st.used), st.want, got)
		}
		mustContain(t, "message", got[0].Message, st.say)
	}
}

func TestThresholdAdviseIsStatelessWithoutHysteresis(t *testing.T) {
	s := synSnap(synDev("0", synTotal, 79*oneGiB))
	for _, a := range Advise(s, Target{DeviceID: "0"}, Config{}) {
		if a.Rule == RuleThreshold {
			t.Fatalf("stateless advice under the line: %+v", a)
		}
	}
}

func TestAlertSinceIsKeptWhileFiring(t *testing.T) {
	m := NewMonitor(Config{})
	start := synNow
	for i := 0; i < 3; i++ {
		now := start.Add(time.Duration(i) * time.Minute)
		as := alertsOf(m.Observe(synAt(synSnap(synDev("0", synTotal, 85*oneGiB)), now)), RuleThreshold)
		if len(as) != 1 || !as[0].Since.Equal(start) {
			t.Fatalf("minute %d: want the alert firing since %v, got %+v", i, start, as)
		}
	}
	m.Observe(synAt(synSnap(synDev("0", synTotal, 10*oneGiB)), start.Add(4*time.Minute)))
	as := alertsOf(m.Observe(synAt(synSnap(synDev("0", synTotal, 85*oneGiB)), start.Add(5*time.Minute))), RuleThreshold)
	if len(as) != 1 || !as[0].Since.Equal(start.Add(5*time.Minute)) {
		t.Fatalf("a new episode should start anew: %+v", as)
	}
}

// trendDev is a GPU whose used memory follows vals (one sample per step).
func trendDev(step time.Duration, vals []uint64, procs ...sampler.Process) sampler.Device {
	d := synDev("0", synTotal, vals[len(vals)-1], procs...)
	d.History = synSeries(synNow, step, vals)
	return d
}

func TestTimeToFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(n int, level, amp uint64) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = level - amp + uint64(rng.Int64N(int64(2*amp)))
		}
		return out
	}
	step := append(synFlat(300, 30*oneGiB), synFlat(301, 60*oneGiB)...)
	cases := []struct {
		name string
		vals []uint64
		sev  Severity
		say  []string
	}{
		// 1 GiB a minute for 10 min, ending at 40 GiB used: 60 GiB free.
		{"steady climb", synRamp(601, 30*oneGiB, int64(oneGiB/60)), Warn, []string{"GPU 0 full in ~60 min at this rate (+1 GiB/min)"}},
		// 6 GiB a minute ending at 90 GiB: 10 GiB free, under 15 min.
		{"fast climb is critical", synRamp(601, 30*oneGiB, int64(6*oneGiB/60)), Crit, []string{"full in ~2 min", "(+6 GiB/min)"}},
		{"noisy flat history", noisy(601, 50*oneGiB, 2*oneGiB), -1, nil},
		{"falling", synRamp(601, 60*oneGiB, -int64(oneGiB/60)), -1, nil},
		{"flat", synFlat(601, 50*oneGiB), -1, nil},
		// 100 MiB in 10 min, 60 GiB free: ~100 h away, past the 2 h horizon.
		{"beyond the horizon", synRamp(601, 40*oneGiB, int64(100*oneMiB/600)), -1, nil},
		{"one step up is not a trend", step, -1, nil},
		{"two minutes of history is too short", synRamp(121, 30*oneGiB, int64(oneGiB/60)), -1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synSnap(trendDev(time.Second, c.vals))
			got := alertsOf(observeOnce(Config{}, s), RuleTimeToFull)
			if c.sev < 0 {
				if len(got) != 0 {
					t.Fatalf("want no forecast, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Severity != c.sev {
				t.Fatalf("want one %v forecast, got %+v", c.sev, got)
			}
			mustContain(t, "message", got[0].Message, c.say...)
		})
	}
}

func TestTimeToFullNamesTheGrowingProcess(t *testing.T) {
	grow := withHistory(synProc(7, "alice", "python train.py", 0), time.Second, synRamp(601, 10*oneGiB, int64(oneGiB/60)))
	flat := withHistory(synProc(8, "bob", "python serve.py", 0), time.Second, synFlat(601, 20*oneGiB))
	s := synSnap(trendDev(time.Second, synRamp(601, 30*oneGiB, int64(oneGiB/60)), grow, flat))
	got := alertsOf(observeOnce(Config{}, s), RuleTimeToFull)
	if len(got) != 1 {
		t.Fatalf("want a forecast, got %+v", got)
	}
	mustContain(t, "message", got[0].Message, "mostly PID 7 (alice, python train.py) (+1 GiB/min)")
	if strings.Contains(got[0].Message, "PID 8") {
		t.Errorf("the flat process is named: %q", got[0].Message)
	}
	if got[0].ETA < 59*time.Minute || got[0].ETA > 61*time.Minute || got[0].RatePerMin < 0.99*float64(oneGiB) {
		t.Errorf("ETA %v, rate %v", got[0].ETA, got[0].RatePerMin)
	}
}

func TestTimeToFullHysteresisOnFit(t *testing.T) {
	// A clean climb, then the same climb with noise that brings R² to
	// between 0.7 and 0.8: a firing forecast holds, a new one does not start.
	clean := synRamp(601, 30*oneGiB, int64(oneGiB/60))
	rng := rand.New(rand.NewPCG(3, 4))
	noisy := make([]uint64, len(clean))
	for i, v := range clean {
		noisy[i] = v - 11*oneGiB/4 + uint64(rng.Int64N(int64(11*oneGiB/2)))
	}
	f := fitLine(synSeries(synNow, time.Second, noisy), fitMaxPoints)
	if f.r2 < 0.7 || f.r2 >= 0.8 {
		t.Fatalf("test series has R² %.3f, want 0.7..0.8", f.r2)
	}
	m := NewMonitor(Config{})
	if len(alertsOf(m.Observe(synSnap(trendDev(time.Second, clean))), RuleTimeToFull)) != 1 {
		t.Fatal("clean climb: no forecast")
	}
	later := synAt(synSnap(trendDev(time.Second, noisy)), synNow)
	if len(alertsOf(m.Observe(later), RuleTimeToFull)) != 1 {
		t.Error("the firing forecast dropped on a little noise")
	}
	if len(alertsOf(observeOnce(Config{}, later), RuleTimeToFull)) != 0 {
		t.Error("a new forecast started on a weak fit")
	}
}

func TestSpikeHeadroom(t *testing.T) {
	// bob's job peaked at 30 GiB 5 min ago and sits at 20 GiB now.
	spiky := func(peakAgo time.Duration) []uint64 {
		vals := synFlat(1200, 20*oneGiB) // 20 min at 1 s
		vals[len(vals)-1-int(peakAgo/time.Second)] = 30 * oneGiB
		return vals
	}
	cases := []struct {
		name    string
		peakAgo time.Duration
		free    uint64
		fire    bool
	}{
		{"spike of 10 GiB, 5 GiB free", 5 * time.Minute, 5 * oneGiB, true},
		{"spike exactly the free memory fits", 5 * time.Minute, 10 * oneGiB, false},
		{"one byte less free", 5 * time.Minute, 10*oneGiB - 1, true},
		{"peak older than the window", 15 * time.Minute, 5 * oneGiB, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := withHistory(synProc(31, "bob", "python train.py", 0), time.Second, spiky(c.peakAgo))
			d := synDev("0", synTotal, synTotal-c.free, p)
			got := alertsOf(observeOnce(Config{}, synSnap(d)), RuleSpikeHeadroom)
			if !c.fire {
				if len(got) != 0 {
					t.Fatalf("want none, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Severity != Crit || got[0].PID != 31 || got[0].Bytes != 10*oneGiB {
				t.Fatalf("want a critical spike alert on PID 31, got %+v", got)
			}
			mustContain(t, "message", got[0].Message, "GPU 0: PID 31 (bob, python train.py) peaked at 30 GiB", "10 GiB above its 20 GiB now", "only "+FormatBytes(c.free)+" is free")
		})
	}
	t.Run("a spike below the floor is noise", func(t *testing.T) {
		vals := synFlat(600, 20*oneGiB)
		vals[300] = 20*oneGiB + 200*oneMiB
		p := withHistory(synProc(31, "bob", "python train.py", 0), time.Second, vals)
		d := synDev("0", synTotal, synTotal-100*oneMiB, p)
		if got := alertsOf(observeOnce(Config{}, synSnap(d)), RuleSpikeHeadroom); len(got) != 0 {
			t.Fatalf("want none, got %+v", got)
		}
	})
}

// leakSeries is 10 min at 1 s (+ a minute before) growing by 64 MiB every
// 30 s, with flat stretches between: 1.28 GiB over the window.
func leakSeries() []uint64 {
	vals := make([]uint64, 661)
	v := 10 * oneGiB
	for i := range vals {
		if i > 0 && i%30 == 0 {
			v += 64 * oneMiB
		}
		vals[i] = v
	}
	return vals
}

func TestLeakSuspect(t *testing.T) {
	withDrop := leakSeries()
	for i := 400; i < 420; i++ {
		withDrop[i] -= 32 * oneMiB // one brief dip (a freed buffer)
	}
	earlyOnly := leakSeries() // grows in the first half, then flat
	for i := 360; i < len(earlyOnly); i++ {
		earlyOnly[i] = earlyOnly[359]
	}
	slow := synRamp(661, 10*oneGiB, int64(oneMiB/4)) // 150 MiB in 10 min: under the floor
	cases := []struct {
		name string
		vals []uint64
		fire bool
	}{
		{"grows in steps with flat stretches", leakSeries(), true},
		{"a drop is not a leak", withDrop, false},
		{"growth that stops is not sustained", earlyOnly, false},
		{"growth under the floor", slow, false},
		{"flat", synFlat(661, 10*oneGiB), false},
		{"history shorter than the window", leakSeries()[400:], false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := withHistory(synProc(55, "alice", "python train.py", 0), time.Second, c.vals)
			d := synDev("0", synTotal, 40*oneGiB, p)
			got := alertsOf(observeOnce(Config{}, synSnap(d)), RuleLeakSuspect)
			if !c.fire {
				if len(got) != 0 {
					t.Fatalf("want none, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].PID != 55 || got[0].Severity != Warn {
				t.Fatalf("want a leak alert on PID 55, got %+v", got)
			}
			// 20 steps of 64 MiB in the window: 1.25 GiB over 10 min.
			mustContain(t, "message", got[0].Message, "GPU 0: PID 55 (alice, python train.py) only grew over the last 10 min", "(+128 MiB/min)")
			if got[0].Bytes != 20*64*oneMiB {
				t.Errorf("growth %s, want 1.25 GiB", FormatBytes(got[0].Bytes))
			}
			// 60 GiB free at 128 MiB/min is 8 h: no time to full in the message.
			if got[0].ETA != 0 || strings.Contains(got[0].Message, "full in") {
				t.Errorf("ETA given beyond the horizon: %+v", got[0])
			}
		})
	}
	t.Run("a leak that fills the card says when", func(t *testing.T) {
		p := withHistory(synProc(55, "alice", "python train.py", 0), time.Second, leakSeries())
		d := synDev("0", synTotal, synTotal-2*oneGiB, p)
		got := alertsOf(observeOnce(Config{}, synSnap(d)), RuleLeakSuspect)
		if len(got) != 1 {
			t.Fatalf("want a leak alert, got %+v", got)
		}
		mustContain(t, "message", got[0].Message, "at this rate GPU 0 is full in ~16 min")
	})
}

func TestOtherTenants(t *testing.T) {
	mine := synProc(100, "alice", "python train.py", 40*oneGiB)
	bob := synProc(200, "bob", "python serve.py", 30*oneGiB)
	small := synProc(300, "carol", "Xorg", oneGiB-1) // under the 1 GiB floor
	hidden := synProc(400, "", "", 2*oneGiB)
	hidden.Visible = false
	cases := []struct {
		name  string
		user  string
		procs []sampler.Process
		used  uint64
		want  []string
		n     uint64
	}{
		{"bob beside alice", "alice", []sampler.Process{mine, bob, small}, 72 * oneGiB,
			[]string{"GPU 0: 1 process of other users holds 30 GiB beside yours: PID 200 (bob, python serve.py) 30 GiB"}, 30 * oneGiB},
		{"a process of another namespace counts", "alice", []sampler.Process{mine, bob, hidden}, 72 * oneGiB,
			[]string{"2 processes of other users hold 32 GiB", "PID 400 (not visible here"}, 32 * oneGiB},
		{"alice has nothing here", "alice", []sampler.Process{bob}, 30 * oneGiB, nil, 0},
		{"user unknown", "", []sampler.Process{mine, bob}, 70 * oneGiB, nil, 0},
		{"only small ones", "alice", []sampler.Process{mine, small}, 41 * oneGiB, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synSnap(synDev("0", synTotal, c.used, c.procs...))
			got := alertsOf(observeOnce(Config{User: c.user}, s), RuleOtherTenants)
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("want none, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Bytes != c.n {
				t.Fatalf("want one alert of %s, got %+v", FormatBytes(c.n), got)
			}
			mustContain(t, "message", got[0].Message, c.want...)
			if strings.Contains(got[0].Message, "carol") {
				t.Errorf("a process under the floor is named: %q", got[0].Message)
			}
		})
	}
}

func TestUnattributed(t *testing.T) {
	for _, c := range []struct {
		un   uint64
		fire bool
	}{{oneGiB, true}, {oneGiB - 1, false}, {12 * oneGiB, true}} {
		p := synProc(1, "alice", "python train.py", 20*oneGiB)
		s := synSnap(synDev("0", synTotal, 20*oneGiB+c.un, p))
		got := alertsOf(observeOnce(Config{}, s), RuleUnattributed)
		if c.fire != (len(got) == 1) {
			t.Fatalf("%s unattributed: got %+v", FormatBytes(c.un), got)
		}
		if c.fire {
			mustContain(t, "message", got[0].Message, "GPU 0: "+FormatBytes(c.un)+" used by no process visible here", "other containers or PID namespaces")
		}
	}
	t.Run("unknown process use gives no figure", func(t *testing.T) {
		d := synDev("0", synTotal, 50*oneGiB)
		d.Unattributed = nil
		if got := alertsOf(observeOnce(Config{}, synSnap(d)), RuleUnattributed); len(got) != 0 {
			t.Fatalf("got %+v", got)
		}
	})
}

func TestIdleHolder(t *testing.T) {
	run := func(util func(min int) *float64, devUtil *float64, used uint64, minutes int) []Alert {
		m := NewMonitor(Config{})
		var last []Alert
		for i := 0; i <= minutes; i++ {
			p := synProc(77, "dave", "/opt/conda/bin/jupyter-lab", used)
			p.UtilizationPercent = util(i)
			d := synDev("1", synTotal, used, p)
			d.UtilizationPercent = devUtil
			last = alertsOf(m.Observe(synAt(synSnap(d), synNow.Add(time.Duration(i)*time.Minute))), RuleIdleHolder)
		}
		return last
	}
	zero := func(int) *float64 { return sampler.Ptr(0.0) }
	if got := run(zero, nil, 20*oneGiB, 29); len(got) != 0 {
		t.Errorf("idle 29 min: %+v", got)
	}
	got := run(zero, nil, 20*oneGiB, 30)
	if len(got) != 1 || got[0].PID != 77 || got[0].Severity != Info {
		t.Fatalf("idle 30 min: want an idle_holder alert, got %+v", got)
	}
	mustContain(t, "message", got[0].Message, "GPU 1: PID 77 (dave, jupyter-lab) has held 20 GiB at 0% utilization for 30 min")
	busyAt10 := func(m int) *float64 {
		if m == 10 {
			return sampler.Ptr(35.0)
		}
		return sampler.Ptr(0.0)
	}
	if got := run(busyAt10, nil, 20*oneGiB, 35); len(got) != 0 {
		t.Errorf("busy at minute 10, idle 25 min since: %+v", got)
	}
	unknown := func(int) *float64 { return nil }
	if got := run(unknown, nil, 20*oneGiB, 60); len(got) != 0 {
		t.Errorf("utilization unknown: %+v", got)
	}
	if got := run(unknown, sampler.Ptr(0.0), 20*oneGiB, 30); len(got) != 1 {
		t.Errorf("an idle GPU idles its processes: %+v", got)
	}
	if got := run(zero, nil, 2*oneGiB-1, 60); len(got) != 0 {
		t.Errorf("holding under 2 GiB: %+v", got)
	}
	if got := run(func(int) *float64 { return sampler.Ptr(1.5) }, nil, 20*oneGiB, 60); len(got) != 0 {
		t.Errorf("1.5%% is not idle: %+v", got)
	}
}

func TestFreerGPU(t *testing.T) {
	mig := synDev("3", synTotal, 0)
	mig.MIGEnabled = true
	failed := synDev("4", synTotal, 0)
	failed.Err = "GPU is lost"
	cases := []struct {
		name string
		devs []sampler.Device
		want string
	}{
		{"GPU 2 is the freest", []sampler.Device{synDev("0", synTotal, 92*oneGiB), synDev("1", synTotal, 60*oneGiB), synDev("2", synTotal, 10*oneGiB)},
			"GPU 0 is 92% full; GPU 2 has 90 GiB free (8 GiB here): CUDA_VISIBLE_DEVICES=2"},
		{"not much freer", []sampler.Device{synDev("0", synTotal, 92*oneGiB), synDev("1", synTotal, 85*oneGiB)}, ""},
		{"not near full", []sampler.Device{synDev("0", synTotal, 70*oneGiB), synDev("1", synTotal, 0)}, ""},
		{"MIG parents and failed GPUs are not offered", []sampler.Device{synDev("0", synTotal, 92*oneGiB), mig, failed}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := alertsOf(observeOnce(Config{}, synSnap(c.devs...)), RuleFreerGPU)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("want none, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].DeviceID != "0" || got[0].Suggest != "2" {
				t.Fatalf("got %+v", got)
			}
			mustContain(t, "message", got[0].Message, c.want)
		})
	}
}

func TestAlertsMostSevereFirst(t *testing.T) {
	mine := synProc(100, "alice", "python train.py", 40*oneGiB)
	bob := synProc(200, "bob", "python serve.py", 52*oneGiB)
	s := synSnap(synDev("0", synTotal, 95*oneGiB, mine, bob), synDev("1", synTotal, 83*oneGiB), synDev("2", synTotal, 0))
	got := observeOnce(Config{User: "alice"}, s)
	if len(got) < 4 {
		t.Fatalf("want several alerts, got %+v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Severity > got[i-1].Severity {
			t.Fatalf("alert %d (%s %v) after a less severe one (%s %v)", i, got[i].Rule, got[i].Severity, got[i-1].Rule, got[i-1].Severity)
		}
	}
	if got[0].Rule != RuleThreshold || got[0].Severity != Crit || got[0].DeviceID != "0" {
		t.Errorf("first alert %+v, want GPU 0's critical threshold", got[0])
	}
}

func TestRulesSkipMIGParentsAndFailedDevices(t *testing.T) {
	parent := synDev("0", synTotal, 99*oneGiB)
	parent.MIGEnabled = true
	lost := synDev("1", synTotal, 99*oneGiB)
	lost.Err = "GPU is lost"
	listFailed := synDev("2", synTotal, 99*oneGiB)
	listFailed.Err = "process list: insufficient permissions"
	got := observeOnce(Config{}, synSnap(parent, lost, listFailed))
	for _, a := range got {
		if a.DeviceID != "2" {
			t.Errorf("alert on a MIG parent or a lost GPU: %+v", a)
		}
	}
	if len(alertsOf(got, RuleThreshold)) != 1 {
		t.Errorf("a GPU whose process list failed still has its memory checked: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	if err := (Config{Thresholds: Thresholds{90, 80}}).Validate(); err == nil || !strings.Contains(err.Error(), "warn < crit") {
		t.Errorf("warn above crit: %v", err)
	}
	if err := (Config{LeakWindow: -time.Minute}).Validate(); err == nil {
		t.Error("negative window accepted")
	}
	c := Config{LeakWindow: 5 * time.Minute}.WithDefaults()
	if c.LeakWindow != 5*time.Minute || c.TrendWindow != 10*time.Minute || c.Thresholds != DefaultThresholds() {
		t.Errorf("WithDefaults: %+v", c)
	}
}

func TestThresholdHoldsARecentPeak(t *testing.T) {
	// 77% now; 95% for one sample some seconds ago.
	spike := func(ago int) sampler.Device {
		vals := synFlat(120, 77*oneGiB)
		vals[len(vals)-1-ago] = 95 * oneGiB
		d := synDev("0", synTotal, 77*oneGiB)
		d.History = synSeries(synNow, time.Second, vals)
		return d
	}
	got := alertsOf(observeOnce(Config{}, synSnap(spike(20))), RuleThreshold)
	if len(got) != 1 || got[0].Severity != Crit {
		t.Fatalf("a 95%% peak 20 s ago: want critical, got %+v", got)
	}
	mustContain(t, "message", got[0].Message, "GPU 0 at 77% (77 GiB of 100 GiB used), peaked at 95% 20 s ago, over the 90% critical line")
	if got := alertsOf(observeOnce(Config{}, synSnap(spike(61))), RuleThreshold); len(got) != 0 {
		t.Errorf("a peak older than the hold time: %+v", got)
	}
	if got := alertsOf(observeOnce(Config{HoldFor: 10 * time.Second}, synSnap(spike(20))), RuleThreshold); len(got) != 0 {
		t.Errorf("a peak older than a 10 s hold: %+v", got)
	}
}

func TestTimeToFullClearsWhenTheClimbLevelsOff(t *testing.T) {
	// 7 min of 6 GiB/min, then 3 min flat: the fit over 10 min is still
	// good, but the card stopped filling.
	vals := append(synRamp(420, 10*oneGiB, int64(oneGiB/10)), synFlat(181, 10*oneGiB+419*oneGiB/10)...)
	if f := fitLine(synSeries(synNow, time.Second, vals), fitMaxPoints); f.r2 < 0.8 {
		t.Fatalf("test series R² %.2f: want a fit the R² test alone accepts", f.r2)
	}
	if got := alertsOf(observeOnce(Config{}, synSnap(trendDev(time.Second, vals))), RuleTimeToFull); len(got) != 0 {
		t.Errorf("forecast after the climb stopped: %+v", got)
	}
}

func TestLeakAlertClearsAfterADrop(t *testing.T) {
	m := NewMonitor(Config{})
	leaking := withHistory(synProc(55, "alice", "python train.py", 0), time.Second, leakSeries())
	if got := alertsOf(m.Observe(synSnap(synDev("0", synTotal, 40*oneGiB, leaking))), RuleLeakSuspect); len(got) != 1 {
		t.Fatalf("no leak alert: %+v", got)
	}
	// Five seconds later the process freed 1 GiB: no longer a leak.
	vals := append(leakSeries()[5:], 0, 0, 0, 0, 0)
	for i := len(vals) - 5; i < len(vals); i++ {
		vals[i] = vals[len(vals)-6] - oneGiB
	}
	freed := withHistory(synProc(55, "alice", "python train.py", 0), time.Second, vals)
	s := synAt(synSnap(synDev("0", synTotal, 40*oneGiB, freed)), synNow)
	s.Time = synNow.Add(5 * time.Second)
	for i := range s.Devices[0].Processes {
		p := &s.Devices[0].Processes[i]
		p.History = synSeries(s.Time, time.Second, vals)
	}
	if got := alertsOf(m.Observe(s), RuleLeakSuspect); len(got) != 0 {
		t.Fatalf("the leak alert outlived a drop by 5 s: %+v", got)
	}
}
