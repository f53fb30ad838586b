package jobrun

import (
	"strings"
	"testing"
)

// The report quotes the command as a shell would, and says nothing of
// pids when there were none.
func TestReportQuotesAndNoEmptyPIDs(t *testing.T) {
	r := Report{Command: []string{"python3", "-c", "import time; time.sleep(1)", "it's"}}
	text := r.Text(100)
	if !strings.Contains(text, `python3 -c 'import time; time.sleep(1)' 'it'\''s'`) {
		t.Errorf("the command should be quoted as a shell takes it:\n%s", text)
	}
	if strings.Contains(text, "(pids )") || strings.Contains(text, "(pid") || !strings.Contains(text, "The job held no GPU memory") {
		t.Errorf("no pids: no empty list:\n%s", text)
	}
}
