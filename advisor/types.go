package advisor

import (
	"encoding/json"
	"fmt"
	"time"
)

// Severity orders alerts and advice.
type Severity int

const (
	Info Severity = iota
	Warn
	Crit
)

// MarshalText writes the severity as its name ("warn") in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "info":
		*s = Info
	case "warn":
		*s = Warn
	case "crit":
		*s = Crit
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

func (s Severity) String() string {
	switch s {
	case Warn:
		return "warn"
	case Crit:
		return "crit"
	}
	return "info"
}

// The stable rule names (exported as Prometheus labels).
const (
	RuleThreshold     = "threshold"
	RuleTimeToFull    = "time_to_full"
	RuleSpikeHeadroom = "spike_headroom"
	RuleLeakSuspect   = "leak_suspect"
	RuleOtherTenants  = "other_tenants"
	RuleUnattributed  = "unattributed"
	RuleIdleHolder    = "idle_holder"
	RuleFreerGPU      = "freer_gpu"
	// RulePreallocation is advice only (no alert): a framework that
	// reserves most of the card up front (TensorFlow, JAX).
	RulePreallocation = "preallocation"
)

// Rules lists the alert rules in their display order (for equal severity).
// With the defaults of DefaultConfig:
//
//   - threshold (warn/crit): used ≥ 80% / 90% of the card, over the highest
//     reading of the last minute (a 300 ms spike holds it); clears 2 points
//     below the line. Names the largest process.
//   - time_to_full (warn; crit within 15 min): a least-squares line over
//     the last 10 min (at least 3 min of history, R² ≥ 0.8, the last third
//     still climbing at half the rate) reaches the free memory within 2 h.
//     Names the process that grows most.
//   - spike_headroom (crit): a process's peak of the last 10 min minus its
//     use now exceeds the free memory (and 256 MiB).
//   - leak_suspect (warn): a process whose memory never dropped over the
//     last 10 min, grew ≥ 256 MiB, and rose in 3 of its 4 quarters.
//   - other_tenants (info; warn over a line): processes of other users (or
//     of other PID namespaces) holding ≥ 1 GiB each on a GPU where the user
//     has a process. Needs Config.User.
//   - unattributed (info; warn over a line): ≥ 1 GiB used by no visible
//     process.
//   - idle_holder (info; warn over a line): a process holding ≥ 2 GiB at
//     ≤ 1% utilization (its own, else the GPU's) for 30 min. Monitor only.
//   - freer_gpu (info): a GPU over a line, and another of the same host with
//     twice its free memory and 8 GiB more: CUDA_VISIBLE_DEVICES=N.
var Rules = []string{
	RuleThreshold, RuleTimeToFull, RuleSpikeHeadroom, RuleLeakSuspect,
	RuleOtherTenants, RuleUnattributed, RuleIdleHolder, RuleFreerGPU,
}

// Alert is a rule firing on a device or a process. Rule names are stable
// (they are exported as Prometheus labels): "threshold", "time_to_full",
// "spike_headroom", "leak_suspect", "other_tenants", "unattributed",
// "idle_holder", "freer_gpu".
type Alert struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	DeviceID string   `json:"device_id"`
	// PID is the process the alert is about; 0 for a device-level alert.
	PID     uint32 `json:"pid,omitempty"`
	Message string `json:"message"`

	// Bytes is the amount the alert is about: used memory (threshold),
	// free memory (time_to_full), the spike that would not fit
	// (spike_headroom), the growth over the window (leak_suspect), what
	// other users hold (other_tenants), the unattributed memory, what the
	// idle process holds, what the freer GPU has free.
	Bytes uint64 `json:"bytes,omitempty"`
	// RatePerMin is the growth in bytes per minute (time_to_full,
	// leak_suspect).
	RatePerMin float64 `json:"rate_bytes_per_min,omitempty"`
	// ETA is the projected time until the GPU is full (time_to_full;
	// leak_suspect when the leak alone fills it within the horizon).
	// Its JSON form is eta_seconds (MarshalJSON).
	ETA time.Duration `json:"-"`
	// Suggest is the CUDA_VISIBLE_DEVICES value of a freer GPU (freer_gpu).
	Suggest string `json:"suggest,omitempty"`
	// Since is when the alert started firing (kept by Monitor; the
	// snapshot's time for a stateless evaluation).
	Since time.Time `json:"since"`
	// Reason says in a few words why a device-level alert is in force where
	// its reading alone does not show it: "peak 86.7% 19 s ago" (threshold
	// held by a recent peak), "clears below 78%" (hysteresis), "full in
	// 12 min" (time_to_full). Empty when the reading says it all.
	Reason string `json:"reason,omitempty"`
}

// MarshalJSON writes the alert with its ETA as eta_seconds, a number of
// seconds, as every duration in vramtop's JSON is.
func (a Alert) MarshalJSON() ([]byte, error) {
	type plain Alert
	out := struct {
		plain
		ETASeconds float64 `json:"eta_seconds,omitempty"`
	}{plain: plain(a), ETASeconds: a.ETA.Seconds()}
	return json.Marshal(out)
}

// DeviceState is a device's severity and why, where its reading alone does
// not show it.
type DeviceState struct {
	Severity Severity
	Reason   string
}

// DeviceSeverities is the severity of each device in alerts: that of its
// threshold or time_to_full alert, the more severe, with the alert's reason.
// A device missing from the map is Info. The row's tag, the bar's colour and
// the banner of a screen take it from here, so they agree.
func DeviceSeverities(alerts []Alert) map[string]DeviceState {
	out := map[string]DeviceState{}
	for i := range alerts {
		a := &alerts[i]
		if a.PID != 0 || a.Rule != RuleThreshold && a.Rule != RuleTimeToFull {
			continue
		}
		cur := out[a.DeviceID]
		if a.Severity > cur.Severity || a.Severity == cur.Severity && cur.Reason == "" {
			out[a.DeviceID] = DeviceState{a.Severity, a.Reason}
		}
	}
	return out
}

// Config holds the advisor's thresholds and windows. Zero fields take the
// defaults of DefaultConfig.
type Config struct {
	Thresholds Thresholds
	// User is the login name of whoever runs vramtop: "other users" are
	// everyone else. Empty: the other_tenants rule is off.
	User string

	// Hysteresis is how many percentage points below a threshold line the
	// used memory must fall before the alert clears (default 2).
	Hysteresis float64
	// HoldFor is how long a peak keeps the threshold in force (default
	// 1 min): a card that touches 95% for 300 ms every 30 s stays
	// critical, instead of flashing on and off.
	HoldFor time.Duration

	// TrendWindow is the history fitted for time_to_full (default 10 min);
	// TrendMinSpan the least history it needs (default 3 min); TrendMinR2
	// the least goodness of fit (default 0.8; a single step up fits at
	// most 0.75); TrendHorizon the longest projection reported (default
	// 2 h); TrendCrit the projection below which it is critical (default
	// 15 min).
	TrendWindow  time.Duration
	TrendMinSpan time.Duration
	TrendMinR2   float64
	TrendHorizon time.Duration
	TrendCrit    time.Duration

	// SpikeWindow is how far back a process's peak counts (default
	// 10 min); SpikeMin the least spike reported (default 256 MiB).
	SpikeWindow time.Duration
	SpikeMin    uint64

	// LeakWindow is how long a process's memory must only grow (default
	// 10 min); LeakMinGrowth the least growth over it (default 256 MiB).
	LeakWindow    time.Duration
	LeakMinGrowth uint64

	// TenantFloor is the least memory of another user's process reported
	// (default 1 GiB: a desktop's X server is not a tenant).
	TenantFloor uint64
	// UnattributedFloor is the least unattributed memory reported
	// (default 1 GiB).
	UnattributedFloor uint64

	// IdleMin is the least memory of an idle holder (default 2 GiB),
	// IdleMaxUtil the utilization percent at or below which a process is
	// idle (default 1), IdleFor how long before it is reported (default
	// 30 min).
	IdleMin     uint64
	IdleMaxUtil float64
	IdleFor     time.Duration

	// FreerMinExtra is how much more free memory another GPU must have, at
	// least twice as much as the near-full one too (default 8 GiB).
	FreerMinExtra uint64
}

// Binary units (named so as not to clash with the explainer's).
const (
	oneKiB = uint64(1) << 10
	oneMiB = uint64(1) << 20
	oneGiB = uint64(1) << 30
	oneTiB = uint64(1) << 40
)

// DefaultConfig returns the default thresholds and windows.
func DefaultConfig() Config {
	return Config{
		Thresholds:        DefaultThresholds(),
		Hysteresis:        2,
		HoldFor:           time.Minute,
		TrendWindow:       10 * time.Minute,
		TrendMinSpan:      3 * time.Minute,
		TrendMinR2:        0.8,
		TrendHorizon:      2 * time.Hour,
		TrendCrit:         15 * time.Minute,
		SpikeWindow:       10 * time.Minute,
		SpikeMin:          256 * oneMiB,
		LeakWindow:        10 * time.Minute,
		LeakMinGrowth:     256 * oneMiB,
		TenantFloor:       1 * oneGiB,
		UnattributedFloor: 1 * oneGiB,
		IdleMin:           2 * oneGiB,
		IdleMaxUtil:       1,
		IdleFor:           30 * time.Minute,
		FreerMinExtra:     8 * oneGiB,
	}
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Thresholds == (Thresholds{}) {
		c.Thresholds = d.Thresholds
	}
	setF := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setB := func(v *uint64, def uint64) {
		if *v == 0 {
			*v = def
		}
	}
	setF(&c.Hysteresis, d.Hysteresis)
	setD(&c.HoldFor, d.HoldFor)
	setD(&c.TrendWindow, d.TrendWindow)
	setD(&c.TrendMinSpan, d.TrendMinSpan)
	setF(&c.TrendMinR2, d.TrendMinR2)
	setD(&c.TrendHorizon, d.TrendHorizon)
	setD(&c.TrendCrit, d.TrendCrit)
	setD(&c.SpikeWindow, d.SpikeWindow)
	setB(&c.SpikeMin, d.SpikeMin)
	setD(&c.LeakWindow, d.LeakWindow)
	setB(&c.LeakMinGrowth, d.LeakMinGrowth)
	setB(&c.TenantFloor, d.TenantFloor)
	setB(&c.UnattributedFloor, d.UnattributedFloor)
	setB(&c.IdleMin, d.IdleMin)
	setF(&c.IdleMaxUtil, d.IdleMaxUtil)
	setD(&c.IdleFor, d.IdleFor)
	setB(&c.FreerMinExtra, d.FreerMinExtra)
	return c
}

// Validate checks the thresholds and that no window or floor is negative;
// call it on the configuration given by the user, before WithDefaults.
func (c Config) Validate() error {
	if c.Thresholds != (Thresholds{}) {
		if err := c.Thresholds.Validate(); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"hold time", c.HoldFor}, {"trend window", c.TrendWindow}, {"trend minimum span", c.TrendMinSpan},
		{"trend horizon", c.TrendHorizon}, {"trend critical time", c.TrendCrit},
		{"spike window", c.SpikeWindow}, {"leak window", c.LeakWindow}, {"idle time", c.IdleFor},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s %v is negative", d.name, d.v)
		}
	}
	if c.Hysteresis < 0 || c.IdleMaxUtil < 0 {
		return fmt.Errorf("hysteresis and idle utilization must not be negative")
	}
	if c.TrendMinR2 < 0 || c.TrendMinR2 > 1 {
		return fmt.Errorf("trend R² %g is outside 0..1", c.TrendMinR2)
	}
	return nil
}

// Target names what advice is asked for: a device, or a process on it.
type Target struct {
	DeviceID string
	PID      uint32 // 0: the device as a whole
}

// Advice is one piece of advice for a target, with remedies where they apply.
type Advice struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Title    string   `json:"title"`            // one line naming the GPU, process and numbers
	Detail   string   `json:"detail,omitempty"` // optional further explanation
	// PID is the process the advice is about; 0 for the device.
	PID uint32 `json:"pid,omitempty"`
	// Shortfall is the memory that would have to go for the situation to
	// clear (back under the warning line, room for the next spike); 0 when
	// not applicable. Remedies whose saving covers it are marked Covers and
	// listed first.
	Shortfall uint64           `json:"shortfall_bytes,omitempty"`
	Remedies  []RemedyEstimate `json:"remedies,omitempty"`
}

// RemedyEstimate is a remedy from the remediation table, with its saving
// translated into bytes for the process concerned where that is known.
type RemedyEstimate struct {
	Name string `json:"name"`
	// Saving is the expected saving in words, labelled as an estimate
	// ("~30% ≈ 21 GiB of 70 GiB (estimate)").
	Saving string `json:"saving"`
	// SavingBytes is the estimated saving in bytes; 0 when unknown.
	SavingBytes uint64 `json:"saving_bytes,omitempty"`
	Cost        string `json:"cost"`
	Effort      string `json:"effort,omitempty"`
	// How is the concrete step (a setting, a line of code).
	How string `json:"how,omitempty"`
	// Covers is true when the saving covers the shortfall at hand.
	Covers bool `json:"covers,omitempty"`
}
