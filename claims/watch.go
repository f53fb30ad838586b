package claims

import (
	"context"
	"sync/atomic"
	"time"
)

// Watcher reads a store's claims on a goroutine of its own, every interval,
// so that who reads them (a frame of the live view, a scrape of serve)
// never waits on the directory.
type Watcher struct {
	cur atomic.Pointer[watched]
}

type watched struct {
	claims map[string]Claim
	gen    uint64
}

// Watch reads the claims of s now and then every interval until ctx ends.
func Watch(ctx context.Context, s *Store, interval time.Duration) *Watcher {
	w := &Watcher{}
	w.read(s)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.read(s)
			}
		}
	}()
	return w
}

func (w *Watcher) read(s *Store) {
	act, _ := s.Active()
	prev := w.cur.Load()
	next := &watched{claims: act}
	if prev != nil {
		next.gen = prev.gen
		if !sameClaims(prev.claims, act) {
			next.gen++
		}
	}
	w.cur.Store(next)
}

// Claims returns the claims held at the last read, by UUID (not to be
// written), and a generation that changes only when they do.
func (w *Watcher) Claims() (map[string]Claim, uint64) {
	c := w.cur.Load()
	return c.claims, c.gen
}

// sameClaims reports whether a and b hold the same claims.
func sameClaims(a, b map[string]Claim) bool {
	if len(a) != len(b) {
		return false
	}
	for uuid, x := range a {
		y, ok := b[uuid]
		if !ok || x.User != y.User || x.PID != y.PID || x.Bytes != y.Bytes || x.Command != y.Command ||
			!x.Time.Equal(y.Time) || !x.Until.Equal(y.Until) {
			return false
		}
	}
	return true
}
