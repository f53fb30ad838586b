"""Resident memory of builds of vramtop over time, side by side.

  python3 bench/gpu/rss.py SECONDS BINARY [BINARY...]

Each binary runs its live view in its own 200x60 pseudo-terminal on this
machine's GPUs (ARGS adds flags, e.g. ARGS=--demo) for SECONDS; VmRSS of
each is read once a minute and at the end. Prints one table (MB). Meant for
a variant build (one step of start-up left out) against the build it came
from, run beside other measurements: it costs the card nothing.
"""
import os
import shlex
import sys
import time

from perf import PtyRun


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    seconds = float(sys.argv[1])
    bins = sys.argv[2:]
    extra = shlex.split(os.environ.get("ARGS", ""))
    runs = [PtyRun([b] + extra, cols=200, rows=60) for b in bins]
    t0 = time.time()
    print("t_s " + " ".join(os.path.basename(b) for b in bins), flush=True)
    next_t = 5.0
    try:
        while True:
            now = time.time() - t0
            if now >= next_t:
                print(f"{now:5.0f} " + " ".join(f"{rss_mb(r.pid):.1f}" for r in runs), flush=True)
                if next_t >= seconds:
                    break
                next_t = min(seconds, next_t + 60)
            time.sleep(0.5)
    finally:
        for r in runs:
            try:
                os.kill(r.pid, 15)
            except OSError:
                pass


if __name__ == "__main__":
    main()
