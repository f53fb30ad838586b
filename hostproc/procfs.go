// Package hostproc reads what the host knows of a process: its user, command
// line, start time, CPU and resident memory from /proc, and the Slurm job,
// Kubernetes pod or container its cgroup names. The NVML source and the
// signal sender read through it; the sampler sees only what a source fills in.
package hostproc

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/sampler"
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
	// It, User and the Job's fields are inert (internal/inert): any user
	// can set a process's name and arguments, and name a cgroup.
	Command string
	// Container is the 12-character short id of the container the process
	// runs in, from /proc/PID/cgroup; empty outside a container.
	Container string
	// StartTime is when the process started; zero if unknown.
	StartTime time.Time
	// Job is the Slurm job, Kubernetes pod or container the process's
	// cgroup names; nil when none. It is shared, never written after the
	// first read.
	Job *sampler.Job
	// CPUPercent is the process's CPU use (100 = one core) between the
	// previous sweep and this one; HasCPU is false on its first sweep.
	CPUPercent float64
	HasCPU     bool
	// HostMemoryBytes is the process's resident memory (RSS).
	HostMemoryBytes uint64
	HasHostMemory   bool
}

// Fill copies what /proc tells into a process sample of a source.
func (pi ProcInfo) Fill(p *sampler.ProcSample) {
	p.Visible, p.UID, p.User = pi.Visible, nil, pi.User
	if pi.HasUID {
		p.UID = sampler.Ptr(pi.UID)
	}
	p.Command, p.Container, p.StartTime, p.Job = pi.Command, pi.Container, pi.StartTime, pi.Job
	p.CPUPercent, p.HostMemoryBytes = nil, nil
	if pi.HasCPU {
		p.CPUPercent = sampler.Ptr(pi.CPUPercent)
	}
	if pi.HasHostMemory {
		p.HostMemoryBytes = sampler.Ptr(pi.HostMemoryBytes)
	}
}

// ProcReader reads process details from a /proc file system. It caches what it
// has read per (PID, start time), so a known process costs one read of
// /proc/PID/stat per sweep (which also gives its CPU time and resident
// memory), and it caches user-name lookups per UID.
//
// A ProcReader is not safe for concurrent use: the sampler's goroutine owns it.
type ProcReader struct {
	root     string
	clkTck   int64
	pageSize uint64
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
	// cpuTicks is utime+stime at cpuAt, the previous sweep's reading.
	cpuTicks uint64
	cpuAt    time.Time
	info     ProcInfo
}

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
		pageSize:  uint64(os.Getpagesize()),
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
// for a known process: for its CPU time and resident memory, and to notice a
// PID reused by a new process (another start time).
func (r *ProcReader) Lookup(pid uint32) ProcInfo {
	e := r.entries[pid]
	if e != nil && e.gen == r.gen {
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
		r.entries[pid] = &procEntry{statPath: statPath, gen: r.gen, info: info}
		return info
	}
	st, okStat := parseStat(stat)
	now := r.now()
	if e != nil && e.info.Visible && okStat && e.startTicks == st.start {
		e.gen = r.gen
		r.account(e, st, now)
		return e.info
	}
	if dir == "" {
		dir = filepath.Dir(statPath)
	}
	info := ProcInfo{Visible: true}
	if okStat {
		if bt, ok := r.boot(); ok {
			info.StartTime = bt.Add(time.Duration(st.start) * time.Second / time.Duration(r.clkTck))
		}
	}
	if b, err := r.readFile(filepath.Join(dir, "status"), 64<<10); err == nil {
		if uid, ok := parseStatusUID(b); ok {
			info.UID, info.HasUID = uid, true
			info.User = r.userName(uid)
		}
	}
	if b, err := r.readFile(filepath.Join(dir, "cmdline"), procCmdlineMax); err == nil {
		info.Command = CommandLine(b)
	}
	if info.Command == "" {
		if b, err := r.readFile(filepath.Join(dir, "comm"), 256); err == nil {
			if c := inert.Bytes(bytes.TrimRight(b, "\n")); c != "" {
				info.Command = "[" + c + "]"
			}
		} else if c, ok := statComm(stat); ok && c != "" {
			info.Command = "[" + c + "]"
		}
	}
	if b, err := r.readFile(filepath.Join(dir, "cgroup"), 64<<10); err == nil {
		info.Job = cgroupJob(b)
		info.Container = shortContainerID(info.Job)
	}
	e = &procEntry{statPath: statPath, startTicks: st.start, gen: r.gen, info: info}
	if okStat {
		r.account(e, st, now)
	}
	r.entries[pid] = e
	return e.info
}

// account updates a process's CPU use and resident memory from this sweep's
// stat reading.
func (r *ProcReader) account(e *procEntry, st statFields, now time.Time) {
	ticks := st.utime + st.stime
	e.info.HasCPU = false
	if !e.cpuAt.IsZero() && ticks >= e.cpuTicks {
		if dt := now.Sub(e.cpuAt).Seconds(); dt > 0 {
			cpu := float64(ticks-e.cpuTicks) / float64(r.clkTck) / dt * 100
			e.info.CPUPercent, e.info.HasCPU = cpu, true
		}
	}
	e.cpuTicks, e.cpuAt = ticks, now
	e.info.HostMemoryBytes, e.info.HasHostMemory = st.rss*r.pageSize, true
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
	name = inert.String(name) // a directory service's name, not ours
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

// statFields are the fields of /proc/PID/stat the reader uses.
type statFields struct {
	utime, stime uint64 // fields 14 and 15, clock ticks
	start        uint64 // field 22, clock ticks since boot
	rss          uint64 // field 24, pages
}

// parseStat reads /proc/PID/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields are
// counted from the last ')'. It runs for every listed process on every
// sweep, so it does not allocate. ok is false unless all four fields parse.
func parseStat(stat []byte) (st statFields, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return st, false
	}
	rest := stat[i+1:]
	for field := 3; field <= 24; field++ {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return st, false
		}
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		var dst *uint64
		switch field {
		case 14:
			dst = &st.utime
		case 15:
			dst = &st.stime
		case 22:
			dst = &st.start
		case 24:
			dst = &st.rss
		}
		if dst != nil {
			v, ok := parseDecimal(rest[:end])
			if !ok {
				return st, false
			}
			*dst = v
		}
		rest = rest[end:]
	}
	return st, true
}

// parseDecimal parses an unsigned decimal without allocating.
func parseDecimal(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' || v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, len(b) > 0
}

// statComm returns field 2 of /proc/PID/stat, the command name.
func statComm(stat []byte) (string, bool) {
	i := bytes.IndexByte(stat, '(')
	j := bytes.LastIndexByte(stat, ')')
	if i < 0 || j <= i {
		return "", false
	}
	return inert.Bytes(stat[i+1 : j]), true
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

// CommandLine turns the NUL-separated arguments of /proc/PID/cmdline into
// one line, as the sampler shows it: NULs become spaces, trailing NULs (and the padding of a process
// that rewrote its title) are dropped, and each argument is made inert (a
// newline, an escape or a C1 control in an argument becomes
// inert.Placeholder).
func CommandLine(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return ""
	}
	out := make([]byte, 0, len(b))
	for {
		arg, rest, more := bytes.Cut(b, []byte{0})
		out = inert.AppendBytes(out, arg)
		if !more {
			break
		}
		out = append(out, ' ')
		b = rest
	}
	return string(out)
}
