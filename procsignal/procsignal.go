// Package procsignal sends a signal to the process a user was shown, and to
// no other: a PID alone may name a different process by the time the user
// confirms (the shown one exited and the kernel gave its PID to a new one).
//
// A process is identified by its PID, its start time and its real UID as the
// snapshot showed them. Open checks them against /proc; on Linux 5.3 and
// later it first takes a pidfd, which keeps naming the same process however
// long the confirmation takes, so the check made once at Open holds when the
// signal is sent. Without a pidfd the check is made again right before
// kill(2). A process that changed or exited is refused with an error that
// says so; nothing is sent.
package procsignal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/vramtop/vramtop/hostproc"
)

// Target is a process as the user was shown it.
type Target struct {
	PID       uint32
	StartTime time.Time // from the snapshot; a zero time cannot be checked
	UID       *uint32   // the real UID from the snapshot; nil cannot be checked
}

// Opener opens processes for signalling. The zero value reads /proc, uses a
// pidfd where the kernel offers one and takes the caller's effective UID.
type Opener struct {
	// ProcRoot is the /proc file system checked ("/proc" when empty).
	ProcRoot string
	// NoPidfd makes Open skip pidfd_open, as on a kernel without it.
	NoPidfd bool
	// Euid is the caller's effective UID; os.Geteuid() when nil. Root (0)
	// may signal any user's process; anyone else only their own.
	Euid *int
}

// Errors Open and Signal return, wrapped with the details.
var (
	// ErrExited: the process is gone.
	ErrExited = errors.New("has exited")
	// ErrChanged: the PID now names another process, or the process's
	// owner changed.
	ErrChanged = errors.New("is no longer the process shown")
	// ErrNotOwner: the caller may not signal the process.
	ErrNotOwner = errors.New("belongs to another user")
	// ErrUnknown: the snapshot lacks what the check needs.
	ErrUnknown = errors.New("cannot be checked")
)

// Handle is an opened process. Close it when done; a closed handle
// signals nothing.
type Handle struct {
	o      Opener
	t      Target
	pidfd  int // -1 without one
	closed bool
}

// Open checks that t.PID still is the process shown and that the caller
// may signal it, and holds it (by a pidfd where the kernel offers one).
func (o Opener) Open(t Target) (*Handle, error) {
	if !Supported {
		return nil, errUnsupported
	}
	if t.PID == 0 {
		return nil, fmt.Errorf("PID 0 %w", ErrUnknown)
	}
	if t.StartTime.IsZero() {
		return nil, fmt.Errorf("PID %d %w: its start time is unknown, so a reused PID could not be told apart", t.PID, ErrUnknown)
	}
	if t.UID == nil {
		return nil, fmt.Errorf("PID %d %w: its owner's UID is unknown", t.PID, ErrUnknown)
	}
	if u := o.euid(); u != 0 && uint32(u) != *t.UID {
		return nil, fmt.Errorf("PID %d %w (UID %d): only your own processes can be signalled (root can signal any)", t.PID, ErrNotOwner, *t.UID)
	}
	h := &Handle{o: o, t: t, pidfd: -1}
	if !o.NoPidfd {
		fd, err := pidfdOpen(t.PID)
		switch {
		case err == nil:
			h.pidfd = fd
		case errors.Is(err, syscall.ESRCH):
			return nil, fmt.Errorf("PID %d %w", t.PID, ErrExited)
		case errors.Is(err, errNoPidfd):
			// An older kernel: check again right before the signal.
		default:
			return nil, fmt.Errorf("PID %d: %w", t.PID, err)
		}
	}
	// The pidfd, taken first, pins the process now named by the PID; the
	// check below makes sure that it is the one shown.
	if err := h.verify(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Pidfd reports whether the handle holds the process by a pidfd.
func (h *Handle) Pidfd() bool { return h.pidfd >= 0 }

// Signal sends sig to the process. Without a pidfd the process is checked
// once more first.
func (h *Handle) Signal(sig syscall.Signal) error {
	if h.closed {
		return fmt.Errorf("PID %d: the handle is closed", h.t.PID)
	}
	if h.pidfd >= 0 {
		err := pidfdSendSignal(h.pidfd, sig)
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("PID %d %w", h.t.PID, ErrExited)
		}
		return err
	}
	if err := h.verify(); err != nil {
		return err
	}
	err := kill(h.t.PID, sig)
	if errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("PID %d %w", h.t.PID, ErrExited)
	}
	return err
}

// Close releases the pidfd.
func (h *Handle) Close() error {
	if h == nil || h.closed {
		return nil
	}
	h.closed = true
	if h.pidfd >= 0 {
		err := closeFD(h.pidfd)
		h.pidfd = -1
		return err
	}
	return nil
}

// verify reads /proc/PID: the start time must equal the one shown (read the
// way the sampler reads it) and the real UID the one shown.
func (h *Handle) verify() error {
	info := hostproc.NewProcReader(h.o.ProcRoot).Lookup(h.t.PID)
	switch {
	case !info.Visible:
		return fmt.Errorf("PID %d %w", h.t.PID, ErrExited)
	case info.StartTime.IsZero() || !info.HasUID:
		return fmt.Errorf("PID %d %w: /proc does not show its start time and owner", h.t.PID, ErrUnknown)
	case !sameStart(info.StartTime, h.t.StartTime):
		return fmt.Errorf("PID %d %w: it started at %s, the one shown at %s (the PID was reused)", h.t.PID, ErrChanged,
			info.StartTime.Format("15:04:05.00"), h.t.StartTime.Format("15:04:05.00"))
	case info.UID != *h.t.UID:
		return fmt.Errorf("PID %d %w: its UID is %d, the one shown %d", h.t.PID, ErrChanged, info.UID, *h.t.UID)
	}
	return nil
}

// sameStart reports whether two start times read from /proc name the same
// start. Each is the boot time in whole seconds plus the start in clock
// ticks; the kernel's boot time can read one second apart between two
// readers (it is derived from the clock minus the uptime), so a difference
// of exactly one second is the same start; any other difference, to the
// tick, is another process.
func sameStart(a, b time.Time) bool {
	d := a.Sub(b)
	return d == 0 || d == time.Second || d == -time.Second
}

func (o Opener) euid() int {
	if o.Euid != nil {
		return *o.Euid
	}
	return os.Geteuid()
}

var (
	// errNoPidfd: the kernel has no pidfd_open.
	errNoPidfd = errors.New("pidfd not supported")
	// errUnsupported: the check that the PID still is the process shown
	// reads Linux's /proc.
	errUnsupported = fmt.Errorf("signalling a process is not supported on this system: %w", errors.ErrUnsupported)
)
