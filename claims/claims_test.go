//go:build unix

package claims

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vramtop/vramtop/internal/hostile"
	"github.com/vramtop/vramtop/internal/inert"
)

func claim(uuid string) Claim {
	return Claim{UUID: uuid, User: "alice", PID: os.Getpid(), Bytes: 40 << 30, Time: time.Now()}
}

// A GPU claimed once cannot be claimed again until the claim is released;
// readers see the claim while it is held and not after.
func TestClaimIsExclusive(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.Path()); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Fatalf("the directory is %v (%v), want drwxrwxrwt", fi.Mode(), err)
	}
	h, err := s.TryClaim(claim("GPU-aaa"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryClaim(claim("GPU-aaa")); err != ErrClaimed {
		t.Fatalf("a second claim of the same GPU: %v, want ErrClaimed", err)
	}
	other, err := s.TryClaim(claim("GPU-bbb"))
	if err != nil {
		t.Fatalf("another GPU: %v", err)
	}
	act, warns := s.Active()
	if len(warns) != 0 || len(act) != 2 || act["GPU-aaa"].User != "alice" || act["GPU-aaa"].Bytes != 40<<30 {
		t.Fatalf("active %+v, warnings %q", act, warns)
	}
	h.Release()
	act, _ = s.Active()
	if _, ok := act["GPU-aaa"]; ok || len(act) != 1 {
		t.Fatalf("after the release: %+v", act)
	}
	h2, err := s.TryClaim(claim("GPU-aaa"))
	if err != nil {
		t.Fatalf("claiming a released GPU: %v", err)
	}
	h2.Release()
	other.Release()
}

// A process that dies holding a claim releases it: the lock goes with it.
func TestClaimOfAKilledProcessEnds(t *testing.T) {
	if os.Getenv("CLAIMS_TEST_HOLD") != "" {
		s, err := Open(os.Getenv("CLAIMS_TEST_HOLD"))
		if err != nil {
			os.Exit(3)
		}
		if _, err := s.TryClaim(claim("GPU-held")); err != nil {
			os.Exit(4)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClaimOfAKilledProcessEnds$")
	cmd.Env = append(os.Environ(), "CLAIMS_TEST_HOLD="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the holder said %q (%v)", buf, err)
	}
	s, _ := Open(dir)
	if _, err := s.TryClaim(claim("GPU-held")); err != ErrClaimed {
		t.Fatalf("claim held by another process: %v, want ErrClaimed", err)
	}
	if act, _ := s.Active(); act["GPU-held"].PID != cmd.Process.Pid {
		t.Fatalf("active %+v, want the holder's PID %d", act, cmd.Process.Pid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if act, _ := s.Active(); len(act) != 0 {
		t.Fatalf("the killed holder's claim is still active: %+v", act)
	}
	h, err := s.TryClaim(claim("GPU-held"))
	if err != nil {
		t.Fatalf("claim after the holder was killed: %v", err)
	}
	h.Release()
}

// Files other users may have put there: held but malformed, too long, a
// symbolic link, a FIFO, or a claim naming another GPU; each is ignored
// with a warning and never blocks. Text from a claim is made inert.
func TestForeignFilesAreIgnored(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	hold := func(name, content string) *os.File {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(p)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	hold("GPU-junk.claim", "not json")
	hold("GPU-long.claim", `{"uuid":"GPU-long","user":"`+strings.Repeat("x", MaxFileSize)+`"}`)
	hold("GPU-liar.claim", `{"uuid":"GPU-other","user":"mallory"}`)
	hold("GPU-esc.claim", `{"uuid":"GPU-esc","user":"eve\u001b[2J","command":"rm\u0007"}`)
	os.WriteFile(filepath.Join(dir, "GPU-old.claim"), []byte("garbage, not held"), 0o644)
	os.Symlink(filepath.Join(dir, "GPU-esc.claim"), filepath.Join(dir, "GPU-link.claim"))
	syscall.Mkfifo(filepath.Join(dir, "GPU-fifo.claim"), 0o644)
	done := make(chan struct{})
	var act map[string]Claim
	var warns []string
	go func() { act, warns = s.Active(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Active blocked")
	}
	if len(act) != 1 || act["GPU-esc"].User != "eve\uFFFD[2J" || act["GPU-esc"].Command != "rm\uFFFD" {
		t.Errorf("active %+v, want only GPU-esc, its text made inert", act)
	}
	joined := strings.Join(warns, "\n")
	for _, want := range []string{"GPU-junk.claim: not a well-formed claim", "GPU-long.claim: longer than 4096 bytes",
		"GPU-liar.claim: its GPU is not the one", "GPU-link.claim: a symbolic link", "GPU-fifo.claim: not a regular file"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning %q in %q", want, joined)
		}
	}
	if strings.Contains(joined, "GPU-old") || len(warns) != 5 {
		t.Errorf("warnings %q: want five, none for the file nobody holds", warns)
	}
	// A symbolic link where a claim file would be is not followed.
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "GPU-trap.claim"))
	if _, err := s.TryClaim(claim("GPU-trap")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("claiming through a symbolic link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the link was followed")
	}
}

func TestOpenRefusesALink(t *testing.T) {
	dir := t.TempDir()
	os.Symlink(t.TempDir(), filepath.Join(dir, "c"))
	if _, err := Open(filepath.Join(dir, "c")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symbolic link as the directory: %v", err)
	}
}

// The text of a claim follows the rule of every text from outside
// (internal/inert), no other: what it replaces is replaced, what it keeps
// (a left-to-right mark, an Arabic letter mark, U+FFFD) is kept as a
// process name or a label keeps it, and the length is bounded.
func TestClaimTextFollowsTheInertRule(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	users := append([]string{"ali\u200ece", "\u061cbob", "carol\u200f"}, hostile.Strings...)
	for i, u := range users {
		uuid := fmt.Sprintf("GPU-%d", i)
		b, _ := json.Marshal(Claim{UUID: uuid, User: u, Command: strings.Repeat("é", 300)})
		p := filepath.Join(dir, uuid+".claim")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(p)
		defer f.Close()
		syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	act, warns := s.Active()
	if len(warns) != 0 || len(act) != len(users) {
		t.Fatalf("%d claims, warnings %q", len(act), warns)
	}
	for i, u := range users {
		c := act[fmt.Sprintf("GPU-%d", i)]
		if want := inert.String(u); c.User != want {
			t.Errorf("user %q read as %q, the inert rule gives %q", u, c.User, want)
		}
		if want := strings.Repeat("é", 200) + "…"; c.Command != want {
			t.Errorf("a command of 300 runes read as %d runes", utf8.RuneCountInString(c.Command))
		}
	}
}

// Path is where the store is.
func (s *Store) Path() string { return s.dir }
