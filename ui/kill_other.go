//go:build !unix

package ui

import (
	"errors"
	"syscall"
)

// signalProcess cannot signal processes on this system.
func signalProcess(pid int, sig syscall.Signal) error { return errors.ErrUnsupported }
