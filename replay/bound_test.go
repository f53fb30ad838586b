package replay

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/recsynth"
	"github.com/vramtop/vramtop/sampler"
)

// MinimalGzip writes a compressed recording of a header and n minimal
// snapshot lines, one second apart, to dir: the smallest lines a
// recording can hold, the most lines a compressed byte can hold. The line
// of second i has the sequence number i.
func MinimalGzip(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, fmt.Sprintf("minimal-%d.jsonl.gz", n))
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	w := bufio.NewWriterSize(zw, 1<<20)
	fmt.Fprintln(w, `{"format":"vramtop-record","version":1,"interval":"1s","history":"10s"}`)
	t0 := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(w, `{"t":"%s","seq":%d}`+"\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// raceEnabled is set under the race detector.
var raceEnabled bool

// indexBytes is what the index of r holds, in bytes.
func indexBytes(r *Recording) int {
	x := r.view()
	return cap(x.lines)*int(unsafe.Sizeof(entry{})) + cap(x.keys)*int(unsafe.Sizeof(loc{})) + cap(x.headers)*8
}

// TestIndexIsBounded: a recording of more lines than the index keeps
// (here 1.5 million of them, 2.4 MB compressed) opens with an index of at
// most maxEntries lines, and says that it thinned it.
func TestIndexIsBounded(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes 1.5 million lines (minutes under the race detector)")
	}
	const n = 1_500_000
	path := MinimalGzip(t, t.TempDir(), n)
	var warns []string
	r, err := Open(t.Context(), []string{path}, func(w Warning) { warns = append(warns, w.String()) })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b := indexBytes(r); b > 32<<20 {
		t.Errorf("the index of %d lines holds %d MiB (%d entries)", n, b>>20, r.Len())
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "the index keeps one in every 2") {
		t.Errorf("warnings %q, want one saying the index was thinned", warns)
	}
	// The snapshots kept are the lines they say they are, the last one
	// included.
	for _, i := range []int{0, 1, r.Len() / 2, r.Len() - 2, r.Len() - 1} {
		s := r.Snapshot(i)
		if want := r.Start().Add(time.Duration(s.Seq) * time.Second); !s.Time.Equal(want) {
			t.Errorf("snapshot %d: seq %d at %v, want at %v", i, s.Seq, s.Time, want)
		}
	}
	if s := r.Snapshot(r.Len() - 1); s.Seq != n-1 {
		t.Errorf("the last snapshot is line %d, want %d", s.Seq, n-1)
	}
}

// TestThinnedIndexLandsOnTheRightSnapshots: with the index thinned (to
// at most 100 lines of a real recording of 600, keyframes and deltas),
// every snapshot kept is the one the whole index has at its time, --at a
// time between two kept ones gives the earlier one, and the recording
// still ends at its last line.
func TestThinnedIndexLandsOnTheRightSnapshots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl.gz")
	t0 := time.Date(2026, 3, 14, 1, 0, 0, 0, time.UTC)
	n, err := recsynth.Record(path, demo.New(t0), t0, sampler.MinInterval, 2*time.Second, 6000*sampler.MinInterval)
	if err != nil {
		t.Fatal(err)
	}
	full, err := Load([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	defer func(m int) { maxEntries = m }(maxEntries)
	maxEntries = 100
	var warns []string
	thin, err := Load([]string{path}, func(w Warning) { warns = append(warns, w.String()) })
	if err != nil {
		t.Fatal(err)
	}
	defer thin.Close()
	if full.Len() != n || thin.Len() > maxEntries || thin.Len() < n/8 {
		t.Fatalf("%d snapshots recorded, %d in the whole index, %d in the thinned one (at most %d)", n, full.Len(), thin.Len(), maxEntries)
	}
	if len(warns) != 1 {
		t.Errorf("warnings %q, want one (%d lines of %d kept, shift %d)", warns, thin.Len(), n, thin.shift)
	}
	if !thin.End().Equal(full.End()) || !thin.Start().Equal(full.Start()) {
		t.Errorf("thinned: %v to %v; whole: %v to %v", thin.Start(), thin.End(), full.Start(), full.End())
	}
	same := func(a, b sampler.Snapshot) bool {
		if a.Time != b.Time || a.Seq != b.Seq || len(a.Devices) != len(b.Devices) {
			return false
		}
		for d := range a.Devices {
			x, y := a.Devices[d], b.Devices[d]
			if x.MemoryUsed != y.MemoryUsed || len(x.Processes) != len(y.Processes) {
				return false
			}
			for p := range x.Processes {
				u, v := x.Processes[p].UsedBytes, y.Processes[p].UsedBytes
				if x.Processes[p].PID != y.Processes[p].PID || (u == nil) != (v == nil) || u != nil && *u != *v {
					return false
				}
			}
		}
		return true
	}
	for i := 0; i < thin.Len(); i++ {
		at := thin.Time(i)
		want := full.Snapshot(full.Index(at))
		if got := thin.Snapshot(i); !same(got, want) {
			t.Fatalf("thinned snapshot %d (seq %d at %v) differs from the whole index's at that time (seq %d)", i, got.Seq, got.Time, want.Seq)
		}
		if i+1 < thin.Len() {
			// A moment between two kept snapshots is in the earlier's.
			mid := at.Add(thin.Time(i+1).Sub(at) / 2)
			if got, _ := thin.At(mid); got.Seq != want.Seq {
				t.Fatalf("at %v: seq %d, want %d (the kept snapshot before)", mid, got.Seq, want.Seq)
			}
		}
	}
	// Stepping back from the end reads the same snapshots.
	for i := thin.Len() - 1; i > thin.Len()-10; i-- {
		if got, want := thin.Snapshot(i), full.Snapshot(full.Index(thin.Time(i))); !same(got, want) {
			t.Fatalf("stepping back: snapshot %d seq %d, want %d", i, got.Seq, want.Seq)
		}
	}
}

// TestWriteMinimalRecordings writes MinimalGzip recordings of the line
// counts in $VRAMTOP_REPLAY_MINIMAL_LINES (comma-separated) into
// $VRAMTOP_REPLAY_MINIMAL_DIR, for bench/replay-memory.sh; skipped without
// them.
func TestWriteMinimalRecordings(t *testing.T) {
	dir, counts := os.Getenv("VRAMTOP_REPLAY_MINIMAL_DIR"), os.Getenv("VRAMTOP_REPLAY_MINIMAL_LINES")
	if dir == "" || counts == "" {
		t.Skip("VRAMTOP_REPLAY_MINIMAL_DIR or VRAMTOP_REPLAY_MINIMAL_LINES not set")
	}
	for _, c := range strings.Split(counts, ",") {
		var n int
		if _, err := fmt.Sscan(c, &n); err != nil || n <= 0 {
			t.Fatalf("line count %q", c)
		}
		t.Log(MinimalGzip(t, dir, n))
	}
}

// TestThinningWhileReplaying: a recording thinned while the live view
// reads it (a background scan) gives a snapshot for every moment asked
// for, at or before it, the last one at its end.
func TestThinningWhileReplaying(t *testing.T) {
	const n = 20000
	path := MinimalGzip(t, t.TempDir(), n)
	defer func(m int) { maxEntries = m }(maxEntries)
	maxEntries = 100
	r, err := OpenBackground(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t0 := r.Start()
	for k := 0; ; k++ {
		select {
		case <-r.Scanned():
		default:
			at := t0.Add(time.Duration(k*37%n) * time.Second)
			s, i := r.SnapshotAt(at)
			if s.Time.After(at) || !s.Time.Equal(t0.Add(time.Duration(s.Seq)*time.Second)) {
				t.Fatalf("at %v: snapshot %d, seq %d at %v", at, i, s.Seq, s.Time)
			}
			r.Time(i + 1)
			continue
		}
		break
	}
	if s := r.Snapshot(r.Len() - 1); s.Seq != n-1 || r.Len() > maxEntries {
		t.Errorf("%d snapshots kept, the last seq %d; want at most %d, the last %d", r.Len(), s.Seq, maxEntries, n-1)
	}
}
