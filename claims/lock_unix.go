//go:build unix

package claims

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Dir returns the claims directory: $VRAMTOP_CLAIMS_DIR, else /run/vramtop
// where it is a directory this user may write, else /tmp/vramtop-claims.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	if fi, err := os.Lstat("/run/vramtop"); err == nil && fi.IsDir() && syscall.Access("/run/vramtop", 2 /* W_OK */) == nil {
		return "/run/vramtop"
	}
	return filepath.Join(os.TempDir(), "vramtop-claims")
}

// Store is a claims directory.
type Store struct {
	dir string
	// retry is how often TryClaim tries again when the lock is busy: a
	// reader probes a lock by taking it shared for an instant.
	retry int
}

// Open returns the store at dir, making the directory (mode 1777: every
// user may claim, none may remove another's file) when it does not exist.
// A dir that is a symbolic link or not a directory is refused.
func Open(dir string) (*Store, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o1777); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("claims directory %s: %v", dir, pathErr(err))
		}
		os.Chmod(dir, 0o1777|os.ModeSticky) // the umask took bits away
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("claims directory %s: %v", dir, pathErr(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("claims directory %s: not a directory", dir)
	}
	return &Store{dir: dir, retry: 10}, nil
}

// fileName is the file of the GPU uuid: the UUID itself where it is made
// of letters, digits and dashes (every NVML UUID is), else its hex.
func fileName(uuid string) string {
	ok := uuid != "" && len(uuid) <= 128
	for _, r := range uuid {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			ok = false
			break
		}
	}
	if ok {
		return uuid + suffix
	}
	return fmt.Sprintf("x%x%s", uuid, suffix)
}

// Held is a claim this process holds.
type Held struct {
	Claim
	f *os.File
}

// File is the locked file: a child process that inherits it (ExtraFiles)
// holds the claim too, until every copy is closed.
func (h *Held) File() *os.File { return h.f }

// Rewrite replaces the claim's description (a holder took it over).
func (h *Held) Rewrite(c Claim) error {
	h.Claim = c
	return writeClaim(h.f, c)
}

// Release ends the claim. The lock is dropped with the last descriptor
// of the file: a child holding a copy keeps it.
func (h *Held) Release() {
	if h.f != nil {
		h.f.Close()
		h.f = nil
	}
}

// TryClaim claims c.UUID for c, or returns ErrClaimed at once when another
// process holds it.
func (s *Store) TryClaim(c Claim) (*Held, error) {
	if c.UUID == "" {
		return nil, errors.New("a GPU without a UUID cannot be claimed")
	}
	path := filepath.Join(s.dir, fileName(c.UUID))
	f, err := openFile(path, os.O_RDWR|os.O_CREATE)
	writable := err == nil
	if errors.Is(err, os.ErrPermission) {
		// Another user made the file without write access for us: the
		// lock still claims it; only the description is not ours to write.
		f, err = openFile(path, os.O_RDONLY)
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %v", path, pathErr(err))
	}
	if writable {
		f.Chmod(0o666) // anyone may lock and describe it later
	}
	for i := 0; ; i++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("claim %s: %v", path, pathErr(err))
		}
		// Held: by a claimer, or for an instant by a reader's probe.
		if i >= s.retry {
			f.Close()
			return nil, ErrClaimed
		}
		time.Sleep(time.Millisecond)
	}
	h := &Held{Claim: c, f: f}
	if writable {
		if err := writeClaim(f, c); err != nil {
			h.Release()
			return nil, fmt.Errorf("claim %s: %v", path, pathErr(err))
		}
	}
	return h, nil
}

func writeClaim(f *os.File, c Claim) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	return err
}

// openFile opens path without following a symbolic link and without
// blocking on a FIFO, and refuses anything but a regular file.
func openFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("a symbolic link, not a claim file")
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("not a regular file")
	}
	return f, nil
}

// Active returns the claims held now, by UUID, and a warning for each file
// there that is held but is not a well-formed claim (those are ignored).
// A file no process holds is an old claim and is skipped.
func (s *Store) Active() (map[string]Claim, []string) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("claims directory %s: %v", s.dir, pathErr(err))}
	}
	out := map[string]Claim{}
	var warns []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		c, held, err := s.read(name)
		if err != nil {
			warns = append(warns, fmt.Sprintf("claims: ignoring %s: %v", Clip(filepath.Join(s.dir, name), 200), err))
			continue
		}
		if held {
			out[c.UUID] = c
		}
	}
	return out, warns
}

// read reads one file: held is false when no process holds its lock.
func (s *Store) read(name string) (c Claim, held bool, err error) {
	f, err := openFile(filepath.Join(s.dir, name), os.O_RDONLY)
	if err != nil {
		return c, false, pathErr(err)
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case err == nil:
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return c, false, nil // nobody holds it: the claim has ended
	case !errors.Is(err, syscall.EWOULDBLOCK):
		return c, false, pathErr(err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return c, false, pathErr(err)
	}
	if len(b) > MaxFileSize {
		return c, false, fmt.Errorf("longer than %d bytes", MaxFileSize)
	}
	want := strings.TrimSuffix(name, suffix)
	if len(b) == 0 {
		// Locked, not yet described (or by a user who may not write it).
		if fileName(want) != name {
			return c, false, errors.New("not a GPU's claim file")
		}
		return Claim{UUID: want}, true, nil
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Claim{}, false, errors.New("not a well-formed claim")
	}
	if fileName(c.UUID) != name {
		return Claim{}, false, errors.New("its GPU is not the one its name says")
	}
	c.User = Clip(c.User, 64)
	c.Command = Clip(c.Command, 200)
	return c, true, nil
}

// pathErr is err without Go's "open /x/y:" prefix.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
