// Package state holds what the live view's root makes of its input, each
// in a small type whose fields only its methods write: the snapshot on
// screen and the pause (OnScreen), whether the data is stale (Freshness),
// where the panes lie (Geometry), a fleet's open host (Fleet) and the
// interval and graph span the user steps through (Tuning). The root holds
// them as values and goes through their methods; being a package of their
// own, the compiler keeps it to that.
package state
