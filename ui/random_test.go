package ui

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
)

// randomSnapshot is an odd but possible snapshot: zero or huge sizes, used
// above total, absent values, errors, empty and unicode names, hosts.
func randomSnapshot(r *rand.Rand) sampler.Snapshot {
	s := sampler.Snapshot{Time: fixedStart.Add(time.Duration(r.Intn(1000)) * time.Second), Interval: time.Duration(r.Intn(3)) * time.Second}
	sizes := []uint64{0, 1, draw.MiB, 80 * draw.GiB, 1 << 50}
	for i := 0; i < r.Intn(12); i++ {
		d := sampler.Device{ID: fmt.Sprint(i), Index: i, Name: []string{"", "NVIDIA H200", "名前 GPU", strings.Repeat("x", 80)}[r.Intn(4)]}
		d.MemoryTotal = sizes[r.Intn(len(sizes))]
		d.MemoryUsed = sizes[r.Intn(len(sizes))]
		if r.Intn(2) == 0 {
			v := sizes[r.Intn(len(sizes))]
			d.MemoryReserved, d.Unattributed = &v, &v
		}
		if r.Intn(3) == 0 {
			u := r.Float64() * 150
			d.UtilizationPercent = &u
		}
		if r.Intn(4) == 0 {
			d.Err = "lost"
		}
		if r.Intn(3) == 0 {
			d.Hostname = fmt.Sprintf("h%d", r.Intn(3))
		}
		if r.Intn(2) == 0 {
			var ts []time.Time
			var vs []uint64
			for k := 0; k < r.Intn(50); k++ {
				ts = append(ts, s.Time.Add(-time.Duration(r.Intn(4000))*time.Second))
				vs = append(vs, sizes[r.Intn(len(sizes))])
			}
			// WindowOf wants time order.
			for a := range ts {
				for b := a + 1; b < len(ts); b++ {
					if ts[b].Before(ts[a]) {
						ts[a], ts[b] = ts[b], ts[a]
					}
				}
			}
			d.History = sampler.WindowOf(ts, vs)
		}
		for k := 0; k < r.Intn(6); k++ {
			p := sampler.Process{PID: uint32(r.Intn(100000)), User: []string{"", testUser, "bob", "ユーザー"}[r.Intn(4)],
				Command: []string{"", "python x.py", "训练 🚀", strings.Repeat("y", 300)}[r.Intn(4)], Visible: r.Intn(3) > 0,
				Exited: r.Intn(4) == 0, PeakBytes: sizes[r.Intn(len(sizes))], StartTime: s.Time.Add(time.Duration(r.Intn(7200)-3600) * time.Second)}
			if r.Intn(3) > 0 {
				v := sizes[r.Intn(len(sizes))]
				p.UsedBytes = &v
			}
			d.Processes = append(d.Processes, p)
		}
		s.Devices = append(s.Devices, d)
	}
	return s
}

// TestRandomSnapshotsAndKeysNeverPanic drives the model with odd snapshots,
// sizes and key sequences; every screen must fit its size.
func TestRandomSnapshotsAndKeysNeverPanic(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	allKeys := []string{"up", "down", "left", "right", "tab", "enter", "esc", "s", "m", "u", "z", "p", "+", "-", "K", "y", "n", "?", "/", "a", "backspace", "j", "k", "g", "G", "space", "[", "]", ">"}
	for i := 0; i < 300; i++ {
		opts := Options{SetInterval: func(time.Duration) {}}
		if i%5 == 0 {
			opts.Replay = &fakeReplay{}
		}
		m, _ := newTestModel(opts)
		setRules(m, testRules{advise: func(sampler.Snapshot, advisor.Target) []advisor.Advice {
			return []advisor.Advice{{Severity: advisor.Warn, Title: strings.Repeat("t", r.Intn(300)), Remedies: []advisor.RemedyEstimate{{Name: "n", How: "h"}}}}
		}})
		w, h := r.Intn(260), r.Intn(80)
		send(m, tea.WindowSizeMsg{Width: w, Height: h}, snapshotMsg(randomSnapshot(r)))
		for k := 0; k < 30; k++ {
			switch r.Intn(6) {
			case 0:
				send(m, snapshotMsg(randomSnapshot(r)))
			case 1:
				w, h = r.Intn(260), r.Intn(80)
				send(m, tea.WindowSizeMsg{Width: w, Height: h})
			case 2:
				send(m, tea.MouseWheelMsg{Button: tea.MouseWheelDown})
			default:
				keys(m, allKeys[r.Intn(len(allKeys))])
			}
			if mw, mh := m.minSize(); w >= mw && h >= mh {
				checkFits(t, m, w, h)
			} else {
				_ = m.View()
			}
			if t.Failed() {
				t.Fatalf("iteration %d step %d", i, k)
			}
		}
	}
}
