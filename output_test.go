package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/recsynth"
	"github.com/vramtop/vramtop/sampler"
)

// TestResultToAFullDisk: a command whose result cannot be written
// (>/dev/full) exits non-zero and says so in one line, so that
// CUDA_VISIBLE_DEVICES=$(vramtop pick) does not take nothing for an answer.
func TestResultToAFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here")
	}
	defer full.Close()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	t0 := time.Date(2026, 3, 14, 1, 0, 0, 0, time.UTC)
	if _, err := recsynth.Record(rec, demo.New(t0), t0, time.Second, sampler.DefaultHistory, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, args := range [][]string{
		{"pick", "--demo", "--no-claim"},
		{"wait", "--demo", "--no-claim", "--settle", "0", "--interval", "100ms"},
		{"--once", "--demo"},
		{"--once", "--json", "--demo"},
		{"explain", explainLog},
		{"explain", "--json", explainLog},
		{"config"},
		{"config", "--example"},
		{"replay", "--once", rec},
		{"man"},
	} {
		var e bytes.Buffer
		code := dispatch(context.Background(), args, full, &e)
		msg := e.String()
		if code == 0 || !strings.HasSuffix(msg, ": cannot write the output: no space left on device\n") || strings.Count(msg, "\n") != 1 {
			t.Errorf("vramtop %s >/dev/full: exit %d, stderr %q; want non-zero and one line saying why", strings.Join(args, " "), code, msg)
		}
	}
}
