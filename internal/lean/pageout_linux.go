package lean

import "golang.org/x/sys/unix"

// pageOut is madvise(MADV_PAGEOUT) over [addr, addr+n). The range is the
// executable's own mapping, never Go-managed memory.
func pageOut(addr, n uintptr) {
	unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_PAGEOUT)
}
