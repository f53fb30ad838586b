package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
)

// cutFigure finds a figure or a unit cut by an ellipsis: "61.62…", "~96 m…",
// "(+4…", "GiB…", "86.7%…".
var (
	figureCut = regexp.MustCompile(`(^|[\s(~+\-≈])[(~+\-≈]*\d[\d.,]*%?…`)
	unitCut   = regexp.MustCompile(`\d[\d.,]*%? (B|KiB|MiB|GiB|TiB|min|ms|s|h|W|°C|%|[a-zA-Z]{1,2})…`)
	unitEnd   = regexp.MustCompile(`(^|\s)(KiB|MiB|GiB|TiB|MiB/min|min|ms|°C)…`)
)

func cutFigures(s string) []string {
	var bad []string
	for _, l := range strings.Split(s, "\n") {
		for _, re := range []*regexp.Regexp{figureCut, unitCut, unitEnd} {
			if m := re.FindString(l); m != "" {
				bad = append(bad, fmt.Sprintf("%q in %q", strings.TrimSpace(m), strings.TrimSpace(l)))
			}
		}
	}
	return bad
}

// No figure is cut on the demo's screens at 80×24, 100×30 and 120×40: the
// banners and the GPU rows' notes drop whole words.
func TestNoFigureBeforeAnEllipsis(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {120, 40}} {
		for _, alerts := range []bool{false, true} {
			var m *Model
			if alerts {
				m = alertsModel(t, sz[0], sz[1])
			} else {
				m = advisedModel(Options{User: demo.User, Version: "test"}, false)
				send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(demoSnap(t, 3*time.Minute)))
			}
			s := screenText(m)
			for _, b := range cutFigures(s) {
				t.Errorf("%dx%d: a figure cut: %s", sz[0], sz[1], b)
			}
			if !strings.Contains(s, "PID") {
				t.Fatalf("%dx%d: no processes:\n%s", sz[0], sz[1], s)
			}
		}
	}
}

func TestElide(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"GPU 0 at 77.3% (61.62 GiB of 79.65 GiB used)", 24, "GPU 0 at 77.3% …"},
		{"full in ~96 min at this rate", 12, "full…"},
		{"A100-SXM4-80GB", 11, "A100-SXM4…"},
		{"peak 86.7% 15 s ago", 14, "peak 86.7% …"},
		{"short", 10, "short"},
	} {
		got := draw.Elide(c.in, c.w)
		if strings.HasPrefix(c.in, "A100") {
			got = draw.ElideName(c.in, c.w)
		}
		if got != c.want || common.CellWidth(got) > c.w {
			t.Errorf("elide(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
	}
}

// At 20×6 the warning that the terminal is too small is wrapped, not cut.
func TestTooSmallWarningWhole(t *testing.T) {
	m, _ := ready(t, 2, 20, 6)
	mw, mh := m.minSize()
	s := strings.Join(strings.Fields(screenText(m)), " ")
	if want := fmt.Sprintf("terminal too small (need %d×%d)", mw, mh); !strings.Contains(s, want) {
		t.Errorf("at 20×6 the screen should read %q:\n%s", want, screenText(m))
	}
	checkFits(t, m, 20, 6)
}

// The help screen wraps its legend between words, never inside --warn.
func TestHelpWrapsBetweenWords(t *testing.T) {
	for w := 60; w <= 130; w++ {
		m, _ := ready(t, 2, w, 60)
		keys(m, "?")
		lines := strings.Split(screenText(m), "\n")
		for i, l := range lines {
			if l = strings.TrimRight(l, " "); strings.HasSuffix(l, "-") && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				t.Errorf("at %d columns line %d ends in a hyphen: %q / %q", w, i, l, lines[i+1])
			}
		}
	}
}
