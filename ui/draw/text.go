// Package draw holds what the parts of the live view draw with: sizes,
// percentages and ages in words, text fitted to a width, bars and plots,
// and a pager.
package draw

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// AlertText is the alert's message; for a GPU filling up (the threshold,
// time-to-full and spike-headroom rules) it adds the process that grew most
// there, when one did and the message does not name it already.
func AlertText(snap sampler.Snapshot, a advisor.Alert) string {
	msg := a.Message
	if msg == "" {
		msg = a.Rule + " on GPU " + a.DeviceID
	}
	switch a.Rule {
	case "threshold", "time_to_full", "spike_headroom":
	default:
		return msg
	}
	if a.PID != 0 || a.DeviceID == "" {
		return msg
	}
	d, ok := snap.Device(a.DeviceID)
	if !ok {
		return msg
	}
	if p, grew, ok := grewMost(d, snap.Time, DefaultSpan); ok && !strings.Contains(msg, fmt.Sprintf("PID %d ", p.PID)) {
		msg += fmt.Sprintf(" · grew most: PID %d %s (+%s in %s)", p.PID, FirstWord(p.Command), Bytes(grew), Span(DefaultSpan))
	}
	return msg
}

// grewMost finds the live process on d whose memory grew most over the last
// span; ok is false when none grew.
func grewMost(d sampler.Device, now time.Time, span time.Duration) (sampler.Process, uint64, bool) {
	var best sampler.Process
	var most uint64
	for _, p := range d.Processes {
		if p.Exited || p.History.Len() == 0 {
			continue
		}
		w := p.History.Since(now.Add(-span))
		if w.Len() == 0 {
			continue
		}
		_, first := w.At(0)
		_, last, _ := w.Last()
		if last > first && last-first > most {
			best, most = p, last-first
		}
	}
	return best, most, most > 0
}

func FirstWord(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return "?"
	}
	w := f[0]
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	if len(f) > 1 && strings.HasPrefix(w, "python") {
		w += " " + f[1]
	}
	return w
}

// PadLines adds empty lines to s up to h lines.
func PadLines(s string, h int) string {
	if n := lipgloss.Height(s); n < h {
		s += strings.Repeat("\n", h-n)
	}
	return s
}

// DefaultSpan is the span of the graphs until z changes it.
const DefaultSpan = 5 * time.Minute
