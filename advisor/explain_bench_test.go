package advisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchLogSize is the size of the generated logs: 100 MB.
const benchLogSize = 100_000_000

// benchOOM ends both logs: what the benchmarks must find.
const benchOOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.07 GiB is free. " +
	"Including non-PyTorch memory, this process has 78.06 GiB memory in use. Of the allocated memory 76.50 GiB is allocated by PyTorch, and 1.02 GiB is " +
	"reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"

// trainingLog is a training log of about size bytes in which one line in
// twenty prints the allocator's memory statistics, ending with an OOM.
func trainingLog(size int) string {
	var b strings.Builder
	b.Grow(size + 1024)
	for i := 0; b.Len() < size; i++ {
		ts := fmt.Sprintf("2026-11-29 10:%02d:%02d,%03d", i/60000%60, i/1000%60, i%1000)
		if i%20 == 19 {
			fmt.Fprintf(&b, "%s INFO trainer.py:412 step %d | memory allocated %.2f GiB | reserved %.2f GiB | max allocated %.2f GiB\n",
				ts, i, 60+float64(i%997)/100, 70+float64(i%991)/100, 75+float64(i%983)/100)
			continue
		}
		fmt.Fprintf(&b, "%s INFO trainer.py:398 step %d | loss %.4f | lr %.2e | grad_norm %.3f | %.1f samples/s\n",
			ts, i, 2.5-float64(i%1000)/1000, 3e-4, 1+float64(i%577)/1000, 800+float64(i%313)/10)
	}
	b.WriteString(benchOOM)
	return b.String()
}

// progressLine is one line of about size bytes of tqdm-style progress
// updates separated by \r, ending with an OOM.
func progressLine(size int) string {
	var b strings.Builder
	b.Grow(size + 1024)
	const total = 1000000
	for i := 0; b.Len() < size; i++ {
		n := i % total
		pct := n * 100 / total
		bar := strings.Repeat("█", pct/10) + strings.Repeat(" ", 10-pct/10)
		fmt.Fprintf(&b, "\r%3d%%|%s| %d/%d [%02d:%02d<%02d:%02d, %.2fit/s, loss=%.4f]",
			pct, bar, n, total, n/60%60, n%60, (total-n)/60%60, (total-n)%60, 3.5+float64(n%100)/100, 1.5-float64(n%1000)/1000)
	}
	b.WriteString("\r\n" + benchOOM)
	return b.String()
}

// VRAMTOP_EXPLAIN_BENCH_LOGS=DIR go test -run TestExplainWriteBenchLogs ./advisor/
// writes each shape of logShapes to DIR (NAME.log; 100 MB, the BFC line
// 1 MB), to time `vramtop explain` on them (bench/explain.sh).
func TestExplainWriteBenchLogs(t *testing.T) {
	dir := os.Getenv("VRAMTOP_EXPLAIN_BENCH_LOGS")
	if dir == "" {
		t.Skip("VRAMTOP_EXPLAIN_BENCH_LOGS names no directory")
	}
	for _, sh := range logShapes {
		if err := os.WriteFile(filepath.Join(dir, sh.name+".log"), []byte(sh.gen(shapeSize(sh))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
