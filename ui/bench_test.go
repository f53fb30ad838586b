package ui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/common"
)

// benchModel is the view of 8 GPUs with 100 processes each, ten minutes
// of history at 1 s.
func benchModel(b *testing.B, w, h int) (*Model, sampler.Snapshot) {
	b.Helper()
	snap := fixture(b, &fakeSource{start: fixedStart, ngpu: 8, nprocs: 100}, 10*time.Minute)
	m, _ := newTestModel(Options{})
	m.setStyles(common.NewStyles(true, false))
	send(m, tea.WindowSizeMsg{Width: w, Height: h}, snapshotMsg(snap))
	return m, snap
}

// BenchmarkView8x100 builds one frame: what each snapshot, key or resize
// costs in View.
func BenchmarkView8x100(b *testing.B) {
	for _, sz := range [][2]int{{120, 40}, {250, 70}} {
		b.Run(sizeName(sz), func(b *testing.B) {
			m, _ := benchModel(b, sz[0], sz[1])
			b.ReportAllocs()
			for b.Loop() {
				_ = m.render() // View keeps the last frame; build a new one
			}
		})
	}
}

// BenchmarkDetailView8x100 builds one frame of a GPU's detail screen: the
// large plot (most of the screen) and the advice under it.
func BenchmarkDetailView8x100(b *testing.B) {
	for _, sz := range [][2]int{{120, 40}, {250, 70}} {
		b.Run(sizeName(sz), func(b *testing.B) {
			m, _ := benchModel(b, sz[0], sz[1])
			keys(m, "enter")
			if m.screen != screenDetail {
				b.Fatal("enter did not open the detail")
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.render()
			}
		})
	}
}

// BenchmarkSnapshot8x100 is the cost of taking in a snapshot (rows rebuilt,
// sorted, laid out) plus the frame it causes.
func BenchmarkSnapshot8x100(b *testing.B) {
	m, snap := benchModel(b, 120, 40)
	b.ReportAllocs()
	for b.Loop() {
		m.Update(snapshotMsg(snap))
		_ = m.View()
	}
}

func sizeName(sz [2]int) string {
	return itoa(sz[0]) + "x" + itoa(sz[1])
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// BenchmarkFrame1GPU is one second of the live view at 200x60 over one GPU
// with its few processes: a snapshot taken in and its frame built ("view"),
// and then also drawn by Bubble Tea's renderer, ultraviolet, into its cell
// buffer, compared with the last frame and the difference written ("frame",
// the whole cost of a frame on the terminal's side).
func BenchmarkFrame1GPU(b *testing.B) {
	for _, draw := range []bool{false, true} {
		name := "view"
		if draw {
			name = "frame"
		}
		b.Run(name, func(b *testing.B) {
			s, err := sampler.New(&fakeSource{start: fixedStart, ngpu: 1}, sampler.Config{Interval: time.Second, History: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			t := fixedStart
			var snap sampler.Snapshot
			for ; t.Before(fixedStart.Add(10 * time.Minute)); t = t.Add(time.Second) {
				if sn, ok := s.Tick(t); ok {
					snap = sn
				}
			}
			m, _ := newTestModel(Options{Now: func() time.Time { return t }})
			m.setStyles(common.NewStyles(true, false))
			send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, snapshotMsg(snap))
			screen := newOffScreen(200, 60)
			frame := func() {
				content := m.View().Content
				if draw {
					screen.draw(content)
				}
			}
			frame()
			b.ReportAllocs()
			for b.Loop() {
				t = t.Add(time.Second)
				if sn, ok := s.Tick(t); ok {
					m.Update(snapshotMsg(sn))
				}
				frame()
			}
		})
	}
}
