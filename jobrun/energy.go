package jobrun

import (
	"fmt"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Energy is what one GPU drew while the job ran, and the job's share of it.
type Energy struct {
	// Joules is the GPU's energy from From to To, also in KWh.
	Joules float64 `json:"joules"`
	KWh    float64 `json:"kwh"`
	// Method says where it comes from: "counter" (the GPU's total-energy
	// counter, NVML's nvmlDeviceGetTotalEnergyConsumption) or "power"
	// (its power readings integrated by trapezoids, where it has no
	// counter).
	Method string `json:"method"`
	// From and To are the first and last readings; Seconds between them.
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Seconds float64   `json:"seconds"`
	// AverageWatts is Joules over Seconds.
	AverageWatts float64 `json:"average_watts"`
	// JobJoules (JobKWh) is the job's share: all of it where no other
	// process was on the GPU, else each stretch's energy times the job's
	// share of that stretch, by JobShareBy.
	JobJoules   float64 `json:"job_joules"`
	JobKWh      float64 `json:"job_kwh"`
	JobFraction float64 `json:"job_fraction"`
	// JobShareBy is "alone" (no other process on the GPU), "utilization"
	// (the job's share of its processes' SM utilization), "memory" (its
	// share of their memory, where utilization was unknown), or
	// "utilization and memory" (memory where utilization was unknown).
	JobShareBy string `json:"job_share_by"`
	// CounterResets counts the times the counter went back (a driver
	// reload or GPU reset): the stretch across each is from the power.
	CounterResets int `json:"counter_resets,omitempty"`
}

// energyMeter follows one GPU's energy over the job, one snapshot at a time.
type energyMeter struct {
	// The counter: its readings (mJ) and when each was first seen (a
	// reading is carried between the gauges' reads; its first snapshot is
	// when it was read).
	hasCounter       bool
	counterFirstAt   time.Time
	counterLast      uint64
	counterLastAt    time.Time
	counterMJ        float64 // counted since the first reading
	counterJobMJ     float64
	resets, counterN int
	// powerAtCounter is powerJ at the last counter reading, for a reset.
	powerAtCounter float64

	// The power: trapezoids between successive snapshots.
	hasPower          bool
	lastPower         float64
	powerFirstAt      time.Time
	powerLastAt       time.Time
	powerJ, powerJobJ float64
	powerN            int

	// share is the job's share accumulated (share × seconds) since the
	// last counter reading, over shareSecs.
	shareSum, shareSecs float64
	lastAt              time.Time
	lastShare           float64
	// How the stretches were shared.
	others, byUtil, byMem bool

	err string
}

// share is the job's share of a GPU at one snapshot: by its processes'
// SM utilization where any is known above 0, else by their memory. A GPU
// that nobody holds is the job's (it is the one running).
//
// A process that was ever the job's counts as the job's while the GPU
// still lists it (a zombie about to be reaped, a list read before its exit).
func share(d sampler.Device, members map[int]bool) (s float64, others bool, by string) {
	var jobU, allU float64
	var jobB, allB uint64
	for _, p := range d.Processes {
		if p.Exited {
			continue
		}
		_, in := members[int(p.PID)]
		if !in {
			others = true
		}
		if p.UtilizationPercent != nil {
			allU += *p.UtilizationPercent
			if in {
				jobU += *p.UtilizationPercent
			}
		}
		allB += p.Used()
		if in {
			jobB += p.Used()
		}
	}
	switch {
	case !others:
		return 1, false, ""
	case allU > 0:
		return jobU / allU, true, "utilization"
	case allB > 0:
		return float64(jobB) / float64(allB), true, "memory"
	}
	return 0, true, "memory"
}

// observe takes the GPU's readings at snapshot time t.
func (m *energyMeter) observe(t time.Time, d sampler.Device, members map[int]bool) {
	s, others, by := share(d, members)
	m.others = m.others || others
	m.byUtil = m.byUtil || by == "utilization"
	m.byMem = m.byMem || by == "memory"
	// The stretch since the last snapshot counts at the mean of its ends'
	// shares.
	prevShare := m.lastShare
	if !m.lastAt.IsZero() && t.After(m.lastAt) {
		dt := t.Sub(m.lastAt).Seconds()
		m.shareSum += (prevShare + s) / 2 * dt
		m.shareSecs += dt
	}
	m.lastAt, m.lastShare = t, s

	if d.PowerWatts != nil {
		p := *d.PowerWatts
		if m.hasPower && t.After(m.powerLastAt) {
			e := (m.lastPower + p) / 2 * t.Sub(m.powerLastAt).Seconds()
			m.powerJ += e
			m.powerJobJ += e * (prevShare + s) / 2
		}
		if !m.hasPower {
			m.powerFirstAt = t
		}
		m.hasPower, m.lastPower, m.powerLastAt = true, p, t
		m.powerN++
	}

	if d.EnergyError != "" {
		m.err = d.EnergyError
	}
	if d.EnergyMillijoules == nil {
		return
	}
	e := *d.EnergyMillijoules
	switch {
	case !m.hasCounter:
		m.hasCounter, m.counterFirstAt = true, t
	case e == m.counterLast:
		return // the same reading, carried
	default:
		mean := s
		if m.shareSecs > 0 {
			mean = m.shareSum / m.shareSecs
		}
		var de float64
		if e > m.counterLast {
			de = float64(e - m.counterLast)
		} else {
			// The counter went back: a driver reload or GPU reset (it
			// cannot wrap in a GPU's life). The stretch is from the power.
			m.resets++
			de = (m.powerJ - m.powerAtCounter) * 1000
		}
		m.counterMJ += de
		m.counterJobMJ += de * mean
	}
	m.counterLast, m.counterLastAt, m.powerAtCounter = e, t, m.powerJ
	m.counterN++
	m.shareSum, m.shareSecs = 0, 0
}

// energy is the GPU's energy over the job, or why it is unknown.
func (m *energyMeter) energy() (*Energy, string) {
	var e Energy
	var jobJ float64
	switch {
	case m.counterN >= 2:
		e = Energy{Method: "counter", From: m.counterFirstAt, To: m.counterLastAt, Joules: m.counterMJ / 1000, CounterResets: m.resets}
		jobJ = m.counterJobMJ / 1000
	case m.err != "":
		return nil, "energy unknown: " + m.err
	case m.powerN >= 2 && m.powerLastAt.After(m.powerFirstAt):
		e = Energy{Method: "power", From: m.powerFirstAt, To: m.powerLastAt, Joules: m.powerJ}
		jobJ = m.powerJobJ
	case m.powerN > 0 || m.counterN > 0:
		return nil, "energy unknown: the job ended before a second reading of the GPU's power"
	default:
		return nil, "energy unknown: the GPU reports neither an energy counter nor its power"
	}
	e.Seconds = e.To.Sub(e.From).Seconds()
	if e.Seconds > 0 {
		e.AverageWatts = e.Joules / e.Seconds
	}
	e.JobShareBy = "alone"
	switch {
	case !m.others:
		jobJ = e.Joules
	case m.byUtil && m.byMem:
		e.JobShareBy = "utilization and memory"
	case m.byUtil:
		e.JobShareBy = "utilization"
	default:
		e.JobShareBy = "memory"
	}
	e.JobJoules = min(max(jobJ, 0), e.Joules)
	if e.Joules > 0 {
		e.JobFraction = e.JobJoules / e.Joules
	}
	e.KWh, e.JobKWh = e.Joules/3.6e6, e.JobJoules/3.6e6
	return &e, ""
}

// text is the report's lines for e (or why it is unknown).
func energyText(e *Energy, unknown string) string {
	if e == nil {
		return "  " + unknown + "\n"
	}
	src := "from the GPU's energy counter"
	if e.Method == "power" {
		src = "its power readings integrated (the GPU has no energy counter)"
	}
	s := fmt.Sprintf("  energy: %s over %.1f s (average %.0f W), %s\n", joules(e.Joules, e.KWh), e.Seconds, e.AverageWatts, src)
	if e.CounterResets > 0 {
		s += fmt.Sprintf("  the energy counter went back %d time(s) (a driver reload or GPU reset?): those stretches are from the power\n", e.CounterResets)
	}
	switch e.JobShareBy {
	case "alone":
		s += "  the job's share: all of it (no other process on the GPU)\n"
	case "utilization":
		s += fmt.Sprintf("  the job's share: %s (%.0f%%, by its share of the processes' SM utilization)\n", joules(e.JobJoules, e.JobKWh), e.JobFraction*100)
	case "memory":
		s += fmt.Sprintf("  the job's share: %s (%.0f%%, by its share of the processes' memory: their utilization was unknown)\n", joules(e.JobJoules, e.JobKWh), e.JobFraction*100)
	default:
		s += fmt.Sprintf("  the job's share: %s (%.0f%%, by its share of SM utilization, of memory where that was unknown)\n", joules(e.JobJoules, e.JobKWh), e.JobFraction*100)
	}
	return s
}

// joules writes an energy in J and kWh: "12410 J (0.003447 kWh)".
func joules(j, kwh float64) string {
	return fmt.Sprintf("%.0f J (%.6f kWh)", j, kwh)
}
