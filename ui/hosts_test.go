package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/procs"
)

// fleetSnap is a fleet of three hosts of two GPUs each; node-c is seen
// only through dcgm-exporter, and is the most pressed.
func fleetSnap(t *testing.T) sampler.Snapshot {
	t.Helper()
	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-a", "node-b", "node-c"}, unlisted: "node-c"}
	snap := fixture(t, src, 10*time.Minute)
	for i := range snap.Devices {
		if snap.Devices[i].Hostname == "node-c" {
			snap.Devices[i].MemoryUsed = snap.Devices[i].MemoryTotal * 98 / 100
		}
	}
	return snap
}

// processLines returns the lines of a table or screen that follow its
// process header (the line starting with GPU and holding PID), up to the
// alerts' header.
func processLines(s string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && strings.HasPrefix(f[0], "GPU") && strings.HasPrefix(f[1], "PID"):
			in = true
		case len(f) > 1 && f[0] == "SEVERITY" && f[1] == "RULE":
			in = false
		case in && strings.TrimSpace(l) != "":
			out = append(out, l)
		}
	}
	return out
}

// TestWriteTableFleetHosts: vramtop fleet --once names each process's GPU
// with its host, and a host seen only through dcgm-exporter says that its
// processes are not listed, with no unattributed row.
func TestWriteTableFleetHosts(t *testing.T) {
	snap := fleetSnap(t)
	var b bytes.Buffer
	if err := WriteTable(&b, snap, DefaultThresholdsForTest()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	golden(t, "fleet_once", out)

	procs := processLines(out)
	if len(procs) == 0 {
		t.Fatalf("no process rows:\n%s", out)
	}
	hosts := map[string]bool{}
	unlisted := 0
	for _, l := range procs {
		gpu := strings.Fields(l)[0]
		host, _, ok := strings.Cut(gpu, ":")
		if !ok {
			t.Errorf("process row without its host: %q", l)
			continue
		}
		hosts[host] = true
		if host == "node-c" {
			if !strings.Contains(l, draw.UnlistedText) {
				t.Errorf("node-c row should say its processes are not listed: %q", l)
			}
			unlisted++
		}
	}
	if !hosts["node-a"] || !hosts["node-b"] {
		t.Errorf("rows of node-a and node-b expected, got hosts %v:\n%s", hosts, out)
	}
	if unlisted != 2 {
		t.Errorf("%d rows for node-c's GPUs, want one each (2):\n%s", unlisted, out)
	}
	if strings.Contains(out, "no GPU processes") {
		t.Errorf("a fleet with listed processes says none:\n%s", out)
	}
}

// TestWriteTableOneHostLabels: a snapshot of one host keeps the plain GPU
// label, and a host that lists nothing says so instead of "no GPU
// processes".
func TestWriteTableOneHostLabels(t *testing.T) {
	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-c"}, unlisted: "node-c"}
	snap := fixture(t, src, 10*time.Minute)
	var b bytes.Buffer
	if err := WriteTable(&b, snap, DefaultThresholdsForTest()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "no GPU processes") || strings.Contains(out, "unattributed") {
		t.Errorf("an unlisted host reads as empty or unattributed:\n%s", out)
	}
	procs := processLines(out)
	if len(procs) != 2 {
		t.Fatalf("want one row per GPU, got %d:\n%s", len(procs), out)
	}
	for i, l := range procs {
		if f := strings.Fields(l); f[0] != []string{"0", "1"}[i] || !strings.Contains(l, draw.UnlistedText) {
			t.Errorf("row %d = %q, want GPU %d and %q", i, l, i, draw.UnlistedText)
		}
	}
}

// TestProcPaneSeveralHosts: the live view's process table names each
// process's GPU with its host when the snapshot spans several hosts, lists
// an unlisted device as such, after the processes, out of the per-user
// totals, and without unattributed memory.
func TestProcPaneSeveralHosts(t *testing.T) {
	snap := fleetSnap(t)
	ctx := &common.Context{Styles: common.NewStyles(true, true), Keys: common.NewKeyMap(false), User: testUser}
	p := procs.New(ctx, &common.Outbox{})
	p.SetSize(140, 40)
	p.Update(common.Shown{Snap: snap, All: snap})
	if len(p.Peek().Rows) == 0 {
		t.Fatal("no rows")
	}
	seenUnlisted := false
	for i, r := range p.Peek().Rows {
		host, _, ok := strings.Cut(r.DevLabel, ":")
		if !ok {
			t.Errorf("row %d: GPU label %q lacks the host", i, r.DevLabel)
		}
		if host == "node-c" {
			if r.Kind != procs.RowUnlisted {
				t.Errorf("row %d: node-c has a row of kind %d, want only unlisted rows", i, r.Kind)
			}
			seenUnlisted = true
		} else if seenUnlisted {
			t.Errorf("row %d (%s) comes after an unlisted device", i, r.DevLabel)
		}
	}
	if !seenUnlisted {
		t.Error("node-c has no row")
	}
	view := p.View()
	for _, want := range []string{"node-a:0", "node-b:1", "node-c:0", draw.UnlistedText} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
	p.Update(keyPress("u")) // by user
	if p.Peek().Group != procs.GroupUser {
		t.Fatal("u should group by user")
	}
	for _, r := range p.Peek().Rows {
		if r.User == "(unknown)" || r.NProcs == 0 && r.User != "(unattributed)" {
			t.Errorf("an unlisted device became a user group: %+v", r)
		}
	}
}

// TestFleetUnlistedHost: in the live view, the host list says a
// dcgm-exporter host's processes are not listed, and the host's screen
// says it in the process table instead of "no GPU processes".
func TestFleetUnlistedHost(t *testing.T) {
	m := newReady(fleetSnap(t), [2]int{120, 40})
	s := screenText(m)
	if !strings.Contains(s, "node-c  2 GPU") || !strings.Contains(s, "processes not listed") {
		t.Fatalf("host list should mark node-c:\n%s", s)
	}
	if strings.Count(s, "processes not listed") != 1 {
		t.Errorf("only node-c's processes are unlisted:\n%s", s)
	}
	keys(m, "enter")
	if m.fleet.Host() != "node-c" {
		t.Fatalf("enter opened %q, want node-c (the most pressed)", m.fleet.Host())
	}
	s = screenText(m)
	golden(t, "fleet_120x40_unlisted", s)
	if strings.Contains(s, "no GPU processes") || strings.Contains(s, "unattributed") {
		t.Errorf("node-c reads as having no processes:\n%s", s)
	}
	if n := strings.Count(s, draw.UnlistedText); n != 2 {
		t.Errorf("%d unlisted rows, want one per GPU:\n%s", n, s)
	}
	// One host on screen: the plain GPU label.
	for _, l := range processLines(s) {
		if f := strings.Fields(l); strings.Contains(f[0], ":") {
			t.Errorf("host view repeats the host in %q", l)
		}
	}
}
