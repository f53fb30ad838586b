package jobrun

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

var eT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// gpuAt is a GPU at one snapshot: its power, its counter (nil: none), and
// the job (pid 1) and another process (pid 2, when otherUtil >= 0).
func gpuAt(watts float64, counter *uint64, jobUtil, otherUtil float64) sampler.Device {
	d := sampler.Device{ID: "0", PowerWatts: sampler.Ptr(watts), EnergyMillijoules: counter}
	d.Processes = append(d.Processes, sampler.Process{PID: 1, UsedBytes: sampler.Ptr(uint64(gib)), UtilizationPercent: sampler.Ptr(jobUtil)})
	if otherUtil >= 0 {
		d.Processes = append(d.Processes, sampler.Process{PID: 2, UsedBytes: sampler.Ptr(uint64(3 * gib)), UtilizationPercent: sampler.Ptr(otherUtil)})
	}
	return d
}

var jobMembers = map[int]bool{1: true}

// The counter's difference is the energy; the job's share is each
// stretch's energy times its share of utilization there.
func TestEnergyFromCounterSharedByUtilization(t *testing.T) {
	var m energyMeter
	c := uint64(7_000_000_000)
	for i := 0; i <= 10; i++ {
		// 400 W for 10 s; the job has 25% of the utilization for the
		// first 5 s, 75% for the last 5; the counter is read every
		// second, the snapshots 4 a second carry it.
		for q := 0; q < 4 && !(i == 10 && q > 0); q++ {
			at := eT0.Add(time.Duration(i)*time.Second + time.Duration(q)*250*time.Millisecond)
			ju, ou := 20.0, 60.0
			if at.Sub(eT0) > 5*time.Second {
				ju, ou = 60, 20
			}
			m.observe(at, gpuAt(400, sampler.Ptr(c), ju, ou), jobMembers)
		}
		c += 400_000
	}
	e, unknown := m.energy()
	if e == nil {
		t.Fatal(unknown)
	}
	if e.Method != "counter" || e.Joules != 4000 || e.Seconds != 10 || e.AverageWatts != 400 || math.Abs(e.KWh-4000/3.6e6) > 1e-12 {
		t.Errorf("energy %+v, want 4000 J over 10 s from the counter", e)
	}
	// 5 s at 25% and 5 s at 75% (the stretch across 5 s is half each).
	if math.Abs(e.JobJoules-2000) > 60 || e.JobShareBy != "utilization" {
		t.Errorf("job's share %.0f J by %s, want about 2000 J by utilization", e.JobJoules, e.JobShareBy)
	}
	txt := energyText(e, unknown)
	for _, want := range []string{"4000 J (0.001111 kWh) over 10.0 s", "average 400 W", "energy counter", "by its share of the processes' SM utilization"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text %q lacks %q", txt, want)
		}
	}
}

// Without a counter the power is integrated by trapezoids, and the report
// says so; alone on the GPU the job's share is all of it.
func TestEnergyFromPowerWhenNoCounter(t *testing.T) {
	var m energyMeter
	for i := 0; i <= 4; i++ {
		m.observe(eT0.Add(time.Duration(i)*time.Second), gpuAt(100+float64(i)*50, nil, 50, -1), jobMembers)
	}
	e, _ := m.energy()
	// 100, 150, 200, 250, 300 W a second apart: 125+175+225+275 J.
	if e == nil || e.Method != "power" || e.Joules != 800 || e.JobJoules != 800 || e.JobShareBy != "alone" {
		t.Fatalf("energy %+v, want 800 J from the power, all the job's", e)
	}
	txt := energyText(e, "")
	if !strings.Contains(txt, "power readings integrated (the GPU has no energy counter)") || !strings.Contains(txt, "all of it (no other process") {
		t.Errorf("text: %q", txt)
	}
}

// Utilization unknown: the share is by memory, and the report says so.
func TestEnergyShareByMemory(t *testing.T) {
	var m energyMeter
	for i := 0; i <= 2; i++ {
		d := gpuAt(200, sampler.Ptr(uint64(1e9+uint64(i)*200_000)), 0, 0)
		for j := range d.Processes {
			d.Processes[j].UtilizationPercent = nil
		}
		m.observe(eT0.Add(time.Duration(i)*time.Second), d, jobMembers)
	}
	e, _ := m.energy()
	if e == nil || e.JobShareBy != "memory" || math.Abs(e.JobJoules-100) > 1e-9 || math.Abs(e.JobFraction-0.25) > 1e-9 {
		t.Fatalf("energy %+v, want a quarter (1 GiB of 4) by memory", e)
	}
	if txt := energyText(e, ""); !strings.Contains(txt, "25%, by its share of the processes' memory: their utilization was unknown") {
		t.Errorf("text: %q", txt)
	}
}

// A counter that goes back (driver reload, GPU reset) is not read as a
// huge or negative energy: the stretch across is from the power.
func TestEnergyCounterReset(t *testing.T) {
	var m energyMeter
	for i, c := range []uint64{9_000_000_000, 9_000_300_000, 1_000, 301_000} {
		m.observe(eT0.Add(time.Duration(i)*time.Second), gpuAt(300, sampler.Ptr(c), 1, -1), jobMembers)
	}
	e, _ := m.energy()
	if e == nil || e.Method != "counter" || math.Abs(e.Joules-900) > 1e-9 || e.CounterResets != 1 {
		t.Fatalf("energy %+v, want 900 J (300 + 300 from the power + 300) and one reset", e)
	}
	if txt := energyText(e, ""); !strings.Contains(txt, "went back 1 time") {
		t.Errorf("text: %q", txt)
	}
}

// A counter whose reading fails throughout leaves that GPU's energy
// unknown, with the reason; a reading failing once between good ones
// costs nothing (the counter spans it).
func TestEnergyCounterFails(t *testing.T) {
	var bad, flaky energyMeter
	for i := 0; i <= 3; i++ {
		at := eT0.Add(time.Duration(i) * time.Second)
		d := gpuAt(300, nil, 1, -1)
		d.EnergyError = "reading the energy counter: no permission"
		bad.observe(at, d, jobMembers)
		f := gpuAt(300, sampler.Ptr(uint64(5e9+uint64(i)*300_000)), 1, -1)
		if i == 2 {
			f.EnergyMillijoules, f.EnergyError = nil, "reading the energy counter: unknown error"
		}
		flaky.observe(at, f, jobMembers)
	}
	if e, why := bad.energy(); e != nil || why != "energy unknown: reading the energy counter: no permission" {
		t.Errorf("failing counter: %+v %q", e, why)
	}
	if e, why := flaky.energy(); e == nil || e.Joules != 900 {
		t.Errorf("counter failing once: %+v %q, want 900 J", e, why)
	}
}

// In the report, a GPU whose energy is unknown says so; the others are
// reported, and the total sums those known.
func TestReportEnergyPerGPU(t *testing.T) {
	r := Report{Start: eT0, End: eT0.Add(time.Minute), Command: []string{"train"}, GPUs: []GPUReport{
		{ID: "0", Name: "A", EnergyUnknown: "energy unknown: reading the energy counter: no permission"},
		{ID: "1", Name: "B", Energy: &Energy{Joules: 3600, KWh: 0.001, Method: "counter", Seconds: 60, AverageWatts: 60, JobJoules: 3600, JobKWh: 0.001, JobShareBy: "alone"}},
	}, Energy: &EnergyTotal{Joules: 3600, KWh: 0.001, JobJoules: 3600, JobKWh: 0.001}}
	txt := r.Text(60)
	for _, want := range []string{"GPU 0 (A", "energy unknown: reading the energy counter: no permission", "energy: 3600 J (0.001000 kWh) over 60.0 s", "energy of those that report it: 3600 J (0.001000 kWh)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("report lacks %q:\n%s", want, txt)
		}
	}
}
