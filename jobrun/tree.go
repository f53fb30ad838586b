package jobrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// procStat is what /proc/PID/stat says about a process's place in the
// process tree.
type procStat struct {
	ppid, pgrp int
	start      uint64 // clock ticks after boot
}

// tree finds the processes of a job: the child, every process descended
// from it through PPID links, and every process of its process group. A
// process once found stays in the job while it lives (with the same start
// time), so a grandchild orphaned by its parent's exit still counts.
type tree struct {
	root    string // "/proc"
	leader  int
	members map[int]uint64 // pid → start ticks
	// ever holds every PID that was in the job, for the report.
	ever map[int]bool

	buf  []byte
	all  map[int]procStat
	kids map[int][]int
}

func newTree(root string, leader int) *tree {
	return &tree{
		root: root, leader: leader, members: map[int]uint64{}, ever: map[int]bool{},
		all: map[int]procStat{}, kids: map[int][]int{},
	}
}

// scan reads the process table and returns the job's live processes.
func (t *tree) scan() map[int]uint64 {
	clear(t.all)
	clear(t.kids)
	ents, err := os.ReadDir(t.root)
	if err != nil {
		return t.members
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		st, ok := t.readStat(pid)
		if !ok {
			continue
		}
		t.all[pid] = st
		t.kids[st.ppid] = append(t.kids[st.ppid], pid)
	}
	// Members that died (or whose PID now names another process) leave.
	for pid, start := range t.members {
		if st, ok := t.all[pid]; !ok || st.start != start {
			delete(t.members, pid)
		}
	}
	add := func(pid int) bool {
		st, ok := t.all[pid]
		if !ok {
			return false
		}
		if _, in := t.members[pid]; in {
			return false
		}
		t.members[pid] = st.start
		t.ever[pid] = true
		return true
	}
	add(t.leader)
	for pid, st := range t.all {
		if st.pgrp == t.leader {
			add(pid)
		}
	}
	// Descendants of every member, breadth first.
	queue := make([]int, 0, len(t.members))
	for pid := range t.members {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range t.kids[pid] {
			if add(c) {
				queue = append(queue, c)
			}
		}
	}
	return t.members
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid pgrp session …
// starttime(22nd field) …". The command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func (t *tree) readStat(pid int) (procStat, bool) {
	f, err := os.Open(filepath.Join(t.root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	defer f.Close()
	if cap(t.buf) < 1024 {
		t.buf = make([]byte, 1024)
	}
	n, _ := f.Read(t.buf[:cap(t.buf)])
	return parseStat(t.buf[:n])
}

func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is the state (field 3); ppid is field 4, pgrp 5,
	// starttime 22.
	if len(fields) < 20 {
		return procStat{}, false
	}
	if string(fields[0]) == "Z" {
		return procStat{}, false // a zombie holds nothing and runs nothing
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgrp, err2 := strconv.Atoi(string(fields[2]))
	start, err3 := strconv.ParseUint(string(fields[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{ppid: ppid, pgrp: pgrp, start: start}, true
}
