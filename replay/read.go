// Package replay reads recordings written by the recorder and rebuilds the
// Snapshot of any recorded moment, history windows included, for `vramtop
// replay`: printed once as JSON, or played in the live view.
//
// Opening a recording is one streaming pass over its files that keeps an
// index of its lines (time, place in the file, keyframe), not the
// snapshots: a snapshot is rebuilt when asked for, from the lines of the
// history window before it. Memory grows with the length of a recording
// only by the index (48 bytes a line), up to maxEntries lines: past that
// the index is thinned to one line in every 2, 4, … (the others are never
// shown), so that no recording takes more than a fixed ceiling. The time to
// reach a moment grows with the history window, not with the length.
package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vramtop/vramtop/recorder"
)

// Stdin is the name that reads a recording from standard input.
const Stdin = "-"

// Times outside these bounds are damage (a zeroed or garbled time), never
// a moment of a recording.
var (
	minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

func saneTime(t time.Time) bool { return !t.Before(minTime) && t.Before(maxTime) }

func saneNano(n int64) bool { return n >= minTime.UnixNano() && n < maxTime.UnixNano() }

// Warning is a problem found while reading a recording: a line skipped, a
// compressed stream cut short.
type Warning struct {
	File string
	Line int // 0: about the file as a whole
	Msg  string
}

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Msg)
	}
	return fmt.Sprintf("%s: %s", w.File, w.Msg)
}

// entry indexes one snapshot line.
type entry struct {
	t    int64  // the line's time, Unix ns
	seq  uint64 // its sequence number
	off  int64  // where it starts: in the file, or in its gzip member's data
	n    uint32 // its length, newline excluded
	line int32  // its line number in the file
	mem  int32  // its gzip member (0 for a plain file)
	hdr  int32  // the header in force, an index into Recording.headers
	kf   int32  // its keyframe, an index into Recording.keys; -1: a whole record
	file uint16
	key  bool // a keyframe
}

// loc is where a keyframe line is.
type loc struct {
	file uint16
	mem  int32
	off  int64
	n    uint32
	line int32
}

// file is one recording file being read.
type file struct {
	name string
	f    *os.File
	gz   bool
	// members are the offsets of the gzip members that read.
	members []int64
}

// scanner reads the lines of one file into the index.
type scanner struct {
	r       *Recording
	f       *file
	fileIdx uint16
	warn    func(Warning)
	line    int
	// hdrP is the header in force (nil: none yet); hdr its place in the
	// index (-1: not in it, or in an index generation gone, gen).
	hdrP *recorder.Header
	hdr  int32
	// keyL is the file's current keyframe (haveKey), keyT its time; key
	// its place in the index, as hdr.
	keyL    loc
	haveKey bool
	key     int32
	keyT    int64
	gen     int
	// skipped is the file's last snapshot line if thinning left it out: it
	// is indexed at the end of the file, so that the recording ends where
	// it does.
	skipped *skippedLine
	partial []byte
	// tooLong: the line being read is past MaxLine; its bytes are dropped.
	tooLong bool
	// pstart is where the partial line started.
	pstart    int64
	sawHeader bool
	noHeader  bool // warned about snapshots before any header
	ctx       context.Context
	// onLine is called after each snapshot line indexed.
	onLine func()
	// emit, when set, takes each snapshot line instead of the index
	// (Stream); a non-nil stop ends the scan with that error.
	emit func(h *recorder.Header, line []byte, hd head, lineNo int)
	stop error
}

func (p *scanner) warnf(line int, format string, args ...any) {
	p.warn(Warning{File: p.f.name, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// readLines feeds the lines of r to the scanner; off is the offset of r's
// first byte, mem the gzip member. A last line without a newline stays in
// p.partial.
func (p *scanner) readLines(r io.Reader, mem int32) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var off int64
	for {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		if p.stop != nil {
			return p.stop
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			start := off
			off += int64(len(chunk))
			if len(p.partial) == 0 {
				p.pstart = start
			}
			if p.tooLong || len(p.partial)+len(chunk) > recorder.MaxLine+1 {
				// Keep counting lines, drop the bytes.
				p.partial = p.partial[:0]
				p.tooLong = true
				if chunk[len(chunk)-1] == '\n' {
					p.line++
					p.warnf(p.line, "line longer than %d MiB; skipped", recorder.MaxLine>>20)
					p.tooLong = false
				}
			} else if chunk[len(chunk)-1] == '\n' {
				p.line++
				if len(p.partial) > 0 {
					p.partial = append(p.partial, chunk...)
					p.parseLine(p.partial, p.pstart, mem)
					p.partial = p.partial[:0]
				} else {
					p.parseLine(chunk, start, mem)
				}
			} else {
				p.partial = append(p.partial, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// finish reports a last line that never got its newline: the recording
// was cut off while writing it.
func (p *scanner) finish() {
	if p.tooLong || len(bytes.TrimSpace(p.partial)) > 0 {
		p.tooLong = false
		p.warnf(p.line+1, "incomplete last line (the recording was cut off); skipped")
	}
	p.partial = p.partial[:0]
}

// head is what the index needs of a line; decoding only these fields
// checks that the line is JSON without building what it holds.
type head struct {
	Format string    `json:"format"`
	T      time.Time `json:"t"`
	Seq    uint64    `json:"seq"`
	Key    bool      `json:"key"`
	KF     *int64    `json:"kf"`
}

// readHead reads the head of a snapshot line as the recorder writes it,
// {"t":"RFC 3339","seq":N,"key":true or "kf":N, …, without decoding the
// rest; ok is false for a line that does not start so.
func readHead(b []byte) (h head, ok bool) {
	const pre = `{"t":"`
	if !bytes.HasPrefix(b, []byte(pre)) {
		return h, false
	}
	b = b[len(pre):]
	end := bytes.IndexByte(b, '"')
	if end < 0 {
		return h, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(b[:end]))
	if err != nil {
		return h, false
	}
	h.T, b = t, b[end+1:]
	num := func(name string) (int64, bool) {
		if !bytes.HasPrefix(b, []byte(`,"`+name+`":`)) {
			return 0, false
		}
		rest := b[len(name)+4:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		v, err := strconv.ParseInt(string(rest[:n]), 10, 64)
		if err != nil {
			return 0, false
		}
		b = rest[n:]
		return v, true
	}
	if v, ok := num("seq"); ok {
		h.Seq = uint64(v)
	}
	switch {
	case bytes.HasPrefix(b, []byte(`,"key":true`)):
		h.Key = true
	default:
		if v, ok := num("kf"); ok {
			h.KF = &v
		}
	}
	return h, true
}

func (p *scanner) parseLine(raw []byte, off int64, mem int32) {
	line := bytes.TrimRight(raw, " \t\r\n")
	lead := len(line)
	line = bytes.TrimLeft(line, " \t")
	lead -= len(line)
	if len(line) == 0 {
		return
	}
	if len(line) > recorder.MaxLine {
		p.warnf(p.line, "line longer than %d MiB; skipped", recorder.MaxLine>>20)
		return
	}
	if err := recorder.Limits(line); err != nil {
		p.warnf(p.line, "damaged line skipped: %v", err)
		return
	}
	if bytes.HasPrefix(line, []byte(`{"format"`)) {
		var h recorder.Header
		if err := json.Unmarshal(line, &h); err != nil {
			p.warnf(p.line, "damaged header line skipped: %v", shortErr(err))
			return
		}
		if h.Format != recorder.Format {
			p.warnf(p.line, "header of an unknown format %q skipped", h.Format)
			return
		}
		if h.Version > recorder.Version {
			p.warnf(p.line, "recording format version %d is newer than this vramtop reads (%d); reading what it knows", h.Version, recorder.Version)
		}
		inertHeader(&h)
		p.hdrP, p.hdr, p.sawHeader = &h, -1, true
		p.haveKey = false // a header starts the keyframes over
		return
	}
	hd, ok := readHead(line)
	if !ok {
		// Not as the recorder writes it: decode what the index needs.
		if err := json.Unmarshal(line, &hd); err != nil {
			p.warnf(p.line, "damaged line skipped: %v", shortErr(err))
			return
		}
	}
	switch {
	case hd.T.IsZero():
		p.warnf(p.line, "line without a time skipped")
		return
	case !saneTime(hd.T):
		p.warnf(p.line, "line with the time %s skipped (not a time of a recording)", hd.T.UTC().Format(time.RFC3339))
		return
	}
	p.r.setZone(hd.T.Location())
	if p.hdrP == nil {
		if !p.noHeader {
			p.warnf(p.line, "snapshot before any header line; device names unknown")
			p.noHeader = true
		}
		p.hdrP, p.hdr = &recorder.Header{Format: recorder.Format, Version: recorder.Version}, -1
	}
	e := entry{
		t: hd.T.UnixNano(), seq: hd.Seq, off: off + int64(lead), n: uint32(len(line)), line: int32(p.line),
		mem: mem, kf: -1, file: p.fileIdx, key: hd.Key,
	}
	var key *loc
	switch {
	case hd.Key:
		p.keyL, p.haveKey, p.key, p.keyT = loc{file: p.fileIdx, mem: mem, off: e.off, n: e.n, line: e.line}, true, -1, e.t
	case hd.KF != nil:
		if !p.haveKey || *hd.KF != p.keyT {
			p.warnf(p.line, "line skipped: its keyframe is missing or damaged")
			return
		}
		key = &p.keyL
	}
	if p.emit != nil {
		p.emit(p.hdrP, line, hd, p.line)
		return
	}
	p.add(e, p.hdrP, key, false)
	if p.onLine != nil {
		p.onLine()
	}
}

// maxEntries is the most lines the index holds (48 bytes each: 24 MiB). It
// is a variable for the tests.
var maxEntries = 1 << 19

// skippedLine is a snapshot line that thinning left out of the index, with
// the header and keyframe it needs.
type skippedLine struct {
	e   entry
	hdr *recorder.Header
	key loc
	kf  bool
}

// add indexes snapshot line e, under header h, a delta of (or itself) the
// keyframe key (nil: a whole record), unless the index is thinned and
// leaves it out (force: it is kept whatever). Headers and keyframes enter
// the index with the first line kept that needs them.
func (p *scanner) add(e entry, h *recorder.Header, key *loc, force bool) {
	r := p.r
	r.ixMu.Lock()
	if !force {
		ord := r.seen
		r.seen++
		if ord&(1<<r.shift-1) != 0 {
			p.skipped = &skippedLine{e: e, hdr: h, kf: key != nil}
			if key != nil {
				p.skipped.key = *key
			}
			r.ixMu.Unlock()
			return
		}
	}
	p.skipped = nil
	thinned := false
	if len(r.ix.lines) >= maxEntries {
		// Thinning rewrites the lines in place: not while a snapshot is
		// rebuilt from them (mu is taken before ixMu).
		r.ixMu.Unlock()
		r.mu.Lock()
		r.ixMu.Lock()
		r.thinLocked()
		r.mu.Unlock()
		thinned = r.shift == 1
	}
	if p.gen != r.ix.gen {
		p.hdr, p.key, p.gen = -1, -1, r.ix.gen
	}
	x := &r.ix
	if p.hdr < 0 || x.headers[p.hdr] != h {
		x.headers = append(x.headers, h)
		p.hdr = int32(len(x.headers) - 1)
	}
	e.hdr = p.hdr
	if key != nil {
		if p.key < 0 || x.keys[p.key] != *key {
			x.keys = append(x.keys, *key)
			p.key = int32(len(x.keys) - 1)
		}
		e.kf = p.key
	}
	if len(x.lines) == cap(x.lines) {
		// Grown by hand, so that it never holds room past maxEntries.
		n := min(max(2*cap(x.lines), 1024), maxEntries)
		x.lines = append(make([]entry, 0, max(n, len(x.lines)+1)), x.lines...)
	}
	x.lines = append(x.lines, e)
	r.ixMu.Unlock()
	if thinned {
		p.warn(Warning{File: p.f.name, Msg: fmt.Sprintf("more than %d snapshots: the index keeps one in every 2 (in every 4, 8, … as the recording goes on), so that memory stays bounded; steps and --at land on the snapshots kept", maxEntries)})
	}
}

// flushSkipped indexes the file's last line if thinning left it out.
func (p *scanner) flushSkipped() {
	if s := p.skipped; s != nil {
		var key *loc
		if s.kf {
			key = &s.key
		}
		p.add(s.e, s.hdr, key, true)
	}
}

// thinLocked halves the index in place, keeping every other line and the
// headers and keyframes these need. The caller holds mu and ixMu.
func (r *Recording) thinLocked() {
	x := &r.ix
	var headers []*recorder.Header
	var keys []loc
	hmap, kmap := map[int32]int32{}, map[int32]int32{}
	n := 0
	for i := 0; i < len(x.lines); i += 2 {
		e := x.lines[i]
		h, ok := hmap[e.hdr]
		if !ok {
			headers = append(headers, x.headers[e.hdr])
			h = int32(len(headers) - 1)
			hmap[e.hdr] = h
		}
		e.hdr = h
		if e.kf >= 0 {
			k, ok := kmap[e.kf]
			if !ok {
				keys = append(keys, x.keys[e.kf])
				k = int32(len(keys) - 1)
				kmap[e.kf] = k
			}
			e.kf = k
		}
		x.lines[n] = e
		n++
	}
	clear(x.lines[n:])
	x.lines, x.headers, x.keys = x.lines[:n], headers, keys
	x.gen++
	r.cur = nil
	r.shift++
}

func (r *Recording) setZone(z *time.Location) {
	r.ixMu.Lock()
	if r.ix.zone == nil {
		r.ix.zone = z
	}
	r.ixMu.Unlock()
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// countReader counts the bytes read through it: where a gzip member ends.
type countReader struct {
	r *bufio.Reader
	n int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// scanGzip reads gzip members one after another. A member cut short (a
// recorder killed) yields every line flushed before the cut; a damaged
// member is skipped up to the next member that reads.
func (p *scanner) scanGzip(size int64) error {
	off := int64(0)
	for off < size {
		cr := &countReader{r: bufio.NewReaderSize(io.NewSectionReader(p.f.f, off, size-off), 64<<10)}
		zr, err := gzip.NewReader(cr)
		if err == nil {
			zr.Multistream(false)
			p.r.ixMu.Lock()
			mem := int32(len(p.f.members))
			p.f.members = append(p.f.members, off)
			p.r.ixMu.Unlock()
			err = p.readLines(zr, mem)
			if err == nil {
				err = zr.Close()
			}
		}
		if cerr := p.ctx.Err(); cerr != nil {
			return cerr
		}
		if p.stop != nil {
			return p.stop
		}
		if err == nil {
			off += cr.n
			// The writer ends each member at a line's end; a cut here is
			// the end of a session that was killed mid-line.
			p.finish()
			continue
		}
		p.finish()
		next, serr := findMagic(p.f.f, off+1, size)
		if serr != nil {
			return serr
		}
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) && next < 0:
			p.warn(Warning{File: p.f.name, Msg: fmt.Sprintf("compressed data ends early after line %d (the recording was cut off); read every complete line before that", p.line)})
		case next < 0:
			p.warn(Warning{File: p.f.name, Msg: fmt.Sprintf("compressed data damaged after line %d (%v); the rest of the file is unreadable", p.line, err)})
		default:
			p.warn(Warning{File: p.f.name, Msg: fmt.Sprintf("compressed data damaged after line %d (%v); reading on from the next intact part", p.line, err)})
		}
		if next < 0 {
			return nil
		}
		off = next
	}
	return nil
}

// findMagic returns the offset of the next gzip header at or after from,
// or -1.
func findMagic(f *os.File, from, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for from < size {
		n, err := f.ReadAt(buf, from)
		if n == 0 && err != nil {
			if err == io.EOF {
				return -1, nil
			}
			return -1, err
		}
		if i := bytes.Index(buf[:n], gzipMagic); i >= 0 {
			return from + int64(i), nil
		}
		if n < len(gzipMagic) {
			return -1, nil
		}
		from += int64(n - len(gzipMagic) + 1)
	}
	return -1, nil
}

// openFile opens a recording file; Stdin (or a pipe, a FIFO) is copied
// to an unnamed temporary file first, so that it can be read again.
func openFile(ctx context.Context, name string) (*os.File, error) {
	var in *os.File
	if name == Stdin {
		in = os.Stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		in = f
	}
	st, err := in.Stat()
	if err != nil {
		in.Close()
		return nil, err
	}
	if st.Mode().IsRegular() {
		return in, nil
	}
	if st.IsDir() {
		in.Close()
		return nil, fmt.Errorf("%s is a directory", name)
	}
	if name == Stdin && st.Mode()&os.ModeCharDevice != 0 {
		return nil, errors.New("standard input is a terminal: pipe a recording in (vramtop replay - < FILE)")
	}
	tmp, err := os.CreateTemp("", "vramtop-replay-*")
	if err != nil {
		return nil, err
	}
	os.Remove(tmp.Name()) // gone once closed, whatever happens
	_, err = io.Copy(tmp, ctxReader{ctx, in})
	if in != os.Stdin {
		in.Close()
	}
	if err != nil {
		tmp.Close()
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return tmp, nil
}

// ctxReader stops reading once ctx ends (checked between reads).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// scanFile indexes one recording file. Damage costs the damaged lines
// only; it is reported through warn. Only a file that cannot be read at
// all, or holds no recording, is an error.
func (r *Recording) scanFile(ctx context.Context, name string, idx int, warn func(Warning), onLine func()) error {
	osf, err := openFile(ctx, name)
	if err != nil {
		return err
	}
	display := name
	if name == Stdin {
		display = "standard input"
	}
	f := &file{name: display, f: osf}
	r.files = append(r.files, f)
	p := &scanner{r: r, f: f, fileIdx: uint16(idx), warn: warn, hdr: -1, key: -1, ctx: ctx, onLine: onLine}
	before := len(r.view().lines)
	if err := p.scanAll(); err != nil {
		return err
	}
	p.flushSkipped()
	if len(r.view().lines) == before && !p.sawHeader {
		return fmt.Errorf("%s is not a vramtop recording", display)
	}
	return nil
}

// scanAll reads the whole file, plain or gzip compressed.
func (p *scanner) scanAll() error {
	st, err := p.f.f.Stat()
	if err != nil {
		return err
	}
	magic := make([]byte, 2)
	n, _ := p.f.f.ReadAt(magic, 0)
	if n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		p.f.gz = true
		return p.scanGzip(st.Size())
	}
	p.f.members = []int64{0}
	if err := p.readLines(io.NewSectionReader(p.f.f, 0, st.Size()), 0); err != nil {
		return err
	}
	p.finish()
	return nil
}

// Open reads the recording files named (parts of one rotated recording, in
// any order; Stdin for standard input) and returns the recording, stopping
// when ctx ends. Warnings about damaged lines go to warn (nil: dropped),
// while reading and later while snapshots are rebuilt. A file that cannot be
// read, or none that holds a snapshot, is an error.
func Open(ctx context.Context, paths []string, warn func(Warning)) (*Recording, error) {
	if len(paths) == 0 {
		return nil, errors.New("no recording named")
	}
	if len(paths) > 1<<16 {
		return nil, errors.New("too many recording files named")
	}
	if warn == nil {
		warn = func(Warning) {}
	}
	r := &Recording{warn: warn, warned: map[int32]bool{}}
	for i, path := range paths {
		if err := r.scanFile(ctx, path, i, warn, nil); err != nil {
			r.Close()
			return nil, err
		}
	}
	if len(r.ix.lines) == 0 {
		r.Close()
		return nil, fmt.Errorf("%s holds no snapshots", strings.Join(paths, ", "))
	}
	r.ix.lines = sortLines(r.ix.lines)
	return r, nil
}

// sortLines puts lines in time order (parts named in any order; stable, so
// one file's order is kept) and keeps one of each moment where parts
// overlap or one is named twice.
func sortLines(lines []entry) []entry {
	if slices.IsSortedFunc(lines, cmpTime) {
		return lines
	}
	lines = slices.Clone(lines)
	slices.SortStableFunc(lines, cmpTime)
	out := lines[:1]
	for _, e := range lines[1:] {
		last := out[len(out)-1]
		if e.file != last.file && e.t == last.t && e.seq == last.seq {
			continue
		}
		out = append(out, e)
	}
	return slices.Clip(out)
}

func cmpTime(a, b entry) int {
	switch {
	case a.t < b.t:
		return -1
	case a.t > b.t:
		return 1
	}
	return 0
}

// OpenBackground opens one recording file and returns as soon as its first
// snapshot is indexed, indexing the rest in the background: the live view
// shows the start of a long recording at once. Len and End grow until the
// scan ends (Scanned). Errors after the first snapshot are reported
// through warn.
func OpenBackground(ctx context.Context, path string, warn func(Warning)) (*Recording, error) {
	if warn == nil {
		warn = func(Warning) {}
	}
	ctx, stop := context.WithCancel(ctx)
	r := &Recording{warn: warn, warned: map[int32]bool{}, stop: stop, scanned: make(chan struct{})}
	first := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(first) }) }
	var err error
	go func() {
		defer close(r.scanned)
		defer ready()
		if err = r.scanFile(ctx, path, 0, warn, ready); err != nil {
			if ctx.Err() == nil && len(r.view().lines) > 0 {
				warn(Warning{File: path, Msg: fmt.Sprintf("reading stopped: %v", err)})
			}
			return
		}
		r.ixMu.Lock()
		if lines := sortLines(r.ix.lines); &lines[0] != &r.ix.lines[0] {
			r.ix.lines = lines
			r.ix.gen++
		}
		r.ixMu.Unlock()
	}()
	<-first
	if len(r.view().lines) == 0 {
		<-r.scanned
		if err == nil {
			err = fmt.Errorf("%s holds no snapshots", path)
		}
		r.Close()
		return nil, err
	}
	return r, nil
}

// Scanned is closed once the whole recording is indexed (at once for
// Open).
func (r *Recording) Scanned() <-chan struct{} {
	if r.scanned == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return r.scanned
}

// Close stops a background scan and closes the recording's files.
func (r *Recording) Close() error {
	if r.stop != nil {
		r.stop()
		<-r.scanned
	}
	for _, f := range r.files {
		f.f.Close()
	}
	return nil
}
