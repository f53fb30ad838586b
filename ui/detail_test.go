package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/procs"
)

// advisedModel is a live view with the real advisor (its monitor gives the
// alerts and the advice), a fixed clock and no colour unless colour.
func advisedModel(opts Options, colour bool) *Model {
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedStart }
	}
	m := New(nil, opts)
	m.setStyles(common.NewStyles(true, !colour))
	return m
}

// TestGoldenDetail renders the demo's GPU 0 (78% now, over the lines a
// minute ago, with the advisor's advice) at three sizes: the plot takes at
// least half of the screen under its header, the advice the rest.
func TestGoldenDetail(t *testing.T) {
	snap := demoSnap(t, 10*time.Minute)
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		m := advisedModel(Options{User: demo.User, Version: "test"}, false)
		send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(snap))
		keys(m, "enter")
		if m.screen != screenDetail {
			t.Fatalf("%v: enter did not open the detail", sz)
		}
		golden(t, fmt.Sprintf("detail_%dx%d", sz[0], sz[1]), screenText(m))
		checkFits(t, m, sz[0], sz[1])
		d := detailPeek(m)
		if d.PlotH < (d.Height+1)/2 {
			t.Errorf("%v: plot %d lines of a detail view of %d", sz, d.PlotH, d.Height)
		}
		if d.AdviceH == 0 {
			t.Errorf("%v: no advice panel", sz)
		}
		if sz == [2]int{120, 40} && d.PlotH-2 < 10 {
			t.Errorf("120×40: %d plot rows, want at least 10", d.PlotH-2)
		}
	}
}

// longAdvice is advice whose lines are longer than any screen here.
func longAdvice(n int) []advisor.Advice {
	var out []advisor.Advice
	for i := 0; i < n; i++ {
		out = append(out, advisor.Advice{Rule: "threshold", Severity: advisor.Warn,
			Title: fmt.Sprintf("advice %d: GPU 0 at 78%% (62 GiB of 80 GiB used), peaked at 86.7%% 19 s ago, over the 80%% warning line; largest: PID 4242 (alice, python train.py) with 55 GiB, end-%d", i, i),
			Remedies: []advisor.RemedyEstimate{{Name: "activation checkpointing", Saving: "~30% of activations ≈ 9 GiB of 55 GiB (estimate)",
				Cost: "about 20–30% more compute per step", How: fmt.Sprintf("model.gradient_checkpointing_enable() or torch.utils.checkpoint around each block, how-%d", i)}}})
	}
	return out
}

// TestDetailAdviceWrapsAndScrolls: no advice line is cut with "…"; what
// does not fit scrolls into view with the arrows and page keys.
func TestDetailAdviceWrapsAndScrolls(t *testing.T) {
	m, _ := newTestModel(Options{})
	setRules(m, testRules{advise: func(sampler.Snapshot, advisor.Target) []advisor.Advice { return longAdvice(6) }})
	send(m, tea.WindowSizeMsg{Width: 80, Height: 24}, snapshotMsg(fakeSnap(t, 1)))
	keys(m, "enter")
	checkFits(t, m, 80, 24)
	first := screenText(m)
	if strings.Contains(first, "end-0") == false || !strings.Contains(first, "advice 0") {
		t.Fatalf("the first advice is not shown whole:\n%s", first)
	}
	if strings.Contains(first, "advice 5") {
		t.Fatalf("six long pieces of advice fit in 80×24 with the plot? \n%s", first)
	}
	for _, l := range strings.Split(first, "\n") {
		if strings.HasSuffix(strings.TrimRight(l, " │"), "…") {
			t.Errorf("advice line cut: %q", l)
		}
	}
	if !strings.Contains(first, "lines 1–") {
		t.Errorf("no scroll position shown:\n%s", first)
	}
	// Scroll to the end: the last piece of advice and its step show.
	keys(m, "G")
	last := screenText(m)
	if !strings.Contains(last, "end-5") || !strings.Contains(last, "how-5") || strings.Contains(last, "advice 0:") {
		t.Errorf("end of the advice not shown after G:\n%s", last)
	}
	keys(m, "g")
	if screenText(m) != first {
		t.Error("g does not scroll back to the top")
	}
	keys(m, "j")
	if s := screenText(m); s == first || !strings.Contains(s, "lines 2–") {
		t.Errorf("j does not scroll one line:\n%s", s)
	}
	// A snapshot keeps the scroll position; another target starts at the top.
	send(m, snapshotMsg(fakeSnap(t, 1)))
	if !strings.Contains(screenText(m), "lines 2–") {
		t.Error("a new snapshot moved the advice")
	}
	checkFits(t, m, 80, 24)
}

// issueSnap is the case of issue 14: GPU 0 at 77.5% now, 86.7% 19 s ago.
func issueSnap() sampler.Snapshot {
	const total = 80 * draw.GiB
	now := fixedStart.Add(10 * time.Minute)
	var ts []time.Time
	var vs []uint64
	for i := 120; i >= 0; i-- {
		ts = append(ts, now.Add(-time.Duration(i)*time.Second))
		v := uint64(total * 775 / 1000)
		if i == 19 {
			v = total * 8675 / 10000
		}
		vs = append(vs, v)
	}
	used := uint64(total * 775 / 1000)
	d := sampler.Device{ID: "0", Name: "NVIDIA H100 80GB HBM3", MemoryTotal: total, MemoryUsed: used, MemoryFree: total - used,
		History: sampler.WindowOf(ts, vs), PeakUsed: total * 8675 / 10000, Processes: []sampler.Process{}}
	e := d
	e.ID, e.Index, e.MemoryUsed, e.MemoryFree = "1", 1, 10*draw.GiB, total-10*draw.GiB
	e.History = sampler.WindowOf(ts[len(ts)-1:], []uint64{10 * draw.GiB})
	return sampler.Snapshot{Time: now, Interval: time.Second, Devices: []sampler.Device{d, e}}
}

// TestOneSeverity: the banner, the row's tag and the bar's colour agree,
// and the row says why a GPU at 77.5% is in warning.
func TestOneSeverity(t *testing.T) {
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		m := advisedModel(Options{}, true)
		send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(issueSnap()))
		s := screenText(m)
		lines := strings.Split(s, "\n")
		banner := lines[1]
		if !strings.Contains(banner, "WARN") || !strings.Contains(banner, "peaked at 86.7% 19 s ago") {
			t.Fatalf("%v: banner %q, want the held warning", sz, banner)
		}
		// GPU 0's panel: its title and the line under it.
		var row string
		for i, l := range lines[2 : len(lines)-1] {
			if strings.Contains(l, "GPU 0 H100") {
				row = l + "\n" + lines[2+i+1]
				break
			}
		}
		if !strings.Contains(row, "WARN") || !strings.Contains(row, "peak 86.7% 19 s ago") {
			t.Errorf("%v: GPU 0's row %q lacks the tag and the reason\n%s", sz, row, s)
		}
		// The bar is in the warning colour, GPU 1's in the ok colour.
		frame := m.View().Content
		warnBar, okBar := m.ctx.Styles.PSev[advisor.Warn].Pre+common.GlyphUsed, m.ctx.Styles.PSev[advisor.Info].Pre+common.GlyphUsed
		if strings.Count(frame, warnBar) != 1 || strings.Count(frame, okBar) != 1 {
			t.Errorf("%v: %d warn-coloured bars and %d ok ones, want one each", sz, strings.Count(frame, warnBar), strings.Count(frame, okBar))
		}
	}
	// The stateless level of the current reading would have said ok.
	if draw.Severity(77.5, advisor.DefaultThresholds()) != advisor.Info {
		t.Fatal("test case: 77.5% should be under the line")
	}
}

// TestDetailSaysTheSeverity: the detail header carries the same tag and
// reason.
func TestDetailSaysTheSeverity(t *testing.T) {
	m := advisedModel(Options{}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(issueSnap()))
	keys(m, "enter")
	s := screenText(m)
	if !strings.Contains(s, "(78%) WARN peak 86.7% 19 s ago") {
		t.Errorf("detail header:\n%s", s)
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "GPU 0 ") && strings.Contains(l, "…") {
			t.Errorf("detail header cut at 120 columns: %q", l)
		}
	}
}

// TestProcessDetailFillsTheProcessUnderTheGPU: a process's detail draws its
// memory filled from the bottom and the whole GPU as a line over it.
func TestProcessDetailFillsTheProcessUnderTheGPU(t *testing.T) {
	m := advisedModel(Options{}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fakeSnap(t, 1)))
	keys(m, "tab", "enter")
	if m.screen != screenDetail || detailPeek(m).Target.PID == 0 {
		t.Fatalf("no process detail open: %+v", detailPeek(m).Target)
	}
	s := screenText(m)
	if !strings.Contains(s, "filled: this process") || !strings.Contains(s, "line: whole GPU") {
		t.Errorf("legend:\n%s", s)
	}
	// The process holds 90% of GPU 0 in the fake source: its fill reaches
	// the bottom row full (⣿) under the GPU's line.
	lines := strings.Split(s, "\n")
	var bottom string
	for _, l := range lines {
		if strings.Contains(l, "0G┤") {
			bottom = l
		}
	}
	if strings.Count(bottom, "⣿") < 50 {
		t.Errorf("bottom row of the plot not filled: %q", bottom)
	}
	checkFits(t, m, 120, 40)
}

// TestReplayOfAnUnsetClock: a recording whose snapshot time is year 0001
// while its history is not: no negative or absurd age anywhere on screen.
func TestReplayOfAnUnsetClock(t *testing.T) {
	snap := issueSnap()
	snap.Time = time.Time{}
	for i := range snap.Devices {
		for j := range snap.Devices[i].Processes {
			snap.Devices[i].Processes[j].StartTime = fixedStart
		}
	}
	m := advisedModel(Options{}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	for _, screen := range []string{screenText(m), func() string { keys(m, "enter"); return screenText(m) }()} {
		if strings.Contains(screen, "922337") || strings.Contains(screen, "-9") || strings.Contains(screen, "106751d") {
			t.Errorf("absurd age on screen:\n%s", screen)
		}
		if !strings.Contains(screen, "peak 86.7%") {
			t.Errorf("the held peak is not shown:\n%s", screen)
		}
	}
}

// TestOnceTableTakesTheAdvisorsSeverity: the one-shot table colours a GPU
// as the live view does, held in warning by its recent peak.
func TestOnceTableTakesTheAdvisorsSeverity(t *testing.T) {
	st := common.NewStyles(true, false)
	out := procs.RenderTable(st, issueSnap(), advisor.DefaultThresholds())
	var row0, row1 string
	for _, l := range strings.Split(out, "\n") {
		switch plain := ansi.Strip(l); {
		case strings.HasPrefix(plain, "0 "):
			row0 = l
		case strings.HasPrefix(plain, "1 "):
			row1 = l
		}
	}
	warn := st.PSev[advisor.Warn].Pre
	if !strings.Contains(row0, warn) || strings.Contains(row1, warn) {
		t.Errorf("GPU 0 (77.5%%, 86.7%% 19 s ago) should be in the warning colour, GPU 1 not:\n%q\n%q", row0, row1)
	}
}
