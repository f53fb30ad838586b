package hostproc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const fixtureProc = "testdata/proc"

// fixtureBoot is the btime of testdata/proc/stat.
var fixtureBoot = time.Unix(1700000000, 0)

func TestProcReaderFixtures(t *testing.T) {
	r := NewProcReader(fixtureProc)
	tests := []struct {
		pid       uint32
		user      string
		uid       uint32
		command   string
		container string
		start     time.Time
		job       string
	}{
		// cgroup v2, Docker scope; NUL-separated arguments, trailing NUL.
		{1001, "root", 0, "python3 train.py --epochs 10", "3f4e5d6c7b8a", fixtureBoot.Add(5000 * time.Second), "docker 3f4e5d6c7b8a"},
		// comm with spaces and parentheses, empty cmdline; cgroup v1 kubepods.
		{1002, "root", 0, "[a) b (c]", "a1b2c3d4e5f6", fixtureBoot.Add(1234560 * time.Millisecond), "pod 0b1c2d3e"},
		// a UID no user database knows; cgroup v2 cri-containerd under kubepods.slice.
		{1003, "4000123", 4000123, "/usr/lib/xorg/Xorg :0 -nolisten tcp", "0123456789ab", fixtureBoot.Add(420 * time.Millisecond), "pod 0b1c2d3e"},
		// rewritten title padded with NULs; rootless Podman.
		{1004, "root", 0, "vllm serve  --port 8000", "fedcba987654", fixtureBoot.Add(9000 * time.Second), "podman fedcba987654"},
		// a login session: no container.
		{1005, "root", 0, "/opt/conda/bin/python -m jupyter lab", "", fixtureBoot.Add(7000 * time.Second), ""},
		// Podman's conmon runs beside the container, not in it.
		{1006, "root", 0, "/usr/bin/conmon --api-version 1", "", fixtureBoot.Add(8000 * time.Second), ""},
	}
	for _, tt := range tests {
		got := r.Lookup(tt.pid)
		if !got.Visible {
			t.Errorf("pid %d: not visible", tt.pid)
		}
		if !got.HasUID || got.UID != tt.uid || got.User != tt.user {
			t.Errorf("pid %d: uid %d (has %v) user %q, want %d %q", tt.pid, got.UID, got.HasUID, got.User, tt.uid, tt.user)
		}
		if got.Command != tt.command {
			t.Errorf("pid %d: command %q, want %q", tt.pid, got.Command, tt.command)
		}
		if got.Container != tt.container {
			t.Errorf("pid %d: container %q, want %q", tt.pid, got.Container, tt.container)
		}
		if name := got.Job.Name(); name != tt.job {
			t.Errorf("pid %d: job %q, want %q", tt.pid, name, tt.job)
		}
		if !got.StartTime.Equal(tt.start) {
			t.Errorf("pid %d: start %v, want %v", tt.pid, got.StartTime, tt.start)
		}
	}
}

func TestProcReaderMissingPID(t *testing.T) {
	r := NewProcReader(fixtureProc)
	got := r.Lookup(4242)
	if got.Visible || got.Command != "" || got.User != "" || got.HasUID || !got.StartTime.IsZero() {
		t.Fatalf("pid absent from /proc: got %+v, want an invisible process with nothing known", got)
	}
}

// copyProcFixtures copies the fixtures to a directory the test may change.
func copyProcFixtures(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(fixtureProc, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixtureProc, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeProcFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestProcReaderCachesPerStartTime(t *testing.T) {
	root := copyProcFixtures(t)
	r := NewProcReader(root)
	first := r.Lookup(1001)
	r.Prune()

	// Same process (same start time): its command line is not read again.
	writeProcFile(t, filepath.Join(root, "1001", "cmdline"), "changed\x00")
	if got := r.Lookup(1001); got.Command != first.Command {
		t.Fatalf("known process re-read: command %q, want cached %q", got.Command, first.Command)
	}
	r.Prune()

	// The PID reused by a new process (another start time): read afresh.
	stat, err := os.ReadFile(filepath.Join(root, "1001", "stat"))
	if err != nil {
		t.Fatal(err)
	}
	writeProcFile(t, filepath.Join(root, "1001", "stat"), strings.Replace(string(stat), " 500000 ", " 600000 ", 1))
	// A known process's stat is read on every sweep.
	got := r.Lookup(1001)
	if got.Command != "changed" {
		t.Fatalf("reused PID: command %q, want the new process's %q", got.Command, "changed")
	}
	if want := fixtureBoot.Add(6000 * time.Second); !got.StartTime.Equal(want) {
		t.Fatalf("reused PID: start %v, want %v", got.StartTime, want)
	}
}

func TestProcReaderPruneEvicts(t *testing.T) {
	r := NewProcReader(fixtureProc)
	r.Lookup(1001)
	r.Lookup(1002)
	r.Prune()
	r.Lookup(1001)
	r.Prune()
	if r.Len() != 1 {
		t.Fatalf("after a sweep listing only pid 1001, %d processes cached, want 1", r.Len())
	}
	r.Prune()
	if r.Len() != 0 {
		t.Fatalf("after a sweep listing nothing, %d processes cached, want 0", r.Len())
	}
}

func TestProcReaderProcessGone(t *testing.T) {
	root := copyProcFixtures(t)
	r := NewProcReader(root)
	if !r.Lookup(1005).Visible {
		t.Fatal("pid 1005 not visible")
	}
	r.Prune()
	if err := os.RemoveAll(filepath.Join(root, "1005")); err != nil {
		t.Fatal(err)
	}
	if got := r.Lookup(1005); got.Visible || got.Command != "" {
		t.Fatalf("the sweep after /proc/1005 vanished: %+v, want invisible", got)
	}
}

func TestProcReaderUserLookupsCached(t *testing.T) {
	r := NewProcReader(fixtureProc)
	calls := map[uint32]int{}
	r.lookupUID = func(uid uint32) (string, error) {
		calls[uid]++
		if uid == 0 {
			return "root", nil
		}
		return "", errors.New("unknown user")
	}
	clock := time.Unix(1800000000, 0)
	r.now = func() time.Time { return clock }
	for range 3 {
		for _, pid := range []uint32{1001, 1002, 1003, 1004} {
			r.Lookup(pid)
		}
		// Forget the processes so every sweep resolves their users again.
		r.Prune()
		r.Prune()
	}
	if calls[0] != 1 || calls[4000123] != 1 {
		t.Fatalf("user lookups %v, want one per UID", calls)
	}
	// A failed lookup is retried after a while (a directory service may
	// have been down), a successful one is not.
	clock = clock.Add(userRetry + time.Second)
	r.Lookup(1001)
	r.Lookup(1003)
	if calls[0] != 1 || calls[4000123] != 2 {
		t.Fatalf("after %v: user lookups %v, want root cached and 4000123 retried", userRetry, calls)
	}
}

func TestStatParsing(t *testing.T) {
	tests := []struct {
		stat string
		want statFields
		comm string
		ok   bool
	}{
		{"1 (systemd) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 17 1000 100", statFields{utime: 5, stime: 6, start: 17, rss: 100}, "systemd", true},
		// A comm that looks like the rest of the line.
		{"7 (x) S 1 (y) R 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 99 1000 100", statFields{utime: 5, stime: 6, start: 99, rss: 100}, "x) S 1 (y", true},
		// Cut short before the resident set size.
		{"9 (cut) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 17 1000", statFields{}, "cut", false},
		{"8 (short) S 1 2", statFields{}, "short", false},
		{"garbage", statFields{}, "", false},
	}
	for _, tt := range tests {
		got, ok := parseStat([]byte(tt.stat))
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.stat, got, ok, tt.want, tt.ok)
		}
		if comm, _ := statComm([]byte(tt.stat)); comm != tt.comm {
			t.Errorf("statComm(%q) = %q, want %q", tt.stat, comm, tt.comm)
		}
	}
}

// TestProcReaderHostCPUAndMemory: a process's CPU use is its utime+stime
// growth between two sweeps over the time between them; its resident memory
// is stat's rss in pages.
func TestProcReaderHostCPUAndMemory(t *testing.T) {
	root := copyProcFixtures(t)
	r := NewProcReader(root)
	clock := time.Unix(1800000000, 0)
	r.now = func() time.Time { return clock }
	first := r.Lookup(1001)
	if first.HasCPU {
		t.Fatalf("first sweep: CPU %v%%, want unknown until a second sweep", first.CPUPercent)
	}
	// The fixture's rss field is 2048 pages.
	if want := 2048 * uint64(os.Getpagesize()); !first.HasHostMemory || first.HostMemoryBytes != want {
		t.Fatalf("host memory %d (has %v), want %d", first.HostMemoryBytes, first.HasHostMemory, want)
	}
	r.Prune()

	// Two seconds later utime+stime went from 50+10 to 200+60 ticks: 2 s
	// of CPU in 2 s, one core.
	stat, err := os.ReadFile(filepath.Join(root, "1001", "stat"))
	if err != nil {
		t.Fatal(err)
	}
	busy := strings.Replace(string(stat), " 50 10 ", " 200 60 ", 1)
	busy = strings.Replace(busy, " 2048", " 4096", 1)
	writeProcFile(t, filepath.Join(root, "1001", "stat"), busy)
	clock = clock.Add(2 * time.Second)
	got := r.Lookup(1001)
	if !got.HasCPU || got.CPUPercent < 99.9 || got.CPUPercent > 100.1 {
		t.Fatalf("CPU %v%% (has %v), want 100%%", got.CPUPercent, got.HasCPU)
	}
	if want := 4096 * uint64(os.Getpagesize()); got.HostMemoryBytes != want {
		t.Fatalf("host memory %d, want %d after the rss grew", got.HostMemoryBytes, want)
	}
	// Looked up again in the same sweep (a process on two GPUs): the same
	// figures, not a second reading over no time.
	if again := r.Lookup(1001); again.CPUPercent != got.CPUPercent {
		t.Fatalf("second lookup in a sweep: CPU %v%%, want %v%%", again.CPUPercent, got.CPUPercent)
	}
	r.Prune()

	// An idle second: no ticks, 0%.
	clock = clock.Add(time.Second)
	if idle := r.Lookup(1001); !idle.HasCPU || idle.CPUPercent != 0 {
		t.Fatalf("idle: CPU %v%% (has %v), want 0%%", idle.CPUPercent, idle.HasCPU)
	}
}

// BenchmarkProcReaderSweep is one process poll's /proc work for 100 known
// processes: one read of each stat file (start time, CPU time, RSS).
func BenchmarkProcReaderSweep(b *testing.B) {
	root := b.TempDir()
	stat, err := os.ReadFile(filepath.Join(fixtureProc, "1001", "stat"))
	if err != nil {
		b.Fatal(err)
	}
	writeProcFile(b, filepath.Join(root, "stat"), "btime 1700000000\n")
	const n = 100
	for pid := 2000; pid < 2000+n; pid++ {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"status", "cmdline", "cgroup"} {
			src, err := os.ReadFile(filepath.Join(fixtureProc, "1001", f))
			if err != nil {
				b.Fatal(err)
			}
			writeProcFile(b, filepath.Join(dir, f), string(src))
		}
		writeProcFile(b, filepath.Join(dir, "stat"), string(stat))
	}
	r := NewProcReader(root)
	r.lookupUID = func(uint32) (string, error) { return "root", nil }
	sweep := func() {
		for pid := uint32(2000); pid < 2000+n; pid++ {
			if !r.Lookup(pid).Visible {
				b.Fatalf("pid %d not visible", pid)
			}
		}
		r.Prune()
	}
	sweep()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sweep()
	}
}

func TestCmdlineString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\x00b c\x00d\x00", "a b c d"},
		{"single", "single"},
		{"\x00\x00", ""},
		{"evil\nname\x00\x1b[31m\x00", "evil\uFFFDname \uFFFD[31m"},
	}
	for _, tt := range tests {
		if got := CommandLine([]byte(tt.in)); got != tt.want {
			t.Errorf("CommandLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
