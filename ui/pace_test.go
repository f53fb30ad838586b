package ui

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// syncBuf is an output that a test can read while the program writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
	w  chan struct{}
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.w <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type pacedProbe struct {
	text string
	pc   *pacer
}

func (m *pacedProbe) Init() tea.Cmd { return nil }
func (m *pacedProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if s, ok := msg.(string); ok {
		m.text = s
	}
	return m, nil
}
func (m *pacedProbe) View() tea.View {
	m.pc.frame(false, false)
	v := tea.NewView(m.text)
	v.AltScreen = true
	return v
}

// The pacer finds the ticker this version of Bubble Tea draws on (else
// frames would wait for a fixed-rate tick again), and a changed frame is
// written long before the idle tick would have drawn it.
func TestPacerDrawsOnDemand(t *testing.T) {
	out := &syncBuf{w: make(chan struct{}, 1)}
	// A long idle rate, so that a frame that waited for it cannot pass for
	// one drawn on demand, however loaded the machine.
	pc := &pacer{idleEvery: time.Minute}
	m := &pacedProbe{text: "first", pc: pc}
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(out), tea.WithWindowSize(40, 5), tea.WithFPS(maxFPS))
	pc.prog = p
	done := make(chan struct{})
	go func() { p.Run(); close(done) }()
	defer func() { p.Quit(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for !bytes.Contains([]byte(out.String()), []byte("first")) {
		if time.Now().After(deadline) {
			t.Fatalf("the first frame never came: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	pc.mu.Lock()
	found, disabled := pc.ticker != nil, pc.disabled
	pc.mu.Unlock()
	if !found || disabled {
		t.Fatal("the pacer did not find Bubble Tea's renderer ticker: frames are drawn at the fixed rate again (see pace.go)")
	}
	// Let the pacer go idle (its ticker at once a minute), then change the
	// frame: it must not wait for that tick.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		pc.mu.Lock()
		idled := pc.idled
		pc.mu.Unlock()
		if idled > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pacer never set the renderer's ticker back to idle")
		}
	}
	sent := time.Now()
	p.Send("second")
	for !bytes.Contains([]byte(out.String()), []byte("second")) {
		if time.Since(sent) > 10*time.Second {
			t.Fatalf("a changed frame waited for the idle tick (%v)", pc.idleEvery)
		}
		time.Sleep(time.Millisecond)
	}
}

// Frames come at most every minFrame, but the first one with data is not
// held back behind the empty frame drawn at start.
func TestPacerFirstDataFrameIsNotHeldBack(t *testing.T) {
	t0 := time.Now()
	pc := &pacer{next: t0} // a frame was drawn at t0
	at := t0.Add(5 * time.Millisecond)
	if w, ok := pc.wait(at, false, tickEvery); !ok || w < minFrame-6*time.Millisecond {
		t.Fatalf("a frame 5 ms after the last waits %v (ok %v), want until minFrame after it", w, ok)
	}
	if w, ok := pc.wait(at, true, tickEvery); !ok || w != soon {
		t.Fatalf("the first frame with data waits %v (ok %v), want %v", w, ok, soon)
	}
	if _, ok := pc.wait(t0.Add(-time.Millisecond), false, tickEvery); ok {
		t.Fatal("a frame asked for before the tick already set should ride on it")
	}
}

// A frame asked for but not written (its ticks dropped, or the renderer not
// yet running) gets more ticks rather than waiting for the idle one; once
// something has been written the ticker goes back to idle.
func TestPacerTicksAgainUntilTheFrameIsWritten(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pc := &pacer{idleEvery: time.Minute, out: &output{File: f}}
	pc.ticker = time.NewTicker(time.Minute)
	defer pc.ticker.Stop()
	pc.settle = time.AfterFunc(time.Hour, func() {})
	defer pc.settle.Stop()
	pc.askedAt = pc.out.writes.Load()
	for i := 0; i < retries; i++ {
		pc.idle()
		if pc.idled != 0 {
			t.Fatalf("went idle after %d rounds with nothing written", i+1)
		}
	}
	pc.idle()
	if pc.idled != 1 {
		t.Fatalf("still ticking after %d rounds: a frame that writes nothing must not tick for ever", retries+1)
	}
	pc.idled, pc.tries = 0, 0
	fmt.Fprint(pc.out, "frame")
	pc.idle()
	if pc.idled != 1 {
		t.Fatal("the frame was written, but the ticker did not go back to idle")
	}
}

// tickingPacer is pc over a program that never runs, holding a ticker of
// its own at a minute (the idle rate), stopped when the test ends.
func tickingPacer(t *testing.T, pc *pacer) *pacer {
	pc.prog = tea.NewProgram(&pacedProbe{}, tea.WithInput(nil), tea.WithOutput(io.Discard))
	pc.idleEvery, pc.tried = time.Minute, true
	pc.ticker = time.NewTicker(time.Minute)
	t.Cleanup(func() {
		pc.stop()
		pc.ticker.Stop()
	})
	return pc
}

// The first frame with the process lists is not held back behind the one
// with the devices' memory alone either; later frames are.
func TestPacerFirstFullFrameIsNotHeldBack(t *testing.T) {
	pc := tickingPacer(t, &pacer{})
	pc.frame(true, false) // memory only
	time.Sleep(2 * soon)
	pc.frame(true, true) // the process lists too
	if until := time.Until(pc.next); until > soon {
		t.Fatalf("the first full frame is set %v from now, want within %v", until, soon)
	}
	time.Sleep(2 * soon)
	pc.frame(true, true)
	if until := time.Until(pc.next); until <= tickEvery/2 {
		t.Fatalf("a later frame %v after the last is set %v from now: minFrame no longer holds", 2*soon, until)
	}
}

// A frame the user waits for (after a key, the mouse, a paste) is set
// within soon; one after a snapshot within tickEvery.
func TestPacerDrawsInputSooner(t *testing.T) {
	pc := tickingPacer(t, &pacer{shownData: true, shownAll: true})
	m, _ := newTestModel(Options{})
	pv := paced{Model: m, pc: pc}
	pv.Update(tea.KeyPressMsg{Code: 'j'})
	pc.frame(true, true)
	if until := time.Until(pc.next); until > soon {
		t.Fatalf("the frame after a key is set %v from now, want within %v", until, soon)
	}
	pc.next = time.Now().Add(-time.Second) // long after the last frame
	pc.frame(true, true)
	if until := time.Until(pc.next); until <= soon {
		t.Fatalf("the frame after a snapshot is set %v from now, want about %v", until, tickEvery)
	}
}
