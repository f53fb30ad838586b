package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/pflag"
	"io"
	"os"
	"slices"
	"syscall"

	"github.com/vramtop/vramtop/advisor"
)

// explainStdin is where `vramtop explain` reads a log from when no file is named.
var explainStdin io.Reader = os.Stdin

// explainMaxLog bounds how much of a log explain reads: the last explainMaxLog bytes of
// a file or of standard input.
var explainMaxLog int64 = 256 << 20

type explainResult struct {
	e   advisor.Explanation
	cut bool // the input was longer than explainMaxLog: its tail was read
	err error
}

// readLogTail reads in to its end and returns its last limit bytes, from
// the start of a line when it was cut. It holds one buffer: a ring of at
// most limit bytes (smaller for a file of known size), whose pages are
// touched only as they fill.
func readLogTail(in io.Reader, limit int64) (data []byte, cut bool, err error) {
	size := limit
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
				size = min(limit, st.Size()-pos+1<<20) // room for a log still growing
			}
		}
	}
	buf := make([]byte, max(size, 1))
	w, wrapped := 0, false
	for {
		if w == len(buf) {
			w, wrapped = 0, true
		}
		n, err := in.Read(buf[w:min(len(buf), w+1<<20)])
		w += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	if !wrapped {
		return buf[:w], false, nil
	}
	// buf[w:] then buf[:w], rotated in place; then drop the partial line.
	slices.Reverse(buf[:w])
	slices.Reverse(buf[w:])
	slices.Reverse(buf)
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	return buf, true, nil
}

// openInterruptible opens name for reading, giving up when ctx ends (ok
// false): opening a FIFO waits in the kernel for a writer, which a signal
// does not end. A FIFO that gets a writer opens as ever.
func openInterruptible(ctx context.Context, name string) (f *os.File, ok bool, err error) {
	type opened struct {
		f   *os.File
		err error
	}
	c := make(chan opened, 1)
	go func() {
		f, err := os.Open(name)
		c <- opened{f, err}
	}()
	select {
	case o := <-c:
		return o.f, true, o.err
	case <-ctx.Done():
		// The open may still succeed: its file is closed then.
		go func() {
			if o := <-c; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, false, nil
	}
}

// explainInterrupted is the exit status when SIGINT (130) or SIGTERM (143)
// ended the command; main cancels ctx with the signal as its cause.
func explainInterrupted(ctx context.Context, stderr io.Writer) int {
	fmt.Fprintln(stderr, "vramtop explain: interrupted")
	if code, ok := signalStatus(ctx); ok {
		return code
	}
	return 128 + int(syscall.SIGINT)
}

// explainFlags are vramtop explain's flags.
type explainFlags struct {
	asJSON *bool
	all    *bool
	live   *bool
	sf     sourceFlags
}

// explainFlagSet declares vramtop explain's flags.
func explainFlagSet() (*pflag.FlagSet, *explainFlags) {
	fs := newFlagSet("vramtop explain", "Usage: vramtop explain [FILE|-] [--json] [--all] [--live] [--demo]\n\n"+
		"Finds the last out-of-memory message in a log (PyTorch, TensorFlow, JAX, vLLM, MPS, CUDA, cuBLAS/cuDNN,\n"+
		"llama.cpp, ONNX Runtime, TensorRT, TGI, DeepSpeed, Triton, MXNet; host RAM running out), says what ran\n"+
		"out, where the memory went and what to try. Reads stdin when FILE is absent or \"-\"; of a log longer\n"+
		"than 256 MiB, its end.\n"+
		"Exit status: 0 found, 1 none found, 2 unreadable input or bad flags, 130/143 on SIGINT/SIGTERM.\n\n")
	fl := &explainFlags{}
	fl.asJSON = fs.Bool("json", false, "print one JSON object (schema: docs/schema/explain.schema.json)")
	fl.all = fs.Bool("all", false, "list every remedy in the text (without it, the first six)")
	fl.live = fs.Bool("live", false, "add what the GPUs hold now and the freest one")
	fl.sf.addDemo(fs)
	return fs, fl
}

func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, fl := explainFlagSet()
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
	seeked := false // reading a big file's tail, said on stderr
	if name != "-" {
		f, ok, err := openInterruptible(ctx, name)
		if !ok {
			return explainInterrupted(ctx, stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "vramtop explain: cannot read %s: %v\n", name, explainPathError(err))
			return exitUsage
		}
		defer f.Close()
		in = f
		// The crash is at the end of a log: read the last explainMaxLog bytes of a big one.
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > explainMaxLog {
			if _, err := f.Seek(st.Size()-explainMaxLog, io.SeekStart); err == nil {
				seeked = true
				fmt.Fprintf(stderr, "vramtop explain: %s is larger than %s; reading its last %s (line numbers count from there)\n", name, advisor.FormatBytes(uint64(explainMaxLog)), advisor.FormatBytes(uint64(explainMaxLog)))
			}
		}
	}
	if f, ok := in.(*os.File); ok && name == "-" && term.IsTerminal(f.Fd()) {
		// A terminal: say what is awaited, as cat's users expect to know.
		fmt.Fprintln(stderr, "vramtop explain: reading the log from standard input: paste it, then press Ctrl-D on a line of its own (or name a file: vramtop explain train.log)")
	}
	// Read and search in the background: a read from a terminal or a pipe
	// that stays open blocks, and SIGINT/SIGTERM (ctx) must still end the
	// command.
	done := make(chan explainResult, 1)
	go func() {
		var r explainResult
		var data []byte
		data, r.cut, r.err = readLogTail(in, explainMaxLog)
		if r.err == nil {
			r.e = advisor.ExplainBytes(data)
		}
		done <- r
	}()
	var r explainResult
	select {
	case r = <-done:
	case <-ctx.Done():
		return explainInterrupted(ctx, stderr)
	}
	if r.err != nil {
		fmt.Fprintf(stderr, "vramtop explain: cannot read %s: %v\n", explainInputName(name), explainPathError(r.err))
		return exitUsage
	}
	if r.cut && !seeked {
		fmt.Fprintf(stderr, "vramtop explain: %s is longer than %s; read its last %s (line numbers count from there)\n",
			explainInputName(name), advisor.FormatBytes(uint64(explainMaxLog)), advisor.FormatBytes(uint64(explainMaxLog)))
	}
	e := r.e
	if *fl.live || fl.sf.demo == "on" { // --demo: live numbers from the demo GPUs
		// Without GPUs to read, newSampler has said why in one line; the
		// explanation still stands.
		if s, _ := fl.sf.newSampler(stderr); s != nil {
			snap := s.Once()
			s.Close()
			e = e.WithLive(snap)
		}
	}
	if !writeOutput(stdout, stderr, "vramtop explain", func(w io.Writer) error {
		if *fl.asJSON {
			return writeJSON(w, e)
		}
		_, err := io.WriteString(w, e.TextWith(advisor.TextOptions{Width: terminalWidth(stdout), All: *fl.all}))
		return err
	}) {
		return 1
	}
	if !e.Found {
		return 1
	}
	return 0
}

// terminalWidth is the width of the terminal w is, 0 when w is none.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return 0
	}
	cols, _, err := term.GetSize(f.Fd())
	if err != nil {
		return 0
	}
	return cols
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
