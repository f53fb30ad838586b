package advisor

import (
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// fitMaxPoints caps the samples a fit reads: a 10-minute window at 50 ms is
// 12,000 samples; one every 5 s of them describes a trend as well.
const fitMaxPoints = 128

// lineFit is a least-squares line through a window's samples.
type lineFit struct {
	slope float64 // bytes per second
	r2    float64 // goodness of fit; 0 for a flat series
	n     int     // samples used
	span  time.Duration
}

// fitLine fits used = a + slope·t over w, reading at most maxPoints
// (≤ fitMaxPoints) samples, evenly spaced, the newest always included.
func fitLine(w sampler.Window, maxPoints int) lineFit {
	n := w.Len()
	if n < 2 {
		return lineFit{n: n}
	}
	maxPoints = max(2, min(maxPoints, fitMaxPoints))
	stride := 1
	if n > maxPoints {
		stride = (n + maxPoints - 2) / (maxPoints - 1)
	}
	// One pass reads the points; the sums are then centred on the means,
	// so a small trend on a large level keeps its precision.
	var xs, ys [fitMaxPoints]float64
	t0, v0 := w.At(0)
	var tl time.Time
	m := 0
	var mx, my float64
	for i := 0; m < fitMaxPoints; i += stride {
		if i > n-1 {
			i = n - 1
		}
		t, v := w.At(i)
		xs[m], ys[m] = t.Sub(t0).Seconds(), float64(v)-float64(v0)
		mx += xs[m]
		my += ys[m]
		m++
		tl = t
		if i == n-1 {
			break
		}
	}
	mx /= float64(m)
	my /= float64(m)
	var sxx, syy, sxy float64
	for k := 0; k < m; k++ {
		dx, dy := xs[k]-mx, ys[k]-my
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	f := lineFit{n: m, span: tl.Sub(t0)}
	if sxx == 0 {
		return f
	}
	f.slope = sxy / sxx
	if syy > 0 {
		f.r2 = sxy * sxy / (sxx * syy)
	}
	return f
}

// growthShape reads w and reports whether it never drops (flat stretches
// are fine) and in how many of the four quarters of [from, to] it rises.
func growthShape(w sampler.Window, from, to time.Time) (quartersRising int, monotone bool) {
	span := to.Sub(from)
	if span <= 0 || w.Len() == 0 {
		return 0, false
	}
	var rose [4]bool
	_, prev := w.At(0)
	for i := 1; i < w.Len(); i++ {
		t, v := w.At(i)
		if v < prev {
			return 0, false
		}
		if v > prev {
			q := int(4 * t.Sub(from) / span)
			q = max(0, min(q, 3))
			rose[q] = true
		}
		prev = v
	}
	for _, r := range rose {
		if r {
			quartersRising++
		}
	}
	return quartersRising, true
}
