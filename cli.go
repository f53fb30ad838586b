package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/config"
)

// runFunc runs a command: args are what follows its name, the result is
// the exit status.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// A command is a line of the command table: `vramtop NAME [flags]`.
type command struct {
	name    string
	summary string
	// flags declares the command's flags and help: a new flag set
	// (newFlagSet), the one run parses its arguments with. Help,
	// completions, the man page and config read it without running the
	// command.
	flags func() *pflag.FlagSet
	run   runFunc
	// settings are the config keys (config.Keys) that give this command's
	// flags of the same name their defaults.
	settings []string
	// passArgs: flags end at the first argument, which and whatever
	// follows are the command's own (vramtop run python train.py --lr 3).
	passArgs bool
	// files: its arguments are files (or a command), which the shells
	// complete.
	files bool
	// example is a command line or two, shown under Examples.
	example string
}

// commands is the command table; `vramtop` alone is the live view (runTop).
func commands() []command {
	return []command{
		{name: "explain", summary: "Explain an out-of-memory crash from its log (FILE or stdin)", flags: declare(explainFlagSet), run: runExplain, files: true,
			example: "  vramtop explain train.log\n  python train.py 2>&1 | tee train.log; vramtop explain --live train.log"},
		{name: "pick", summary: "Print the freest GPUs, for CUDA_VISIBLE_DEVICES=$(vramtop pick), or HOST:GPU across a fleet", flags: declare(pickFlagSet), run: runPick,
			example: "  CUDA_VISIBLE_DEVICES=$(vramtop pick --min-free 20GiB) python train.py\n  vramtop pick --count 2\n  vramtop pick --prometheus prometheus:9090 --min-free 40GiB --count 2"},
		{name: "wait", summary: "Wait until GPUs are free, then print them as pick does", flags: declare(waitFlagSet), run: runWait, settings: []string{"interval"},
			example: "  CUDA_VISIBLE_DEVICES=$(vramtop wait --min-free 40GiB --timeout 2h) python train.py\n  vramtop wait --prometheus prometheus:9090 --min-free 40GiB --max-util 10 --timeout 2h"},
		{name: "run", summary: "Run a command and report its GPU memory and energy when it ends: vramtop run -- CMD [ARGS...]", flags: declare(runFlagSet), run: runRun, passArgs: true, files: true,
			example: "  vramtop run -- python train.py --batch-size 64\n  vramtop run --report json --report-file report.json -- ./train.sh"},
		{name: "record", summary: "Record GPU memory to a file, headless (replay it with vramtop replay)", flags: declare(recordFlagSet), run: runRecord, settings: []string{"interval", "history"}},
		{name: "replay", summary: "Replay a recording in the live view, or print one moment of it", flags: declare(replayFlagSet), run: runReplay, settings: []string{"warn", "crit", "color"}, files: true},
		{name: "serve", summary: "Export GPU memory as Prometheus metrics (/metrics, /healthz)", flags: declare(serveFlagSet), run: runServe, settings: []string{"warn", "crit", "interval", "history", "listen"}},
		{name: "fleet", summary: "The live view over many hosts, read from Prometheus", flags: declare(fleetFlagSet), run: runFleet, settings: []string{"warn", "crit", "history", "color"}},
		{name: "usage", summary: "Account for who held GPU memory: GiB-hours, idle GPU-hours, peak, share per user and job", flags: declare(usageFlagSet), run: runUsage, files: true,
			example: "  vramtop usage gpu.jsonl.gz gpu.jsonl.gz.1 --since 2026-03-01 --until 2026-03-08\n  vramtop usage --prometheus http://prometheus:9090 --since 7d --csv > usage.csv"},
		{name: "config", summary: "Print the settings in effect and where each came from", flags: declare(configFlagSet), run: runConfig},
		{name: "man", summary: "Print the manual page (roff): vramtop man | man -l -", flags: manFlagSet, run: runMan},
	}
}

// declare is a command's flag declaration as the command table holds it:
// the flag set, without the values it binds.
func declare[T any](flags func() (*pflag.FlagSet, T)) func() *pflag.FlagSet {
	return func() *pflag.FlagSet {
		fs, _ := flags()
		return fs
	}
}

// cobraCommand is c for cobra: its usage line and description from its
// help text, its flags, and a run that hands the arguments as typed
// (*raw) to c.run, which parses them itself.
func cobraCommand(c command, cfg config.Settings, raw *[]string, code *int) *cobra.Command {
	fs := c.flags()
	userValues(fs)
	use, long := splitHead(c.name, helpHead(fs))
	cmd := &cobra.Command{
		Use:               use,
		Long:              long,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			applyColor(cfg)
			args := append(configArgs(fs, c.settings, cfg), *raw...)
			*code = c.run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
			return nil
		},
	}
	for _, key := range c.settings {
		if f := fs.Lookup(key); f != nil {
			if v, ok := cfg.Get(key); ok {
				f.DefValue = v.Value
			}
		}
	}
	cmd.Flags().AddFlagSet(fs)
	cmd.Flags().SortFlags = false
	// Flags that take one of a few words complete them.
	for name, words := range map[string][]string{"demo": {"true", "auto", "false"}, "report": {"text", "json"}, "color": {"auto", "always", "never"}} {
		if fs.Lookup(name) != nil {
			cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	// Every other flag that takes a value completes no file names, unless
	// the value is a path: a duration, size, percentage, count or address
	// is typed.
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := cmd.GetFlagCompletionFunc(f.Name); !ok && f.NoOptDefVal == "" && !takesPath(f) {
			cmd.RegisterFlagCompletionFunc(f.Name, cobra.NoFileCompletions)
		}
	})
	return cmd
}

// takesPath reports whether f's value is a file's path (`FILE`) or a
// command (`CMD`), whose first word is often a script's: the shells
// complete file names for it.
func takesPath(f *pflag.Flag) bool {
	name, _ := pflag.UnquoteUsage(f)
	return name == "FILE" || name == "CMD"
}

// splitHead reads a help text "Usage: vramtop NAME ARGS\n\nWhat it
// does.\n\nFlags:\n" as a usage line ("NAME ARGS") and a description.
func splitHead(name, head string) (use, long string) {
	first, rest, _ := strings.Cut(head, "\n")
	use = name
	if u, ok := strings.CutPrefix(strings.TrimSpace(first), "Usage: vramtop"); ok {
		use = strings.TrimSpace(name + " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(u), name)))
	}
	long = strings.TrimSpace(rest)
	long = strings.TrimSpace(strings.TrimSuffix(long, "Flags:"))
	return use, long
}

// configArgs are the flags that the config file and environment set for
// a command, to go before the arguments typed: a flag typed later wins.
func configArgs(fs *pflag.FlagSet, settings []string, cfg config.Settings) []string {
	var args []string
	for _, key := range settings {
		if v, ok := cfg.Get(key); ok && fs.Lookup(key) != nil {
			args = append(args, "--"+key+"="+v.Value)
		}
	}
	return args
}

// applyColor makes the color setting what the terminal libraries read:
// NO_COLOR for never, CLICOLOR_FORCE for always.
func applyColor(cfg config.Settings) {
	v, ok := cfg.Get("color")
	if !ok {
		return
	}
	switch v.Value {
	case "never":
		if os.Getenv("NO_COLOR") == "" {
			// Set for the libraries, not by the user: vramtop config
			// names the file, not NO_COLOR.
			noColorOurs = true
		}
		os.Setenv("NO_COLOR", "1")
	case "always":
		os.Unsetenv("NO_COLOR")
		os.Setenv("CLICOLOR_FORCE", "1")
	}
}

// noColorOurs is true when applyColor set NO_COLOR for color = "never".
var noColorOurs bool

// userEnv is os.Getenv without what vramtop set itself (NO_COLOR for a
// color setting): the environment the user gave.
func userEnv(k string) string {
	if k == "NO_COLOR" && noColorOurs {
		return ""
	}
	return os.Getenv(k)
}

// settingsInEffect are the settings dispatch loaded, for messages that
// name where a value came from.
var settingsInEffect config.Settings

// isDemoValue reports whether s is a value --demo takes as a separate
// argument.
func isDemoValue(s string) bool {
	switch s {
	case "auto", "on", "off", "true", "false":
		return true
	}
	return false
}

// joinDemo reads "--demo auto" as "--demo=auto" (--demo alone means on,
// so the flag takes no separate value otherwise); "--" ends the flags.
func joinDemo(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--demo" && i+1 < len(args) && isDemoValue(args[i+1]) {
			a = "--demo=" + args[i+1]
			i++
		}
		out = append(out, a)
	}
	return out
}

// newRoot is the vramtop command and its subcommands. raw is set, before
// it runs, to the arguments that follow the command's name; the command's
// exit status goes to *code.
func newRoot(cfg config.Settings, raw *[]string, code *int) *cobra.Command {
	return rootOf(topCommand(), commands(), cfg, raw, code)
}

// topCommand is vramtop alone, the live view.
func topCommand() command {
	return command{name: "vramtop", flags: declare(topFlagSet), run: runTop,
		settings: []string{"warn", "crit", "interval", "history", "bell", "color"}}
}

// rootOf is newRoot with top as the root command and cmds as the table.
func rootOf(top command, cmds []command, cfg config.Settings, raw *[]string, code *int) *cobra.Command {
	root := cobraCommand(top, cfg, raw, code)
	root.Use = "vramtop"
	root.Short = "GPU memory, live"
	root.Long = "vramtop shows GPU memory live: each GPU's use and history, who holds it, warnings before a\n" +
		"card runs out and what to do about it. On a terminal it is the live view (q quits, ? lists the\n" +
		"keys); piped, or with --once, it prints one table (--json: one JSON document).\n\n" +
		"Settings: " + configHelp()
	root.Example = "  vramtop\n  vramtop --demo\n  vramtop --once --json | jq '.devices[] | {index, memory_free_bytes}'"
	root.Args = cobra.NoArgs
	root.Version = version
	root.SetVersionTemplate("vramtop {{.Version}}\n")
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SuggestionsMinimumDistance = 2
	root.CompletionOptions.HiddenDefaultCmd = false
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, c := range cmds {
		sub := cobraCommand(c, cfg, raw, code)
		sub.Short = c.summary
		sub.Example = c.example
		if c.passArgs {
			sub.Flags().SetInterspersed(false)
		}
		if c.files {
			sub.ValidArgsFunction = nil
		}
		root.AddCommand(sub)
	}
	// help TOPIC: cobra's own prints the root help for a topic it does not
	// know and exits 0.
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, sub := range c.Root().Commands() {
				names = append(names, sub.Name())
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				var names []string
				for _, sub := range c.Root().Commands() {
					if sub.IsAvailableCommand() {
						names = append(names, sub.Name())
					}
				}
				return usageError{fmt.Errorf("unknown help topic %q (topics: %s)", strings.Join(args, " "), strings.Join(names, ", "))}
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	})
	return root
}

func configHelp() string {
	return "$XDG_CONFIG_HOME/vramtop/config.toml (~/.config/vramtop/config.toml) and VRAMTOP_*\n" +
		"variables: vramtop config prints them, vramtop config --example a file with every key.\n" +
		"Flags win over the environment, the environment over the file."
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// dispatch runs the command args name (the live view when none) and
// returns its exit status: 2 with one line on stderr for bad usage.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	noColorOurs = false
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop: %v\n", err)
		return exitUsage
	}
	settingsInEffect = cfg
	args = joinDemo(args)
	var raw []string
	code := 0
	root := newRoot(cfg, &raw, &code)
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		forCompletion(root)
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(os.Stdin)
	if _, rest, err := root.Find(args); err == nil {
		raw = rest
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		fmt.Fprintln(stderr, usageLine(root, cmd, err))
		return exitUsage
	}
	return code
}

// forCompletion readies c and its subcommands' flags for the shells'
// completions, which show a flag's usage as its description: without the
// backquotes that mark the value's name for --help, as --help shows it
// ("free size", not "free `size`").
func forCompletion(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) { f.Usage = strings.ReplaceAll(f.Usage, "`", "") })
	for _, sub := range c.Commands() {
		forCompletion(sub)
	}
}

// usageLine is err as one line, after the command's name, with where to
// read more.
func usageLine(root, cmd *cobra.Command, err error) string {
	name := "vramtop"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	msg, _, _ := strings.Cut(flagError(err), "\n")
	if arg, ok := strings.CutPrefix(msg, "unknown command "); ok {
		arg, _, _ = strings.Cut(arg, " for ")
		msg = "unknown command " + arg
		if s := root.SuggestionsFor(strings.Trim(arg, `"`)); len(s) > 0 {
			msg += " (did you mean " + s[0] + "?)"
		}
	}
	var ue usageError
	if !errors.As(err, &ue) && !strings.HasPrefix(msg, "unknown command") {
		return name + ": " + msg
	}
	return name + ": " + msg + " (see " + name + " --help)"
}

// buildVersion is what --version prints: the version given at link time
// (-X main.version=1.2.3), else the module version go install recorded
// (v1.2.3) and the VCS revision the build came from, else "dev".
func buildVersion(linked string, info func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	bi, ok := info()
	if !ok {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	// The revision as git log --oneline shows it, unless the module
	// version already names it (a pseudo-version).
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " (" + rev[:min(7, len(rev))] + dirty + ")"
	}
	return v
}
