package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/hostile"
	"github.com/vramtop/vramtop/sampler"
)

// hostileSnapshot is fixedSnapshot with s in every string a label takes.
func hostileSnapshot(s string) sampler.Snapshot {
	snap := fixedSnapshot()
	snap.Hostname = "node" + s
	for i := range snap.Devices {
		d := &snap.Devices[i]
		d.Name, d.UUID, d.PCIBusID = d.Name+s, d.UUID+s, d.PCIBusID+s
		if d.MIG != nil {
			d.MIG.Profile += s
		}
		for j := range d.Processes {
			p := &d.Processes[j]
			p.Command, p.User, p.Type, p.Container = "python "+s, p.User+s, p.Type+s, "ct"+s
			p.Job = &sampler.Job{SlurmJobID: "42" + s, K8sPodUID: "pod" + s}
		}
	}
	return snap
}

// Whatever a source hands it, the page /metrics serves holds no control
// character in a label: fleet --once, run by an administrator on another
// machine, prints those labels.
func TestPageLabelsAreInert(t *testing.T) {
	for _, s := range hostile.Strings {
		snap := hostileSnapshot(s)
		c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{Version: "1", Now: func() time.Time { return t0 }})
		page := c.Page(nil)
		if err := hostile.Check(page); err != nil {
			t.Errorf("%q: the page: %v", s, err)
		}
		if !strings.Contains(string(page), `command="python `) {
			t.Errorf("%q: no command label:\n%s", s, page)
		}
	}
}

// --no-command-labels leaves the command out, nothing else.
func TestNoCommandLabels(t *testing.T) {
	snap := fixedSnapshot()
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{Version: "1", NoCommandLabels: true, Now: func() time.Time { return t0 }})
	page := string(c.Page(nil))
	if strings.Contains(page, "command=") || strings.Contains(page, "train.py") {
		t.Errorf("a command line is exported:\n%s", page)
	}
	want := `vramtop_process_gpu_memory_bytes{UUID="GPU-aaaa",gpu="0",hostname="node7",pid="4242",type="compute",user="alice"} 9.663676416e+09`
	if !strings.Contains(page, want+"\n") {
		t.Errorf("the page lacks\n%s\n%s", want, page)
	}
}
