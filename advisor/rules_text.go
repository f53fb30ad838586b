package advisor

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/vramtop/vramtop/sampler"
)

// gpuName names a device in messages: "GPU 0", "GPU 0/3" (a MIG
// instance), "GPU node1:0" (fleet).
func gpuName(d *sampler.Device) string { return "GPU " + d.ID }

// procLabel names a process in messages: "PID 4242 (alice, python train.py)".
func procLabel(p *sampler.Process) string {
	if !p.Visible {
		return fmt.Sprintf("PID %d (not visible here: another container or PID namespace)", p.PID)
	}
	var parts []string
	if p.User != "" {
		parts = append(parts, p.User)
	}
	if c := shortCommand(p.Command); c != "" {
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("PID %d", p.PID)
	}
	return fmt.Sprintf("PID %d (%s)", p.PID, strings.Join(parts, ", "))
}

// interpreters are commands whose first argument says what runs.
var interpreters = map[string]bool{
	"python": true, "python2": true, "python3": true, "ipython": true, "pypy": true, "pypy3": true,
	"torchrun": true, "deepspeed": true, "accelerate": true, "node": true, "bash": true, "sh": true,
	"java": true, "julia": true, "Rscript": true, "uv": true, "poetry": true,
}

// shortCommand shortens a command line to the program and, after an
// interpreter, the script: "/usr/bin/python3 /home/a/train.py --lr 3" is
// "python3 train.py".
func shortCommand(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	prog := path.Base(f[0])
	out := prog
	base := strings.TrimRight(prog, "0123456789.")
	if interpreters[prog] || interpreters[base] {
		for _, a := range f[1:] {
			if strings.HasPrefix(a, "-") {
				continue // flags; after -m the module name follows
			}
			a = path.Base(a)
			// A long module name (python -m a.b.c.d) keeps its ends.
			if i, j := strings.Index(a, "."), strings.LastIndex(a, "."); len(a) > 24 && i != j {
				a = a[:i] + "…" + a[j+1:]
			}
			out += " " + a
			break
		}
	}
	const max = 40
	if len(out) > max {
		out = out[:max-1] + "…"
	}
	return out
}

// pct writes a percentage with one decimal, without a trailing ".0".
func pct(v float64) string {
	s := strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + "%"
}

// rateText writes a rate in bytes per minute: "+512 MiB/min".
// A fitted rate carries float noise: it is rounded to the KiB first.
func rateText(perMin float64) string {
	sign := "+"
	if perMin < 0 {
		sign, perMin = "-", -perMin
	}
	kibs := math.Round(perMin / float64(oneKiB))
	return sign + FormatBytes(uint64(kibs)*oneKiB) + "/min"
}

// minutesText writes a duration as whole minutes, "under a minute" below one.
func minutesText(d time.Duration) string {
	if d < time.Minute {
		return "under a minute"
	}
	return fmt.Sprintf("~%d min", int(math.Round(d.Minutes())))
}

// Process kinds and frameworks, as guessed from the command line.
const (
	kindTraining  = "training"
	kindInference = "inference"
)

var (
	trainingWords  = []string{"train", "finetune", "fine_tune", "fine-tune", "pretrain", "torchrun", "deepspeed", "accelerate", "lightning", "sft", "dpo", "lora"}
	inferenceWords = []string{"vllm", "serve", "server", "infer", "predict", "generate", "eval", "sglang", "tritonserver", "text-generation", "ollama", "llama-server", "llama.cpp", "tgi"}
)

// processKind guesses from the command whether a process trains or serves;
// "" when the command does not say.
func processKind(cmd string) string {
	c := strings.ToLower(cmd)
	for _, w := range inferenceWords {
		if strings.Contains(c, w) {
			return kindInference
		}
	}
	for _, w := range trainingWords {
		if strings.Contains(c, w) {
			return kindTraining
		}
	}
	return ""
}

// framework guesses the framework from the command: "tensorflow", "jax",
// "vllm", "pytorch" (any Python that is not one of the others), or "".
func framework(cmd string) string {
	c := strings.ToLower(cmd)
	switch {
	case strings.Contains(c, "tensorflow") || strings.Contains(c, "keras") || strings.Contains(c, "tf_") || strings.Contains(c, "_tf"):
		return "tensorflow"
	case strings.Contains(c, "jax") || strings.Contains(c, "flax"):
		return "jax"
	case strings.Contains(c, "vllm"):
		return "vllm"
	case strings.Contains(c, "python") || strings.Contains(c, "torch") || strings.Contains(c, "deepspeed") || strings.Contains(c, "accelerate"):
		return "pytorch"
	}
	return ""
}
