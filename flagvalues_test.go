package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// goText is error text of Go's libraries that must never reach a user.
var goText = regexp.MustCompile(`strconv\.|time: |invalid syntax|unknown unit|missing unit|parsing "|ParseFloat|ParseInt|ParseBool|net/url|first path segment`)

// Every flag of every command, given a bad value, says in one line which
// flag, the value and the form it takes, and exits 2; no Go error text.
func TestEveryFlagBadValue(t *testing.T) {
	// Bad values of the string flags that check theirs.
	strBad := map[string]string{
		"color": "purple", "report": "xml", "min-free": "lots", "listen": "nowhere",
		"prometheus": "http://[::1", "at": "yesterday-ish",
	}
	byType := map[string]string{
		"bool": "maybe", "int": "two", "float64": "high", "duration": "1x", "uint": "-1", "int64": "two",
	}
	top := topCommand()
	top.name = ""
	cmds := append([]command{top}, commands()...)
	n := 0
	for _, c := range cmds {
		fs := c.flags()
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			bad, ok := strBad[f.Name]
			if !ok {
				bad, ok = byType[f.Value.Type()]
			}
			if !ok {
				return
			}
			args := []string{"--" + f.Name + "=" + bad}
			if c.name != "" {
				args = append([]string{c.name}, args...)
			}
			if c.passArgs {
				args = append(args, "--", "true")
			}
			if c.name == "replay" {
				args = append(args, "replay/testdata/format1.jsonl")
			}
			n++
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				_, stderr, code := runCLI(t, args...)
				msg := strings.TrimSpace(stderr)
				if code != exitUsage || strings.Count(msg, "\n") > 0 {
					t.Fatalf("exit %d, want %d with one line; stderr:\n%s", code, exitUsage, stderr)
				}
				if !strings.Contains(msg, "--"+f.Name) || !strings.Contains(msg, bad) {
					t.Errorf("the message should name --%s and %q: %s", f.Name, bad, msg)
				}
				if !strings.Contains(msg, "want") && !strings.Contains(msg, " as ") {
					t.Errorf("the message should say the form --%s takes: %s", f.Name, msg)
				}
				if goText.MatchString(msg) {
					t.Errorf("Go error text reaches the user: %s", msg)
				}
			})
		})
	}
	if n < 20 {
		t.Fatalf("only %d flags checked", n)
	}
}

// A percentage takes a % sign and a duration days, on the command line
// and in the config file; a percentage below 1 is warned of.
func TestPercentAndDaysAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"--demo", "--once", "--warn", "80%"},
		{"--demo", "--once", "--crit=95%", "--warn", "85"},
		{"--demo", "--once", "--history", "1d"},
		{"--demo", "--once", "--history=7d"},
	} {
		if _, stderr, code := runCLI(t, args...); code != 0 || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	writeConfigFile(t, "warn = \"80%\"\nhistory = \"2d\"\n")
	var o, e strings.Builder
	if code := dispatch(t.Context(), []string{"--demo", "--once"}, &o, &e); code != 0 || e.Len() > 0 {
		t.Errorf("a config file with warn = \"80%%\", history = \"2d\": exit %d, %s", code, e.String())
	}
	_, stderr, code := runCLI(t, "--demo", "--once", "--warn", "0.8")
	if code != 0 || !strings.Contains(stderr, "--warn 0.8 is 0.8%") || !strings.Contains(stderr, "80%") {
		t.Errorf("--warn 0.8 should run and warn that it is 0.8%%, not 80%%: exit %d, %q", code, stderr)
	}
}

// fleet --prometheus takes an address without a scheme; against a dead
// Prometheus --once prints the error once, on stderr, and no table; against
// an exporter it says so.
func TestFleetAddressMessages(t *testing.T) {
	if u, err := prometheusURL("127.0.0.1:9090"); err != nil || u != "http://127.0.0.1:9090" {
		t.Errorf("prometheusURL(127.0.0.1:9090) = %q, %v", u, err)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	stdout, stderr, code := runCLI(t, "fleet", "--prometheus", addr, "--once", "--timeout", "2s")
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, addr) {
		t.Errorf("a dead Prometheus: exit %d, stdout %q, stderr %q; want 1, nothing, one line", code, stdout, stderr)
	}
	exp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "# HELP DCGM_FI_DEV_FB_USED used\n# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{gpu=\"0\"} 1\n")
	}))
	defer exp.Close()
	_, stderr, code = runCLI(t, "fleet", "--prometheus", exp.URL, "--once", "--timeout", "2s")
	if code != 1 || !strings.Contains(stderr, "answers like an exporter") || !strings.Contains(stderr, "--prometheus wants") ||
		strings.Contains(stderr, "query ") || strings.Contains(stderr, "client_error") {
		t.Errorf("fleet at an exporter: exit %d, %q", code, stderr)
	}
}

func TestHelpUnknownTopicAndWaitTimeout(t *testing.T) {
	stdout, stderr, code := runCLI(t, "help", "nosuch")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `unknown help topic "nosuch"`) || !strings.Contains(stderr, "pick") {
		t.Errorf("help nosuch: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, stderr, code = runCLI(t, "wait", "--demo", "--timeout", "8s")
	if code != exitUsage || !strings.Contains(stderr, "--timeout 8s") || !strings.Contains(stderr, "--settle 10s") {
		t.Errorf("wait --timeout 8s (settle 10s): exit %d, %q; want 2 naming both", code, stderr)
	}
}

// The flags that take a few words complete them; every --json names its
// schema, which exists.
func TestCompletionsAndSchemas(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "run", "--report", ""}, []string{"text", "json"}},
		{[]string{"__complete", "--demo="}, []string{"true", "auto", "false"}},
	} {
		out, _, _ := runCLI(t, c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%v: %q lacks %s", c.args, out, w)
			}
		}
	}
	for _, c := range [][]string{{"--help"}, {"fleet", "--help"}, {"replay", "--help"}, {"explain", "--help"}, {"run", "--help"}} {
		out, _, _ := runCLI(t, c...)
		m := regexp.MustCompile(`docs/schema/[a-z-]+\.schema\.json`).FindString(out)
		if m == "" {
			t.Errorf("%v names no schema:\n%s", c, out)
			continue
		}
		if _, err := os.Stat(m); err != nil {
			t.Errorf("%v names %s: %v", c, m, err)
		}
	}
	if man := manPage(); !strings.Contains(strings.ReplaceAll(man, `\&`, ""), "docs/schema/snapshot.schema.json") {
		t.Error("the man page names no schema")
	}
}

// vramtop config names the file as the source of color = "never", and a
// warn above crit from the file names the file and line.
func TestConfigColorSourceAndRangeError(t *testing.T) {
	file := writeConfigFile(t, "color = \"never\"\nwarn = 95\ncrit = 90\n")
	t.Setenv("NO_COLOR", "")
	os.Unsetenv("NO_COLOR")
	t.Cleanup(func() { os.Unsetenv("NO_COLOR") })
	var o, e strings.Builder
	dispatch(t.Context(), []string{"config"}, &o, &e)
	if !regexp.MustCompile(`(?m)^color +never +` + regexp.QuoteMeta(file) + `:1$`).MatchString(o.String()) {
		t.Errorf("color = \"never\" from the file should name the file:\n%s", o.String())
	}
	os.Unsetenv("NO_COLOR")
	o.Reset()
	e.Reset()
	code := dispatch(t.Context(), []string{"--demo", "--once"}, &o, &e)
	if code != exitUsage || !strings.Contains(e.String(), "warn = 95 at "+file+":2") || !strings.Contains(e.String(), "crit = 90 at "+file+":3") {
		t.Errorf("warn above crit in the file: exit %d, %q; want 2 naming the file's lines", code, e.String())
	}
	os.Unsetenv("NO_COLOR")
	o.Reset()
	e.Reset()
	if code := dispatch(t.Context(), []string{"--demo", "--once", "--crit", "99"}, &o, &e); code != 0 {
		t.Errorf("--crit 99 over the file's crit: exit %d, %q", code, e.String())
	}
}

// The demo's alerts name its host, demo-node, as its metrics do.
func TestDemoAlertHostName(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/alerts.jsonl"
	_, stderr, code := runCLI(t, "record", "--demo", "-q", "-o", dir+"/rec.jsonl", "--duration", "1500ms", "--interval", "100ms",
		"--warn", "1", "--crit", "2", "--on-alert", "cat >> "+file)
	b, _ := os.ReadFile(file)
	if code != 0 || !strings.Contains(string(b), `"hostname":"demo-node"`) {
		t.Errorf("record --demo --on-alert: exit %d, %s; payload %s", code, stderr, b)
	}
	if h, _ := os.Hostname(); h != "demo-node" && strings.Contains(string(b), `"hostname":"`+h+`"`) {
		t.Errorf("the payload names this machine, %s", h)
	}
}
