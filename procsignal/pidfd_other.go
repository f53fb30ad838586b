//go:build !linux

package procsignal

import "syscall"

// Supported reports whether processes can be signalled on this system:
// the check that the PID still is the process shown reads Linux's /proc.
const Supported = false

func pidfdOpen(uint32) (int, error) { return -1, errUnsupported }

func pidfdSendSignal(int, syscall.Signal) error { return errUnsupported }

func kill(uint32, syscall.Signal) error { return errUnsupported }

func closeFD(int) error { return nil }
