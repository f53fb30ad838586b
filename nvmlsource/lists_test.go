//go:build cgo

package nvmlsource

import (
	"testing"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeDriver answers list calls as NVML does: the processes when the
// buffer holds them, ERROR_INSUFFICIENT_SIZE with the count otherwise.
type fakeDriver struct {
	procs      func() int // how many compute processes the device has now
	calls      int
	lastWasGfx bool
}

func (f *fakeDriver) call(h uintptr, graphics bool, count *uint32, buf *nvml.ProcessInfo) nvml.Return {
	f.calls++
	f.lastWasGfx = graphics
	n := f.procs()
	if graphics {
		n = 1
	}
	if int(*count) < n {
		*count = uint32(n)
		return nvml.ERROR_INSUFFICIENT_SIZE
	}
	out := unsafe.Slice(buf, n)
	for i := range out {
		out[i] = nvml.ProcessInfo{Pid: uint32(1000 + i), UsedGpuMemory: uint64(i+1) << 20}
	}
	*count = uint32(n)
	return nvml.SUCCESS
}

// TestListsTakeOneDriverCallEach: with a hundred processes on a device, a
// list costs the driver one walk of its processes, not two (go-nvml's
// wrapper asks with one entry first), once the buffer has seen that many.
func TestListsTakeOneDriverCallEach(t *testing.T) {
	n := 100
	f := &fakeDriver{procs: func() int { return n }}
	l := &lister{call: f.call}
	for round := range 5 {
		f.calls = 0
		got, ret := l.listHandle(1, false)
		if ret != nvml.SUCCESS || len(got) != n {
			t.Fatalf("round %d: %d processes, %v; want %d, SUCCESS", round, len(got), ret, n)
		}
		if got[n-1].Pid != uint32(1000+n-1) || got[n-1].UsedGpuMemory != uint64(n)<<20 {
			t.Fatalf("round %d: last process %+v", round, got[n-1])
		}
		want := 1
		if round == 0 {
			want = 2 // the first list outgrows the starting buffer once
		}
		if f.calls != want {
			t.Errorf("round %d: %d driver calls for one list, want %d", round, f.calls, want)
		}
	}
	// A few more processes fit the slack: still one call.
	n += listSlack / 2
	f.calls = 0
	if got, _ := l.listHandle(1, false); len(got) != n || f.calls != 1 {
		t.Errorf("after %d new processes: %d listed in %d calls, want %d in 1", listSlack/2, len(got), f.calls, n)
	}
	// The graphics list goes to the graphics function.
	if got, ret := l.listHandle(1, true); ret != nvml.SUCCESS || len(got) != 1 || !f.lastWasGfx {
		t.Errorf("graphics list: %d processes, %v, graphics call %v", len(got), ret, f.lastWasGfx)
	}
}

// TestListThatKeepsGrowingEnds: processes appearing faster than the
// buffer grows give the device an error after a few calls, not a loop.
func TestListThatKeepsGrowingEnds(t *testing.T) {
	n := 0
	f := &fakeDriver{procs: func() int { n += 1000; return n }}
	l := &lister{call: f.call}
	if _, ret := l.listHandle(1, false); ret != nvml.ERROR_INSUFFICIENT_SIZE {
		t.Fatalf("ret %v, want ERROR_INSUFFICIENT_SIZE", ret)
	}
	if f.calls != maxListTries {
		t.Errorf("%d calls, want %d", f.calls, maxListTries)
	}
}

// TestListErrorPassesThrough: a driver error is the list's error.
func TestListErrorPassesThrough(t *testing.T) {
	l := &lister{call: func(uintptr, bool, *uint32, *nvml.ProcessInfo) nvml.Return { return nvml.ERROR_GPU_IS_LOST }}
	if got, ret := l.listHandle(1, false); ret != nvml.ERROR_GPU_IS_LOST || got != nil {
		t.Errorf("got %v, %v; want nil, ERROR_GPU_IS_LOST", got, ret)
	}
}

// TestMockDevicesUseTheWrappers: a device that is not the real library's
// (go-nvml's mocks, which the other tests use) is listed through its own
// methods even where the driver's functions were found.
func TestMockDevicesUseTheWrappers(t *testing.T) {
	d := &mock.Device{GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: 7}}, nvml.SUCCESS
	}}
	f := &fakeDriver{procs: func() int { return 3 }}
	l := &lister{call: f.call}
	if _, ok := deviceHandle(d); ok {
		t.Fatal("a mock device has a driver handle")
	}
	got, ret := l.list(d, false)
	if ret != nvml.SUCCESS || len(got) != 1 || got[0].Pid != 7 || f.calls != 0 {
		t.Errorf("got %v, %v after %d driver calls; want the mock's one process and no driver call", got, ret, f.calls)
	}
}
