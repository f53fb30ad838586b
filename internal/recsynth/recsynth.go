// Package recsynth is a made-up GPU source for the recorder's and replay's
// benchmarks: a busy node of G GPUs with P processes each.
//
// On each GPU one process trains (its memory and utilization change every
// sample); the others hold steady memory that steps up or down once every
// step each (a caching allocator growing, a model reloaded), at times
// spread over that step. Device memory is the processes' sum plus a
// driver reserve, so it changes every sample. Times come from the caller's
// clock, so an hour of it is written in seconds.
package recsynth

import (
	"fmt"
	"time"

	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

const gib = 1 << 30

// Source is G GPUs × P processes.
type Source struct {
	gpus, procs int
	start       time.Time
	step        int64 // seconds
}

// New returns a source of gpus × procs processes whose story starts at
// start, the steady ones changing once every step.
func New(gpus, procs int, start time.Time, step time.Duration) *Source {
	return &Source{gpus: gpus, procs: procs, start: start, step: max(1, int64(step/time.Second))}
}

// Info lists the GPUs.
func (s *Source) Info() sampler.SourceInfo {
	info := sampler.SourceInfo{Kind: "synthetic", Hostname: "node-17", DriverVersion: "580.159.04", CUDAVersion: "13.0"}
	for i := range s.gpus {
		info.Devices = append(info.Devices, sampler.DeviceInfo{
			ID: fmt.Sprint(i), Index: i, Name: "NVIDIA H200", UUID: fmt.Sprintf("GPU-5f2c%04d-0000-0000-0000-00000000%04d", i, i),
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i),
		})
	}
	return info
}

// used is process p of GPU g's memory at t.
func (s *Source) used(g, p int, t time.Time) uint64 {
	sec := int64(t.Sub(s.start) / time.Second)
	if p == 0 {
		// The trainer: a 5 s cycle of activations over its weights.
		return 40*gib + uint64(sec%5)*gib + uint64(t.Sub(s.start)%time.Second/time.Millisecond)<<20
	}
	// A step every s.step, each process at its own phase.
	phase := int64((g*s.procs+p)*37) % s.step
	step := (sec + phase) / s.step
	return 256<<20 + uint64(p%7)*128<<20 + uint64(step%3)*64<<20
}

// ReadMemory fills the devices' memory.
func (s *Source) ReadMemory(now time.Time, out []sampler.MemSample) error {
	for g := range out {
		var sum uint64
		for p := range s.procs {
			sum += s.used(g, p, now)
		}
		total := uint64(143771) << 20
		used := min(sum+600<<20, total)
		out[g] = sampler.MemSample{Total: total, Used: used, Free: total - used, Reserved: 616 << 20, HasReserved: true,
			Util: float64(60 + now.Second()%30), HasUtil: true, TempC: 40 + now.Second()%5, HasTemp: true,
			PowerW: float64(300 + now.Second()*3), HasPower: true}
	}
	return nil
}

// uids are the users' UIDs, 1000 to 1039, shared by every sample (a
// source shares a value that does not change).
var uids = func() (u [40]*uint32) {
	for i := range u {
		u[i] = sampler.Ptr(uint32(1000 + i))
	}
	return u
}()

// ReadProcesses lists every process.
func (s *Source) ReadProcesses(now time.Time, buf []sampler.ProcSample, errs []error) ([]sampler.ProcSample, error) {
	buf = buf[:0]
	for g := range s.gpus {
		for p := range s.procs {
			pid := uint32(100000 + g*s.procs + p)
			buf = append(buf, sampler.ProcSample{Device: g, Process: sampler.Process{
				PID: pid, UsedBytes: sampler.Ptr(s.used(g, p, now)), Type: "compute",
				User: fmt.Sprintf("user%02d", p%40), UID: uids[p%40],
				Command:   fmt.Sprintf("python -m worker --shard %d --gpu %d --config /shared/configs/run-%03d.yaml", p, g, p),
				Visible:   true,
				StartTime: s.start.Add(-time.Duration(g*s.procs+p) * time.Minute),
			}})
		}
	}
	return buf, nil
}

// ReadProcessUtilization reports the trainers' utilization.
func (s *Source) ReadProcessUtilization(now time.Time, out map[sampler.UtilKey]float64) error {
	for g := range s.gpus {
		out[sampler.UtilKey{Device: g, PID: uint32(100000 + g*s.procs)}] = float64(70 + now.Second()%25)
	}
	return nil
}

// Close does nothing.
func (s *Source) Close() error { return nil }

// Record writes span of src, sampled every interval with a fake clock from
// start, to the recording at path, and returns the number of snapshots.
func Record(path string, src sampler.Source, start time.Time, interval, history, span time.Duration) (int, error) {
	now := start
	s, err := sampler.New(src, sampler.Config{Interval: interval, History: history, Now: func() time.Time { return now }})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	w, err := recorder.Open(recorder.Options{Path: path, Interval: interval, History: history, Now: func() time.Time { return now }})
	if err != nil {
		return 0, err
	}
	n := 0
	for ; now.Sub(start) < span; now = now.Add(interval) {
		snap, ok := s.Tick(now)
		if !ok {
			continue
		}
		if err := w.Write(snap); err != nil {
			w.Close()
			return n, err
		}
		n++
	}
	return n, w.Close()
}
