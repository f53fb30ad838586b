package sampler

import "time"

// A Backfiller is a Source that knows a device's history from before the
// sampler started (the fleet source reads it back from Prometheus). When a
// device first appears, the sampler seeds its history ring with the samples
// Backfill returns, oldest first; the ring keeps the newest that fit.
type Backfiller interface {
	Backfill(deviceID string) (times []time.Time, values []uint64)
}
