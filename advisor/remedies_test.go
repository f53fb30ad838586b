package advisor

import (
	"strings"
	"testing"
)

const gib = uint64(1) << 30

func TestTrainingRemediesEscalationAndBytes(t *testing.T) {
	got := TrainingRemedies(70 * gib)
	wantOrder := []string{"halve the batch size", "gradient accumulation", "mixed precision", "gradient checkpointing", "model parallelism"}
	if len(got) != len(wantOrder) {
		t.Fatalf("got %d training remedies, want %d: %+v", len(got), len(wantOrder), got)
	}
	for i, w := range wantOrder {
		if !strings.HasPrefix(got[i].Name, w) {
			t.Errorf("remedy %d = %q, want %q first", i, got[i].Name, w)
		}
		if got[i].Cost == "" || got[i].How == "" || !strings.Contains(got[i].Saving, "(estimate)") {
			t.Errorf("remedy %q lacks cost, how or the estimate label: %+v", got[i].Name, got[i])
		}
	}
	if mp := got[2]; mp.Saving != "~30% ≈ 21 GiB of 70 GiB (estimate)" {
		t.Errorf("mixed precision saving = %q", mp.Saving)
	}
	if ck := got[3]; ck.SavingBytes != 35*gib {
		t.Errorf("checkpointing saves %d bytes, want %d", ck.SavingBytes, 35*gib)
	}
	if mpar := got[4]; mpar.SavingBytes != 35*gib || !strings.Contains(mpar.Saving, "with 2") {
		t.Errorf("model parallelism = %+v", mpar)
	}
	if b := got[0]; !strings.Contains(b.Saving, "at most") {
		t.Errorf("batch saving should be an upper bound: %q", b.Saving)
	}
}

func TestRemediesWithoutProcessSize(t *testing.T) {
	for _, r := range TrainingRemedies(0) {
		if r.SavingBytes != 0 || strings.Contains(r.Saving, "≈") {
			t.Errorf("unknown size gave a number: %+v", r)
		}
	}
}

func TestInferenceRemedies(t *testing.T) {
	got := InferenceRemedies(16 * gib)
	if len(got) == 0 || !strings.Contains(got[0].Name, "inference_mode") {
		t.Fatalf("inference remedies start with %+v", got)
	}
	for _, r := range got {
		if strings.Contains(r.Name, "8-bit") && r.SavingBytes != 12*gib {
			t.Errorf("quantization saves %d, want %d", r.SavingBytes, 12*gib)
		}
		if strings.Contains(r.Name, "gradient") {
			t.Errorf("training remedy %q offered for inference", r.Name)
		}
	}
}

func TestRankRemedies(t *testing.T) {
	list := TrainingRemedies(10 * gib) // batch ≤5, accum ≤5, mp 3, ckpt 5, split 5
	got := RankRemedies(list, 4*gib)
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	if !got[0].Covers || !strings.HasPrefix(got[0].Name, "halve") {
		t.Errorf("first ranked = %+v", got[0])
	}
	last := got[len(got)-1]
	if last.Covers || !strings.HasPrefix(last.Name, "mixed precision") {
		t.Errorf("mixed precision (3 GiB < 4 GiB) should come last, uncovered; order %q", names)
	}
	if got := RankRemedies(list, 0); got[0].Covers || got[2].Name != list[2].Name {
		t.Errorf("zero shortfall changed order or marked: %+v", got)
	}
	if list[0].Covers {
		t.Error("RankRemedies modified its input")
	}
}

func TestTenantRemediesNameFreerGPU(t *testing.T) {
	got := TenantRemedies(8*gib, "3")
	if !strings.Contains(got[0].How, "CUDA_VISIBLE_DEVICES=3") || got[0].SavingBytes != 8*gib {
		t.Errorf("got %+v", got[0])
	}
}

func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		in   uint64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536 << 10, "1.5 MiB"}, {21 * gib, "21 GiB"}, {gib + gib/4, "1.25 GiB"}, {2 << 40, "2 TiB"}} {
		if got := FormatBytes(c.in); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}
