// Package synth is a synthetic fleet for measuring the fleet view: one
// /metrics endpoint that exposes the series of many `vramtop serve` hosts
// (hosts × GPUs devices, a few processes each), as if Prometheus had
// scraped them all, so one test Prometheus holds a fleet's worth of series;
// and the same fleet as a sampler.Source, for the sampler and the advisor
// without Prometheus.
package synth

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// Fleet describes the synthetic fleet.
type Fleet struct {
	Hosts, GPUs, ProcsPerGPU int
	// Start is when the memory curves begin.
	Start time.Time
}

const (
	gib   = 1 << 30
	total = 80 * gib
)

// Used is the synthetic used memory of GPU g of host h at t: a slow wave,
// different for each GPU, between 5% and 95% of the card.
func (f Fleet) Used(h, g int, t time.Time) uint64 {
	phase := float64(h*7+g*3) / 11
	x := 0.5 + 0.45*math.Sin(t.Sub(f.Start).Seconds()/60+phase)
	return uint64(x*float64(total)) &^ (1<<20 - 1)
}

// Series is how many series one scrape exposes.
func (f Fleet) Series() int {
	perGPU := 6 + 3 + f.ProcsPerGPU // vramtop device series, DCGM, processes
	return f.Hosts*f.GPUs*perGPU + f.Hosts
}

// ServeHTTP writes the fleet in the Prometheus text format.
func (f Fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriterSize(w, 1<<16)
	defer bw.Flush()
	now := time.Now()
	type gauge struct {
		name string
		val  func(h, g int, used uint64) float64
	}
	gauges := []gauge{
		{"vramtop_gpu_memory_total_bytes", func(int, int, uint64) float64 { return total }},
		{"vramtop_gpu_memory_used_bytes", func(_, _ int, u uint64) float64 { return float64(u) }},
		{"vramtop_gpu_memory_free_bytes", func(_, _ int, u uint64) float64 { return float64(total - 616<<20 - u) }},
		{"vramtop_gpu_memory_reserved_bytes", func(int, int, uint64) float64 { return 616 << 20 }},
		{"vramtop_gpu_memory_unattributed_bytes", func(int, int, uint64) float64 { return 0 }},
		{"vramtop_gpu_utilization_ratio", func(h, g int, _ uint64) float64 { return float64((h+g)%100) / 100 }},
		{"DCGM_FI_DEV_FB_USED", func(_, _ int, u uint64) float64 { return float64(u >> 20) }},
		{"DCGM_FI_DEV_FB_FREE", func(_, _ int, u uint64) float64 { return float64((total - 616<<20 - u) >> 20) }},
		{"DCGM_FI_DEV_FB_RESERVED", func(int, int, uint64) float64 { return 616 }},
	}
	used := make([]uint64, f.Hosts*f.GPUs)
	for h := 0; h < f.Hosts; h++ {
		for g := 0; g < f.GPUs; g++ {
			used[h*f.GPUs+g] = f.Used(h, g, now)
		}
	}
	for _, gg := range gauges {
		fmt.Fprintf(bw, "# TYPE %s gauge\n", gg.name)
		for h := 0; h < f.Hosts; h++ {
			for g := 0; g < f.GPUs; g++ {
				fmt.Fprintf(bw, "%s{Hostname=\"host%04d\",UUID=\"GPU-%04d-%02d\",device=\"nvidia%d\",gpu=\"%d\",modelName=\"NVIDIA H100 80GB HBM3\",pci_bus_id=\"00000000:%02X:00.0\"} %g\n",
					gg.name, h, h, g, g, g, 0x18+g, gg.val(h, g, used[h*f.GPUs+g]))
			}
		}
	}
	fmt.Fprintf(bw, "# TYPE vramtop_process_gpu_memory_bytes gauge\n")
	for h := 0; h < f.Hosts; h++ {
		for g := 0; g < f.GPUs; g++ {
			u := used[h*f.GPUs+g]
			for p := 0; p < f.ProcsPerGPU; p++ {
				fmt.Fprintf(bw, "vramtop_process_gpu_memory_bytes{Hostname=\"host%04d\",UUID=\"GPU-%04d-%02d\",command=\"python train.py --rank %d\",gpu=\"%d\",pid=\"%d\",type=\"compute\",user=\"user%d\"} %d\n",
					h, h, g, g*f.ProcsPerGPU+p, g, 10000+g*f.ProcsPerGPU+p, h%50, u/uint64(f.ProcsPerGPU))
			}
		}
	}
	fmt.Fprintf(bw, "# TYPE vramtop_up gauge\n")
	for h := 0; h < f.Hosts; h++ {
		fmt.Fprintf(bw, "vramtop_up{Hostname=\"host%04d\"} 1\n", h)
	}
}

// Source is the fleet as a sampler.Source: Hosts × GPUs devices of named
// hosts (as the fleet source lists them), ProcsPerGPU processes each, the
// memory curves of Used at the sampler's clock. Like every Source it is
// used by one goroutine.
type Source struct {
	F    Fleet
	info sampler.SourceInfo
}

// NewSource returns the fleet f as a Source.
func NewSource(f Fleet) *Source {
	s := &Source{F: f, info: sampler.SourceInfo{Kind: "fleet", Hostname: "synthetic"}}
	for h := 0; h < f.Hosts; h++ {
		for g := 0; g < f.GPUs; g++ {
			host := fmt.Sprintf("host%04d", h)
			s.info.Devices = append(s.info.Devices, sampler.DeviceInfo{
				ID: fmt.Sprintf("%s:%d", host, g), Index: g, Hostname: host,
				Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-%04d-%02d", h, g),
			})
		}
	}
	return s
}

// Info lists the devices.
func (s *Source) Info() sampler.SourceInfo { return s.info }

// ReadMemory reads the curves at now.
func (s *Source) ReadMemory(now time.Time, out []sampler.MemSample) error {
	for i := range out {
		h, g := i/s.F.GPUs, i%s.F.GPUs
		u := s.F.Used(h, g, now)
		out[i] = sampler.MemSample{Total: total, Used: u, Free: total - 616<<20 - u, Reserved: 616 << 20, HasReserved: true,
			Util: float64((h + g) % 100), HasUtil: true}
	}
	return nil
}

// ReadProcesses lists ProcsPerGPU processes on each device, sharing its
// used memory.
func (s *Source) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	buf = buf[:0]
	for i := range s.info.Devices {
		h, g := i/s.F.GPUs, i%s.F.GPUs
		u := s.F.Used(h, g, now)
		for p := 0; p < s.F.ProcsPerGPU; p++ {
			buf = append(buf, sampler.ProcSample{Device: i, Process: sampler.Process{PID: uint32(10000 + g*s.F.ProcsPerGPU + p),
				UsedBytes: sampler.Ptr(u / uint64(s.F.ProcsPerGPU)), Type: "compute",
				User: fmt.Sprintf("user%d", h%50), Command: "python train.py", Visible: true}})
		}
	}
	return buf, nil
}

// ReadProcessUtilization has nothing to read.
func (s *Source) ReadProcessUtilization(time.Time, map[sampler.UtilKey]float64) error { return nil }

// Close does nothing.
func (s *Source) Close() error { return nil }
