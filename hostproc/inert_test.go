package hostproc

import (
	"strings"
	"testing"

	"github.com/vramtop/vramtop/internal/hostile"
	"github.com/vramtop/vramtop/internal/inert"
)

// A process's name, command line and cgroup directories are any user's to
// set: what the reader returns holds no control character.
func TestProcReaderMakesTextInert(t *testing.T) {
	const P = inert.Placeholder
	root := t.TempDir()
	// prctl(PR_SET_NAME) with an empty command line: "[name]".
	must(t, hostile.WriteProc(root, hostile.Proc{PID: 10, Comm: "\x1b]2;owned\a",
		Cgroup: "0::/system.slice/slurmstepd.scope/job_42/step_\x1b]52;c;eA==\a/user/task_0\n"}))
	// C1 controls in the arguments, as UTF-8 and as raw bytes.
	must(t, hostile.WriteProc(root, hostile.Proc{PID: 11, Comm: "python",
		Cmdline: "python\x00\u009b2J\x00\x9d0;t\a\x00\u202egnp\x00",
		Cgroup:  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod\x1b[2J.slice\n"}))
	r := NewProcReader(root)
	r.lookupUID = func(uint32) (string, error) { return "eve\x1b[8m", nil }

	p10 := r.Lookup(10)
	if want := "[" + P + "]2;owned" + P + "]"; p10.Command != want {
		t.Errorf("empty command line, hostile name: %q, want %q", p10.Command, want)
	}
	if p10.Job == nil || p10.Job.SlurmStep != P+"]52;c;eA=="+P {
		t.Errorf("step directory: job %+v, want the step %q", p10.Job, P+"]52;c;eA=="+P)
	}
	p11 := r.Lookup(11)
	if want := "python " + P + "2J " + P + "0;t" + P + " " + P + "gnp"; p11.Command != want {
		t.Errorf("C1 in the command line: %q, want %q", p11.Command, want)
	}
	if p11.Job == nil || p11.Job.K8sPodUID != P+"[2J" {
		t.Errorf("pod directory: job %+v, want the pod %q", p11.Job, P+"[2J")
	}
	if p11.User != "eve"+P+"[8m" {
		t.Errorf("user %q, want %q", p11.User, "eve"+P+"[8m")
	}
	for _, info := range []ProcInfo{p10, p11} {
		for _, s := range []string{info.Command, info.User, info.Job.Name(), info.Job.SlurmStep, info.Job.K8sPodUID, info.Job.K8sQOS} {
			if err := hostile.Check([]byte(s)); err != nil {
				t.Errorf("%q: %v", s, err)
			}
		}
	}
}

// Every hostile string, as a name, an argument and a cgroup directory.
func TestProcReaderHostileStrings(t *testing.T) {
	root := t.TempDir()
	for i, s := range hostile.Strings {
		name := strings.ReplaceAll(s, "\n", "") // comm ends at its newline
		must(t, hostile.WriteProc(root, hostile.Proc{PID: 100 + 2*i, Comm: name,
			Cgroup: "0::/system.slice/slurmstepd.scope/job_7/step_" + s + "\n"}))
		must(t, hostile.WriteProc(root, hostile.Proc{PID: 101 + 2*i, Comm: "x", Cmdline: "a\x00" + s + "\x00b",
			Cgroup: "0::/kubepods/pod" + strings.ReplaceAll(s, "/", "") + "\n"}))
	}
	r := NewProcReader(root)
	for pid := 100; pid < 100+2*len(hostile.Strings); pid++ {
		info := r.Lookup(uint32(pid))
		if info.Command == "" || info.Job == nil {
			t.Fatalf("pid %d: command %q, job %v", pid, info.Command, info.Job)
		}
		for _, s := range []string{info.Command, info.Job.Name(), info.Job.SlurmStep, info.Job.K8sPodUID} {
			if err := hostile.Check([]byte(s)); err != nil {
				t.Errorf("pid %d: %q: %v", pid, s, err)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
