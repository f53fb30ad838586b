//go:build unix

package claims

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The watcher gives the claims of its last read, and a generation that
// moves when they change and only then (a reader re-encodes on it).
func TestWatcherFollowsClaims(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.TryClaim(claim("GPU-aaa"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := Watch(ctx, s, time.Hour)
	act, gen := w.Claims()
	if act["GPU-aaa"].User != "alice" || len(act) != 1 {
		t.Fatalf("first read: %+v", act)
	}
	w.read(s)
	if _, again := w.Claims(); again != gen {
		t.Errorf("the same claims read again moved the generation from %d to %d", gen, again)
	}
	h.Release()
	w.read(s)
	act, after := w.Claims()
	if len(act) != 0 || after == gen {
		t.Errorf("after the release: %+v, generation %d (was %d)", act, after, gen)
	}
}
