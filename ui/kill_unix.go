//go:build unix

package ui

import "syscall"

// signalProcess sends sig to pid.
func signalProcess(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
