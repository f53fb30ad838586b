package state

import "testing"

// A click lands on the pane under it: nothing above the body, the GPU pane
// for its lines, the process table for the rest, each counted from its top.
func TestGeometryWhereAClickLands(t *testing.T) {
	g := Geometry{width: 100, height: 30, bodyTop: 3, gpuH: 5}
	cases := []struct {
		y, line int
		gpus    bool // the GPU pane, else the process table
		ok      bool
	}{
		{0, 0, false, false}, {2, 0, false, false},
		{3, 0, true, true}, {7, 4, true, true},
		{8, 0, false, true}, {29, 21, false, true},
	}
	for _, c := range cases {
		gpus, line, ok := g.At(c.y)
		if ok != c.ok || ok && (gpus != c.gpus || line != c.line) {
			t.Errorf("line %d: GPU pane %v line %d ok %v, want %v %d %v", c.y, gpus, line, ok, c.gpus, c.line, c.ok)
		}
	}
	var laid Geometry
	laid.Resize(100, 30)
	if b := laid.Body(4, 1); b != 25 || laid.bodyTop != 4 || laid.gpuH != 0 {
		t.Errorf("a header and banners of 4 lines, a footer of 1: body %d from line %d", b, laid.bodyTop)
	}
	laid.Split(5)
	if gpus, line, ok := laid.At(9); !ok || gpus || line != 0 {
		t.Errorf("the line under a GPU pane of 5: GPU pane %v line %d", gpus, line)
	}
	if b := laid.Body(20, 15); b != 0 || laid.gpuH != 0 {
		t.Errorf("no room: body %d, GPU pane %d", b, laid.gpuH)
	}
	if !g.Fits(100, 30) || g.Fits(101, 30) || g.Fits(100, 31) {
		t.Error("fits: 100×30 is exactly its size")
	}
}
