package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pathFlags are the flags whose value is a file's path or a command
// (whose first word is often a script's path).
var pathFlags = map[string]bool{"report-file": true, "record": true, "output": true, "on-alert": true}

// A flag that takes a file completes file names; every other flag that
// takes a value (a duration, size, percentage, count, address, word)
// does not: "vramtop --interval <tab>" offered the files of the directory.
func TestCompletionOfFlagValues(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range append([]command{topCommand()}, commands()...) {
		c.flags().VisitAll(func(f *pflag.Flag) {
			if f.NoOptDefVal != "" {
				return // --json, --demo: no separate value
			}
			args := []string{"__complete", "--" + f.Name, ""}
			if c.name != "vramtop" {
				args = append([]string{"__complete", c.name}, args[1:]...)
			}
			out, _, _ := runCLI(t, args...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			d, err := strconv.Atoi(strings.TrimPrefix(lines[len(lines)-1], ":"))
			if err != nil {
				t.Errorf("%v: no directive in %q", args, out)
				return
			}
			noFiles := cobra.ShellCompDirective(d)&cobra.ShellCompDirectiveNoFileComp != 0
			switch {
			case pathFlags[f.Name] && noFiles:
				t.Errorf("vramtop %s --%s takes a path but completes no file names (directive :%d)", c.name, f.Name, d)
			case !pathFlags[f.Name] && !noFiles:
				t.Errorf("vramtop %s --%s completes file names (directive :%d)", c.name, f.Name, d)
			}
			seen[f.Name] = true
		})
	}
	for name := range pathFlags {
		if !seen[name] {
			t.Errorf("no command has --%s", name)
		}
	}
}
