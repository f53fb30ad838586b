//go:build unix

package alerthook

import (
	"os/exec"
	"syscall"
)

// inGroup runs c in a process group of its own and makes its cancellation
// (the timeout, or the runner stopping) kill the whole group: what CMD
// started goes with it.
func inGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
}
