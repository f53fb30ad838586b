package advisor

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	fuzzNumRE     = regexp.MustCompile(`^\d+(?:\.\d+)?`)
	fuzzGroupedRE = regexp.MustCompile(`^\d{1,3}(?:,\d{3})+`)
)

// statedValues returns every byte count that a decimal number in text can
// stand for: the number in bytes, KiB, MiB, GiB, TiB or PiB, rounded half
// up. It is computed independently of the parser (big.Rat, every number
// that no digit precedes), so a value the parser reports that is not in this set was
// invented.
func statedValues(text string) map[uint64]bool {
	set := map[uint64]bool{}
	for i := 0; i < len(text); i++ {
		// The parser's numbers start where no digit precedes them.
		if text[i] < '0' || text[i] > '9' || (i > 0 && text[i-1] >= '0' && text[i-1] <= '9') {
			continue
		}
		tok := fuzzNumRE.FindString(text[i:])
		cands := []string{tok}
		if g := fuzzGroupedRE.FindString(text[i:]); g != "" { // 1,073,741,824
			cands = append(cands, strings.ReplaceAll(g, ",", ""))
		}
		if j := strings.IndexByte(tok, '.'); j >= 0 {
			cands = append(cands, tok[:j])
		}
		for _, c := range cands {
			r, ok := new(big.Rat).SetString(c)
			if !ok {
				continue
			}
			for shift := uint(0); shift <= 50; shift += 10 {
				v := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), shift)))
				v.Add(v, big.NewRat(1, 2))
				n := new(big.Int).Quo(v.Num(), v.Denom())
				if n.IsUint64() {
					set[n.Uint64()] = true
				}
			}
		}
	}
	return set
}

// checkNoInventedNumbers fails when a *_bytes field at the top level of the
// explanation's JSON, or a process's bytes, is not a number of the input
// (or of the cleaned log, where wrapped lines are joined). A request
// computed from a TensorFlow shape must be that shape times its dtype's size.
func checkNoInventedNumbers(t *testing.T, log string, e Explanation) {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	stated := statedValues(log)
	for k, v := range statedValues(flatten(log).text) {
		stated[k] = v
	}
	check := func(name string, f float64) {
		u := uint64(f)
		if stated[u] {
			return
		}
		// JSON numbers are float64: accept the value's float64 neighbours.
		for k := range stated {
			if float64(k) == f {
				return
			}
		}
		t.Errorf("%s = %d is not a number of the input %q", name, u, log)
	}
	for k, v := range m {
		if !strings.HasSuffix(k, "_bytes") {
			continue
		}
		f, _ := v.(float64)
		if k == "requested_bytes" && e.RequestedFromShape {
			want, ok := shapeBytes(strings.Trim(e.Shape, "[]"), dtypeSize[e.DType])
			if !ok || want != *e.RequestedBytes {
				t.Errorf("requested_bytes %d from shape %s %s, want %d", *e.RequestedBytes, e.Shape, e.DType, want)
			}
			continue
		}
		check(k, f)
	}
	for _, p := range e.Processes {
		check("process bytes", float64(p.Bytes))
	}
	if !e.Found && (len(m) != 1 || m["found"] != false) {
		t.Errorf("not found but %v", m)
	}
	if e.Found && e.MessagesFound < 1 {
		t.Errorf("found with messages_found %d", e.MessagesFound)
	}
	_ = e.Text()
}

// explainLogs are the logs of testdata/explain: made, real, without an OOM.
func explainLogs() []string {
	var all []string
	for _, dir := range []string{"", "real", "no_oom"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "explain", dir, "*.log"))
		all = append(all, files...)
	}
	return all
}

func FuzzExplain(f *testing.F) {
	for _, name := range explainLogs() {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("CUDA out of memory. Tried to allocate 99999999999999999999999 TiB (GPU 99999999999999999999; 1.5 PiB total capacity; 0 bytes free)")
	f.Add("OOM when allocating tensor with shape[4294967296,4294967296,4294967296] and type complex128")
	f.Add("OOMwhenallocatingtensorwithshape[1000000 00]andtypefloat") // found by the fuzzer: "1000000 00" is no dimension
	f.Add(`{"msg":"CUDA out of memory. Tried to allocate 1\u002e5 GiB. GPU 0 has a total capacity of 2 GiB of which 1 GiB is free."}`)
	f.Fuzz(func(t *testing.T, log string) {
		if !utf8.ValidString(log) && len(log) > 1<<16 {
			return
		}
		e := Explain(log)
		checkNoInventedNumbers(t, log, e)
		checkGateChangesNothing(t, log, e)
	})
}

// checkGateChangesNothing fails when trying only the formats whose
// literals a region holds finds other than trying them all.
func checkGateChangesNothing(t *testing.T, log string, e Explanation) {
	t.Helper()
	a, _ := json.Marshal(e)
	b, _ := json.Marshal(explain(log, false))
	if string(a) != string(b) {
		t.Errorf("the literal gate changed the result for %q:\n%s\n%s", log, a, b)
	}
}

// The seeds pass the same checks in every ordinary test run.
func TestExplainInventsNoNumbers(t *testing.T) {
	files := explainLogs()
	if len(files) < 100 {
		t.Fatalf("%d logs in testdata/explain: the check would pass on almost nothing", len(files))
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		e := Explain(string(b))
		checkNoInventedNumbers(t, string(b), e)
		checkGateChangesNothing(t, string(b), e)
	}
}
