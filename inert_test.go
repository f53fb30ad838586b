package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/alerthook"
	"github.com/vramtop/vramtop/exporter"
	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/hostproc"
	"github.com/vramtop/vramtop/internal/hostile"
	"github.com/vramtop/vramtop/jobrun"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
	"github.com/vramtop/vramtop/ui"
)

// This file feeds hostile text through every source vramtop reads (a fake
// /proc with its cgroup files, Prometheus's answers and error bodies, a
// recording, a log) and checks every way vramtop prints it (the --once
// table and JSON, the live view's frame, the exported page, an alert
// hook's payload, the run report, fleet, replay and explain with their
// stderr): no output holds ESC, BEL, a C1 control or a bidirectional
// override that vramtop did not write itself. The live view is drawn with
// NO_COLOR; what is left of its own styling (bold, faint, reverse) is SGR
// sequences, removed before the check (an SGR sequence in the text itself
// would be caught in the snapshot, whose strings are checked too).

// ownSGR is a Select Graphic Rendition sequence, the only one the live
// view writes into its frame.
var ownSGR = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// procSource is one GPU whose processes are the PIDs of a fake /proc, read
// by the sampler's ProcReader as the NVML source reads them.
type procSource struct {
	proc *hostproc.ProcReader
	pids []uint32
}

func (p *procSource) Info() sampler.SourceInfo {
	return sampler.SourceInfo{Kind: "nvml", Hostname: "gpu1", DriverVersion: "580.95.05",
		Devices: []sampler.DeviceInfo{{ID: "0", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-0"}}}
}

func (p *procSource) ReadMemory(_ time.Time, out []sampler.MemSample) error {
	out[0] = sampler.MemSample{Total: 80 << 30, Used: 78 << 30, Free: 2 << 30}
	return nil
}

func (p *procSource) ReadProcesses(_ time.Time, buf []sampler.ProcSample, _ []error) ([]sampler.ProcSample, error) {
	buf = buf[:0]
	for i, pid := range p.pids {
		ps := sampler.ProcSample{Process: sampler.Process{PID: pid, UsedBytes: sampler.Ptr(uint64(20+i) << 30), Type: "compute"}}
		p.proc.Lookup(pid).Fill(&ps)
		buf = append(buf, ps)
	}
	p.proc.Prune()
	return buf, nil
}

func (p *procSource) ReadProcessUtilization(time.Time, map[sampler.UtilKey]float64) error { return nil }
func (p *procSource) Close() error                                                        { return nil }

// hostileProc writes a fake /proc whose processes carry s: as the name of
// one with an empty command line (prctl), in the arguments of another, in
// a Slurm step and a pod directory of their cgroups.
func hostileProc(t *testing.T, s string) string {
	root := t.TempDir()
	name := strings.ReplaceAll(s, "\n", "") // comm ends at its newline
	for _, p := range []hostile.Proc{
		{PID: 4242, Comm: name, Cgroup: "0::/system.slice/slurmstepd.scope/job_77/step_" + s + "/user/task_0\n"},
		{PID: 4243, Comm: "python", Cmdline: "python\x00train.py\x00" + s + "\x00",
			Cgroup: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(s, "/", "") + ".slice\n"},
	} {
		if err := hostile.WriteProc(root, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func procSnapshot(t *testing.T, root string) sampler.Snapshot {
	src := &procSource{proc: hostproc.NewProcReader(root), pids: []uint32{4242, 4243}}
	s, err := sampler.New(src, sampler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, _ := s.Tick(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	return snap
}

// liveFrames are the live view's screens for snap: the main one, a
// process's detail, the alerts.
func liveFrames(snap sampler.Snapshot, opts ui.Options) []string {
	ch := make(chan sampler.Snapshot, 1)
	ch <- snap
	close(ch)
	m := ui.New(ch, opts)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	var deliver func(tea.Cmd)
	deliver = func(c tea.Cmd) {
		if c == nil {
			return
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				deliver(c)
			}
		case nil:
		default:
			m.Update(msg)
		}
	}
	deliver(m.Init())
	frames := []string{m.View().Content}
	for _, k := range []tea.KeyPressMsg{{Code: tea.KeyTab}, {Code: tea.KeyEnter}} {
		m.Update(k)
	}
	frames = append(frames, m.View().Content)
	m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	m.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
	return append(frames, m.View().Content)
}

// run runs a command in process as main does; its stdout and stderr.
func run(args ...string) (stdout, stderr []byte, code int) {
	var o, e bytes.Buffer
	code = dispatch(context.Background(), args, &o, &e)
	return o.Bytes(), e.Bytes(), code
}

// hostileOOM is a PyTorch out-of-memory message that carries s.
func hostileOOM(s string) string {
	return "epoch 3 " + s + "\n" +
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.50 GiB is free. " +
		"Process 4242 has 40.00 GiB memory in use. " + s + " Of the allocated memory 70.00 GiB is allocated by PyTorch, and 5.00 GiB is reserved by PyTorch but unallocated.\n" +
		`{"level":"error","msg":` + hostile.JSON("worker "+s+" died") + "}\n" +
		`RuntimeError: \x1b]52;c;` + strings.ReplaceAll(s, `\`, "") + `\x07 \u001b[2J` + "\n"
}

func checkHostile(t *testing.T, s, what string, out []byte) {
	t.Helper()
	if err := hostile.Check(out); err != nil {
		t.Errorf("%s, fed %q: %v", what, s, err)
	}
}

func FuzzHostileText(f *testing.F) {
	for _, s := range hostile.Strings {
		f.Add(s)
	}
	f.Setenv("NO_COLOR", "1")
	f.Fuzz(func(t *testing.T, s string) {
		check := func(what string, out []byte) { t.Helper(); checkHostile(t, s, what, out) }

		// /proc and cgroups: the --once table and JSON, the live view,
		// the exported page, the alerts and their hook payload, the run
		// report.
		root := hostileProc(t, s)
		snap := procSnapshot(t, root)
		if len(snap.Devices) != 1 || len(snap.Devices[0].Processes) != 2 {
			t.Fatalf("snapshot: %+v", snap.Devices)
		}
		var b bytes.Buffer
		if err := writeSnapshot(&b, snap, advisor.DefaultThresholds(), false); err != nil {
			t.Fatal(err)
		}
		check("the --once table", b.Bytes())
		b.Reset()
		if err := writeSnapshot(&b, snap, advisor.DefaultThresholds(), true); err != nil {
			t.Fatal(err)
		}
		check("the --once JSON", b.Bytes())
		if err := hostile.CheckTexts(snap); err != nil {
			t.Errorf("the snapshot, fed %q: %v", s, err)
		}
		for i, fr := range liveFrames(snap, ui.Options{User: "root", Now: func() time.Time { return snap.Time }}) {
			check("live view frame "+string(rune('0'+i)), ownSGR.ReplaceAll([]byte(fr), nil))
		}
		page := exporter.New(func() (sampler.Snapshot, bool) { return snap, true }, exporter.Options{Version: "t"}).Page(nil)
		check("the exported page", page)
		mon := advisor.NewMonitor(advisor.Config{Thresholds: advisor.DefaultThresholds()})
		var alerts []advisor.Alert
		for range 3 {
			alerts = mon.Observe(snap)
		}
		for _, a := range alerts {
			doc, err := json.Marshal(alerthook.Event{Hostname: snap.Hostname, Alert: a})
			if err != nil {
				t.Fatal(err)
			}
			check("an alert hook's payload", doc)
			check("an alert", []byte(a.Message))
		}
		cmdline, _ := os.ReadFile(filepath.Join(root, "4243", "cmdline"))
		p := snap.Devices[0].Processes
		rep := jobrun.Report{Command: []string{"python", "train.py", s}, Source: "nvml",
			Leftovers: []jobrun.Leftover{{PID: 4243, Command: hostproc.CommandLine(cmdline), GPUBytes: 1 << 30}},
			GPUs: []jobrun.GPUReport{{ID: "0", Name: snap.Devices[0].Name, TotalBytes: 80 << 30, PeakBytes: 1 << 30,
				Others: []jobrun.Other{{PID: p[0].PID, User: p[0].User, Command: p[0].Command, Bytes: p[0].UsedBytes, Visible: true}}}}}
		check("the run report", []byte(rep.Text(100)))

		// Prometheus: fleet --once's table, JSON and stderr over labels
		// of another host, and an error body.
		totals, values, procs := hostile.FleetSeries(s)
		srv := httptest.NewServer(hostile.Prometheus(map[string]string{fleet.QueryDevices: totals, fleet.QueryValues: values, fleet.QueryProcs: procs}))
		defer srv.Close()
		for _, args := range [][]string{{"--once"}, {"--once", "--json"}} {
			out, errOut, _ := run(append([]string{"fleet", "--prometheus", srv.URL}, args...)...)
			if !bytes.Contains(out, []byte("python")) {
				t.Errorf("fleet %v lists no process:\n%s\n%s", args, out, errOut)
			}
			check("fleet "+strings.Join(args, " "), out)
			check("fleet's stderr", errOut)
		}
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html><h1>" + s + "</h1>\n" + s + "</html>"))
		}))
		defer bad.Close()
		_, errOut, code := run("fleet", "--prometheus", bad.URL, "--once")
		if code == 0 || len(errOut) == 0 {
			t.Errorf("fleet over a failing Prometheus: exit %d, stderr %q", code, errOut)
		}
		check("fleet's error", errOut)

		// A recording: replay --once's table and JSON.
		rec := filepath.Join(t.TempDir(), "rec.jsonl")
		if err := os.WriteFile(rec, []byte(hostile.Recording(s)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--once"}, {"--once", "--json"}, {"--once", "--at", "+0s"}} {
			out, errOut, code := run(append([]string{"replay", rec}, args...)...)
			if code != 0 {
				t.Errorf("replay %v: exit %d: %s", args, code, errOut)
			}
			check("replay "+strings.Join(args, " "), out)
			check("replay's stderr", errOut)
		}

		// A log: explain's text and JSON.
		for _, args := range [][]string{nil, {"--json"}} {
			out, errOut, code := runExplainArgs(t, hostileOOM(s), args...)
			if code != 0 {
				t.Errorf("explain %v: exit %d, %s", args, code, errOut)
			}
			check("explain "+strings.Join(args, " "), []byte(out))
			check("explain's stderr", []byte(errOut))
		}
	})
}

// serve's labels, scraped by a Prometheus and read back by fleet --once
// on another machine: the chain from a process name to an administrator's
// terminal.
func TestServeLabelsThroughFleet(t *testing.T) {
	for _, s := range hostile.Strings {
		snap := procSnapshot(t, hostileProc(t, s))
		page := exporter.New(func() (sampler.Snapshot, bool) { return snap, true }, exporter.Options{Version: "t"}).Page(nil)
		srv := httptest.NewServer(hostile.Prometheus(scraped(t, page)))
		out, errOut, _ := run("fleet", "--prometheus", srv.URL, "--once")
		srv.Close()
		if !bytes.Contains(out, []byte("train.py")) {
			t.Fatalf("fleet --once lists no process:\n%s\n%s", out, errOut)
		}
		checkHostile(t, s, "fleet --once over serve's labels", append(out, errOut...))
	}
}

// scraped is what a Prometheus that scraped page answers to the fleet's
// queries: each query's series, with the target's instance and job.
func scraped(t *testing.T, page []byte) map[string]string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	want := map[string][]string{
		fleet.QueryDevices: {metricname.MemoryTotal},
		fleet.QueryValues:  {metricname.MemoryTotal, metricname.MemoryUsed, metricname.MemoryFree, metricname.MemoryReserved, metricname.Utilization, metricname.Up},
		fleet.QueryProcs:   {metricname.ProcessMemory, metricname.ProcessUnknown, metricname.ProcessesUnlisted, metricname.MemoryUnlisted},
	}
	out := map[string]string{}
	for q, names := range want {
		var res []string
		for _, name := range names {
			mf := fams[name]
			if mf == nil {
				continue
			}
			for _, m := range mf.Metric {
				labels := `"__name__":` + hostile.JSON(name) + `,"instance":"10.0.0.1:9400","job":"vramtop"`
				for _, l := range m.Label {
					labels += "," + hostile.JSON(l.GetName()) + ":" + hostile.JSON(l.GetValue())
				}
				v, _ := json.Marshal(m.GetGauge().GetValue())
				res = append(res, `{"metric":{`+labels+`},"value":[1764417600.5,"`+string(v)+`"]}`)
			}
		}
		out[q] = strings.Join(res, ",")
	}
	return out
}
