package judge

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
)

// notification is one desktop notification.
type notification struct {
	title, body string
}

// notifyProto is how a terminal is asked to show a notification.
type notifyProto int

const (
	protoBell   notifyProto = iota // BEL: the terminal's own bell or badge
	protoOSC9                      // ESC ] 9 ; text BEL: iTerm2, kitty, WezTerm, Windows Terminal
	protoOSC777                    // ESC ] 777 ; notify ; title ; body BEL: foot, urxvt, VTE terminals
)

// terminalProto picks the notification protocol of the terminal the
// environment describes: one sequence, so that a terminal that knows both
// does not show the notification twice.
func terminalProto(getenv func(string) string) notifyProto {
	term, prog := getenv("TERM"), getenv("TERM_PROGRAM")
	switch {
	case prog == "iTerm.app", prog == "WezTerm", getenv("WT_SESSION") != "",
		getenv("KITTY_WINDOW_ID") != "", strings.HasPrefix(term, "xterm-kitty"):
		return protoOSC9
	case strings.HasPrefix(term, "foot"), strings.HasPrefix(term, "rxvt-unicode"), getenv("VTE_VERSION") != "":
		return protoOSC777
	}
	return protoBell
}

// notifyText keeps a notification's text to printable characters (no
// escape or control character can end the sequence early), without the
// field separator of OSC 777, and short.
func notifyText(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			return ' '
		case r == ';':
			return ','
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// sequence is the escape sequence that shows n under proto; inside tmux
// (tmux set) it is wrapped for tmux to pass it on (tmux's allow-passthrough
// option must be on).
func (n notification) sequence(proto notifyProto, tmux bool) string {
	title, body := notifyText(n.title), notifyText(n.body)
	var s string
	switch proto {
	case protoOSC9:
		s = "\x1b]9;" + title + ": " + body + "\a"
	case protoOSC777:
		s = "\x1b]777;notify;" + title + ";" + body + "\a"
	default:
		return "\a"
	}
	if tmux {
		s = "\x1bPtmux;" + strings.ReplaceAll(s, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return s
}

// notifier turns snapshots and the advisor's alerts into desktop
// notifications: when a GPU turns critical, when a memory leak or a
// time-to-full forecast starts, and when a GPU the user watches becomes
// free. Each fires once when its alert starts, not on every snapshot.
type notifier struct {
	th    advisor.Thresholds
	proto notifyProto
	tmux  bool

	crit    map[string]bool   // devices critical at the last snapshot
	started map[string]bool   // leak and time-to-full alerts in force
	watched map[string]bool   // devices watched: the value says whether it was busy
	names   map[string]string // watched devices' labels, for the status line
}

func newNotifier(th advisor.Thresholds, getenv func(string) string) *notifier {
	return &notifier{th: th, proto: terminalProto(getenv), tmux: getenv("TMUX") != "",
		crit: map[string]bool{}, started: map[string]bool{}, watched: map[string]bool{}, names: map[string]string{}}
}

// isFree reports whether d has room for a job: no live process, or memory
// under the warning line.
func isFree(d sampler.Device, th advisor.Thresholds) bool {
	live := 0
	for _, p := range d.Processes {
		if !p.Exited {
			live++
		}
	}
	return (live == 0 && !d.NoProcessList && !d.ProcessesNotRead) || d.MemoryTotal > 0 && d.UsedPercent() < th.Warn
}

// freeText says why d is free.
func freeText(d sampler.Device, th advisor.Thresholds) string {
	s := draw.Bytes(d.MemoryUsed) + " of " + draw.Bytes(d.MemoryTotal) + " used (" + draw.Pct(d.UsedPercent()) + ")"
	for _, p := range d.Processes {
		if !p.Exited {
			return s + ", under the " + draw.Pct(th.Warn) + " warning line"
		}
	}
	return s + ", no processes"
}

// Toggle watches d, or stops watching it; it returns the status line that
// says so.
func (n *notifier) Toggle(d sampler.Device) string {
	label := "GPU " + d.ID
	if _, ok := n.watched[d.ID]; ok {
		delete(n.watched, d.ID)
		delete(n.names, d.ID)
		return "no longer watching " + label
	}
	free := isFree(d, n.th)
	n.watched[d.ID] = !free
	n.names[d.ID] = label
	if free {
		return "watching " + label + ": it is free now; a notification comes when it is free again after being busy"
	}
	return "watching " + label + ": a notification comes when it is free"
}

// Watching reports whether device id is watched.
func (n *notifier) Watching(id string) bool {
	_, ok := n.watched[id]
	return ok
}

// Observe returns the notifications that snap and its alerts start, and
// remembers what is in force.
func (n *notifier) Observe(snap sampler.Snapshot, alerts []advisor.Alert) []notification {
	var out []notification
	sev := advisor.DeviceSeverities(alerts)
	crit := make(map[string]bool, len(n.crit))
	for id, s := range sev {
		if s.Severity != advisor.Crit {
			continue
		}
		crit[id] = true
		if !n.crit[id] {
			out = append(out, notification{"GPU " + id + " is critical", n.critText(alerts, id)})
		}
	}
	n.crit = crit
	started := make(map[string]bool, len(n.started))
	for _, a := range alerts {
		if a.Rule != advisor.RuleLeakSuspect && a.Rule != advisor.RuleTimeToFull {
			continue
		}
		k := a.Rule + "|" + a.DeviceID + "|" + strconv.FormatUint(uint64(a.PID), 10)
		started[k] = true
		if n.started[k] {
			continue
		}
		title := "GPU " + a.DeviceID + " is filling up"
		if a.Rule == advisor.RuleLeakSuspect {
			title = fmt.Sprintf("GPU %s: PID %d may leak memory", a.DeviceID, a.PID)
		}
		out = append(out, notification{title, a.Message})
	}
	n.started = started
	for id, busy := range n.watched {
		d, ok := snap.Device(id)
		if !ok {
			continue
		}
		free := isFree(d, n.th)
		if free && busy {
			out = append(out, notification{n.names[id] + " is free", freeText(d, n.th)})
		}
		n.watched[id] = !free
	}
	return out
}

// critText is the message of the device's critical alert.
func (n *notifier) critText(alerts []advisor.Alert, id string) string {
	for _, a := range alerts {
		if a.DeviceID == id && a.PID == 0 && a.Severity == advisor.Crit && (a.Rule == advisor.RuleThreshold || a.Rule == advisor.RuleTimeToFull) {
			return a.Message
		}
	}
	return "GPU " + id + " is critical"
}

// Sequences is what notifications write to the terminal, in order; one
// bell for any number where the terminal only has the bell.
func (n *notifier) Sequences(ns []notification) string {
	if len(ns) > 0 && n.proto == protoBell {
		return "\a"
	}
	var b strings.Builder
	for _, x := range ns {
		b.WriteString(x.sequence(n.proto, n.tmux))
	}
	return b.String()
}
