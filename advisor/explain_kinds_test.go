package advisor

import (
	"strings"
	"testing"
)

// Memory other than the card's is named as such, in the JSON and the text.
func TestExplainNamesTheMemoryThatRanOut(t *testing.T) {
	for _, c := range []struct {
		name, file       string
		kind, confidence string
		text             string // a line the text must hold
	}{
		{"CPU allocator", "host_cpu_allocator", "host", "", "Host memory (RAM) ran out, not GPU memory"},
		{"OOM killer", "host_oom_killer_dmesg", "host", "", "process 698405 (python), which held 12.32 GiB of RAM"},
		{"Killed", "host_killed_shell", "host", "likely", "Likely host memory (RAM) ran out"},
		{"pinned", "tf_pinned_host", "pinned_host", "", "pinned host memory ran out (RAM locked for GPU transfers, not GPU memory)"},
		{"Triton", "triton_65536", "gpu_shared_memory", "", "freeing GPU memory or a smaller batch does not help"},
		{"DeepSpeed", "deepspeed_flushes_peft", "memory_pressure", "", "a warning, not an out-of-memory error"},
		{"MXNet", "mxnet_error", "gpu", "", "MXNet out of memory on the GPU"},
		{"NumPy", "numpy_58gib", "host", "", "NumPy could not allocate 58 GiB for an array of shape [176351,176460] (uint16)"},
		{"shared memory", "dataloader_bus_error", "host", "", "The shared memory (/dev/shm) that DataLoader workers pass batches through ran out"},
		{"BFC not a failure", "tf_bfc_not_a_failure", "memory_pressure", "", "This is not an out-of-memory error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := Explain(readLog(t, "real/"+c.file+".log"))
			if e.Kind != c.kind || e.Confidence != c.confidence {
				t.Errorf("kind %q confidence %q, want %q %q", e.Kind, e.Confidence, c.kind, c.confidence)
			}
			if txt := strings.Join(strings.Fields(e.Text()), " "); !strings.Contains(txt, c.text) {
				t.Errorf("text lacks %q:\n%s", c.text, e.Text())
			}
		})
	}
}

// cuDNN errors are read as a likely out-of-memory only next to a memory
// hint, with the hint as the reason.
func TestExplainCuDNNInDisguise(t *testing.T) {
	tf := "2020-08-18 15:05:06.100000: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 3.77G (4046333952 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n" +
		"2020-08-18 15:05:07.275936: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
	e := Explain(tf)
	if !e.Found || e.Framework != "cudnn" || e.Confidence != "likely" || !strings.Contains(e.Reason, "CUDNN_STATUS_INTERNAL_ERROR") ||
		!strings.Contains(e.Reason, "out of memory") || e.MessagesFound != 2 {
		t.Errorf("got found=%v framework=%q confidence=%q reason=%q messages=%d", e.Found, e.Framework, e.Confidence, e.Reason, e.MessagesFound)
	}
	if !strings.Contains(e.Text(), "cuDNN error, likely out of memory") {
		t.Errorf("text:\n%s", e.Text())
	}
	usage := "E tensorflow/stream_executor/cuda/cuda_dnn.cc:338] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n" +
		"E tensorflow/stream_executor/cuda/cuda_dnn.cc:342] Memory usage: 1048576 bytes free, 8589934592 bytes total.\n"
	e = Explain(usage)
	if !e.Found || e.Confidence != "likely" || val(e.FreeBytes) != 1048576 || val(e.TotalBytes) != 8589934592 {
		t.Errorf("got found=%v confidence=%q free=%d total=%d", e.Found, e.Confidence, val(e.FreeBytes), val(e.TotalBytes))
	}
	for _, log := range []string{
		"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.\n",
		"RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n",
	} {
		if e := Explain(log); e.Found {
			t.Errorf("found %s in %q: no memory hint", e.Framework, log)
		}
	}
}

// Messages pasted into prose, without a space after the colon.
func TestExplainNoSpaceAfterColon(t *testing.T) {
	for _, log := range []string{
		"I got this error:CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total capacity; 5.28 GiB already allocated; 1.07 GiB free; 5.30 GiB reserved in total by PyTorch)",
		"the error message:torch.OutOfMemoryError:CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 7.79 GiB of which 1.07 GiB is free.",
		"when running train.py I get the error:Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total capacity; 5.28 GiB already allocated; 1.07 GiB free; 5.30 GiB reserved in total by PyTorch)",
	} {
		e := Explain(log)
		if !e.Found || val(e.RequestedBytes) != 2<<30 || val(e.TotalBytes) != 8364448809 || val(e.FreeBytes) != 1148903752 {
			t.Errorf("%q: found=%v requested=%d total=%d free=%d", log, e.Found, val(e.RequestedBytes), val(e.TotalBytes), val(e.FreeBytes))
		}
	}
}

// Words of these messages in ordinary log lines are no message.
func TestExplainIgnoresLookalikes(t *testing.T) {
	for _, log := range []string{
		"Killed 3 stale workers before the restart\n",
		"INFO the worker was Killed by the scheduler at 12:00\n",
		"step 137 | loss 0.137 | exit code 0\n",
		"Resource exhausted errors are retried 3 times\n",
		"tip: avoid CUDA out of memory errors with a smaller batch\n",
		"memory allocated 12.3 GiB, reserved 14.0 GiB, total capacity 80 GiB\n",
		"[WARNING] [stage3.py:1939:step] pytorch allocator cache flushes are rare\n",
	} {
		if e := Explain(log); e.Found {
			t.Errorf("found %s (%s) in %q", e.Framework, e.Kind, log)
		}
	}
}

// A PyTorch message whose closing parenthesis was lost keeps its last fields.
func TestExplainPyTorchWithoutClosingParenthesis(t *testing.T) {
	e := Explain("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 5.28 GiB already allocated; 3.75 MiB free; 5.30 GiB reserved in total by PyTorch\n")
	if val(e.TotalBytes) != 8364448809 || val(e.FreeBytes) != 3932160 || val(e.ReservedByFrameworkBytes) != 5690831667 {
		t.Errorf("total=%d free=%d reserved=%d", val(e.TotalBytes), val(e.FreeBytes), val(e.ReservedByFrameworkBytes))
	}
}

// "CUDA error: out of memory" raised from pin_memory() is pinned host
// memory (cudaHostAlloc), likely; the same error elsewhere is the card's.
func TestExplainCUDAErrorFromPinMemory(t *testing.T) {
	pinned := "  File \"/opt/conda/lib/python3.8/site-packages/deepspeed/accelerator/cuda_accelerator.py\", line 217, in pin_memory\n" +
		"    return tensor.pin_memory()\n" +
		"RuntimeError: CUDA error: out of memory\n" +
		"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
	e := Explain(pinned)
	if e.Kind != "pinned_host" || e.Confidence != "likely" || !strings.Contains(e.Reason, ".pin_memory()") {
		t.Errorf("kind %q confidence %q reason %q", e.Kind, e.Confidence, e.Reason)
	}
	gpu := "  File \"train.py\", line 40, in <module>\n    loss.backward()\nRuntimeError: CUDA error: out of memory\n"
	if e := Explain(gpu); e.Kind != "gpu" || e.Confidence != "" {
		t.Errorf("kind %q confidence %q", e.Kind, e.Confidence)
	}
}

// Messages of other builds and tools, each with the numbers it states.
func TestExplainMoreMessages(t *testing.T) {
	for _, c := range []struct {
		name, log, framework, kind, confidence string
		requested, free, total, allocated      uint64
	}{
		{"JAX device buffer", "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00G. That was not possible. There are 3.28G free.; (0x0x0_HBM0)",
			"jax", "gpu", "", 8 << 30, 3521873183, 0, 0},
		{"TPU hbm", "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 17.48G of 15.48G hbm. Exceeded hbm capacity by 2.00G.",
			"jax", "gpu", "", 0, 0, 16621523436, 18769007084},
		{"CUDA driver error", "RuntimeError: CUDA driver error: out of memory", "cuda", "gpu", "", 0, 0, 0, 0},
		{"darknet", "CUDA Error: out of memory\ndarknet: ./src/utils.c:331: error: Assertion `0' failed.", "cuda", "gpu", "", 0, 0, 0, 0},
		{"backend buffer", "llama_model_load: error loading model: unable to allocate backend buffer", "llama.cpp", "gpu", "", 0, 0, 0, 0},
		{"Metal", "ggml_metal_graph_compute: command buffer 0 failed with status 5\nerror: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", "llama.cpp", "gpu", "", 0, 0, 0, 0},
		{"TensorRT runtime", "[TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)", "tensorrt", "gpu", "", 0, 0, 0, 0},
		{"cuBLAS in disguise", "2019-07-21 23:23:06.224853: E tensorflow/stream_executor/cuda/cuda_blas.cc:238] failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED\n" +
			"RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)` (is the GPU out of memory?)", "cublas", "gpu", "likely", 0, 0, 0, 0},
		{"DataLoader killed", "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. ", "pytorch", "host", "likely", 0, 0, 0, 0},
		{"JVM heap", "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space", "jvm", "host", "", 0, 0, 0, 0},
		{"Python MemoryError", "  File \"prep.py\", line 12, in <module>\n    data = f.read()\nMemoryError\n", "python", "host", "", 0, 0, 0, 0},
		{"Kubernetes", "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n", "kubernetes", "host", "", 0, 0, 0, 0},
		{"old CPU allocator", "RuntimeError: [enforce fail at CPUAllocator.cpp:56] data. DefaultCPUAllocator: not enough memory: you tried to allocate 12GB. Buy new RAM!",
			"pytorch", "host", "", 12 << 30, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := Explain(c.log)
			if !e.Found || e.Framework != c.framework || e.Kind != c.kind || e.Confidence != c.confidence ||
				val(e.RequestedBytes) != c.requested || val(e.FreeBytes) != c.free || val(e.TotalBytes) != c.total || val(e.AllocatedByFrameworkBytes) != c.allocated {
				t.Errorf("found=%v framework=%q kind=%q confidence=%q requested=%d free=%d total=%d allocated=%d",
					e.Found, e.Framework, e.Kind, e.Confidence, val(e.RequestedBytes), val(e.FreeBytes), val(e.TotalBytes), val(e.AllocatedByFrameworkBytes))
			}
		})
	}
}
