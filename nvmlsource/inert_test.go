//go:build cgo

package nvmlsource

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/vramtop/vramtop/internal/hostile"
)

// The strings the driver hands back are shown and exported: they are made
// inert as they are read, like every other string from outside.
func TestDriverStringsAreInert(t *testing.T) {
	h := newMockHost(nil)
	h.devs[0].GetNameFunc = func() (string, nvml.Return) { return "NVIDIA H100\x1b]2;owned\a", nvml.SUCCESS }
	h.devs[0].GetUUIDFunc = func() (string, nvml.Return) { return "GPU-\u009b2J", nvml.SUCCESS }
	h.srv.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "580.\x9b1", nvml.SUCCESS }
	s := h.open(t)
	info := s.Info()
	d := info.Devices[0]
	for _, v := range []string{d.Name, d.UUID, info.DriverVersion} {
		if err := hostile.Check([]byte(v)); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	if d.Name != "NVIDIA H100\uFFFD]2;owned\uFFFD" {
		t.Errorf("name %q", d.Name)
	}
}
