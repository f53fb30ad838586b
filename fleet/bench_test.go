package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/fleet"
	"github.com/vramtop/vramtop/fleet/internal/synth"
	"github.com/vramtop/vramtop/internal/cputime"
	"github.com/vramtop/vramtop/sampler"
)

// The fleet sizes of the benchmarks: hosts × 8 GPUs, 2 processes a GPU.
var benchSizes = []int{1000, 2000}

func benchFleet(hosts int) synth.Fleet {
	return synth.Fleet{Hosts: hosts, GPUs: 8, ProcsPerGPU: 2, Start: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

// benchSampler is a sampler over the synthetic fleet of hosts × 8 GPUs at
// the fleet command's interval and history, on the fake clock it returns.
func benchSampler(b *testing.B, hosts int) (*sampler.Sampler, *time.Time) {
	f := benchFleet(hosts)
	clk := f.Start
	s, err := sampler.New(synth.NewSource(f), sampler.Config{Interval: 5 * time.Second, History: sampler.DefaultHistory, Now: func() time.Time { return clk }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, &clk
}

// BenchmarkFleetTick is the sampler's tick over a fleet (the fleet
// command's interval and history, a fake clock): what the fleet view's
// sampler spends per tick once Prometheus has answered.
func BenchmarkFleetTick(b *testing.B) {
	for _, hosts := range benchSizes {
		b.Run(fmt.Sprintf("%dx8", hosts), func(b *testing.B) {
			s, clk := benchSampler(b, hosts)
			s.Tick(*clk)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Now()
			for b.Loop() {
				*clk = clk.Add(5 * time.Second)
				s.Tick(*clk)
			}
			cputime.Report(b, cpu)
		})
	}
}

// BenchmarkFleetObserve is every advisor rule over a fleet snapshot (the
// monitor the fleet view runs on each snapshot); about a quarter of the GPUs
// are over the warning line (GPUs-over-warn), so freer_gpu looks for a
// freer GPU for each of them.
func BenchmarkFleetObserve(b *testing.B) {
	for _, hosts := range benchSizes {
		b.Run(fmt.Sprintf("%dx8", hosts), func(b *testing.B) {
			s, clk := benchSampler(b, hosts)
			var snap sampler.Snapshot
			for range 12 { // a minute of history
				*clk = clk.Add(5 * time.Second)
				snap, _ = s.Tick(*clk)
			}
			m := advisor.NewMonitor(advisor.Config{Thresholds: advisor.DefaultThresholds()})
			over := 0
			for _, d := range snap.Devices {
				if d.UsedPercent() >= advisor.DefaultThresholds().Warn {
					over++
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Now()
			for i := 0; b.Loop(); i++ {
				snap.Time = clk.Add(time.Duration(i%12) * 5 * time.Second)
				snap.Seq++
				m.Observe(snap)
			}
			cputime.Report(b, cpu)
			b.ReportMetric(float64(over), "GPUs-over-warn")
		})
	}
}

// fleetAnswers are Prometheus's answers to the fleet's instant queries for
// f, as JSON.
func fleetAnswers(f synth.Fleet, now time.Time) map[string][]byte {
	type series struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	ts := float64(now.UnixMilli()) / 1e3
	answers := map[string][]series{}
	add := func(q string, m map[string]string, v float64) {
		answers[q] = append(answers[q], series{m, [2]any{ts, fmt.Sprint(v)}})
	}
	for h := 0; h < f.Hosts; h++ {
		host := fmt.Sprintf("host%04d", h)
		inst := fmt.Sprintf("10.0.%d.%d:9400", h/250, h%250)
		for g := 0; g < f.GPUs; g++ {
			u := f.Used(h, g, now)
			dev := map[string]string{"__name__": "vramtop_gpu_memory_total_bytes", "hostname": host, "gpu": fmt.Sprint(g),
				"UUID": fmt.Sprintf("GPU-%04d-%02d", h, g), "modelName": "NVIDIA H100 80GB HBM3", "device": fmt.Sprintf("nvidia%d", g),
				"pci_bus_id": fmt.Sprintf("00000000:%02X:00.0", 0x18+g), "instance": inst, "job": "vramtop"}
			add(fleet.QueryDevices, dev, 80<<30)
			add(fleet.QueryReserved, map[string]string{"hostname": host, "gpu": fmt.Sprint(g)}, 616<<20)
			for name, v := range map[string]float64{
				"vramtop_gpu_memory_used_bytes": float64(u), "vramtop_gpu_utilization_ratio": 0.5,
				"DCGM_FI_DEV_GPU_TEMP": 55, "DCGM_FI_DEV_POWER_USAGE": 400,
			} {
				add(fleet.QueryValues, map[string]string{"__name__": name, "hostname": host, "gpu": fmt.Sprint(g)}, v)
			}
			for p := 0; p < f.ProcsPerGPU; p++ {
				add(fleet.QueryProcs, map[string]string{"__name__": "vramtop_process_gpu_memory_bytes", "hostname": host, "gpu": fmt.Sprint(g),
					"pid": fmt.Sprint(10000 + g*f.ProcsPerGPU + p), "user": fmt.Sprintf("user%d", h%50), "command": "python train.py", "type": "compute"},
					float64(u/uint64(f.ProcsPerGPU)))
			}
		}
		add(fleet.QueryValues, map[string]string{"__name__": "vramtop_up", "hostname": host}, 1)
	}
	out := map[string][]byte{}
	for _, q := range []string{fleet.QueryDevices, fleet.QueryReserved, fleet.QueryValues, fleet.QueryProcs, fleet.QueryDCGM, fleet.QueryTargets, fleet.QueryAlerts, fleet.QueryClaims} {
		res := answers[q]
		if res == nil {
			res = []series{}
		}
		// In Prometheus's order: status, then data's resultType before
		// its result.
		type data struct {
			ResultType string   `json:"resultType"`
			Result     []series `json:"result"`
		}
		b, _ := json.Marshal(struct {
			Status string `json:"status"`
			Data   data   `json:"data"`
		}{"success", data{"vector", res}})
		out[q] = b
	}
	return out
}

// BenchmarkFleetRefresh is one round of the fleet's queries against a
// Prometheus that answers at once (canned answers over loopback HTTP): the
// transfer, the decoding and the building of the device list,
// without Prometheus's own time (TestFleetScale measures that).
func BenchmarkFleetRefresh(b *testing.B) {
	for _, hosts := range benchSizes {
		b.Run(fmt.Sprintf("%dx8", hosts), func(b *testing.B) {
			f := benchFleet(hosts)
			answers := fleetAnswers(f, f.Start)
			size := 0
			for _, a := range answers {
				size += len(a)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.ParseForm()
				w.Header().Set("Content-Type", "application/json")
				w.Write(answers[r.Form.Get("query")])
			}))
			defer srv.Close()
			src, err := fleet.Open(context.Background(), fleet.Config{URL: srv.URL, Interval: time.Hour, Timeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			ctx := context.Background()
			src.WaitFirst(ctx)
			if n := len(src.Info().Devices); n != hosts*8 {
				b.Fatalf("%d devices, want %d", n, hosts*8)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Now()
			for b.Loop() {
				src.Refresh(ctx)
			}
			cputime.Report(b, cpu)
			// All the answers, QueryDevices' included (asked on 1 round
			// in identityEvery, and when a device appears).
			b.ReportMetric(float64(size)/(1<<20), "MiB-answers")
		})
	}
}

// BenchmarkFleetPick is one vramtop pick --prometheus against canned
// answers over loopback HTTP (as BenchmarkFleetRefresh): the source
// opened, its first round, a snapshot and the choice. every-host reads
// every host's processes (pick before it read only those it needs, and
// pick --json); lean reads none but those of the hosts whose GPUs tie
// for the pick (ProcessesMatter, ReadTiedProcesses).
func BenchmarkFleetPick(b *testing.B) {
	for _, hosts := range benchSizes {
		f := benchFleet(hosts)
		answers := fleetAnswers(f, f.Start)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			w.Header().Set("Content-Type", "application/json")
			q := r.Form.Get("query")
			if a, ok := answers[q]; ok {
				w.Write(a)
				return
			}
			w.Write(hostsProcesses(f, q, f.Start)) // ReadProcessesOf's
		}))
		for _, lean := range []bool{false, true} {
			name := map[bool]string{false: "every-host", true: "lean"}[lean]
			b.Run(fmt.Sprintf("%dx8/%s", hosts, name), func(b *testing.B) {
				ctx := context.Background()
				tied := 0
				b.ReportAllocs()
				cpu := cputime.Now()
				for b.Loop() {
					src, err := fleet.Open(ctx, fleet.Config{URL: srv.URL, Interval: time.Hour, Timeout: time.Minute, OpenHostProcesses: lean})
					if err != nil {
						b.Fatal(err)
					}
					src.WaitFirst(ctx)
					s, err := sampler.New(src, sampler.Config{Interval: 5 * time.Second, History: time.Minute})
					if err != nil {
						b.Fatal(err)
					}
					snap := s.Once()
					opt := advisor.PickOptions{Count: 1}
					if view, _ := fleet.Pickable(snap, src.Claims()); lean {
						h := fleet.ProcessesMatter(view, opt)
						tied = len(h)
						if snap, err = src.ReadTiedProcesses(ctx, snap, h); err != nil {
							b.Fatal(err)
						}
					}
					if len(snap.Devices) != hosts*8 {
						b.Fatalf("%d devices, want %d", len(snap.Devices), hosts*8)
					}
					if _, err := fleet.Choose(snap, src.Claims(), opt, false); err != nil {
						b.Fatal(err)
					}
					s.Close()
				}
				cputime.Report(b, cpu)
				b.ReportMetric(float64(tied), "hosts-tied")
			})
		}
		srv.Close()
	}
}

// hostsProcesses answers ProcsQuery for the hosts its hostname matcher
// names (`hostname=~"host0001|host0042"`): their processes, as
// fleetAnswers has them.
func hostsProcesses(f synth.Fleet, q string, now time.Time) []byte {
	m := regexp.MustCompile(`hostname=~"([^"]*)"`).FindStringSubmatch(q)
	var res []map[string]any
	if m != nil {
		for _, host := range strings.Split(m[1], "|") {
			var h int
			fmt.Sscanf(host, "host%d", &h)
			for g := 0; g < f.GPUs; g++ {
				u := f.Used(h, g, now)
				for p := 0; p < f.ProcsPerGPU; p++ {
					res = append(res, map[string]any{"metric": map[string]string{"__name__": "vramtop_process_gpu_memory_bytes", "hostname": host, "gpu": fmt.Sprint(g),
						"pid": fmt.Sprint(10000 + g*f.ProcsPerGPU + p), "user": fmt.Sprintf("user%d", h%50), "command": "python train.py", "type": "compute"},
						"value": []any{float64(now.UnixMilli()) / 1e3, fmt.Sprint(float64(u / uint64(f.ProcsPerGPU)))}})
				}
			}
		}
	}
	if res == nil {
		res = []map[string]any{}
	}
	out, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": res}})
	return out
}
