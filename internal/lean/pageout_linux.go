package lean

import "golang.org/x/sys/unix"

// dropPages is madvise(MADV_DONTNEED) over [addr, addr+n), a range of the
// executable's own read-only mapping, never Go-managed memory. Unlike
// MADV_PAGEOUT it needs no right to write the file (an executable in
// /usr/bin run by a user) and it drops this process's pages even while
// another process maps them too; the page cache keeps them.
func dropPages(addr, n uintptr) {
	unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_DONTNEED)
}
