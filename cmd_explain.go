package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/vramtop/vramtop/advisor"
)

func init() {
	register("explain", "explain an out-of-memory crash from its log (FILE or stdin)", runExplain)
}

// explainStdin is where `vramtop explain` reads a log from when no file is named.
var explainStdin io.Reader = os.Stdin

// explainMaxLog bounds how much of a log explain reads: the last explainMaxLog bytes of
// a file.
var explainMaxLog int64 = 256 << 20

func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("vramtop explain", "Usage: vramtop explain [FILE|-] [--json] [--live] [--demo]\n\n"+
		"Finds the last out-of-memory message in a log (PyTorch, TensorFlow, JAX, vLLM, MPS, CUDA, cuBLAS,\n"+
		"llama.cpp, ONNX Runtime, TensorRT, TGI), says where the memory went and what to try.\nReads stdin when FILE is absent or \"-\".\n"+
		"Exit status: 0 found, 1 none found, 2 unreadable input or bad flags.\n\n", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	live := fs.Bool("live", false, "add what the GPUs hold now and the freest one")
	var sf sourceFlags
	sf.add(fs)
	// Flags may come after the file name.
	var files []string
	rest := args
	for {
		if code, ok := parse(fs, rest, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) > 1 {
		fmt.Fprintf(stderr, "vramtop explain: one log at a time (got %d: %q, %q ...)\n", len(files), files[0], files[1])
		return exitUsage
	}
	name := "-"
	if len(files) == 1 {
		name = files[0]
	}
	var in io.Reader = explainStdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "vramtop explain: cannot read %s: %v\n", name, explainPathError(err))
			return exitUsage
		}
		defer f.Close()
		in = f
		// The crash is at the end of a log: read the last explainMaxLog bytes of a big one.
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > explainMaxLog {
			if _, err := f.Seek(st.Size()-explainMaxLog, io.SeekStart); err == nil {
				fmt.Fprintf(stderr, "vramtop explain: %s is larger than %s; reading its last %s (line numbers count from there)\n", name, advisor.FormatBytes(uint64(explainMaxLog)), advisor.FormatBytes(uint64(explainMaxLog)))
			}
		}
	}
	data, err := io.ReadAll(io.LimitReader(in, explainMaxLog))
	if err != nil {
		fmt.Fprintf(stderr, "vramtop explain: cannot read %s: %v\n", explainInputName(name), explainPathError(err))
		return exitUsage
	}
	e := advisor.Explain(string(data))
	if *live || sf.demo == "on" { // --demo: live numbers from the demo GPUs
		// Without GPUs to read, newSampler has said why in one line; the
		// explanation still stands.
		if s, _ := sf.newSampler(stderr); s != nil {
			snap := s.Once()
			s.Close()
			e = e.WithLive(snap)
		}
	}
	if *asJSON {
		err = writeJSON(stdout, e)
	} else {
		_, err = io.WriteString(stdout, e.Text())
	}
	if err != nil {
		fmt.Fprintf(stderr, "vramtop explain: %v\n", err)
		return 1
	}
	if !e.Found {
		return 1
	}
	return 0
}

func explainInputName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// explainPathError drops the "open NAME:" part the message already names.
func explainPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
