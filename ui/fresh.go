package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// staleAfter is how many publishing intervals without a snapshot make the
// display stale.
const staleAfter = 3

// Messages of the freshness: the check that no snapshot came for
// staleAfter intervals, and the tick that updates the stale data's age.
type (
	staleCheck struct{ gen uint64 }
	staleTick  struct{ gen uint64 }
)

// freshness says how new the data on screen is: when the last snapshot
// came, whether none came since for staleAfter publishing intervals
// (stale: checked by one tea.Tick per snapshot, the age then updated once
// a second) and whether the source ended.
type freshness struct {
	arrived      time.Time
	stale, ended bool
	gen          uint64 // of the last snapshot: a check of an older one is overtaken
}

// arrive records a snapshot that came at now from a source publishing every
// interval. A live source gets the check that marks the display stale if no
// other follows in time; a replay's time is the user's, never stale.
func (f *freshness) arrive(now time.Time, interval time.Duration, live bool) tea.Cmd {
	f.arrived, f.stale = now, false
	f.gen++
	if !live {
		return nil
	}
	every := max(interval, time.Second) // the live view publishes once a second
	gen := f.gen
	return tea.Tick(staleAfter*every+every/10, func(time.Time) tea.Msg { return staleCheck{gen} })
}

// end records that the source ended.
func (f *freshness) end() { f.ended = true }

// update takes a staleCheck or a staleTick; changed is false for one that
// changes nothing (overtaken by a newer snapshot, or before any was shown).
func (f *freshness) update(msg tea.Msg, shown bool) (cmd tea.Cmd, changed bool) {
	switch msg := msg.(type) {
	case staleCheck:
		if msg.gen != f.gen || !shown {
			return nil, false
		}
		f.stale = true
	case staleTick:
		if msg.gen != f.gen || !f.stale {
			return nil, false
		}
	default:
		return nil, false
	}
	gen := f.gen
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return staleTick{gen} }), true
}
