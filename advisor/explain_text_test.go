package advisor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/vramtop/vramtop/sampler"
)

// numberThenUnit is a line break between a number and its unit, as
// "12.3\nGiB" or "(2048\n      bytes)".
var numberThenUnit = regexp.MustCompile(`[0-9]\n *(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes?|tokens?|%|ms|s|m|h)\b`)

// explainCorpus is every log of the explain fixtures, by name.
func explainCorpus(t *testing.T) map[string]string {
	t.Helper()
	logs := map[string]string{}
	for _, pattern := range []string{"*.log", "real/*.log", "no_oom/*.log"} {
		names, err := filepath.Glob(filepath.Join("testdata", "explain", pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			logs[n] = string(b)
		}
	}
	if len(logs) < 150 {
		t.Fatalf("found %d logs in testdata/explain", len(logs))
	}
	return logs
}

// At every width a terminal may have, explain's text keeps each number on
// the line of its unit, and its lines fit the width (a piece longer than
// the width, as a long command, alone on its line, may not).
func TestExplainTextWrapsWithoutPartingNumbers(t *testing.T) {
	live := sampler.Snapshot{Source: "nvml", Devices: []sampler.Device{
		{ID: "0", Index: 0, Name: "NVIDIA H100 80GB HBM3", MemoryTotal: 80 << 30, MemoryUsed: 10 << 30, MemoryFree: 70 << 30, Processes: make([]sampler.Process, 3)},
		{ID: "1", Index: 1, Name: "NVIDIA H100 80GB HBM3", MemoryTotal: 80 << 30, MemoryUsed: 79 << 30, MemoryFree: 1 << 30},
		{ID: "2", Index: 2, Err: "GPU is lost: the driver answered GPU_IS_LOST for its memory"},
	}}
	checked := 0
	for name, log := range explainCorpus(t) {
		e := Explain(log)
		for _, ex := range []Explanation{e, e.WithLive(live)} {
			for _, width := range []int{40, 57, 64, 80, 100} {
				for _, all := range []bool{false, true} {
					txt := ex.TextWith(TextOptions{Width: width, All: all})
					if width == DefaultTextWidth && !all {
						txt = ex.Text() // as vramtop run's report and a pipe have it
					}
					if m := numberThenUnit.FindString(txt); m != "" {
						t.Errorf("%s at %d columns: a number parted from its unit (%q):\n%s", name, width, m, txt)
					}
					for _, line := range strings.Split(strings.TrimSuffix(txt, "\n"), "\n") {
						if ansi.StringWidth(line) > width && !longPiece(line) {
							t.Errorf("%s at %d columns: a line of %d columns:\n%s", name, width, ansi.StringWidth(line), line)
						}
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d texts checked", checked)
}

// longPiece reports whether line, wider than a line may be, is one piece
// wrap may not break (a long word, a number and its unit), alone on its
// line or beside a row's label.
func longPiece(line string) bool {
	if len(wrapWords(line)) == 1 {
		return true
	}
	col := 2 + labelWidth + 1
	return len(line) > col && line[col-1] == ' ' && line[col] != ' ' && len(wrapWords(line[col:])) == 1
}

// --all lists every remedy in the text; without it the text says how many
// more there are and how to see them.
func TestExplainTextAll(t *testing.T) {
	e := Explain(readLog(t, "pytorch_new_ddp.log"))
	if len(e.Remedies) <= textRemedies {
		t.Fatalf("%d remedies: the log no longer has more than %d", len(e.Remedies), textRemedies)
	}
	short := e.TextWith(TextOptions{Width: 80})
	more := len(e.Remedies) - textRemedies
	if !strings.Contains(strings.Join(strings.Fields(short), " "), "(3 more: --all lists them all") || more != 3 {
		t.Errorf("without --all (%d more), the text says:\n%s", more, short)
	}
	full := e.TextWith(TextOptions{Width: 80, All: true})
	flat := strings.Join(strings.Fields(full), " ")
	for i, r := range e.Remedies {
		if !strings.Contains(flat, r.Name) {
			t.Errorf("--all: remedy %d (%s) is not in the text:\n%s", i+1, r.Name, full)
		}
	}
	if strings.Contains(full, "more:") {
		t.Errorf("--all still hides some:\n%s", full)
	}
}

// Every remedy's name starts in the same column, whether the ✓ is there
// or not, and so does each of its further lines (" 6.   keep …", not
// " 6. keep …" under " 5. ✓ model …").
func TestExplainRemediesAligned(t *testing.T) {
	head := regexp.MustCompile(`^ ?([0-9]+)\. (✓| ) (\S)`)
	for name, log := range explainCorpus(t) {
		e := Explain(log)
		if len(e.Remedies) == 0 {
			continue
		}
		txt := e.TextWith(TextOptions{Width: 100, All: true})
		_, list, _ := strings.Cut(txt, "What to try")
		n := 0
		for _, line := range strings.Split(list, "\n")[1:] {
			if line == "" {
				break
			}
			if m := head.FindStringSubmatch(line); m != nil {
				n++
				if col := ansi.StringWidth(line[:strings.Index(line, m[3])]); col != 6 {
					t.Errorf("%s: remedy %s's name starts at column %d, want 6:\n%s", name, m[1], col, list)
				}
				continue
			}
			if !strings.HasPrefix(line, "      ") || line[6] == ' ' {
				t.Errorf("%s: a remedy's further line is not indented to its name:\n%q", name, line)
			}
		}
		if n != len(e.Remedies) {
			t.Errorf("%s: %d remedies, %d numbered lines:\n%s", name, len(e.Remedies), n, list)
		}
	}
}
