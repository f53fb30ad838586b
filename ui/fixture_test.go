package ui

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui/detail"
	"github.com/vramtop/vramtop/ui/draw"
	"github.com/vramtop/vramtop/ui/gpus"
	"github.com/vramtop/vramtop/ui/help"
	"github.com/vramtop/vramtop/ui/judge"
	"github.com/vramtop/vramtop/ui/procs"
)

// fixedStart is the fixed clock of the tests.
var fixedStart = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

const testUser = "alice"

// testUIDs are the UIDs of the fake source's users.
var testUIDs = map[string]uint32{testUser: 1000, "bob": 1001, "carol": 1002, "dave": 1003}

// fakeSource is a deterministic source for tests: memory is a function of
// time, so every run renders the same screen.
type fakeSource struct {
	start  time.Time
	ngpu   int
	nprocs int // extra processes per GPU (benchmark)
	hosts  []string
	// unlisted is a host seen only through dcgm-exporter: its devices'
	// processes are not listed.
	unlisted string
}

func (f *fakeSource) Info() sampler.SourceInfo {
	info := sampler.SourceInfo{Kind: "nvml", Hostname: "gpu-box", DriverVersion: "580.159", CUDAVersion: "13.0"}
	for h := 0; h < max(len(f.hosts), 1); h++ {
		for i := 0; i < f.ngpu; i++ {
			d := sampler.DeviceInfo{ID: fmt.Sprint(i), Index: i, Name: "NVIDIA H200", UUID: fmt.Sprintf("GPU-%04d", i)}
			if len(f.hosts) > 0 {
				d.Hostname = f.hosts[h]
				d.ID = f.hosts[h] + ":" + d.ID
				d.NoProcessList = f.hosts[h] == f.unlisted
			}
			info.Devices = append(info.Devices, d)
		}
	}
	return info
}

const h200Total = 143771 << 20

// used is device i's used memory at t.
func (f *fakeSource) used(i int, t time.Time) uint64 {
	s := t.Sub(f.start).Seconds()
	switch i % 4 {
	case 0: // training run: climbing towards warn
		return uint64((40 + 75*math.Min(s/900, 1)) * draw.GiB)
	case 1: // nearly full, critical
		return uint64((131 + 2*math.Sin(s/30)) * draw.GiB)
	case 2: // idle but for a 2 s spike every 2 minutes
		if int(s)%120 < 2 {
			return uint64(100 * draw.GiB)
		}
		return uint64(6 * draw.GiB)
	}
	return uint64((60 + 20*math.Sin(s/60)) * draw.GiB)
}

func (f *fakeSource) ReadMemory(now time.Time, out []sampler.MemSample) error {
	for i := range out {
		u := f.used(i%max(f.ngpu, 1), now)
		out[i] = sampler.MemSample{Total: h200Total, Used: u, Free: h200Total - u - 600*draw.MiB,
			Reserved: 600 * draw.MiB, HasReserved: true}
		if i%4 != 3 {
			out[i].Util, out[i].HasUtil = float64(10+i*20%90), true
			out[i].TempC, out[i].HasTemp = 40+i*3, true
			out[i].PowerW, out[i].HasPower = float64(150+i*40), true
		}
	}
	return nil
}

func (f *fakeSource) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	buf = buf[:0]
	n := len(errs)
	for i := 0; i < n; i++ {
		g := i % max(f.ngpu, 1)
		if len(f.hosts) > 0 && f.hosts[i/max(f.ngpu, 1)] == f.unlisted {
			continue
		}
		u := f.used(g, now)
		add := func(pid uint32, user, cmd string, share float64, visible bool) {
			var uid *uint32
			if id, ok := testUIDs[user]; ok {
				uid = &id
			}
			buf = append(buf, sampler.ProcSample{Device: i, Process: sampler.Process{PID: pid, User: user, UID: uid, Command: cmd, UsedBytes: sampler.Ptr(uint64(float64(u) * share)),
				Type: "compute", Visible: visible, StartTime: f.start.Add(-time.Duration(pid%97) * time.Minute)}})
		}
		switch g % 4 {
		case 0:
			add(4100+uint32(i), testUser, "python train.py --model llama-8b --batch 16", 0.9, true)
		case 1:
			add(5200+uint32(i), "bob", "python -m vllm.entrypoints.openai.api_server --model qwen", 0.6, true)
			add(5300+uint32(i), testUser, "jupyter-kernel --ip=127.0.0.1", 0.25, true)
			add(7100+uint32(i), "", "", 0.1, false)
		case 2:
			if now.Sub(f.start) < 5*time.Minute {
				add(6100+uint32(i), "carol", "python eval.py", 0.5, true)
			}
		case 3:
			add(8100+uint32(i), "dave", "./bench --size 4096", 0.8, true)
		}
		for j := 0; j < f.nprocs; j++ {
			add(uint32(20000+i*1000+j), fmt.Sprintf("user%02d", j%17), fmt.Sprintf("python worker.py --rank %d", j), 0.001, true)
		}
	}
	return buf, nil
}

func (f *fakeSource) ReadProcessUtilization(time.Time, map[sampler.UtilKey]float64) error { return nil }
func (f *fakeSource) Close() error                                                        { return nil }

// fixture runs a sampler over src for d of fixed-clock time at 1 s and
// returns the last snapshot.
func fixture(tb testing.TB, src sampler.Source, d time.Duration) sampler.Snapshot {
	tb.Helper()
	s, err := sampler.New(src, sampler.Config{Interval: time.Second, History: time.Hour, Now: func() time.Time { return fixedStart.Add(d) }})
	if err != nil {
		tb.Fatal(err)
	}
	var last sampler.Snapshot
	for t := time.Duration(0); t <= d; t += time.Second {
		if snap, ok := s.Tick(fixedStart.Add(t)); ok {
			last = snap
		}
	}
	return last
}

var (
	snapCacheMu sync.Mutex
	snapCache   = map[int]sampler.Snapshot{}
)

// fakeSnap is the fake source's snapshot after ten minutes (snapshots are
// values: one per GPU count is shared by the tests).
func fakeSnap(tb testing.TB, ngpu int) sampler.Snapshot {
	snapCacheMu.Lock()
	defer snapCacheMu.Unlock()
	s, ok := snapCache[ngpu]
	if !ok {
		s = fixture(tb, &fakeSource{start: fixedStart, ngpu: ngpu}, 10*time.Minute)
		snapCache[ngpu] = s
	}
	return s
}

func DefaultThresholdsForTest() advisor.Thresholds { return advisor.DefaultThresholds() }

// detailPeek is what m's detail screen shows.
func detailPeek(m *Model) detail.Peek { return m.detail.(*detail.View).Peek() }

// compactGPUs reports whether m's GPU pane shows one line per GPU.
func compactGPUs(m *Model) bool { return m.gpus.(*gpus.Pane).Compact() }

// procsOf is m's process table.
func procsOf(m *Model) *procs.Table { return m.procs.(*procs.Table) }

// procsPeek is what m's process table shows.
func procsPeek(m *Model) procs.Peek { return procsOf(m).Peek() }

// helpOpen reports whether the help screen is open.
func (m *Model) helpOpen() bool {
	if m.open < 0 {
		return false
	}
	_, ok := m.screens[m.open].(*help.Screen)
	return ok
}

// testRules judge with observe and advise; nil ones find nothing.
type testRules struct {
	observe func(sampler.Snapshot) []advisor.Alert
	advise  func(sampler.Snapshot, advisor.Target) []advisor.Advice
}

func (r testRules) Observe(s sampler.Snapshot) []advisor.Alert {
	if r.observe == nil {
		return nil
	}
	return r.observe(s)
}

func (r testRules) Advise(s sampler.Snapshot, t advisor.Target) []advisor.Advice {
	if r.advise == nil {
		return nil
	}
	return r.advise(s, t)
}

// judgeWith gives m the judge of its options changed by set.
func judgeWith(m *Model, set func(*judge.Options)) {
	o := judgeOptions(m.opts)
	set(&o)
	m.judge = judge.New(o)
}

// setRules gives m a judge whose rules are r; a replay that seeks back
// starts over with rules that find nothing.
func setRules(m *Model, r testRules) {
	judgeWith(m, func(o *judge.Options) {
		o.Rules = r
		if o.Restart != nil {
			o.Restart = func() judge.Rules { return testRules{} }
		}
	})
}
