package exporter

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
)

// gathered is what client_golang's own encoder writes for c.
func gathered(t *testing.T, c *Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}

// TestPageIsTheTextFormat: the page vramtop writes itself has the lines
// client_golang's encoder writes for the same metrics (escaping included:
// a quote, a backslash and a newline in a command, and bytes that are not
// UTF-8).
func TestPageIsTheTextFormat(t *testing.T) {
	snap := fixedSnapshot()
	snap.Devices[0].Processes = append(snap.Devices[0].Processes,
		sampler.Process{PID: 31, User: "eve\nx", Command: "sh -c \"echo \\\\ done\"\nnext \xff\xfe", Type: "compute", UsedBytes: sampler.Ptr(uint64(mib)), Visible: true})
	snap.Devices[0].TemperatureC = sampler.Ptr(61)
	snap.Devices[0].PowerWatts = sampler.Ptr(312.5)
	al := &fakeAlerter{alerts: []advisor.Alert{{Rule: "threshold", Severity: advisor.Crit, DeviceID: "2/3"}}}
	c := newTestCollector(&snap, al, t0.Add(2*time.Second))
	page := string(c.Page(nil))
	want := gathered(t, c)
	if got, w := sortedLines(page), sortedLines(want); !slices.Equal(got, w) {
		t.Errorf("page differs from client_golang's encoding:\n--- page\n%s\n--- client_golang\n%s", page, want)
	}
	if !strings.Contains(page, `command="sh -c \"echo \\\\ done\" next �"`) || !strings.Contains(page, "user=\"eve\uFFFDx\"") {
		t.Errorf("escaped command not in the page:\n%s", page)
	}
	// The page parses.
	if _, err := textParser().TextToMetricFamilies(strings.NewReader(page)); err != nil {
		t.Errorf("the page does not parse: %v", err)
	}
}

// TestPageEncodedOncePerSnapshot: scrapes of one snapshot get the bytes
// encoded for it (even if the snapshot value changed under the same
// sequence number, which the sampler never does); a new snapshot is
// encoded anew. The sample's age is always of the moment.
func TestPageEncodedOncePerSnapshot(t *testing.T) {
	snap := fixedSnapshot()
	now := t0.Add(time.Second)
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{Now: func() time.Time { return now }})
	first := string(c.Page(nil))
	snap.Devices[1].MemoryUsed += gib
	now = t0.Add(2 * time.Second)
	second := string(c.Page(nil))
	strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, metricname.SampleAge+"{") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if strip(first) != strip(second) {
		t.Error("the same snapshot was encoded twice")
	}
	if !strings.Contains(second, metricname.SampleAge+`{hostname="node7"} 2`) {
		t.Errorf("sample age not of the moment:\n%s", second)
	}
	snap.Seq++
	if third := string(c.Page(nil)); strip(third) == strip(second) || !strings.Contains(third, `gpu="1",hostname="node7",modelName="Tesla V100-SXM2-16GB",pci_bus_id="00000000:3B:00.0"} 3073`) {
		t.Errorf("a new snapshot kept the old page:\n%s", third)
	}
}

// manyProcs is one GPU with n processes, process k using k+1 MiB.
func manyProcs(n int) sampler.Snapshot {
	snap := fixedSnapshot()
	d := snap.Devices[1]
	d.Processes = nil
	for k := range n {
		d.Processes = append(d.Processes, sampler.Process{PID: uint32(1000 + k), User: "u", Command: "python", Type: "compute", UsedBytes: sampler.Ptr(uint64(k+1) * mib), Visible: true})
	}
	snap.Devices = []sampler.Device{d}
	return snap
}

// TestMaxProcessSeries: only the largest processes of a GPU get series,
// the others are counted and their memory summed; the GPU's own series are
// complete either way.
func TestMaxProcessSeries(t *testing.T) {
	snap := manyProcs(30)
	for _, tc := range []struct {
		max          int
		wantPIDs     []int
		wantUnlisted int
		wantMiB      float64 // of the unlisted: 1 + 2 + ... MiB
	}{
		{0, pidRange(1029, 1010), 10, 55}, // the default: 20
		{3, pidRange(1029, 1027), 27, 378},
		{-1, pidRange(1029, 1000), 0, 0},
	} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{MaxProcessSeries: tc.max, Now: func() time.Time { return t0 }})
			mfs, err := textParser().TextToMetricFamilies(bytes.NewReader(c.Page(nil)))
			if err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, m := range mfs[metricname.ProcessMemory].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "pid" {
						var pid int
						fmt.Sscan(l.GetValue(), &pid)
						pids = append(pids, pid)
					}
				}
			}
			slices.Sort(pids)
			slices.Reverse(pids)
			if !slices.Equal(pids, tc.wantPIDs) {
				t.Errorf("PIDs with series %v, want %v", pids, tc.wantPIDs)
			}
			if got := mfs[metricname.ProcessesUnlisted].GetMetric()[0].GetGauge().GetValue(); got != float64(tc.wantUnlisted) {
				t.Errorf("%s = %v, want %d", metricname.ProcessesUnlisted, got, tc.wantUnlisted)
			}
			if got := mfs[metricname.MemoryUnlisted].GetMetric(); len(got) != 1 || got[0].GetGauge().GetValue() != tc.wantMiB*mib {
				t.Errorf("%s = %v, want %v MiB", metricname.MemoryUnlisted, got, tc.wantMiB)
			}
			if n := len(mfs[metricname.MemoryUsed].GetMetric()); n != 1 {
				t.Errorf("%d device series, want 1", n)
			}
		})
	}
}

// TestUnlistedMemoryUnknown: when a process without a series of its own
// has no known usage, the memory of those processes is unknown: no
// series, not a smaller sum.
func TestUnlistedMemoryUnknown(t *testing.T) {
	snap := manyProcs(5)
	snap.Devices[0].Processes[0].UsedBytes = nil // the smallest: not listed
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{MaxProcessSeries: 2, Now: func() time.Time { return t0 }})
	mfs, err := textParser().TextToMetricFamilies(bytes.NewReader(c.Page(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := mfs[metricname.ProcessesUnlisted].GetMetric(); len(got) != 1 || got[0].GetGauge().GetValue() != 3 {
		t.Errorf("%s = %v, want 3", metricname.ProcessesUnlisted, got)
	}
	if got, ok := mfs[metricname.MemoryUnlisted]; ok {
		t.Errorf("%s = %v, want no series", metricname.MemoryUnlisted, got.GetMetric())
	}
}

func pidRange(from, to int) []int {
	var out []int
	for p := from; p >= to; p-- {
		out = append(out, p)
	}
	return out
}

// TestTemperaturePowerUtilization are exported under dcgm-exporter's names
// and units, where the device reports them.
func TestTemperaturePowerUtilization(t *testing.T) {
	snap := fixedSnapshot()
	snap.Devices[0].TemperatureC = sampler.Ptr(61)
	snap.Devices[0].PowerWatts = sampler.Ptr(312.5)
	c := newTestCollector(&snap, nil, t0)
	page := string(c.Page(nil))
	h100 := `{UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"}`
	for _, want := range []string{metricname.DCGMGPUTemp + h100 + " 61", metricname.DCGMPowerUsage + h100 + " 312.5", metricname.DCGMGPUUtil + h100 + " 37.5"} {
		if !strings.Contains(page, want+"\n") {
			t.Errorf("page lacks %s", want)
		}
	}
	// The V100 reports none of them: no series, not zeros.
	for _, name := range []string{metricname.DCGMGPUTemp, metricname.DCGMPowerUsage, metricname.DCGMGPUUtil} {
		if strings.Contains(page, name+`{UUID="GPU-bbbb"`) {
			t.Errorf("%s exported for a GPU that does not report it", name)
		}
	}
}

// TestManyScrapersAllServed: 200 clients scraping at once all get the
// page (no in-flight limit turns them away).
func TestManyScrapersAllServed(t *testing.T) {
	snap := manyProcs(1000)
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{Now: func() time.Time { return t0 }})
	srv := httptest.NewServer(Handler(c))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 200}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	const n = 200
	codes := make([]int, n)
	bad := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			resp, err := client.Get(srv.URL + "/metrics")
			if err != nil {
				bad[i] = err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
			if !bytes.Contains(b, []byte(metricname.DCGMFBUsed+"{")) {
				bad[i] = "no device series"
			}
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for i := range n {
		if codes[i] == http.StatusOK && bad[i] == "" {
			ok++
		} else if ok == i {
			t.Logf("client %d: %d %s", i, codes[i], bad[i])
		}
	}
	if ok != n {
		t.Errorf("%d of %d scrapes answered 200 with the page", ok, n)
	}
}

func textParser() *expfmt.TextParser {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return &p
}

// TestJobLabels: a process's container, Slurm job and pod are labels of its
// series where known, and absent where not.
func TestJobLabels(t *testing.T) {
	snap := fixedSnapshot()
	ps := snap.Devices[0].Processes
	ps[0].Container = "9b1e4a7c2f5d"
	ps[0].Job = &sampler.Job{SlurmJobID: "4242", SlurmStep: "0"}
	ps[1].Job = &sampler.Job{K8sPodUID: "1a2b3c4d-0000-1111-2222-333344445555", ContainerID: "abc"}
	c := newTestCollector(&snap, nil, t0)
	page := string(c.Page(nil))
	for _, want := range []string{
		`vramtop_process_gpu_memory_bytes{UUID="GPU-aaaa",command="python3 train.py --lr 3e-4",container_id="9b1e4a7c2f5d",gpu="0",hostname="node7",hpc_job="4242",pid="4242",type="compute",user="alice"} `,
		`,gpu="0",hostname="node7",pid="77",pod_uid="1a2b3c4d-0000-1111-2222-333344445555",type="compute",user="bob"} `,
		`vramtop_process_gpu_memory_bytes{GPU_I_ID="3",UUID="MIG-dddd",command="serve",gpu="2",hostname="node7",pid="5000",type="compute",user="dave"} `,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if got, w := sortedLines(page), sortedLines(gathered(t, c)); !slices.Equal(got, w) {
		t.Error("page differs from client_golang's encoding")
	}
}
