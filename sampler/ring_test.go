package sampler

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

var ringT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is the time of sample i at one sample per second.
func ringAt(i int) time.Time { return ringT0.Add(time.Duration(i) * time.Second) }

// values reads a window's values, oldest first.
func windowValues(w Window) []uint64 {
	var out []uint64
	w.Each(func(_ time.Time, v uint64) { out = append(out, v) })
	return out
}

func TestRingKeepsTheNewestSamplesInOrder(t *testing.T) {
	// Capacities around the block size, so the ring wraps inside a block,
	// at its edge and across several blocks.
	for _, capacity := range []int{1, 5, blockSize - 1, blockSize, blockSize + 1, 3*blockSize + 17} {
		r := NewRing(capacity)
		pushes := 5*capacity + 3*blockSize + 7
		for i := 0; i < pushes; i++ {
			r.Push(ringAt(i), uint64(i))
			want := min(i+1, capacity)
			if r.Len() != want {
				t.Fatalf("cap %d: after %d pushes Len = %d, want %d", capacity, i+1, r.Len(), want)
			}
		}
		w := r.Window()
		if w.Len() != capacity || r.Cap() != capacity {
			t.Fatalf("cap %d: window holds %d samples, ring cap %d", capacity, w.Len(), r.Cap())
		}
		for i := 0; i < w.Len(); i++ {
			tm, v := w.At(i)
			want := pushes - capacity + i
			if v != uint64(want) || !tm.Equal(ringAt(want)) {
				t.Fatalf("cap %d: sample %d = (%v, %d), want (%v, %d)", capacity, i, tm, v, ringAt(want), want)
			}
		}
		lt, lv, ok := w.Last()
		if !ok || lv != uint64(pushes-1) || !lt.Equal(ringAt(pushes-1)) {
			t.Fatalf("cap %d: Last = (%v, %d, %v), want the newest sample", capacity, lt, lv, ok)
		}
		if !w.First().Equal(ringAt(pushes - capacity)) {
			t.Fatalf("cap %d: First = %v, want %v", capacity, w.First(), ringAt(pushes-capacity))
		}
	}
}

func TestEmptyRingAndWindow(t *testing.T) {
	w := NewRing(10).Window()
	if w.Len() != 0 || w.Max() != 0 || !w.First().IsZero() {
		t.Fatalf("empty window: Len %d Max %d First %v", w.Len(), w.Max(), w.First())
	}
	if _, _, ok := w.Last(); ok {
		t.Fatal("Last of an empty window says ok")
	}
	if NewRing(0).Cap() != 1 || NewRing(-3).Cap() != 1 {
		t.Fatal("a ring of no capacity must still keep the newest sample")
	}
	for _, b := range (Window{}).Buckets(ringT0, ringAt(10), 4) {
		if !math.IsNaN(b) {
			t.Fatalf("bucket of an empty window = %v, want NaN", b)
		}
	}
}

func TestCapacityForCoversTheHistory(t *testing.T) {
	cases := []struct {
		history, interval time.Duration
		want              int
	}{
		{time.Hour, time.Second, 3600},
		{time.Hour, 50 * time.Millisecond, 72000},
		{10 * time.Second, 3 * time.Second, 4}, // rounds up: 3 samples would cover 9 s
		{time.Second, time.Hour, 1},
		{0, time.Second, 1},
		{time.Hour, 0, 1},
	}
	for _, c := range cases {
		if got := CapacityFor(c.history, c.interval); got != c.want {
			t.Errorf("CapacityFor(%v, %v) = %d, want %d", c.history, c.interval, got, c.want)
		}
	}
	// A ring sized for 2 minutes at 250 ms, fed for 10 minutes, spans the
	// last 2 minutes.
	interval, history := 250*time.Millisecond, 2*time.Minute
	r := NewRing(CapacityFor(history, interval))
	var last time.Time
	for i := 0; i < 2400; i++ {
		last = ringT0.Add(time.Duration(i) * interval)
		r.Push(last, uint64(i))
	}
	w := r.Window()
	if span := last.Sub(w.First()) + interval; span != history {
		t.Fatalf("ring holds %v of history, want %v", span, history)
	}
}

func TestBucketsKeepThePeakOfEachColumn(t *testing.T) {
	// 60 samples a second apart at 10, with a single-sample spike of 500 at
	// second 37: drawn in 6 columns of 10 s, column 3 must show the spike,
	// not an average.
	r := NewRing(100)
	for i := 0; i < 60; i++ {
		v := uint64(10 + i%3)
		if i == 37 {
			v = 500
		}
		r.Push(ringAt(i), v)
	}
	got := r.Window().Buckets(ringAt(0), ringAt(60), 6)
	want := []float64{12, 12, 12, 500, 12, 12}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("buckets = %v, want %v", got, want)
		}
	}
	if m := r.Window().Max(); m != 500 {
		t.Fatalf("Max = %d, want the spike 500", m)
	}
}

func TestBucketsWithoutSamplesAreNaN(t *testing.T) {
	// Samples in [0, 10) s and [30, 40) s; a 40 s span in 4 columns has
	// two empty columns, and a span before the history is all empty.
	r := NewRing(100)
	for i := 0; i < 10; i++ {
		r.Push(ringAt(i), 7)
	}
	for i := 30; i < 40; i++ {
		r.Push(ringAt(i), 9)
	}
	w := r.Window()
	got := w.Buckets(ringAt(0), ringAt(40), 4)
	if got[0] != 7 || !math.IsNaN(got[1]) || !math.IsNaN(got[2]) || got[3] != 9 {
		t.Fatalf("buckets = %v, want [7 NaN NaN 9]", got)
	}
	before := w.Buckets(ringT0.Add(-time.Hour), ringT0, 3)
	if len(before) != 3 {
		t.Fatalf("a span before the history: %d buckets, want 3", len(before))
	}
	for _, b := range before {
		if !math.IsNaN(b) {
			t.Fatalf("a span before the history has a value: %v", b)
		}
	}
	// The end of the span is excluded, its start included.
	got = w.Buckets(ringAt(9), ringAt(30), 1)
	if got[0] != 7 {
		t.Fatalf("bucket [9 s, 30 s) = %v, want 7", got)
	}
}

func TestBucketsOfNoColumnsDoNotPanic(t *testing.T) {
	// A terminal squeezed to nothing asks for zero or fewer columns.
	r := NewRing(10)
	r.Push(ringAt(0), 1)
	for _, n := range []int{0, -1} {
		if b := r.Window().Buckets(ringAt(0), ringAt(1), n); len(b) != 0 {
			t.Fatalf("Buckets(%d) = %v, want none", n, b)
		}
	}
	if b := r.Window().Buckets(ringAt(1), ringAt(0), 3); len(b) != 3 || !math.IsNaN(b[0]) {
		t.Fatalf("a reversed span = %v, want 3 NaN buckets", b)
	}
}

func TestSince(t *testing.T) {
	r := NewRing(3*blockSize + 5)
	for i := 0; i < 1000; i++ {
		r.Push(ringAt(i), uint64(i))
	}
	w := r.Window() // samples 611..999
	cases := []struct {
		since     time.Time
		wantFirst int
		wantLen   int
	}{
		{ringAt(0), 611, 389},                         // before the window: all of it
		{ringAt(700), 700, 300},                       // exactly on a sample
		{ringAt(700).Add(time.Millisecond), 701, 299}, // between samples
		{ringAt(999), 999, 1},
		{ringAt(1000), -1, 0}, // after the newest: empty
	}
	for _, c := range cases {
		s := w.Since(c.since)
		if s.Len() != c.wantLen {
			t.Fatalf("Since(%v): Len = %d, want %d", c.since, s.Len(), c.wantLen)
		}
		if c.wantLen == 0 {
			continue
		}
		vs := windowValues(s)
		for i, v := range vs {
			if v != uint64(c.wantFirst+i) {
				t.Fatalf("Since(%v)[%d] = %d, want %d", c.since, i, v, c.wantFirst+i)
			}
		}
	}
}

func TestWindowOf(t *testing.T) {
	times := []time.Time{ringAt(0), ringAt(1), ringAt(2)}
	w := WindowOf(times, []uint64{3, 9, 4})
	if got := windowValues(w); len(got) != 3 || got[1] != 9 || w.Max() != 9 {
		t.Fatalf("WindowOf = %v", got)
	}
	if WindowOf(nil, nil).Len() != 0 {
		t.Fatal("WindowOf of nothing is not empty")
	}
}

func TestWindowIsUnchangedByLaterPushes(t *testing.T) {
	r := NewRing(2*blockSize + 3)
	for i := 0; i < 300; i++ {
		r.Push(ringAt(i), uint64(i))
	}
	w := r.Window()
	before := windowValues(w)
	first, max := w.First(), w.Max()
	// Wrap the ring several times over.
	for i := 300; i < 300+10*r.Cap(); i++ {
		r.Push(ringAt(i), uint64(1_000_000+i))
	}
	after := windowValues(w)
	if len(after) != len(before) {
		t.Fatalf("window length changed from %d to %d", len(before), len(after))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("window sample %d changed from %d to %d", i, before[i], after[i])
		}
	}
	if !w.First().Equal(first) || w.Max() != max {
		t.Fatal("window First/Max changed after later pushes")
	}
}

// TestRingWindowsAcrossGoroutines is the sampler's pattern: one goroutine
// pushes and hands out Windows; readers hold them and read while the writer
// keeps pushing. Run under -race.
func TestRingWindowsAcrossGoroutines(t *testing.T) {
	r := NewRing(blockSize*2 + 9)
	ch := make(chan Window, 4)
	var wg sync.WaitGroup
	errs := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var held []Window
		var snaps [][]uint64
		for w := range ch {
			vs := windowValues(w)
			for i := 1; i < len(vs); i++ {
				if vs[i] != vs[i-1]+1 {
					select {
					case errs <- "window is not a run of consecutive samples":
					default:
					}
				}
			}
			held = append(held, w)
			snaps = append(snaps, vs)
			// Re-read every window held so far while the writer pushes.
			for k := range held {
				if got := windowValues(held[k]); len(got) != len(snaps[k]) || len(got) > 0 && got[len(got)-1] != snaps[k][len(got)-1] {
					select {
					case errs <- "a held window changed":
					default:
					}
				}
			}
			if len(held) > 50 {
				held, snaps = held[1:], snaps[1:]
			}
		}
	}()
	for i := 0; i < 20000; i++ {
		r.Push(ringAt(i), uint64(i))
		if i%97 == 0 {
			ch <- r.Window()
		}
	}
	close(ch)
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
}

func TestBucketsPutASampleOnAColumnEdgeInThatColumn(t *testing.T) {
	// 60 s in 50 columns of 1.2 s: a sample at 34.8 s starts column 29.
	// (34.8/60*50 in floating point is 28.999…, which drew it a column
	// early.)
	for _, c := range []struct {
		span   time.Duration
		n, col int
	}{{time.Minute, 50, 29}, {time.Hour, 45, 13}, {time.Hour, 45, 26}} {
		edge := ringT0.Add(c.span * time.Duration(c.col) / time.Duration(c.n))
		w := WindowOf([]time.Time{edge}, []uint64{99})
		b := w.Buckets(ringT0, ringT0.Add(c.span), c.n)
		if b[c.col] != 99 || !math.IsNaN(b[c.col-1]) {
			t.Fatalf("%v in %d columns: sample at the start of column %d drawn as %v | %v", c.span, c.n, c.col, b[c.col-1], b[c.col])
		}
	}
}

// TestTieredRingKeepsPeaksOfOlderHistory: a tiered ring holds its newest
// samples as they were and older ones as the largest sample of each step,
// at the time it was taken, so a one-sample spike outlives its resolution.
func TestTieredRingKeepsPeaksOfOlderHistory(t *testing.T) {
	// 10 recent samples at 1 s; older history in 5 s steps, 4 of them.
	r := NewTieredRing(10, 5*time.Second, 4)
	if r.Cap() != 15 || r.Step() != 5*time.Second {
		t.Fatalf("Cap %d, Step %v; want 15 and 5s", r.Cap(), r.Step())
	}
	// ringT0 is a whole multiple of 5 s, so steps are samples [0,5), [5,10), ...
	const pushes = 40
	value := func(i int) uint64 {
		if i == 22 {
			return 1000 // a spike
		}
		return uint64(i)
	}
	for i := range pushes {
		r.Push(ringAt(i), value(i))
		if r.Len() > r.Cap() {
			t.Fatalf("after %d pushes Len %d > Cap %d", i+1, r.Len(), r.Cap())
		}
	}
	w := r.Window()
	type pt struct {
		i int
		v uint64
	}
	var got []pt
	w.Each(func(tm time.Time, v uint64) { got = append(got, pt{int(tm.Sub(ringT0) / time.Second), v}) })
	// Recent: samples 30..39. Older: the maxima of the four finished steps
	// [5,10) to [20,25) (the spike at 22), then of [25,30), being filled;
	// the oldest step is gone.
	want := []pt{{9, 9}, {14, 14}, {19, 19}, {22, 1000}, {29, 29}}
	for i := 30; i < pushes; i++ {
		want = append(want, pt{i, uint64(i)})
	}
	if len(got) != len(want) {
		t.Fatalf("window %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("window %v, want %v", got, want)
		}
	}
	if w.Max() != 1000 {
		t.Fatalf("Max %d, want the spike's 1000 after it left the recent samples", w.Max())
	}
	// Since counts older samples by the time they were taken.
	if s := w.Since(ringAt(20)); s.Len() != 12 || !s.First().Equal(ringAt(22)) {
		t.Fatalf("Since(20 s): %d samples from %v, want 12 from %v", s.Len(), s.First(), ringAt(22))
	}
	if s := w.Since(ringAt(33)); s.Len() != 7 || s.Max() != 39 {
		t.Fatalf("Since(33 s): %d samples, max %d; want 7, 39", s.Len(), s.Max())
	}
	// Columns wider than a step keep the peak.
	b := w.Buckets(ringAt(10), ringAt(40), 3)
	if b[1] != 1000 || b[0] != 19 || b[2] != 39 {
		t.Fatalf("buckets %v, want [19 1000 39]", b)
	}
}

// TestTieredWindowIsUnchangedByLaterPushes: the step being filled is
// published by value, so a held window does not see it grow.
func TestTieredWindowIsUnchangedByLaterPushes(t *testing.T) {
	r := NewTieredRing(3, 10*time.Second, 50)
	for i := range 5 {
		r.Push(ringAt(i), uint64(i))
	}
	w := r.Window()
	before := windowValues(w)
	for i := 5; i < 600; i++ {
		r.Push(ringAt(i), uint64(1000+i))
	}
	if after := windowValues(w); !slices.Equal(before, after) {
		t.Fatalf("held window changed from %v to %v", before, after)
	}
	if r.Window().Len() != r.Cap() {
		t.Fatalf("full ring: window %d samples, cap %d", r.Window().Len(), r.Cap())
	}
}

func TestTieredRingForCoversTheHistory(t *testing.T) {
	tests := []struct {
		history, interval, recent time.Duration
		buckets                   int
		step                      time.Duration
		max                       int
	}{
		{time.Hour, MinInterval, 10 * time.Minute, 600, 5 * time.Second, 12000 + 1 + 600},
		{time.Hour, time.Second, ProcessRecentHistory, ProcessHistoryBuckets, 25 * time.Second, 600 + 1 + 120},
		// No longer than the recent span: every sample.
		{time.Minute, time.Second, 2 * time.Minute, 120, 0, 60},
	}
	for _, tt := range tests {
		r := TieredRingFor(tt.history, tt.interval, tt.recent, tt.buckets)
		if r.Step() != tt.step || r.Cap() != tt.max {
			t.Errorf("%v at %v: step %v, cap %d; want %v, %d", tt.history, tt.interval, r.Step(), r.Cap(), tt.step, tt.max)
		}
		covered := time.Duration(r.recent.capacity)*tt.interval + time.Duration(r.old.capacity)*r.Step()
		if covered < tt.history {
			t.Errorf("%v at %v: covers %v", tt.history, tt.interval, covered)
		}
	}
}

// Cap returns the most samples the ring holds.
func (r *Ring) Cap() int {
	if r.step == 0 {
		return r.recent.capacity
	}
	return r.recent.capacity + 1 + r.old.capacity
}

// Len returns the number of samples held.
func (r *Ring) Len() int { return r.old.n + b2i(r.hasPend) + r.recent.n }

// Step returns the time each older sample of a tiered ring stands for; 0
// when every sample is kept.
func (r *Ring) Step() time.Duration { return time.Duration(r.step) }
