package usage

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vramtop/vramtop/units"
)

// TextOptions configure WriteText.
type TextOptions struct {
	// Color draws the bars in colour (a terminal without NO_COLOR).
	Color bool
	// Width is the line width the bars fit in; 80 when 0.
	Width int
	// Zone is the time zone times are written in; local when nil.
	Zone *time.Location
}

// maxName is the widest a user or job name is written in the table.
const maxName = 24

// cut shortens s to n characters, ending it in "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

func hours(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func peak(b uint64) string {
	if b == 0 {
		return "-"
	}
	return units.FormatSize(b, units.Screen)
}

// WriteText writes the report as tables: the window, the users, the jobs,
// a bar per user of the GiB-hours held, and what memory no process held.
func WriteText(w io.Writer, rep Report, o TextOptions) error {
	if o.Width <= 0 {
		o.Width = 80
	}
	zone := o.Zone
	if zone == nil {
		zone = time.Local
	}
	ts := func(t time.Time) string { return t.In(zone).Format("2006-01-02 15:04:05") }
	var b strings.Builder
	if rep.Totals.GPUHours == 0 {
		b.WriteString("No GPU was sampled in the window")
		if !rep.Since.IsZero() || !rep.Until.IsZero() {
			b.WriteString(" (")
			if !rep.Since.IsZero() {
				b.WriteString("from " + ts(rep.Since))
			}
			if !rep.Until.IsZero() {
				if !rep.Since.IsZero() {
					b.WriteString(" ")
				}
				b.WriteString("until " + ts(rep.Until))
			}
			b.WriteString(")")
		}
		b.WriteString(".\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%s to %s (%s), %s, %d GPU%s: %s GPU-hours, %s GiB-hours of memory\n",
		ts(rep.First), ts(rep.Last), rep.Last.Sub(rep.First).Round(time.Second), strings.Join(rep.Hosts, ", "),
		rep.Totals.GPUs, plural(rep.Totals.GPUs), hours(rep.Totals.GPUHours), hours(rep.Totals.CapacityGiBHours))
	fmt.Fprintf(&b, "GiB-h: memory held × time. GPU-h: time holding memory on a GPU; IDLE: of it, at utilization under %s%%.\n",
		strconv.FormatFloat(rep.IdleBelow, 'g', -1, 64))
	b.WriteString("SHARE: of the GPUs' memory over the window.\n\n")

	nameW := len("USER")
	for _, u := range rep.Users {
		nameW = max(nameW, utf8.RuneCountInString(cut(u.User, maxName)))
	}
	fmt.Fprintf(&b, "%s %9s %7s %8s %8s %10s  %s\n", pad("USER", nameW), "GiB-h", "SHARE", "GPU-h", "IDLE", "PEAK", "JOBS")
	for _, u := range rep.Users {
		jobs := strings.Join(u.Jobs, ", ")
		if len(u.Jobs) > 3 {
			jobs = strings.Join(u.Jobs[:3], ", ") + fmt.Sprintf(" and %d more", len(u.Jobs)-3)
		}
		if jobs == "" {
			jobs = "-"
		}
		fmt.Fprintf(&b, "%s %9s %7s %8s %8s %10s  %s\n", pad(cut(u.User, maxName), nameW), hours(u.GiBHours), percent(u.Share),
			hours(u.GPUHours), hours(u.IdleGPUHours), peak(u.PeakBytes), jobs)
	}
	b.WriteString("\n")
	jobW, userW := len("JOB"), len("USER")
	for _, j := range rep.Jobs {
		jobW = max(jobW, utf8.RuneCountInString(cut(jobLabel(j.Job), maxName)))
		userW = max(userW, utf8.RuneCountInString(cut(j.User, maxName)))
	}
	fmt.Fprintf(&b, "%s %s %9s %7s %8s %8s %10s\n", pad("JOB", jobW), pad("USER", userW), "GiB-h", "SHARE", "GPU-h", "IDLE", "PEAK")
	for _, j := range rep.Jobs {
		fmt.Fprintf(&b, "%s %s %9s %7s %8s %8s %10s\n", pad(cut(jobLabel(j.Job), maxName), jobW), pad(cut(j.User, maxName), userW),
			hours(j.GiBHours), percent(j.Share), hours(j.GPUHours), hours(j.IdleGPUHours), peak(j.PeakBytes))
	}
	if len(rep.Users) > 0 {
		b.WriteString("\nGiB-hours by user\n")
		writeBars(&b, rep.Users, nameW, o)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Held by no listed process (unattributed): %s GiB-hours.", hours(rep.Totals.UnattributedGiBHours))
	if rep.Totals.GapHours > 0 {
		fmt.Fprintf(&b, " Not recorded (gaps): %s GPU-hours.", hours(rep.Totals.GapHours))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// jobLabel is a job's name in the table: "-" for memory in no job.
func jobLabel(j string) string {
	if j == "" {
		return "-"
	}
	return j
}

// Bar colours (ANSI), by share of the cards: under 25%, under 50%, more.
const (
	colorLow  = "\x1b[32m"
	colorMid  = "\x1b[33m"
	colorHigh = "\x1b[31m"
	colorOff  = "\x1b[0m"
)

// writeBars draws one bar per user, as long as its GiB-hours against the
// largest, in eighths of a cell.
func writeBars(b *strings.Builder, users []UserRow, nameW int, o TextOptions) {
	most := 0.0
	valW := 0
	for _, u := range users {
		most = max(most, u.GiBHours)
		valW = max(valW, len(hours(u.GiBHours)))
	}
	barW := max(10, o.Width-nameW-valW-3)
	eighths := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	for _, u := range users {
		n := 0
		if most > 0 {
			n = int(math.Round(u.GiBHours / most * float64(barW*8)))
		}
		bar := strings.Repeat("█", n/8) + eighths[n%8]
		if bar == "" && u.GiBHours > 0 {
			bar = "▏"
		}
		cells := utf8.RuneCountInString(bar)
		if o.Color && bar != "" {
			c := colorLow
			switch {
			case u.Share >= 0.5:
				c = colorHigh
			case u.Share >= 0.25:
				c = colorMid
			}
			bar = c + bar + colorOff
		}
		fmt.Fprintf(b, "%s %s%s %s\n", pad(cut(u.User, maxName), nameW), bar, strings.Repeat(" ", barW-cells), hours(u.GiBHours))
	}
}

// CSVHeader is the first line of WriteCSV.
var CSVHeader = []string{"kind", "name", "user", "gib_hours", "share", "gpu_hours", "idle_gpu_hours", "util_unknown_gpu_hours",
	"peak_bytes", "peak_at", "first", "last", "hosts", "since", "until"}

// WriteCSV writes one row per user (kind "user") and per job (kind "job"),
// the window in every row.
func WriteCSV(w io.Writer, rep Report) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	tm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
	row := func(kind, name, user string, a Account) {
		cw.Write([]string{kind, csvSafe(name), csvSafe(user), num(a.GiBHours), num(a.Share), num(a.GPUHours), num(a.IdleGPUHours),
			num(a.UnknownGPUHours), strconv.FormatUint(a.PeakBytes, 10), tm(a.PeakAt), tm(a.First), tm(a.Last),
			csvSafe(strings.Join(a.Hosts, " ")), tm(rep.Since), tm(rep.Until)})
	}
	for _, u := range rep.Users {
		row("user", u.User, u.User, u.Account)
	}
	for _, j := range rep.Jobs {
		row("job", j.Job, j.User, j.Account)
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a spreadsheet from reading a name as a formula (a user
// or job named "=cmd|…" by whoever made it).
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "'" + s
	}
	return s
}
