package replay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/replay"
	"github.com/vramtop/vramtop/sampler"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// vramtop builds the command once, for the tests that run it as a user
// would.
var vramtop = testbin.BuildUnlessShort

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(vramtop(t), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("vramtop %v did not end", args)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return o.String(), e.String(), code
}

// TestReplayOnceJSON: a recording made by vramtop record, printed at a
// moment by vramtop replay --once --json, is the snapshot of that moment.
func TestReplayOnceJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl.gz")
	if _, e, code := run(t, "record", "-q", "--demo", "--interval", "250ms", "--duration", "2s", "-o", path); code != 0 {
		t.Fatalf("record: %d %s", code, e)
	}
	rec, err := replay.Load([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Flags after the file name, a clock time on the recording's day.
	mid := rec.Time(rec.Len() / 2)
	at := mid.Format("15:04:05.000000000")
	out, e, code := run(t, "replay", path, "--once", "--json", "--at", at)
	if code != 0 {
		t.Fatalf("replay --once --json: exit %d: %s", code, e)
	}
	var got sampler.Snapshot
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not the --json document: %v\n%s", err, out)
	}
	want, _ := json.Marshal(rec.Snapshot(rec.Len() / 2))
	gotJSON, _ := json.Marshal(got)
	if !bytes.Equal(gotJSON, want) || !got.Time.Equal(mid) {
		t.Errorf("replay --at %s printed\n%s\nwant\n%s", at, gotJSON, want)
	}
	if !got.Demo || len(got.Devices) < 5 || got.Devices[0].PeakUsed == 0 {
		t.Errorf("snapshot lacks the demo's devices or their peaks: %s", gotJSON)
	}
	// Offsets, RFC 3339, and the end by default.
	out2, _, _ := run(t, "replay", "--json", "--at", "+0s", path)
	json.Unmarshal([]byte(out2), &got)
	if !got.Time.Equal(rec.Start()) {
		t.Errorf("--at +0s printed %v, want the start %v", got.Time, rec.Start())
	}
	out3, _, _ := run(t, "replay", "--json", path)
	json.Unmarshal([]byte(out3), &got)
	if !got.Time.Equal(rec.End()) {
		t.Errorf("without --at printed %v, want the end %v", got.Time, rec.End())
	}
	out4, _, _ := run(t, "replay", "--json", "--at", rec.Time(1).Format(time.RFC3339Nano), path)
	json.Unmarshal([]byte(out4), &got)
	if !got.Time.Equal(rec.Time(1)) {
		t.Errorf("--at RFC 3339 printed %v, want %v", got.Time, rec.Time(1))
	}
}

func TestReplayDamagedAndBadInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl")
	if _, e, code := run(t, "record", "-q", "--demo", "--interval", "250ms", "--duration", "1500ms", "-o", path); code != 0 {
		t.Fatalf("record: %d %s", code, e)
	}
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = lines[2][:len(lines[2])/3] + "\n" // line 3 cut short
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
	out, e, code := run(t, "replay", "--json", path)
	if code != 0 || !strings.Contains(e, "rec.jsonl:3:") || !strings.Contains(out, `"devices"`) {
		t.Errorf("damaged line: exit %d, stderr %q", code, e)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"replay", "--json", filepath.Join(dir, "missing.jsonl")}, 1, "no such file"},
		{[]string{"replay", "--json"}, 2, "name the recording"},
		{[]string{"replay", "--json", "--at", "tea time", path}, 2, "--at"},
		{[]string{"replay", "--json", "--at", "+10h", path}, 2, "outside the recording"},
	} {
		_, e, code := run(t, c.args...)
		if code != c.code || !strings.Contains(e, c.msg) || strings.Count(strings.TrimSpace(e), "\n") > 1 {
			t.Errorf("vramtop %v: exit %d, stderr %q; want %d and a line about %q", c.args, code, e, c.code, c.msg)
		}
	}
}
