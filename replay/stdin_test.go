package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// TestRecordToStdoutReplayFromStdin: record -o - writes the recording to
// standard output (no file named "-"), and replay - reads it from
// standard input.
func TestRecordToStdoutReplayFromStdin(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	var rec, e bytes.Buffer
	cmd := exec.Command(bin, "record", "-q", "--demo", "--interval", "250ms", "--duration", "1500ms", "-o", "-")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &rec, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("record -o -: %v: %s", err, e.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`record -o - wrote a file named "-"`)
	}
	if !bytes.HasPrefix(rec.Bytes(), []byte(`{"format":"vramtop-record"`)) || bytes.Count(rec.Bytes(), []byte("\n")) < 4 {
		t.Fatalf("standard output holds no recording: %.200q", rec.String())
	}
	var out bytes.Buffer
	e.Reset()
	cmd = exec.Command(bin, "replay", "--json", "-")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(rec.Bytes()), &out, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay -: %v: %s", err, e.String())
	}
	var snap sampler.Snapshot
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil || len(snap.Devices) < 5 {
		t.Fatalf("replay - printed %d devices (%v): %.300s", len(snap.Devices), err, out.String())
	}
	// The moment printed is the recording's last line.
	lines := strings.Split(strings.TrimSpace(rec.String()), "\n")
	var last struct{ T time.Time }
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if !snap.Time.Equal(last.T) {
		t.Errorf("replay - printed %v, the last line is at %v", snap.Time, last.T)
	}
	if e.Len() > 0 {
		t.Errorf("stderr: %s", e.String())
	}
}
