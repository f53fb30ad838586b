package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

var fixedStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// gpuSnap is a snapshot of one 80 GiB GPU with used GiB and n processes.
func gpuSnap(used uint64, nproc int) sampler.Snapshot {
	d := sampler.Device{ID: "0", Name: "NVIDIA H100", MemoryTotal: 80 * draw.GiB, MemoryUsed: used * draw.GiB, MemoryFree: (80 - used) * draw.GiB, Processes: []sampler.Process{}}
	for i := 0; i < nproc; i++ {
		d.Processes = append(d.Processes, sampler.Process{PID: uint32(100 + i), UsedBytes: sampler.Ptr(uint64(draw.GiB)), Visible: true})
	}
	return sampler.Snapshot{Time: fixedStart, Devices: []sampler.Device{d}}
}

func TestNotificationSequences(t *testing.T) {
	n := notification{"GPU 0 is critical", "GPU 0 at 95%; largest: PID 7\x1b]0;pwned\a"}
	cases := []struct {
		proto notifyProto
		tmux  bool
		want  string
	}{
		{protoOSC9, false, "\x1b]9;GPU 0 is critical: GPU 0 at 95%, largest: PID 7 ]0,pwned \a"},
		{protoOSC777, false, "\x1b]777;notify;GPU 0 is critical;GPU 0 at 95%, largest: PID 7 ]0,pwned \a"},
		{protoBell, false, "\a"},
		{protoOSC9, true, "\x1bPtmux;\x1b\x1b]9;GPU 0 is critical: GPU 0 at 95%, largest: PID 7 ]0,pwned \a\x1b\\"},
	}
	for _, c := range cases {
		if got := n.sequence(c.proto, c.tmux); got != c.want {
			t.Errorf("proto %d tmux %v:\n got %q\nwant %q", c.proto, c.tmux, got, c.want)
		}
	}
}

func TestTerminalProto(t *testing.T) {
	cases := []struct {
		env  func(string) string
		want notifyProto
	}{
		{env("TERM_PROGRAM", "iTerm.app"), protoOSC9},
		{env("TERM", "xterm-kitty"), protoOSC9},
		{env("TERM_PROGRAM", "WezTerm"), protoOSC9},
		{env("WT_SESSION", "1b2c"), protoOSC9},
		{env("TERM", "foot"), protoOSC777},
		{env("TERM", "xterm-256color", "VTE_VERSION", "7600"), protoOSC777},
		{env("TERM", "xterm-256color"), protoBell},
		{env(), protoBell},
	}
	for i, c := range cases {
		if got := terminalProto(c.env); got != c.want {
			t.Errorf("case %d: %d, want %d", i, got, c.want)
		}
	}
}

func TestNotifierOncePerAlertStart(t *testing.T) {
	n := newNotifier(advisor.DefaultThresholds(), env("TERM", "foot"))
	crit := advisor.Alert{Rule: advisor.RuleThreshold, Severity: advisor.Crit, DeviceID: "0", Message: "GPU 0 at 95%"}
	warn := advisor.Alert{Rule: advisor.RuleThreshold, Severity: advisor.Warn, DeviceID: "0", Message: "GPU 0 at 85%"}
	leak := advisor.Alert{Rule: advisor.RuleLeakSuspect, Severity: advisor.Warn, DeviceID: "0", PID: 42, Message: "PID 42 only grew"}
	ttf := advisor.Alert{Rule: advisor.RuleTimeToFull, Severity: advisor.Warn, DeviceID: "0", Message: "GPU 0 full in 40 min"}
	other := advisor.Alert{Rule: advisor.RuleUnattributed, Severity: advisor.Warn, DeviceID: "0", Message: "unattributed"}
	steps := []struct {
		alerts []advisor.Alert
		want   []string // titles
	}{
		{[]advisor.Alert{warn, other}, nil},
		{[]advisor.Alert{crit}, []string{"GPU 0 is critical"}},
		{[]advisor.Alert{crit}, nil},
		{[]advisor.Alert{crit, leak}, []string{"GPU 0: PID 42 may leak memory"}},
		{[]advisor.Alert{crit, leak, ttf}, []string{"GPU 0 is filling up"}},
		{[]advisor.Alert{warn, leak, ttf}, nil},
		// Back to critical, and a leak that stopped and started again.
		{[]advisor.Alert{crit, ttf}, []string{"GPU 0 is critical"}},
		{[]advisor.Alert{crit, ttf, leak}, []string{"GPU 0: PID 42 may leak memory"}},
	}
	snap := gpuSnap(70, 1)
	for i, s := range steps {
		var got []string
		for _, x := range n.Observe(snap, s.alerts) {
			got = append(got, x.title)
		}
		if strings.Join(got, "|") != strings.Join(s.want, "|") {
			t.Errorf("step %d: notifications %q, want %q", i, got, s.want)
		}
	}
	// The critical notification carries the alert's message.
	n = newNotifier(advisor.DefaultThresholds(), env("TERM", "foot"))
	if got := n.Sequences(n.Observe(snap, []advisor.Alert{crit})); got != "\x1b]777;notify;GPU 0 is critical;GPU 0 at 95%\a" {
		t.Errorf("sequence %q", got)
	}
}

func TestNotifierWatchedGPUBecomesFree(t *testing.T) {
	th := advisor.DefaultThresholds()
	n := newNotifier(th, env("TERM_PROGRAM", "iTerm.app"))
	busy := gpuSnap(76, 2)
	if s := n.Toggle(busy.Devices[0]); !strings.Contains(s, "watching GPU 0") {
		t.Errorf("status %q", s)
	}
	steps := []struct {
		snap sampler.Snapshot
		want string
	}{
		{gpuSnap(76, 2), ""},
		{gpuSnap(72, 2), ""}, // 90%: still over the 80% line, with processes
		{gpuSnap(60, 1), "GPU 0 is free: 60.0 GiB of 80.0 GiB used (75%), under the 80% warning line"},
		{gpuSnap(60, 1), ""},
		{gpuSnap(70, 1), ""},
		{gpuSnap(1, 0), "GPU 0 is free: 1.0 GiB of 80.0 GiB used (1%), no processes"},
	}
	for i, s := range steps {
		var got []string
		for _, x := range n.Observe(s.snap, nil) {
			got = append(got, x.title+": "+x.body)
		}
		if strings.Join(got, "|") != s.want {
			t.Errorf("step %d: %q, want %q", i, got, s.want)
		}
	}
	if s := n.Toggle(busy.Devices[0]); !strings.Contains(s, "no longer watching") || n.Watching("0") {
		t.Errorf("second w: %q", s)
	}
	if got := n.Observe(gpuSnap(70, 1), nil); len(got) != 0 {
		t.Errorf("unwatched: %v", got)
	}
	if got := n.Observe(gpuSnap(1, 0), nil); len(got) != 0 {
		t.Errorf("unwatched GPU freed: %v", got)
	}
}
