package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/ui/common"
)

// footerHints splits the footer (the screen's last line) into its hints,
// each as its key and what the footer says it does; the key is the longest
// key of the live view's or replay's key map that starts the hint.
func footerHints(t *testing.T, where, screen string) [][2]string {
	t.Helper()
	var names []string
	for _, replay := range []bool{false, true} {
		for _, g := range common.NewKeyMap(replay).HelpGroups() {
			for _, b := range g {
				names = append(names, b.Help().Key)
			}
		}
	}
	lines := strings.Split(screen, "\n")
	line := strings.TrimRight(lines[len(lines)-1], " ")
	var hints [][2]string
	for _, seg := range strings.Split(line, " · ") {
		// The process list's state comes first, two spaces before the keys.
		if i := strings.LastIndex(seg, "  "); i >= 0 {
			seg = seg[i+2:]
		}
		k := ""
		for _, n := range names {
			if len(n) > len(k) && strings.HasPrefix(seg, n+" ") {
				k = n
			}
		}
		if k == "" {
			t.Errorf("%s: footer hint %q names no key\n%s", where, seg, line)
			continue
		}
		hints = append(hints, [2]string{k, strings.TrimPrefix(seg, k+" ")})
	}
	return hints
}

// TestFooterHintsDiffer: at every width from 80 to 240 columns, on each
// screen the footer can show, no two hints say the same thing: "< > sort ·
// < > sort" and "F6 choose … F9 choose" told a reader nothing about which
// key does what, and a key is listed once.
func TestFooterHintsDiffer(t *testing.T) {
	snap := demoSnap(t, 10*time.Minute)
	screens := []struct {
		name  string
		opts  Options
		keys  []string
		fleet bool
	}{
		{name: "GPUs", opts: Options{User: demo.User}},
		{name: "processes", opts: Options{User: demo.User}, keys: []string{"tab"}},
		{name: "detail", opts: Options{User: demo.User}, keys: []string{"enter"}},
		{name: "alerts", opts: Options{User: demo.User}, keys: []string{"a"}},
		{name: "replay", opts: Options{User: demo.User, Replay: &fakeReplay{}}},
		{name: "replay detail", opts: Options{User: demo.User, Replay: &fakeReplay{}}, keys: []string{"enter"}},
		{name: "fleet", fleet: true},
		{name: "fleet host", fleet: true, keys: []string{"enter"}},
	}
	for _, sc := range screens {
		m, _ := newTestModel(sc.opts)
		s := snap
		if sc.fleet {
			s = fleetSnap(t)
		}
		send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(s))
		keys(m, sc.keys...)
		shown := 0
		for w := 80; w <= 240; w++ {
			send(m, tea.WindowSizeMsg{Width: w, Height: 40})
			hints := footerHints(t, sc.name, screenText(m))
			if len(hints) > shown {
				shown = len(hints)
			}
			said, keyed := map[string]string{}, map[string]bool{}
			for _, h := range hints {
				if k, ok := said[h[1]]; ok {
					t.Errorf("%s, %d columns: %s and %s both say %q", sc.name, w, k, h[0], h[1])
				}
				if keyed[h[0]] {
					t.Errorf("%s, %d columns: %s is listed twice", sc.name, w, h[0])
				}
				said[h[1]], keyed[h[0]] = h[0], true
			}
		}
		if shown < 3 {
			t.Errorf("%s: the footer shows at most %d hints; the screen was not reached", sc.name, shown)
		}
	}
}
