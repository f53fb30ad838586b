package sampler

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ProcInfo is what /proc tells about one process.
type ProcInfo struct {
	// Visible is false when /proc has no entry for the PID: the process lives
	// in another PID namespace (a container) or has exited.
	Visible bool
	UID     uint32
	HasUID  bool
	// User is the login name of the real UID, or the UID in decimal where
	// no name resolves.
	User string
	// Command is the command line with arguments separated by spaces, or
	// "[comm]" for a kernel thread or a process with an empty command line.
	Command string
	// Container is the 12-character short id of the container the process
	// runs in, from /proc/PID/cgroup; empty outside a container.
	Container string
	// StartTime is when the process started; zero if unknown.
	StartTime time.Time
}

// ProcReader reads process details from a /proc file system. It caches what it
// has read per (PID, start time), so a known process costs one read of
// /proc/PID/stat per sweep, and it caches user-name lookups per UID.
//
// A ProcReader is not safe for concurrent use: the sampler's goroutine owns it.
type ProcReader struct {
	root     string
	clkTck   int64
	bootTime time.Time
	bootRead bool

	entries map[uint32]*procEntry
	gen     uint64

	users map[uint32]userEntry
	// lookupUID resolves a UID to a login name; os/user by default.
	lookupUID func(uid uint32) (string, error)
	now       func() time.Time

	buf, statBuf []byte
}

type procEntry struct {
	statPath   string
	startTicks uint64
	gen        uint64
	verified   uint64 // the sweep that last read its stat
	info       ProcInfo
}

// procVerifyEvery is how many sweeps a known process goes between re-reads
// of its stat file. A PID that NVML stops listing is forgotten at once, so a
// reused PID goes unnoticed only if the old process exits and a new one
// with its PID opens the GPU between two process lists; the re-read catches
// even that within a few seconds, without a system call per process per
// sweep (on a VM, reading 100 stat files each second was a tenth of
// vramtop's CPU).
const procVerifyEvery = 5

type userEntry struct {
	name    string
	ok      bool
	expires time.Time // for failed lookups only
}

// procCmdlineMax bounds how much of a command line is read.
const procCmdlineMax = 16 << 10

// userRetry is how long a failed user lookup is remembered before it is
// tried again (a directory service may have been briefly unreachable).
const userRetry = 5 * time.Minute

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat times; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// NewProcReader returns a reader of the /proc file system mounted at root
// ("/proc" when root is empty).
func NewProcReader(root string) *ProcReader {
	if root == "" {
		root = "/proc"
	}
	return &ProcReader{
		root:      root,
		clkTck:    clockTicks,
		entries:   map[uint32]*procEntry{},
		users:     map[uint32]userEntry{},
		lookupUID: lookupUserName,
		now:       time.Now,
		buf:       make([]byte, 0, 4096),
		statBuf:   make([]byte, 0, 512),
	}
}

func lookupUserName(uid uint32) (string, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// Lookup returns what /proc shows of pid. Within one sweep (between two calls
// of Prune) a PID is read once; across sweeps only /proc/PID/stat is re-read
// for a known process, to notice a PID reused by a new process.
func (r *ProcReader) Lookup(pid uint32) ProcInfo {
	e := r.entries[pid]
	if e != nil && e.gen == r.gen {
		return e.info
	}
	if e != nil && e.info.Visible && r.gen-e.verified < procVerifyEvery {
		e.gen = r.gen
		return e.info
	}
	dir := ""
	statPath := ""
	if e != nil {
		statPath = e.statPath
	} else {
		dir = filepath.Join(r.root, strconv.FormatUint(uint64(pid), 10))
		statPath = filepath.Join(dir, "stat")
	}
	stat, err := r.readInto(&r.statBuf, statPath, 1024)
	if err != nil {
		info := ProcInfo{}
		if !errors.Is(err, fs.ErrNotExist) {
			// Present but unreadable: visible, details unknown. (Absent:
			// another PID namespace, or gone.)
			info.Visible = true
		}
		r.entries[pid] = &procEntry{statPath: statPath, gen: r.gen, verified: r.gen, info: info}
		return info
	}
	start, okStart := parseStatStart(stat)
	if e != nil && e.info.Visible && okStart && e.startTicks == start {
		e.gen, e.verified = r.gen, r.gen
		return e.info
	}
	if dir == "" {
		dir = filepath.Dir(statPath)
	}
	info := ProcInfo{Visible: true}
	if okStart {
		if bt, ok := r.boot(); ok {
			info.StartTime = bt.Add(time.Duration(start) * time.Second / time.Duration(r.clkTck))
		}
	}
	if b, err := r.readFile(filepath.Join(dir, "status"), 64<<10); err == nil {
		if uid, ok := parseStatusUID(b); ok {
			info.UID, info.HasUID = uid, true
			info.User = r.userName(uid)
		}
	}
	if b, err := r.readFile(filepath.Join(dir, "cmdline"), procCmdlineMax); err == nil {
		info.Command = cmdlineString(b)
	}
	if info.Command == "" {
		if b, err := r.readFile(filepath.Join(dir, "comm"), 256); err == nil {
			if c := string(bytes.TrimRight(b, "\n")); c != "" {
				info.Command = "[" + c + "]"
			}
		} else if c, ok := statComm(stat); ok && c != "" {
			info.Command = "[" + c + "]"
		}
	}
	if b, err := r.readFile(filepath.Join(dir, "cgroup"), 64<<10); err == nil {
		info.Container = containerID(b)
	}
	r.entries[pid] = &procEntry{statPath: statPath, startTicks: start, gen: r.gen, verified: r.gen, info: info}
	return info
}

// Prune ends a sweep: it forgets the processes not looked up since the
// previous Prune, and starts a new sweep.
func (r *ProcReader) Prune() {
	for pid, e := range r.entries {
		if e.gen != r.gen {
			delete(r.entries, pid)
		}
	}
	r.gen++
}

// Len is the number of processes cached.
func (r *ProcReader) Len() int { return len(r.entries) }

// userName resolves uid, caching the answer.
func (r *ProcReader) userName(uid uint32) string {
	if u, ok := r.users[uid]; ok && (u.ok || r.now().Before(u.expires)) {
		return u.name
	}
	name, err := r.lookupUID(uid)
	if err != nil || name == "" {
		name = strconv.FormatUint(uint64(uid), 10)
		r.users[uid] = userEntry{name: name, expires: r.now().Add(userRetry)}
		return name
	}
	r.users[uid] = userEntry{name: name, ok: true}
	return name
}

// boot returns the boot time from /proc/stat, read once: the kernel derives
// btime from the current time minus the uptime, so it can wobble by a second
// between reads, and start times must not.
func (r *ProcReader) boot() (time.Time, bool) {
	if !r.bootRead {
		r.bootRead = true
		if b, err := r.readFile(filepath.Join(r.root, "stat"), 1<<20); err == nil {
			if bt, ok := parseBootTime(b); ok {
				r.bootTime = time.Unix(bt, 0)
			}
		}
	}
	return r.bootTime, !r.bootTime.IsZero()
}

// readFile reads at most limit bytes of a /proc file into the reader's
// scratch buffer; the result is valid until the next readFile.
func (r *ProcReader) readFile(path string, limit int) ([]byte, error) {
	return r.readInto(&r.buf, path, limit)
}

// readInto reads at most limit bytes of a file into *scratch, growing it as
// needed, and returns them. It reads with plain system calls: an os.File
// costs an allocation and a poller check per open, and a sweep opens one
// file per process.
func (r *ProcReader) readInto(scratch *[]byte, path string, limit int) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := (*scratch)[:0]
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), limit)
		n, err := syscall.Read(fd, buf[len(buf):end])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			*scratch = buf[:0]
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n <= 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	*scratch = buf[:0]
	return buf, nil
}

// parseStatStart returns field 22 of /proc/PID/stat: the start time in clock
// ticks since boot. The command name (field 2) is in parentheses and may
// itself hold spaces and parentheses, so the fields are counted from the
// last ')'. It runs for every listed process on every sweep, so it does not
// allocate.
func parseStatStart(stat []byte) (uint64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	rest := stat[i+1:]
	for field := 3; ; field++ {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return 0, false
		}
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		if field == 22 {
			var v uint64
			for _, c := range rest[:end] {
				if c < '0' || c > '9' || v > (math.MaxUint64-9)/10 {
					return 0, false
				}
				v = v*10 + uint64(c-'0')
			}
			return v, end > 0
		}
		rest = rest[end:]
	}
}

// statComm returns field 2 of /proc/PID/stat, the command name.
func statComm(stat []byte) (string, bool) {
	i := bytes.IndexByte(stat, '(')
	j := bytes.LastIndexByte(stat, ')')
	if i < 0 || j <= i {
		return "", false
	}
	return string(stat[i+1 : j]), true
}

// parseStatusUID returns the real UID from the "Uid:" line of
// /proc/PID/status (real, effective, saved, filesystem).
func parseStatusUID(b []byte) (uint32, bool) {
	rest, ok := procLine(b, "Uid:")
	if !ok {
		return 0, false
	}
	f := bytes.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[0]), 10, 32)
	return uint32(v), err == nil
}

// parseBootTime returns the "btime" of /proc/stat, in seconds since the epoch.
func parseBootTime(b []byte) (int64, bool) {
	rest, ok := procLine(b, "btime ")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
	return v, err == nil && v > 0
}

// procLine returns the rest of the first line of a /proc file that starts
// with prefix.
func procLine(b []byte, prefix string) ([]byte, bool) {
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(prefix)); ok {
			return bytes.TrimSuffix(rest, []byte("\n")), true
		}
	}
	return nil, false
}

// cmdlineString turns the NUL-separated arguments of /proc/PID/cmdline into
// one line: NULs become spaces, trailing NULs (and the padding of a process
// that rewrote its title) are dropped.
func cmdlineString(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return ""
	}
	out := make([]byte, len(b))
	for i, c := range b {
		switch {
		case c == 0:
			out[i] = ' '
		case c < 0x20 || c == 0x7f:
			// A newline or escape in an argument would break a table row.
			out[i] = '?'
		default:
			out[i] = c
		}
	}
	return string(out)
}

// containerPrefixes are the runtime prefixes of a container's cgroup
// directory name (systemd scope units and plain directories).
var containerPrefixes = []string{"docker-", "cri-containerd-", "crio-", "libpod-", "containerd-", ""}

// containerID returns the 12-character short id of the container named in a
// /proc/PID/cgroup file, cgroup v1 ("4:memory:/docker/<id>") or v2
// ("0::/system.slice/docker-<id>.scope"), for Docker, containerd and CRI-O
// (also under kubepods) and Podman; empty when the process is in none.
func containerID(b []byte) string {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		// hierarchy-ID:controllers:path; the path may contain ':'.
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		j := bytes.IndexByte(line[i+1:], ':')
		if j < 0 {
			continue
		}
		path := line[i+1+j+1:]
		if id := containerInPath(path); id != "" {
			return id
		}
	}
	return ""
}

// containerInPath finds the innermost path element that names a container.
func containerInPath(path []byte) string {
	for len(path) > 0 {
		k := bytes.LastIndexByte(path, '/')
		elem := path[k+1:]
		if k < 0 {
			path = nil
		} else {
			path = path[:k]
		}
		elem = bytes.TrimSuffix(elem, []byte(".scope"))
		for _, p := range containerPrefixes {
			if id, ok := bytes.CutPrefix(elem, []byte(p)); ok && isHex64(id) {
				return string(id[:12])
			}
		}
	}
	return ""
}

func isHex64(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
