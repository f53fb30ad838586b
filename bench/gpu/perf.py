"""vramtop's overhead, startup, spike catching and cost to a job, on a real GPU.

  python3 bench/gpu/perf.py VRAMTOP_BINARY OUTDIR [SECONDS] [TENANTS]

Needs nvidia-smi and PyTorch; nvtop and watch are measured where found
(NVTOP=/path/to/nvtop overrides the lookup). Prints tables; writes the raw
numbers to OUTDIR/perf.json.
"""
import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

from common import HERE, MiB, start_tenants, stop

CLK = os.sysconf("SC_CLK_TCK")


class PtyRun:
    """A command in a pseudo-terminal of the given size, its output drained."""

    def __init__(self, argv, cols=160, rows=48, env=None, watch_for=None):
        self.t0 = time.time()
        self.first_seen = None
        self.watch_for = watch_for
        pid, fd = pty.fork()
        if pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            e = dict(os.environ, TERM="xterm-256color", **(env or {}))
            os.execvpe(argv[0], argv, e)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.pid, self.fd = pid, fd
        self.buf = b""
        self.th = threading.Thread(target=self._drain, daemon=True)
        self.th.start()

    def _drain(self):
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.on_output(data)

    def on_output(self, data):
        """Called with each chunk the command writes (subclasses note more)."""
        if self.first_seen is None and self.watch_for:
            self.buf = (self.buf + data)[-65536:]
            if self.watch_for in self.buf:
                self.first_seen = time.time()

    def stat(self):
        """(cpu seconds including reaped children, peak RSS KiB)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ut, st, cut, cst = (int(fields[i]) for i in (11, 12, 13, 14))
        hwm = 0
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return (ut + st + cut + cst) / CLK, hwm

    def stop(self):
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass
        for _ in range(50):
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                break
            time.sleep(0.1)
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def find_nvtop():
    return os.environ.get("NVTOP") or shutil.which("nvtop")


def overhead(binary, seconds):
    tools = [
        ("vramtop 1 Hz", [binary]),
        ("vramtop fast (50 ms)", [binary, "--interval", "50ms"]),
        ("nvidia-smi -l 1", ["nvidia-smi", "-l", "1"]),
    ]
    if shutil.which("watch"):
        tools.append(("watch -n 1 nvidia-smi", ["watch", "-n", "1", "nvidia-smi"]))
    nv = find_nvtop()
    if nv:
        tools.append(("nvtop (1 s)", [nv, "-d", "10"]))
    prof = os.environ.get("VRAMTOP_PROFILE_DIR")
    runs = []
    for i, (name, argv) in enumerate(tools):
        env = {"VRAMTOP_CPUPROFILE": os.path.join(prof, f"cpu{i}.prof")} if prof and argv[0] == binary else None
        runs.append((name, PtyRun(argv, env=env)))
    t0 = time.time()
    time.sleep(seconds)
    wall = time.time() - t0
    rows = []
    for name, r in runs:
        try:
            cpu, rss = r.stat()
        except FileNotFoundError:
            cpu, rss = float("nan"), 0
        rows.append({"tool": name, "cpu_share": cpu / wall, "peak_rss_mib": rss / 1024})
        r.stop()
    base = rows[0]["cpu_share"]
    for row in rows:
        row["cpu_vs_vramtop"] = row["cpu_share"] / base if base > 0 else float("nan")
    return rows


def startup(binary, needle):
    out = []
    for name, argv in (("vramtop", [binary]), ("nvtop", [find_nvtop()] if find_nvtop() else None)):
        if not argv:
            continue
        times = []
        for _ in range(3):
            r = PtyRun(argv, watch_for=needle.encode())
            deadline = time.time() + 20
            while r.first_seen is None and time.time() < deadline:
                time.sleep(0.005)
            times.append((r.first_seen - r.t0) * 1000 if r.first_seen else float("nan"))
            r.stop()
        out.append({"tool": name, "first_frame_ms": sorted(times)[1], "runs_ms": times})
    return out


def spikes(binary, work, seconds=30, size_mib=20 * 1024):
    """A tenant jumps by size_mib for 200 ms once a second; which spikes does
    each sampler see?"""
    log = os.path.join(work, "spikes.log")
    intervals = {"vramtop 1 s": "1s", "vramtop 100 ms": "100ms", "vramtop 50 ms": "50ms"}
    recs = {name: os.path.join(work, f"rec-{iv}.jsonl") for name, iv in intervals.items()}
    recorders = [subprocess.Popen([binary, "record", "-o", recs[name], "--interval", iv])
                 for name, iv in intervals.items()]
    smi_path = os.path.join(work, "smi.csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,memory.used", "--format=csv,noheader,nounits",
                            "-l", "1"], stdout=open(smi_path, "w"))
    time.sleep(2)
    subprocess.run([sys.executable, os.path.join(HERE, "tenant.py"), "spike", "1024", str(size_mib), "1", "0.2",
                    log, str(seconds)], check=True)
    time.sleep(2)
    for p in recorders + [smi]:
        p.terminate()
        p.wait()
    spans = [tuple(map(float, l.split())) for l in open(log) if l.strip()]
    # Used memory of GPU 0 over time from each source: (t_from, t_to, peak MiB).
    series = {name: record_peaks(path) for name, path in recs.items()}
    series["nvidia-smi -l 1"] = smi_samples(smi_path)
    base = min(v for s in series.values() for _, _, v in s if v is not None)
    limit = base + size_mib / 2
    out = []
    for name, s in series.items():
        # A sample counts for a spike when it is high and falls within the
        # spike's span, widened by the time the allocation and free take.
        caught = sum(1 for (a, b) in spans
                     if any(v >= limit and t1 >= a - 0.3 and t0 <= b + 0.3 for t0, t1, v in s))
        out.append({"sampler": name, "spikes": len(spans), "caught": caught,
                    "share": caught / len(spans) if spans else float("nan")})
    return out


def record_peaks(path):
    """(t, t, used MiB) for every sample of GPU 0 in a `vramtop record` file:
    each line's "h" holds the samples taken since the previous line. Format 1
    and keyframes list devices under "d" (by "id"); format 2's deltas under
    "dd" (by index "i")."""
    from datetime import datetime
    out = []
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        d = None
        for e in r.get("d") or []:
            if e.get("id") == "0":
                d = e
        for e in r.get("dd") or []:
            if e.get("i") == 0:
                d = e
        if d is None:
            continue
        if d.get("h"):
            for ns, v in d["h"]:
                out.append((ns / 1e9, ns / 1e9, v / MiB))
        elif "used" in d:
            t = datetime.fromisoformat(r["t"].replace("Z", "+00:00")).timestamp()
            out.append((t, t, d["used"] / MiB))
    return out


def smi_samples(path):
    from datetime import datetime
    out = []
    for line in open(path):
        try:
            ts, used = [x.strip() for x in line.split(",")]
            t = datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, t, float(used)))
        except ValueError:
            continue
    return out


def job_cost(binary, runs=5, seconds=10):
    """Throughput of an allocation-heavy loop with and without vramtop in fast mode."""
    def loop():
        out = subprocess.check_output([sys.executable, os.path.join(HERE, "tenant.py"), "allocloop", str(seconds)],
                                      text=True)
        return float(out.strip().splitlines()[-1])
    res = {"without": [], "with vramtop 50 ms": []}
    for _ in range(runs):
        res["without"].append(loop())
        r = PtyRun([binary, "--interval", "50ms"])
        time.sleep(1)
        res["with vramtop 50 ms"].append(loop())
        r.stop()
    return res


def main():
    binary, outdir = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    ntenants = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    parts = (os.environ.get("PARTS") or "overhead,startup,spikes,jobcost").split(",")
    work = tempfile.mkdtemp()
    result = {"seconds": seconds, "tenants": ntenants}
    if "jobcost" in parts:
        result["job_cost"] = job_cost(binary)
    if "spikes" in parts:
        result["spikes"] = spikes(binary, work)
    tenants = start_tenants([((i * 37) % 13 + 1) * 64 for i in range(ntenants)], work) if ntenants else []
    try:
        if "startup" in parts:
            result["startup"] = startup(binary, os.environ.get("NEEDLE", "H200"))
        if "overhead" in parts:
            result["overhead"] = overhead(binary, seconds)
    finally:
        stop(tenants)
    with open(os.path.join(outdir, "perf.json"), "w") as f:
        json.dump(result, f, indent=2)
    print_tables(result)


def print_tables(r):
    if "overhead" in r:
        print(f"\nOverhead, {r['tenants']} GPU processes, {r['seconds']:.0f} s in a 160x48 pty (run together)")
        print(f"{'tool':<24} {'CPU % of a core':>15} {'x vramtop':>9} {'peak RSS MiB':>12}")
        for row in r["overhead"]:
            print(f"{row['tool']:<24} {row['cpu_share'] * 100:>15.2f} {row['cpu_vs_vramtop']:>9.2f} "
                  f"{row['peak_rss_mib']:>12.1f}")
    if "startup" in r:
        print("\nStartup: exec to the first frame showing the GPU (median of 3)")
        for row in r["startup"]:
            print(f"{row['tool']:<24} {row['first_frame_ms']:>8.0f} ms   runs {['%.0f' % x for x in row['runs_ms']]}")
    if "spikes" in r:
        print("\nSpikes: +20 GiB for 200 ms once a second")
        for row in r["spikes"]:
            print(f"{row['sampler']:<24} {row['caught']:>3}/{row['spikes']:<3} {row['share'] * 100:>6.1f}%")
    if "job_cost" in r:
        print("\nCost to an allocation-heavy loop (allocations/s, runs interleaved)")
        import statistics
        for k, v in r["job_cost"].items():
            print(f"{k:<24} median {statistics.median(v):>10.1f}  runs {['%.0f' % x for x in v]}")


if __name__ == "__main__":
    main()
