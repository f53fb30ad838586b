//go:build unix

package jobrun

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// foregroundTTY reports whether in is a terminal whose foreground process
// group is ours: the child can then take the terminal over, as a shell's
// job does.
func foregroundTTY(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// reclaimTerminal makes our process group the terminal's foreground group
// again once the child's group is done with it. A background group that
// sets the foreground group is sent SIGTTOU, which is ignored meanwhile.
func reclaimTerminal(f *os.File) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}
