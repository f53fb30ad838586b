package procsignal

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported reports whether processes can be signalled on this system.
const Supported = true

func pidfdOpen(pid uint32) (int, error) {
	fd, err := unix.PidfdOpen(int(pid), 0)
	// ENOSYS: a kernel before 5.3; EPERM: a seccomp filter that does not
	// know the call (pidfd_open itself checks no permission).
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		return -1, errNoPidfd
	}
	return fd, err
}

func pidfdSendSignal(fd int, sig syscall.Signal) error {
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

func kill(pid uint32, sig syscall.Signal) error { return syscall.Kill(int(pid), sig) }

func closeFD(fd int) error { return syscall.Close(fd) }
