package starttrace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMarkWritesEachStepOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trace")
	path = file
	defer func() { path, seen = "", nil }()
	Mark("main")
	Mark("open")
	Mark("main")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "main ") || !strings.HasPrefix(lines[1], "open ") {
		t.Fatalf("trace = %q, want one line for main, then one for open", lines)
	}
}
