package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/fleet/internal/promtest"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/metricname"
)

// pickDoc is what pick --json prints (docs/schema/pick.schema.json).
type pickDoc struct {
	Prometheus string `json:"prometheus"`
	GPUs       []struct {
		Host string `json:"host"`
		GPU  string `json:"gpu"`
		ID   string `json:"id"`
		Free uint64 `json:"memory_free_bytes"`
	} `json:"gpus"`
}

// pickSchema is docs/schema/pick.schema.json, compiled.
func pickSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("pick.schema.json", mustJSON(t, filepath.Join("..", "docs", "schema", "pick.schema.json"))); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("pick.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustJSON(t *testing.T, path string) any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// pickLines are the HOST:GPU lines of out, sorted.
func pickLines(out string) []string {
	lines := strings.Fields(out)
	slices.Sort(lines)
	return lines
}

// TestPickAcrossFleetAgainstPrometheus runs pick and wait --prometheus for
// real: two `vramtop serve --demo` hosts, each with its claims directory,
// scraped every second. A GPU claimed on hostA is skipped there and not on
// hostB (the same demo UUID), --count and --min-free hold, the JSON is the
// schema's; once hostB's exporter is killed none of its GPUs is picked,
// and a wait that wants one more GPU than hostA has free takes the claimed
// one as soon as its claim ends.
func TestPickAcrossFleetAgainstPrometheus(t *testing.T) {
	promBin := promtest.Binary(t)
	if testing.Short() {
		t.Skip("starts Prometheus and two exporters")
	}
	vramtop := testbin.Build(t)
	info := demo.New(time.Now()).Info()
	// What pick can hand out of the demo's GPUs: all but the MIG parent.
	var pickable []string
	for _, d := range info.Devices {
		switch {
		case d.MIG != nil:
			pickable = append(pickable, d.UUID)
		case !d.MIGEnabled:
			pickable = append(pickable, fmt.Sprint(d.Index))
		}
	}

	hosts := []string{"hostA", "hostB"}
	dirs := map[string]string{}
	procs := map[string]*promtest.Proc{}
	var targets []string
	for _, h := range hosts {
		addr := promtest.FreeAddr(t)
		dirs[h] = filepath.Join(t.TempDir(), "claims")
		p := promtest.StartEnv(t, "vramtop serve "+h, []string{claims.EnvDir + "=" + dirs[h]},
			vramtop, "serve", "--demo", "--hostname", h, "--listen", addr, "--interval", "500ms")
		promtest.WaitFor(t, 20*time.Second, "exporter "+h+" healthy", func() (bool, string) {
			if p.Exited() {
				t.Fatalf("exporter %s exited:\n%s", h, p.Output())
			}
			code, body := promtest.Get("http://" + addr + "/healthz")
			return code == http.StatusOK, fmt.Sprint(code, " ", body)
		})
		procs[h] = p
		targets = append(targets, addr)
	}
	// alice claims GPU 1 on hostA (the demo's freest at the start).
	store, err := claims.Open(dirs["hostA"])
	if err != nil {
		t.Fatal(err)
	}
	claimed := info.Devices[1].UUID
	held, err := store.TryClaim(claims.Claim{UUID: claimed, User: "alice", PID: os.Getpid(), Bytes: 40 << 30, Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()

	prom := promtest.StartPrometheus(t, promBin, time.Second, targets...)
	client, err := fleet.NewClient(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	promtest.WaitFor(t, 30*time.Second, "both hosts' GPUs and hostA's claim in Prometheus", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs, err := client.Query(ctx, "count by (hostname) ("+metricname.MemoryTotal+")")
		if err != nil || len(hs) != len(hosts) {
			return false, fmt.Sprintf("%d hosts, %v", len(hs), err)
		}
		cl, err := client.Query(ctx, metricname.Claimed+" == 1")
		return err == nil && len(cl) == 1, fmt.Sprintf("%d claimed, %v", len(cl), err)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, vramtop, args...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return stdout.String(), stderr.String(), code
	}
	url := strings.TrimPrefix(prom.URL, "http://") // a URL without a scheme is http://

	// Every GPU that can be handed out: hostB's all, hostA's but the
	// claimed one; one line each, freest first.
	n := 2*len(pickable) - 1
	out, errOut, code := run("pick", "--prometheus", url, "--count", fmt.Sprint(n))
	if code != 0 {
		t.Fatalf("pick --count %d: exit %d: %s", n, code, errOut)
	}
	var want []string
	for _, h := range hosts {
		for _, g := range pickable {
			if h == "hostA" && g == "1" {
				continue
			}
			want = append(want, h+":"+g)
		}
	}
	slices.Sort(want)
	if got := pickLines(out); !slices.Equal(got, want) {
		t.Errorf("pick --count %d printed %q, want %q (hostA:1 claimed, the MIG parent never)", n, got, want)
	}
	out, errOut, code = run("pick", "--prometheus", url, "--count", fmt.Sprint(n+1))
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, fmt.Sprintf("%d GPUs asked, only %d have free memory; hostA:1 claimed by alice (40 GiB)", n+1, n)) {
		t.Errorf("pick --count %d: exit %d, stdout %q, stderr %q; want exit 1 and a line naming the claim", n+1, code, out, errOut)
	}

	// --min-free, --count and the JSON.
	schema := pickSchema(t)
	const minFree = 20 << 30
	out, errOut, code = run("pick", "--prometheus", url, "--count", "2", "--min-free", "20GiB", "--json")
	if code != 0 {
		t.Fatalf("pick --min-free 20GiB --json: exit %d: %s", code, errOut)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if err := schema.Validate(v); err != nil {
		t.Errorf("pick --json does not match docs/schema/pick.schema.json: %v\n%s", err, out)
	}
	var doc pickDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Prometheus != prom.URL || len(doc.GPUs) != 2 {
		t.Fatalf("document %+v: want two GPUs read from %s", doc, prom.URL)
	}
	for i, g := range doc.GPUs {
		if g.Free < minFree || g.ID != g.Host+":"+strings.TrimPrefix(g.ID, g.Host+":") || g.ID == "hostA:1" {
			t.Errorf("GPU %+v: want at least 20 GiB free, not the claimed hostA:1", g)
		}
		if i > 0 && g.Free > doc.GPUs[i-1].Free {
			t.Errorf("GPUs not freest first: %+v", doc.GPUs)
		}
	}
	if out, errOut, code := run("pick", "--prometheus", url, "--min-free", "1TiB"); code != 1 || out != "" || !strings.Contains(errOut, "no GPU has at least 1 TiB free") {
		t.Errorf("pick --min-free 1TiB: exit %d, %q %q", code, out, errOut)
	}

	// hostB's exporter dies: the fleet keeps its last values, pick never
	// hands one of its GPUs out.
	procs["hostB"].Kill()
	promtest.WaitFor(t, 30*time.Second, "hostB's target down", func() (bool, string) {
		n, err := prom.TargetsUp()
		return err == nil && n == 1, fmt.Sprintf("%d up, %v", n, err)
	})
	out, errOut, code = run("pick", "--prometheus", url, "--count", fmt.Sprint(len(pickable)-1))
	if code != 0 {
		t.Fatalf("pick with hostB down: exit %d: %s", code, errOut)
	}
	for _, l := range pickLines(out) {
		if !strings.HasPrefix(l, "hostA:") || l == "hostA:1" {
			t.Errorf("picked %s with hostB down and hostA:1 claimed:\n%s", l, out)
		}
	}
	if _, errOut, code := run("pick", "--prometheus", url, "--count", fmt.Sprint(len(pickable))); code != 1 || !strings.Contains(errOut, "1 host down (hostB)") {
		t.Errorf("pick of one GPU more than hostA has free: exit %d, stderr %q; want exit 1 naming hostB down", code, errOut)
	}

	// wait for all of hostA's GPUs: it waits while hostA:1 is claimed,
	// and hands them out once the claim ends.
	var stdout, stderr bytes.Buffer
	wait := exec.CommandContext(ctx, vramtop, "wait", "--prometheus", prom.URL, "--count", fmt.Sprint(len(pickable)),
		"--settle", "0", "--interval", "1s")
	wait.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	wait.Stdout, wait.Stderr = &stdout, &stderr
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- wait.Wait() }()
	// A while to see the claim (it must not return meanwhile).
	select {
	case err := <-waited:
		t.Fatalf("wait returned while hostA:1 was claimed: %v\n%s%s", err, stdout.String(), stderr.String())
	case <-time.After(3 * time.Second):
	}
	held.Release()
	if err := <-waited; err != nil {
		t.Fatalf("wait: %v\n%s", err, stderr.String())
	}
	var all []string
	for _, g := range pickable {
		all = append(all, "hostA:"+g)
	}
	slices.Sort(all)
	if got := pickLines(stdout.String()); !slices.Equal(got, all) {
		t.Errorf("wait printed %q, want hostA's %q", got, all)
	}

	// Ctrl-C ends a wait that cannot be satisfied: 130 and why it waited.
	stderr.Reset()
	wait = exec.CommandContext(ctx, vramtop, "wait", "--prometheus", prom.URL, "--count", "50", "--interval", "1s")
	wait.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	wait.Stderr = &stderr
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	wait.Process.Signal(syscall.SIGINT)
	wait.Wait()
	if code := wait.ProcessState.ExitCode(); code != 130 || !strings.HasPrefix(stderr.String(), "vramtop wait: interrupted: 50 GPUs asked") ||
		!strings.Contains(stderr.String(), "1 host down (hostB)") {
		t.Errorf("wait after Ctrl-C: exit %d, stderr %q; want 130 and why it waited", code, stderr.String())
	}
}
