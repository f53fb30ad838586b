package state

// Geometry is where the view lies on the terminal: its size, and the lines
// of the main screen's panes, which is where a click lands.
type Geometry struct {
	width, height int
	bodyTop       int // the line where the body starts, under the header and banners
	gpuH          int // the GPU pane's height at the body's top; the process table is under it
}

// Resize takes the terminal's size.
func (g *Geometry) Resize(w, h int) { g.width, g.height = w, h }

// Width is the terminal's width.
func (g Geometry) Width() int { return g.width }

// Height is the terminal's height.
func (g Geometry) Height() int { return g.height }

// Body lays the body out between the lines above it (the header and the
// banners) and below it (the footer), the GPU pane not yet placed; it
// returns the body's height.
func (g *Geometry) Body(above, below int) int {
	b := max(g.height-above-below, 0)
	g.bodyTop, g.gpuH = g.height-below-b, 0
	return b
}

// Split gives the GPU pane the body's first h lines.
func (g *Geometry) Split(h int) { g.gpuH = h }

// Fits reports whether the terminal is at least w×h.
func (g Geometry) Fits(w, h int) bool { return g.width >= w && g.height >= h }

// At is the pane of the main screen that terminal line y falls on (gpus:
// the GPU pane, else the process table under it) and the line within it;
// ok is false above the body.
func (g Geometry) At(y int) (gpus bool, line int, ok bool) {
	y -= g.bodyTop
	switch {
	case y < 0:
		return false, 0, false
	case y < g.gpuH:
		return true, y, true
	}
	return false, y - g.gpuH, true
}
