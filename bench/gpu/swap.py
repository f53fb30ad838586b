"""Swap check: memory that moves between two processes while the GPU's used
memory reads the same, `vramtop serve` and `vramtop --once --json` against
nvidia-smi over time.

  python3 bench/gpu/swap.py VRAMTOP_BINARY [FLIPS] [PERIOD_S]

Two PyTorch tenants on GPU 0 (GPU=N for another): A holds 4 GiB and B 1 GiB;
at the same moment A frees 3 GiB and B takes 3 GiB, so that the GPU's used
memory is unchanged; FLIPS times (default 4), PERIOD_S apart (default 12),
they swap back and forth. `vramtop serve` (default 1 s interval, started
before the tenants) runs throughout; nvidia-smi, serve's /metrics and
`vramtop --once --json` are read in turn, a few times a second. For each flip
and each reader the staleness is how long after nvidia-smi first showed the
new split the reader showed it ("never" where it did not within the period).
Prints the readings around each flip and a table of staleness; exits 1 where
one is over 2 s.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from common import HERE, stop

BOUND_S = 2.0
A_MIB, B_MIB, MOVED_MIB = 4096, 1024, 3072


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smi_split(gpu, pids):
    """MiB per PID on the GPU, as nvidia-smi lists its compute apps."""
    bus = subprocess.check_output(["nvidia-smi", "-i", str(gpu), "--query-gpu=pci.bus_id",
                                   "--format=csv,noheader"], text=True).strip().lower()[-12:]
    out = subprocess.check_output(["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,used_memory",
                                   "--format=csv,noheader,nounits"], text=True)
    got = {}
    for line in out.strip().splitlines():
        b, pid, used = [x.strip() for x in line.split(",")]
        if b.lower()[-12:] == bus and int(pid) in pids and used.isdigit():
            got[int(pid)] = int(used)
    return got


SERIES = re.compile(r'^vramtop_process_gpu_memory_bytes\{(.*)\} (\S+)$')


def serve_split(url, gpu, pids):
    """MiB per PID on the GPU from serve's /metrics."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    got = {}
    for line in text.splitlines():
        m = SERIES.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
        if labels.get("gpu") == str(gpu) and labels.get("pid", "").isdigit() and int(labels["pid"]) in pids:
            got[int(labels["pid"])] = round(float(m.group(2)) / (1 << 20))
    return got


def once_split(binary, gpu, pids):
    """MiB per PID on the GPU from `vramtop --once --json`."""
    doc = json.loads(subprocess.check_output([binary, "--once", "--json"], text=True))
    got = {}
    for d in doc["devices"]:
        if d.get("index") != gpu or d.get("mig"):
            continue
        for p in d["processes"]:
            if p["pid"] in pids and not p.get("exited") and p.get("used_bytes") is not None:
                got[p["pid"]] = round(p["used_bytes"] / (1 << 20))
    return got


def state(split, a, b):
    """"A" while A holds more than B, "B" after a swap, None when unknown."""
    if a not in split or b not in split:
        return None
    return "A" if split[a] > split[b] else "B"


def main():
    binary = os.path.abspath(sys.argv[1])
    flips = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    period = float(sys.argv[3]) if len(sys.argv) > 3 else 12.0
    gpu = int(os.environ.get("GPU", "0"))
    work = tempfile.mkdtemp()
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    serve = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
    tenants = []
    readings = []  # (time, reader, split)
    try:
        start = time.time() + 40  # after both tenants hold their memory
        ready = []
        for name, frm, to in (("a", A_MIB, A_MIB - MOVED_MIB), ("b", B_MIB, B_MIB + MOVED_MIB)):
            r = os.path.join(work, f"ready-{name}")
            tenants.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "tenant.py"), "flip", str(frm), str(to),
                 f"{start:.3f}", str(period), str(flips), r],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            ready.append(r)
        while not all(os.path.exists(r) for r in ready):
            if time.time() > start - 5:
                raise SystemExit("the tenants did not hold their memory in time")
            if any(t.poll() is not None for t in tenants):
                raise SystemExit("a tenant exited")
            time.sleep(0.2)
        a, b = (int(open(r).read()) for r in ready)
        pids = {a, b}
        end = start + flips * period
        readers = (("nvidia-smi", lambda: smi_split(gpu, pids)),
                   ("serve /metrics", lambda: serve_split(url, gpu, pids)),
                   ("--once --json", lambda: once_split(binary, gpu, pids)))
        while time.time() < end:
            for name, read in readers:
                try:
                    split = read()
                except (OSError, subprocess.CalledProcessError, ValueError) as e:
                    print(f"  {name}: {e}", file=sys.stderr)
                    split = {}
                readings.append((time.time(), name, split))
    finally:
        stop(tenants)
        stop([serve])

    print(f"GPU {gpu}: A (PID {a}) {A_MIB} MiB <-> {A_MIB - MOVED_MIB} MiB, "
          f"B (PID {b}) {B_MIB} MiB <-> {B_MIB + MOVED_MIB} MiB, {flips} flips {period:g} s apart")
    names = [n for n, _ in readers]
    rows, failed = [], False
    for k in range(flips):
        t0, t1 = start + k * period, start + (k + 1) * period
        want = "B" if k % 2 == 0 else "A"
        print(f"\nflip {k + 1} at +0.0 s: readings (s after the flip, reader, A MiB, B MiB)")
        for t, name, split in readings:
            if t0 - 1 <= t < min(t1, t0 + 5):
                print(f"  {t - t0:6.2f}  {name:<15} {split.get(a, '-'):>6} {split.get(b, '-'):>6}")
        shown = {}
        for name in names:
            # The first reading from which the reader shows the new split
            # and goes on showing it until the next flip.
            mine = [(t, state(s, a, b)) for t, n, s in readings if n == name and t0 <= t < t1]
            shown[name] = None
            for i, (t, st) in enumerate(mine):
                if all(x == want for _, x in mine[i:]):
                    shown[name] = t
                    break
        ref = shown["nvidia-smi"]
        for name in names[1:]:
            if ref is None or shown[name] is None:
                stale = None
            else:
                stale = max(0.0, shown[name] - ref)
            bad = stale is None or stale > BOUND_S
            failed |= bad
            rows.append((k + 1, name, stale, bad))
    print(f"\n{'flip':>4}  {'reader':<15} {'staleness (s)':>13}  verdict")
    for k, name, stale, bad in rows:
        s = "never" if stale is None else f"{stale:.2f}"
        print(f"{k:>4}  {name:<15} {s:>13}  {'OVER ' + str(BOUND_S) + ' s' if bad else 'ok'}")
    print("swap:", f"STALE (a reader over {BOUND_S} s after nvidia-smi)" if failed else f"every reader within {BOUND_S} s of nvidia-smi")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
