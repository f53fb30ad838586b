package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// packageDeps maps each package of the module to everything it imports,
// directly or not (go list -deps), for the given environment.
func packageDeps(t *testing.T, env ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		deps[f[0]] = f[1:]
	}
	return deps
}

func hasDep(deps []string, prefix string) bool {
	for _, d := range deps {
		if d == prefix || strings.HasPrefix(d, prefix+"/") {
			return true
		}
	}
	return false
}

// uiPartUses are the other parts a part of the live view draws with.
var uiPartUses = map[string][]string{
	"hosts": {"gpus"}, // each host's GPUs in the GPU pane's compact lines
}

// Only the NVML source links go-nvml, so explain, replay, fleet and the demo
// build for machines without NVML or a C compiler; the advisor knows nothing
// of the terminal.
func TestLayering(t *testing.T) {
	const mod = "github.com/vramtop/vramtop"
	deps := packageDeps(t, "CGO_ENABLED=1")
	if len(deps) < 10 {
		t.Fatalf("go list found %d packages, want the whole module", len(deps))
	}
	for pkg, d := range deps {
		switch pkg {
		case mod, mod + "/nvmlsource":
			continue // the command wires the NVML source in
		}
		if hasDep(d, "github.com/NVIDIA/go-nvml") {
			t.Errorf("%s depends on go-nvml; only %s/nvmlsource may", pkg, mod)
		}
	}
	if !hasDep(deps[mod+"/nvmlsource"], "github.com/NVIDIA/go-nvml") {
		t.Errorf("nvmlsource does not link go-nvml: the check above would pass on anything")
	}
	for _, banned := range []string{"charm.land/bubbletea/v2", "charm.land/lipgloss/v2", "charm.land/bubbles/v2"} {
		for _, pkg := range []string{mod + "/advisor", mod + "/sampler"} {
			if hasDep(deps[pkg], banned) {
				t.Errorf("%s depends on %s", pkg, banned)
			}
		}
	}
	// The fleet reads the series the exporter writes through the names
	// both import, not through the exporter; /proc is read by the sources,
	// not by the sampler, which holds the snapshot contract and the loop.
	for _, dep := range []struct{ pkg, banned string }{
		{mod + "/fleet", mod + "/exporter"},
		{mod + "/sampler", mod + "/hostproc"},
		{mod + "/sampler", mod + "/nvmlsource"},
	} {
		if hasDep(deps[dep.pkg], dep.banned) {
			t.Errorf("%s depends on %s", dep.pkg, dep.banned)
		}
	}
	if !hasDep(deps[mod+"/nvmlsource"], mod+"/hostproc") || !hasDep(deps[mod+"/fleet"], mod+"/metricname") {
		t.Errorf("nvmlsource does not read /proc through hostproc, or fleet not the names through metricname: the check above would pass on anything")
	}
	// The live view is layered: ui/common (the contract, the Context) at
	// the bottom, ui/draw over it, the parts over both, each in its
	// package and none importing another but as listed, and the root
	// (ui) over them all.
	uiParts := 0
	for pkg, d := range deps {
		name, ok := strings.CutPrefix(pkg, mod+"/ui/")
		if !ok {
			continue
		}
		allowed := map[string]bool{mod + "/ui/common": true, mod + "/ui/draw": true}
		switch name {
		case "common":
			allowed = map[string]bool{}
		case "draw":
			allowed = map[string]bool{mod + "/ui/common": true}
		default:
			uiParts++
			for _, also := range uiPartUses[name] {
				allowed[mod+"/ui/"+also] = true
			}
		}
		for _, dep := range d {
			if (dep == mod+"/ui" || strings.HasPrefix(dep, mod+"/ui/")) && !allowed[dep] {
				t.Errorf("%s depends on %s: a part of the live view depends only on ui/common, ui/draw and the parts listed in uiPartUses", pkg, dep)
			}
		}
	}
	if uiParts < 5 || !hasDep(deps[mod+"/ui"], mod+"/ui/common") {
		t.Errorf("%d parts of the live view in packages of their own, or the root does not use ui/common: the check above would pass on anything", uiParts)
	}
	// Without cgo the command itself links no go-nvml either.
	nocgo := packageDeps(t, "CGO_ENABLED=0")
	if hasDep(nocgo[mod], "github.com/NVIDIA/go-nvml") {
		t.Errorf("the command built with CGO_ENABLED=0 still links go-nvml")
	}
}

// A build without cgo runs everything that needs no GPU, and asked for live
// GPUs says in one line what it lacks and what to use instead.
func TestBuildWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := t.TempDir() + "/vramtop"
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	run := func(args ...string) (string, string, int) {
		var o, e bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	_, stderr, code := run("--once")
	if code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "without NVML support") || !strings.Contains(stderr, "--demo") {
		t.Errorf("live GPUs without NVML: exit %d, stderr %q; want exit 2 and one line naming the missing support and --demo", code, stderr)
	}
	if out, stderr, code := run("--demo", "--once", "--json"); code != 0 || !strings.Contains(out, `"demo": true`) {
		t.Errorf("--demo --once --json: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = run("--demo=auto", "--once")
	if code != 0 || !strings.Contains(stderr, "no NVML support; showing the built-in demo") {
		t.Errorf("--demo=auto: exit %d, stderr %q; want the demo and a line saying why", code, stderr)
	}
	log := t.TempDir() + "/oom.log"
	os.WriteFile(log, []byte("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free.\n"), 0o644)
	if out, stderr, code := run("explain", log); code != 0 || !strings.Contains(out, "2.00 GiB") && !strings.Contains(out, "2 GiB") {
		t.Errorf("explain without cgo: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
