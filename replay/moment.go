package replay

import (
	"fmt"
	"github.com/vramtop/vramtop/units"
	"strings"
	"time"
)

// ParseMoment reads a moment of the recording, as --at takes it:
//
//   - an RFC 3339 time: "2026-03-14T03:12:00+01:00"
//   - a date and clock time in the recording's time zone: "2026-03-14 03:12:00"
//   - a clock time on the recording's day: "03:12", "03:12:00" (the first
//     such moment at or after the recording's start, so a recording past
//     midnight finds "01:30" on its second day)
//   - an offset from the start: "+1h5m"; from the end: "-10m"
//   - "start" or "end"
//
// A moment outside the recording is an error that names its span.
func ParseMoment(s string, rec *Recording) (time.Time, error) {
	s = strings.TrimSpace(s)
	start, end := rec.Start(), rec.End()
	loc := start.Location()
	t, err := parseMoment(s, start, end, loc)
	if err != nil {
		return time.Time{}, err
	}
	if t.Before(start) || t.After(end) {
		return time.Time{}, fmt.Errorf("%s is outside the recording (%s to %s)", s,
			start.Format("2006-01-02 15:04:05"), end.In(loc).Format("2006-01-02 15:04:05 MST"))
	}
	if s[0] == '+' || s[0] == '-' {
		// An offset counts in samples, whose times jitter: +3s is the
		// sample nearest 3 s in, not the one before it (2.99 s in).
		t = nearestSample(rec, t)
	}
	return t, nil
}

// nearestSample is the time of rec's sample nearest t.
func nearestSample(rec *Recording, t time.Time) time.Time {
	i := rec.Index(t)
	best := rec.Time(i)
	if i+1 < rec.Len() {
		if next := rec.Time(i + 1); next.Sub(t) < t.Sub(best) {
			best = next
		}
	}
	return best
}

func parseMoment(s string, start, end time.Time, loc *time.Location) (time.Time, error) {
	switch s {
	case "start":
		return start, nil
	case "end":
		return end, nil
	case "":
		return time.Time{}, fmt.Errorf("empty moment")
	}
	if s[0] == '+' || s[0] == '-' {
		d, err := units.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%q: an offset is like +1h5m (from the start) or -10m (from the end)", s)
		}
		if s[0] == '+' {
			return start.Add(d), nil
		}
		return end.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		c, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		day := start.In(loc)
		for d := 0; ; d++ {
			y, m, dd := day.AddDate(0, 0, d).Date()
			t := time.Date(y, m, dd, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), loc)
			// The clock time's first occurrence at or after the start
			// (to the second: "03:12:00" means the whole second).
			if !t.Add(time.Second).After(start) {
				continue
			}
			if t.Before(start) {
				t = start
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a time like 03:12:00, 2026-03-14 03:12:00, an RFC 3339 time, +1h5m from the start or -10m from the end", s)
}
