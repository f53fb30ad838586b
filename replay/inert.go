package replay

import (
	"reflect"

	"github.com/vramtop/vramtop/internal/inert"
	"github.com/vramtop/vramtop/recorder"
	"github.com/vramtop/vramtop/sampler"
)

// A recording may come from another machine, or be written by hand: every
// string it holds is made inert (internal/inert) as it is decoded, before
// any screen, table or report sees it.

// inertHeader makes the strings of a header line inert.
func inertHeader(h *recorder.Header) {
	for _, p := range []*string{&h.Program, &h.Hostname, &h.Source, &h.DriverVersion, &h.NVMLVersion, &h.CUDAVersion} {
		*p = inert.String(*p)
	}
	for i := range h.Devices {
		d := &h.Devices[i]
		// Every text of the device's description.
		v := reflect.ValueOf(d).Elem()
		for j := range v.NumField() {
			if f := v.Field(j); f.Kind() == reflect.String {
				f.SetString(inert.String(f.String()))
			}
		}
		if d.MIG != nil && !inert.Is(d.MIG.Profile) {
			m := *d.MIG
			m.Profile = inert.String(m.Profile)
			d.MIG = &m
		}
	}
}

// inertRecord makes the strings of a decoded record inert.
func inertRecord(r *recorder.Record) {
	inertStrings(r.Warnings)
	r.Err = inert.String(r.Err)
	for i := range r.Devices {
		d := &r.Devices[i]
		d.EachText(inertString)
		for j := range d.Procs {
			p := &d.Procs[j]
			p.EachText(inertString)
			p.Job = inertJob(p.Job)
		}
	}
}

func inertString(s *string) { *s = inert.String(*s) }

func inertStrings(ss []string) {
	for i, s := range ss {
		ss[i] = inert.String(s)
	}
}

// inertJob is j, or an inert copy of it (a job may be shared with the
// keyframe a delta line was expanded from).
func inertJob(j *sampler.Job) *sampler.Job {
	if j == nil {
		return nil
	}
	fields := func(j *sampler.Job) []*string {
		return []*string{&j.SlurmJobID, &j.SlurmStep, &j.K8sPodUID, &j.K8sQOS, &j.ContainerID, &j.Runtime}
	}
	clean := true
	for _, p := range fields(j) {
		clean = clean && inert.Is(*p)
	}
	if clean {
		return j
	}
	c := *j
	for _, p := range fields(&c) {
		*p = inert.String(*p)
	}
	return &c
}
