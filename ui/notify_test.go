package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/judge"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// gpuSnap is a snapshot of one 80 GiB GPU with used GiB and n processes.
func gpuSnap(used uint64, nproc int) sampler.Snapshot {
	d := sampler.Device{ID: "0", Name: "NVIDIA H100", MemoryTotal: 80 * draw.GiB, MemoryUsed: used * draw.GiB, MemoryFree: (80 - used) * draw.GiB, Processes: []sampler.Process{}}
	for i := 0; i < nproc; i++ {
		d.Processes = append(d.Processes, sampler.Process{PID: uint32(100 + i), UsedBytes: sampler.Ptr(uint64(draw.GiB)), Visible: true})
	}
	return sampler.Snapshot{Time: fixedStart, Devices: []sampler.Device{d}}
}

// rawWrites are the raw writes (tea.Raw) a command batch makes.
func rawWrites(cmd tea.Cmd) []string {
	if cmd == nil {
		return nil
	}
	var out []string
	var walk func(msg tea.Msg)
	walk = func(msg tea.Msg) {
		switch msg := msg.(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				if c != nil {
					walk(runNonBlocking(c))
				}
			}
		case tea.RawMsg:
			out = append(out, msg.Msg.(string))
		}
	}
	walk(runNonBlocking(cmd))
	return out
}

// TestNotifyInTheLiveView: with --notify the view writes one OSC sequence
// when a GPU turns critical and when a watched GPU (w) becomes free; without
// it, nothing, and w says how to turn it on.
func TestNotifyInTheLiveView(t *testing.T) {
	m, _ := newTestModel(Options{Notify: true})
	var alerts []advisor.Alert
	judgeWith(m, func(o *judge.Options) {
		o.Notify = env("TERM_PROGRAM", "WezTerm")
		o.Rules = testRules{observe: func(sampler.Snapshot) []advisor.Alert { return alerts }}
	})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	if w := rawWrites(send(m, snapshotMsg(gpuSnap(76, 2)))); len(w) != 0 {
		t.Errorf("writes before any alert: %q", w)
	}
	keys(m, "w")
	if s := screenText(m); !strings.Contains(s, "watching GPU 0") || !strings.Contains(s, "◎") {
		t.Errorf("w: no status or mark:\n%s", s)
	}
	alerts = []advisor.Alert{{Rule: advisor.RuleThreshold, Severity: advisor.Crit, DeviceID: "0", Message: "GPU 0 at 95%"}}
	w := rawWrites(send(m, snapshotMsg(gpuSnap(76, 2))))
	if len(w) != 1 || w[0] != "\x1b]9;GPU 0 is critical: GPU 0 at 95%\a" {
		t.Errorf("critical: writes %q", w)
	}
	if w := rawWrites(send(m, snapshotMsg(gpuSnap(76, 2)))); len(w) != 0 {
		t.Errorf("the same alert again: writes %q", w)
	}
	alerts = nil
	w = rawWrites(send(m, snapshotMsg(gpuSnap(2, 0))))
	if len(w) != 1 || !strings.HasPrefix(w[0], "\x1b]9;GPU 0 is free: ") {
		t.Errorf("freed: writes %q", w)
	}

	off, _ := newTestModel(Options{})
	setRules(off, testRules{observe: func(sampler.Snapshot) []advisor.Alert {
		return []advisor.Alert{{Rule: advisor.RuleThreshold, Severity: advisor.Crit, DeviceID: "0"}}
	}})
	send(off, tea.WindowSizeMsg{Width: 120, Height: 40})
	if w := rawWrites(send(off, snapshotMsg(gpuSnap(76, 2)))); len(w) != 0 {
		t.Errorf("without --notify: writes %q", w)
	}
	keys(off, "w")
	if s := screenText(off); !strings.Contains(s, "--notify") {
		t.Errorf("w without --notify says nothing:\n%s", s)
	}
}
