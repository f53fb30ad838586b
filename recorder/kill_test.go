package recorder_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/replay"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// vramtop builds the command once, for the tests that run it as a user
// would.
var vramtop = testbin.BuildUnlessShort

// completeLines counts the snapshot lines of a plain recording that end
// with a newline, and returns the time of the last one.
func completeRecords(t *testing.T, data []byte) int {
	t.Helper()
	n := 0
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) > 0 && l[len(l)-1] == '\n' && bytes.HasPrefix(l, []byte(`{"t":`)) {
			n++
		}
	}
	return n
}

// gunzipPrefix decompresses what it can of a gzip file cut short.
func gunzipPrefix(data []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	out, _ := io.ReadAll(zr)
	return out
}

// TestKill9 kills a real `vramtop record` outright while it records
// fast: replay reads every complete line, and the recording reaches to
// within the flush period of the kill.
func TestKill9(t *testing.T) {
	bin := vramtop(t)
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			cmd := exec.Command(bin, "record", "-q", "--demo", "--interval", "100ms", "-o", path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Let it write a few flushes' worth, then kill -9.
			time.Sleep(3500 * time.Millisecond)
			killed := time.Now()
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("no recording after kill -9: %v (stderr %q)", err, stderr.String())
			}
			plain := data
			if strings.HasSuffix(name, ".gz") {
				plain = gunzipPrefix(data)
			}
			complete := completeRecords(t, plain)
			if complete < 6 {
				t.Fatalf("only %d complete records after 3.5 s (a snapshot every 250 ms)", complete)
			}
			var warns []string
			rec, err := replay.Open(context.Background(), []string{path}, func(w replay.Warning) { warns = append(warns, w.String()) })
			if err != nil {
				t.Fatalf("replay of a killed recording: %v", err)
			}
			if rec.Len() != complete {
				t.Errorf("replay read %d snapshots; the file holds %d complete ones (warnings %q)", rec.Len(), complete, warns)
			}
			// At most the flush period (1 s) plus a sample is lost.
			if lost := killed.Sub(rec.End()); lost > 1500*time.Millisecond {
				t.Errorf("the last snapshot read is %v before the kill", lost)
			}
			// The snapshot read back is whole: every demo device is there.
			if last := rec.Snapshot(rec.Len() - 1); len(last.Devices) < 5 || last.Devices[0].History.Len() < 10 {
				t.Errorf("last snapshot: %d devices, %d history samples", len(last.Devices), last.Devices[0].History.Len())
			}
			// Recording again appends after what the killed one left.
			out, err := exec.Command(bin, "record", "-q", "--demo", "--interval", "100ms", "--duration", "500ms", "-o", path).CombinedOutput()
			if err != nil {
				t.Fatalf("recording again: %v: %s", err, out)
			}
			rec2, err := replay.Open(context.Background(), []string{path}, nil)
			if err != nil || rec2.Len() <= rec.Len() {
				t.Errorf("after appending: %v snapshots (was %d), %v", rec2.Len(), rec.Len(), err)
			}
		})
	}
}

// TestSIGTERMAndSIGINTEndCleanly: the recorder flushes and exits within a
// second with 128+N (143, 130), and the gzip stream is complete.
func TestSIGTERMAndSIGINTEndCleanly(t *testing.T) {
	bin := vramtop(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rec.jsonl.gz")
			// A long flush period would lose lines on a kill; a clean
			// signal loses none.
			cmd := exec.Command(bin, "record", "--demo", "--interval", "200ms", "-o", path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			cmd.Process.Signal(sig)
			sent := time.Now()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
					t.Fatalf("exit after %v: %v, want status %d (stderr %q)", sig, err, 128+int(sig), stderr.String())
				}
				if d := time.Since(sent); d > time.Second {
					t.Errorf("ended %v after %v", d, sig)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 10 s after %v", sig)
			}
			data, _ := os.ReadFile(path)
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("gzip stream not ended cleanly: %v", err)
			}
			n := completeRecords(t, plain)
			if !strings.Contains(stderr.String(), "snapshots recorded") || n < 3 {
				t.Errorf("%d records; stderr %q", n, stderr.String())
			}
		})
	}
}

func TestRecordRefusesBadInput(t *testing.T) {
	bin := vramtop(t)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("keep me\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"record", "--demo", "-o", filepath.Join(dir, "missing", "x.jsonl")}, 1, "no such file or directory"},
		{[]string{"record", "--demo", "-o", notes}, 1, "not a vramtop recording"},
		{[]string{"record", "--demo"}, 2, "-o FILE"},
		{[]string{"record", "--demo", "-o", filepath.Join(dir, "x"), "--max-size", "lots"}, 2, "--max-size"},
	} {
		cmd := exec.Command(bin, c.args...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if code != c.code || len(lines) != 1 || !strings.Contains(string(out), c.msg) {
			t.Errorf("vramtop %v: exit %d, output %q; want exit %d and one line about %q", c.args, code, out, c.code, c.msg)
		}
	}
	if b, _ := os.ReadFile(notes); string(b) != "keep me\n" {
		t.Errorf("the text file was changed: %q", b)
	}
}
