package lean

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// A cgo executable's mappings, as /proc/PID/smaps lists them (abridged).
const exeSmaps = `00400000-00411000 r--p 00000000 fe:00 9987262                            /usr/bin/vramtop
Size:                 68 kB
Rss:                  68 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
00411000-00bde000 r-xp 00011000 fe:00 9987262                            /usr/bin/vramtop
Size:               7988 kB
Rss:                2740 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
00bde000-014eb000 r--p 007de000 fe:00 9987262                            /usr/bin/vramtop
Size:               9268 kB
Rss:                5572 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
014eb000-014ec000 r--p 010ea000 fe:00 9987262                            /usr/bin/vramtop
Size:                  4 kB
Rss:                   4 kB
Anonymous:             4 kB
VmFlags: rd mr mw me ac sd
014ec000-015c8000 rw-p 010eb000 fe:00 9987262                            /usr/bin/vramtop
Size:                880 kB
Rss:                 600 kB
Anonymous:           108 kB
VmFlags: rd wr mr mw me ac sd
015c8000-0382f000 rw-p 00000000 00:00 0
Size:              35228 kB
Anonymous:          2308 kB
7f27a7200000-7f27a7300000 r-xp 00000000 fe:00 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
Size:               1024 kB
Anonymous:             0 kB
`

func TestDroppableIsTheExecutablesFileBackedReadOnlyPages(t *testing.T) {
	got := droppable(strings.NewReader(exeSmaps), "/usr/bin/vramtop")
	want := []span{{0x400000, 0x411000}, {0x411000, 0xbde000}, {0xbde000, 0x14eb000}}
	if len(got) != len(want) {
		t.Fatalf("droppable = %x, want %x (not the relocated page, the data, the heap or libc)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("droppable = %x, want %x", got, want)
		}
	}
	if got := droppable(strings.NewReader(exeSmaps), "/usr/bin/other"); len(got) != 0 {
		t.Fatalf("another executable's name matched: %x", got)
	}
}

// residentKiB is the resident memory of the running test binary's
// read-only mappings, from /proc/self/smaps.
func residentKiB(t *testing.T, exe string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps here")
	}
	kib, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && !strings.HasSuffix(f[0], ":"):
			in = len(f) >= 6 && f[5] == exe && !strings.Contains(f[1], "w")
		case in && len(f) >= 2 && f[0] == "Rss:":
			n, _ := strconv.Atoi(f[1])
			kib += n
		}
	}
	return kib
}

// The running program's executable pages are released, and it goes on: what
// it runs again faults back in.
func TestReleaseStartupPagesOnTheRunningProgram(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	before := residentKiB(t, exe)
	if before == 0 {
		t.Fatalf("no resident mapping of %s found", exe)
	}
	ReleaseStartupPages()
	after := residentKiB(t, exe)
	if after >= before {
		t.Fatalf("executable resident %d KiB before the release, %d KiB after: nothing was released", before, after)
	}
	t.Logf("executable resident: %d KiB before, %d KiB after", before, after)
}
