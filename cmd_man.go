package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	mcobra "github.com/muesli/mango-cobra"
	"github.com/muesli/roff"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/config"
	"github.com/vramtop/vramtop/ui"
)

// runMan prints vramtop's manual page: every command and flag, the
// settings and their environment variables.
func runMan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := manFlagSet()
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	if !writeOutput(stdout, stderr, "vramtop man", func(w io.Writer) error {
		_, err := io.WriteString(w, manPage())
		return err
	}) {
		return 1
	}
	return 0
}

// manFlagSet declares vramtop man's flags: none but --help.
func manFlagSet() *pflag.FlagSet {
	return newFlagSet("vramtop man", "Usage: vramtop man\n\nPrints the manual page (roff) of vramtop and its commands: vramtop man | man -l -\n\n")
}

// manPage is the page as roff.
func manPage() string {
	var raw []string
	var code int
	root := newRoot(config.Settings{}, &raw, &code)
	forMan(root)
	page, err := mcobra.NewManPage(1, root)
	if err != nil {
		panic(err) // only for a command without a name
	}
	page.WithSection("Keys", manKeys())
	var env strings.Builder
	for _, k := range config.Keys() {
		fmt.Fprintf(&env, "%s\n    %s (the %s setting)\n\n", k.Env, k.Doc, k.Name)
	}
	env.WriteString("VRAMTOP_CONFIG\n    the config file to read instead of the default one\n\nNO_COLOR\n    no colours (as color = \"never\")\n")
	page.WithSection("Environment", env.String())
	page.WithSection("Files", "$XDG_CONFIG_HOME/vramtop/config.toml (~/.config/vramtop/config.toml)\n    "+
		"the settings, one key = value each; vramtop config --example prints one with every key")
	page.WithSection("Exit status", "0 done, 1 the command failed (pick and wait: too few GPUs qualify, the wait timed out, or with --prometheus Prometheus could not be read; 130 or 143 when interrupted), 2 bad usage; vramtop run, and pick and wait with -- CMD, exit with the status of the command")
	return page.Build(roff.NewDocument())
}

// manKeys is the KEYS section: the live view's key table (ui.KeyTable),
// as the help screen and the README list it.
func manKeys() string {
	var b strings.Builder
	b.WriteString("In the live view (vramtop, replay, fleet):\n\n")
	for _, r := range ui.KeyTable() {
		fmt.Fprintf(&b, "%s\n    %s\n\n", r.Keys, r.Does)
	}
	b.WriteString("A click on a column title sorts by it (again: reverses), on a process selects it, on a GPU opens its detail; the wheel scrolls.")
	return b.String()
}

// forMan readies c and its subcommands' text for roff: a paragraph's
// lines joined (roff fills them), a flag's value name without the
// backquotes that mark it for --help ("percent", not "`percent`"), and its
// default.
func forMan(c *cobra.Command) {
	paras := strings.Split(c.Long, "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	c.Long = strings.Join(paras, "\n\n")
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if name, _ := pflag.UnquoteUsage(f); name != "" {
			f.Usage = "(" + strings.ToUpper(name) + ") " + strings.ReplaceAll(f.Usage, "`", "")
		}
		switch f.DefValue {
		case "", "false", "0", "[]":
		default:
			f.Usage += " (default " + f.DefValue + ")"
		}
	})
	for _, sub := range c.Commands() {
		forMan(sub)
	}
}
