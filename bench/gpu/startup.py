"""Where vramtop's start-up goes: exec to each step, then to the screen.

  python3 bench/gpu/startup.py VRAMTOP_BINARY OUTDIR [RUNS] [TENANTS]

Runs vramtop RUNS times (default 5) in a 200x60 pseudo-terminal with
VRAMTOP_TRACE set, first on the idle card, then with TENANTS (default 100)
CUDA processes of three users, and prints the median milliseconds from exec
to each step it marks (the Go runtime and package initialisation done, the
source open, the devices' memory published, the process lists published,
the first frame with data built) and to the first output naming the GPU and
one of the tenants' users. TENANTS 0 leaves the second part out; ARGS adds
arguments to the command line, NEEDLE changes the GPU name looked for:

  NEEDLE=H100 ARGS=--demo python3 bench/gpu/startup.py ./vramtop out/ 8 0

times the demo's start-up on a machine without a GPU.
"""
import os
import shlex
import statistics
import sys
import tempfile
import time

from common import stop
from watch import COLS, ROWS, USERS, NeedleRun, start_tenants

STEPS = ("main", "source-open", "memory-published", "processes-published", "frame-with-data")


def trace(binary, outdir, runs, needles, label):
    marks = {}
    for i in range(runs):
        path = os.path.join(outdir, f"trace-{label}-{i}")
        if os.path.exists(path):
            os.remove(path)
        argv = [binary] + shlex.split(os.environ.get("ARGS", ""))
        r = NeedleRun(argv, needles, cols=COLS, rows=ROWS, env={"VRAMTOP_TRACE": path})
        deadline = time.time() + 10
        while len(r.seen) < len(needles) and time.time() < deadline:
            time.sleep(0.001)
        time.sleep(0.3)
        r.stop()
        for n in needles:
            t = r.seen.get(n.encode())
            marks.setdefault("screen: " + n, []).append((t - r.t0) * 1000 if t else float("nan"))
        with open(path) as f:
            for line in f:
                step, ns = line.split()
                marks.setdefault(step, []).append(int(ns) / 1e6 - r.t0 * 1000)
    order = sorted(marks, key=lambda k: statistics.median(marks[k]))
    print(f"\n{label}: ms from exec, median of {runs}")
    for k in order:
        print(f"  {k:<22} {statistics.median(marks[k]):>7.1f}   runs {['%.0f' % v for v in marks[k]]}")


def main():
    binary, outdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    ntenants = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    needle = os.environ.get("NEEDLE", "H200")
    trace(binary, outdir, runs, [needle], "idle card")
    if ntenants == 0:
        return
    work = tempfile.mkdtemp()
    tenants = start_tenants(ntenants, work)
    try:
        time.sleep(3)
        trace(binary, outdir, runs, [needle, USERS[0]], f"{ntenants} processes")
    finally:
        stop(tenants)


if __name__ == "__main__":
    main()
