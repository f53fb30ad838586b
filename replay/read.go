// Package replay reads recordings written by the recorder and rebuilds the
// Snapshot of any recorded moment, history windows included, for `vramtop
// replay`: printed once as JSON, or played in the live view.
package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/vramtop/vramtop/recorder"
)

// maxLine bounds one line of a recording; a longer one is damage.
const maxLine = 64 << 20

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

// frame is one record with the header in force when it was written.
type frame struct {
	hdr  *recorder.Header
	rec  recorder.Record
	file int
	line int
}

// readFile reads one recording file (plain or gzip, told apart by its
// first bytes) and returns its frames in file order. Damage costs the
// damaged lines only; it is reported through warn. Only a file that cannot
// be read at all, or holds no recording, is an error.
func readFile(path string, fileIdx int, warn func(Warning)) ([]frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	magic := make([]byte, 2)
	n, _ := io.ReadFull(f, magic)
	p := &parser{path: path, file: fileIdx, warn: warn}
	if n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		// Compressed: read whole, so a damaged part can be skipped to
		// the next intact one.
		data, err := io.ReadAll(io.MultiReader(bytes.NewReader(magic), f))
		if err != nil {
			return nil, err
		}
		p.readGzip(data)
	} else {
		// Plain: streamed.
		if err := p.readLines(io.MultiReader(bytes.NewReader(magic[:n]), f)); err != nil {
			return nil, err
		}
		p.finish()
	}
	if len(p.frames) == 0 && !p.sawHeader {
		return nil, fmt.Errorf("%s is not a vramtop recording", path)
	}
	return p.frames, nil
}

type parser struct {
	path      string
	file      int
	warn      func(Warning)
	line      int
	hdr       *recorder.Header
	sawHeader bool
	frames    []frame
	partial   []byte // a line not yet ended by a newline
}

func (p *parser) warnf(line int, format string, args ...any) {
	p.warn(Warning{File: p.path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// readLines feeds the lines of r to the parser; a last line without a
// newline stays in p.partial.
func (p *parser) readLines(r io.Reader) error {
	br := bufio.NewReaderSize(r, 256<<10)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if len(p.partial)+len(chunk) > maxLine {
				// Keep counting lines, drop the bytes.
				if chunk[len(chunk)-1] == '\n' {
					p.line++
					p.warnf(p.line, "line longer than %d MiB; skipped", maxLine>>20)
					p.partial = p.partial[:0]
				} else {
					p.partial = append(p.partial[:0], 'x') // remember it is damaged
				}
			} else if chunk[len(chunk)-1] == '\n' {
				p.line++
				if len(p.partial) > 0 {
					p.partial = append(p.partial, chunk...)
					p.parseLine(p.partial)
					p.partial = p.partial[:0]
				} else {
					p.parseLine(chunk)
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
func (p *parser) finish() {
	if len(bytes.TrimSpace(p.partial)) > 0 {
		p.warnf(p.line+1, "incomplete last line (the recording was cut off); skipped")
	}
	p.partial = p.partial[:0]
}

// readGzip reads gzip members one after another. A member cut short (a
// recorder killed) yields every line flushed before the cut; a damaged
// member is skipped up to the next member that reads.
func (p *parser) readGzip(data []byte) {
	off := 0
	for off < len(data) {
		br := bytes.NewReader(data[off:])
		zr, err := gzip.NewReader(br)
		if err == nil {
			zr.Multistream(false)
			err = p.readLines(zr)
			if err == nil {
				err = zr.Close()
			}
		}
		if err == nil {
			off = len(data) - br.Len()
			// The writer ends each member at a line's end; a cut here is
			// the end of a session that was killed mid-line.
			p.finish()
			continue
		}
		p.finish()
		next := bytes.Index(data[off+1:], []byte{0x1f, 0x8b, 0x08})
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) && next < 0:
			p.warn(Warning{File: p.path, Msg: fmt.Sprintf("compressed data ends early after line %d (the recording was cut off); read every complete line before that", p.line)})
		case next < 0:
			p.warn(Warning{File: p.path, Msg: fmt.Sprintf("compressed data damaged after line %d (%v); the rest of the file is unreadable", p.line, err)})
		default:
			p.warn(Warning{File: p.path, Msg: fmt.Sprintf("compressed data damaged after line %d (%v); reading on from the next intact part", p.line, err)})
		}
		if next < 0 {
			return
		}
		off += 1 + next
	}
}

func (p *parser) parseLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
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
		p.hdr, p.sawHeader = &h, true
		return
	}
	var r recorder.Record
	if err := json.Unmarshal(line, &r); err != nil {
		p.warnf(p.line, "damaged line skipped: %v", shortErr(err))
		return
	}
	if r.T.IsZero() {
		p.warnf(p.line, "line without a time skipped")
		return
	}
	if p.hdr == nil {
		p.warnf(p.line, "snapshot before any header line; device names unknown")
		p.hdr = &recorder.Header{Format: recorder.Format, Version: recorder.Version}
	}
	p.frames = append(p.frames, frame{hdr: p.hdr, rec: r, file: p.file, line: p.line})
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// Load reads the recording files named (parts of one rotated recording, in
// any order) and returns the recording. Warnings about damaged lines go to
// warn (nil: dropped). A file that cannot be read, or none that holds a
// snapshot, is an error.
func Load(paths []string, warn func(Warning)) (*Recording, error) {
	if len(paths) == 0 {
		return nil, errors.New("no recording named")
	}
	if warn == nil {
		warn = func(Warning) {}
	}
	var all []frame
	for i, path := range paths {
		fr, err := readFile(path, i, warn)
		if err != nil {
			return nil, err
		}
		all = append(all, fr...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s holds no snapshots", strings.Join(paths, ", "))
	}
	// Parts in any order: by time, stable so one file's order is kept.
	sort.SliceStable(all, func(i, j int) bool { return all[i].rec.T.Before(all[j].rec.T) })
	// The same part named twice, or overlapping parts: keep one of each moment.
	out := all[:1]
	for _, f := range all[1:] {
		last := out[len(out)-1]
		if f.file != last.file && f.rec.T.Equal(last.rec.T) && f.rec.Seq == last.rec.Seq {
			continue
		}
		out = append(out, f)
	}
	return build(out), nil
}
