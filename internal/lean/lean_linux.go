package lean

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// releaseMappings drops the pages of the file exe's read-only mappings
// from the process, then asks the kernel to forget those of its cached
// pages that no process maps any more. What the program uses again is read
// back a little at a time; left in the page cache, it would come back in
// the page cache's own units, up to a 2 MB folio for a freshly written
// file (on the H200 host, 3.6 MB of the executable stayed resident with
// the pages evicted, 8.5 MB with them cached).
func releaseMappings(exe string) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	spans := droppable(f, exe)
	f.Close()
	for _, s := range spans {
		dropPages(s.start, s.end-s.start)
	}
	if len(spans) > 0 {
		forgetCached(exe)
	}
}

// span is an address range [start, end).
type span struct{ start, end uintptr }

// droppable returns the mappings of the file exe in smaps (the format of
// /proc/PID/smaps) that are not writable and hold no private copy of a page:
// dropping a private copy (a GOT the dynamic linker relocated, then made
// read-only) would bring back the file's bytes in its place. The writable
// data is the program's own state and stays.
func droppable(smaps io.Reader, exe string) []span {
	var (
		spans []span
		cur   = -1
	)
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		// 00411000-009ad000 r-xp 00011000 fe:00 9978974   /usr/bin/vramtop
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && !strings.HasSuffix(fields[0], ":") {
			cur = -1
			lo, hi, ok := strings.Cut(fields[0], "-")
			if !ok || len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
				continue
			}
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil || end <= start {
				continue
			}
			spans = append(spans, span{uintptr(start), uintptr(end)})
			cur = len(spans) - 1
			continue
		}
		if cur >= 0 && len(fields) >= 2 && fields[0] == "Anonymous:" && fields[1] != "0" {
			spans = append(spans[:cur], spans[cur+1:]...)
			cur = -1
		}
	}
	return spans
}
