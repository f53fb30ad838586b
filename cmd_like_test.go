package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/advisor"
)

// A run is kept in the history, and wait --like sizes --min-free by the
// peak of the most similar one plus the margin, saying which run it took.
func TestWaitLikeSizesByAnEarlierRun(t *testing.T) {
	freshClaims(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	// The job lasts until the run has sampled it: the recording gets its
	// first snapshot (flushed at once at a 1 s interval) after the run has
	// read it. A job of a fixed length could end before the first sample,
	// which the demo takes 0.1-0.5 s to make under -race on a busy machine.
	dir := t.TempDir()
	rec, job := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "job.sh")
	if err := os.WriteFile(job, []byte("i=0; until [ -s "+rec+" ] || [ $i -ge 1000 ]; do sleep 0.01; i=$((i+1)); done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	if code := dispatch(context.Background(), []string{"run", "--demo", "--report", "json", "--interval", "1s", "--record", rec, "--", "sh", job, "train.py", "--batch", "32"}, &o, &e); code != 0 {
		t.Fatalf("run: exit %d, %s", code, e.String())
	}
	dispatch(context.Background(), []string{"run", "--demo", "--report", "json", "--", "true"}, &o, &e)
	b, err := os.ReadFile(filepath.Join(state, "vramtop", "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("history %q: want a line per run", b)
	}
	var first struct {
		Command      []string `json:"command"`
		GPUPeakBytes uint64   `json:"gpu_peak_bytes"`
	}
	validate(t, schema(t, "runs.schema.json"), "a line of runs.jsonl", []byte(lines[0]))
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.GPUPeakBytes == 0 || first.Command[0] != "sh" {
		t.Fatalf("first run %s (%v)", lines[0], err)
	}
	out, errOut, code := runWaitArgs(context.Background(), "--demo", "--settle", "0", "--no-claim", "--like", "sh "+job+" train.py --batch 64", "--margin", "25%")
	want := advisor.FormatBytes(uint64(float64(first.GPUPeakBytes) * 1.25))
	if code != 0 || out == "" || !strings.Contains(errOut, "`sh "+job+" train.py --batch 32` at ") ||
		!strings.Contains(errOut, "peaked at "+advisor.FormatBytes(first.GPUPeakBytes)+" on one GPU; --min-free "+want+" (+25%)") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the first run and --min-free %s", code, out, errOut, want)
	}
	// No history, or flags that do not go together: one line, exit 2.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--demo", "--like", "python train.py"}, `no earlier run like "python train.py" in `},
		{[]string{"--demo", "--like-last"}, "no run with GPU memory in "},
		{[]string{"--demo", "--like", "x", "--min-free", "1G"}, "--min-free and --like: give one"},
		{[]string{"--demo", "--like", "x", "--like-last"}, "--like and --like-last: give one"},
		{[]string{"--demo", "--margin", "5%"}, "--margin goes with --like"},
		{[]string{"--demo", "--like-last", "--margin", "ten"}, `--margin "ten": want a percentage`},
	} {
		out, errOut, code := runWaitArgs(context.Background(), c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.say) {
			t.Errorf("%v: exit %d, %q, %q; want 2 and one line with %q", c.args, code, out, errOut, c.say)
		}
	}
}
