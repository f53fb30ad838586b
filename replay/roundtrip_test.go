package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// canon renders everything a snapshot holds, the fields JSON leaves out
// included (history windows, last-seen times, interval, sequence), with
// times in UTC, so two snapshots are equal exactly when their renderings
// are.
func canon(t *testing.T, s sampler.Snapshot) string {
	t.Helper()
	type extra struct {
		Interval time.Duration
		Seq      uint64
		Hist     map[string][][2]int64
	}
	hist := func(w sampler.Window) [][2]int64 {
		var out [][2]int64
		w.Each(func(t time.Time, v uint64) { out = append(out, [2]int64{t.UnixNano(), int64(v)}) })
		return out
	}
	x := extra{Interval: s.Interval, Seq: s.Seq, Hist: map[string][][2]int64{}}
	s.Time = s.Time.UTC()
	devs := make([]sampler.Device, len(s.Devices))
	for i, d := range s.Devices {
		x.Hist["dev "+d.ID] = hist(d.History)
		ps := make([]sampler.Process, len(d.Processes))
		for j, p := range d.Processes {
			k := fmt.Sprintf("proc %s/%d/%d", d.ID, p.PID, recorder.UnixNano(p.StartTime))
			x.Hist[k] = hist(p.History)
			x.Hist[k+" lastseen"] = [][2]int64{{p.LastSeen.UnixNano(), 0}}
			p.StartTime, p.FirstSeen = p.StartTime.UTC(), p.FirstSeen.UTC()
			ps[j] = p
		}
		d.Processes = ps
		devs[i] = d
	}
	s.Devices = devs
	b, err := json.Marshal(struct {
		S sampler.Snapshot
		X extra
	}{s, x})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// demoRun drives a sampler over the demo with a fake clock and returns the
// snapshots it published, writing each to a recording at path.
func demoRun(t *testing.T, path string, interval, history, span time.Duration, opts recorder.Options) []sampler.Snapshot {
	t.Helper()
	t0 := time.Date(2026, 3, 14, 2, 55, 0, 0, time.UTC)
	now := t0
	demo := demo.New(t0)
	s, err := sampler.New(demo, sampler.Config{Interval: interval, History: history, ProcessInterval: opts.ProcessInterval, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	opts.Path, opts.Interval, opts.History = path, interval, history
	opts.Now = func() time.Time { return now }
	w, err := recorder.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	var snaps []sampler.Snapshot
	for ; now.Sub(t0) <= span; now = now.Add(interval) {
		snap, ok := s.Tick(now)
		if !ok {
			continue
		}
		if err := w.Write(snap); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return snaps
}

func TestRoundTripExact(t *testing.T) {
	cases := []struct {
		name              string
		file              string
		interval, history time.Duration
		span              time.Duration
		exits             bool
		procInterval      time.Duration // the sampler's process-list floor; 0: default
	}{
		// 5 min: the demo's exiting process leaves and stays listed as
		// exited; a 2 min history makes the rings wrap.
		{"plain, 1s", "rec.jsonl", time.Second, 2 * time.Minute, 5 * time.Minute, true, 0},
		{"gzip, 1s", "rec.jsonl.gz", time.Second, 2 * time.Minute, 5 * time.Minute, true, 0},
		// Faster than snapshots are published: lines carry the extra
		// history samples.
		{"plain, 100ms", "fast.jsonl", 100 * time.Millisecond, 30 * time.Second, 90 * time.Second, false, 0},
		// vramtop run lists processes every 250 ms: its process histories
		// hold four times as many samples, and replay sizes them so.
		{"vramtop run's 250ms process lists", "job.jsonl", 250 * time.Millisecond, 30 * time.Second, 90 * time.Second, false, sampler.JobProcessInterval},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.file)
			want := demoRun(t, path, c.interval, c.history, c.span, recorder.Options{ProcessInterval: c.procInterval})
			var warns []Warning
			rec, err := Load([]string{path}, func(w Warning) { warns = append(warns, w) })
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings reading a clean recording: %v", warns)
			}
			if rec.Len() != len(want) {
				t.Fatalf("read %d snapshots, wrote %d", rec.Len(), len(want))
			}
			sawExited, sawHistory := false, false
			for i, w := range want {
				got := rec.Snapshot(i)
				if g, w := canon(t, got), canon(t, w); g != w {
					t.Fatalf("snapshot %d differs after the round trip:\n%s", i, firstDiff(g, w))
				}
				for _, d := range w.Devices {
					for _, p := range d.Processes {
						sawExited = sawExited || p.Exited
					}
					sawHistory = sawHistory || d.History.Len() > 60
				}
			}
			if sawExited != c.exits || !sawHistory {
				t.Errorf("the demo run did not exercise exited processes (%v, want %v) or long histories (%v)", sawExited, c.exits, sawHistory)
			}
			// The moment lookup returns the snapshot in force.
			mid := want[len(want)/2]
			got, in := rec.At(mid.Time.Add(c.interval / 3))
			if !in || got.Seq != mid.Seq {
				t.Errorf("At(%v) = seq %d (in %v), want seq %d", mid.Time, got.Seq, in, mid.Seq)
			}
		})
	}
}

func firstDiff(a, b string) string {
	var ai, bi bytes.Buffer
	json.Indent(&ai, []byte(a), "", " ")
	json.Indent(&bi, []byte(b), "", " ")
	al, bl := strings.Split(ai.String(), "\n"), strings.Split(bi.String(), "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s\ncontext:\n%s", i, al[i], bl[i], strings.Join(bl[lo:min(len(bl), i+3)], "\n"))
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}

func TestAppendKeepsEarlierRecording(t *testing.T) {
	for _, name := range []string{"a.jsonl", "a.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			first := demoRun(t, path, time.Second, time.Minute, 20*time.Second, recorder.Options{})
			// A second session appends (the demo restarts at the same
			// clock, so move the second session later).
			before, _ := os.Stat(path)
			second := demoRun(t, path, time.Second, time.Minute, 20*time.Second, recorder.Options{})
			after, _ := os.Stat(path)
			if after.Size() <= before.Size() {
				t.Fatalf("appending did not grow the file: %d → %d bytes", before.Size(), after.Size())
			}
			var warns []Warning
			rec, err := Load([]string{path}, func(w Warning) { warns = append(warns, w) })
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings: %v", warns)
			}
			if rec.Len() != len(first)+len(second) {
				t.Fatalf("read %d snapshots, want %d (both sessions)", rec.Len(), len(first)+len(second))
			}
		})
	}
}

func TestRefusesToAppendToOtherFiles(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("my precious notes\n"), 0o644)
	if _, err := recorder.Open(recorder.Options{Path: notes}); err == nil || !strings.Contains(err.Error(), "not a vramtop recording") {
		t.Errorf("opening a non-recording: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "my precious notes\n" {
		t.Errorf("the file was changed: %q", b)
	}
	gz := filepath.Join(dir, "notes.gz")
	os.WriteFile(gz, []byte("plain text\n"), 0o644)
	if _, err := recorder.Open(recorder.Options{Path: gz}); err == nil {
		t.Error("appending gzip to a plain file was allowed")
	}
}
