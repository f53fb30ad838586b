package exporter

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fixedSnapshot has a whole GPU with every optional value, a GPU that only
// supports the v1 memory call, a MIG-enabled GPU with one instance, and a
// lost GPU.
func fixedSnapshot() sampler.Snapshot {
	return sampler.Snapshot{
		Time: t0, Hostname: "node7", Source: "nvml", Interval: time.Second, Seq: 4,
		Devices: []sampler.Device{
			{
				ID: "0", Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-aaaa", PCIBusID: "00000000:18:00.0",
				MemoryTotal: 80*gib + 123, // not a whole MiB
				// 10 GiB and 0.99 MiB: DCGM rounds down to 10240 MiB.
				MemoryUsed:         10*gib + mib - 10_000,
				MemoryFree:         69*gib - 616*mib - mib + 10_123,
				MemoryReserved:     sampler.Ptr(uint64(616*mib + 512)),
				Unattributed:       sampler.Ptr(uint64(1*gib + mib - 10_000)),
				UtilizationPercent: sampler.Ptr(37.5),
				Processes: []sampler.Process{
					{PID: 4242, User: "alice", Command: "/usr/bin/python3 train.py --lr 3e-4", Type: "compute", UsedBytes: sampler.Ptr(uint64(9 * gib)), Visible: true},
					{PID: 77, User: "bob", Command: "/opt/conda/bin/python " + strings.Repeat("x", 100), Type: "compute", UsedBytes: sampler.Ptr(uint64(512 * mib)), Visible: true},
					// Known to hold memory, but the driver does not say how much.
					{PID: 78, User: "bob", Command: "python", Type: "graphics", Visible: true},
					// Exited: still listed by the sampler, not exported.
					{PID: 99, User: "carol", Command: "python old.py", Type: "compute", UsedBytes: sampler.Ptr(uint64(gib)), Exited: true},
				},
			},
			{
				ID: "1", Index: 1, Name: "Tesla V100-SXM2-16GB", UUID: "GPU-bbbb", PCIBusID: "00000000:3B:00.0",
				MemoryTotal: 16 * gib, MemoryUsed: 2*gib + 3*mib/2, MemoryFree: 14*gib - 3*mib/2,
				Processes: []sampler.Process{},
			},
			{
				ID: "2", Index: 2, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-cccc", PCIBusID: "00000000:87:00.0",
				MIGEnabled:  true,
				MemoryTotal: 80 * gib, MemoryUsed: 20 * gib, MemoryFree: 60 * gib,
				Processes: []sampler.Process{},
			},
			{
				ID: "2/3", Index: 2, Name: "NVIDIA A100-SXM4-80GB", UUID: "MIG-dddd", PCIBusID: "00000000:87:00.0",
				MIG:         &sampler.MIGInfo{ParentIndex: 2, GPUInstanceID: 3, Profile: "3g.40gb"},
				MemoryTotal: 40 * gib, MemoryUsed: 20 * gib, MemoryFree: 20 * gib,
				MemoryReserved: sampler.Ptr(uint64(0)),
				Unattributed:   sampler.Ptr(uint64(0)),
				Processes: []sampler.Process{
					{PID: 5000, User: "dave", Command: "./serve", Type: "compute", UsedBytes: sampler.Ptr(uint64(20 * gib)), Visible: true},
				},
			},
			{
				ID: "3", Index: 3, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-eeee", PCIBusID: "00000000:C1:00.0",
				Err: "GPU is lost", Processes: []sampler.Process{},
			},
		},
	}
}

type fakeAlerter struct {
	alerts []advisor.Alert
	calls  int
}

func (f *fakeAlerter) Observe(sampler.Snapshot) []advisor.Alert {
	f.calls++
	return f.alerts
}

func newTestCollector(snap *sampler.Snapshot, al Alerter, now time.Time) *Collector {
	var mon Alerter
	if al != nil {
		mon = al
	}
	return New(func() (sampler.Snapshot, bool) {
		if snap == nil {
			return sampler.Snapshot{}, false
		}
		return *snap, true
	}, Options{Version: "1.2.3", Monitor: mon, Now: func() time.Time { return now }})
}

func TestDCGMDropIns(t *testing.T) {
	snap := fixedSnapshot()
	c := newTestCollector(&snap, nil, t0.Add(2*time.Second))
	want := `
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"} 70039
DCGM_FI_DEV_FB_FREE{UUID="GPU-bbbb",device="nvidia1",gpu="1",hostname="node7",modelName="Tesla V100-SXM2-16GB",pci_bus_id="00000000:3B:00.0"} 14334
DCGM_FI_DEV_FB_FREE{GPU_I_ID="3",GPU_I_PROFILE="3g.40gb",UUID="MIG-dddd",device="nvidia2",gpu="2",hostname="node7",modelName="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"} 20480
# HELP DCGM_FI_DEV_FB_RESERVED Framebuffer memory reserved (in MiB).
# TYPE DCGM_FI_DEV_FB_RESERVED gauge
DCGM_FI_DEV_FB_RESERVED{UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"} 616
DCGM_FI_DEV_FB_RESERVED{GPU_I_ID="3",GPU_I_PROFILE="3g.40gb",UUID="MIG-dddd",device="nvidia2",gpu="2",hostname="node7",modelName="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"} 0
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"} 10240
DCGM_FI_DEV_FB_USED{UUID="GPU-bbbb",device="nvidia1",gpu="1",hostname="node7",modelName="Tesla V100-SXM2-16GB",pci_bus_id="00000000:3B:00.0"} 2049
DCGM_FI_DEV_FB_USED{GPU_I_ID="3",GPU_I_PROFILE="3g.40gb",UUID="MIG-dddd",device="nvidia2",gpu="2",hostname="node7",modelName="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"} 20480
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.DCGMFBUsed, metricname.DCGMFBFree, metricname.DCGMFBReserved); err != nil {
		t.Fatal(err)
	}
}

// The SM and memory clocks are exported as dcgm-exporter exports them, in
// MHz with its labels, where the device reports them.
func TestDCGMClocks(t *testing.T) {
	snap := fixedSnapshot()
	snap.Devices = slices.Clone(snap.Devices)
	snap.Devices[0].SMClockMHz, snap.Devices[0].MemoryClockMHz = sampler.Ptr(1980), sampler.Ptr(2619)
	c := newTestCollector(&snap, nil, t0.Add(2*time.Second))
	h100 := `UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"`
	want := `
# HELP DCGM_FI_DEV_MEM_CLOCK Memory clock frequency (in MHz).
# TYPE DCGM_FI_DEV_MEM_CLOCK gauge
DCGM_FI_DEV_MEM_CLOCK{` + h100 + `} 2619
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{` + h100 + `} 1980
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.DCGMSMClock, metricname.DCGMMemClock); err != nil {
		t.Fatal(err)
	}
}

// vramtop's own device families name the model model_name (Prometheus's
// snake_case); the DCGM_* ones keep dcgm-exporter's modelName.
func TestVramtopDeviceMetrics(t *testing.T) {
	snap := fixedSnapshot()
	c := newTestCollector(&snap, nil, t0.Add(2*time.Second))
	h100 := `UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",model_name="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"`
	v100 := `UUID="GPU-bbbb",device="nvidia1",gpu="1",hostname="node7",model_name="Tesla V100-SXM2-16GB",pci_bus_id="00000000:3B:00.0"`
	a100 := `UUID="GPU-cccc",device="nvidia2",gpu="2",hostname="node7",model_name="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"`
	mig := `GPU_I_ID="3",GPU_I_PROFILE="3g.40gb",UUID="MIG-dddd",device="nvidia2",gpu="2",hostname="node7",model_name="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"`
	want := `
# HELP vramtop_gpu_memory_total_bytes GPU memory in total, in bytes.
# TYPE vramtop_gpu_memory_total_bytes gauge
vramtop_gpu_memory_total_bytes{` + h100 + `} 8.5899346043e+10
vramtop_gpu_memory_total_bytes{` + v100 + `} 1.7179869184e+10
vramtop_gpu_memory_total_bytes{` + a100 + `} 8.589934592e+10
vramtop_gpu_memory_total_bytes{` + mig + `} 4.294967296e+10
# HELP vramtop_gpu_memory_used_bytes GPU memory in use (NVML v2: without the driver's reservation), in bytes.
# TYPE vramtop_gpu_memory_used_bytes gauge
vramtop_gpu_memory_used_bytes{` + h100 + `} 1.0738456816e+10
vramtop_gpu_memory_used_bytes{` + v100 + `} 2.149056512e+09
vramtop_gpu_memory_used_bytes{` + a100 + `} 2.147483648e+10
vramtop_gpu_memory_used_bytes{` + mig + `} 2.147483648e+10
# HELP vramtop_gpu_memory_reserved_bytes GPU memory reserved by the driver, in bytes.
# TYPE vramtop_gpu_memory_reserved_bytes gauge
vramtop_gpu_memory_reserved_bytes{` + h100 + `} 6.45923328e+08
vramtop_gpu_memory_reserved_bytes{` + mig + `} 0
# HELP vramtop_gpu_memory_unattributed_bytes GPU memory in use that no listed process accounts for (other containers or PID namespaces, leaked contexts, the driver), in bytes.
# TYPE vramtop_gpu_memory_unattributed_bytes gauge
vramtop_gpu_memory_unattributed_bytes{` + h100 + `} 1.0747804e+09
vramtop_gpu_memory_unattributed_bytes{` + mig + `} 0
# HELP vramtop_gpu_utilization_ratio GPU utilization as the driver samples it, 0 to 1.
# TYPE vramtop_gpu_utilization_ratio gauge
vramtop_gpu_utilization_ratio{` + h100 + `} 0.375
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.MemoryTotal, metricname.MemoryUsed, metricname.MemoryReserved, metricname.MemoryUnattributed, metricname.Utilization); err != nil {
		t.Fatal(err)
	}
}

func TestProcessMetrics(t *testing.T) {
	snap := fixedSnapshot()
	c := newTestCollector(&snap, nil, t0)
	long := "python " + strings.Repeat("x", MaxCommandLen-len("python ")-1) + "…"
	want := `
# HELP vramtop_process_gpu_memory_bytes GPU memory a process uses on a device (its CUDA context included), in bytes.
# TYPE vramtop_process_gpu_memory_bytes gauge
vramtop_process_gpu_memory_bytes{UUID="GPU-aaaa",command="python3 train.py --lr 3e-4",gpu="0",hostname="node7",pid="4242",type="compute",user="alice"} 9.663676416e+09
vramtop_process_gpu_memory_bytes{UUID="GPU-aaaa",command="` + long + `",gpu="0",hostname="node7",pid="77",type="compute",user="bob"} 5.36870912e+08
vramtop_process_gpu_memory_bytes{GPU_I_ID="3",UUID="MIG-dddd",command="serve",gpu="2",hostname="node7",pid="5000",type="compute",user="dave"} 2.147483648e+10
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.ProcessMemory); err != nil {
		t.Fatal(err)
	}
	// A process whose memory the driver does not report is listed apart,
	// never as 0 bytes.
	unknown := `
# HELP vramtop_process_gpu_memory_unknown 1 for a process the driver lists on a device without saying how much memory it uses.
# TYPE vramtop_process_gpu_memory_unknown gauge
vramtop_process_gpu_memory_unknown{UUID="GPU-aaaa",command="python",gpu="0",hostname="node7",pid="78",type="graphics",user="bob"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(unknown), metricname.ProcessUnknown); err != nil {
		t.Fatal(err)
	}
}

func TestLostGPUHasNoSeries(t *testing.T) {
	snap := fixedSnapshot()
	c := newTestCollector(&snap, nil, t0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	healthy := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == metricname.LabelUUID && lp.GetValue() == "GPU-eeee" {
					t.Errorf("%s exported for a lost GPU", mf.GetName())
				}
				if lp.GetName() == metricname.LabelUUID && lp.GetValue() == "GPU-aaaa" {
					healthy++
				}
			}
		}
	}
	// Without the healthy GPU's series the check above would pass on
	// nothing.
	if healthy == 0 {
		t.Error("no series for the healthy GPU-aaaa either")
	}
}

func TestHostnameOverride(t *testing.T) {
	snap := fixedSnapshot()
	snap.Devices = snap.Devices[1:2]
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{Hostname: "hostA", Now: func() time.Time { return t0 }})
	want := `
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{UUID="GPU-bbbb",device="nvidia1",gpu="1",hostname="hostA",modelName="Tesla V100-SXM2-16GB",pci_bus_id="00000000:3B:00.0"} 2049
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.DCGMFBUsed); err != nil {
		t.Fatal(err)
	}
}

func TestMiBRoundsDownLikeDCGM(t *testing.T) {
	for _, tc := range []struct {
		bytes uint64
		want  float64
	}{
		{0, 0}, {mib - 1, 0}, {mib, 1}, {2*mib - 1, 1}, {80 * gib, 81920}, {80*gib - 1, 81919},
	} {
		if got := MiB(tc.bytes); got != tc.want {
			t.Errorf("MiB(%d) = %v, want %v", tc.bytes, got, tc.want)
		}
	}
}

func TestAlerts(t *testing.T) {
	snap := fixedSnapshot()
	al := &fakeAlerter{alerts: []advisor.Alert{
		{Rule: "threshold", Severity: advisor.Crit, DeviceID: "0"},
		{Rule: "leak_suspect", Severity: advisor.Warn, DeviceID: "0", PID: 4242},
		{Rule: "threshold", Severity: advisor.Warn, DeviceID: "2/3"},
	}}
	c := newTestCollector(&snap, al, t0)
	want := `
# HELP vramtop_alert 1 while an advisor rule fires on a GPU (or a process on it, with pid).
# TYPE vramtop_alert gauge
vramtop_alert{gpu="0",hostname="node7",rule="threshold",severity="crit"} 1
vramtop_alert{gpu="0",hostname="node7",pid="4242",rule="leak_suspect",severity="warn"} 1
vramtop_alert{GPU_I_ID="3",gpu="2",hostname="node7",rule="threshold",severity="warn"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.Alert); err != nil {
		t.Fatal(err)
	}
	// The snapshot was observed once, by the first scrape; scraping it again
	// must not feed it to the rules twice.
	c.Observe(snap)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.Alert); err != nil {
		t.Fatal(err)
	}
	if al.calls != 1 {
		t.Errorf("monitor observed the same snapshot %d times, want once", al.calls)
	}
	// A cleared alert disappears.
	al.alerts = nil
	snap.Seq++
	c.Observe(snap)
	if n := testutil.CollectAndCount(c, metricname.Alert); n != 0 {
		t.Errorf("%d alert series after the alerts cleared, want 0", n)
	}
}

func TestUpAndAge(t *testing.T) {
	snap := fixedSnapshot()
	for _, tc := range []struct {
		name    string
		snap    *sampler.Snapshot
		now     time.Time
		wantUp  string
		wantAge string
	}{
		{"fresh", &snap, t0.Add(1500 * time.Millisecond), "1", "1.5"},
		{"stale", &snap, t0.Add(time.Minute), "0", "60"},
		{"none", nil, t0, "0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCollector(tc.snap, nil, tc.now)
			want := `
# HELP vramtop_up 1 when the exporter has a recent sample of the GPUs and the last poll succeeded, 0 otherwise.
# TYPE vramtop_up gauge
vramtop_up{hostname="` + map[bool]string{true: "node7", false: ""}[tc.snap != nil] + `"} ` + tc.wantUp + "\n"
			if tc.wantAge != "" {
				want += `# HELP vramtop_last_sample_age_seconds Seconds since the GPUs were last sampled.
# TYPE vramtop_last_sample_age_seconds gauge
vramtop_last_sample_age_seconds{hostname="node7"} ` + tc.wantAge + "\n"
			}
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.Up, metricname.SampleAge); err != nil {
				t.Fatal(err)
			}
		})
	}
	failed := fixedSnapshot()
	failed.Err = "NVML: driver not loaded"
	c := newTestCollector(&failed, nil, t0)
	if v := testutil.ToFloat64(onlyMetric(c, metricname.Up)); v != 0 {
		t.Errorf("vramtop_up = %v while the source fails, want 0", v)
	}
}

// onlyMetric narrows c to the metrics called name.
func onlyMetric(c prometheus.Collector, name string) prometheus.Collector {
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		all := make(chan prometheus.Metric)
		go func() { c.Collect(all); close(all) }()
		for m := range all {
			if strings.Contains(m.Desc().String(), `fqName: "`+name+`"`) {
				ch <- m
			}
		}
	})
}

type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(f, ch) }
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func TestBuildInfoAndLint(t *testing.T) {
	snap := fixedSnapshot()
	c := newTestCollector(&snap, &fakeAlerter{}, t0)
	if n := testutil.CollectAndCount(c, metricname.BuildInfo); n != 1 {
		t.Fatalf("%d build-info series, want 1", n)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// dcgm-exporter's names are what dashboards expect; only vramtop's
		// own must follow the naming conventions.
		// vramtop's device labels are dcgm-exporter's (modelName), so the
		// two join.
		if strings.HasPrefix(p.Metric, "DCGM_") || strings.Contains(p.Text, "camelCase") {
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestShortCommand(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "",
		"/usr/bin/python3  -m   torch.run x": "python3 -m torch.run x",
		"./serve":                            "serve",
		"nvidia-smi":                         "nvidia-smi",
	} {
		if got := ShortCommand(in); got != want {
			t.Errorf("ShortCommand(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ShortCommand(strings.Repeat("é", 200)); len([]rune(got)) != MaxCommandLen {
		t.Errorf("shortened command has %d characters, want %d", len([]rune(got)), MaxCommandLen)
	}
}

func TestHandler(t *testing.T) {
	snap := fixedSnapshot()
	now := t0.Add(time.Second)
	var have bool
	c := New(func() (sampler.Snapshot, bool) { return snap, have }, Options{Now: func() time.Time { return now }})
	srv := httptest.NewServer(Handler(c))
	defer srv.Close()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before the first sample: %d %q, want 503", code, body)
	}
	have = true
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with a fresh sample: %d %q, want 200", code, body)
	}
	code, body := get("/metrics")
	if code != http.StatusOK || !strings.Contains(body, `DCGM_FI_DEV_FB_USED{UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"} 10240`) {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	now = t0.Add(time.Hour)
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "old") {
		t.Errorf("/healthz with an hour-old sample: %d %q, want 503", code, body)
	}
}

func TestListenTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("Listen on a taken port: %v, want an 'already in use' error", err)
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), 5*time.Second)
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Error("server still answers after shutdown")
	} else if !errors.Is(err, errAddrInUse) && !strings.Contains(err.Error(), "refused") {
		t.Logf("after shutdown: %v", err)
	}
}
