//go:build cgo

package nvmlsource

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/sampler"
)

// smiMiB is how nvidia-smi prints a byte count in MiB: rounded up (an idle
// H200's 644939776 reserved bytes, 615.06 MiB, print as 616 MiB).
func smiMiB(b uint64) uint64 { return (b + 1<<20 - 1) >> 20 }

// TestTruthAgainstNvidiaSMI compares what vramtop reads from NVML with
// nvidia-smi's query output, to the MiB, on whatever GPUs and processes this
// machine has. It is skipped where there is no NVIDIA driver.
func TestTruthAgainstNvidiaSMI(t *testing.T) {
	src, err := Open()
	if errors.Is(err, sampler.ErrNoDriver) {
		t.Skip("no NVIDIA driver here")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		src.Close()
		t.Skip("nvidia-smi not found")
	}
	s, err := sampler.New(src, sampler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Once()
	s.Close()

	out, err := exec.Command("nvidia-smi", "--query-gpu=index,memory.total,memory.reserved,memory.used,memory.free",
		"--format=csv,noheader,nounits").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	smi := map[int][]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		idx, _ := strconv.Atoi(strings.TrimSpace(f[0]))
		for _, v := range f[1:] {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			smi[idx] = append(smi[idx], n)
		}
	}
	apps := map[uint32]uint64{}
	out, err = exec.Command("nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 2 {
			continue
		}
		pid, _ := strconv.ParseUint(strings.TrimSpace(f[0]), 10, 32)
		mib, err := strconv.ParseUint(strings.TrimSpace(f[1]), 10, 64)
		if err == nil {
			apps[uint32(pid)] += mib
		}
	}

	seen := map[uint32]uint64{}
	for _, d := range snap.Devices {
		if d.MIG != nil {
			continue
		}
		want, ok := smi[d.Index]
		if !ok {
			t.Errorf("GPU %d: not in nvidia-smi's output", d.Index)
			continue
		}
		if d.Err != "" {
			t.Errorf("GPU %d: %s", d.Index, d.Err)
			continue
		}
		got := []uint64{smiMiB(d.MemoryTotal), 0, smiMiB(d.MemoryUsed), smiMiB(d.MemoryFree)}
		if d.MemoryReserved != nil {
			got[1] = smiMiB(*d.MemoryReserved)
		} else {
			got[1] = want[1]
		}
		for i, name := range []string{"total", "reserved", "used", "free"} {
			if got[i] != want[i] {
				t.Errorf("GPU %d %s: vramtop %d MiB, nvidia-smi %d MiB", d.Index, name, got[i], want[i])
			}
		}
		for _, p := range d.Processes {
			if p.UsedBytes != nil && strings.Contains(p.Type, "compute") {
				seen[p.PID] += smiMiB(*p.UsedBytes)
			}
		}
	}
	for pid, mib := range apps {
		if seen[pid] != mib {
			t.Errorf("PID %d: vramtop %d MiB, nvidia-smi %d MiB", pid, seen[pid], mib)
		}
	}
	for pid := range seen {
		if _, ok := apps[pid]; !ok {
			t.Errorf("PID %d: listed by vramtop, not by nvidia-smi", pid)
		}
	}
	t.Logf("%d GPUs, %d compute processes compared", len(smi), len(apps))
}
