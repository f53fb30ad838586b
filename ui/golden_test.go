package ui

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// demoSnap runs the built-in demo for d of fixed-clock time at 1 s.
func demoSnap(tb testing.TB, d time.Duration) sampler.Snapshot {
	tb.Helper()
	return fixture(tb, demo.New(fixedStart), d)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./ui -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestGoldenDemo renders the demo after ten minutes at three sizes, with
// the advisor's alerts, plus the detail, help and grouped screens at 120×40.
func TestGoldenDemo(t *testing.T) {
	snap := demoSnap(t, 10*time.Minute)
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		m := advisedModel(Options{User: demo.User, Version: "test"}, false)
		send(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]}, snapshotMsg(snap))
		golden(t, fmt.Sprintf("demo_%dx%d", sz[0], sz[1]), screenText(m))
		checkFits(t, m, sz[0], sz[1])
	}
	m, _ := newTestModel(Options{User: demo.User, Version: "test"})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	keys(m, "enter")
	golden(t, "demo_120x40_gpu0", screenText(m))
	keys(m, "esc", "u")
	golden(t, "demo_120x40_users", screenText(m))
	keys(m, "u", "?")
	golden(t, "demo_120x40_help", screenText(m))
}

func TestGoldenCompactEightGPUs(t *testing.T) {
	snap := fixture(t, demo.NewGPUs(fixedStart, 8), 10*time.Minute)
	m := advisedModel(Options{User: demo.User, Version: "test"}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	if !compactGPUs(m) {
		t.Error("8 GPUs should be compact")
	}
	golden(t, "demo8_120x40", screenText(m))
}

func TestWriteTable(t *testing.T) {
	snap := demoSnap(t, 10*time.Minute)
	var b bytes.Buffer
	if err := WriteTable(&b, snap, DefaultThresholdsForTest()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b") {
		t.Error("a table written to a non-terminal has ANSI codes")
	}
	if ansi.Strip(out) != out {
		t.Error("escape sequences in plain output")
	}
	for _, want := range []string{"GPU", "NAME", "USED", "RESERVED", "n/a", "PID", "USER", "COMMAND", "GiB", "unattributed", "other PID namespace"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	// Columns line up: every device row has its USED column at the same
	// offset as the header's.
	lines := strings.Split(out, "\n")
	hi := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "GPU  NAME") {
			hi = i
		}
	}
	if hi < 0 {
		t.Fatalf("no device header:\n%s", out)
	}
	// USED is right-aligned: each value ends where the header's USED does.
	end := strings.Index(lines[hi], "USED") + len("USED")
	rows := 0
	for _, l := range lines[hi+1:] {
		if l == "" {
			break
		}
		rows++
		if len(l) <= end || l[end-1] == ' ' || l[end] != ' ' {
			t.Errorf("USED column not aligned with the header at %d:\n%s\n%s", end, lines[hi], l)
		}
	}
	if rows != len(snap.Devices) {
		t.Errorf("%d device rows, want %d", rows, len(snap.Devices))
	}
	golden(t, "demo_once", out)
}

func TestWriteTableOddSnapshots(t *testing.T) {
	for _, s := range []sampler.Snapshot{{}, {Devices: []sampler.Device{{ID: "0", Err: "GPU is lost"}}}} {
		var b bytes.Buffer
		if err := WriteTable(&b, s, DefaultThresholdsForTest()); err != nil {
			t.Fatal(err)
		}
		if len(s.Devices) > 0 && !strings.Contains(b.String(), "GPU is lost") {
			t.Errorf("device error not shown:\n%s", b.String())
		}
	}
}

func TestGoldenFleet(t *testing.T) {
	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-a", "node-b", "node-c"}}
	snap := fixture(t, src, 10*time.Minute)
	snap.Devices[2].MemoryUsed = snap.Devices[2].MemoryTotal * 97 / 100 // node-b:0
	snap.Devices[5].Err = "no data from this host for 2m"
	m := advisedModel(Options{User: testUser, Title: "vramtop fleet"}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	golden(t, "fleet_120x40", screenText(m))
	keys(m, "enter")
	golden(t, "fleet_120x40_host", screenText(m))
}

// TestGoldenAlertsAndHelp renders the main view with the advisor's banners,
// the alerts list (a) and the help (?) at three sizes.
func TestGoldenAlertsAndHelp(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		m := alertsModel(t, sz[0], sz[1])
		golden(t, fmt.Sprintf("alerts_main_%dx%d", sz[0], sz[1]), screenText(m))
		checkFits(t, m, sz[0], sz[1])
		keys(m, "a")
		golden(t, fmt.Sprintf("alerts_%dx%d", sz[0], sz[1]), screenText(m))
		checkFits(t, m, sz[0], sz[1])
		keys(m, "a", "?")
		golden(t, fmt.Sprintf("help_%dx%d", sz[0], sz[1]), screenText(m))
		checkFits(t, m, sz[0], sz[1])
	}
}
