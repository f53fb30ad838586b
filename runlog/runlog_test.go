package runlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

func run(cmd string, peakGiB uint64, at int) Entry {
	return Entry{Command: strings.Fields(cmd), Start: t0.Add(time.Duration(at) * time.Hour), GPUPeakBytes: peakGiB << 30, PeakBytes: peakGiB << 30, GPUs: 1}
}

func TestLikeFindsTheMostSimilarRun(t *testing.T) {
	runs := []Entry{
		run("python train.py --batch 32", 20, 0),
		run("python train.py --batch 64", 38, 1),
		run("python eval.py --batch 32", 9, 2),
		run("/usr/bin/python train.py --batch 32 --lr 3e-4", 22, 3),
		run("sleep 10", 0, 4), // no GPU memory: never a model
	}
	for _, c := range []struct {
		cmd  string
		want uint64
		ok   bool
	}{
		{"python train.py --batch 32", 20, true},           // the same command
		{"python train.py --batch 64", 38, true},           // the same command
		{"python train.py --batch 32 --lr 1e-3", 22, true}, // the newest of the closest
		{"python eval.py --batch 64", 9, true},
		{"./serve.sh --port 80", 0, false},
		{"sleep 10", 0, false},
	} {
		got, score, ok := Like(runs, c.cmd, false)
		if ok != c.ok || ok && got.GPUPeakBytes != c.want<<30 {
			t.Errorf("%q: %v (%.2f, ok %v), want the run of peak %d GiB (ok %v)", c.cmd, got.Command, score, ok, c.want, c.ok)
		}
	}
	if _, _, ok := Like(runs, "python train.py --batch 32", true); ok {
		t.Error("a demo wait took a real run's peak")
	}
	if last, ok := Last(runs, false); !ok || last.GPUPeakBytes != 22<<30 {
		t.Errorf("last %v %v, want the newest run with GPU memory", last, ok)
	}
}

// The file never grows far past MaxBytes, keeps the newest runs, and
// skips damaged lines.
func TestAppendIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vramtop", "runs.jsonl")
	long := strings.Repeat("x", 300)
	n := 0
	for ; n < 6000; n++ {
		if err := Append(path, run("python train.py --tag "+long+" --step "+string(rune('a'+n%26)), uint64(n+1), n)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > MaxBytes+MaxLine {
		t.Fatalf("the file is %d bytes after %d runs (%v), want at most about %d", fi.Size(), n, err, MaxBytes)
	}
	runs, skipped, err := Read(path)
	if err != nil || skipped != 0 || len(runs) < 1000 || runs[len(runs)-1].GPUPeakBytes != uint64(n)<<30 {
		t.Fatalf("read %d runs (skipped %d, %v); want the newest last", len(runs), skipped, err)
	}
	// A huge command is shortened to fit a line; damage is skipped.
	if err := Append(path, Entry{Command: strings.Fields(strings.Repeat("arg ", 10000)), GPUPeakBytes: 1}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{not json\n" + `{"command":[]}` + "\n")
	f.Close()
	Append(path, run("python last.py", 7, 0))
	runs, skipped, _ = Read(path)
	if skipped != 2 || runs[len(runs)-1].Command[1] != "last.py" || len(runs[len(runs)-2].Command) >= 10000 {
		t.Errorf("skipped %d, last %v", skipped, runs[len(runs)-1].Command)
	}
}

func TestPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if p, _ := Path(); p != "/state/vramtop/runs.jsonl" {
		t.Errorf("path %q", p)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := Path(); p != "/home/u/.local/state/vramtop/runs.jsonl" {
		t.Errorf("path %q", p)
	}
}

func TestSplitQuotes(t *testing.T) {
	got := strings.Join(Split(`python3 -c 'import time; time.sleep(3)' --name "a b" c\ d ""`), "|")
	if want := `python3|-c|import time; time.sleep(3)|--name|a b|c d|`; got != want {
		t.Errorf("split %q, want %q", got, want)
	}
}
