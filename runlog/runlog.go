// Package runlog keeps what `vramtop run` (and `wait`/`pick -- CMD`)
// learned about each job: one JSON line per run in
// $XDG_STATE_HOME/vramtop/runs.jsonl, the newest last, so that a later
// `vramtop wait --like CMD` can size its --min-free by the peak of the
// most similar earlier command.
//
// The file is bounded: when it passes MaxBytes it is rewritten with the
// newest runs that fit in half of that; a line longer than MaxLine is not
// written (its command is shortened first), and lines longer than that or
// not well formed are skipped when read.
package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MaxBytes is the most the file grows to before it is compacted.
const MaxBytes = 1 << 20

// MaxLine is the longest line written or read.
const MaxLine = 8 << 10

// Entry is one run.
type Entry struct {
	Command []string `json:"command"`
	// Dir is the working directory it ran in.
	Dir             string    `json:"dir,omitempty"`
	Start           time.Time `json:"start"`
	DurationSeconds float64   `json:"duration_seconds"`
	ExitCode        int       `json:"exit_code"`
	// PeakBytes is the job's highest memory on all GPUs together,
	// GPUPeakBytes its highest on any one GPU, GPUs how many it used.
	PeakBytes    uint64 `json:"peak_bytes"`
	GPUPeakBytes uint64 `json:"gpu_peak_bytes"`
	GPUs         int    `json:"gpus"`
	// Demo marks a run on the built-in demo GPUs.
	Demo bool `json:"demo,omitempty"`
}

// Path is the file: $XDG_STATE_HOME/vramtop/runs.jsonl, or
// ~/.local/state/vramtop/runs.jsonl.
func Path() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no home directory for the run history ($XDG_STATE_HOME is not set)")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "vramtop", "runs.jsonl"), nil
}

// Append adds e to the file at path, compacting it when it has grown past
// MaxBytes.
func Append(path string, e Entry) error {
	line, err := encode(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	unlock := lock(path + ".lock")
	defer unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	fi, serr := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || serr != nil || fi.Size() <= MaxBytes {
		return err
	}
	return compact(path)
}

// encode is e as one line, its command shortened to fit MaxLine.
func encode(e Entry) ([]byte, error) {
	for {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		if len(b) < MaxLine {
			return append(b, '\n'), nil
		}
		if len(e.Command) == 0 || len(e.Dir) > MaxLine/2 {
			return nil, errors.New("the run is too long to keep")
		}
		e.Command = e.Command[:len(e.Command)/2]
	}
}

// compact rewrites path with the newest lines that fit in MaxBytes/2.
func compact(path string) error {
	b, err := readTail(path, MaxBytes*2)
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	size, from := 0, len(lines)
	for from > 0 && size+len(lines[from-1]) <= MaxBytes/2 {
		from--
		size += len(lines[from])
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".runs-*.jsonl")
	if err != nil {
		return err
	}
	for _, l := range lines[from:] {
		if len(l) > 0 && l[len(l)-1] == '\n' {
			tmp.Write(l)
		}
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readTail reads at most the last n bytes of path, from a line's start.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, n))
	if err != nil {
		return nil, err
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b, nil
}

// Read returns the runs in path, oldest first; a missing file has none.
// Lines that are not runs are skipped and counted in skipped.
func Read(path string) (runs []Entry, skipped int, err error) {
	b, err := readTail(path, MaxBytes*2)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || len(e.Command) == 0 {
			skipped++
			continue
		}
		runs = append(runs, e)
	}
	if sc.Err() != nil {
		skipped++ // a line over MaxLine ends the read
	}
	return runs, skipped, nil
}

// Like returns the run of runs most like the command line cmd, and how
// alike they are (0 to 1): the same command line is 1; otherwise the share
// of words the two have in common, the program and its first argument
// counting double. The newest wins a tie; ok is false when none shares at
// least half. Only runs with demo as given and with GPU memory count.
func Like(runs []Entry, cmd string, demo bool) (best Entry, score float64, ok bool) {
	want := words(Split(cmd))
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if r.Demo != demo || r.GPUPeakBytes == 0 {
			continue
		}
		if s := similarity(want, words(r.Command)); s > score {
			best, score = r, s
		}
	}
	return best, score, score >= 0.5
}

// Last returns the newest run with GPU memory (demo as given).
func Last(runs []Entry, demo bool) (Entry, bool) {
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Demo == demo && runs[i].GPUPeakBytes > 0 {
			return runs[i], true
		}
	}
	return Entry{}, false
}

// words are a command's words, the program by its base name
// (/usr/bin/python3 is python3).
func words(argv []string) []string {
	out := make([]string, 0, len(argv))
	for i, a := range argv {
		if i == 0 {
			a = filepath.Base(a)
		}
		out = append(out, a)
	}
	return out
}

func similarity(a, b []string) float64 {
	if strings.Join(a, "\x00") == strings.Join(b, "\x00") {
		return 1
	}
	weight := func(ws []string) map[string]float64 {
		m := map[string]float64{}
		for i, w := range ws {
			v := 1.0
			if i < 2 {
				v = 2
			}
			m[w] = max(m[w], v)
		}
		return m
	}
	wa, wb := weight(a), weight(b)
	var common, all float64
	for w, v := range wa {
		if u, ok := wb[w]; ok {
			common += min(u, v)
			all += max(u, v)
		} else {
			all += v
		}
	}
	for w, v := range wb {
		if _, ok := wa[w]; !ok {
			all += v
		}
	}
	if all == 0 {
		return 0
	}
	// Never 1 unless the same: a perfect match of the words in another
	// order scores just below it.
	return min(common/all, 0.999)
}

// Describe is the run in a few words, its command quoted as for a shell:
// "`python train.py --name 'a b'` at 2026-12-01 23:40 (exit 0)".
func (e Entry) Describe() string {
	ws := make([]string, len(e.Command))
	for i, w := range e.Command {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		ws[i] = w
	}
	return fmt.Sprintf("`%s` at %s (exit %d)", strings.Join(ws, " "), e.Start.Local().Format("2006-01-02 15:04"), e.ExitCode)
}

// Split splits a command line into words as a shell would for quotes:
// 'single' and "double" quoted parts, and backslash escapes outside
// single quotes. An unclosed quote runs to the end.
func Split(s string) []string {
	var out []string
	var w strings.Builder
	in := false // inside a word
	var quote rune
	esc := false
	for _, r := range s {
		switch {
		case esc:
			w.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, in = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}
