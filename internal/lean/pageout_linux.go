package lean

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropPages is madvise(MADV_DONTNEED) over [addr, addr+n), a range of the
// executable's own read-only mapping, never Go-managed memory, after
// MADV_RANDOM: a page used again is read back alone, not with the read-ahead
// window around it (8 MB on the development machine's disk). Unlike
// MADV_PAGEOUT, DONTNEED needs no right to write the file (an executable in
// /usr/bin run by a user) and drops this process's pages even while another
// process maps them too.
func dropPages(addr, n uintptr) {
	unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_RANDOM)
	unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_DONTNEED)
}

// forgetCached is posix_fadvise(POSIX_FADV_DONTNEED) over the file exe: the
// kernel drops its clean cached pages that no process maps (another
// vramtop's stay). Reading the file is the only right it needs.
func forgetCached(exe string) {
	f, err := os.Open(exe)
	if err != nil {
		return
	}
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	f.Close()
}
