package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/config"
	"github.com/vramtop/vramtop/ui"
	"github.com/vramtop/vramtop/ui/common"
)

// run runs vramtop in this process (dispatch) with a config directory of
// its own, so the machine's config file and VRAMTOP_* variables play no
// part.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	isolateConfig(t)
	var o, e bytes.Buffer
	code = dispatch(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

// isolateConfig points the config at an empty directory and clears the
// VRAMTOP_* variables for the test.
func isolateConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "VRAMTOP_") && k != "VRAMTOP_PROMETHEUS" {
			t.Setenv(k, "")
		}
	}
	return dir
}

// writeConfigFile isolates the config (isolateConfig) and writes text as
// its file, whose name it returns.
func writeConfigFile(t *testing.T, text string) string {
	t.Helper()
	dir := filepath.Join(isolateConfig(t), "vramtop")
	file := filepath.Join(dir, "config.toml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, errOut, code := runCLI(t, args...)
		if code != 0 || errOut != "" {
			t.Errorf("vramtop %v: exit %d, stderr %q; want 0 and nothing on stderr", args, code, errOut)
		}
		for _, want := range []string{"Usage:", "vramtop [command]", "explain", "pick", "wait", "--demo", "--once", "--interval"} {
			if !strings.Contains(out, want) {
				t.Errorf("vramtop %v: stdout lacks %q:\n%s", args, want, out)
			}
		}
	}
}

// help CMD is CMD --help, and each command lists only the flags it has.
func TestHelpCommand(t *testing.T) {
	for _, c := range []struct {
		cmd        string
		has, hasNo []string
	}{
		{"explain", []string{"vramtop explain [FILE|-]", "--json", "--live", "--demo"}, []string{"--interval", "--history", "--once"}},
		{"pick", []string{"--min-free", "--count", "--demo"}, []string{"--interval", "--history"}},
		{"wait", []string{"--min-free", "--settle", "--timeout", "--max-util", "--interval"}, []string{"--history"}},
		{"serve", []string{"--listen", "--warn"}, []string{"--once"}},
		{"record", []string{"-o, --output", "-q, --quiet", "--interval", "--on-alert", "--warn"}, []string{"--once", "--listen"}},
	} {
		help, errOut, code := runCLI(t, "help", c.cmd)
		if code != 0 || errOut != "" {
			t.Errorf("help %s: exit %d, stderr %q", c.cmd, code, errOut)
		}
		flagHelp, _, code := runCLI(t, c.cmd, "--help")
		if code != 0 || flagHelp != help {
			t.Errorf("%s --help: exit %d, and it differs from help %s:\n%s\n---\n%s", c.cmd, code, c.cmd, flagHelp, help)
		}
		for _, w := range c.has {
			if !strings.Contains(help, w) {
				t.Errorf("help %s lacks %q:\n%s", c.cmd, w, help)
			}
		}
		for _, w := range c.hasNo {
			// A flag's own line: "  -o, --output FILE  ..." or "      --once  ...".
			if regexp.MustCompile(`(?m)^ +(-\w, )?` + w + `\b`).MatchString(help) {
				t.Errorf("help %s lists %q, a flag it does not have:\n%s", c.cmd, w, help)
			}
		}
	}
}

// --demo takes its value as GNU tools do: --demo=auto, --demo auto, and
// --demo alone for always.
func TestDemoFlagForms(t *testing.T) {
	for _, args := range [][]string{{"--demo"}, {"--demo=true"}, {"--demo", "on"}, {"--demo", "auto"}, {"--demo=auto"}} {
		if _, err := os.Stat("/dev/nvidiactl"); err == nil && strings.Contains(strings.Join(args, " "), "auto") {
			continue // a driver: auto shows the real GPUs
		}
		out, errOut, code := runCLI(t, append(args, "--once", "--json")...)
		if code != 0 || !strings.Contains(out, `"demo": true`) {
			t.Errorf("vramtop %v --once --json: exit %d, stderr %q; want the demo", args, code, errOut)
		}
	}
	// After --, "--demo auto" belongs to the job.
	if got := joinDemo([]string{"run", "--demo", "--", "x", "--demo", "auto"}); strings.Join(got, " ") != "run --demo -- x --demo auto" {
		t.Errorf("joinDemo rewrote a job's arguments: %q", got)
	}
}

func TestUsageErrorsAreOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--bogus"}, "vramtop: unknown flag: --bogus (see vramtop --help)"},
		{[]string{"pikc"}, `vramtop: unknown command "pikc" (did you mean pick?)`},
		{[]string{"pick", "--count"}, "vramtop pick: flag needs an argument: --count"},
		{[]string{"pick", "--count", "two"}, `vramtop pick: --count "two": want a whole number, as 2`},
		{[]string{"--demo", "--once", "extra"}, `unknown command "extra"`},
	} {
		out, errOut, code := runCLI(t, c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.say) {
			t.Errorf("vramtop %v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.say)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := runCLI(t, "completion", sh)
		if code != 0 || errOut != "" || !strings.Contains(out, "vramtop") || len(out) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", sh, code, len(out), errOut)
		}
		if sh == "bash" {
			if bash, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = strings.NewReader(out)
				if msg, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("the bash completion is not valid bash: %v\n%s", err, msg)
				}
			}
		}
	}
	// What the shells ask: the flags of pick, and the commands.
	out, _, _ := runCLI(t, "__complete", "pick", "--")
	for _, want := range []string{"--min-free", "--count", "--demo"} {
		if !strings.Contains(out, want) {
			t.Errorf("completing `vramtop pick --` lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--interval") {
		t.Errorf("completing `vramtop pick --` offers --interval, which pick does not have")
	}
	out, _, _ = runCLI(t, "__complete", "wa")
	if !strings.Contains(out, "wait") {
		t.Errorf("completing `vramtop wa` lacks wait:\n%s", out)
	}
	// explain and replay take files: the shell completes them (directive
	// 0, its default); pick takes none (4, no files).
	for args, directive := range map[string]string{"explain ": ":0", "replay ": ":0", "pick ": ":4"} {
		out, _, _ := runCLI(t, append([]string{"__complete"}, strings.Split(args, " ")...)...)
		if !slices.Contains(strings.Split(out, "\n"), directive) {
			t.Errorf("completing `vramtop %s`: want directive %s:\n%s", args, directive, out)
		}
	}
	if out, _, _ := runCLI(t, "__complete", "pick", "--demo="); !strings.Contains(out, "auto") {
		t.Errorf("completing --demo= lacks auto:\n%s", out)
	}
}

func TestManPage(t *testing.T) {
	out, errOut, code := runCLI(t, "man")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^\.TH VRAMTOP 1 `).MatchString(out) {
		t.Errorf("no .TH VRAMTOP 1 title line:\n%.300s", out)
	}
	for _, want := range []string{".SH ENVIRONMENT", ".SH FILES", "VRAMTOP_WARN", "wait", "explain", "--min-free", "--settle"} {
		if !strings.Contains(out, want) {
			t.Errorf("the man page lacks %q", want)
		}
	}
	// Rendered by man where it is installed: no roff warnings.
	if man, err := exec.LookPath("man"); err == nil {
		page := filepath.Join(t.TempDir(), "vramtop.1")
		os.WriteFile(page, []byte(out), 0o644)
		cmd := exec.Command(man, "-l", page)
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "MANWIDTH=100")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		text, err := cmd.Output()
		if err != nil || !strings.Contains(string(text), "--min-free") || !strings.Contains(string(text), "vramtop/config.toml") || stderr.Len() > 0 {
			t.Errorf("man -l: %v, stderr %q", err, stderr.String())
		}
	}
}

func TestBuildVersion(t *testing.T) {
	info := func(version string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/vramtop/vramtop", Version: version}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		linked string
		info   func() (*debug.BuildInfo, bool)
		want   string
	}{
		{"1.2.3", info("v9.9.9"), "1.2.3"}, // -X main.version wins
		{"", info("v0.4.0"), "v0.4.0"},     // go install …@v0.4.0
		{"", info("(devel)", "vcs.revision", rev), "dev (0123456)"},
		{"", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "dev (0123456, modified)"},
		{"", info("v0.4.1-0.20260301120000-0123456789ab", "vcs.revision", rev), "v0.4.1-0.20260301120000-0123456789ab"},
		{"", func() (*debug.BuildInfo, bool) { return nil, false }, "dev"},
	} {
		if got := buildVersion(c.linked, c.info); got != c.want {
			t.Errorf("buildVersion(%q, …) = %q, want %q", c.linked, got, c.want)
		}
	}
}

// A setting comes from the file, the environment over it, a flag over
// both; `vramtop config` says which.
func TestConfigPrecedence(t *testing.T) {
	file := writeConfigFile(t, "warn = 70\ncrit = 85\ninterval = \"10ms\"\n")

	// The file's interval is below the minimum: the live view says so.
	var o, e bytes.Buffer
	if code := dispatch(context.Background(), []string{"--demo", "--once"}, &o, &e); code != 2 || !strings.Contains(e.String(), "10ms") {
		t.Errorf("interval 10ms from the file: exit %d, stderr %q; want it refused", code, e.String())
	}
	// The environment wins over the file, a flag over the environment.
	t.Setenv("VRAMTOP_INTERVAL", "2s")
	t.Setenv("VRAMTOP_CRIT", "95")
	o.Reset()
	e.Reset()
	if code := dispatch(context.Background(), []string{"--demo", "--once"}, &o, &e); code != 0 {
		t.Errorf("interval 2s from the environment: exit %d, stderr %q", code, e.String())
	}
	e.Reset()
	if code := dispatch(context.Background(), []string{"--demo", "--once", "--interval", "20ms"}, &o, &e); code != 2 || !strings.Contains(e.String(), "20ms") {
		t.Errorf("--interval 20ms over the environment's 2s: exit %d, stderr %q; want it refused", code, e.String())
	}

	e.Reset()
	if code := dispatch(context.Background(), []string{"config", "--crit", "120"}, &o, &e); code != 2 || !strings.Contains(e.String(), "--crit: want a percentage") {
		t.Errorf("config --crit 120: exit %d, stderr %q; want it refused", code, e.String())
	}
	o.Reset()
	if code := dispatch(context.Background(), []string{"config", "--crit", "99"}, &o, &e); code != 0 {
		t.Fatalf("config: exit %d, %s", code, e.String())
	}
	want := map[string][2]string{
		"warn":     {"70", file + ":1"},
		"crit":     {"99", "--crit"},
		"interval": {"2s", "VRAMTOP_INTERVAL"},
		"history":  {"1h0m0s", "default"},
		"listen":   {"127.0.0.1:9400", "default"},
	}
	for _, line := range strings.Split(o.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		if w, ok := want[f[0]]; ok {
			if f[1] != w[0] || f[2] != w[1] {
				t.Errorf("config: %q, want %s %s %s", line, f[0], w[0], w[1])
			}
			delete(want, f[0])
		}
	}
	if len(want) > 0 {
		t.Errorf("config printed no line for %v:\n%s", want, o.String())
	}
	// The help of a command shows the defaults the settings give it.
	help, _, _ := func() (string, string, int) {
		var o, e bytes.Buffer
		c := dispatch(context.Background(), []string{"serve", "--help"}, &o, &e)
		return o.String(), e.String(), c
	}()
	if !regexp.MustCompile(`--crit percent .*\(default 95\)`).MatchString(help) {
		t.Errorf("serve --help does not show crit 95 from the environment:\n%s", help)
	}
}

func TestBadConfigIsOneLine(t *testing.T) {
	file := writeConfigFile(t, "warn = 70\n\nbell = \"loud\"\n")
	var o, e bytes.Buffer
	code := dispatch(context.Background(), []string{"--demo", "--once"}, &o, &e)
	if code != 2 || e.String() != "vramtop: "+file+":3: bell: want true or false, got \"loud\"\n" {
		t.Errorf("exit %d, stderr %q", code, e.String())
	}
}

// Every command in the table declares its flags and help: a flag set
// named after it, a usage line that names it, and a summary.
func TestCommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands() {
		if seen[c.name] || c.summary == "" {
			t.Errorf("%s: duplicate or without a summary", c.name)
		}
		seen[c.name] = true
		fs := c.flags()
		if use, _ := splitHead(c.name, helpHead(fs)); !strings.HasPrefix(use, c.name) || fs.Name() != "vramtop "+c.name {
			t.Errorf("%s: usage %q, flag set %q", c.name, use, fs.Name())
		}
	}
}

// The help of every command comes from the command table and runs no
// command: each --help lists every flag the command declares, even where
// the command does something before it parses its flags (or never
// parses them).
func TestHelpRunsNoCommand(t *testing.T) {
	isolateConfig(t)
	ran := func(_ context.Context, args []string, _, _ io.Writer) int {
		t.Errorf("a command ran (args %q) for its help", args)
		return 1
	}
	top := topCommand()
	top.run = ran
	cmds := commands()
	for i := range cmds {
		cmds[i].run = ran
	}
	for _, c := range append([]command{top}, cmds...) {
		var raw []string
		var code int
		root := rootOf(top, cmds, config.Settings{}, &raw, &code)
		args := []string{c.name, "--help"}
		if c.name == top.name {
			args = args[1:]
		}
		var out, errOut bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&errOut)
		if err := root.Execute(); err != nil || errOut.Len() > 0 {
			t.Fatalf("%q: %v, stderr %q", args, err, errOut.String())
		}
		n := 0
		c.flags().VisitAll(func(f *pflag.Flag) {
			n++
			if !regexp.MustCompile(`(?m)^ +(-\w, )?--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(out.String()) {
				t.Errorf("%q does not list --%s:\n%s", args, f.Name, out.String())
			}
		})
		if n == 0 && c.name != "man" {
			t.Errorf("%s declares no flags", c.name)
		}
	}
}

// What every start of vramtop pays for its command line: the command tree
// with each command's flags (go test -bench NewRoot -benchmem).
func BenchmarkNewRoot(b *testing.B) {
	var raw []string
	var code int
	b.ReportAllocs()
	for range b.N {
		newRoot(config.Settings{}, &raw, &code)
	}
}

// The README's key table is the help screen's (ui.KeyTable), as the man
// page's KEYS section is.
func TestREADMEKeyTable(t *testing.T) {
	checkREADMEBlock(t, "keys", readmeKeys(), "key table is not the help screen's")
	man := manPage()
	keys := man[strings.Index(man, ".SH KEYS"):]
	for _, r := range ui.KeyTable() {
		if !strings.Contains(keys, r.Keys) || !strings.Contains(keys, r.Does) {
			t.Errorf("the man page's KEYS lack %q (%s)", r.Keys, r.Does)
		}
	}
}

// The README's legend of the process table's columns is the help screen's
// (common.ColumnTable).
func TestREADMEColumnLegend(t *testing.T) {
	checkREADMEBlock(t, "columns", readmeColumns(), "column legend is not the help screen's")
}

// readmeKeys is the README's key table, from the same ui.KeyTable.
func readmeKeys() string {
	var b strings.Builder
	b.WriteString("| key | does |\n|---|---|\n")
	for _, r := range ui.KeyTable() {
		fmt.Fprintf(&b, "| %s | %s |\n", strings.ReplaceAll(r.Keys, "|", "\\|"), strings.ReplaceAll(r.Does, "|", "\\|"))
	}
	return b.String()
}

// readmeColumns is the README's legend of the process table's columns, from
// the help screen's common.ColumnTable, wrapped at 80 columns as the README is.
func readmeColumns() string {
	var parts []string
	for _, c := range common.ColumnTable() {
		parts = append(parts, "`"+c.Name+"` "+c.Holds)
	}
	text := "The process table's columns: " + strings.Join(parts, ", ") + "."
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len([]rune(w)) > 80 {
			b.WriteString("\n")
			n = 0
		} else if n > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len([]rune(w))
	}
	b.WriteString("\n")
	return b.String()
}

// checkREADMEBlock checks that the README's block between "<!-- name: …
// -->" and "<!-- /name -->" is want; VRAMTOP_UPDATE_README=1 writes it.
func checkREADMEBlock(t *testing.T, name, want, drift string) {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	open, end := "<!-- "+name+":", "<!-- /"+name+" -->"
	i := strings.Index(readme, open)
	j := strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q section", open, end)
	}
	i += strings.Index(readme[i:], "-->\n") + len("-->\n")
	if got := readme[i:j]; got != want {
		if os.Getenv("VRAMTOP_UPDATE_README") == "1" {
			if err := os.WriteFile("README.md", []byte(readme[:i]+want+readme[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's %s (VRAMTOP_UPDATE_README=1 go test -run %s rewrites it); want:\n%s\ngot:\n%s", drift, t.Name(), want, got)
	}
}

// The shells show a flag's description as --help words it: the backquotes
// that mark the value's name for --help ("free `size`") are not shown.
func TestCompletionDescriptionsAreHelpsText(t *testing.T) {
	names := []string{""}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	for _, c := range names {
		args := []string{"__complete", "--"}
		help := []string{"--help"}
		if c != "" {
			args = []string{"__complete", c, "--"}
			help = []string{c, "--help"}
		}
		out, _, _ := runCLI(t, args...)
		helpOut, _, _ := runCLI(t, help...)
		n := 0
		for _, l := range strings.Split(out, "\n") {
			flag, desc, ok := strings.Cut(l, "\t")
			if !ok {
				continue
			}
			n++
			if strings.Contains(desc, "`") || !strings.Contains(helpOut, desc) {
				t.Errorf("vramtop %s: %s is described as %q, not as --help says", c, flag, desc)
			}
		}
		if n == 0 {
			t.Errorf("vramtop %s: no flag completed with its description:\n%s", c, out)
		}
	}
}
