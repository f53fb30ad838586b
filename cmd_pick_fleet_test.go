package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/internal/testbin"
)

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// --prometheus with what it cannot do is bad usage: one line, exit 2.
func TestPickFleetUsage(t *testing.T) {
	isolateConfig(t)
	for _, c := range []struct {
		cmd  string
		args []string
		say  string
	}{
		{"pick", []string{"--prometheus", "127.0.0.1:9090", "--", "python", "train.py"}, "running a command needs a local GPU claim"},
		{"wait", []string{"--prometheus", "127.0.0.1:9090", "--min-free", "1GiB", "--", "python", "train.py"}, "running a command needs a local GPU claim"},
		{"pick", []string{"--prometheus", "127.0.0.1:9090", "--demo"}, "--demo and --prometheus: give one"},
		{"wait", []string{"--prometheus", "127.0.0.1:9090", "--claim-ttl", "5m"}, "--claim-ttl does not go with --prometheus"},
		{"pick", []string{"--prometheus", "http://"}, `--prometheus "http://": want Prometheus's address`},
		{"pick", []string{"--prometheus", "ftp://x:1"}, "want Prometheus's address"},
		{"pick", []string{"--demo", "--json", "--", "true"}, "--json prints the GPUs"},
		{"pick", []string{"--demo", "--max-util", "101"}, "--max-util 101: want a percentage from 0 to 100"},
		{"pick", []string{"--prometheus", "127.0.0.1:9090", "--count", "0"}, "--count 0: want at least 1"},
	} {
		var o, e bytes.Buffer
		code := dispatch(context.Background(), append([]string{c.cmd}, c.args...), &o, &e)
		if code != exitUsage || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 || !strings.Contains(e.String(), c.say) ||
			!strings.HasPrefix(e.String(), "vramtop "+c.cmd+": ") {
			t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.cmd, c.args, code, o.String(), e.String(), c.say)
		}
	}
}

// A Prometheus that is not there, or an exporter given in its place: one
// line that says so, and exit 1, for pick and wait.
func TestPickFleetPrometheusDownOrAnExporter(t *testing.T) {
	isolateConfig(t)
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			w.Write([]byte("# HELP vramtop_up 1 when ...\n# TYPE vramtop_up gauge\nvramtop_up{hostname=\"a\"} 1\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer exporter.Close()
	down := freeAddr(t) // no scheme: taken as http://
	for _, c := range []struct {
		url, say string
	}{
		{down, "cannot reach Prometheus at http://" + down + ": connection refused"},
		{exporter.URL, "answers like an exporter"},
	} {
		for _, cmd := range []string{"pick", "wait"} {
			var o, e bytes.Buffer
			code := dispatch(context.Background(), []string{cmd, "--prometheus", c.url}, &o, &e)
			if code != 1 || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 || !strings.Contains(e.String(), c.say) {
				t.Errorf("%s --prometheus %s: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", cmd, c.url, code, o.String(), e.String(), c.say)
			}
		}
	}
}

// Ctrl-C ends wait --prometheus at once, its query to Prometheus in flight
// included: exit 130 and one line.
func TestWaitFleetCtrlC(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select { // never answers while the test runs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release) // before Close, which waits for the handlers
	cmd := exec.Command(bin, "wait", "--prometheus", hang.URL, "--min-free", "1GiB")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("wait never asked Prometheus: %s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(8 * time.Second): // within the query's own 10 s timeout
		cmd.Process.Kill()
		<-done
		t.Fatalf("still waiting on Prometheus after Ctrl-C: %s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || strings.TrimSpace(stderr.String()) != "vramtop wait: interrupted" {
		t.Errorf("exit %d, stderr %q; want 130 and one line saying it was interrupted", code, stderr.String())
	}
}

// leanProm is a Prometheus for pick and wait --prometheus that records
// what it is asked: hostA and hostB, 2 H100s each (80 GiB, 1 GiB
// reserved), with used memory by "host:gpu", and the processes on each.
type leanProm struct {
	used  map[string]uint64
	procs map[string]int
	mu    sync.Mutex
	asked []string
}

func (p *leanProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	q := r.Form.Get("query")
	p.mu.Lock()
	p.asked = append(p.asked, q)
	p.mu.Unlock()
	type series struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
	}
	out := []series{}
	add := func(v float64, kv ...string) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		out = append(out, series{m, []any{float64(time.Now().Unix()), fmt.Sprint(v)}})
	}
	for h, host := range []string{"hostA", "hostB"} {
		inst := fmt.Sprintf("10.0.0.%d:9400", h+1)
		if q == fleet.QueryTargets {
			add(1, "__name__", "up", "job", "vramtop", "instance", inst)
		}
		if q == fleet.QueryValues {
			add(1, "__name__", "vramtop_up", "hostname", host)
		}
		for g := range 2 {
			gpu, id := fmt.Sprint(g), fmt.Sprintf("%s:%d", host, g)
			switch {
			case q == fleet.QueryDevices:
				add(80<<30, "__name__", "vramtop_gpu_memory_total_bytes", "hostname", host, "gpu", gpu, "UUID", "GPU-"+id,
					"modelName", "NVIDIA H100 80GB HBM3", "instance", inst, "job", "vramtop")
			case q == fleet.QueryReserved:
				add(1<<30, "hostname", host, "gpu", gpu)
			case q == fleet.QueryValues:
				add(float64(p.used[id]), "__name__", "vramtop_gpu_memory_used_bytes", "hostname", host, "gpu", gpu)
				add(0.3, "__name__", "vramtop_gpu_utilization_ratio", "hostname", host, "gpu", gpu)
			case strings.Contains(q, "vramtop_process_gpu_memory"):
				for i := range p.procs[id] {
					add(float64(p.used[id])/float64(p.procs[id]), "__name__", "vramtop_process_gpu_memory_bytes", "hostname", host, "gpu", gpu,
						"pid", fmt.Sprint(1000+10*g+i), "user", "alice", "command", "python train.py", "type", "compute")
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": out}})
}

// askedProcesses reports whether any query asked for per-process series.
func (p *leanProm) askedProcesses() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.asked, func(q string) bool { return strings.Contains(q, "vramtop_process_gpu_memory") })
}

// Pick and wait across the fleet read no host's processes where they
// cannot change the answer, and read them where they can: with --json
// (which counts them) and to order GPUs that are equally free.
func TestPickFleetReadsProcessesOnlyWhereTheyMatter(t *testing.T) {
	isolateConfig(t)
	for _, c := range []struct {
		name   string
		used   map[string]uint64
		args   []string
		want   string
		procs  bool
		inJSON string
		fail   string
	}{
		{"the freest, by free memory", map[string]uint64{"hostA:0": 30 << 30, "hostA:1": 5 << 30, "hostB:0": 10 << 30, "hostB:1": 60 << 30},
			[]string{"pick", "--count", "2"}, "hostA:1\nhostB:0\n", false, "", ""},
		{"--max-util leaves them all out", map[string]uint64{"hostA:0": 30 << 30, "hostA:1": 5 << 30, "hostB:0": 10 << 30, "hostB:1": 60 << 30},
			[]string{"pick", "--max-util", "20"}, "", false, "", "are above 20% utilization"},
		{"wait, --min-free", map[string]uint64{"hostA:0": 30 << 30, "hostA:1": 5 << 30, "hostB:0": 10 << 30, "hostB:1": 60 << 30},
			[]string{"wait", "--count", "3", "--min-free", "40GiB", "--settle", "0s"}, "hostA:1\nhostB:0\nhostA:0\n", false, "", ""},
		{"--json counts the processes", map[string]uint64{"hostA:0": 30 << 30, "hostA:1": 5 << 30, "hostB:0": 10 << 30, "hostB:1": 60 << 30},
			[]string{"pick", "--json"}, "", true, `"processes": 1`, ""},
		// hostA:0 (2 processes) and hostB:0 (none) equally free: the one
		// with fewer processes first.
		{"pick, equally free", map[string]uint64{"hostA:0": 10 << 30, "hostA:1": 60 << 30, "hostB:0": 10 << 30, "hostB:1": 70 << 30},
			[]string{"pick"}, "hostB:0\n", true, "", ""},
		{"wait, equally free", map[string]uint64{"hostA:0": 10 << 30, "hostA:1": 60 << 30, "hostB:0": 10 << 30, "hostB:1": 70 << 30},
			[]string{"wait", "--settle", "0s", "--interval", "1s"}, "hostB:0\n", true, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &leanProm{used: c.used, procs: map[string]int{"hostA:0": 2, "hostA:1": 1, "hostB:1": 3}}
			srv := httptest.NewServer(p)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var o, e bytes.Buffer
			code := dispatch(ctx, append([]string{c.args[0], "--prometheus", srv.URL}, c.args[1:]...), &o, &e)
			switch {
			case c.fail != "":
				if code != 1 || !strings.Contains(e.String(), c.fail) {
					t.Fatalf("exit %d, stderr %q: want 1 and %q", code, e.String(), c.fail)
				}
			case code != 0:
				t.Fatalf("exit %d: %s", code, e.String())
			case c.inJSON != "":
				if !strings.Contains(o.String(), `"host": "hostA"`) || !strings.Contains(o.String(), `"gpu": "1"`) || !strings.Contains(o.String(), c.inJSON) {
					t.Fatalf("--json %s: want hostA's GPU 1 with %s", o.String(), c.inJSON)
				}
			case o.String() != c.want:
				t.Fatalf("printed %q, want %q", o.String(), c.want)
			}
			if p.askedProcesses() != c.procs {
				t.Errorf("asked for the processes: %v, want %v (queries %q)", !c.procs, c.procs, p.asked)
			}
			// Without --json, only those of the hosts of the GPUs
			// equally free.
			if every := slices.Contains(p.asked, fleet.QueryProcs); every != (c.inJSON != "") {
				t.Errorf("asked for every host's processes: %v, want %v", every, c.inJSON != "")
			}
		})
	}
}
