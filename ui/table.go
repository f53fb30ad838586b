package ui

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// WriteTable prints one snapshot as a plain table (vramtop --once): the
// devices, then the processes. Colour only when w is a terminal that takes
// it (and NO_COLOR is not set).
func WriteTable(w io.Writer, snap sampler.Snapshot, th advisor.Thresholds) error {
	cw := colorprofile.NewWriter(w, os.Environ())
	st := NewStyles(true, cw.Profile <= colorprofile.ASCII)
	_, err := io.WriteString(cw, renderTable(st, snap, th))
	return err
}

// renderTable lays out the table with styles; the writer strips what the
// output cannot show.
func renderTable(st Styles, snap sampler.Snapshot, th advisor.Thresholds) string {
	var b strings.Builder
	head := []string{"vramtop"}
	if snap.Hostname != "" {
		head = append(head, snap.Hostname)
	}
	if snap.DriverVersion != "" {
		head = append(head, "driver "+snap.DriverVersion)
	}
	if snap.CUDAVersion != "" {
		head = append(head, "CUDA "+snap.CUDAVersion)
	}
	if !snap.Time.IsZero() {
		head = append(head, snap.Time.Format("2006-01-02 15:04:05"))
	}
	if snap.Demo {
		head = append(head, "DEMO")
	}
	b.WriteString(strings.Join(head, " · ") + "\n")
	for _, w := range snap.Warnings {
		b.WriteString(st.Warning.Render("! "+w) + "\n")
	}
	if snap.Err != "" {
		b.WriteString(st.Error.Render("error: "+snap.Err) + "\n")
	}
	b.WriteString("\n")

	fleet := isFleet(snap)
	devs := [][]string{{"GPU", "NAME", "USED", "TOTAL", "USE%", "RESERVED", "FREE", "UNATTRIB", "UTIL", "TEMP", "POWER"}}
	if fleet {
		devs[0] = append([]string{"HOST"}, devs[0]...)
	}
	var devStyle []func(string) string
	for _, d := range snap.Devices {
		pct := fmtPct(d.UsedPercent())
		if d.MemoryTotal == 0 {
			pct = na
		}
		row := []string{deviceLabel(d), shortName(d.Name), fmtBytes(d.MemoryUsed), fmtBytes(d.MemoryTotal), pct,
			fmtOptBytes(d.MemoryReserved), fmtBytes(d.MemoryFree), fmtOptBytes(d.Unattributed),
			fmtOptPct(d.UtilizationPercent), fmtTemp(d.TemperatureC), fmtPower(d.PowerWatts)}
		if d.MemoryTotal == 0 && d.Err != "" {
			for i := 2; i < len(row); i++ {
				row[i] = na
			}
		}
		if fleet {
			row = append([]string{d.Hostname}, row...)
		}
		if d.Err != "" {
			row = append(row, "error: "+d.Err)
		}
		devs = append(devs, row)
		// Only a GPU past a threshold is coloured.
		if sev := severity(d.UsedPercent(), th); sev > advisor.Info {
			devStyle = append(devStyle, func(s string) string { return st.Severity(sev).Render(s) })
		} else {
			devStyle = append(devStyle, nil)
		}
	}
	writeAligned(&b, devs, map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true}, fleet, st, devStyle)

	procs := [][]string{{"GPU", "PID", "USER", "MEM", "%", "PEAK", "AGE", "COMMAND"}}
	var procStyle []func(string) string
	withHost := severalHosts(snap)
	for _, d := range snap.Devices {
		label := procDeviceLabel(d, withHost)
		if d.NoProcessList {
			// Not "no processes": nobody can tell from here.
			procs = append(procs, []string{label, "-", "-", "", "", "", "", unlistedText})
			procStyle = append(procStyle, func(s string) string { return st.Dim.Render(s) })
			continue
		}
		for _, p := range d.Processes {
			user := p.User
			if user == "" {
				user = "?"
			}
			mem, pct := na, ""
			switch {
			case p.Exited:
				mem = "exited"
			case p.UsedBytes != nil:
				mem, pct = fmtBytes(*p.UsedBytes), fmtPct(percent(*p.UsedBytes, d.MemoryTotal))
			}
			peak := ""
			if p.PeakBytes > 0 {
				peak = fmtBytes(p.PeakBytes)
			}
			age := ""
			switch {
			case !p.StartTime.IsZero():
				age = fmtAge(snap.Time.Sub(p.StartTime))
			case !p.FirstSeen.IsZero():
				age = fmtAge(snap.Time.Sub(p.FirstSeen))
			}
			cmd := commandCell(p)
			procs = append(procs, []string{label, strconv.FormatUint(uint64(p.PID), 10), user, mem, pct, peak, age, cmd})
			if p.Exited {
				procStyle = append(procStyle, func(s string) string { return st.Exited.Render(s) })
			} else {
				procStyle = append(procStyle, nil)
			}
		}
		if d.Unattributed != nil && *d.Unattributed >= mib {
			procs = append(procs, []string{label, "-", "-", fmtBytes(*d.Unattributed), fmtPct(percent(*d.Unattributed, d.MemoryTotal)), "", "",
				"unattributed: other containers/namespaces, driver, leaked contexts"})
			procStyle = append(procStyle, func(s string) string { return st.Unattr.Render(s) })
		}
	}
	b.WriteString("\n")
	if len(procs) == 1 {
		b.WriteString("no GPU processes\n")
	} else {
		writeAligned(&b, procs, map[int]bool{1: true, 3: true, 4: true, 5: true, 6: true}, false, st, procStyle)
	}
	return b.String()
}

// writeAligned writes rows in columns two spaces apart; right-aligned
// columns by index (shifted by one when a host column leads). The last
// column is left ragged.
func writeAligned(b *strings.Builder, rows [][]string, right map[int]bool, shifted bool, st Styles, style []func(string) string) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			if w := ansi.StringWidth(c); w > widths[i] {
				widths[i] = w
			}
		}
	}
	for ri, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			idx := i
			if shifted {
				idx--
			}
			switch {
			case i == len(r)-1:
				line.WriteString(c)
			case right[idx]:
				line.WriteString(fitRight(c, widths[i]))
			default:
				line.WriteString(fit(c, widths[i]))
			}
		}
		s := strings.TrimRight(line.String(), " ")
		switch {
		case ri == 0:
			s = st.ColHeader.Render(s)
		case ri-1 < len(style) && style[ri-1] != nil:
			s = style[ri-1](s)
		}
		fmt.Fprintln(b, s)
	}
}
