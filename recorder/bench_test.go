package recorder_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/internal/recsynth"
	"github.com/vramtop/vramtop/sampler"
)

// BenchmarkRecordingSize records a stretch of a source with a fake clock
// and reports the recording's size per recorded second and per hour, and
// the cost of one snapshot line (ns/op and B/op are per recorded stretch).
//
//	go test -run '^$' -bench RecordingSize -benchmem ./recorder
func BenchmarkRecordingSize(b *testing.B) {
	t0 := time.Date(2026, 3, 14, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		src      func() sampler.Source
		interval time.Duration
		span     time.Duration
	}{
		{"demo-5GPUs-1s-1h", func() sampler.Source { return demo.New(t0) }, time.Second, time.Hour},
		{"demo-5GPUs-50ms-10m", func() sampler.Source { return demo.New(t0) }, 50 * time.Millisecond, 10 * time.Minute},
		{"8x100-steps10m-1s-1h", func() sampler.Source { return recsynth.New(8, 100, t0, 10*time.Minute) }, time.Second, time.Hour},
		{"8x100-steps1h-1s-1h", func() sampler.Source { return recsynth.New(8, 100, t0, time.Hour) }, time.Second, time.Hour},
		{"8x100-steps10m-50ms-10m", func() sampler.Source { return recsynth.New(8, 100, t0, 10*time.Minute) }, 50 * time.Millisecond, 10 * time.Minute},
	} {
		b.Run(c.name, func(b *testing.B) {
			for _, ext := range []string{".jsonl", ".jsonl.gz"} {
				b.Run(ext[1:], func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "rec"+ext)
					var size int64
					var lines int
					for b.Loop() {
						os.Remove(path)
						n, err := recsynth.Record(path, c.src(), t0, c.interval, sampler.DefaultHistory, c.span)
						if err != nil {
							b.Fatal(err)
						}
						st, err := os.Stat(path)
						if err != nil {
							b.Fatal(err)
						}
						size, lines = st.Size(), n
					}
					b.ReportMetric(float64(size)/c.span.Seconds(), "B/s")
					b.ReportMetric(float64(size)/c.span.Hours()/1e6, "MB/h")
					b.ReportMetric(float64(size)/float64(lines), "B/line")
				})
			}
		})
	}
}
