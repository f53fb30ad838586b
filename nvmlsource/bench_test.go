//go:build cgo

package nvmlsource

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkNVMLSample8x100 is one full sample through the NVML source on a
// mocked DGX H100: the memory of 8 GPUs and their process lists, 100
// processes each, with each process's stat re-read from a /proc tree (the
// steady state: the processes are known, so their command lines, users and
// cgroups come from the cache).
func BenchmarkNVMLSample8x100(b *testing.B) {
	h := newMockHost(nil)
	var pids []uint32
	for i, g := range h.gpus {
		for k := range 100 {
			pid := uint32(10000 + 100*i + k)
			pids = append(pids, pid)
			g.compute = append(g.compute, nvmlProcs(uint64(pid), uint64(k+1)*64*nvmlMiB)...)
		}
	}
	root := b.TempDir()
	writeFakeProc(b, root, pids)
	s, err := newSource(h.srv, sampler.NewProcReader(root))
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
	if len(buf) != 800 || buf[799].Command == "" {
		b.Fatalf("%d processes listed, want 800 with their commands", len(buf))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sample()
	}
}

// BenchmarkNVMLMemory8 is the device-memory path alone: memory,
// utilization, temperature and power of 8 GPUs.
func BenchmarkNVMLMemory8(b *testing.B) {
	h := newMockHost(nil)
	s, err := newSource(h.srv, sampler.NewProcReader(fixtureProc))
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
