package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/demo"
	"github.com/vramtop/vramtop/sampler"
)

func runPickArgs(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = dispatch(context.Background(), append([]string{"pick"}, args...), &o, &e)
	return o.String(), e.String(), code
}

func TestPickDemo(t *testing.T) {
	freshClaims(t)
	out, errOut, code := runPickArgs("--demo", "--count", "3")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), ",")
	if len(got) != 3 || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("output %q: want one line of three values", out)
	}
	// The same choice from a demo snapshot taken now: freest first, the
	// MIG parent (GPU 3) never, its instances by UUID.
	s, err := sampler.New(demo.New(time.Now().Add(-demo.Lead)), sampler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := advisor.PickDevices(s.Once(), advisor.PickOptions{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != advisor.JoinPicks(want) {
		t.Errorf("picked %q, the demo snapshot gives %q", out, advisor.JoinPicks(want))
	}
	for _, v := range got {
		if v == "3" {
			t.Errorf("the MIG parent was picked: %q", out)
		}
	}
}

func TestPickErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"--demo", "--min-free", "20X"}, 2, `invalid size "20X"`},
		{[]string{"--demo", "--min-free", "-1G"}, 2, "invalid size"},
		{[]string{"--demo", "--count", "0"}, 2, "want at least 1"},
		{[]string{"--demo", "--min-free", "1TiB"}, 1, "no GPU has at least 1 TiB free"},
		{[]string{"--demo", "--count", "99"}, 1, "99 GPUs asked, only"},
		{[]string{"--demo", "extra"}, 2, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		out, errOut, code := runPickArgs(c.args...)
		if code != c.code || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit %d and nothing on stdout", c.args, code, out, c.code)
		}
		if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.say) || !strings.HasPrefix(errOut, "vramtop pick: ") {
			t.Errorf("%v: stderr %q, want one line with %q", c.args, errOut, c.say)
		}
	}
}

func TestPickMinFreeAcceptsUnits(t *testing.T) {
	freshClaims(t)
	// The demo's freest GPU has more than 20 GiB free, less than 1 TiB:
	// every spelling of 20 GiB picks the same GPU, and 1 TiB none.
	first := ""
	for _, size := range []string{"20GiB", "20Gi", "20480MiB", "21474836480", "21.474836480GB"} {
		out, errOut, code := runPickArgs("--demo", "--min-free", size, "--no-claim")
		if code != 0 || out == "" || first != "" && out != first {
			t.Errorf("--min-free %s: exit %d, %q %q (first pick %q)", size, code, out, errOut, first)
		}
		first = out
	}
	if out, _, code := runPickArgs("--demo", "--min-free", "1TiB"); code != 1 || out != "" {
		t.Errorf("--min-free 1TiB: exit %d, %q; want exit 1 and no pick", code, out)
	}
}

// --max-util: pick passes over GPUs busier than it, as wait does; the
// demo's GPUs that report no utilization (its MIG instances, GPU 4) are
// all that --max-util 0 leaves.
func TestPickMaxUtil(t *testing.T) {
	freshClaims(t)
	out, errOut, code := runPickArgs("--demo", "--count", "3", "--max-util", "0", "--no-claim")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	s, err := sampler.New(demo.New(time.Now().Add(-demo.Lead)), sampler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Once()
	for _, v := range strings.Split(strings.TrimSpace(out), ",") {
		for _, d := range snap.Devices {
			if advisor.VisibleDevicesValue(&d) == v && d.UtilizationPercent != nil && *d.UtilizationPercent > 0 {
				t.Errorf("picked %s, %g%% busy, with --max-util 0", v, *d.UtilizationPercent)
			}
		}
	}
	if _, errOut, code := runPickArgs("--demo", "--count", "4", "--max-util", "0", "--no-claim"); code != 1 || !strings.Contains(errOut, "at most 0% utilization") {
		t.Errorf("four GPUs at 0%%: exit %d, stderr %q; want exit 1 saying the others are busier", code, errOut)
	}
}
