package ui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/sampler"
)

// A GPU claimed with vramtop pick or wait is marked, and says by whom, how
// much and until when, in the panels and in the compact list.
func TestClaimedGPUIsShown(t *testing.T) {
	for _, c := range []struct {
		ngpu, w, h int
	}{{2, 120, 40}, {2, 70, 40}, {10, 120, 40}} {
		m, _ := newTestModel(Options{Claim: func(d sampler.Device) string {
			if d.UUID == "GPU-one" {
				return "alice, 40 GiB, until 14:02:05"
			}
			return ""
		}})
		snap := fakeSnap(t, c.ngpu)
		snap.Devices = slices.Clone(snap.Devices)
		for i := range snap.Devices {
			snap.Devices[i].UUID = "GPU-other"
		}
		snap.Devices[1].UUID = "GPU-one"
		send(m, tea.WindowSizeMsg{Width: c.w, Height: c.h}, snapshotMsg(snap))
		screen := screenText(m)
		if strings.Count(screen, "⚑") != 1 {
			t.Errorf("%d GPUs, %d columns: %d claim marks, want one:\n%s", c.ngpu, c.w, strings.Count(screen, "⚑"), screen)
		}
		want := "claimed by alice, 40 GiB, until 14:02:05"
		if c.w < 100 {
			want = "claimed by alice, 40 GiB" // the rest cut to the column
		}
		if c.ngpu == 2 && !strings.Contains(screen, want) {
			t.Errorf("%d columns: the panel does not say who claimed GPU 1:\n%s", c.w, screen)
		}
	}
}

// A fleet's claimed GPU (by its device ID: a host's GPU 0 and another's
// share a UUID in this fixture, never a claim) is marked in the list of
// hosts, and its panel says by whom and how much once its host is open.
func TestFleetClaimedGPUIsShown(t *testing.T) {
	m, _ := newTestModel(Options{Claim: func(d sampler.Device) string {
		if d.ID == "node-b:1" {
			return "alice, 40 GiB"
		}
		return ""
	}})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, snapshotMsg(fleetSnap(t)))
	if s := screenText(m); strings.Count(s, "⚑") != 1 {
		t.Errorf("the list of hosts has %d claim marks, want one:\n%s", strings.Count(s, "⚑"), s)
	}
	for range 3 {
		if keys(m, "enter"); m.fleet.Host() == "node-b" {
			break
		}
		keys(m, "esc", "down")
	}
	if m.fleet.Host() != "node-b" {
		t.Fatalf("node-b did not open (%q)", m.fleet.Host())
	}
	s := screenText(m)
	if strings.Count(s, "⚑") != 1 || !strings.Contains(s, "claimed by alice, 40 GiB") {
		t.Errorf("node-b open: %d claim marks, want one saying who claimed GPU 1:\n%s", strings.Count(s, "⚑"), s)
	}
}
