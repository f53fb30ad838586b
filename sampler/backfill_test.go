package sampler

import (
	"testing"
	"time"
)

// backfillSource is one device with a known past.
type backfillSource struct {
	past  []time.Time
	pastV []uint64
	asked []string
}

func (b *backfillSource) Info() SourceInfo {
	return SourceInfo{Kind: "fleet", Devices: []DeviceInfo{{ID: "h:0", Hostname: "h"}}}
}
func (b *backfillSource) ReadMemory(now time.Time, out []MemSample) error {
	out[0] = MemSample{Total: 100, Used: 40, Free: 60}
	return nil
}
func (b *backfillSource) ReadProcesses(now time.Time, buf []ProcSample, errs []error) ([]ProcSample, error) {
	return buf[:0], nil
}
func (b *backfillSource) ReadProcessUtilization(time.Time, map[UtilKey]float64) error { return nil }
func (b *backfillSource) Close() error                                                { return nil }
func (b *backfillSource) Backfill(id string) ([]time.Time, []uint64) {
	b.asked = append(b.asked, id)
	return b.past, b.pastV
}

func TestBackfillSeedsHistory(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	src := &backfillSource{}
	for i := range 5 {
		src.past = append(src.past, start.Add(time.Duration(i-5)*time.Minute))
		src.pastV = append(src.pastV, uint64(10*(i+1)))
	}
	// Four samples of history fit: the oldest backfilled one is dropped.
	s, err := New(src, Config{Interval: time.Minute, History: 4 * time.Minute, Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Once()
	h := snap.Devices[0].History
	if h.Len() != 4 {
		t.Fatalf("history holds %d samples, want 4 (3 backfilled, 1 sampled)", h.Len())
	}
	var got []uint64
	h.Each(func(_ time.Time, v uint64) { got = append(got, v) })
	want := []uint64{30, 40, 50, 40}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("history %v, want %v", got, want)
		}
	}
	if snap.Devices[0].PeakUsed != 50 {
		t.Errorf("peak %d, want the backfilled 50", snap.Devices[0].PeakUsed)
	}
	s.Tick(start.Add(time.Minute))
	if len(src.asked) != 1 {
		t.Errorf("Backfill asked %d times for a device already known, want once", len(src.asked))
	}
}
