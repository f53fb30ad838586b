package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeConfig(t *testing.T, text string) (home string) {
	t.Helper()
	home = t.TempDir()
	dir := filepath.Join(home, "vramtop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestFileThenEnvironment(t *testing.T) {
	xdg := writeConfig(t, "# mine\nwarn = 70\ncrit = 85.5\n\ninterval = \"2s\"\nbell = true\n")
	s, err := Load(env(map[string]string{"XDG_CONFIG_HOME": xdg, "VRAMTOP_CRIT": "95", "VRAMTOP_LISTEN": ":9500"}))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(xdg, "vramtop", "config.toml")
	want := map[string]Value{
		"warn":     {"warn", "70", FromFile, file + ":2"},
		"crit":     {"crit", "95", FromEnv, "VRAMTOP_CRIT"},
		"interval": {"interval", "2s", FromFile, file + ":5"},
		"bell":     {"bell", "true", FromFile, file + ":6"},
		"listen":   {"listen", ":9500", FromEnv, "VRAMTOP_LISTEN"},
	}
	for k, w := range want {
		if got, ok := s.Get(k); !ok || got != w {
			t.Errorf("%s = %+v, want %+v", k, got, w)
		}
	}
	if len(s.Values) != len(want) {
		t.Errorf("values %v: want only %d", s.Values, len(want))
	}
	if s.File != file {
		t.Errorf("file %q, want %q", s.File, file)
	}
}

func TestNoFileIsNoError(t *testing.T) {
	s, err := Load(env(map[string]string{"HOME": t.TempDir()}))
	if err != nil || s.File != "" || len(s.Values) != 0 {
		t.Errorf("got %+v, %v", s, err)
	}
	if _, err := Load(env(map[string]string{"VRAMTOP_CONFIG": filepath.Join(t.TempDir(), "none.toml")})); err == nil {
		t.Error("a missing file named by VRAMTOP_CONFIG must be an error")
	}
}

func TestPath(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/home/a"}, "/home/a/.config/vramtop/config.toml"},
		{map[string]string{"HOME": "/home/a", "XDG_CONFIG_HOME": "/x"}, "/x/vramtop/config.toml"},
		{map[string]string{"HOME": "/home/a", "XDG_CONFIG_HOME": "relative"}, "/home/a/.config/vramtop/config.toml"},
		{map[string]string{"HOME": "/home/a", "VRAMTOP_CONFIG": "/etc/v.toml"}, "/etc/v.toml"},
	} {
		if got, _ := Path(env(c.env)); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}

func TestNoColor(t *testing.T) {
	s, err := Load(env(map[string]string{"HOME": t.TempDir(), "NO_COLOR": "1"}))
	if v, _ := s.Get("color"); err != nil || v.Value != "never" || v.Origin != "NO_COLOR" {
		t.Errorf("NO_COLOR: %+v, %v", v, err)
	}
	s, _ = Load(env(map[string]string{"HOME": t.TempDir(), "NO_COLOR": "1", "VRAMTOP_COLOR": "always"}))
	if v, _ := s.Get("color"); v.Value != "always" {
		t.Errorf("VRAMTOP_COLOR must win over NO_COLOR: %+v", v)
	}
}

// A bad file is one line naming the file, the line and the key.
func TestBadFile(t *testing.T) {
	for _, c := range []struct {
		text string
		want string // after "FILE:"
	}{
		{"warn = 70\ncrit = 120\n", "2: crit: want a percentage"},
		{"\n\ninterval = \"fast\"\n", "3: interval: want a duration"},
		{"bell = \"loud\"\n", "1: bell: want true or false"},
		{"warn = 70\ncolour = \"never\"\n", `2: unknown key "colour"`},
		{"listen = 9400\n", "1: listen: want host:port"},
		{"warn = \n", "1: "},
		{"warn = 70\nwarn = 80\n", "2: "},
		{"[serve]\nlisten = \":1\"\n", `unknown key "serve"`},
		{"bell = 3\nwarn = 0\n", "1: bell: "},
	} {
		xdg := writeConfig(t, c.text)
		_, err := Load(env(map[string]string{"XDG_CONFIG_HOME": xdg}))
		file := filepath.Join(xdg, "vramtop", "config.toml")
		if err == nil {
			t.Errorf("%q: no error", c.text)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, file+":") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%q: error %q, want one line starting %q and holding %q", c.text, msg, file+":", c.want)
		}
	}
}

func TestBadEnvironment(t *testing.T) {
	_, err := Load(env(map[string]string{"HOME": t.TempDir(), "VRAMTOP_INTERVAL": "soon"}))
	if err == nil || !strings.HasPrefix(err.Error(), "VRAMTOP_INTERVAL=soon: want a duration") {
		t.Errorf("got %v", err)
	}
}

// The documented file is valid TOML once uncommented, and sets every key
// to the value given.
func TestDocumentedFileIsValid(t *testing.T) {
	defaults := map[string]string{"warn": "80", "crit": "90.5", "interval": "1s", "history": "1h0m0s", "bell": "false", "color": "auto", "listen": "127.0.0.1:9400"}
	var lines []string
	for _, l := range strings.Split(Documented(defaults), "\n") {
		if rest, ok := strings.CutPrefix(l, "# "); ok && strings.Contains(rest, " = ") {
			lines = append(lines, rest)
		}
	}
	xdg := writeConfig(t, strings.Join(lines, "\n"))
	s, err := Load(env(map[string]string{"XDG_CONFIG_HOME": xdg}))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Values) != len(Keys()) {
		t.Errorf("the documented file sets %d keys of %d:\n%s", len(s.Values), len(Keys()), Documented(defaults))
	}
	for k, want := range defaults {
		if v, _ := s.Get(k); v.Value != want {
			t.Errorf("%s = %q in the documented file, want %q", k, v.Value, want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		key, v string
		ok     bool
	}{
		{"warn", "85", true}, {"warn", "0", false}, {"crit", "101", false},
		{"interval", "250ms", true}, {"interval", "-1s", false},
		{"color", "never", true}, {"color", "blue", false},
		{"listen", ":9400", true}, {"listen", "9400", false},
		{"colour", "never", false},
	} {
		if err := Check(c.key, c.v); (err == nil) != c.ok {
			t.Errorf("Check(%q, %q) = %v, want ok %v", c.key, c.v, err, c.ok)
		}
	}
}

// A bad value from the environment is printed in the error: made inert as
// it is read.
func TestValuesAreInert(t *testing.T) {
	for k, v := range map[string]string{"VRAMTOP_LISTEN": "127.0.0.1:9400\x1b]2;x\a", "VRAMTOP_WARN": "8\x1b[2J0"} {
		env := map[string]string{"HOME": t.TempDir(), k: v}
		_, err := Load(func(k string) string { return env[k] })
		if err == nil || strings.ContainsAny(err.Error(), "\x1b\a") {
			t.Errorf("%s=%q: error %q, want one without the escape", k, v, err)
		}
	}
}
