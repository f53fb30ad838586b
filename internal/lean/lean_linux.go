package lean

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// releaseMappings pages out the read-only and executable mappings of the
// file exe (the writable data stays: it is the program's own state).
func releaseMappings(exe string) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00411000-009ad000 r-xp 00011000 fe:00 9978974   /usr/bin/vramtop
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		pageOut(uintptr(start), uintptr(end-start))
	}
}
