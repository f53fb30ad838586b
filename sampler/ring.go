package sampler

import (
	"math"
	"math/bits"
	"sort"
	"time"
)

// blockSize is the number of samples in one block of a Ring.
const blockSize = 128

type sample struct {
	t int64 // unix nanoseconds
	v uint64
}

// A block is append-only: once sample i is written it never changes, so a
// published Window may read samples [0, n) of a block while the sampler
// appends at n and beyond.
type block struct {
	s [blockSize]sample
}

// Ring is a fixed-capacity history of (time, value) samples. When full, each
// new sample drops the oldest one. Samples live in append-only blocks; a
// block is allocated once per blockSize samples (never per sample) and, once
// dropped from the ring, is left to the snapshots that still reference it.
// This lets Window share the ring's memory safely: publishing a snapshot
// copies a few block pointers, not the history.
//
// A Ring is owned by one goroutine (the sampler's); Windows taken from it may
// be read by any goroutine.
type Ring struct {
	capacity int
	ptrs     []*block // circular; ptrs[first] holds the oldest sample
	first    int
	nblk     int
	off      int // index of the oldest sample within ptrs[first]
	n        int
}

// NewRing returns a ring that keeps the last capacity samples (at least 1).
func NewRing(capacity int) *Ring {
	if capacity < 1 {
		capacity = 1
	}
	return &Ring{capacity: capacity, ptrs: make([]*block, capacity/blockSize+3)}
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

// Cap returns the ring's capacity in samples.
func (r *Ring) Cap() int { return r.capacity }

// Len returns the number of samples held.
func (r *Ring) Len() int { return r.n }

// Push appends a sample, dropping the oldest when the ring is full.
func (r *Ring) Push(t time.Time, v uint64) {
	pos := r.off + r.n
	bi := pos / blockSize
	if bi == r.nblk {
		r.ptrs[(r.first+r.nblk)%len(r.ptrs)] = new(block)
		r.nblk++
	}
	r.ptrs[(r.first+bi)%len(r.ptrs)].s[pos%blockSize] = sample{t: t.UnixNano(), v: v}
	r.n++
	if r.n > r.capacity {
		r.off++
		r.n--
		if r.off == blockSize {
			r.ptrs[r.first] = nil
			r.first = (r.first + 1) % len(r.ptrs)
			r.nblk--
			r.off = 0
		}
	}
}

// Window returns an immutable view of the samples held now.
func (r *Ring) Window() Window {
	if r.n == 0 {
		return Window{}
	}
	blocks := make([]*block, r.nblk)
	for i := range blocks {
		blocks[i] = r.ptrs[(r.first+i)%len(r.ptrs)]
	}
	return Window{blocks: blocks, off: r.off, n: r.n}
}

// Window is an immutable, ordered view of a Ring's samples, oldest first.
// The zero Window is empty.
type Window struct {
	blocks []*block
	off    int
	n      int
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
func (w Window) Len() int { return w.n }

func (w Window) at(i int) sample {
	j := w.off + i
	return w.blocks[j/blockSize].s[j%blockSize]
}

// At returns sample i, 0 being the oldest.
func (w Window) At(i int) (time.Time, uint64) {
	s := w.at(i)
	return time.Unix(0, s.t), s.v
}

// Last returns the newest sample; ok is false when the window is empty.
func (w Window) Last() (t time.Time, v uint64, ok bool) {
	if w.n == 0 {
		return time.Time{}, 0, false
	}
	t, v = w.At(w.n - 1)
	return t, v, true
}

// First returns the oldest sample's time; zero when empty.
func (w Window) First() time.Time {
	if w.n == 0 {
		return time.Time{}
	}
	t, _ := w.At(0)
	return t
}

// Max returns the largest value held, 0 when empty.
func (w Window) Max() uint64 {
	var m uint64
	for i := 0; i < w.n; i++ {
		if v := w.at(i).v; v > m {
			m = v
		}
	}
	return m
}

// Since returns the samples at or after t.
func (w Window) Since(t time.Time) Window {
	i := w.search(t.UnixNano())
	if i == 0 {
		return w
	}
	j := w.off + i
	return Window{blocks: w.blocks[j/blockSize:], off: j % blockSize, n: w.n - i}
}

// search returns the index of the first sample at or after ns.
func (w Window) search(ns int64) int {
	return sort.Search(w.n, func(i int) bool { return w.at(i).t >= ns })
}

// Each calls f for every sample, oldest first.
func (w Window) Each(f func(t time.Time, v uint64)) {
	for i := 0; i < w.n; i++ {
		s := w.at(i)
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
	for i := w.search(f); i < w.n; i++ {
		s := w.at(i)
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
