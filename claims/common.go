// Package claims lets vramtop users on one machine claim GPUs so that two
// of them never get the same card: `vramtop wait` and `vramtop pick` skip
// a claimed GPU and claim the ones they hand out.
//
// A claim is advisory and only between vramtop users: it stops no program
// from using a card, and it is not a scheduler (no queue, no fairness, no
// quota). It exists so that two `vramtop wait` calls racing for the same
// free card cannot both win.
//
// There is no daemon. The claims live in one directory every user can
// write, with the sticky bit set (as /tmp): /run/vramtop where it exists
// and is writable, else /tmp/vramtop-claims; VRAMTOP_CLAIMS_DIR overrides
// it. Each GPU has one file there, named after its UUID, and a claim is an
// exclusive flock(2) on that file, held by an open descriptor: the kernel
// drops the lock when the holding process ends in any way, so a crashed or
// killed claimer releases its claims at once. The file's content (user,
// PID, size, time, and until when) only describes the claim for others to
// read; a lock with no readable content still counts as a claim.
//
// Files are never removed: removing a file another process is about to
// lock would let two claimers lock two different files of the same name.
//
// Other users can write in the directory, so what is read from it is
// distrusted: files are opened without following symbolic links and without
// blocking (a FIFO), must be regular, are read to at most MaxFileSize
// bytes, and a file that is not a well-formed claim is ignored with a
// warning. Text from a claim is made inert by internal/inert's rule, as
// every text from outside vramtop is, and bounded in length (Clip), where it
// is read.
package claims

import (
	"errors"
	"fmt"
	"time"

	"github.com/vramtop/vramtop/internal/inert"
)

// EnvDir names the environment variable that overrides the directory.
const EnvDir = "VRAMTOP_CLAIMS_DIR"

// MaxFileSize is the most bytes read from one claim file.
const MaxFileSize = 4096

// suffix ends every claim file's name.
const suffix = ".claim"

// Claim describes one claimed GPU.
type Claim struct {
	// UUID is the GPU's (or MIG instance's) UUID, as NVML gives it.
	UUID string `json:"uuid"`
	// User is who claimed it, PID the process that holds the lock.
	User string `json:"user"`
	PID  int    `json:"pid"`
	// Bytes is the memory the claimer asked for (--min-free); 0: unsaid.
	Bytes uint64 `json:"bytes"`
	// Time is when the claim was taken.
	Time time.Time `json:"time"`
	// Until is when the claim ends at the latest (a claim for a command
	// that reads $(vramtop wait)); zero while the command the holder runs
	// runs.
	Until time.Time `json:"until,omitzero"`
	// Command is what the claim is for, when known.
	Command string `json:"command,omitempty"`
}

// ErrClaimed is TryClaim's error for a GPU someone else holds.
var ErrClaimed = errors.New("already claimed")

// Clip is s made inert (internal/inert: the rule every text from outside
// vramtop follows) and cut to at most max runes, the last of them "…".
// Claims are written by other users, and a claim's text is only ever
// printed, so the rule is the one of process names and labels: no wider.
func Clip(s string, max int) string {
	s = inert.String(s)
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Describe is c in a few words: "alice (PID 4121), 40 GiB, until 14:02:05".
func (c Claim) Describe(size func(uint64) string) string {
	who := c.User
	if who == "" {
		who = "someone"
	}
	if c.PID > 0 {
		who += fmt.Sprintf(" (PID %d)", c.PID)
	}
	if c.Bytes > 0 {
		who += ", " + size(c.Bytes)
	}
	if !c.Until.IsZero() {
		who += ", until " + c.Until.Local().Format("15:04:05")
	} else if c.PID > 0 {
		who += ", while its command runs"
	}
	return who
}

// Short is c in fewer words, for a GPU's panel: "alice, 40 GiB, until
// 14:02:05".
func (c Claim) Short(size func(uint64) string) string {
	who := c.User
	if who == "" {
		who = "someone"
	}
	if c.Bytes > 0 {
		who += ", " + size(c.Bytes)
	}
	if !c.Until.IsZero() {
		who += ", until " + c.Until.Local().Format("15:04:05")
	}
	return who
}
