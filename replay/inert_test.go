package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	attack "github.com/vramtop/vramtop/internal/hostile"
)

// A recording from another machine may hold anything: what replay makes
// of it holds no control character, in the keyframe and in a delta line.
func TestRecordingStringsAreInert(t *testing.T) {
	for _, s := range attack.Strings {
		path := filepath.Join(t.TempDir(), "rec.jsonl")
		if err := os.WriteFile(path, []byte(attack.Recording(s)), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := Load([]string{path}, func(w Warning) { t.Errorf("%q: warning %s", s, w) })
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if rec.Len() != 2 {
			t.Fatalf("%q: %d snapshots, want 2", s, rec.Len())
		}
		for i := range rec.Len() {
			snap := rec.Snapshot(i)
			if len(snap.Devices) != 1 || len(snap.Devices[0].Processes) != 1 {
				t.Fatalf("%q: snapshot %d: %+v", s, i, snap)
			}
			if err := attack.CheckTexts(snap); err != nil {
				t.Errorf("snapshot %d of a recording holding %q: %v", i, s, err)
			}
			if cmd := snap.Devices[0].Processes[0].Command; !strings.HasPrefix(cmd, []string{"python ", "torchrun "}[i]) {
				t.Errorf("%q: snapshot %d: command %q", s, i, cmd)
			}
		}
	}
}

// Every text field of a recorded device is made inert, the energy
// counter's error among them.
func TestRecordedDeviceTextsAreInert(t *testing.T) {
	for _, s := range attack.Strings {
		path := filepath.Join(t.TempDir(), "rec.jsonl")
		rec := strings.Replace(attack.Recording(s), `"free":75161927680,`, `"free":75161927680,"ene":`+attack.JSON("no counter "+s)+`,`, 1)
		if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load([]string{path}, func(w Warning) { t.Errorf("%q: warning %s", s, w) })
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		for i := range r.Len() {
			snap := r.Snapshot(i)
			if e := snap.Devices[0].EnergyError; !strings.HasPrefix(e, "no counter ") {
				t.Fatalf("%q: snapshot %d: energy error %q", s, i, e)
			}
			if err := attack.CheckTexts(snap); err != nil {
				t.Errorf("snapshot %d of a recording holding %q: %v", i, s, err)
			}
		}
	}
}
