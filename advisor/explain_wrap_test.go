package advisor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// wrapLog cuts every line of log into pieces of width bytes (in the middle
// of words and numbers, as a terminal or a CI log viewer does) and puts
// prefix before each piece.
func wrapLog(log string, width int, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		for len(l) > width {
			cut := width
			for cut > 0 && l[cut]&0xc0 == 0x80 { // not inside a UTF-8 sequence
				cut--
			}
			b.WriteString(prefix + l[:cut] + "\n")
			l = l[cut:]
		}
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// Every real message reads the same wrapped at 80 or 50 columns (as a
// terminal breaks it), and with a launcher's prefix or a timestamp on every
// line. (Wrapped and prefixed at once, a message whose words the prefixes
// split may be missed: see scanTriggers.)
func TestExplainRealMessagesWrapped(t *testing.T) {
	for _, c := range realCases {
		b, err := os.ReadFile(filepath.Join("testdata", "explain", "real", c.file+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			name   string
			width  int
			prefix string
		}{{"80 columns", 80, ""}, {"50 columns", 50, ""}, {"rank prefix", 1 << 20, "[rank3]: "}, {"timestamps", 1 << 20, "2026-11-29T10:00:00.123Z "}} {
			got := explainJSON(t, Explain(wrapLog(string(b), w.width, w.prefix)))
			for k, want := range c.want {
				if k == "messages_found" {
					continue // a wrapped copy of a repeated message may read as one
				}
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("%s, %s: %s = %v, want %v", c.file, w.name, k, got[k], want)
				}
			}
		}
	}
}
