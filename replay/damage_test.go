package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

func load(t *testing.T, paths ...string) (*Recording, []string) {
	t.Helper()
	var warns []string
	rec, err := Load(paths, func(w Warning) { warns = append(warns, w.String()) })
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return rec, warns
}

// sameAs checks that the snapshots read are exactly the written ones
// listed in keep (indexes into want).
func sameAs(t *testing.T, rec *Recording, want []sampler.Snapshot, keep []int) {
	t.Helper()
	if rec.Len() != len(keep) {
		t.Fatalf("read %d snapshots, want %d", rec.Len(), len(keep))
	}
	for i, k := range keep {
		if g, w := canon(t, rec.Snapshot(i)), canon(t, want[k]); g != w {
			t.Fatalf("snapshot %d (written as %d) differs:\n%s", i, k, firstDiff(g, w))
		}
	}
}

func TestDamagedLinesAreSkippedWithTheirNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	want := demoRun(t, path, time.Second, time.Minute, 30*time.Second, recorder.Options{})
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(data, []byte("\n"))
	// Line 1 is the header; line k+2 holds snapshot k.
	lines[4] = append(bytes.Clone(lines[4][:40]), []byte("\x00\xff garbage }}\n")...) // snapshot 3
	lines[8] = append(bytes.Clone(lines[8][:len(lines[8])/2]), '\n')                  // snapshot 7, cut short
	lines[12] = []byte(`{"t":"not a time","d":[]}` + "\n")                            // snapshot 11
	var out []byte
	for i, l := range lines {
		out = append(out, l...)
		if i == 15 {
			out = append(out, "\n\n"...) // blank lines are not damage
		}
	}
	os.WriteFile(path, out, 0o644)

	rec, warns := load(t, path)
	keep := []int{}
	for i := range want {
		if i != 3 && i != 7 && i != 11 {
			keep = append(keep, i)
		}
	}
	// Later snapshots keep the history of the earlier ones that survived.
	sameAsExceptHistory(t, rec, want, keep)
	if len(warns) != 3 {
		t.Fatalf("warnings = %q, want one per damaged line", warns)
	}
	for i, n := range []int{5, 9, 13} {
		if !strings.Contains(warns[i], fmt.Sprintf("rec.jsonl:%d:", n)) {
			t.Errorf("warning %q does not name line %d", warns[i], n)
		}
	}
}

// sameAsExceptHistory compares what a line states (values, processes)
// without the history windows, which miss the skipped lines' samples.
func sameAsExceptHistory(t *testing.T, rec *Recording, want []sampler.Snapshot, keep []int) {
	t.Helper()
	strip := func(s sampler.Snapshot) sampler.Snapshot {
		devs := make([]sampler.Device, len(s.Devices))
		for i, d := range s.Devices {
			d.History, d.PeakUsed = sampler.Window{}, 0
			ps := slices.Clone(d.Processes)
			for j := range ps {
				ps[j].History = sampler.Window{}
			}
			d.Processes = ps
			devs[i] = d
		}
		s.Devices = devs
		return s
	}
	if rec.Len() != len(keep) {
		t.Fatalf("read %d snapshots, want %d", rec.Len(), len(keep))
	}
	for i, k := range keep {
		if g, w := canon(t, strip(rec.Snapshot(i))), canon(t, strip(want[k])); g != w {
			t.Fatalf("snapshot %d (written as %d) differs:\n%s", i, k, firstDiff(g, w))
		}
	}
}

func TestTruncatedPlainRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	want := demoRun(t, path, time.Second, time.Minute, 20*time.Second, recorder.Options{})
	data, _ := os.ReadFile(path)
	// Cut in the middle of the last line, as a crash mid-write leaves it.
	cut := bytes.LastIndexByte(data[:len(data)-1], '\n') + 100
	os.WriteFile(path, data[:cut], 0o644)
	rec, warns := load(t, path)
	sameAs(t, rec, want, seq(0, len(want)-1))
	if len(warns) != 1 || !strings.Contains(warns[0], fmt.Sprintf(":%d:", len(want)+1)) || !strings.Contains(warns[0], "incomplete") {
		t.Errorf("warnings = %q, want one about the incomplete line %d", warns, len(want)+1)
	}
	// Recording on appends after the cut line, which stays skipped.
	more := demoRunFrom(t, path, time.Date(2026, 3, 14, 4, 0, 0, 0, time.UTC), 5*time.Second)
	rec, warns = load(t, path)
	if rec.Len() != len(want)-1+len(more) || len(warns) != 1 {
		t.Errorf("after appending: %d snapshots (want %d), warnings %q", rec.Len(), len(want)-1+len(more), warns)
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// demoRunFrom records a short demo session starting at t0.
func demoRunFrom(t *testing.T, path string, t0 time.Time, span time.Duration) []sampler.Snapshot {
	t.Helper()
	now := t0
	s, _ := sampler.New(demo.New(t0), sampler.Config{Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	w, err := recorder.Open(recorder.Options{Path: path, Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var out []sampler.Snapshot
	for ; now.Sub(t0) <= span; now = now.Add(time.Second) {
		snap, _ := s.Tick(now)
		if err := w.Write(snap); err != nil {
			t.Fatal(err)
		}
		out = append(out, snap)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGzipCutReadsUpToLastFlush cuts a gzip recording that was never
// closed (its writer killed) at every byte between two flushes: every line
// flushed before the cut is read, nothing after.
func TestGzipCutReadsUpToLastFlush(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl.gz")
	t0 := time.Date(2026, 3, 14, 2, 55, 0, 0, time.UTC)
	now := t0
	s, _ := sampler.New(demo.New(t0), sampler.Config{Interval: time.Second, History: time.Minute, Now: func() time.Time { return now }})
	// Flush after every line written (the clock moves 1 s per line).
	w, err := recorder.Open(recorder.Options{Path: path, Interval: time.Second, History: time.Minute, FlushEvery: time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var want []sampler.Snapshot
	var sizes []int64 // file size once snapshot i is flushed
	for i := 0; i < 12; i++ {
		now = now.Add(time.Second)
		snap, _ := s.Tick(now)
		if err := w.Write(snap); err != nil {
			t.Fatal(err)
		}
		want = append(want, snap)
		st, _ := os.Stat(path)
		sizes = append(sizes, st.Size())
	}
	data, _ := os.ReadFile(path) // the writer is never closed: as after kill -9
	if int64(len(data)) != sizes[len(sizes)-1] {
		t.Fatalf("file is %d bytes, last flush left %d", len(data), sizes[len(sizes)-1])
	}
	cut := filepath.Join(dir, "cut.jsonl.gz")
	for k := 3; k < len(sizes); k++ {
		for _, n := range []int64{sizes[k-1], sizes[k-1] + 1, (sizes[k-1] + sizes[k]) / 2, sizes[k] - 1} {
			os.WriteFile(cut, data[:n], 0o644)
			rec, warns := load(t, cut)
			// Every flushed line; past the flush, what the decompressor
			// could make of the partial block (whole lines only).
			if rec.Len() < k || rec.Len() > k+1 {
				t.Fatalf("cut at %d bytes (%d lines flushed): read %d snapshots", n, k, rec.Len())
			}
			sameAs(t, rec, want, seq(0, rec.Len()))
			if len(warns) == 0 || len(warns) > 2 {
				t.Errorf("cut at %d bytes: warnings %q, want one saying the recording was cut off", n, warns)
			}
			for _, w := range warns {
				if !strings.Contains(w, "cut off") {
					t.Errorf("cut at %d bytes: warning %q", n, w)
				}
			}
		}
	}
	w.Close()
}

// TestGzipDamageThenAppend: a gzip recording killed mid-member, then
// appended to by a new session: both sessions' lines are read.
func TestGzipDamageThenAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl.gz")
	first := demoRunFrom(t, path, time.Date(2026, 3, 14, 2, 0, 0, 0, time.UTC), 10*time.Second)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)*2/3], 0o644) // the first session, cut
	second := demoRunFrom(t, path, time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC), 10*time.Second)
	rec, warns := load(t, path)
	if len(warns) == 0 {
		t.Error("no warning about the damaged part")
	}
	if rec.Len() >= len(first)+len(second) || rec.Len() < len(second)+1 {
		t.Fatalf("read %d snapshots; want all %d of the second session and some of the first %d", rec.Len(), len(second), len(first))
	}
	last := rec.Snapshot(rec.Len() - 1)
	if !last.Time.Equal(second[len(second)-1].Time) {
		t.Errorf("last snapshot read is of %v, want %v", last.Time, second[len(second)-1].Time)
	}
}

func TestRotation(t *testing.T) {
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			max := int64(24 << 10)
			if strings.HasSuffix(name, ".gz") {
				max = 6 << 10
			}
			history := 20 * time.Second
			want := demoRun(t, path, time.Second, history, 3*time.Minute+30*time.Second, recorder.Options{MaxSize: max, Keep: 3})
			for i, p := range []string{path, path + ".1", path + ".2", path + ".3"} {
				st, err := os.Stat(p)
				if err != nil {
					t.Fatalf("part %d: %v", i, err)
				}
				// A part ends at most one line (plus a flush) past the limit.
				if st.Size() > max+16<<10 {
					t.Errorf("%s is %d bytes, limit %d", p, st.Size(), max)
				}
			}
			if _, err := os.Stat(path + ".4"); err == nil {
				t.Errorf("%s.4 kept; --keep 3", path)
			}
			// Each part reads on its own, starting with a header.
			for _, p := range []string{path, path + ".3"} {
				rec, warns := load(t, p)
				if len(warns) > 0 || rec.Len() == 0 {
					t.Errorf("%s alone: %d snapshots, warnings %q", p, rec.Len(), warns)
				}
			}
			// The parts together, named in any order, are the newest
			// snapshots written; exactly, history windows included, once
			// the history before the oldest part has left the windows.
			rec, warns := load(t, path, path+".2", path+".3", path+".1")
			if len(warns) > 0 {
				t.Errorf("warnings: %q", warns)
			}
			n := rec.Len()
			if n < 40 || n >= len(want) {
				t.Fatalf("the parts hold %d snapshots of %d written", n, len(want))
			}
			sameAsExceptHistory(t, rec, want, seq(len(want)-n, len(want)))
			exact := 0
			for i := 0; i < n; i++ {
				w := want[len(want)-n+i]
				if !windowsWithin(w, rec.Start()) {
					continue
				}
				exact++
				if g, w := canon(t, rec.Snapshot(i)), canon(t, w); g != w {
					t.Fatalf("snapshot %d differs:\n%s", i, firstDiff(g, w))
				}
			}
			if exact < n/2 {
				t.Errorf("only %d of %d snapshots compared with their history", exact, n)
			}
		})
	}
}

func TestNotARecording(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.txt")
	os.WriteFile(p, []byte("hello\nworld\n"), 0o644)
	if _, err := Load([]string{p}, nil); err == nil {
		t.Error("a text file loaded as a recording")
	}
	if _, err := Load([]string{filepath.Join(dir, "missing")}, nil); err == nil {
		t.Error("a missing file loaded")
	}
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Load([]string{empty}, nil); err == nil {
		t.Error("an empty file loaded")
	}
}

// windowsWithin reports whether every history window of s starts at or
// after t.
func windowsWithin(s sampler.Snapshot, t time.Time) bool {
	for _, d := range s.Devices {
		if d.History.Len() > 0 && d.History.First().Before(t) {
			return false
		}
		for _, p := range d.Processes {
			if p.History.Len() > 0 && p.History.First().Before(t) {
				return false
			}
		}
	}
	return true
}
