package state

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// staleAfter is how many publishing intervals without a snapshot make the
// display stale.
const staleAfter = 3

// Messages of the freshness: the check that no snapshot came for
// staleAfter intervals, and the tick that updates the stale data's age.
// The root hands both to Freshness.Update.
type (
	StaleCheck struct{ gen uint64 }
	StaleTick  struct{ gen uint64 }
)

// Freshness says how new the data on screen is: when the last snapshot
// came, whether none came since for staleAfter publishing intervals
// (stale: checked by one tea.Tick per snapshot, the age then updated once
// a second) and whether the source ended.
type Freshness struct {
	arrived      time.Time
	stale, ended bool
	gen          uint64 // of the last snapshot: a check of an older one is overtaken
}

// Arrive records a snapshot that came at now from a source publishing every
// interval. A live source gets the check that marks the display stale if no
// other follows in time; a replay's time is the user's, never stale.
func (f *Freshness) Arrive(now time.Time, interval time.Duration, live bool) tea.Cmd {
	f.arrived, f.stale = now, false
	f.gen++
	if !live {
		return nil
	}
	every := max(interval, time.Second) // the live view publishes once a second
	gen := f.gen
	return tea.Tick(staleAfter*every+every/10, func(time.Time) tea.Msg { return StaleCheck{gen} })
}

// End records that the source ended.
func (f *Freshness) End() { f.ended = true }

// Update takes a StaleCheck or a StaleTick; changed is false for one that
// changes nothing (overtaken by a newer snapshot, or before any was shown).
func (f *Freshness) Update(msg tea.Msg, shown bool) (cmd tea.Cmd, changed bool) {
	switch msg := msg.(type) {
	case StaleCheck:
		if msg.gen != f.gen || !shown {
			return nil, false
		}
		f.stale = true
	case StaleTick:
		if msg.gen != f.gen || !f.stale {
			return nil, false
		}
	default:
		return nil, false
	}
	gen := f.gen
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return StaleTick{gen} }), true
}

// Stale reports whether no snapshot came for staleAfter publishing
// intervals.
func (f *Freshness) Stale() bool { return f.stale }

// Arrived is when the last snapshot came.
func (f *Freshness) Arrived() time.Time { return f.arrived }

// Ended reports whether the source ended.
func (f *Freshness) Ended() bool { return f.ended }

// Check is the stale check of the last snapshot, the one Arrive scheduled
// for it (before any snapshot, the check of none).
func (f *Freshness) Check() StaleCheck { return StaleCheck{f.gen} }

// Tick is the tick of the stale data's age for the last snapshot.
func (f *Freshness) Tick() StaleTick { return StaleTick{f.gen} }
