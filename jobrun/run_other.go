//go:build !unix

package jobrun

import (
	"context"
	"errors"
	"fmt"
)

// Run needs process groups and POSIX signals: on other systems it says so.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Sampler != nil {
		cfg.Sampler.Close()
	}
	return Report{ExitCode: 1}, fmt.Errorf("%w: vramtop run needs a Unix system", errors.ErrUnsupported)
}
