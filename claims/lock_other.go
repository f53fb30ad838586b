//go:build !unix

package claims

import (
	"errors"
	"os"
)

var errUnsupported = errors.New("GPU claims need flock(2), which this system lacks")

// Dir returns the claims directory.
func Dir() string { return os.Getenv(EnvDir) }

// Store is a claims directory; here there is none.
type Store struct{}

// Open fails: claims need a Unix system.
func Open(string) (*Store, error) { return nil, errUnsupported }

// Path is where the store is.
func (*Store) Path() string { return "" }

// Held is a claim this process holds.
type Held struct{ Claim }

// File is nil here.
func (*Held) File() *os.File { return nil }

// Rewrite does nothing here.
func (*Held) Rewrite(Claim) error { return errUnsupported }

// Release does nothing here.
func (*Held) Release() {}

// TryClaim fails here.
func (*Store) TryClaim(Claim) (*Held, error) { return nil, errUnsupported }

// Active has no claims here.
func (*Store) Active() (map[string]Claim, []string) { return nil, nil }
