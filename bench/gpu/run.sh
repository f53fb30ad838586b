#!/usr/bin/env bash
# Every GPU measurement of docs/PERFORMANCE.md in one command, on a machine with
# an NVIDIA GPU, nvidia-smi and PyTorch:
#
#   bash bench/gpu/run.sh VRAMTOP_BINARY OUTDIR
#
# NVTOP=/path/to/nvtop adds nvtop where it is not on PATH. Prints the tables;
# raw numbers in OUTDIR/watch.json and OUTDIR/perf.json.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
mkdir -p "$out"
export PYTHONUNBUFFERED=1
echo "machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1); $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "vramtop: $("$bin" --version)"
echo; echo "== the lightest watcher: vramtop, nvtop and nvidia-smi in one run (BEFORE=binary adds an earlier build)"
python3 "$here/watch.py" "$bin" "$out" 60 100 | tee "$out/watch.txt"
echo; echo "== where start-up goes"
python3 "$here/startup.py" "$bin" "$out" 5 100 | tee "$out/startup.txt"
echo; echo "== truth: vramtop --once --json against nvidia-smi"
python3 "$here/truth.py" "$bin" 1,10,100 3 | tee "$out/truth.txt"
echo; echo "== swap: memory that moves between two processes, the total unchanged"
python3 "$here/swap.py" "$bin" 4 12 | tee "$out/swap.txt"
echo; echo "== overhead, startup, spikes, cost to a job"
python3 "$here/perf.py" "$bin" "$out" 60 100 | tee "$out/perf.txt"
echo; echo "== energy: vramtop run's energy of a PyTorch job against nvidia-smi's power.draw integrated"
python3 "$here/energy.py" "$bin" 40 | tee "$out/energy.txt"
