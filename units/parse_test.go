package units

import (
	"testing"
	"time"
)

func TestParsePercent(t *testing.T) {
	for s, want := range map[string]float64{"80": 80, "80%": 80, " 80.5 % ": 80.5, "0.8": 0.8, "100%": 100} {
		if got, err := ParsePercent(s); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "%", "abc", "80%%", "0x50", "1e2", "NaN", "Inf", "80 percent"} {
		if _, err := ParsePercent(s); err != ErrPercent {
			t.Errorf("ParsePercent(%q): %v, want ErrPercent", s, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	day := 24 * time.Hour
	for s, want := range map[string]time.Duration{
		"1d": day, "7d": 7 * day, "1d12h": day + 12*time.Hour, "1.5d": day + 12*time.Hour,
		"90s": 90 * time.Second, "500ms": 500 * time.Millisecond, "2h30m": 150 * time.Minute, "0d": 0, "-10m": -10 * time.Minute,
	} {
		if got, err := ParseDuration(s); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "1", "abc", "1dd", "d1h", "1d-1h", "1x", "1e3d", "99999999d", "1d+2h"} {
		if _, err := ParseDuration(s); err != ErrDuration {
			t.Errorf("ParseDuration(%q): %v, want ErrDuration", s, err)
		}
	}
}
