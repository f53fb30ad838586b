package draw

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/units"
)

const (
	MiB = 1 << 20
	GiB = 1 << 30
	NA  = "n/a"
)

// Bytes formats a size for people: "61.2 GiB", "512 MiB".
func Bytes(b uint64) string {
	return units.FormatSize(b, units.Screen)
}

// BytesShort is fmtBytes for narrow columns: "61.2G", "512M".
func BytesShort(b uint64) string {
	return units.FormatSize(b, units.Narrow)
}

// OptBytes is fmtBytes, n/a for an absent value.
func OptBytes(b *uint64) string {
	if b == nil {
		return NA
	}
	return Bytes(*b)
}

// Pct formats a percentage without decimals: "44%".
func Pct(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return NA
	}
	return fmt.Sprintf("%.0f%%", p)
}

func OptPct(p *float64) string {
	if p == nil {
		return NA
	}
	return Pct(*p)
}

func Temp(t *int) string {
	if t == nil {
		return NA
	}
	return fmt.Sprintf("%d°C", *t)
}

func Power(p *float64) string {
	if p == nil {
		return NA
	}
	return fmt.Sprintf("%.0f W", *p)
}

// maxAge is the oldest age shown; an older one (or one far in the future)
// comes from a clock that was not set, such as a recording's year-0001
// time.
const maxAge = 100 * 365 * 24 * time.Hour

// Age formats a duration compactly: "45s", "12m", "3h04m", "2d03h"; n/a
// for an absurd age (over a century, or negative by more than a minute of
// clock skew).
func Age(d time.Duration) string {
	if d < -time.Minute || d > maxAge {
		return NA
	}
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// Span formats a window length: "5m", "1h", "90s".
func Span(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d >= time.Second:
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}

// Percent of used in total, 0 for a zero total.
func Percent(used, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return float64(used) / float64(total) * 100
}

// SevIndex is the advisor's severity of each device, from the alerts in
// force (advisor.DeviceSeverities): what colours a device's bar, tags its
// row and fills its banner. A nil index says Info for every device.
type SevIndex map[string]advisor.DeviceState

func (s SevIndex) Of(d sampler.Device) advisor.DeviceState { return s[d.ID] }

// NewSevIndex indexes the alerts in force.
func NewSevIndex(alerts []advisor.Alert) SevIndex { return advisor.DeviceSeverities(alerts) }

// Severity is the level a used percentage reached against the thresholds:
// what colours one column of a graph. A device's state is the advisor's
// (sevIndex), which also holds a recent peak.
func Severity(pct float64, th advisor.Thresholds) advisor.Severity {
	switch {
	case th.Crit > 0 && pct >= th.Crit:
		return advisor.Crit
	case th.Warn > 0 && pct >= th.Warn:
		return advisor.Warn
	}
	return advisor.Info
}

// DeviceLabel is the short name of a device in tables: its ID ("0", "0/3"),
// without the host prefix of a fleet's IDs.
func DeviceLabel(d sampler.Device) string {
	if d.ID != "" {
		// In a fleet the host is said once, above its GPUs.
		if d.Hostname != "" && strings.HasPrefix(d.ID, d.Hostname+":") {
			return d.ID[len(d.Hostname)+1:]
		}
		return d.ID
	}
	return fmt.Sprint(d.Index)
}

// ProcDeviceLabel names the GPU of a process row: "hostA:0" where the
// snapshot holds devices of several hosts (withHost), so that no process
// is shown without its host; deviceLabel otherwise.
func ProcDeviceLabel(d sampler.Device, withHost bool) string {
	if withHost && d.Hostname != "" {
		return d.Hostname + ":" + DeviceLabel(d)
	}
	return DeviceLabel(d)
}

// IsFleet reports whether the snapshot holds devices of named hosts.
func IsFleet(snap sampler.Snapshot) bool {
	for _, d := range snap.Devices {
		if d.Hostname != "" {
			return true
		}
	}
	return false
}

// SeveralHosts reports whether the snapshot holds devices of more than one
// host.
func SeveralHosts(snap sampler.Snapshot) bool {
	for _, d := range snap.Devices {
		if d.Hostname != snap.Devices[0].Hostname {
			return true
		}
	}
	return false
}

// staleListAfter is the age past which a device's process list is marked
// with its age (sampler.Device.ListedAt): at the default interval a list is
// at most a second old; a slow interval, a failing list or a fleet host
// that is down leaves an older one.
const staleListAfter = 2 * time.Second

// ListAge is how old the process list of d is at the snapshot's time, and
// whether that is past staleListAfter.
func ListAge(snap sampler.Snapshot, d sampler.Device) (time.Duration, bool) {
	if d.ListedAt.IsZero() {
		return 0, false
	}
	age := snap.Time.Sub(d.ListedAt)
	return age, age > staleListAfter
}

// HostDownPrefix starts the error of each device of a fleet host that is
// down or stale (fleet.HostDownPrefix): the device holds the last values
// seen, and the rest of the error says why and since when.
const HostDownPrefix = "host down: "

// HostDown reports whether d belongs to a host that is down, and why.
func HostDown(d sampler.Device) (why string, down bool) {
	if !strings.HasPrefix(d.Err, HostDownPrefix) {
		return "", false
	}
	return strings.TrimPrefix(d.Err, HostDownPrefix), true
}

// DownShort is the short form of why a host is down, for a device's line:
// "down since 09:08:00" where the reason names the time.
func DownShort(why string) string {
	if i := strings.Index(why, "since "); i >= 0 {
		t := why[i:]
		if j := strings.Index(t, " ("); j >= 0 {
			t = t[:j]
		}
		return "down " + t
	}
	return "down: " + why
}

// UnlistedText stands in the process table for a device whose source
// cannot list its processes (sampler.Device.NoProcessList).
const UnlistedText = "processes not listed: this host is seen through dcgm-exporter only"

// PendingText stands in the process table for a device whose process list
// is being read (the first snapshot of the live view).
const PendingText = "reading the process list…"

// NotReadText stands in the process table for a device whose processes
// the source has not read yet (a fleet host just opened).
const NotReadText = "processes not read yet…"

// OmittedText stands in the process table for n processes of a device that
// its source counts but does not list (sampler.Device.OmittedProcesses).
func OmittedText(n int) string {
	if n == 1 {
		return "1 more process, not exported (vramtop serve --max-process-series)"
	}
	return strconv.Itoa(n) + " more processes, not exported (vramtop serve --max-process-series)"
}

// ShortName drops the vendor prefix of a GPU name: "NVIDIA H200" → "H200".
func ShortName(n string) string {
	for _, p := range []string{"NVIDIA ", "Tesla "} {
		n = strings.TrimPrefix(n, p)
	}
	return n
}

// Fit pads or truncates s (which may hold ANSI) to exactly w cells.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := common.CellWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}

// FitRight right-aligns s in w cells, truncating when longer.
func FitRight(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := common.CellWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return strings.Repeat(" ", w-sw) + s
}

// ClampLines truncates every line of s to w cells and keeps at most h lines.
func ClampLines(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if len(l) > w && common.CellWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	return strings.Join(lines, "\n")
}

func Clamp(v, lo, hi int) int {
	if hi < lo {
		return lo
	}
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Elide fits the plain text s into w cells by dropping whole words from
// its end, then "…": a number is never cut (61.62… reads as a figure), nor
// parted from its unit, and a clause left open ("(", "of", "at") goes with
// the words after it, as does a parenthesis left open. A text that ends on a figure gets " …", so the figure
// reads as whole. Text that fits is returned as it is; a first word wider
// than w is cut as fit cuts it.
func Elide(s string, w int) string {
	if common.CellWidth(s) <= w {
		return s
	}
	if w <= 1 {
		return Fit(s, w)
	}
	words := strings.Fields(s)
	n := 0 // words kept
	for used := 0; n < len(words); n++ {
		add := common.CellWidth(words[n])
		if n > 0 {
			add++
		}
		if used+add > w-2 { // room for " …"
			break
		}
		used += add
	}
	for n > 0 && n < len(words) && dangling(words[n-1], words[n]) {
		n--
	}
	// A parenthesis left open goes whole: "(61.62 GiB of 79.65 GiB …"
	// reads as cut.
	if i := openParen(words[:n]); i >= 0 && n < len(words) {
		n = i
		for n > 0 && dangling(words[n-1], words[n]) {
			n--
		}
	}
	if n == 0 {
		return ansi.Truncate(s, w, "…")
	}
	out := strings.TrimRight(strings.Join(words[:n], " "), ",;:·( ")
	if out == "" {
		return ansi.Truncate(s, w, "…")
	}
	if last := out[len(out)-1]; last >= '0' && last <= '9' || isUnit(out[strings.LastIndexByte(out, ' ')+1:]) || last == '%' || last == ')' {
		return out + " …"
	}
	return out + "…"
}

// dangling reports whether last, the word before next, cannot end an
// elided text: it opens what was dropped, or it is a figure whose unit
// was dropped.
func dangling(last, next string) bool {
	last = strings.TrimRight(last, ",;:")
	if last == "" || last == "·" || last == "—" || last == "-" || last == "→" {
		return true
	}
	switch strings.ToLower(last) {
	case "of", "at", "in", "on", "by", "to", "with", "and", "or", "the", "a", "an", "for", "from", "is", "than", "per", "mostly", "over":
		return true
	}
	if strings.Count(last, "(") > strings.Count(last, ")") {
		return true
	}
	t := strings.TrimLeft(last, "(~+-≈")
	isNum := t != "" && t[0] >= '0' && t[0] <= '9'
	return isNum && isUnit(strings.TrimRight(next, ",;:)"))
}

// openParen is the index of the word that opens a parenthesis words do not
// close; -1 when every one is closed.
func openParen(words []string) int {
	var open []int
	for i, w := range words {
		for _, r := range w {
			switch r {
			case '(':
				open = append(open, i)
			case ')':
				if len(open) > 0 {
					open = open[:len(open)-1]
				}
			}
		}
	}
	if len(open) == 0 {
		return -1
	}
	return open[0]
}

func isUnit(t string) bool {
	switch strings.TrimRight(t, ")") {
	case "B", "KiB", "MiB", "GiB", "TiB", "kB", "MB", "GB", "TB", "KiB/min", "MiB/min", "GiB/min", "MiB/s", "GiB/s",
		"s", "ms", "min", "h", "d", "W", "°C", "%":
		return true
	}
	return false
}

// ElideName fits a GPU's name into w cells, cut after a whole part
// ("A100-SXM4…", not "A100-SXM4-8…", which reads as a figure).
func ElideName(s string, w int) string {
	if common.CellWidth(s) <= w {
		return s
	}
	for i := len(s) - 1; i > 0; i-- {
		if (s[i] == '-' || s[i] == ' ') && common.CellWidth(s[:i])+1 <= w {
			return s[:i] + "…"
		}
	}
	return Fit(s, w)
}

// figureUnit is a figure and the unit after it: "17.08 GiB", "~96 min".
var figureUnit = regexp.MustCompile(`([0-9]) (B|KiB|MiB|GiB|TiB|kB|MB|GB|TB|KiB/min|MiB/min|GiB/min|MiB/s|GiB/s|bytes|s|ms|min|h|d|W|°C|%)([\s,;:.)]|$)`)

// nameNumber is a PID or a GPU and its number: "PID 41230", "GPU 3/1".
var nameNumber = regexp.MustCompile(`\b(PID|GPU) ([0-9])`)

// Wordwrap wraps s at w cells as ansi.Wordwrap does, but never between a
// figure and its unit ("(17.08" and "GiB here)" on two lines), nor
// between PID or GPU and its number.
func Wordwrap(s string, w int) string {
	const nbsp = "\u00a0" // a space ansi.Wordwrap does not break at
	glued := nameNumber.ReplaceAllString(figureUnit.ReplaceAllString(s, "$1"+nbsp+"$2$3"), "$1"+nbsp+"$2")
	return strings.ReplaceAll(ansi.Wordwrap(glued, w, ""), nbsp, " ")
}
