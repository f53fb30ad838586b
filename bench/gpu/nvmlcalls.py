"""What NVML's process-list calls cost, with TENANTS processes on GPU 0.

  python3 bench/gpu/nvmlcalls.py [TENANTS] [CALLS] [VRAMTOP_BINARY]

Calls each variant CALLS times (default 200) through ctypes, back to back
and then SPACING_S apart, and prints the CPU (user + system, this process)
and wall time per call. The variants are
the calls a watcher makes for one device's process list: the compute list
with a one-entry buffer (how go-nvml's wrapper starts: the driver answers
INSUFFICIENT_SIZE with the count, and the wrapper calls again), asking the
count only (a NULL buffer), with a buffer
large enough at once, the graphics list, and the device's memory.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import stop  # noqa: E402
from watch import start_tenants  # noqa: E402


# Calls a second apart are what a watcher makes; back to back, the driver may
# answer from what it has just gathered.
SPACING_S = 0.25


class ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t (v3)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class Memory(ctypes.Structure):  # nvmlMemory_v2_t
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def measure_calls(calls, binary=None):
    """Print what each variant costs with the processes on GPU 0 now; with
    binary, also how many processes its --once --json lists there."""
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    assert nvml.nvmlInit_v2() == 0
    dev = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
    buf = (ProcessInfo * 1024)()
    mem = Memory(version=ctypes.sizeof(Memory) | (2 << 24))

    def listed(fn, size):
        def call():
            n = ctypes.c_uint(size)
            ret = fn(dev, ctypes.byref(n), buf)
            return ret, n.value
        return call

    def counted():
        n = ctypes.c_uint(0)
        ret = nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, ctypes.byref(n), None)
        return ret, n.value

    variants = [
        ("compute list, count only (0, NULL)", counted),
        ("compute list, 1-entry buffer", listed(nvml.nvmlDeviceGetComputeRunningProcesses_v3, 1)),
        ("compute list, 1024-entry buffer", listed(nvml.nvmlDeviceGetComputeRunningProcesses_v3, 1024)),
        ("graphics list, 1024-entry buffer", listed(nvml.nvmlDeviceGetGraphicsRunningProcesses_v3, 1024)),
        ("memory (nvmlDeviceGetMemoryInfo_v2)", lambda: (nvml.nvmlDeviceGetMemoryInfo_v2(dev, ctypes.byref(mem)), 0)),
    ]
    print(f"{calls} calls each, back to back and {SPACING_S} s apart")
    print(f"{'call':<40}{'ret':>5}{'count':>7}{'CPU ms back to back':>21}{'CPU ms apart':>14}{'wall ms apart':>15}")
    for name, call in variants:
        ret, count = call()
        c0 = time.process_time()
        for _ in range(calls):
            call()
        tight = (time.process_time() - c0) / calls
        cpu = wall = 0.0
        for _ in range(calls):
            time.sleep(SPACING_S)
            c0, w0 = time.process_time(), time.perf_counter()
            call()
            cpu, wall = cpu + time.process_time() - c0, wall + time.perf_counter() - w0
        print(f"{name:<40}{ret:>5}{count:>7}{tight * 1e3:>21.3f}{cpu / calls * 1e3:>14.3f}{wall / calls * 1e3:>15.3f}")
    if binary:
        snap = json.loads(subprocess.check_output([binary, "--once", "--json"]))
        seen = {p["pid"]: p.get("used_bytes") for p in snap["devices"][0].get("processes") or []}
        n = ctypes.c_uint(1024)
        assert nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, ctypes.byref(n), buf) == 0
        truth = {buf[i].pid: buf[i].usedGpuMemory for i in range(n.value)}
        wrong = sum(1 for pid, used in truth.items() if pid in seen and seen[pid] != used)
        print(f"{os.path.basename(binary)} --once --json: {len(seen)} processes on GPU 0, NVML lists {len(truth)}: "
              f"{len(truth.keys() - seen.keys())} missing, {len(seen.keys() - truth.keys())} extra, {wrong} with other memory")


def main():
    ntenants = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    work = tempfile.mkdtemp()
    tenants = start_tenants(ntenants, work) if ntenants else []
    try:
        time.sleep(2)
        print(f"{ntenants} tenants")
        measure_calls(calls, sys.argv[3] if len(sys.argv) > 3 else None)
    finally:
        stop(tenants)


if __name__ == "__main__":
    main()
