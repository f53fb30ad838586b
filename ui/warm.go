package ui

import (
	"io"
	"time"

	tea "charm.land/bubbletea/v2"
	uv "github.com/charmbracelet/ultraviolet"

	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
)

// Warm draws one frame of the live view off screen, over the demo's GPUs,
// and throws it away. The first frame a program draws costs far more than
// the ones after it (code paged in for the first time, go-runewidth's
// width table built, the renderer's buffers allocated): on the development
// machine the demo's first frame reached the screen 12 ms after it was
// built (NEEDLE=H100 ARGS=--demo python3 bench/gpu/startup.py ./vramtop
// out/ 8 0; the demo draws no warm-up frame, its source opens at once),
// where a later frame takes about 2 ms (BenchmarkFrame1GPU/frame). Run
// while the GPU driver opens, in parallel, much of that no longer comes
// after the first sample: in a test build whose source took 19 ms more to
// open, the demo's first frame came 8 ms sooner with the warm-up.
func Warm() {
	const w, h = 120, 40
	now := time.Now()
	s, err := sampler.New(demo.NewGPUs(now, 1), sampler.Config{})
	if err != nil {
		return
	}
	snap, _ := s.Tick(now)
	s.Close()
	m := New(nil, Options{Now: func() time.Time { return now }})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(snapshotMsg(snap))
	newOffScreen(w, h).draw(m.View().Content)
}

// offScreen draws frames as Bubble Tea's renderer does (the frame parsed
// into cells, diffed against the last, written out), to nowhere.
type offScreen struct {
	scr *uv.TerminalRenderer
	buf uv.ScreenBuffer
}

func newOffScreen(w, h int) offScreen {
	scr := uv.NewTerminalRenderer(io.Discard, []string{"TERM=xterm-256color"})
	scr.SetFullscreen(true)
	scr.Resize(w, h)
	return offScreen{scr: scr, buf: uv.NewScreenBuffer(w, h)}
}

func (o offScreen) draw(content string) {
	o.buf.Clear()
	uv.NewStyledString(content).Draw(o.buf, o.buf.Bounds())
	o.scr.Render(o.buf.RenderBuffer)
	_ = o.scr.Flush()
}
