package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vramtop/vramtop/recorder"
)

// Line is one snapshot line of a recording as Stream reads it.
type Line struct {
	// Header is the header in force; a new pointer wherever it changes.
	Header *recorder.Header
	// Record is the snapshot: a delta line expanded against its keyframe,
	// its strings inert, its times checked.
	Record *recorder.Record
	File   string
	Line   int
}

// errPeeked ends the scan that finds a file's first snapshot.
var errPeeked = errors.New("peeked")

// Stream reads the recording files named (Stdin for standard input) line
// by line and calls fn with every snapshot line that reads, decoded one at
// a time: memory does not grow with the length of the recording (a line
// and its keyframe at a time), and nothing is indexed. Files are read one
// after another in the order of their first snapshots, so the rotated
// parts of one recording come in time order whatever order they are named
// in; lines come in the order of their file. Damage costs the damaged
// lines, reported through warn (nil: dropped), as for Open. An error fn
// returns ends the reading and is returned; so are a file that cannot be
// read or holds no recording, and recordings that hold no snapshot.
func Stream(ctx context.Context, paths []string, warn func(Warning), fn func(Line) error) error {
	if len(paths) == 0 {
		return errors.New("no recording named")
	}
	if len(paths) > 1<<16 {
		return errors.New("too many recording files named")
	}
	if warn == nil {
		warn = func(Warning) {}
	}
	type part struct {
		f     *file
		first int64
	}
	parts := make([]part, 0, len(paths))
	defer func() {
		for _, p := range parts {
			p.f.f.Close()
		}
	}()
	for _, path := range paths {
		osf, err := openFile(ctx, path)
		if err != nil {
			return err
		}
		display := path
		if path == Stdin {
			display = "standard input"
		}
		pt := part{f: &file{name: display, f: osf}, first: math.MaxInt64}
		parts = append(parts, pt)
		// The time of its first snapshot; warnings come in the full pass.
		p := &scanner{r: &Recording{}, f: &file{name: display, f: osf}, warn: func(Warning) {}, hdr: -1, key: -1, ctx: ctx}
		p.emit = func(_ *recorder.Header, _ []byte, hd head, _ int) {
			parts[len(parts)-1].first = hd.T.UnixNano()
			p.stop = errPeeked
		}
		if err := p.scanAll(); err != nil && !errors.Is(err, errPeeked) {
			return err
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(a.first, b.first) })
	lines := 0
	for _, pt := range parts {
		s := &streamer{fn: fn, warn: warn}
		p := &scanner{r: &Recording{}, f: pt.f, warn: warn, hdr: -1, key: -1, ctx: ctx}
		s.p = p
		p.emit = s.line
		if err := p.scanAll(); err != nil {
			return err
		}
		if s.n == 0 && !p.sawHeader {
			return fmt.Errorf("%s is not a vramtop recording", pt.f.name)
		}
		lines += s.n
	}
	if lines == 0 {
		names := make([]string, len(parts))
		for i, p := range parts {
			names[i] = p.f.name
		}
		return fmt.Errorf("%s holds no snapshots", strings.Join(names, ", "))
	}
	return nil
}

// streamer decodes the lines of one file for Stream.
type streamer struct {
	p    *scanner
	fn   func(Line) error
	warn func(Warning)
	// kf is the file's last keyframe, decoded, and kfT its time.
	kf  *recorder.Record
	kfT int64
	n   int // snapshot lines read (damaged ones included)
}

func (s *streamer) line(h *recorder.Header, b []byte, hd head, lineNo int) {
	s.n++
	var rec recorder.Record
	var err error
	switch {
	case hd.Key:
		s.kf = nil
		var kf recorder.Record
		if err = recorder.DecodeRecord(b, &kf); err == nil {
			s.kf, s.kfT = &kf, hd.T.UnixNano()
			rec, err = decodeLine(b, nil)
		}
	case hd.KF != nil:
		if s.kf == nil || s.kfT != *hd.KF {
			s.warn(Warning{File: s.p.f.name, Line: lineNo, Msg: "line skipped: its keyframe is missing or damaged"})
			return
		}
		rec, err = decodeLine(b, s.kf)
	default:
		rec, err = decodeLine(b, nil)
	}
	if err != nil {
		s.warn(Warning{File: s.p.f.name, Line: lineNo, Msg: "damaged line skipped: " + shortErr(err)})
		return
	}
	if err := s.fn(Line{Header: h, Record: &rec, File: s.p.f.name, Line: lineNo}); err != nil {
		s.p.stop = err
	}
}
