package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/draw"
)

// The screen knows a down host by the fleet source's mark (ui does not
// import the source).
func TestHostDownPrefixIsTheFleets(t *testing.T) {
	d := sampler.Device{Err: fleet.HostDownPrefix + "exporter not answering since 09:08:00 (last values shown)"}
	if _, down := draw.HostDown(d); !down || !fleet.IsHostDown(d) || draw.HostDownPrefix != fleet.HostDownPrefix {
		t.Errorf("ui's %q is not the fleet's %q", draw.HostDownPrefix, fleet.HostDownPrefix)
	}
}

// downFleet is a fleet of three hosts where node-a is down: its devices
// hold the last values seen, marked as the fleet source marks them.
func downFleet(t *testing.T) sampler.Snapshot {
	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-a", "node-b", "node-c"}}
	snap := fixture(t, src, 10*time.Minute)
	for i := range snap.Devices {
		if snap.Devices[i].Hostname == "node-a" {
			snap.Devices[i].Err = draw.HostDownPrefix + "exporter not answering since 09:08:00 (last values shown)"
		}
	}
	return snap
}

// TestFleetHostDown: a host that is down stays listed, after the hosts that
// answer, marked down with its last values and since when; its old values
// raise no alert.
func TestFleetHostDown(t *testing.T) {
	m := advisedModel(Options{User: testUser, Title: "vramtop fleet"}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(downFleet(t)))
	s := screenText(m)
	golden(t, "fleet_down_120x40", s)
	checkFits(t, m, 120, 40)
	lines := strings.Split(s, "\n")
	var hostLines []string
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "node-") && strings.Contains(l, "GPU  ") {
			hostLines = append(hostLines, l)
			if strings.Contains(l, "node-a") {
				at = i
			}
		}
	}
	if len(hostLines) != 3 || at < 0 {
		t.Fatalf("want three hosts listed, node-a among them:\n%s", s)
	}
	if !strings.Contains(hostLines[2], "node-a") {
		t.Errorf("the down host is not listed last: %q", hostLines)
	}
	if l := lines[at]; !strings.Contains(l, "DOWN") || !strings.Contains(l, "since 09:08:00") || !strings.Contains(l, "last seen: max 95%") {
		t.Errorf("down host line %q", l)
	}
	for _, l := range lines[at+1 : at+3] {
		if !strings.Contains(l, "/140.4G") || !strings.Contains(l, "last values, down since 09:08:00") || strings.Contains(l, "error:") || strings.Contains(l, "CRIT") {
			t.Errorf("down device line %q: want its last values, since when, no error and no alert", l)
		}
	}
	for _, a := range m.on.Shown().Alerts {
		if strings.HasPrefix(a.DeviceID, "node-a:") {
			t.Errorf("an alert on the down host's old values: %+v", a)
		}
	}
	// Opened, the host's panels say the same.
	keys(m, "G", "enter")
	if s := screenText(m); !strings.Contains(s, "last values, down since 09:08:00") {
		t.Errorf("opened down host:\n%s", s)
	}
}

// TestFleetAgeUnknown: a process whose start time is unknown (the fleet's)
// has AGE n/a, not the time since vramtop first saw it.
func TestFleetAgeUnknown(t *testing.T) {
	snap := downFleet(t)
	for i := range snap.Devices {
		for j := range snap.Devices[i].Processes {
			snap.Devices[i].Processes[j].StartTime = time.Time{}
		}
	}
	m := advisedModel(Options{User: testUser}, false)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	keys(m, "enter") // node-b
	s := screenText(m)
	rows := 0
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, "python") || strings.Contains(l, "GPU node") {
			continue
		}
		rows++
		if strings.Contains(l, " 0s ") || !strings.Contains(l, " n/a ") {
			t.Errorf("process row without a start time: %q", l)
		}
	}
	if rows == 0 {
		t.Fatalf("no process rows:\n%s", s)
	}
}

func TestAgesNeverNegativeOrAbsurd(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-30 * time.Second:                  "0s",
		-2 * time.Hour:                     draw.NA,
		45 * time.Second:                   "45s",
		26 * time.Hour:                     "1d02h",
		fixedStart.Sub(time.Time{}):        draw.NA, // a year-0001 start time
		time.Time{}.Sub(fixedStart):        draw.NA,
		time.Duration(1<<63 - 1):           draw.NA,
		time.Duration(-1 << 63):            draw.NA,
		100*365*24*time.Hour - time.Minute: "36499d23h",
	} {
		if got := draw.Age(d); got != want {
			t.Errorf("fmtAge(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestFleetHostProcessesNotReadYet: opening a host tells the source which
// one; until its processes are read the table says so, never "no GPU
// processes" nor all of a GPU's memory unattributed; back on the list of
// hosts the source is told no host is open.
func TestFleetHostProcessesNotReadYet(t *testing.T) {
	var opened []string
	m := advisedModel(Options{User: testUser, Title: "vramtop fleet", OpenHost: func(h string) { opened = append(opened, h) }}, false)
	src := &fakeSource{start: fixedStart, ngpu: 2, hosts: []string{"node-a", "node-b"}}
	snap := fixture(t, src, 10*time.Minute)
	for i := range snap.Devices {
		snap.Devices[i].Processes, snap.Devices[i].Unattributed, snap.Devices[i].ProcessesNotRead = nil, nil, true
	}
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(snap))
	keys(m, "enter")
	if len(opened) != 1 || opened[0] == "" {
		t.Fatalf("the source was told %q on opening a host, want its name", opened)
	}
	s := screenText(m)
	if !strings.Contains(s, draw.NotReadText) || strings.Contains(s, "no GPU processes") || strings.Contains(s, "unattributed") {
		t.Errorf("an opened host whose processes are not read yet: want %q for each GPU, not an empty list:\n%s", draw.NotReadText, s)
	}
	keys(m, "esc")
	if len(opened) != 2 || opened[1] != "" {
		t.Errorf("the source was told %q on going back to the hosts, want \"\" last", opened)
	}
}
