"""Helpers shared by the GPU measurement scripts."""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


def gpu_count():
    out = subprocess.check_output(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], text=True)
    return len(out.split())


def start_tenants(sizes_mib, workdir, env=None, gpus=None):
    """Start one `tenant.py hold` per size, spread over the GPUs (gpus[i] is
    the comma list of GPUs of tenant i; by default round robin); return their
    Popen objects once every one has allocated its memory."""
    n = gpu_count()
    procs, ready = [], []
    for i, mib in enumerate(sizes_mib):
        r = os.path.join(workdir, f"ready-{time.time_ns()}-{i}")
        where = gpus[i] if gpus else str(i % n)
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "tenant.py"), "hold", str(mib), r, where],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        procs.append(p)
        ready.append(r)
    deadline = time.time() + 600
    while not all(os.path.exists(r) for r in ready):
        if time.time() > deadline:
            raise SystemExit("tenants did not start in 10 minutes")
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise SystemExit(f"a tenant exited with status {dead[0].returncode}")
        time.sleep(0.2)
    return procs


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()


def smi_gpus():
    out = subprocess.check_output(
        ["nvidia-smi", "--query-gpu=index,memory.total,memory.reserved,memory.used,memory.free",
         "--format=csv,noheader,nounits"], text=True)
    gpus = {}
    for line in out.strip().splitlines():
        idx, total, reserved, used, free = [x.strip() for x in line.split(",")]
        gpus[int(idx)] = {"total": int(total), "reserved": int(reserved), "used": int(used), "free": int(free)}
    return gpus


def smi_apps():
    out = subprocess.check_output(
        ["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,used_memory", "--format=csv,noheader,nounits"],
        text=True)
    apps = {}
    for line in out.strip().splitlines():
        if not line.strip():
            continue
        bus, pid, used = [x.strip() for x in line.split(",")]
        apps[(bus.lower(), int(pid))] = int(used) if used.isdigit() else None
    return apps


def vramtop_json(binary, *args):
    return json.loads(subprocess.check_output([binary, "--once", "--json", *args], text=True))


def mib(b):
    """Bytes as nvidia-smi prints them in MiB: rounded up (an idle H200's
    644939776 reserved bytes, 615.06 MiB, print as 616 MiB)."""
    return None if b is None else -(-b // MiB)
