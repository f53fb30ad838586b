// Package ui is vramtop's terminal interface. It renders Snapshots; it never
// samples and never imports NVML.
package ui

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
)

// Options configure the live view.
type Options struct {
	Thresholds advisor.Thresholds
	Bell       bool
	// SetInterval changes the sampler's interval (+/- keys); nil when the
	// source cannot change it (replay).
	SetInterval func(time.Duration)
	Version     string
}

// Run shows the live view until the user quits or ctx ends.
func Run(ctx context.Context, snaps <-chan sampler.Snapshot, opts Options) error {
	return errors.New("live view not built yet")
}

// WriteTable prints one snapshot as a plain table (vramtop --once).
func WriteTable(w io.Writer, snap sampler.Snapshot, th advisor.Thresholds) error {
	return errors.New("table not built yet")
}
