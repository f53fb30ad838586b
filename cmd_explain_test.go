package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/testbin"
)

func runExplainArgs(t *testing.T, in string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	old := explainStdin
	explainStdin = strings.NewReader(in)
	defer func() { explainStdin = old }()
	var o, e bytes.Buffer
	code = dispatch(context.Background(), append([]string{"explain"}, args...), &o, &e)
	return o.String(), e.String(), code
}

const explainLog = "advisor/testdata/explain/pytorch_new_ddp.log"

func TestExplainCommandExitCodes(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "ok.log")
	if err := os.WriteFile(plain, []byte("all steps done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oom, err := os.ReadFile(explainLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string // a line the output must hold
		stderr string
	}{
		{"file with an OOM", "", []string{explainLog}, 0, "PyTorch out of memory on GPU 1", ""},
		{"stdin, no argument", string(oom), nil, 0, "shortfall (derived)", ""},
		{"stdin as -", string(oom), []string{"-"}, 0, "What to try", ""},
		{"flags after the file", "", []string{explainLog, "--json"}, 0, `"found": true`, ""},
		{"no OOM", "", []string{plain}, 1, "No out-of-memory message found", ""},
		{"no OOM, JSON", "", []string{"--json", plain}, 1, `"found": false`, ""},
		{"missing file", "", []string{filepath.Join(dir, "nope.log")}, 2, "", "cannot read " + filepath.Join(dir, "nope.log") + ": no such file or directory"},
		{"a directory", "", []string{dir}, 2, "", "cannot read " + dir},
		{"two files", "", []string{plain, plain}, 2, "", "one log at a time"},
		{"bad flag", "", []string{"--bogus"}, 2, "", "unknown flag: --bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runExplainArgs(t, c.stdin, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if !strings.Contains(out, c.stdout) {
				t.Errorf("stdout lacks %q:\n%s", c.stdout, out)
			}
			if !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr %q lacks %q", errOut, c.stderr)
			}
			if c.code == 2 && c.stderr != "" && c.name != "bad flag" && strings.Count(strings.TrimRight(errOut, "\n"), "\n") != 0 {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}
}

func TestExplainCommandJSON(t *testing.T) {
	out, _, code := runExplainArgs(t, "", "--json", explainLog)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Error("more than one JSON value")
	}
	want := map[string]any{"found": true, "framework": "pytorch", "device": 1.0, "requested_bytes": 2147483648.0,
		"free_bytes": 1148903752.0, "messages_found": 1.0}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	procs, _ := m["processes"].([]any)
	if len(procs) != 1 || procs[0].(map[string]any)["pid"] != 12345.0 {
		t.Errorf("processes = %v", m["processes"])
	}
	rem, _ := m["remedies"].([]any)
	if len(rem) == 0 {
		t.Fatal("no remedies")
	}
	for _, k := range []string{"name", "saving", "cost"} {
		if _, ok := rem[0].(map[string]any)[k]; !ok {
			t.Errorf("remedy lacks %q: %v", k, rem[0])
		}
	}
	if _, ok := m["diagnosis"].(string); !ok {
		t.Error("no diagnosis")
	}
}

func TestExplainCommandLiveDemo(t *testing.T) {
	out, errOut, code := runExplainArgs(t, "", "--live", "--demo", "--json", explainLog)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m struct {
		Live struct {
			Demo    bool   `json:"demo"`
			Freest  string `json:"freest"`
			Devices []any  `json:"devices"`
		} `json:"live"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if !m.Live.Demo || m.Live.Freest == "" || len(m.Live.Devices) == 0 {
		t.Errorf("live = %+v", m.Live)
	}
	txt, _, _ := runExplainArgs(t, "", "--live", "--demo", explainLog)
	if !strings.Contains(txt, "Freest now: GPU") {
		t.Errorf("text lacks the freest GPU:\n%s", txt)
	}
}

// bigLog lowers explainMaxLog to 64 KiB for the test and returns a log
// whose first OOM (GPU 7) falls outside its last 64 KiB and whose last
// (GPU 1), inside.
func bigLog(t *testing.T) string {
	t.Helper()
	old := explainMaxLog
	explainMaxLog = 64 << 10
	t.Cleanup(func() { explainMaxLog = old })
	oom, err := os.ReadFile(explainLog)
	if err != nil {
		t.Fatal(err)
	}
	first := "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 7; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.75 MiB free; 14.60 GiB reserved in total by PyTorch)\n"
	return first + strings.Repeat("step done\n", 20000) + string(oom)
}

// checkOnlyTheLast fails unless the JSON explanation out is of bigLog's
// last message alone.
func checkOnlyTheLast(t *testing.T, out string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m["device"] != 1.0 || m["messages_found"] != 1.0 {
		t.Errorf("device %v, messages %v: want the last message only", m["device"], m["messages_found"])
	}
}

func TestExplainCommandReadsTheEndOfABigLog(t *testing.T) {
	big := bigLog(t)
	name := filepath.Join(t.TempDir(), "big.log")
	if err := os.WriteFile(name, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runExplainArgs(t, "", "--json", name)
	if code != 0 || !strings.Contains(errOut, "reading its last") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	checkOnlyTheLast(t, out)
}

func TestExplainCommandLiveWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("a GPU driver is present")
	}
	out, errOut, code := runExplainArgs(t, "", "--live", explainLog)
	if code != 0 || !strings.Contains(out, "PyTorch out of memory on GPU 1") || strings.Contains(out, "Now:") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
	if lines := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); errOut == "" || lines != 0 {
		t.Errorf("want one line on stderr saying why there are no live numbers, got %q", errOut)
	}
}

func TestExplainCommandKeepsTheTailOfStdin(t *testing.T) {
	out, errOut, code := runExplainArgs(t, bigLog(t), "--json")
	if code != 0 || !strings.Contains(errOut, "standard input is longer than 64 KiB") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	checkOnlyTheLast(t, out)
	// Shorter than the limit: read whole, nothing said.
	oom, err := os.ReadFile(explainLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runExplainArgs(t, string(oom)); code != 0 || errOut != "" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// A read that blocks (a pipe nobody writes to) ends when ctx is cancelled,
// as main cancels it on SIGINT and SIGTERM.
func TestExplainCommandEndsWhenCancelled(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	old := explainStdin
	explainStdin = r
	defer func() { explainStdin = old }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	var o, e bytes.Buffer
	code := dispatch(ctx, []string{"explain"}, &o, &e)
	if code != 130 || time.Since(start) > time.Second {
		t.Errorf("exit %d after %v, want 130 within a second (stderr %q)", code, time.Since(start), e.String())
	}
}

// vramtop explain reading a pipe that stays open ends within a second of
// SIGINT or SIGTERM, with the shell's status for the signal.
func TestExplainCommandSignals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT/SIGTERM to send")
	}
	bin := testbin.BuildUnlessShort(t)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "explain")
			stdin, err := cmd.StdinPipe() // stays open: the read blocks
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			io.WriteString(stdin, "step 1 loss 0.5\n")
			time.Sleep(500 * time.Millisecond) // running and blocked in the read
			sent := time.Now()
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("still running 2 s after %v", c.sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != c.code || time.Since(sent) > time.Second {
				t.Errorf("exit %d after %v, want %d within a second (stderr %q)", code, time.Since(sent), c.code, errOut.String())
			}
		})
	}
}
