package main

import (
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/recsynth"
)

// demoRecording writes 10 minutes of the demo, a sample every 5 s, with a
// fake clock, and returns its path.
func demoRecording(t *testing.T) string {
	t.Helper()
	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "demo.jsonl.gz")
	if _, err := recsynth.Record(path, demo.New(start), start, 5*time.Second, time.Minute, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsageJSONMatchesSchemaAndTotals(t *testing.T) {
	s := schema(t, "usage.schema.json")
	rec := demoRecording(t)
	out, errOut, code := runCLI(t, "usage", rec, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	validate(t, s, "vramtop usage --json", []byte(out))
	var rep struct {
		Totals struct {
			GPUHours, AttributedGiBHours float64
		}
		Users []struct {
			User     string
			GiBHours float64 `json:"gib_hours"`
			Jobs     []string
		}
		Jobs []struct{ Job, User string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	sum, alice := 0.0, false
	for _, u := range rep.Users {
		sum += u.GiBHours
		if u.User == "alice" {
			alice = strings.Contains(strings.Join(u.Jobs, ","), "slurm 4242")
		}
	}
	if !alice {
		t.Errorf("users %+v: want alice in Slurm job 4242", rep.Users)
	}
	var pod bool
	for _, j := range rep.Jobs {
		pod = pod || j.User == "erin" && strings.HasPrefix(j.Job, "pod ")
	}
	if !pod {
		t.Errorf("jobs %+v: want erin's pod", rep.Jobs)
	}
	// The users' rows add up to the memory attributed.
	var tot struct {
		Totals struct {
			Attributed float64 `json:"attributed_gib_hours"`
			GPUHours   float64 `json:"gpu_hours"`
		} `json:"totals"`
	}
	json.Unmarshal([]byte(out), &tot)
	if d := sum - tot.Totals.Attributed; d > 1e-6 || d < -1e-6 || sum == 0 {
		t.Errorf("users' GiB-hours add to %f, attributed %f", sum, tot.Totals.Attributed)
	}
	// 10 minutes of the demo's GPUs (GPU 3's two MIG instances counted
	// on their own, not GPU 3 as well).
	if h := tot.Totals.GPUHours; h < 5.9/6 || h > 6.1/6 {
		t.Errorf("GPU-hours %f, want 6 GPUs × 10 min", h)
	}
}

func TestUsageTableCSVAndBars(t *testing.T) {
	rec := demoRecording(t)
	t.Setenv("CLICOLOR_FORCE", "")
	out, errOut, code := runCLI(t, "usage", rec, "--since", "2026-03-14T09:05:00Z")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"USER", "JOB", "alice", "slurm 4242", "GiB-hours by user", "█", "2026-03-14", "(5m0s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("escape sequences in a pipe:\n%q", out)
	}
	t.Setenv("CLICOLOR_FORCE", "1")
	out, _, _ = runCLI(t, "usage", rec)
	if !strings.Contains(out, "\x1b[3") {
		t.Errorf("CLICOLOR_FORCE: no colour in the bars:\n%s", out)
	}
	t.Setenv("CLICOLOR_FORCE", "")

	out, errOut, code = runCLI(t, "usage", rec, "--csv")
	if code != 0 {
		t.Fatalf("csv: exit %d: %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 3 {
		t.Fatalf("csv: %v %q", err, out)
	}
	if strings.Join(rows[0][:4], ",") != "kind,name,user,gib_hours" {
		t.Errorf("csv header %v", rows[0])
	}
	kinds := map[string]int{}
	for _, r := range rows[1:] {
		kinds[r[0]]++
		if len(r) != len(rows[0]) {
			t.Errorf("csv row %v: %d fields, header has %d", r, len(r), len(rows[0]))
		}
	}
	if kinds["user"] == 0 || kinds["job"] == 0 {
		t.Errorf("csv kinds %v, want users and jobs", kinds)
	}
}

func TestUsageBadInput(t *testing.T) {
	rec := demoRecording(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"usage"}, 2, "name the recordings"},
		{[]string{"usage", rec, "--since", "yesterday"}, 2, `--since "yesterday": want a time`},
		{[]string{"usage", rec, "--until", "2026-03-14", "--since", "2026-03-15"}, 2, "is not after"},
		{[]string{"usage", rec, "--json", "--csv"}, 2, "choose one"},
		{[]string{"usage", rec, "--idle-below", "150%"}, 2, "--idle-below"},
		{[]string{"usage", rec, "--prometheus", "http://127.0.0.1:9"}, 2, "not both"},
		{[]string{"usage", filepath.Join(dir, "missing.jsonl")}, 1, "no such file"},
		{[]string{"usage", "--prometheus", "http://127.0.0.1:1", "--timeout", "2s"}, 1, "connection refused"},
	} {
		out, errOut, code := runCLI(t, c.args...)
		msg := strings.TrimSpace(errOut)
		if code != c.code || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 0 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and one line saying %q", c.args, code, errOut, out, c.code, c.want)
		}
		for _, goText := range []string{"strconv.", "dial tcp", "parsing time", "open /"} {
			if strings.Contains(errOut, goText) {
				t.Errorf("%v: Go's error text in %q", c.args, errOut)
			}
		}
	}
}

// TestUsageDamagedAndCut: a recording cut off mid-line and with a
// damaged line is accounted for from the lines that read, the damage
// warned of.
// TestUsageNotARecording: a file that holds no recording is an error
// (after the warning about its line, as replay gives it).
func TestUsageNotARecording(t *testing.T) {
	notRec := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notRec, []byte("hello\n"), 0o644)
	out, errOut, code := runCLI(t, "usage", notRec)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 1 || out != "" || !strings.HasSuffix(lines[len(lines)-1], "notes.txt is not a vramtop recording") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and the file named as no recording", code, out, errOut)
	}
}

func TestUsageDamagedAndCut(t *testing.T) {
	rec := demoRecording(t)
	f, _ := os.Open(rec)
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	buf := make([]byte, 1<<20)
	for {
		n, err := zr.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	f.Close()
	lines := strings.SplitAfter(b.String(), "\n")
	lines[5] = "{\"t\":\"2026-03-14T09:00:25Z\",\"seq\":6,\"key\":true,\"d\":[{garbage\n"
	plain := filepath.Join(t.TempDir(), "damaged.jsonl")
	text := strings.Join(lines, "")
	os.WriteFile(plain, []byte(text[:len(text)-40]), 0o644)
	out, errOut, code := runCLI(t, "usage", plain, "--json")
	if code != 0 || !strings.Contains(errOut, "damaged") || !strings.Contains(errOut, "cut off") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, `"alice"`) {
		t.Errorf("nothing accounted from the lines that read:\n%.300s", out)
	}
}

// TestUsageHostileNamesInert: a user name holding a terminal control
// sequence (one that would write the clipboard) reaches no output of
// usage as such: the table, CSV and JSON show it inert.
func TestUsageHostileNamesInert(t *testing.T) {
	rec := demoRecording(t)
	f, _ := os.Open(rec)
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	buf := make([]byte, 1<<20)
	for {
		n, err := zr.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	f.Close()
	text := strings.ReplaceAll(b.String(), `"alice"`, `"\u001b]52;c;aGk=\u0007alice\u202e"`)
	if text == b.String() {
		t.Fatal("no alice in the recording")
	}
	path := filepath.Join(t.TempDir(), "hostile.jsonl")
	os.WriteFile(path, []byte(text), 0o644)
	for _, args := range [][]string{{"usage", path}, {"usage", path, "--csv"}, {"usage", path, "--json"}} {
		out, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if strings.ContainsAny(out+errOut, "\x1b\a\u202e") {
			t.Errorf("%v: a control character reached the output:\n%q", args, out)
		}
		if !strings.Contains(out, "alice") {
			t.Errorf("%v: alice's row is gone", args)
		}
	}
}
