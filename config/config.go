// Package config reads the settings users keep: a TOML file
// ($XDG_CONFIG_HOME/vramtop/config.toml) and VRAMTOP_* environment
// variables. The environment wins over the file; the command line, applied
// by the caller, wins over both.
//
// Every value is kept as the text a command-line flag of the same name
// takes ("85", "500ms", "true"), so a setting means exactly what its flag
// means.
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/pelletier/go-toml/v2"

	"github.com/vramtop/vramtop/internal/inert"

	"github.com/vramtop/vramtop/units"
)

// A Key is one setting.
type Key struct {
	Name  string // in the file, and the flag it sets: "warn" is --warn
	Env   string // its environment variable: VRAMTOP_WARN
	Doc   string
	check func(string) error
}

// Keys are every setting, in the order `vramtop config` prints them.
func Keys() []Key {
	return []Key{
		{"warn", "VRAMTOP_WARN", "warn when a GPU's memory use passes this percentage", checkPercent},
		{"crit", "VRAMTOP_CRIT", "critical when a GPU's memory use passes this percentage", checkPercent},
		{"interval", "VRAMTOP_INTERVAL", "how often device memory is sampled (50ms at the fastest)", checkDuration},
		{"history", "VRAMTOP_HISTORY", "how much history the live view and the exporter keep", checkDuration},
		{"bell", "VRAMTOP_BELL", "ring the terminal bell when a GPU turns critical", checkBool},
		{"color", "VRAMTOP_COLOR", "colours: auto (when the terminal has them), always or never; NO_COLOR=1 means never", checkColor},
		{"listen", "VRAMTOP_LISTEN", "the address vramtop serve listens on (\":9400\" for every interface)", checkListen},
	}
}

// KeyNamed is the key called name.
func KeyNamed(name string) (Key, bool) {
	for _, k := range Keys() {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// Check reports whether v is a valid value of key, as the file and the
// environment are checked.
func Check(key, v string) error {
	k, ok := KeyNamed(key)
	if !ok {
		return fmt.Errorf("unknown key %q (known: %s)", key, keyNames())
	}
	return k.check(v)
}

// Where a value came from: the file or the environment (a default or a
// flag is the caller's to tell).
const (
	FromFile = "file"
	FromEnv  = "env"
)

// A Value is a setting as found.
type Value struct {
	Key    string
	Value  string // as its flag takes it
	From   string // FromFile or FromEnv
	Origin string // "/home/me/.config/vramtop/config.toml:3", "VRAMTOP_WARN"
}

// Settings are the values found, by key; a key found nowhere is absent.
type Settings struct {
	File   string // the file read ("" when there was none)
	Values map[string]Value
}

// Get is the value of key, if the file or the environment set it.
func (s Settings) Get(key string) (Value, bool) {
	v, ok := s.Values[key]
	return v, ok
}

// Path is where the file is looked for: $VRAMTOP_CONFIG, else
// $XDG_CONFIG_HOME/vramtop/config.toml, else ~/.config/vramtop/config.toml.
// explicit is true for $VRAMTOP_CONFIG, which must exist.
func Path(getenv func(string) string) (path string, explicit bool) {
	if p := getenv("VRAMTOP_CONFIG"); p != "" {
		return p, true
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if home == "" {
			return "", false
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "vramtop", "config.toml"), false
}

// Load reads the file (a missing one is no error unless $VRAMTOP_CONFIG
// names it) and the environment. A bad value is an error of one line that
// names the file and line, or the variable, and the key.
func Load(getenv func(string) string) (Settings, error) {
	s := Settings{Values: map[string]Value{}}
	path, explicit := Path(getenv)
	if path != "" {
		data, err := readFile(path)
		switch {
		case err == nil:
			s.File = path
			if err := s.parseFile(path, data); err != nil {
				return Settings{}, err
			}
		case explicit || !errors.Is(err, os.ErrNotExist):
			return Settings{}, fmt.Errorf("config: %v", err)
		}
	}
	for _, k := range Keys() {
		v := inert.String(getenv(k.Env))
		if k.Name == "color" && v == "" && getenv("NO_COLOR") != "" {
			s.Values[k.Name] = Value{Key: k.Name, Value: "never", From: FromEnv, Origin: "NO_COLOR"}
			continue
		}
		if v == "" {
			continue
		}
		if err := k.check(v); err != nil {
			return Settings{}, fmt.Errorf("%s=%s: %v", k.Env, v, err)
		}
		s.Values[k.Name] = Value{Key: k.Name, Value: v, From: FromEnv, Origin: k.Env}
	}
	return s, nil
}

// MaxFileSize is the largest config file read; a larger one is refused.
const MaxFileSize = 1 << 20

// readFile reads the config file at path: a regular file of at most
// MaxFileSize bytes. Anything else (a FIFO, which would block every command
// until someone writes to it; /dev/zero, which never ends) is refused
// before reading, and, opened without blocking, checked again on the file
// opened.
func readFile(path string) ([]byte, error) {
	check := func(st os.FileInfo) error {
		switch {
		case !st.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file; name a file", path)
		case st.Size() > MaxFileSize:
			return fmt.Errorf("%s is larger than 1 MiB; a config file is a few lines", path)
		}
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than 1 MiB; a config file is a few lines", path)
	}
	return data, nil
}

func (s *Settings) parseFile(path string, data []byte) error {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return fmt.Errorf("%s:%d: %s", path, row, oneLine(de.Error()))
		}
		return fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	// The first bad key in the file is the one reported.
	names := slices.SortedFunc(maps.Keys(doc), func(a, b string) int {
		return cmp.Compare(keyLine(data, a), keyLine(data, b))
	})
	for _, name := range names {
		raw := doc[name]
		at := fmt.Sprintf("%s:%d", path, keyLine(data, name))
		k, ok := KeyNamed(name)
		if !ok {
			return fmt.Errorf("%s: unknown key %q (known: %s)", at, name, keyNames())
		}
		v, err := flagText(raw)
		if err == nil {
			err = k.check(v)
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %v", at, name, err)
		}
		s.Values[name] = Value{Key: name, Value: inert.String(v), From: FromFile, Origin: at}
	}
	return nil
}

// flagText is a TOML value as its flag would take it.
func flagText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("want a string, a number or true/false, got %T", v)
}

// keyLine is the line of data where key is set (1 for a key not found at
// the start of a line, such as a [table]).
func keyLine(data []byte, key string) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSpace(l)
		for _, k := range []string{key, `"` + key + `"`, "'" + key + "'"} {
			if rest, ok := bytes.CutPrefix(l, []byte(k)); ok && bytes.HasPrefix(bytes.TrimSpace(rest), []byte("=")) {
				return i + 1
			}
		}
	}
	return 1
}

// oneLine is the first line of a TOML error, made inert: it may quote the
// file.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = inert.String(s)
	return strings.TrimPrefix(s, "toml: ")
}

func keyNames() string {
	var names []string
	for _, k := range Keys() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

func checkPercent(s string) error {
	v, err := units.ParsePercent(s)
	if err != nil || !(v > 0 && v <= 100) {
		return fmt.Errorf("want a percentage above 0 and at most 100 (as 80 or \"80%%\"), got %q", s)
	}
	return nil
}

func checkDuration(s string) error {
	d, err := units.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a duration such as \"500ms\", \"2s\", \"1h\" or \"7d\", got %q", s)
	}
	return nil
}

func checkBool(s string) error {
	if _, err := strconv.ParseBool(s); err != nil {
		return fmt.Errorf("want true or false, got %q", s)
	}
	return nil
}

func checkColor(s string) error {
	switch s {
	case "auto", "always", "never":
		return nil
	}
	return fmt.Errorf("want auto, always or never, got %q", s)
}

func checkListen(s string) error {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("want host:port or :port, got %q", s)
	}
	return nil
}

// Documented is a config file that sets every key to its value in
// defaults (as its flag takes it), commented out, each with what it means.
func Documented(defaults map[string]string) string {
	var b strings.Builder
	b.WriteString("# vramtop's settings: $XDG_CONFIG_HOME/vramtop/config.toml (~/.config/vramtop/config.toml),\n")
	b.WriteString("# or the file $VRAMTOP_CONFIG names. Each key has an environment variable that wins over\n")
	b.WriteString("# the file, and a flag of the same name that wins over both. `vramtop config` prints the\n")
	b.WriteString("# values in effect and where each came from.\n")
	for _, k := range Keys() {
		fmt.Fprintf(&b, "\n# %s (%s)\n# %s = %s\n", k.Doc, k.Env, k.Name, tomlValue(defaults[k.Name]))
	}
	return b.String()
}

// tomlValue writes a flag's text as a TOML value: a number or a boolean
// as it is, anything else as a string.
func tomlValue(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	if _, err := strconv.ParseBool(v); err == nil {
		return v
	}
	return strconv.Quote(v)
}
