package ui

import (
	"cmp"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
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
// Bubble Tea makes after each message, brings the next tick forward to
// within tickEvery (soon, after the user's input), no sooner than minFrame
// after the last frame. The ticker then ticks once more, about tickEvery
// later, and goes back to idle.
//
// Each wake-up costs a process more than the work it does: 62-131 µs of CPU
// for a Go ticker's tick against 36 µs for a C program's nanosleep on the
// H200 host, 135-216 µs against 54 µs on the development machine (go run
// ./bench/wakeup). So a frame gets two ticks and one timer, where it had
// six wake-ups.
const (
	// minFrame is the shortest time between two frames (60 a second).
	minFrame = time.Second / 60
	// idleTick is how often the renderer looks while nothing happens: a
	// safety net, since every change comes through View.
	idleTick = time.Second
	// tickEvery is how soon a frame asked for is drawn, and how long after
	// that the ticker ticks once more: for a frame whose View came while
	// the renderer was drawing the one before (Bubble Tea stores the new
	// frame only once that draw is done, so the first tick finds the old
	// one), and for a tick the renderer never took (resetting a ticker drops
	// a tick not yet received).
	tickEvery = 4 * time.Millisecond
	// soon is the first frame with data's tick, every millisecond until
	// firstFor has passed: at start-up the renderer is often still drawing
	// the empty frame when the data comes (its first draw is the slowest).
	soon     = time.Millisecond
	firstFor = 16 * time.Millisecond
	// retries is how many more rounds of ticks a frame gets while nothing
	// has been written since it was asked for.
	retries = 5
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
	// shownData is set once a frame with data has been asked for, shownAll
	// once one with the process lists too.
	shownData, shownAll bool
	// asked is the content of the last frame asked for (read and written
	// on Bubble Tea's event loop only).
	asked string
	// input is set by Update when the message was the user's (a key, the
	// mouse, a paste): its frame is drawn within soon, not tickEvery (read
	// and written on Bubble Tea's event loop only).
	input bool
	// out counts the program's writes; nil where the program writes
	// elsewhere (tests). askedAt is its count when the last frame was asked
	// for, tries the rounds of ticks that frame has had.
	out     *output
	askedAt uint64
	tries   int
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
// has started its renderer): the frame it returns is drawn within
// tickEvery, or at minFrame after the previous one. data says the frame
// shows data, all that it shows the process lists too: the first frame of
// each kind is never held back (the one before it is the empty frame drawn
// at start, or the devices' memory alone, a few milliseconds earlier: with
// 100 processes on the H200 host the process table reached the screen 14 ms
// after its lists were published, held back by minFrame, in
// bench/gpu/startup.py).
func (pc *pacer) frame(data, all bool) {
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
	first := data && !pc.shownData || all && !pc.shownAll
	pc.shownData, pc.shownAll = pc.shownData || data, pc.shownAll || all
	base := tickEvery
	if pc.input {
		// The user is waiting: a few ticks more are worth it.
		base, pc.input = soon, false
	}
	now := time.Now()
	wait, ok := pc.wait(now, first, base)
	if !ok {
		return // a tick is already on its way
	}
	pc.next = now.Add(wait)
	pc.ticker.Reset(wait)
	if pc.out != nil {
		pc.askedAt = pc.out.writes.Load()
	}
	pc.tries = 0
	// The ticker ticks every wait from now: once for the frame, once more
	// for a frame that missed it; then back to idle.
	after := 2*max(wait, tickEvery) + time.Millisecond
	if first {
		after = firstFor
	}
	if pc.settle == nil {
		pc.settle = time.AfterFunc(after, pc.idle)
	} else {
		pc.settle.Reset(after)
	}
}

// wait is how long from now the next frame's tick is set (base, or later
// to keep minFrame), and ok false where a tick set earlier will draw it.
func (pc *pacer) wait(now time.Time, first bool, base time.Duration) (wait time.Duration, ok bool) {
	if first {
		return soon, true
	}
	if now.Before(pc.next) {
		return 0, false
	}
	wait = base
	if earliest := pc.next.Add(minFrame); now.Add(wait).Before(earliest) {
		wait = earliest.Sub(now)
	}
	return wait, true
}

// idle sets the ticker back to its slow safety-net rate once the frame
// asked for has been written; while nothing has been (its ticks were all
// dropped, or the renderer has not run), it gives the frame another round
// of ticks, retries times at most.
func (pc *pacer) idle() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.ticker == nil || pc.disabled {
		return
	}
	if pc.out != nil && pc.out.writes.Load() == pc.askedAt && pc.tries < retries {
		pc.tries++
		pc.ticker.Reset(tickEvery)
		pc.settle.Reset(2*tickEvery + time.Millisecond)
		return
	}
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

// output is the terminal as Bubble Tea writes to it, counted: the pacer
// tells from it whether the frame it asked for has been written.
type output struct {
	*os.File
	writes atomic.Uint64
}

func (o *output) Write(p []byte) (int, error) {
	o.writes.Add(1)
	return o.File.Write(p)
}

// paced is the live view under a pacer.
type paced struct {
	*Model
	pc *pacer
}

func (p paced) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg.(type) {
	case tea.KeyPressMsg, tea.MouseMsg, tea.PasteMsg:
		p.pc.input = true
	}
	m, cmd := p.Model.Update(msg)
	if mm, ok := m.(*Model); ok {
		p.Model = mm
		return p, cmd
	}
	return m, cmd
}

func (p paced) View() tea.View {
	v := p.Model.View()
	if p.Model.on.Have() {
		starttrace.Mark("frame-with-data")
	}
	// A frame the renderer already has needs no tick (a message that
	// changed nothing, such as a stale check overtaken by a snapshot).
	if v.Content != p.pc.asked {
		p.pc.asked = v.Content
		p.pc.frame(p.Model.on.Have(), p.Model.on.Have() && !p.Model.on.Shown().snap.ProcessesPending)
	}
	return v
}
