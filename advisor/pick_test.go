package advisor

import (
	"errors"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/sampler"
)

func pickDev(id string, free uint64, n int) sampler.Device {
	var ps []sampler.Process
	for i := 0; i < n; i++ {
		ps = append(ps, synProc(uint32(1000+i), "bob", "python job.py", oneGiB))
	}
	return synDev(id, synTotal, synTotal-free, ps...)
}

func TestPickDevices(t *testing.T) {
	s := synSnap(pickDev("0", 10*oneGiB, 1), pickDev("1", 90*oneGiB, 2), pickDev("2", 50*oneGiB, 1), pickDev("3", 90*oneGiB, 0))
	cases := []struct {
		name  string
		opt   PickOptions
		want  string
		error string
	}{
		{"the freest; a tie goes to the GPU with fewer processes", PickOptions{}, "3", ""},
		{"two, freest first", PickOptions{Count: 2}, "3,1", ""},
		{"all four", PickOptions{Count: 4}, "3,1,2,0", ""},
		{"at least 50 GiB: exactly 50 qualifies", PickOptions{MinFree: 50 * oneGiB, Count: 3}, "3,1,2", ""},
		{"one byte more than GPU 2 has", PickOptions{MinFree: 50*oneGiB + 1, Count: 3}, "", "3 GPUs asked, only 2 have at least 50 GiB free"},
		{"none has 95 GiB", PickOptions{MinFree: 95 * oneGiB}, "", "no GPU has at least 95 GiB free (the freest, GPU 3, has 90 GiB)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PickDevices(s, c.opt)
			if c.error != "" {
				if !errors.Is(err, ErrTooFewGPUs) || !strings.Contains(err.Error(), c.error) {
					t.Fatalf("error %v, want %q", err, c.error)
				}
				return
			}
			if err != nil || JoinPicks(got) != c.want {
				t.Fatalf("picked %q (%v), want %q", JoinPicks(got), err, c.want)
			}
		})
	}
}

func TestPickSkipsMIGParentsAndFailedGPUs(t *testing.T) {
	parent := pickDev("0", 80*oneGiB, 0)
	parent.MIGEnabled = true
	inst := func(id, uuid string, free uint64) sampler.Device {
		d := pickDev(id, free, 1)
		d.Index = 0
		d.UUID = uuid
		d.MIG = &sampler.MIGInfo{ParentIndex: 0, GPUInstanceID: int(id[2] - '0')}
		return d
	}
	lost := pickDev("1", 99*oneGiB, 0)
	lost.Err = "GPU is lost"
	s := synSnap(parent, inst("0/1", "MIG-4f2a", 30*oneGiB), inst("0/2", "", 40*oneGiB), lost, pickDev("2", 20*oneGiB, 0))
	got, err := PickDevices(s, PickOptions{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if j := JoinPicks(got); j != "0/2,MIG-4f2a,2" {
		t.Errorf("picked %q, want the MIG instances by ID (UUID where known), then GPU 2", j)
	}
	if got[0].DeviceID != "0/2" || got[0].Free != 40*oneGiB {
		t.Errorf("first pick %+v", got[0])
	}
	empty := synSnap()
	empty.Err = "NVML: driver not loaded"
	if _, err := PickDevices(empty, PickOptions{}); err == nil || !strings.Contains(err.Error(), "driver not loaded") {
		t.Errorf("a failed read: %v", err)
	}
}
