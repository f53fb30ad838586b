//go:build unix

package runlog

import (
	"os"
	"syscall"
)

// lock takes an exclusive lock on path (made when missing), so that two
// runs ending at once do not compact the file under each other.
func lock(path string) (unlock func()) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return func() {}
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	return func() { f.Close() }
}
