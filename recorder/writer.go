package recorder

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/units"
)

// DefaultKeep is how many rotated parts (FILE.1 … FILE.N) are kept.
const DefaultKeep = 5

// DefaultFlushEvery is how often buffered lines reach the file: a process
// killed outright loses at most this much.
const DefaultFlushEvery = time.Second

// Options configure a Writer.
type Options struct {
	// Path is the recording; gzip compressed when it ends in ".gz".
	Path string
	// MaxSize rotates the recording when it reaches this many bytes (on
	// disk, compressed): FILE becomes FILE.1, FILE.1 becomes FILE.2, …
	// 0: never.
	MaxSize int64
	// Keep is how many rotated parts to keep; DefaultKeep when 0.
	Keep int
	// Interval and History are the sampler's configuration, for the header.
	Interval, History time.Duration
	// ProcessInterval is the sampler's process-list floor when it is not
	// sampler.MinProcessInterval (vramtop run), for the header.
	ProcessInterval time.Duration
	// Program names the writer in the header ("vramtop 1.2.3").
	Program string
	// FlushEvery bounds how long a line stays buffered (with lines coming
	// every Interval); DefaultFlushEvery when 0.
	FlushEvery time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Stdout is where Path "-" writes; os.Stdout when nil.
	Stdout io.Writer
}

// toStdout reports whether the recording goes to standard output.
func (o *Options) toStdout() bool { return o.Path == "-" }

// Writer appends Snapshots to a recording. It is not safe for concurrent
// use.
type Writer struct {
	opts Options
	gz   bool
	enc  *Encoder

	f    *os.File
	size int64 // bytes in the file, flushed or counted
	cw   *countWriter
	zw   *gzip.Writer
	bw   *bufio.Writer
	line bytes.Buffer
	rec  []byte
	// member counts the bytes written to the current gzip member.
	member int
	hdr    Header
	hasH   bool
	dirty  bool
	flush  time.Time
	err    error
	// created: this writer made the file; wrote: it wrote a line to it.
	created, wrote bool
	// open: a file (or standard output) is being written.
	open bool
}

// Open opens (creating or appending to) the recording at opts.Path. A file
// that exists but is not a recording of the same kind (plain or gzip) is
// refused, never overwritten.
func Open(opts Options) (*Writer, error) {
	if opts.Path == "" {
		return nil, errors.New("no recording file named")
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxSize < 0 {
		return nil, fmt.Errorf("maximum size %d is negative", opts.MaxSize)
	}
	if opts.toStdout() && opts.MaxSize > 0 {
		return nil, errors.New("a recording to standard output cannot rotate (no --max-size with -o -)")
	}
	w := &Writer{opts: opts, gz: strings.HasSuffix(opts.Path, ".gz")}
	w.enc = NewEncoder(opts.History, opts.Interval, opts.Program)
	w.enc.processInterval = opts.ProcessInterval
	if err := w.openFile(); err != nil {
		return nil, err
	}
	w.created = w.size == 0
	return w, nil
}

// Path returns the recording's file name.
func (w *Writer) Path() string { return w.opts.Path }

func (w *Writer) openFile() error {
	path := w.opts.Path
	if w.opts.toStdout() {
		out := w.opts.Stdout
		if out == nil {
			out = os.Stdout
		}
		w.open = true
		w.cw = &countWriter{w: out, n: &w.size}
		w.bw = bufio.NewWriterSize(w.cw, 64<<10)
		w.flush = w.opts.Now()
		return nil
	}
	if err := checkExisting(path, w.gz); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s is not a regular file", path)
	}
	w.f, w.size, w.open = f, st.Size(), true
	w.cw = &countWriter{w: f, n: &w.size}
	var out io.Writer = w.cw
	if w.gz {
		// A new gzip member: appended to an existing file, gzip readers
		// read the members one after the other.
		w.zw, _ = gzip.NewWriterLevel(w.cw, gzip.DefaultCompression)
		out = w.zw
	} else if st.Size() > 0 {
		// A line cut short by a crash stays a line of its own.
		if endsWithoutNewline(path, st.Size()) {
			if _, err := w.cw.Write([]byte{'\n'}); err != nil {
				f.Close()
				return err
			}
		}
	}
	w.bw = bufio.NewWriterSize(out, 64<<10)
	w.hasH, w.member = false, 0
	w.flush = w.opts.Now()
	return nil
}

// checkExisting refuses a non-empty file that is not a recording of the
// kind the name asks for.
func checkExisting(path string, gz bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if n == 0 {
		return nil
	}
	isGz := n >= 2 && head[0] == 0x1f && head[1] == 0x8b
	switch {
	case gz && !isGz:
		return fmt.Errorf("%s exists and is not a gzip-compressed recording; not appending to it", path)
	case !gz && isGz:
		return fmt.Errorf("%s exists and is gzip-compressed; name it with .gz to append to it", path)
	case !gz && !bytes.HasPrefix(head, []byte(`{"format":"`+Format+`"`)):
		return fmt.Errorf("%s exists and is not a vramtop recording; not appending to it", path)
	}
	return nil
}

func endsWithoutNewline(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return false
	}
	return b[0] != '\n'
}

// Write appends snap (after a header line where one is due). Lines reach
// the file at least every FlushEvery.
func (w *Writer) Write(snap sampler.Snapshot) error {
	if w.err != nil {
		return w.err
	}
	if w.opts.MaxSize > 0 && w.size >= w.opts.MaxSize && w.dirtyOrWritten() {
		if err := w.rotate(); err != nil {
			w.err = err
			return err
		}
	}
	h := w.enc.Header(snap, w.opts.Now())
	newHeader := !w.hasH || !SameHeader(h, w.hdr)
	if newHeader {
		w.enc.ForceKey()
	}
	line, key, err := w.enc.AppendLine(w.rec[:0], snap)
	if err != nil {
		return err
	}
	w.rec = line
	if key && w.zw != nil && w.member > 0 {
		// Each keyframe starts a gzip member of its own, where a reader
		// can start decompressing.
		err := w.bw.Flush()
		if err == nil {
			err = w.zw.Close()
		}
		if err != nil {
			w.err = fmt.Errorf("writing %s: %w", w.opts.Path, err)
			return w.err
		}
		w.zw.Reset(w.cw)
		w.member = 0
	}
	if newHeader {
		if err := w.writeLine(h); err != nil {
			return err
		}
		w.hdr, w.hasH = h, true
	}
	if err := w.writeBytes(line); err != nil {
		return err
	}
	// Flush now if waiting for the next line would leave this one
	// buffered past FlushEvery.
	if now := w.opts.Now(); now.Sub(w.flush)+w.opts.Interval >= w.opts.FlushEvery {
		return w.Flush()
	}
	return nil
}

// dirtyOrWritten reports whether the current part holds anything of this
// writer's: a part is never rotated away before it got a line.
func (w *Writer) dirtyOrWritten() bool { return w.hasH }

func (w *Writer) writeLine(v any) error {
	w.line.Reset()
	enc := json.NewEncoder(&w.line)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding a line of the recording: %w", err)
	}
	return w.writeBytes(w.line.Bytes())
}

func (w *Writer) writeBytes(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.opts.Path, err)
		return w.err
	}
	w.member += len(b)
	w.dirty, w.wrote = true, true
	return nil
}

// Flush writes the buffered lines to the file. With gzip, what is flushed
// is a complete deflate block: a reader of the file as it stands reads
// every line flushed so far.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.flush = w.opts.Now()
	if !w.dirty {
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.opts.Path, err)
		return w.err
	}
	if w.zw != nil {
		if err := w.zw.Flush(); err != nil {
			w.err = fmt.Errorf("writing %s: %w", w.opts.Path, err)
			return w.err
		}
	}
	w.dirty = false
	return nil
}

// Close flushes, ends the gzip stream and closes the file.
func (w *Writer) Close() error {
	if !w.open {
		return w.err
	}
	err := w.closeFile()
	if w.created && !w.wrote && !w.opts.toStdout() {
		// Nothing recorded (the job did not start): leave no empty file.
		os.Remove(w.opts.Path)
	}
	if w.err != nil {
		return w.err
	}
	return err
}

func (w *Writer) closeFile() error {
	err := w.bw.Flush()
	if w.zw != nil {
		if e := w.zw.Close(); err == nil {
			err = e
		}
	}
	if w.f != nil {
		if e := w.f.Sync(); err == nil && e != nil && !errors.Is(e, os.ErrInvalid) {
			err = e
		}
		if e := w.f.Close(); err == nil {
			err = e
		}
	}
	w.f, w.open = nil, false
	w.dirty = false
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.opts.Path, err)
	}
	return nil
}

// rotate closes the current part and shifts the parts: FILE.keep is
// dropped, FILE.i becomes FILE.i+1, FILE becomes FILE.1; then a new FILE
// starts.
func (w *Writer) rotate() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	p, k := w.opts.Path, w.opts.Keep
	if err := os.Remove(fmt.Sprintf("%s.%d", p, k)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotating %s: %w", p, err)
	}
	for i := k - 1; i >= 1; i-- {
		err := os.Rename(fmt.Sprintf("%s.%d", p, i), fmt.Sprintf("%s.%d", p, i+1))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotating %s: %w", p, err)
		}
	}
	if err := os.Rename(p, p+".1"); err != nil {
		return fmt.Errorf("rotating %s: %w", p, err)
	}
	return w.openFile()
}

type countWriter struct {
	w io.Writer
	n *int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	*c.n += int64(n)
	return n, err
}

// ParseSize reads a size as units.ParseSize does: "512", "100MB" or "100M"
// (100·10⁶ bytes), "64MiB" (64·2²⁰), "1.5GiB".
func ParseSize(s string) (int64, error) {
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n > 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(n), nil
}
