package advisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/sampler"
)

func TestToBytes(t *testing.T) {
	for _, c := range []struct {
		num, unit string
		want      uint64
		ok        bool
	}{
		{"0", "bytes", 0, true},
		{"512", "B", 512, true},
		{"1.5", "KiB", 1536, true},
		{"1.5", "KB", 1536, true},
		{"1", "K", 1024, true},
		{"20.00", "MiB", 20 << 20, true},
		{"20", "M", 20 << 20, true},
		{"79.15", "GiB", 84986665370, true}, // 84986665369.6 rounded half up
		{"2.00", "G", 2 << 30, true},
		{"1.25", "TiB", 1374389534720, true},
		{"1", "TB", 1 << 40, true},
		{"16384", "PiB", 0, false}, // 2^64: does not fit
		{"0.0000001", "B", 0, true},
	} {
		got, ok := toBytes(c.num, c.unit)
		if got != c.want || ok != c.ok {
			t.Errorf("toBytes(%s %s) = %d, %v; want %d, %v", c.num, c.unit, got, ok, c.want, c.ok)
		}
	}
	if v, _ := parseSize("20.00 GiB (21474836481 bytes)"); v != 21474836481 {
		t.Errorf("the exact count beside a rounded size should win, got %d", v)
	}
}

func TestExplainPrefixesAndWrapping(t *testing.T) {
	msg := "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.07 GiB is free."
	for name, log := range map[string]string{
		"crlf":        "step 1\r\n" + msg + "\r\n",
		"tqdm":        "10%|█ | 1/10\r" + msg + "\n",
		"ray":         "(RayTrainWorker pid=4242, ip=10.0.0.7) " + msg[:40] + "\n(RayTrainWorker pid=4242, ip=10.0.0.7) " + msg[40:],
		"glog":        "E1129 10:00:00.123456 4242 train.cc:12] " + msg[:50] + "\nE1129 10:00:00.123457 4242 train.cc:12] " + msg[50:],
		"loguru":      "2026-11-29 10:00:00.123 | ERROR    | __main__:train:88 - " + msg[:30] + "\n2026-11-29 10:00:00.123 | ERROR    | __main__:train:88 - " + msg[30:],
		"vllm":        "ERROR 11-29 10:00:00 [worker.py:12] " + msg[:60] + "\nERROR 11-29 10:00:00 [worker.py:12] " + msg[60:],
		"pytest":      "E       " + msg[:70] + "\nE       " + msg[70:],
		"srun":        "3: " + msg[:45] + "\n3: " + msg[45:],
		"cri":         "2026-11-29T10:00:00.123456789Z stderr F " + msg,
		"python repr": `RuntimeError('` + strings.Replace(msg, " Tried", `\n Tried`, 1) + `')`,
		"json records": `{"ts":"2026-11-29T10:00:00Z","level":"error","msg":"` + msg[:33] + `"}` + "\n" +
			`{"ts":"2026-11-29T10:00:00Z","level":"error","msg":"` + msg[33:77] + `"}` + "\n" +
			`{"ts":"2026-11-29T10:00:00Z","level":"error","msg":"` + msg[77:] + `"}`,
		"json in json": `{"log":"{\"level\":\"error\",\"msg\":\"` + strings.Replace(msg, " Tried", `\\n[rank0]: Tried`, 1) + `\"}\n","stream":"stderr"}`,
	} {
		e := Explain(log)
		if !e.Found || e.Device == nil || *e.Device != 0 || val(e.RequestedBytes) != 2<<30 ||
			val(e.TotalBytes) != 84986665370 || val(e.FreeBytes) != 1148903752 {
			t.Errorf("%s: got found=%v requested=%d total=%d free=%d", name, e.Found, val(e.RequestedBytes), val(e.TotalBytes), val(e.FreeBytes))
		}
	}
}

func TestExplainLongLogAndSplitKeyword(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString("2026-11-29 10:00:00,000 INFO step 12 loss 0.1234 lr 3e-4 12.34 GiB\n")
	}
	// The only "memory" of the message is broken by a terminal wrap.
	b.WriteString("RuntimeError: CUDA error: out of mem\nory\n")
	for i := 0; i < 100; i++ {
		b.WriteString("shutting down\n")
	}
	e := Explain(b.String())
	if !e.Found || e.Framework != "cuda" || e.Line != 20001 || e.MessagesFound != 1 {
		t.Errorf("got found=%v framework=%q line=%d messages=%d", e.Found, e.Framework, e.Line, e.MessagesFound)
	}
}

func TestExplainReportsLineOfLastMessage(t *testing.T) {
	e := Explain(readLog(t, "several.log"))
	if e.Line != 6 || e.MessagesFound != 3 {
		t.Errorf("line %d of %d messages, want line 6 of 3", e.Line, e.MessagesFound)
	}
}

func newFormat(req, total, free, this, alloc, unalloc string, procs ...string) string {
	s := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + req + ". GPU 0 has a total capacity of " + total + " of which " + free + " is free. "
	for _, p := range procs {
		s += p + " "
	}
	return s + "Including non-PyTorch memory, this process has " + this + " memory in use. Of the allocated memory " + alloc +
		" is allocated by PyTorch, and " + unalloc + " is reserved by PyTorch but unallocated."
}

func remedyNames(rs []RemedyEstimate) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestExplainDiagnosisAndRanking(t *testing.T) {
	cases := []struct {
		name, log  string
		first      string // the first remedy
		covers     bool
		diagnosis  string
		shortfall  uint64
		notCovered string // a remedy that must not be marked as covering
	}{
		{
			name:  "fragmentation: the unused cache covers the shortfall",
			log:   newFormat("4.00 GiB", "80.00 GiB", "2.00 GiB", "77.00 GiB", "60.00 GiB", "16.00 GiB"),
			first: "expandable segments", covers: true, diagnosis: "fragmentation", shortfall: 2 << 30,
		},
		{
			name:  "other tenants: another process holds more than the shortfall",
			log:   newFormat("8.00 GiB", "80.00 GiB", "1.00 GiB", "40.00 GiB", "39.00 GiB", "512.00 MiB", "Process 999 has 38.50 GiB memory in use."),
			first: "use a freer GPU", covers: true, diagnosis: "the card is shared", shortfall: 7 << 30,
			notCovered: "expandable segments",
		},
		{
			name:  "live tensors: shrink the process, cheapest first",
			log:   newFormat("10.00 GiB", "80.00 GiB", "500.00 MiB", "79.00 GiB", "78.00 GiB", "100.00 MiB"),
			first: "halve the batch size", covers: true, diagnosis: "live memory of this process",
			shortfall: 10<<30 - 500<<20, notCovered: "expandable segments",
		},
		{
			name:  "container: the one listed process is this process, not a tenant",
			log:   readLogNoT("pytorch_container.log"),
			first: "expandable segments", covers: true, diagnosis: "process 3254 holds about what this process reserved",
			shortfall: 1181116006 - 1095216660, notCovered: "use a freer GPU",
		},
		{
			name:  "a memory fraction limit, not the card, was hit",
			log:   "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 5.60 GiB already allocated; 1.00 GiB free; 6.00 GiB allowed; 5.88 GiB reserved in total by PyTorch)",
			first: "expandable segments", diagnosis: "memory fraction limit (6 GiB allowed)",
		},
		{
			name: "TensorFlow allocator with enough in total but not in one piece",
			log: "W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 256.00MiB (rounded to 268435456)requested by op Conv2D\n" +
				"I tensorflow/core/common_runtime/bfc_allocator.cc:1101] Stats: \nLimit:                     14674281152\nInUse:                     13537375744\n",
			first: "TensorFlow: the CUDA async allocator", diagnosis: "not in one piece",
		},
		{
			name: "the memory fraction limit ran out while the card had room",
			log: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 80.00 GiB of which 30.00 GiB is free. " +
				"Including non-PyTorch memory, this process has 40.00 GiB memory in use. 40.00 GiB allowed; Of the allocated memory 39.00 GiB is allocated by PyTorch, " +
				"and 100.00 MiB is reserved by PyTorch but unallocated.",
			first: "raise the per-process memory fraction", diagnosis: "memory fraction limit while the card had memory free",
			notCovered: "expandable segments",
		},
		{
			name:  "no numbers: find the failing line first",
			log:   "RuntimeError: CUDA error: out of memory",
			first: "find where memory really ran out", diagnosis: "CUDA_LAUNCH_BLOCKING=1",
		},
		{
			name:  "TensorFlow without the allocator numbers: memory growth first",
			log:   readLogNoT("tensorflow_shape.log"),
			first: "TensorFlow memory growth", diagnosis: "memory growth",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := Explain(c.log)
			if !e.Found || len(e.Remedies) == 0 {
				t.Fatalf("not explained: %+v", e)
			}
			if !strings.HasPrefix(e.Remedies[0].Name, c.first) || e.Remedies[0].Covers != c.covers {
				t.Errorf("first remedy %q (covers %v), want %q (covers %v); all: %q", e.Remedies[0].Name, e.Remedies[0].Covers, c.first, c.covers, remedyNames(e.Remedies))
			}
			if !strings.Contains(e.Diagnosis, c.diagnosis) {
				t.Errorf("diagnosis %q lacks %q", e.Diagnosis, c.diagnosis)
			}
			if got := e.shortfall(); got != c.shortfall {
				t.Errorf("shortfall %d, want %d", got, c.shortfall)
			}
			seenUncovered := false
			for _, r := range e.Remedies {
				if strings.HasPrefix(r.Name, c.notCovered) && c.notCovered != "" && r.Covers {
					t.Errorf("%q marked as covering the shortfall", r.Name)
				}
				if !r.Covers {
					seenUncovered = true
				} else if seenUncovered {
					t.Errorf("covering remedy %q ranked after one that does not cover", r.Name)
				}
			}
			if c.log != "" && strings.Contains(e.Diagnosis, "TensorFlow") {
				found := false
				for _, r := range e.Remedies {
					found = found || strings.Contains(r.How, "set_memory_growth")
				}
				if !found {
					t.Error("TensorFlow OOM without the memory growth remedy")
				}
			}
		})
	}
}

func readLogNoT(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "explain", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestExplainText(t *testing.T) {
	e := Explain(readLog(t, "several.log"))
	txt := e.Text()
	for _, want := range []string{
		"PyTorch out of memory on GPU 1 (line 6; the last of 3 messages)",
		"requested                  512 MiB (536870912 bytes)",
		"free                       0 B",
		"shortfall (derived)        512 MiB (536870912 bytes)",
		"(estimate)",
		"✓ expandable segments",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
	if got := Explain("all good\n").Text(); !strings.Contains(got, "No out-of-memory message found") {
		t.Errorf("not-found text: %q", got)
	}
}

func TestExplainWithLive(t *testing.T) {
	e := Explain(readLog(t, "pytorch_new_ddp.log")) // GPU 1, this process 38.06 GiB, 0.93 GiB short
	snap := sampler.Snapshot{Source: "nvml", Devices: []sampler.Device{
		{ID: "0", Index: 0, Name: "H100", MemoryTotal: 80 << 30, MemoryUsed: 10 << 30, MemoryFree: 70 << 30},
		{ID: "1", Index: 1, Name: "H100", MemoryTotal: 80 << 30, MemoryUsed: 79 << 30, MemoryFree: 1 << 30},
		{ID: "2", Index: 2, Err: "GPU is lost"},
	}}
	l := e.WithLive(snap)
	if l.Live == nil || l.Live.Freest != "0" {
		t.Fatalf("live = %+v", l.Live)
	}
	for _, want := range []string{"GPU 1 now: 79 GiB used, 1 GiB free of 80 GiB", "Freest now: GPU 0 with 70 GiB free", "CUDA_VISIBLE_DEVICES=0"} {
		if !strings.Contains(l.Live.Note, want) {
			t.Errorf("note %q lacks %q", l.Live.Note, want)
		}
	}
	if !strings.Contains(l.Text(), "GPU 2    GPU is lost") {
		t.Errorf("text lacks the failed device:\n%s", l.Text())
	}
	snap.Devices[0].MemoryFree = 20 << 30
	if n := e.WithLive(snap).Live.Note; !strings.Contains(n, "no card would hold it") {
		t.Errorf("with no card big enough: %q", n)
	}
}

func TestExplainTensorFlowShapes(t *testing.T) {
	for _, c := range []struct {
		shape, dtype string
		want         uint64 // 0: no request computed
	}{
		{"[64,256,56,56]", "float", 205520896},
		{"[64, 256, 56, 56]", "half", 102760448},
		{"[]", "double", 8},
		{"[1000000 00]", "float", 0}, // two numbers, not one dimension
		{"[12,,34]", "float", 0},
		{"[4294967296,4294967296,4294967296]", "complex128", 0}, // overflows
	} {
		e := Explain("ResourceExhaustedError: OOM when allocating tensor with shape" + c.shape + " and type " + c.dtype + " on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
		if got := val(e.RequestedBytes); got != c.want || e.RequestedFromShape != (c.want != 0) {
			t.Errorf("shape%s %s: requested %d (from shape %v), want %d", c.shape, c.dtype, got, e.RequestedFromShape, c.want)
		}
	}
}

var sizeRE = re(`^` + sizePat)

// parseSize reads a size at the start of s.
func parseSize(s string) (uint64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	return sizeFrom(m[1], m[2], m[3])
}
