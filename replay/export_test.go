package replay

import "context"

// Load is Open without a context to end it, for tests.
func Load(paths []string, warn func(Warning)) (*Recording, error) {
	return Open(context.Background(), paths, warn)
}
