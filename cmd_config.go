package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/config"
)

// configFlagSet declares vramtop config's flags: --example, and one for
// each setting with its default.
func configFlagSet() (fs *pflag.FlagSet, example *bool) {
	fs = newFlagSet("vramtop config", "Usage: vramtop config [--example] [--KEY VALUE ...]\n\n"+
		"Prints each setting in effect and where it came from. A setting is read from the config file\n"+
		"($XDG_CONFIG_HOME/vramtop/config.toml, or the file $VRAMTOP_CONFIG names), then from its\n"+
		"VRAMTOP_* variable, then from the flag of the same name, each winning over the one before.\n"+
		"Give flags here to see how they combine.\n\n")
	example = fs.Bool("example", false, "print a config file with every key, commented, instead")
	defaults := settingDefaults()
	for _, k := range config.Keys() {
		fs.String(k.Name, defaults[k.Name], k.Doc)
	}
	return fs, example
}

// runConfig prints every setting in effect and where it came from: a
// flag given here, the environment, the config file (with its line), or
// the default.
func runConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, example := configFlagSet()
	if code, ok := parseNoArgs(fs, args, stderr, ""); !ok {
		return code
	}
	defaults := settingDefaults()
	if *example {
		if !writeOutput(stdout, stderr, "vramtop config", func(w io.Writer) error {
			_, err := io.WriteString(w, config.Documented(defaults))
			return err
		}) {
			return 1
		}
		return 0
	}
	cfg, err := config.Load(userEnv)
	if err != nil {
		fmt.Fprintf(stderr, "vramtop config: %v\n", err)
		return exitUsage
	}
	path, _ := config.Path(userEnv)
	for _, k := range config.Keys() {
		if f := fs.Lookup(k.Name); f.Changed {
			if err := config.Check(k.Name, f.Value.String()); err != nil {
				fmt.Fprintf(stderr, "vramtop config: --%s: %v\n", k.Name, err)
				return exitUsage
			}
		}
	}
	if !writeOutput(stdout, stderr, "vramtop config", func(w io.Writer) error {
		switch {
		case cfg.File != "":
			fmt.Fprintf(w, "config file: %s\n", cfg.File)
		case path != "":
			fmt.Fprintf(w, "config file: %s (none there)\n", path)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range config.Keys() {
			v, from := defaults[k.Name], "default"
			if f, ok := cfg.Get(k.Name); ok {
				v, from = f.Value, f.Origin
			}
			if f := fs.Lookup(k.Name); f.Changed {
				v, from = f.Value.String(), "--"+k.Name
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, v, from)
		}
		return tw.Flush()
	}) {
		return 1
	}
	return 0
}

// settingDefaults are the defaults of the flags that the settings give
// values to: the live view's, and vramtop serve's --listen.
func settingDefaults() map[string]string {
	d := map[string]string{"color": "auto"}
	for _, flags := range []func() *pflag.FlagSet{declare(topFlagSet), declare(serveFlagSet)} {
		fs := flags()
		fs.VisitAll(func(f *pflag.Flag) {
			if _, ok := config.KeyNamed(f.Name); ok {
				if _, set := d[f.Name]; !set {
					d[f.Name] = f.DefValue
				}
			}
		})
	}
	return d
}
