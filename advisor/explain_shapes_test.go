package advisor

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Generated logs in the shapes training jobs and servers print, each
// ending with the out-of-memory message it must be read from. size is
// about the log's length in bytes.
type logShape struct {
	name string
	gen  func(size int) string
	// want is what must be read from the message at the end.
	want func(e Explanation) bool
}

// torchrunTail is the end of a torchrun job that ran out of memory: the
// rank's traceback, then the launcher's summary.
const torchrunTail = `[rank3]: Traceback (most recent call last):
[rank3]:   File "/workspace/train.py", line 412, in <module>
[rank3]:     main()
[rank3]:   File "/workspace/train.py", line 398, in main
[rank3]:     loss.backward()
[rank3]:   File "/usr/local/lib/python3.11/site-packages/torch/_tensor.py", line 626, in backward
[rank3]:     torch.autograd.backward(
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.07 GiB is free. Including non-PyTorch memory, this process has 78.06 GiB memory in use. Of the allocated memory 76.50 GiB is allocated by PyTorch, and 1.02 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
E1201 10:59:59.123000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 3 (pid: 4245) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_10:59:59
  host      : node-17
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 4245)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
`

func wantTorchOOM(device int) func(e Explanation) bool {
	return func(e Explanation) bool {
		return e.Found && e.Framework == "pytorch" && e.Device != nil && *e.Device == device &&
			val(e.RequestedBytes) == 2<<30 && val(e.FreeBytes) == 1148903752
	}
}

// grow appends line(i) for i = 0, 1, ... until b holds size bytes.
func grow(size int, line func(b *strings.Builder, i int)) *strings.Builder {
	b := &strings.Builder{}
	b.Grow(size + 4096)
	for i := 0; b.Len() < size; i++ {
		line(b, i)
	}
	return b
}

func stamp(i int) string {
	return fmt.Sprintf("2026-12-01 10:%02d:%02d,%03d", i/60000%60, i/1000%60, i%1000)
}

var logShapes = []logShape{
	{"training-5pct-memory-stats", trainingLog, wantTorchOOM(0)},
	{"torchrun-74pct-memory", func(size int) string {
		b := grow(size, func(b *strings.Builder, i int) {
			r := i % 4
			switch {
			case i%100 < 74:
				fmt.Fprintf(b, "[rank%d]:%s - INFO - step %d/200000 | loss %.4f | grad_norm %.3f | lr %.2e | memory allocated %.2fGB reserved %.2fGB peak %.2fGB | %d tok/s\n",
					r, stamp(i), i/4, 2.5-float64(i%1000)/1000, 1+float64(i%577)/1000, 3e-4, 60+float64(i%997)/100, 70+float64(i%991)/100, 75+float64(i%983)/100, 12000+i%777)
			case i%100 < 90:
				fmt.Fprintf(b, "[rank%d]:%s - INFO - data: shard %d, %d samples, %.1f ms/batch\n", r, stamp(i), i%64, 512+i%13, 80+float64(i%97)/10)
			default:
				fmt.Fprintf(b, "[rank%d]:[W1201 10:00:00.%06d ProcessGroupNCCL.cpp:%d] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now\n", r, i%1000000, 4000+i%300)
			}
		})
		b.WriteString(torchrunTail)
		return b.String()
	}, wantTorchOOM(3)},
	{"torchtitan-memory-every-step", func(size int) string {
		b := grow(size, func(b *strings.Builder, i int) {
			fmt.Fprintf(b, "[rank0]:[titan] %s - root - INFO - step: %d  loss: %7.4f  memory: %5.2fGiB(%.2f%%)  tps: %d  tflops: %.2f  mfu: %.2f%%\n",
				stamp(i), i+1, 10-float64(i%9000)/1000, 64+float64(i%99)/100, 80+float64(i%99)/100, 6000+i%999, 300+float64(i%77)/10, 30+float64(i%55)/10)
		})
		b.WriteString(strings.ReplaceAll(torchrunTail, "[rank3]:", "[rank0]:"))
		return b.String()
	}, wantTorchOOM(3)},
	{"deepspeed", func(size int) string {
		b := grow(size, func(b *strings.Builder, i int) {
			ts := "[" + stamp(i) + "]"
			switch i % 6 {
			case 0:
				fmt.Fprintf(b, "%s [INFO] [logging.py:128:log_dist] [Rank 0] step=%d, skipped=0, lr=[2.9e-05], mom=[(0.9, 0.999)]\n", ts, i/6)
			case 1:
				fmt.Fprintf(b, "%s [INFO] [timer.py:264:stop] epoch=0/micro_step=%d/global_step=%d, RunningAvgSamplesPerSec=%.3f, CurrSamplesPerSec=%.3f, MemAllocated=%.2fGB, MaxMemAllocated=%.2fGB\n",
					ts, i/6, i/6, 12+float64(i%100)/100, 11+float64(i%97)/100, 30+float64(i%93)/100, 60+float64(i%91)/100)
			case 2:
				fmt.Fprintf(b, "%s [INFO] [utils.py:781:see_memory_usage] MA %.2f GB         Max_MA %.2f GB         CA %.2f GB         Max_CA %d GB \n", ts, 30+float64(i%93)/100, 60+float64(i%91)/100, 70+float64(i%89)/100, 71)
			case 3:
				fmt.Fprintf(b, "%s [INFO] [utils.py:788:see_memory_usage] CPU Virtual Memory:  used = %.2f GB, percent = %.1f%%\n", ts, 100+float64(i%83)/10, 40+float64(i%79)/10)
			default:
				fmt.Fprintf(b, "%s [INFO] [engine.py:%d:_take_model_step] loss: %.4f\n", ts, 2000+i%99, 2-float64(i%1000)/1000)
			}
		})
		b.WriteString(strings.ReplaceAll(torchrunTail, "[rank3]:", ""))
		return b.String()
	}, wantTorchOOM(3)},
	{"lightning-progress-bars", func(size int) string {
		b := grow(size, func(b *strings.Builder, i int) {
			n := i % 1000
			if n == 0 {
				fmt.Fprintf(b, "\nLOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]\n  | Name  | Type | Params | Mode\n0 | model | GPT  | 1.3 B  | train\n")
			}
			fmt.Fprintf(b, "\rEpoch %d:  %2d%%|%s| %d/1000 [%02d:%02d<%02d:%02d,  %.2fit/s, v_num=3, train_loss=%.4f, gpu_mem_gb=%.1f]",
				i/1000, n/10, strings.Repeat("█", n/100)+strings.Repeat(" ", 10-n/100), n, n/60, n%60, (1000-n)/60, (1000-n)%60, 5+float64(i%50)/100, 2-float64(i%1000)/1000, 60+float64(i%99)/10)
		})
		b.WriteString("\r\n" + strings.ReplaceAll(torchrunTail, "[rank3]: ", ""))
		return b.String()
	}, wantTorchOOM(3)},
	{"hf-trainer", func(size int) string {
		b := grow(size, func(b *strings.Builder, i int) {
			if i%10 == 9 {
				fmt.Fprintf(b, "{'loss': %.4f, 'grad_norm': %.4f, 'learning_rate': %.4e, 'epoch': %.2f, 'memory_allocated_gb': %.2f}\n",
					2-float64(i%1000)/1000, 0.5+float64(i%333)/1000, 2e-5, float64(i)/10000, 60+float64(i%97)/100)
				return
			}
			fmt.Fprintf(b, "\r %2d%%|%s| %d/100000 [%02d:%02d<%02d:%02d,  %.2fit/s]", i/1000%100, strings.Repeat("▏", i%10), i, i/60%60, i%60, 59-i%60, 59-i/60%60, 1+float64(i%77)/100)
		})
		b.WriteString("\n" + strings.ReplaceAll(torchrunTail, "[rank3]: ", ""))
		return b.String()
	}, wantTorchOOM(3)},
	{"vllm-server", func(size int) string {
		b := grow(size, func(b *strings.Builder, i int) {
			if i%3 == 0 {
				fmt.Fprintf(b, "INFO %s [loggers.py:116] Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%\n",
					stamp(i)[5:19], 1000+float64(i%999), 500+float64(i%777), i%64, i%5, float64(i%1000)/10, float64(i%333)/10)
				return
			}
			fmt.Fprintf(b, "INFO:     10.0.%d.%d:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", i%256, i%199, 40000+i%20000)
		})
		b.WriteString(vllmKVTail)
		return b.String()
	}, func(e Explanation) bool {
		return e.Found && e.Framework == "vllm" && val(e.MaxModelLen) == 262144 && val(e.MaxModelLenFits) == 34736
	}},
	{"progress-bar-one-line", progressLine, wantTorchOOM(0)},
	{"bfc-one-line", bfcLine, func(e Explanation) bool {
		return e.Found && e.Framework == "tensorflow" && val(e.RequestedBytes) == 2147483648
	}},
}

const vllmKVTail = "(EngineCore_DP0 pid=1094) ERROR 12-01 10:59:59 [core.py:708] ValueError: To serve at least one request with the models's max seq len (262144), " +
	"(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory, the estimated maximum model length is 34736. " +
	"Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"

// bfcLine is one line of about size bytes of the BFC allocator's
// warnings, as a log that lost its line breaks holds them.
func bfcLine(size int) string {
	b := grow(size, func(b *strings.Builder, i int) {
		fmt.Fprintf(b, "W tensorflow/core/common_runtime/bfc_allocator.cc:%d] Allocator (GPU_0_bfc) ran out of memory trying to allocate %d.%02dGiB (rounded to %d)requested by op MatMul_%d ",
			479+i%3, 1+i%2, i%100, 1<<30+i*256, i)
	})
	b.WriteString("W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)requested by op MatMul\n")
	return b.String()
}

// shapeSize is the size the benchmark gives a shape: 100 MB, one line of
// messages 1 MiB.
func shapeSize(sh logShape) int {
	if sh.name == "bfc-one-line" {
		return 1 << 20
	}
	return benchLogSize
}

// go test -run '^$' -bench 'ExplainShapes' -benchtime 3x ./advisor/
// Each shape at 100 MB (the BFC line at 1 MiB); MB/s is the log's size over
// the time to explain it.
func BenchmarkExplainShapes(b *testing.B) {
	for _, sh := range logShapes {
		b.Run(sh.name, func(b *testing.B) {
			log := sh.gen(shapeSize(sh))
			b.ResetTimer()
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			for b.Loop() {
				if e := Explain(log); !sh.want(e) {
					b.Fatalf("the message at the end was not read: %+v", e)
				}
			}
		})
	}
}

// Every shape, small, is read right and scanned as the earlier scan did.
func TestExplainShapes(t *testing.T) {
	for _, sh := range logShapes {
		log := sh.gen(1 << 20)
		if e := Explain(log); !sh.want(e) {
			t.Errorf("%s: the message at the end was not read: %+v", sh.name, e)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Explaining one long line of messages (a log without line breaks) costs
// in proportion to its length, not its length times the messages in it:
// doubling the line at most a little more than doubles what explaining it
// allocates, and that stays within a few hundred times the line.
func TestExplainLinearInLineLength(t *testing.T) {
	Explain(bfcLine(1 << 10)) // the patterns compiled
	var prev uint64
	for _, size := range []int{64 << 10, 128 << 10, 256 << 10} {
		log := bfcLine(size)
		var e Explanation
		n := allocated(func() { e = Explain(log) })
		if !e.Found || val(e.RequestedBytes) != 2<<30 {
			t.Fatalf("%d bytes: the last message was not read: %+v", len(log), e)
		}
		if n > 400*uint64(len(log)) { // before: 1,772 bytes a byte at 64 KiB, 6,399 at 256 KiB
			t.Errorf("a line of %d bytes allocated %d bytes explaining it (%.0f per byte)", len(log), n, float64(n)/float64(len(log)))
		}
		if prev > 0 && float64(n) > 2.5*float64(prev) {
			t.Errorf("a line of %d bytes allocated %d bytes, %.1f times the half as long line's %d", len(log), n, float64(n)/float64(prev), prev)
		}
		prev = n
	}
}

// go test -run '^$' -bench 'TriggerScan' ./advisor/: the one pass over the
// whole log alone.
func BenchmarkTriggerScan(b *testing.B) {
	log := logShapes[1].gen(20 << 20)
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		sc := triggerScan{m: triggers()}
		for sc.next(log) >= 0 {
		}
	}
}
