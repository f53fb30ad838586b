package gpus

import (
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

// besides lays blocks out as lipgloss.JoinHorizontal does, but for the
// padding after the last block.
func TestBesidesIsJoinHorizontal(t *testing.T) {
	trim := func(s string) string {
		ls := strings.Split(s, "\n")
		for i := range ls {
			ls[i] = strings.TrimRight(ls[i], " ")
		}
		return strings.Join(ls, "\n")
	}
	left := []string{"GPU 0 ", "\x1b[1mbar\x1b[0m   ", "mem   "}
	for _, right := range []string{"a\nb\nc", "only", "a\nb\nc\nd\ne", ""} {
		want := trim(lipgloss.JoinHorizontal(lipgloss.Top, strings.Join(left, "\n"), "  ", right))
		if got := trim(besides(left, 6, "  ", right)); got != want {
			t.Errorf("besides(%q) =\n%q\nwant\n%q", right, got, want)
		}
	}
}
