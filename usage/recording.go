package usage

import (
	"context"
	"strings"
	"time"

	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/replay"
	"github.com/vramtop/vramtop/sampler"
)

// AddRecording streams the recording files named (the parts of one
// recording, or recordings of several hosts) through replay's reader into
// a, one line at a time. Damaged lines are skipped and reported through
// warn, as replay reports them. A line whose source had stopped answering
// (stale) is no sample: its devices hold old values. A device that failed
// in a line, and a GPU in MIG mode (its instances are listed, and
// counted, on their own), are left out of it; so are exited processes.
func AddRecording(ctx context.Context, a *Accounter, paths []string, warn func(replay.Warning)) error {
	var s Sample
	var hdr *recorder.Header
	skip := map[string]bool{}
	return replay.Stream(ctx, paths, warn, func(l replay.Line) error {
		if l.Header != hdr {
			hdr = l.Header
			clear(skip)
			for _, d := range hdr.Devices {
				if d.MIGEnabled {
					skip[d.ID] = true
				}
			}
		}
		rec := l.Record
		if rec.Stale {
			return nil
		}
		s.Host, s.Time = hdr.Hostname, rec.T
		s.Interval = time.Duration(hdr.Interval)
		if rec.Interval > 0 {
			s.Interval = time.Duration(rec.Interval)
		}
		if s.Interval <= 0 {
			s.Interval = sampler.DefaultInterval
		}
		s.Devices = s.Devices[:0]
		for i := range rec.Devices {
			d := &rec.Devices[i]
			if d.Err != "" || skip[d.ID] {
				continue
			}
			dev := Device{ID: d.ID, Total: d.MemoryTotal, Used: d.MemoryUsed, Util: d.UtilizationPercent}
			for j := range d.Procs {
				p := &d.Procs[j]
				if p.Exited || p.UsedBytes == nil {
					continue
				}
				dev.Procs = append(dev.Procs, Proc{User: p.User, Job: JobName(p.Job, p.Container), Used: *p.UsedBytes, Util: p.UtilizationPercent})
			}
			s.Devices = append(s.Devices, dev)
		}
		a.Add(s)
		return nil
	})
}

// JobName is the name a job's row goes by: a Slurm job without its step
// ("slurm 4242": the steps of a job are one job), a pod, a container (by
// the cgroup's job, else by the process's container id); "" for none.
func JobName(j *sampler.Job, container string) string {
	if j != nil {
		if j.SlurmJobID != "" {
			return "slurm " + j.SlurmJobID
		}
		if n := j.Name(); n != "" {
			return n
		}
	}
	if container != "" {
		return (&sampler.Job{ContainerID: strings.TrimSpace(container)}).Name()
	}
	return ""
}
