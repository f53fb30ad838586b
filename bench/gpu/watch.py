"""The lightest watcher: vramtop against nvtop and nvidia-smi, in one run.

  python3 bench/gpu/watch.py VRAMTOP_BINARY OUTDIR [SECONDS] [TENANTS]

Every tool runs at the same time in its own 200x60 pseudo-terminal, first on
an idle card, then with TENANTS (default 100) CUDA processes of three users
(created with useradd when run as root). CPU is the share of one core spent
between two readings SECONDS apart (start-up excluded); RSS is VmRSS at the
second reading. Start-up is exec to the first frame showing the GPU's name
(and, with the tenants, to the first showing one of their users), key latency the time from a key written to the pty to the first bytes of the
frame it changes (median of 10). nvtop comes from NVTOP=/path or PATH.
Prints one table with the ratios to nvtop; raw numbers in OUTDIR/watch.json.
"""
import json
import shlex
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import HERE, stop
from perf import PtyRun, find_nvtop

COLS, ROWS = 200, 60
USERS = ("alice", "bob", "carol")


def cpu_rss(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return ticks / os.sysconf("SC_CLK_TCK"), rss / 1024


def memory_map(pid):
    """Resident KiB by what holds it, from /proc/PID/smaps: the executable,
    its zero-initialised data past the file (bss), the Go heap, the C heap
    (brk and malloc's per-thread arenas), thread stacks, the other anonymous
    mappings (a driver's, the Go runtime's own), and the libraries."""
    exe = os.path.realpath(f"/proc/{pid}/exe")
    cats, cur = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            p = line.split()
            if "-" in p[0] and ":" not in p[0] and len(p) >= 5:
                lo, hi = (int(x, 16) for x in p[0].split("-"))
                path = p[5] if len(p) > 5 else ""
                if path == exe:
                    cur = "executable"
                elif ".so" in path:
                    b = os.path.basename(path)
                    cur = ("libcuda" if "libcuda" in b else "libnvidia-ml" if "nvidia-ml" in b
                           else "libc" if b.startswith("libc.so") else "other libraries")
                elif path == "[heap]":
                    cur = "C heap"
                elif path:
                    cur = "other files" if not path.startswith("[") else "other anonymous"
                elif lo < 0x100000000:
                    cur = "bss"  # right after a non-PIE executable
                elif lo < 0x7e0000000000:
                    cur = "Go heap"  # Go's arenas, below the mmap area
                elif lo % (64 << 20) == 0 and p[1].startswith("rw"):
                    cur = "C heap"  # a malloc arena of another thread
                elif hi - lo in (8 << 20, (8 << 20) + 4096) and p[1].startswith("rw"):
                    cur = "thread stacks"
                else:
                    cur = "other anonymous"
            elif p[0] == "Rss:" and cur:
                cats[cur] = cats.get(cur, 0) + int(p[1])
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Rss", "Anonymous"):
                cats[k] = int(v.split()[0])
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                cats["threads"] = int(line.split()[1])
    return cats


MEM_COLUMNS = ("Rss", "Anonymous", "executable", "bss", "Go heap", "C heap", "thread stacks",
               "other anonymous", "libcuda", "libnvidia-ml", "libc", "other libraries", "threads")


def extra_tools():
    """EXTRA="label=[VAR=value ...] binary [args];...": more rows in the same
    run, such as variants of one build (give each its own copy of the binary:
    copies of one file share their resident pages)."""
    out = []
    for item in filter(None, (os.environ.get("EXTRA") or "").split(";")):
        label, _, cmd = item.partition("=")
        words = shlex.split(cmd)
        env = {}
        while words and "=" in words[0] and not words[0].startswith(("/", ".")):
            k, _, v = words.pop(0).partition("=")
            env[k] = v
        out.append((label.strip(), words, env))
    return out


def mapped(name):
    """Whether a row gets the memory table: the 1 Hz builds, nvtop, EXTRA rows."""
    return name in ("vramtop 1 Hz", "nvtop", "before 1 Hz") or name.startswith("x ")


def measure(tools, seconds, settle=5.0, prof=None):
    """Run every tool at once; return {name: (cpu share, rss MiB)}."""
    runs = {}
    for tool in tools:
        name, argv = tool[0], tool[1]
        env = dict(tool[2]) if len(tool) > 2 else {}
        if prof and name in ("vramtop 1 Hz", "before 1 Hz"):
            env["VRAMTOP_CPUPROFILE"] = prof.replace("NAME", name.split()[0])
        runs[name] = PtyRun(argv, cols=COLS, rows=ROWS, env=env)
    time.sleep(settle)
    t0, c0 = time.time(), {n: cpu_rss(r.pid)[0] for n, r in runs.items()}
    time.sleep(seconds)
    wall = time.time() - t0
    out = {}
    for n, r in runs.items():
        cpu, rss = cpu_rss(r.pid)
        out[n] = {"cpu_share": (cpu - c0[n]) / wall, "rss_mib": rss}
        if mapped(n):
            try:
                out[n]["memory_map"] = memory_map(r.pid)
            except OSError:
                pass
        r.stop()
    return out


class NeedleRun(PtyRun):
    """A PtyRun that notes when each of several strings first appears."""

    def __init__(self, argv, needles, **kw):
        self.needles, self.seen, self.tail = [n.encode() for n in needles], {}, b""
        super().__init__(argv, **kw)

    def on_output(self, data):
        self.tail = (self.tail + data)[-(1 << 20):]
        for n in self.needles:
            if n not in self.seen and n in self.tail:
                self.seen[n] = time.time()


def first_frame(argv, needles, runs=5):
    """ms from exec to the first output holding each needle, per run."""
    times = {n: [] for n in needles}
    for _ in range(runs):
        r = NeedleRun(argv, needles, cols=COLS, rows=ROWS)
        deadline = time.time() + 10
        while len(r.seen) < len(needles) and time.time() < deadline:
            time.sleep(0.001)
        for n in needles:
            t = r.seen.get(n.encode())
            times[n].append((t - r.t0) * 1000 if t else float("nan"))
        r.stop()
    return times


class KeyRun(PtyRun):
    """A PtyRun that timestamps every chunk of output."""

    def __init__(self, argv, **kw):
        self.chunks = []
        super().__init__(argv, **kw)

    def on_output(self, data):
        self.chunks.append(time.time())


def key_latency(argv, keys=("?", "?"), presses=10):
    """ms from writing a key to the first output after it."""
    r = KeyRun(argv, cols=COLS, rows=ROWS)
    time.sleep(3)
    out = []
    for i in range(presses):
        time.sleep(0.7)  # between frames of new data, as a person presses keys
        n = len(r.chunks)
        t = time.time()
        os.write(r.fd, keys[i % len(keys)].encode())
        deadline = t + 2
        while len(r.chunks) == n and time.time() < deadline:
            time.sleep(0.0005)
        out.append((r.chunks[n] - t) * 1000 if len(r.chunks) > n else float("nan"))
    r.stop()
    return out


def start_tenants(n, work):
    """n `tenant.py hold` processes on GPU 0, round robin over USERS where
    running as root (else all as the current user); wait until all hold."""
    as_root = os.geteuid() == 0
    if as_root:
        for u in USERS:
            subprocess.run(["useradd", "-M", u], stderr=subprocess.DEVNULL)
        probe = subprocess.run(["runuser", "-u", USERS[0], "--", sys.executable, "-c",
                                "import torch, sys; open(sys.argv[1]).close()", os.path.join(HERE, "tenant.py")],
                               capture_output=True)
        if probe.returncode != 0:
            print("tenants run as root: other users cannot run PyTorch here:", probe.stderr.decode()[-200:])
            as_root = False
    os.chmod(work, 0o1777)
    procs, ready = [], []
    for i in range(n):
        r = os.path.join(work, f"ready-{i}")
        argv = [sys.executable, os.path.join(HERE, "tenant.py"), "hold", str(((i * 37) % 13 + 1) * 64), r, "0"]
        if as_root:
            argv = ["runuser", "-u", USERS[i % len(USERS)], "--"] + argv
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ready.append(r)
    deadline = time.time() + 300
    while not all(os.path.exists(r) for r in ready):
        if time.time() > deadline or any(p.poll() is not None for p in procs):
            raise SystemExit("tenants did not start")
        time.sleep(0.2)
    return procs


def main():
    binary, outdir = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    ntenants = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    nvtop = find_nvtop()
    needle = os.environ.get("NEEDLE", "H200")
    work = tempfile.mkdtemp()
    tools = [("vramtop 1 Hz", [binary]),
             ("vramtop 100 ms", [binary, "--interval", "100ms"]),
             ("vramtop 50 ms", [binary, "--interval", "50ms"])]
    if nvtop:
        tools.append(("nvtop", [nvtop, "-d", "10"]))
    tools.append(("nvidia-smi -l 1", ["nvidia-smi", "-l", "1"]))
    if os.environ.get("BEFORE"):
        # An earlier build in the same run, for a before/after ratio.
        tools.append(("before 1 Hz", [os.environ["BEFORE"]]))
    tools += [("x " + label, argv, env) for label, argv, env in extra_tools()]
    res = {"seconds": seconds, "tenants": ntenants}
    res["idle"] = measure(tools, seconds)
    starters = {"vramtop": [binary], "nvtop": [nvtop] if nvtop else None, "nvidia-smi": ["nvidia-smi"]}
    res["startup_idle"] = {n: first_frame(argv, [needle]) for n, argv in starters.items() if argv}
    tenants = start_tenants(ntenants, work)
    try:
        time.sleep(3)
        # PROF=1 takes CPU profiles of the 1 Hz builds in this phase (the
        # profiler's 100 Hz signal adds CPU and resident pages of its own).
        prof = os.path.join(outdir, "cpu-NAME-1hz-100.prof") if os.environ.get("PROF") else None
        res["loaded"] = measure(tools, seconds, prof=prof)
        # RSS with one vramtop only: instances of one binary share its pages,
        # so a page one of them released stays resident for the others.
        alone = [t for t in tools if t[0] in ("vramtop 1 Hz", "nvtop")]
        res["alone"] = measure(alone, 20)
        # The frame naming the GPU, and the first one with a tenant's user
        # in the process table (nvidia-smi names no users).
        res["startup_loaded"] = {n: first_frame(argv, [needle] + ([USERS[0]] if n != "nvidia-smi" else []))
                                 for n, argv in starters.items() if argv}
        res["key_ms"] = key_latency([binary])
    finally:
        stop(tenants)
    with open(os.path.join(outdir, "watch.json"), "w") as f:
        json.dump(res, f, indent=2)
    print_table(res)


def print_memory(title, phase):
    print("\n" + title)
    print(f"  {'':<18}" + "".join(f"{c[:11]:>12}" for c in MEM_COLUMNS))
    for name, row in phase.items():
        if row.get("memory_map"):
            print(f"  {name[:18]:<18}" + "".join(f"{row['memory_map'].get(c, 0):>12}" for c in MEM_COLUMNS))


def print_table(r):
    ref = "nvtop" if "nvtop" in r["idle"] else None
    print(f"\nThe lightest watcher: {r['tenants']} CUDA processes of {len(USERS)} users, a {COLS}x{ROWS} pty, "
          f"{r['seconds']:.0f} s per phase, every tool in the same run")
    print(f"{'tool':<22} {'CPU idle %':>10} {'x nvtop':>7} {'CPU 100p %':>10} {'x nvtop':>7} "
          f"{'RSS idle MB':>11} {'RSS 100p MB':>11} {'x nvtop':>7}")
    for name in r["idle"]:
        i, l = r["idle"][name], r["loaded"][name]
        ri = i["cpu_share"] / r["idle"][ref]["cpu_share"] if ref and r["idle"][ref]["cpu_share"] else float("nan")
        rl = l["cpu_share"] / r["loaded"][ref]["cpu_share"] if ref and r["loaded"][ref]["cpu_share"] else float("nan")
        rr = l["rss_mib"] / r["loaded"][ref]["rss_mib"] if ref else float("nan")
        print(f"{name[:22]:<22} {i['cpu_share'] * 100:>10.2f} {ri:>7.2f} {l['cpu_share'] * 100:>10.2f} {rl:>7.2f} "
              f"{i['rss_mib'] * 1.048576:>11.1f} {l['rss_mib'] * 1.048576:>11.1f} {rr:>7.2f}")
    if ref:
        f = r["loaded"]["vramtop 50 ms"]["cpu_share"] / r["loaded"][ref]["cpu_share"]
        print(f"vramtop 50 ms with {r['tenants']} processes / nvtop at 1 Hz: {f:.2f}")
    print("\nExec to the first frame with data, ms (median of 5): the GPU's name, and a tenant's user in the process table")
    for phase in ("startup_idle", "startup_loaded"):
        for name, by in r[phase].items():
            for needle, ts in by.items():
                print(f"  {phase[8:]:<7} {name:<11} {needle:<6} {statistics.median(ts):>6.1f}   runs {['%.0f' % t for t in ts]}")
    if "alone" in r:
        a = r["alone"]
        line = ", ".join(f"{n} {v['rss_mib'] * 1.048576:.1f} MB" for n, v in a.items())
        ratio = a["vramtop 1 Hz"]["rss_mib"] / a["nvtop"]["rss_mib"] if "nvtop" in a else float("nan")
        print(f"\nRSS with {r['tenants']} processes, one vramtop beside nvtop: {line} (x nvtop {ratio:.2f})")
    print_memory("Where the memory is (resident KiB, with the processes; one vramtop beside nvtop)",
                 r.get("alone", r["loaded"]))
    if any(n.startswith("x ") for n in r["loaded"]):
        print_memory("Every build with a map, with the processes, all running", r["loaded"])
    ks = r["key_ms"]
    print(f"\nKey press to the frame it changes, vramtop: median {statistics.median(ks):.1f} ms, "
          f"max {max(ks):.1f} ms   ({['%.0f' % k for k in ks]})")


if __name__ == "__main__":
    main()
