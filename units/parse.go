package units

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ErrPercent and ErrDuration are what ParsePercent and ParseDuration say
// of a value they cannot read: the form they take, in the user's words.
var (
	ErrPercent  = errors.New("want a percentage, as 80 or 80%")
	ErrDuration = errors.New("want a duration, as 500ms, 90s, 15m, 2h or 7d")
)

// ParsePercent reads a percentage: "80", "80%", "80.5 %".
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || t == "" || strings.ContainsAny(t, "xXpPeEiInN_") {
		// Not a hex float, an exponent, Inf or NaN: "a percentage".
		return 0, ErrPercent
	}
	return v, nil
}

// ParseDuration reads a duration as time.ParseDuration does, with days
// too: "1d", "7d", "1d12h", "1.5d". A day is 24 hours.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "-"), "+")
	var days float64
	if i := strings.IndexByte(t, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(t[:i], 64)
		if err != nil || i == 0 || strings.ContainsAny(t[:i], "xXpPeEiInN_+-") || n > 100000 {
			return 0, ErrDuration
		}
		days, t = n, t[i+1:]
	}
	var rest time.Duration
	if t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d < 0 || strings.HasPrefix(t, "+") {
			return 0, ErrDuration
		}
		rest = d
	} else if days == 0 && !strings.Contains(s, "d") {
		return 0, ErrDuration
	}
	d := time.Duration(days*float64(24*time.Hour)) + rest
	if neg {
		d = -d
	}
	return d, nil
}
