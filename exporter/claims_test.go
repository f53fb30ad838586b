package exporter

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/metricname"
	"github.com/vramtop/vramtop/sampler"
)

// TestClaimedSeries: every GPU with numbers has a vramtop_gpu_claimed
// series, 1 with the claimer's user while a claim holds its UUID (the size
// it asked for beside it), 0 otherwise; a claim that ends shows on the
// next scrape of the same snapshot.
func TestClaimedSeries(t *testing.T) {
	snap := fixedSnapshot()
	held := map[string]claims.Claim{
		"GPU-aaaa": {UUID: "GPU-aaaa", User: "alice", PID: 4121, Bytes: 40 * gib, Time: t0},
		// A lock whose holder wrote nothing: claimed, by nobody known.
		"MIG-dddd": {UUID: "MIG-dddd"},
		// A GPU this host does not have.
		"GPU-ffff": {UUID: "GPU-ffff", User: "bob"},
	}
	gen := uint64(1)
	c := New(func() (sampler.Snapshot, bool) { return snap, true }, Options{
		Now:    func() time.Time { return t0.Add(time.Second) },
		Claims: func() (map[string]claims.Claim, uint64) { return held, gen },
	})
	h100 := `UUID="GPU-aaaa",device="nvidia0",gpu="0",hostname="node7",model_name="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:18:00.0"`
	v100 := `UUID="GPU-bbbb",device="nvidia1",gpu="1",hostname="node7",model_name="Tesla V100-SXM2-16GB",pci_bus_id="00000000:3B:00.0"`
	a100 := `UUID="GPU-cccc",device="nvidia2",gpu="2",hostname="node7",model_name="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"`
	mig := `GPU_I_ID="3",GPU_I_PROFILE="3g.40gb",UUID="MIG-dddd",device="nvidia2",gpu="2",hostname="node7",model_name="NVIDIA A100-SXM4-80GB",pci_bus_id="00000000:87:00.0"`
	head := `
# HELP vramtop_gpu_claimed 1 while a vramtop user's claim (vramtop pick or wait) holds the GPU, with who claimed it (user); 0 otherwise.
# TYPE vramtop_gpu_claimed gauge
`
	want := head + `vramtop_gpu_claimed{` + h100 + `,user="alice"} 1
vramtop_gpu_claimed{` + v100 + `} 0
vramtop_gpu_claimed{` + a100 + `} 0
vramtop_gpu_claimed{` + mig + `} 1
# HELP vramtop_gpu_claimed_bytes GPU memory the claim on the GPU asked for (--min-free), in bytes; absent while it is not claimed or the claim does not say.
# TYPE vramtop_gpu_claimed_bytes gauge
vramtop_gpu_claimed_bytes{` + h100 + `,user="alice"} 4.294967296e+10
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.Claimed, metricname.ClaimedBytes); err != nil {
		t.Fatal(err)
	}
	// The page says the same as client_golang's encoding of it.
	page := string(c.Page(nil))
	if got, w := sortedLines(page), sortedLines(gathered(t, c)); !slices.Equal(got, w) {
		t.Errorf("page differs from client_golang's encoding:\n--- page\n%s\n--- client_golang\n%s", page, gathered(t, c))
	}
	// alice's claim ends: the page of the same snapshot follows.
	held = map[string]claims.Claim{"MIG-dddd": {UUID: "MIG-dddd"}}
	gen++
	page = string(c.Page(nil))
	if !strings.Contains(page, "\nvramtop_gpu_claimed{"+h100+"} 0\n") || strings.Contains(page, metricname.Claimed+"{"+h100+`,user="alice"}`) || strings.Contains(page, metricname.ClaimedBytes+"{") {
		t.Errorf("after the claim ended the page still has it:\n%s", page)
	}
}

// Without Options.Claims (nothing read) there is no claim series at all:
// an unknown claim is not a 0.
func TestNoClaimsNoSeries(t *testing.T) {
	snap := fixedSnapshot()
	c := newTestCollector(&snap, nil, t0)
	if n := testutil.CollectAndCount(c, metricname.Claimed); n != 0 {
		t.Errorf("%d claim series without claims read", n)
	}
}
