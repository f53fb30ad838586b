package advisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// explainJSON returns the explanation's JSON fields other than the prose
// and the derived figures: the numbers a user's script would read.
func explainJSON(t *testing.T, e Explanation) map[string]any {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"diagnosis", "remedies", "message", "line", "derived"} {
		delete(m, k)
	}
	return m
}

func readLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "explain", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type procs = []any

func proc(pid, bytes float64) map[string]any { return map[string]any{"pid": pid, "bytes": bytes} }

// Every stated number, exactly: X.YZ GiB = round(X.YZ × 2^30).
var explainCases = []struct {
	file string
	want map[string]any
}{
	{"pytorch_new_ddp.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 1.0,
		"requested_bytes": 2147483648.0, "total_bytes": 84986665370.0, "free_bytes": 1148903752.0,
		"processes": procs{proc(12345, 42949672960)}, "this_process_bytes": 40866613821.0,
		"allocated_by_framework_bytes": 39191576576.0, "reserved_unallocated_bytes": 1095216660.0, "messages_found": 1.0}},
	{"pytorch_old.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 0.0,
		"requested_bytes": 20971520.0, "total_bytes": 16943645983.0, "allocated_by_framework_bytes": 15633680957.0,
		"free_bytes": 3932160.0, "reserved_by_framework_bytes": 15676630630.0, "messages_found": 1.0}},
	{"pytorch_14_cached.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 1.0,
		"requested_bytes": 67108864.0, "total_bytes": 8514772664.0, "allocated_by_framework_bytes": 6270652252.0,
		"free_bytes": 39384515.0, "reserved_unallocated_bytes": 1836098519.0, "messages_found": 1.0}},
	{"pytorch_old_allowed.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 0.0,
		"requested_bytes": 20971520.0, "total_bytes": 8364448809.0, "allocated_by_framework_bytes": 6012954214.0,
		"free_bytes": 32830915.0, "allowed_bytes": 6442450944.0, "reserved_by_framework_bytes": 6313601925.0, "messages_found": 1.0}},
	{"pytorch_hip_pools.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "backend": "hip", "device": 1.0,
		"requested_bytes": 536870912.0, "total_bytes": 68698001900.0, "free_bytes": 0.0,
		"processes":          procs{proc(4242, 10737418240), proc(777, 4273492460)},
		"this_process_bytes": 53687091200.0, "allowed_bytes": 51539607552.0,
		"allocated_by_framework_bytes": 51002736640.0, "private_pools_bytes": 8589934592.0,
		"reserved_unallocated_bytes": 1610612736.0, "messages_found": 1.0}},
	{"pytorch_wrapped_ansi.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 0.0,
		"requested_bytes": 1610612736.0, "total_bytes": 25393994138.0, "free_bytes": 1288490189.0,
		"this_process_bytes": 24051816858.0, "allocated_by_framework_bytes": 22870700851.0,
		"reserved_unallocated_bytes": 1020054733.0, "messages_found": 1.0}},
	{"pytorch_json.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 3.0,
		"requested_bytes": 1610612736.0, "total_bytes": 25393994138.0, "free_bytes": 1288490189.0,
		"this_process_bytes": 24051816858.0, "allocated_by_framework_bytes": 22870700851.0,
		"reserved_unallocated_bytes": 1020054733.0, "messages_found": 1.0}},
	{"pytorch_json_truncated.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 2.0,
		"requested_bytes": 1610612736.0, "total_bytes": 25393994138.0, "free_bytes": 1288490189.0,
		"allocated_by_framework_bytes": 22870700851.0, "messages_found": 1.0}},
	{"pytorch_logger_prefix.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 0.0,
		"requested_bytes": 2147483648.0, "total_bytes": 84986665370.0, "free_bytes": 1148903752.0,
		"processes": procs{proc(12345, 42949672960)}, "this_process_bytes": 40866613821.0,
		"allocated_by_framework_bytes": 39191576576.0, "reserved_unallocated_bytes": 1095216660.0, "messages_found": 1.0}},
	{"pytorch_container.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 0.0,
		"requested_bytes": 1181116006.0, "total_bytes": 15826954486.0, "free_bytes": 1095216660.0,
		"processes": procs{proc(3254, 14731737825)}, "allocated_by_framework_bytes": 13862006948.0,
		"reserved_unallocated_bytes": 737799045.0, "messages_found": 1.0}},
	{"several.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 1.0,
		"requested_bytes": 536870912.0, "total_bytes": 68698001900.0, "free_bytes": 0.0,
		"this_process_bytes": 53687091200.0, "allocated_by_framework_bytes": 51002736640.0,
		"reserved_unallocated_bytes": 1610612736.0, "messages_found": 3.0}},
	{"cuda_error.log", map[string]any{"found": true, "kind": "gpu", "framework": "cuda", "messages_found": 1.0}},
	{"cublas.log", map[string]any{"found": true, "kind": "gpu", "framework": "cublas", "messages_found": 1.0}},
	// The allocator's warning, its stats and the error logged then raised: one message.
	{"tensorflow_event.log", map[string]any{"found": true, "kind": "gpu", "framework": "tensorflow", "device": 0.0,
		"requested_bytes": 268435456.0, "allowed_bytes": 14674281152.0, "allocated_by_framework_bytes": 14537375744.0,
		"peak_allocated_bytes": 14537375744.0, "num_allocs": 1234.0,
		"shape": "[64,256,64,64]", "dtype": "float", "messages_found": 1.0}},
	{"tensorflow_shape.log", map[string]any{"found": true, "kind": "gpu", "framework": "tensorflow", "device": 1.0,
		"requested_bytes": 205520896.0, "requested_from_shape": true, "shape": "[64,256,56,56]", "dtype": "float", "messages_found": 1.0}},
	// The allocator's warning that this is not a failure: memory pressure.
	{"bfc_only.log", map[string]any{"found": true, "kind": "memory_pressure", "framework": "tensorflow", "device": 0.0,
		"requested_bytes": 2362232013.0, "messages_found": 1.0}},
	{"jax.log", map[string]any{"found": true, "kind": "gpu", "framework": "jax", "device": 0.0,
		"requested_bytes": 17179869184.0, "messages_found": 1.0}},
	{"jax_ordinal.log", map[string]any{"found": true, "kind": "gpu", "framework": "jax", "device": 1.0,
		"requested_bytes": 2147483648.0, "messages_found": 1.0}},
	// MPS prints GB but divides by 1024: 18.13 GB = 18.13 GiB.
	{"mps.log", map[string]any{"found": true, "kind": "gpu", "framework": "mps",
		"allocated_by_framework_bytes": 19466939269.0, "other_allocations_bytes": 1556925645.0,
		"allowed_bytes": 21904333210.0, "requested_bytes": 1073741824.0, "messages_found": 1.0}},
	{"vllm_cache_blocks.log", map[string]any{"found": true, "kind": "gpu", "framework": "vllm", "messages_found": 1.0}},
	{"vllm_kv_needed.log", map[string]any{"found": true, "kind": "gpu", "framework": "vllm",
		"requested_bytes": 17179869184.0, "free_bytes": 9126805504.0, "max_model_len": 131072.0,
		"max_model_len_fits": 69632.0, "messages_found": 1.0}},
	{"vllm_tokens.log", map[string]any{"found": true, "kind": "gpu", "framework": "vllm", "max_model_len": 32768.0,
		"kv_cache_tokens": 20000.0, "messages_found": 1.0}},
	{"vllm_startup.log", map[string]any{"found": true, "kind": "gpu", "framework": "vllm", "free_bytes": 11274289152.0,
		"total_bytes": 85029615043.0, "requested_bytes": 76525579796.0, "gpu_memory_utilization": 0.9, "messages_found": 1.0}},
	// The exact byte count beside the rounded size wins (20.01G would be 21485573816).
	{"driver_exact.log", map[string]any{"found": true, "kind": "gpu", "framework": "tensorflow", "requested_bytes": 21474836480.0, "messages_found": 1.0}},
	{"pytorch_malloc_async.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "device": 0.0,
		"allocated_by_framework_bytes": 8289286881.0, "requested_bytes": 2147483648.0, "total_bytes": 8364448809.0,
		"free_bytes": 21957181.0, "messages_found": 1.0}}, // the limit 17179869184.00 GiB (2^64 bytes) does not fit: left out
	{"pytorch_xpu.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "backend": "xpu", "device": 0.0,
		"requested_bytes": 2147483648.0, "total_bytes": 16707422781.0, "allocated_by_framework_bytes": 14495514624.0,
		"reserved_unallocated_bytes": 104857600.0, "messages_found": 1.0}},
	{"pytorch_thc.log", map[string]any{"found": true, "kind": "gpu", "framework": "cuda", "messages_found": 1.0}},
	{"tensorflow_failed.log", map[string]any{"found": true, "kind": "gpu", "framework": "tensorflow", "device": 0.0, "messages_found": 1.0}},
	// Three lines of one failure: one message.
	{"llama_cpp.log", map[string]any{"found": true, "kind": "gpu", "framework": "llama.cpp", "device": 0.0, "requested_bytes": 8589934592.0, "messages_found": 1.0}},
	{"onnxruntime.log", map[string]any{"found": true, "kind": "gpu", "framework": "onnxruntime", "requested_bytes": 2147483648.0, "messages_found": 1.0}},
	{"tensorrt.log", map[string]any{"found": true, "kind": "gpu", "framework": "tensorrt", "requested_bytes": 4294967296.0, "messages_found": 1.0}},
	{"tgi.log", map[string]any{"found": true, "kind": "gpu", "framework": "tgi", "prefill_tokens": 4096.0, "messages_found": 1.0}},
	{"cupy.log", map[string]any{"found": true, "kind": "gpu", "framework": "cupy", "requested_bytes": 1073741824.0,
		"allocated_by_framework_bytes": 2147483648.0, "messages_found": 1.0}},
	{"paddle.log", map[string]any{"found": true, "kind": "gpu", "framework": "paddle", "device": 0.0, "requested_bytes": 1073741824.0,
		"allocated_by_framework_bytes": 16575889408.0, "free_bytes": 74186752.0, "messages_found": 1.0}},
	{"sglang.log", map[string]any{"found": true, "kind": "gpu", "framework": "sglang", "messages_found": 1.0}},
	// ComfyUI prints the cudaMallocAsync message cut to its first words, twice.
	{"comfyui.log", map[string]any{"found": true, "kind": "gpu", "framework": "pytorch", "messages_found": 2.0}},
	{"none.log", map[string]any{"found": false}},
}

func TestExplainFormats(t *testing.T) {
	for _, c := range explainCases {
		t.Run(c.file, func(t *testing.T) {
			e := Explain(readLog(t, c.file))
			got := explainJSON(t, e)
			if !reflect.DeepEqual(got, c.want) {
				for k, w := range c.want {
					if !reflect.DeepEqual(got[k], w) {
						t.Errorf("%s = %v, want %v", k, got[k], w)
					}
				}
				for k, g := range got {
					if _, ok := c.want[k]; !ok {
						t.Errorf("unexpected %s = %v", k, g)
					}
				}
			}
			if e.Found && (e.Diagnosis == "" || len(e.Remedies) == 0) {
				t.Errorf("found but no diagnosis or remedies: %+v", e)
			}
		})
	}
}

// Every pattern of the explainer compiles: they are compiled on first use,
// so a bad one would otherwise fail only on the log that reaches it.
func TestEveryPatternCompiles(t *testing.T) {
	if len(patterns) < 50 {
		t.Fatalf("%d patterns registered, want all of the explainer's", len(patterns))
	}
	for _, p := range patterns {
		if _, err := regexp.Compile(p.src); err != nil {
			t.Errorf("pattern %q: %v", p.src, err)
		}
	}
}

// The explanation's text wraps at its width with a hanging indent; a word
// longer than the width stays whole, and wide characters count double.
func TestWrapHangingIndent(t *testing.T) {
	got := wrap("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation of the cache", 30, "    ")
	want := "set\n    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n    to avoid fragmentation of\n    the cache\n"
	if got != want {
		t.Errorf("wrap:\n%q\nwant\n%q", got, want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(wrap("显存不足 显存不足 显存不足 显存不足", 18, "  "), "\n"), "\n") {
		if w := ansi.StringWidth(line); w > 18 {
			t.Errorf("line %q is %d columns wide, want at most 18", line, w)
		}
	}
}
