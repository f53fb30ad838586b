package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vramtop/vramtop/internal/testbin"
)

const schemaBase = "https://github.com/vramtop/vramtop/docs/schema/"

// schema compiles docs/schema/NAME (and the schemas it refers to).
func schema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files, err := filepath.Glob("docs/schema/*.schema.json")
	if err != nil || len(files) < 3 {
		t.Fatalf("schemas: %v %v", files, err)
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(schemaBase + name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// validate checks that doc, the output of what, is valid against s.
func validate(t *testing.T, s *jsonschema.Schema, what string, doc []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: not JSON: %v\n%.400s", what, err, doc)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s does not match its schema: %v", what, err)
	}
}

func TestOnceJSONMatchesSchema(t *testing.T) {
	s := schema(t, "snapshot.schema.json")
	out, errOut, code := runCLI(t, "--demo", "--once", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	validate(t, s, "vramtop --demo --once --json", []byte(out))
	// The schema can fail: a document without devices, or with a process
	// list of null, is not one.
	for _, bad := range []string{
		strings.Replace(out, `"devices"`, `"gpus"`, 1),
		strings.Replace(out, `"processes": [`, `"processes": null, "x": [`, 1),
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err == nil && s.Validate(v) == nil {
			t.Errorf("the schema accepts a broken document:\n%.300s", bad)
		}
	}
}

func TestExplainJSONMatchesSchema(t *testing.T) {
	s := schema(t, "explain.schema.json")
	logs, _ := filepath.Glob("advisor/testdata/explain/*.log")
	if len(logs) < 10 {
		t.Fatalf("found %d logs", len(logs))
	}
	for _, log := range logs {
		out, errOut, code := runCLI(t, "explain", "--json", log)
		if code > 1 {
			t.Errorf("explain %s: exit %d: %s", log, code, errOut)
			continue
		}
		validate(t, s, "explain --json "+log, []byte(out))
	}
	out, _, _ := runCLI(t, "explain", "--json", "--live", "--demo", explainLog)
	validate(t, s, "explain --json --live --demo", []byte(out))
}

func TestRunReportMatchesSchema(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	s := schema(t, "run-report.schema.json")
	dir := t.TempDir()
	oom, err := os.ReadFile(explainLog)
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "oom.log")
	os.WriteFile(logFile, oom, 0o644)
	for name, script := range map[string]string{
		"a job that ends well": "sleep 1",
		"a job that runs out":  "sleep 1; cat " + logFile + " >&2; exit 1",
		"a job left running":   "sleep 30 & sleep 1",
	} {
		report := filepath.Join(dir, "report.json")
		cmd := exec.Command(bin, "run", "--demo", "--interval", "100ms", "--report", "json", "--report-file", report, "--kill-leftovers", "--", "sh", "-c", script)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
		out, _ := cmd.CombinedOutput()
		doc, err := os.ReadFile(report)
		if err != nil {
			t.Fatalf("%s: no report: %v\n%s", name, err, out)
		}
		validate(t, s, "run --report json ("+name+")", doc)
		if name == "a job that runs out" && !bytes.Contains(doc, []byte(`"oom"`)) {
			t.Errorf("%s: the report has no oom diagnosis to check", name)
		}
	}
}

// pick --json and wait --json print what docs/schema/pick.schema.json
// says; the fleet's form (host, prometheus) is checked against a real
// Prometheus in fleet/pick_prom_test.go.
func TestPickJSONMatchesSchema(t *testing.T) {
	isolateConfig(t)
	freshClaims(t)
	s := schema(t, "pick.schema.json")
	out, errOut, code := runPickArgs("--demo", "--count", "3", "--json")
	if code != 0 {
		t.Fatalf("pick --json: exit %d: %s", code, errOut)
	}
	validate(t, s, "vramtop pick --demo --json", []byte(out))
	if !strings.Contains(out, `"gpu": "MIG-`) && !strings.Contains(out, `"processes": `) {
		t.Errorf("pick --json lists no GPU with its processes:\n%s", out)
	}
	freshClaims(t)
	out, errOut, code = runWaitArgs(context.Background(), "--demo", "--count", "2", "--settle", "0", "--interval", "100ms", "--json", "--uuid")
	if code != 0 {
		t.Fatalf("wait --json: exit %d: %s", code, errOut)
	}
	validate(t, s, "vramtop wait --demo --json --uuid", []byte(out))
	if strings.Count(out, `"gpu": "GPU-`)+strings.Count(out, `"gpu": "MIG-`) != 2 {
		t.Errorf("wait --json --uuid does not name the two GPUs by UUID:\n%s", out)
	}
	// The schema can fail: a document without GPUs is not one.
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"gpus": []}`))
	if s.Validate(v) == nil {
		t.Error("the schema accepts a document without GPUs")
	}
}
