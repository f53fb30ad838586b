package state

// OnScreen is the snapshot on screen and the newest one received, each with
// its verdict (a T holds both): they differ while the display is paused
// (p).
type OnScreen[T any] struct {
	have   bool // a snapshot was shown
	paused bool
	shown  T
	latest T
}

// Receive takes the newest snapshot; it reports whether it is to be shown
// (not while paused).
func (o *OnScreen[T]) Receive(j T) bool {
	o.latest = j
	if o.paused {
		return false
	}
	o.shown, o.have = j, true
	return true
}

// TogglePause pauses the display or resumes it; resuming shows the newest
// snapshot, with its own alerts (it reports whether there is one to show).
func (o *OnScreen[T]) TogglePause() (show bool) {
	o.paused = !o.paused
	if o.paused || !o.have {
		return false
	}
	o.shown = o.latest
	return true
}

// Have reports whether a snapshot was shown.
func (o *OnScreen[T]) Have() bool { return o.have }

// Paused reports whether the display is paused.
func (o *OnScreen[T]) Paused() bool { return o.paused }

// Shown is the snapshot on screen and its verdict.
func (o *OnScreen[T]) Shown() T { return o.shown }
