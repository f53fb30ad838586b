//go:build cgo

package nvmlsource

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vramtop/vramtop/hostproc"
	"github.com/vramtop/vramtop/sampler"
)

// writeFakeProc writes a /proc tree under dir with the given PIDs, each a
// containerized Python process of root.
func writeFakeProc(b testing.TB, dir string, pids []uint32) {
	b.Helper()
	writeProcFile(b, filepath.Join(dir, "stat"), "cpu  1 2 3 4\nbtime 1700000000\n")
	for _, pid := range pids {
		p := filepath.Join(dir, fmt.Sprint(pid))
		if err := os.MkdirAll(p, 0o755); err != nil {
			b.Fatal(err)
		}
		writeProcFile(b, filepath.Join(p, "stat"), fmt.Sprintf(
			"%d (python3) S 1 %d %d 0 -1 4194304 100 0 0 0 50 10 0 0 20 0 12 0 %d 123456789 2048\n", pid, pid, pid, 1000+pid))
		writeProcFile(b, filepath.Join(p, "status"), "Name:\tpython3\nUid:\nvmlT0\nvmlT0\nvmlT0\nvmlT0\nGid:\nvmlT0\nvmlT0\nvmlT0\nvmlT0\n")
		writeProcFile(b, filepath.Join(p, "cmdline"), fmt.Sprintf("python3\x00train.py\x00--rank\x00%d\x00", pid))
		writeProcFile(b, filepath.Join(p, "comm"), "python3\n")
		writeProcFile(b, filepath.Join(p, "cgroup"),
			"0::/system.slice/docker-3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899.scope\n")
	}
}

// BenchmarkNVMLSample is one sample through the NVML source on a mocked DGX
// H100: the memory of 8 GPUs and their process lists, with each process's
// stat re-read from a /proc tree (the steady state: the processes are known,
// so their command lines, users and cgroups come from the cache). "moving":
// every GPU's used memory changes between samples, so every list is read from
// the driver; "steady": it does not, so the lists are reused (what a card
// whose jobs hold their memory costs). Besides ns/op it reports µs per device
// and per process.
func BenchmarkNVMLSample(b *testing.B) {
	for _, per := range []int{100, 1000} {
		for _, moving := range []bool{true, false} {
			name := fmt.Sprintf("8x%d/steady", per)
			if moving {
				name = fmt.Sprintf("8x%d/moving", per)
			}
			b.Run(name, func(b *testing.B) { benchSample(b, per, moving) })
		}
	}
}

func benchSample(b *testing.B, per int, moving bool) {
	h := newMockHost(nil)
	var pids []uint32
	for i, g := range h.gpus {
		for k := range per {
			pid := uint32(10000 + per*i + k)
			pids = append(pids, pid)
			g.compute = append(g.compute, nvmlProcs(uint64(pid), uint64(k%100+1)*64*nvmlMiB)...)
		}
	}
	root := b.TempDir()
	writeFakeProc(b, root, pids)
	s, err := newSource(h.srv, hostproc.NewProcReader(root))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n := len(s.Info().Devices)
	mem := make([]sampler.MemSample, n)
	errs := make([]error, n)
	var buf []sampler.ProcSample
	now := nvmlT0
	sample := func() {
		now = now.Add(time.Second)
		if moving {
			for _, g := range h.gpus {
				g.mem.Used ^= nvmlMiB
			}
		}
		if err := s.ReadMemory(now, mem); err != nil {
			b.Fatal(err)
		}
		clear(errs)
		buf, err = s.ReadProcesses(now, buf, errs)
		if err != nil {
			b.Fatal(err)
		}
	}
	sample()
	if len(buf) != 8*per || buf[8*per-1].Command == "" {
		b.Fatalf("%d processes listed, want %d with their commands", len(buf), 8*per)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sample()
	}
	us := float64(b.Elapsed().Microseconds()) / float64(b.N)
	b.ReportMetric(us/8, "µs/device")
	b.ReportMetric(us/float64(8*per), "µs/process")
}

// BenchmarkNVMLMemory8 is the device-memory path alone: memory,
// utilization, temperature and power of 8 GPUs.
func BenchmarkNVMLMemory8(b *testing.B) {
	h := newMockHost(nil)
	s, err := newSource(h.srv, hostproc.NewProcReader(fixtureProc))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mem := make([]sampler.MemSample, len(s.Info().Devices))
	now := nvmlT0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		if err := s.ReadMemory(now, mem); err != nil {
			b.Fatal(err)
		}
	}
}

func writeProcFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
