//go:build unix

package jobrun

import (
	"strings"
	"testing"

	"github.com/vramtop/vramtop/internal/hostile"
)

// A leftover may be any program, named by anyone: the report prints its
// command line inert.
func TestReportLeftoverCommandIsInert(t *testing.T) {
	root := t.TempDir()
	for i, s := range hostile.Strings {
		if err := hostile.WriteProc(root, hostile.Proc{PID: 100 + i, Comm: "x", Cmdline: "python\x00" + s + "\x00--x"}); err != nil {
			t.Fatal(err)
		}
	}
	var all strings.Builder
	for i := range hostile.Strings {
		r := Report{Command: []string{"sh", "-c", "train \x1b]2;t\a"}, Source: "demo",
			Leftovers: []Leftover{{PID: 100 + i, Command: cmdline(root, 100+i), GPUBytes: 1 << 30}}}
		all.WriteString(r.Text(80))
	}
	text := all.String()
	if err := hostile.Check([]byte(text)); err != nil {
		t.Errorf("the report: %v\n%s", err, text)
	}
	if !strings.Contains(text, "python \uFFFD]52;c;") {
		t.Errorf("the report does not show the OSC 52 leftover as inert text:\n%s", text)
	}
}
