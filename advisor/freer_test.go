package advisor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vramtop/vramtop/sampler"
)

// TestFreestIndexMatchesScan: the per-snapshot index picks the same freer
// GPU as scanning every device, over random fleets with ties, failed
// devices, MIG parents and several hosts.
func TestFreestIndexMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	found := 0
	for round := range 300 {
		var devs []sampler.Device
		for h := range 1 + rng.IntN(4) {
			for g := range 1 + rng.IntN(8) {
				free := uint64(rng.IntN(5)) * 10 * oneGiB
				d := sampler.Device{
					ID: fmt.Sprintf("h%d:%d", h, g), Index: g, Hostname: fmt.Sprintf("h%d", h),
					MemoryTotal: 80 * oneGiB, MemoryFree: free, MemoryUsed: 80*oneGiB - free,
				}
				switch rng.IntN(10) {
				case 0:
					d.Err = "GPU is lost"
				case 1:
					d.MIGEnabled = true
				case 2:
					d.Processes = []sampler.Process{{PID: 1}}
				}
				devs = append(devs, d)
			}
		}
		snap := sampler.Snapshot{Devices: devs}
		var fi freestIndex
		for di := range devs {
			for _, extra := range []uint64{0, 15 * oneGiB} {
				want := freerDevice(&snap, di, extra)
				if got := fi.freer(&snap, di, extra); got != want {
					t.Fatalf("round %d, device %s, extra %d: index picks %d, the scan %d", round, devs[di].ID, extra, got, want)
				}
				if want >= 0 {
					found++
				}
			}
		}
	}
	// The comparison means something only if freer devices were found.
	if found == 0 {
		t.Fatal("no freer device in any round")
	}
}
