package ui

import "testing"

// A click lands on the pane under it: nothing above the body, the GPU pane
// for its lines, the process table for the rest, each counted from its top.
func TestGeometryWhereAClickLands(t *testing.T) {
	g := geometry{width: 100, height: 30, bodyTop: 3, gpuH: 5}
	cases := []struct {
		y, line int
		p       pane
		ok      bool
	}{
		{0, 0, 0, false}, {2, 0, 0, false},
		{3, 0, paneGPUs, true}, {7, 4, paneGPUs, true},
		{8, 0, paneProcs, true}, {29, 21, paneProcs, true},
	}
	for _, c := range cases {
		p, line, ok := g.at(c.y)
		if ok != c.ok || ok && (p != c.p || line != c.line) {
			t.Errorf("line %d: pane %v line %d ok %v, want %v %d %v", c.y, p, line, ok, c.p, c.line, c.ok)
		}
	}
	var laid geometry
	laid.resize(100, 30)
	if b := laid.body(4, 1); b != 25 || laid.bodyTop != 4 || laid.gpuH != 0 {
		t.Errorf("a header and banners of 4 lines, a footer of 1: body %d from line %d", b, laid.bodyTop)
	}
	laid.split(5)
	if p, line, ok := laid.at(9); !ok || p != paneProcs || line != 0 {
		t.Errorf("the line under a GPU pane of 5: pane %v line %d", p, line)
	}
	if b := laid.body(20, 15); b != 0 || laid.gpuH != 0 {
		t.Errorf("no room: body %d, GPU pane %d", b, laid.gpuH)
	}
	if !g.fits(100, 30) || g.fits(101, 30) || g.fits(100, 31) {
		t.Error("fits: 100×30 is exactly its size")
	}
}
