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

// --max-util: a GPU busier than it is passed over, however free, and the
// error says the GPUs with the memory are too busy; one that reports no
// utilization qualifies.
func TestPickMaxUtil(t *testing.T) {
	busy := pickDev("0", 90*oneGiB, 0)
	busy.UtilizationPercent = sampler.Ptr(95.0)
	calm := pickDev("1", 50*oneGiB, 0)
	calm.UtilizationPercent = sampler.Ptr(20.0)
	unknown := pickDev("2", 40*oneGiB, 0)
	s := synSnap(busy, calm, unknown)
	half := sampler.Ptr(50.0)
	got, err := PickDevices(s, PickOptions{Count: 2, MaxUtil: half})
	if err != nil || JoinPicks(got) != "1,2" {
		t.Errorf("picked %q (%v), want the calm GPU and the one without a utilization", JoinPicks(got), err)
	}
	if got, err := PickDevices(s, PickOptions{Count: 3}); err != nil || JoinPicks(got) != "0,1,2" {
		t.Errorf("without MaxUtil: %q (%v)", JoinPicks(got), err)
	}
	for _, c := range []struct {
		opt  PickOptions
		want string
	}{
		{PickOptions{MinFree: 60 * oneGiB, MaxUtil: half}, "the GPUs with at least 60 GiB free are above 50% utilization"},
		{PickOptions{MinFree: 45 * oneGiB, Count: 2, MaxUtil: half}, "2 GPUs asked, only 1 has at least 45 GiB free and at most 50% utilization; 1 more with the memory is busier"},
	} {
		if _, err := PickDevices(s, c.opt); !errors.Is(err, ErrTooFewGPUs) || err.Error() != c.want {
			t.Errorf("%+v: error %v, want %q", c.opt, err, c.want)
		}
	}
}

// A fleet's snapshot has devices of many hosts: AllHosts picks among all
// of them, by the same order; without it only the snapshot's own host's.
func TestPickAllHosts(t *testing.T) {
	a := pickDev("0", 30*oneGiB, 0)
	a.ID, a.Hostname = "nodeA:0", "nodeA"
	b := pickDev("1", 60*oneGiB, 1)
	b.ID, b.Hostname = "nodeB:1", "nodeB"
	c := pickDev("2", 60*oneGiB, 0)
	c.ID, c.Hostname = "nodeB:2", "nodeB"
	s := synSnap(a, b, c)
	s.Hostname = "prometheus:9090"
	got, err := PickDevices(s, PickOptions{Count: 3, AllHosts: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.DeviceID)
	}
	if strings.Join(ids, ",") != "nodeB:2,nodeB:1,nodeA:0" {
		t.Errorf("picked %v, want freest first, a tie to the GPU with fewer processes", ids)
	}
	if _, err := PickDevices(s, PickOptions{}); err == nil {
		t.Error("without AllHosts the devices of other hosts were picked")
	}
}
