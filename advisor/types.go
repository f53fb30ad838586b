package advisor

import "github.com/vramtop/vramtop/sampler"

// Severity orders alerts and advice.
type Severity int

const (
	Info Severity = iota
	Warn
	Crit
)

func (s Severity) String() string {
	switch s {
	case Warn:
		return "warn"
	case Crit:
		return "crit"
	}
	return "info"
}

// Alert is a rule firing on a device or a process. Rule names are stable
// (they are exported as Prometheus labels): "threshold", "time_to_full",
// "spike_headroom", "leak_suspect", "other_tenants", "unattributed",
// "idle_holder", "freer_gpu".
type Alert struct {
	Rule     string
	Severity Severity
	DeviceID string
	// PID is the process the alert is about; 0 for a device-level alert.
	PID     uint32
	Message string
}

// Config holds the advisor's thresholds and windows.
type Config struct {
	Thresholds Thresholds
	// User is the login name of whoever runs vramtop: "other users" are
	// everyone else.
	User string
}

// Target names what advice is asked for: a device, or a process on it.
type Target struct {
	DeviceID string
	PID      uint32 // 0: the device as a whole
}

// Advice is one piece of advice for a target, with remedies where they apply.
type Advice struct {
	Rule     string
	Severity Severity
	Title    string // one line naming the GPU, process and numbers
	Detail   string // optional further explanation
	Remedies []RemedyEstimate
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

// Monitor keeps the state the rules need across snapshots (hysteresis).
type Monitor struct {
	cfg Config
}

// NewMonitor returns a monitor for cfg.
func NewMonitor(cfg Config) *Monitor { return &Monitor{cfg: cfg} }

// Observe evaluates every rule on snap and returns the alerts in force,
// most severe first. (Rules being built.)
func (m *Monitor) Observe(snap sampler.Snapshot) []Alert { return nil }

// Advise returns the advice for a target in snap. (Being built.)
func Advise(snap sampler.Snapshot, t Target, cfg Config) []Advice { return nil }
