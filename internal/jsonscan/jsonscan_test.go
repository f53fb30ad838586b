package jsonscan

import (
	"encoding/json"
	"testing"
)

func TestClosingQuote(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{`"abc"`, 4},
		{`"a\"b"`, 5},
		{`"a\\"b"`, 4},
		{`"a\\\"b"`, 7},
		{`""`, 1},
		{`"abc`, -1},
		{`"ab\"`, -1},
		{`"\\\\"x"`, 5},
	} {
		if got := ClosingQuote([]byte(c.s), 1); got != c.want {
			t.Errorf("ClosingQuote(%s) = %d, want %d", c.s, got, c.want)
		}
	}
}

// Where encoding/json reads a string, ClosingQuote ends it where that
// string ends.
func FuzzClosingQuoteEndsTheString(f *testing.F) {
	f.Add(`a\"b`)
	f.Add(`\\`)
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		b = append(b, `"tail"`...)
		if got, want := ClosingQuote(b, 1), len(b)-len(`"tail"`)-1; got != want {
			t.Fatalf("ClosingQuote(%s) = %d, want %d", b, got, want)
		}
	})
}
