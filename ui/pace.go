package ui

import (
	"cmp"
	"reflect"
	"sync"
	"time"
	"unsafe"

	tea "charm.land/bubbletea/v2"
	"github.com/vramtop/vramtop/internal/starttrace"
)

// Bubble Tea v2's renderer draws on a ticker that runs at a fixed rate for
// the program's whole life, whether or not a frame changed: an idle live view
// then wakes 20 times a second to compare frames (most of its idle CPU), and
// a key press waits for the next tick (up to 50 ms at 20 FPS, about 50 ms
// measured). Bubble Tea has no option for drawing on demand yet (its pull
// requests #1776 and #1796 propose one), so the pacer drives that ticker: it
// stays at idleTick while nothing happens, and every call of View, which
// Bubble Tea makes after each message, brings the next tick forward to now,
// no sooner than minFrame after the last. A key, a snapshot or a resize is
// on screen within about a millisecond of its Update, at most 1/minFrame
// times a second.
const (
	// minFrame is the shortest time between two frames (60 a second).
	minFrame = time.Second / 60
	// idleTick is how often the renderer looks while nothing happens: a
	// safety net, since every change comes through View.
	idleTick = time.Second
	// soon is how far ahead a brought-forward tick is set; the ticker goes
	// back to idleTick once it has fired, by way of a few graceTick ticks.
	soon = time.Millisecond
	// graceTick and graceTicks: after the brought-forward tick, the ticker
	// runs at graceTick for graceTicks ticks before it goes idle. Resetting
	// a ticker drops a tick not yet received, so going idle right after the
	// brought-forward tick lost the frame whenever the renderer's goroutine
	// had not run in that millisecond: it came with the idle tick a second
	// later (one of five starts in a run of bench/gpu/watch.py on the H200
	// host, one of three of the demo on the development machine).
	graceTick  = 10 * time.Millisecond
	graceTicks = 3
)

// pacer holds Bubble Tea's renderer ticker.
type pacer struct {
	// idleEvery is the idle rate; idleTick when 0.
	idleEvery time.Duration

	mu       sync.Mutex
	prog     *tea.Program
	ticker   *time.Ticker
	tried    bool
	next     time.Time // when the brought-forward tick fires
	settle   *time.Timer
	disabled bool
	idled    int // times the ticker went back to idle, for tests
	// shownData is set once a frame with data has been asked for.
	shownData bool
	// grace is set while the ticker runs at graceTick.
	grace bool
	// asked is the content of the last frame asked for (read and written
	// on Bubble Tea's event loop only).
	asked string
}

// rendererTicker returns the ticker the running program p draws on, or nil
// where this version of Bubble Tea keeps none under that name (then frames
// come at the fixed rate, as without the pacer).
func rendererTicker(p *tea.Program) *time.Ticker {
	f := reflect.ValueOf(p).Elem().FieldByName("ticker")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*time.Ticker]() {
		return nil
	}
	return *(**time.Ticker)(unsafe.Pointer(f.UnsafeAddr()))
}

// frame is called from View (on Bubble Tea's event loop, after the program
// has started its renderer): the frame it returns is drawn within soon, or at
// minFrame after the previous one. data says the frame shows data: the first
// such frame is never held back (the frame before it is the empty one drawn
// at start, a few milliseconds earlier).
func (pc *pacer) frame(data bool) {
	if pc == nil || pc.prog == nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.disabled {
		return
	}
	if pc.ticker == nil {
		if pc.tried {
			return
		}
		pc.tried = true
		if pc.ticker = rendererTicker(pc.prog); pc.ticker == nil {
			pc.disabled = true
			return
		}
	}
	first := data && !pc.shownData
	pc.shownData = pc.shownData || data
	now := time.Now()
	wait, ok := pc.wait(now, first)
	if !ok {
		return // a tick is already on its way
	}
	pc.next = now.Add(wait)
	pc.ticker.Reset(wait)
	// Once that tick has fired, back to idle by way of the grace ticks.
	pc.grace = false
	if pc.settle == nil {
		pc.settle = time.AfterFunc(wait+soon, pc.idle)
	} else {
		pc.settle.Reset(wait + soon)
	}
}

// wait is how long from now the next frame's tick is set, and ok false
// where a tick set earlier will draw it.
func (pc *pacer) wait(now time.Time, first bool) (wait time.Duration, ok bool) {
	if first {
		return soon, true
	}
	if now.Before(pc.next) {
		return 0, false
	}
	wait = soon
	if earliest := pc.next.Add(minFrame); now.Add(wait).Before(earliest) {
		wait = earliest.Sub(now)
	}
	return wait, true
}

// idle sets the ticker to the grace rate, and after the grace ticks back to
// its slow safety-net rate.
func (pc *pacer) idle() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.ticker == nil || pc.disabled {
		return
	}
	if !pc.grace {
		pc.grace = true
		pc.ticker.Reset(graceTick)
		pc.settle.Reset(graceTick*graceTicks + soon)
		return
	}
	pc.grace = false
	pc.ticker.Reset(cmp.Or(pc.idleEvery, idleTick))
	pc.idled++
}

// stop leaves the ticker alone from now on (the program is ending).
func (pc *pacer) stop() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.disabled = true
	if pc.settle != nil {
		pc.settle.Stop()
	}
}

// paced is the live view under a pacer.
type paced struct {
	*Model
	pc *pacer
}

func (p paced) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.Model.Update(msg)
	if mm, ok := m.(*Model); ok {
		p.Model = mm
		return p, cmd
	}
	return m, cmd
}

func (p paced) View() tea.View {
	v := p.Model.View()
	if p.Model.have {
		starttrace.Mark("frame-with-data")
	}
	// A frame the renderer already has needs no tick (a message that
	// changed nothing, such as a stale check overtaken by a snapshot).
	if v.Content != p.pc.asked {
		p.pc.asked = v.Content
		p.pc.frame(p.Model.have)
	}
	return v
}
