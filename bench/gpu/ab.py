"""CPU of watchers run one at a time, in alternating order, over one set of
tenants: a same-run comparison in which no watcher contends with another for
the driver.

  python3 bench/gpu/ab.py SECONDS ROUNDS TENANTS LABEL=BINARY [LABEL=BINARY ...]

Starts TENANTS CUDA processes of three users (as watch.py does), then for each
of ROUNDS rounds runs every tool alone in a 200x60 pty at 1 Hz (the order
rotates each round), and reads its CPU over SECONDS after 5 s of start-up.
LABEL=nvtop runs nvtop (NVTOP=/path or PATH) with -d 10. Prints each tool's
CPU per round, the median, and each round's ratio to the first tool and to
nvtop, with their medians. CALLS=N first prints nvmlcalls.py's table over
the same tenants (N calls of each) and checks the first tool's --once --json.
PROF=DIR writes each vramtop's CPU profile of each round there.
"""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import stop  # noqa: E402
from nvmlcalls import measure_calls  # noqa: E402
from perf import PtyRun, find_nvtop  # noqa: E402
from watch import COLS, ROWS, cpu_rss, start_tenants  # noqa: E402


def main():
    seconds, rounds, ntenants = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    tools = []
    for arg in sys.argv[4:]:
        label, _, binary = arg.partition("=")
        if label == "nvtop":
            tools.append((label, [binary or find_nvtop(), "-d", "10"]))
        else:
            tools.append((label, [binary]))
    work = tempfile.mkdtemp()
    tenants = start_tenants(ntenants, work) if ntenants else []
    cpu = {t[0]: [] for t in tools}
    try:
        time.sleep(3)
        if os.environ.get("CALLS"):
            # What NVML's list calls cost over these tenants, and whether
            # the first tool lists them all.
            measure_calls(int(os.environ["CALLS"]), tools[0][1][0])
            print()
        for r in range(rounds):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            for label, argv in order:
                env = {}
                if os.environ.get("PROF") and label != "nvtop":
                    env["VRAMTOP_CPUPROFILE"] = os.path.join(os.environ["PROF"], f"cpu-{label}-r{r + 1}.prof")
                run = PtyRun(argv, cols=COLS, rows=ROWS, env=env)
                time.sleep(5)
                t0, c0 = time.time(), cpu_rss(run.pid)[0]
                time.sleep(seconds)
                c1 = cpu_rss(run.pid)[0]
                cpu[label].append(100 * (c1 - c0) / (time.time() - t0))
                run.stop()
    finally:
        stop(tenants)
    first = tools[0][0]
    print(f"{ntenants} tenants, {rounds} rounds of {seconds:.0f} s, each tool alone, order rotating")
    print(f"{'tool':<14}" + "".join(f"{'r' + str(i + 1):>7}" for i in range(rounds)) + f"{'median':>8}"
          + f"{'x ' + first:>16}" + (f"{'x nvtop':>10}" if "nvtop" in cpu else ""))
    for label, _ in tools:
        xs = cpu[label]
        line = f"{label:<14}" + "".join(f"{x:>7.2f}" for x in xs) + f"{statistics.median(xs):>8.2f}"
        line += f"{statistics.median(a / b for a, b in zip(xs, cpu[first])):>16.3f}"
        if "nvtop" in cpu:
            line += f"{statistics.median(a / b for a, b in zip(xs, cpu['nvtop'])):>10.3f}"
        print(line)
    print("(CPU: % of one core; ratios: the median of the rounds' ratios)")


if __name__ == "__main__":
    main()
