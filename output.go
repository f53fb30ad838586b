package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// writeOutput writes a command's result to stdout through write and
// reports whether all of it got there. When it did not (a full disk, a
// closed file: >/dev/full), it says so on stderr in one line after name,
// and the command exits non-zero: a caller's $(vramtop pick) must not take
// an empty answer for a result.
func writeOutput(stdout, stderr io.Writer, name string, write func(w io.Writer) error) bool {
	ew := &errWriter{w: stdout}
	err := write(ew)
	if ew.err != nil {
		err = ew.err
	}
	if err == nil {
		return true
	}
	fmt.Fprintf(stderr, "%s: cannot write the output: %s\n", name, writeErrText(err))
	return false
}

// writeErrText is a write error without the path Go puts before it
// ("write /dev/stdout: no space left on device").
func writeErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// errWriter keeps the first error of the writes through it, and fails
// every write after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	e.err = err
	return n, err
}
