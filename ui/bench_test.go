package ui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/sampler"
)

// benchModel is the view of 8 GPUs with 100 processes each, ten minutes
// of history at 1 s.
func benchModel(b *testing.B, w, h int) (*Model, sampler.Snapshot) {
	b.Helper()
	snap := fixture(b, &fakeSource{start: fixedStart, ngpu: 8, nprocs: 100}, 10*time.Minute)
	m, _ := newTestModel(Options{})
	m.setStyles(NewStyles(true, false))
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
