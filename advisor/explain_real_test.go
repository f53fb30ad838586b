package advisor

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestExplainRealMessages reads each message copied from a public issue
// thread (testdata/explain/real) and checks every field the explanation
// states: the kind of memory, the framework, the device and each number.
// It prints the corpus score: stated numbers read exactly, messages read
// whole, messages not found.
func TestExplainRealMessages(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "explain", "real", "*.log"))
	if len(files) != len(realCases) {
		t.Errorf("%d files in testdata/explain/real, %d cases: each message needs its case", len(files), len(realCases))
	}
	var numbers, exact, whole, notFound int
	for _, c := range realCases {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "explain", "real", c.file+".log"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "# source: https://github.com/") {
				t.Errorf("the first line must name the source")
			}
			e := Explain(string(b))
			got := explainJSON(t, e)
			if !e.Found {
				notFound++
			}
			ok := true
			for k, w := range c.want {
				if isNumber(k) {
					numbers++
				}
				if reflect.DeepEqual(got[k], w) {
					if isNumber(k) {
						exact++
					}
					continue
				}
				ok = false
				t.Errorf("%s = %v, want %v", k, got[k], w)
			}
			for _, k := range sortedKeys(got) {
				if _, want := c.want[k]; !want && k != "reason" {
					ok = false
					t.Errorf("unexpected %s = %v", k, got[k])
				}
			}
			if ok {
				whole++
			}
			if e.Found && (e.Diagnosis == "" || len(e.Remedies) == 0) {
				t.Errorf("found but no diagnosis or remedies")
			}
			if e.Confidence != "" && e.Reason == "" {
				t.Errorf("confidence %q without a reason", e.Confidence)
			}
		})
	}
	t.Logf("real messages: %d; stated numbers exact: %d of %d (%.1f%%); read whole: %d; not found: %d",
		len(realCases), exact, numbers, 100*float64(exact)/float64(max(numbers, 1)), whole, notFound)
}

// isNumber tells the JSON fields that hold a number the message states.
func isNumber(k string) bool {
	return strings.HasSuffix(k, "_bytes") || k == "device" || k == "processes" || k == "num_allocs" ||
		k == "cache_flushes" || k == "max_model_len" || k == "kv_cache_tokens" || k == "max_model_len_fits"
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Logs without an out-of-memory error, made or copied from issue threads
// (testdata/explain/no_oom): nothing is found in them.
func TestExplainFindsNothingInLogsWithoutOOM(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "explain", "no_oom", "*.log"))
	if len(files) < 6 {
		t.Fatalf("only %d logs in testdata/explain/no_oom", len(files))
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if e := Explain(string(b)); e.Found {
			t.Errorf("%s: found %s at line %d: %q", filepath.Base(name), e.Framework, e.Line, e.Message)
		}
	}
	// The benchmark's logs without the OOM at their end.
	for name, log := range map[string]string{
		"training log": strings.TrimSuffix(trainingLog(2<<20), benchOOM),
		"progress bar": strings.TrimSuffix(progressLine(2<<20), "\r\n"+benchOOM),
	} {
		if e := Explain(log); e.Found {
			t.Errorf("%s: found %s at line %d: %q", name, e.Framework, e.Line, e.Message)
		}
	}
}
