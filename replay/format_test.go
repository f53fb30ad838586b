package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// The fixtures of format 1 were written by the recorder of format 1 (a
// 20 s demo run, 10 s of history) and format1.want holds what its replay
// rebuilt then for snapshots 0, 5, 12 and the last (written by stable): a
// recording of format 1 replays as it did, history windows included.
func TestFormat1StillReplays(t *testing.T) {
	want, err := os.ReadFile("testdata/format1.want")
	if err != nil {
		t.Fatal(err)
	}
	wantLines := strings.Split(strings.TrimSpace(string(want)), "\n")
	for _, name := range []string{"format1.jsonl", "format1.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			data, _ := os.ReadFile(filepath.Join("testdata", name))
			if name == "format1.jsonl" && !bytes.HasPrefix(data, []byte(`{"format":"vramtop-record","version":1,`)) {
				t.Fatal("the fixture is not of format 1")
			}
			rec, warns := load(t, filepath.Join("testdata", name))
			if len(warns) > 0 || rec.Len() != 21 {
				t.Fatalf("%d snapshots (want 21), warnings %q", rec.Len(), warns)
			}
			for k, i := range []int{0, 5, 12, rec.Len() - 1} {
				if g := stable(rec.Snapshot(i)); g != wantLines[k] {
					t.Errorf("snapshot %d differs:\n got %.300s\nwant %.300s", i, g[firstByteDiff(g, wantLines[k]):], wantLines[k][firstByteDiff(g, wantLines[k]):])
				}
			}
		})
	}
}

// hostile writes a recording of 10 demo snapshots with line 6 (snapshot 4)
// replaced by bad.
func hostile(t *testing.T, bad []byte) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	want := demoRun(t, path, time.Second, time.Minute, 9*time.Second, recorder.Options{})
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[5] = append(bad, '\n')
	os.WriteFile(path, bytes.Join(lines, nil), 0o644)
	return path, len(want)
}

// allocated returns the bytes allocated while f ran.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestHostileLinesAreDecodedWithinLimits(t *testing.T) {
	ts := `{"t":"2026-03-14T02:55:04Z","d":`
	numbers := []byte(ts + "[" + strings.Repeat("1,", 5<<20) + "1]}")
	numbers3 := []byte(ts + "[" + strings.Repeat("1,", 3<<19) + "1]}")
	objects := []byte(ts + "[" + strings.Repeat("{},", 1<<20) + "{}]}")
	samples := []byte(ts + `[{"id":"0","tot":1,"used":1,"free":0,"h":[` + strings.Repeat("[1,2],", 1<<19) + "[1,2]]}]}")
	early := []byte(ts + `[{"id":"0","tot":1,"used":1,"free":0,"h":[` + strings.Repeat("[1,2],", 999) + "[1,2]]}]}")
	for _, c := range []struct {
		name string
		line []byte
		want string
	}{
		{"10 MB of numbers", numbers, "rec.jsonl:6: line longer than 4 MiB; skipped"},
		{"3 MB of numbers", numbers3, "rec.jsonl:6: damaged line skipped: lists of 1572865 elements, more than the 65536 allowed"},
		{"3 MB of {}", objects, "rec.jsonl:6: damaged line skipped: 1048578 objects, more than the 65536 allowed"},
		{"3 MB of samples", samples, "rec.jsonl:6: damaged line skipped: 524289 history samples, more than the 131072 allowed"},
		{"samples of 1970", early, "rec.jsonl:6: damaged line skipped: device 0: a history sample at 1 ns is not a time of a recording"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, n := hostile(t, c.line)
			var warns []string
			var rec *Recording
			mem := allocated(func() {
				var err error
				rec, err = Load([]string{path}, func(w Warning) { warns = append(warns, w.String()) })
				if err != nil {
					t.Fatal(err)
				}
				for i := range rec.Len() {
					rec.Snapshot(i)
				}
			})
			if len(warns) != 1 || !strings.Contains(warns[0], c.want) {
				t.Errorf("warnings %q, want one saying %q", warns, c.want)
			}
			// The line is skipped in the index, or at least when rebuilt;
			// either way the snapshots around it read.
			if rec.Len() < n-1 || rec.Snapshot(3).Time.IsZero() || len(rec.Snapshot(rec.Len()-1).Devices) == 0 {
				t.Errorf("%d snapshots read of %d; the ones around the bad line lost", rec.Len(), n)
			}
			if mem > 200<<20 {
				t.Errorf("reading it allocated %d MiB", mem>>20)
			}
			t.Logf("%s: %d MiB allocated", c.name, mem>>20)
		})
	}
}

func TestAbsurdTimesAreSkipped(t *testing.T) {
	for _, c := range []struct{ name, line, want string }{
		{"year 1", `{"t":"0001-01-01T00:00:01Z","d":[]}`, "rec.jsonl:6: line with the time 0001-01-01T00:00:01Z skipped"},
		{"year 9999", `{"t":"9999-01-01T00:00:00Z","d":[]}`, "rec.jsonl:6: line with the time 9999-01-01T00:00:00Z skipped"},
		{"process first seen in 1970", `{"t":"2026-03-14T02:55:04Z","d":[{"id":"0","tot":1,"used":1,"free":0,"p":[{"pid":7,"fs":5}]}]}`,
			"rec.jsonl:6: damaged line skipped: process 7: its start, first or last seen time is not a time of a recording"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, _ := hostile(t, []byte(c.line))
			var warns []string
			rec, err := Load([]string{path}, func(w Warning) { warns = append(warns, w.String()) })
			if err != nil {
				t.Fatal(err)
			}
			for i := range rec.Len() {
				s := rec.Snapshot(i)
				if !saneTime(s.Time) {
					t.Errorf("snapshot %d at %v", i, s.Time)
				}
				for _, d := range s.Devices {
					for _, p := range d.Processes {
						if !p.FirstSeen.IsZero() && !saneTime(p.FirstSeen) {
							t.Errorf("snapshot %d: process first seen %v", i, p.FirstSeen)
						}
					}
				}
			}
			if len(warns) != 1 || !strings.Contains(warns[0], c.want) {
				t.Errorf("warnings %q, want one saying %q", warns, c.want)
			}
		})
	}
}

// stable renders what a replayed snapshot says through the Go fields
// themselves (not their JSON names, which may be renamed): its time and,
// per device and process, the memory values, times and history samples.
func stable(s sampler.Snapshot) string {
	var b strings.Builder
	hist := func(w sampler.Window) {
		w.Each(func(t time.Time, v uint64) { fmt.Fprintf(&b, " %d:%d", t.UnixNano(), v) })
	}
	fmt.Fprintf(&b, "t=%d seq=%d interval=%v host=%s src=%s demo=%v", s.Time.UnixNano(), s.Seq, s.Interval, s.Hostname, s.Source, s.Demo)
	for _, d := range s.Devices {
		fmt.Fprintf(&b, " | dev %s %q total=%d used=%d free=%d recent=%d peak=%d h=", d.ID, d.Name, d.MemoryTotal, d.MemoryUsed, d.MemoryFree, d.RecentPeakUsed, d.PeakUsed)
		hist(d.History)
		for _, p := range d.Processes {
			used := int64(-1)
			if p.UsedBytes != nil {
				used = int64(*p.UsedBytes)
			}
			fmt.Fprintf(&b, " | proc %d %s %q used=%d peak=%d start=%d first=%d last=%d exited=%v h=", p.PID, p.User, p.Command, used, p.PeakBytes,
				p.StartTime.UnixNano(), p.FirstSeen.UnixNano(), p.LastSeen.UnixNano(), p.Exited)
			hist(p.History)
		}
	}
	return b.String()
}

func firstByteDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return max(0, i-80)
}

// TestOpenBackground: a recording opened in the background answers at once
// and, once indexed, holds what Load reads, snapshot for snapshot.
func TestOpenBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl.gz")
	want := demoRun(t, path, time.Second, time.Minute, 3*time.Minute, recorder.Options{})
	rec, err := OpenBackground(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	// Used while the scan runs (the race detector checks the sharing).
	for range 50 {
		if n := rec.Len(); n == 0 || rec.End().Before(rec.Start()) {
			t.Fatalf("%d snapshots, ending %v", n, rec.End())
		}
		rec.Snapshot(rec.Len() - 1)
	}
	<-rec.Scanned()
	if rec.Len() != len(want) {
		t.Fatalf("%d snapshots indexed, %d written", rec.Len(), len(want))
	}
	for _, i := range []int{0, len(want) / 2, len(want) - 1} {
		if g, w := canon(t, rec.Snapshot(i)), canon(t, want[i]); g != w {
			t.Errorf("snapshot %d differs:\n%s", i, firstDiff(g, w))
		}
	}
	if _, err := OpenBackground(context.Background(), filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("a missing file opened")
	}
}

// TestSteppingBack: stepping back from snapshot to snapshot (taking back
// the lines applied, or rebuilding where the history needed was trimmed)
// gives each snapshot exactly as the sampler published it.
func TestSteppingBack(t *testing.T) {
	for _, history := range []time.Duration{time.Minute, 5 * time.Second} {
		t.Run(history.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rec.jsonl.gz")
			want := demoRun(t, path, time.Second, history, 2*time.Minute, recorder.Options{})
			rec, warns := load(t, path)
			if len(warns) > 0 {
				t.Fatal(warns)
			}
			for i := len(want) - 1; i >= len(want)-40; i-- {
				if g, w := canon(t, rec.Snapshot(i)), canon(t, want[i]); g != w {
					t.Fatalf("snapshot %d, stepping back: differs:\n%s", i, firstDiff(g, w))
				}
			}
			// Back and forth.
			for _, i := range []int{50, 49, 52, 51, 20, 21, 19} {
				if g, w := canon(t, rec.Snapshot(i)), canon(t, want[i]); g != w {
					t.Fatalf("snapshot %d differs:\n%s", i, firstDiff(g, w))
				}
			}
		})
	}
}
