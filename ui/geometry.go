package ui

// geometry is where the view lies on the terminal: its size, and the lines
// of the main screen's panes, which is where a click lands.
type geometry struct {
	width, height int
	bodyTop       int // the line where the body starts, under the header and banners
	gpuH          int // the GPU pane's height at the body's top; the process table is under it
}

// resize takes the terminal's size.
func (g *geometry) resize(w, h int) { g.width, g.height = w, h }

// body lays the body out between the lines above it (the header and the
// banners) and below it (the footer), the GPU pane not yet placed; it
// returns the body's height.
func (g *geometry) body(above, below int) int {
	b := max(g.height-above-below, 0)
	g.bodyTop, g.gpuH = g.height-below-b, 0
	return b
}

// split gives the GPU pane the body's first h lines.
func (g *geometry) split(h int) { g.gpuH = h }

// fits reports whether the terminal is at least w×h.
func (g geometry) fits(w, h int) bool { return g.width >= w && g.height >= h }

// at is the pane of the main screen that terminal line y falls on and the
// line within it; ok is false above the body.
func (g geometry) at(y int) (p pane, line int, ok bool) {
	y -= g.bodyTop
	switch {
	case y < 0:
		return 0, 0, false
	case y < g.gpuH:
		return paneGPUs, y, true
	}
	return paneProcs, y - g.gpuH, true
}
