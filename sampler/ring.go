package sampler

import (
	"iter"
	"math"
	"math/bits"
	"sort"
	"time"
)

// blockSize is the largest number of samples in one block of a Ring; small
// rings (a process's) use smaller blocks, down to minBlockSize.
const (
	blockSize    = 128
	minBlockSize = 16
	// firstBlockSize is where a ring's first block starts.
	firstBlockSize = 4
)

type sample struct {
	t int64 // unix nanoseconds
	v uint64
}

// A block is append-only: once sample i is written it never changes, so a
// published Window may read samples [0, n) of a block while the sampler
// appends at n and beyond.
type block []sample

// tier is a fixed-capacity FIFO of samples kept in append-only blocks. A
// block is allocated once per block length of samples (never per sample)
// and, once dropped, is left to the snapshots that still reference it.
type tier struct {
	capacity int
	shift    uint8   // blocks hold 1<<shift samples
	ptrs     []block // circular; ptrs[first] holds the oldest sample
	first    int
	nblk     int
	off      int // index of the oldest sample within ptrs[first]
	n        int
}

func newTier(capacity int) tier {
	if capacity <= 0 {
		return tier{}
	}
	// About sixteen blocks per tier, 16 to 128 samples each: a short
	// history does not carry the slack of a long one's blocks.
	shift := uint8(bits.Len(uint(max(capacity/16, 1)) - 1))
	shift = min(max(shift, uint8(bits.TrailingZeros(minBlockSize))), uint8(bits.TrailingZeros(blockSize)))
	return tier{capacity: capacity, shift: shift}
}

// push appends s; when the tier is full it drops the oldest sample and
// returns it.
func (t *tier) push(s sample) (dropped sample, ok bool) {
	if t.ptrs == nil {
		// Allocated on first use: most processes never fill their
		// recent samples, so their older tier stays empty.
		t.ptrs = make([]block, t.capacity>>t.shift+3)
	}
	pos := t.off + t.n
	bi := pos >> t.shift
	i := pos & (1<<t.shift - 1)
	switch {
	case bi == t.nblk && t.nblk == 0:
		// The first block starts small and doubles up to full size: a
		// short-lived process's history stays small. A block outgrown is
		// copied, never written again, so Windows holding it stay valid.
		t.ptrs[t.first] = make(block, min(firstBlockSize, 1<<t.shift))
		t.nblk++
	case bi == t.nblk:
		t.ptrs[(t.first+t.nblk)%len(t.ptrs)] = make(block, 1<<t.shift)
		t.nblk++
	case i >= len(t.ptrs[(t.first+bi)%len(t.ptrs)]):
		old := t.ptrs[(t.first+bi)%len(t.ptrs)]
		grown := make(block, min(2*len(old), 1<<t.shift))
		copy(grown, old)
		t.ptrs[(t.first+bi)%len(t.ptrs)] = grown
	}
	t.ptrs[(t.first+bi)%len(t.ptrs)][i] = s
	t.n++
	if t.n > t.capacity {
		dropped, ok = t.ptrs[t.first][t.off], true
		t.off++
		t.n--
		if t.off == 1<<t.shift {
			t.ptrs[t.first] = nil
			t.first = (t.first + 1) % len(t.ptrs)
			t.nblk--
			t.off = 0
		}
	}
	return dropped, ok
}

func (t *tier) span() span {
	if t.n == 0 {
		return span{}
	}
	blocks := make([]block, t.nblk)
	for i := range blocks {
		blocks[i] = t.ptrs[(t.first+i)%len(t.ptrs)]
	}
	return span{blocks: blocks, off: t.off, n: t.n, shift: t.shift}
}

// span is an immutable view of a tier's samples.
type span struct {
	blocks []block
	off    int
	n      int
	shift  uint8
}

func (s span) at(i int) sample {
	j := s.off + i
	return s.blocks[j>>s.shift][j&(1<<s.shift-1)]
}

// drop returns the span without its first i samples.
func (s span) drop(i int) span {
	if i <= 0 {
		return s
	}
	if i >= s.n {
		return span{}
	}
	j := s.off + i
	return span{blocks: s.blocks[j>>s.shift:], off: j & (1<<s.shift - 1), n: s.n - i, shift: s.shift}
}

// each yields the span's samples, oldest first, block by block.
func (s span) each(yield func(sample) bool) bool {
	left, off := s.n, s.off
	for _, b := range s.blocks {
		if left == 0 {
			break
		}
		end := min(len(b), off+left)
		for _, x := range b[off:end] {
			if !yield(x) {
				return false
			}
		}
		left -= end - off
		off = 0
	}
	return true
}

// Ring is a fixed-capacity history of (time, value) samples, oldest dropped
// first. A tiered ring (NewTieredRing) keeps its newest samples at full
// resolution and, behind them, older history as one sample per step of
// time: the largest of that step, at the time it was sampled. So a peak
// survives for the whole history at a fraction of its memory.
//
// Windows share the ring's memory safely: publishing a snapshot copies a
// few block headers, not the history. A Ring is owned by one goroutine (the
// sampler's); Windows taken from it may be read by any goroutine.
type Ring struct {
	recent tier
	old    tier  // per-step maxima; capacity 0 when the ring is not tiered
	step   int64 // nanoseconds; 0 when not tiered
	// pend is the largest sample of the step being filled from recent into
	// old (pendStep); it is published by value.
	pend     sample
	pendStep int64
	hasPend  bool
	// win caches the Window until the next Push.
	win   Window
	winOK bool
}

// NewRing returns a ring that keeps the last capacity samples (at least 1),
// all at full resolution.
func NewRing(capacity int) *Ring {
	return &Ring{recent: newTier(max(capacity, 1))}
}

// NewTieredRing returns a ring that keeps its newest recent samples at full
// resolution and, older than those, up to old samples at one per step: the
// largest of each step of time (steps aligned to multiples of step since
// the epoch).
func NewTieredRing(recent int, step time.Duration, old int) *Ring {
	r := NewRing(recent)
	if step > 0 && old > 0 {
		r.old, r.step = newTier(old), int64(step)
	}
	return r
}

// TieredRingFor returns a ring for history at one sample per interval: the
// newest recent of it at full resolution, the rest as at most buckets
// per-step maxima (a step a whole number of intervals). Where history is no
// longer than recent, every sample is kept.
func TieredRingFor(history, interval, recent time.Duration, buckets int) *Ring {
	if history <= recent || buckets <= 0 || interval <= 0 {
		return NewRing(CapacityFor(history, interval))
	}
	rest := history - recent
	step := (rest + time.Duration(buckets) - 1) / time.Duration(buckets)
	step = max(interval, (step+interval-1)/interval*interval)
	return NewTieredRing(CapacityFor(recent, interval), step, CapacityFor(rest, step))
}

// CapacityFor is the number of samples that covers history at one sample per
// interval.
func CapacityFor(history, interval time.Duration) int {
	if interval <= 0 || history <= 0 {
		return 1
	}
	c := int((history + interval - 1) / interval)
	if c < 1 {
		c = 1
	}
	return c
}

// Push appends a sample. Samples come in time order.
func (r *Ring) Push(t time.Time, v uint64) {
	r.winOK = false
	dropped, ok := r.recent.push(sample{t: t.UnixNano(), v: v})
	if !ok || r.step == 0 {
		return
	}
	st := floorDiv(dropped.t, r.step)
	if r.hasPend && st == r.pendStep {
		if dropped.v > r.pend.v {
			r.pend = dropped
		}
		return
	}
	if r.hasPend {
		r.old.push(r.pend)
	}
	r.pend, r.pendStep, r.hasPend = dropped, st, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Window returns an immutable view of the samples held now.
func (r *Ring) Window() Window {
	if !r.winOK {
		r.win = Window{old: r.old.span(), pend: r.pend, hasPend: r.hasPend, recent: r.recent.span()}
		r.winOK = true
	}
	return r.win
}

// Window is an immutable, ordered view of a Ring's samples, oldest first:
// those of the older tier (per-step maxima), then the step being filled,
// then the recent ones. The zero Window is empty.
type Window struct {
	old     span
	pend    sample
	hasPend bool
	recent  span
}

// WindowOf builds a Window from samples given in time order; for sources
// that have their history already (replay, fleet) and for tests.
func WindowOf(times []time.Time, values []uint64) Window {
	r := NewRing(len(values))
	for i, v := range values {
		r.Push(times[i], v)
	}
	return r.Window()
}

// Len returns the number of samples.
func (w Window) Len() int { return w.old.n + b2i(w.hasPend) + w.recent.n }

func (w Window) at(i int) sample {
	if i < w.old.n {
		return w.old.at(i)
	}
	i -= w.old.n
	if w.hasPend {
		if i == 0 {
			return w.pend
		}
		i--
	}
	return w.recent.at(i)
}

// all yields every sample, oldest first.
func (w Window) all() iter.Seq[sample] {
	return func(yield func(sample) bool) {
		if !w.old.each(yield) {
			return
		}
		if w.hasPend && !yield(w.pend) {
			return
		}
		w.recent.each(yield)
	}
}

// drop returns the window without its first i samples.
func (w Window) drop(i int) Window {
	if i <= 0 {
		return w
	}
	if i < w.old.n {
		w.old = w.old.drop(i)
		return w
	}
	i -= w.old.n
	w.old = span{}
	if w.hasPend {
		if i == 0 {
			return w
		}
		i--
		w.pend, w.hasPend = sample{}, false
	}
	w.recent = w.recent.drop(i)
	return w
}

// At returns sample i, 0 being the oldest.
func (w Window) At(i int) (time.Time, uint64) {
	s := w.at(i)
	return time.Unix(0, s.t), s.v
}

// Last returns the newest sample; ok is false when the window is empty.
func (w Window) Last() (t time.Time, v uint64, ok bool) {
	n := w.Len()
	if n == 0 {
		return time.Time{}, 0, false
	}
	t, v = w.At(n - 1)
	return t, v, true
}

// First returns the oldest sample's time; zero when empty.
func (w Window) First() time.Time {
	if w.Len() == 0 {
		return time.Time{}
	}
	t, _ := w.At(0)
	return t
}

// Max returns the largest value held, 0 when empty.
func (w Window) Max() uint64 {
	var m uint64
	for s := range w.all() {
		m = max(m, s.v)
	}
	return m
}

// Since returns the samples at or after t.
func (w Window) Since(t time.Time) Window {
	return w.drop(w.search(t.UnixNano()))
}

// search returns the index of the first sample at or after ns.
func (w Window) search(ns int64) int {
	return sort.Search(w.Len(), func(i int) bool { return w.at(i).t >= ns })
}

// Each calls f for every sample, oldest first.
func (w Window) Each(f func(t time.Time, v uint64)) {
	for s := range w.all() {
		f(time.Unix(0, s.t), s.v)
	}
}

// Buckets splits [from, to) into n equal spans and returns the largest value
// sampled in each: a consumer drawing n columns gets the peak of each
// column, so a short spike the sampler saw is never averaged away. A span
// with no sample is NaN. n <= 0 gives no buckets.
func (w Window) Buckets(from, to time.Time, n int) []float64 {
	out := make([]float64, max(n, 0))
	w.BucketsInto(out, from, to)
	return out
}

// BucketsInto is Buckets writing into out (len(out) buckets).
func (w Window) BucketsInto(out []float64, from, to time.Time) {
	n := len(out)
	for i := range out {
		out[i] = math.NaN()
	}
	span := to.UnixNano() - from.UnixNano()
	if n == 0 || span <= 0 {
		return
	}
	f, end := from.UnixNano(), to.UnixNano()
	for s := range w.drop(w.search(f)).all() {
		if s.t >= end {
			break
		}
		// Exact integer column: (t-from)*n/span in 128 bits, so a sample
		// on a column's edge is not drawn a column early by rounding, and
		// long spans do not overflow. The quotient is below n.
		hi, lo := bits.Mul64(uint64(s.t-f), uint64(n))
		q, _ := bits.Div64(hi, lo, uint64(span))
		b := int(q)
		if v := float64(s.v); math.IsNaN(out[b]) || v > out[b] {
			out[b] = v
		}
	}
}
