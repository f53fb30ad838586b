"""What NVML itself makes resident, whoever calls it.

  python3 bench/gpu/nvmlmem.py

Calls NVML through ctypes, one step at a time, each variant in a fresh
process, and prints the resident KiB each step adds: anonymous memory,
libcuda (which nvmlInit loads), libnvidia-ml and other files. Every NVML
tool pays what it shows before its own memory (nvtop, nvidia-smi, vramtop).
"""
import ctypes
import json
import subprocess
import sys

def cats():
    out = {"anon": 0, "libcuda": 0, "nvml": 0, "other_file": 0}
    name = None
    for line in open("/proc/self/smaps"):
        f = line.split()
        if len(f) >= 5 and "-" in f[0] and ":" not in f[0]:
            name = f[5] if len(f) > 5 else ""
            continue
        if f[0] == "Rss:":
            kb = int(f[1])
            if name == "" or name.startswith("["):
                out["anon"] += kb
            elif "libcuda" in name:
                out["libcuda"] += kb
            elif "nvidia-ml" in name:
                out["nvml"] += kb
            else:
                out["other_file"] += kb
    return out

def child(steps):
    nv = ctypes.CDLL("libnvidia-ml.so.1")
    res = []
    res.append(("dlopen", cats()))
    h = ctypes.c_void_p()
    buf = ctypes.create_string_buffer(256)
    ver = ctypes.c_int()
    class Mem2(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
    class Proc(ctypes.Structure):
        _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
    procs = (Proc * 1024)()
    n = ctypes.c_uint()
    u = ctypes.c_uint * 2
    for s in steps:
        if s == "init":
            rc = nv.nvmlInit_v2()
        elif s == "handle":
            c = ctypes.c_uint(); nv.nvmlDeviceGetCount_v2(ctypes.byref(c))
            rc = nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
        elif s == "info":
            nv.nvmlDeviceGetName(h, buf, 96); nv.nvmlDeviceGetUUID(h, buf, 96)
            pci = ctypes.create_string_buffer(128); nv.nvmlDeviceGetPciInfo_v3(h, pci)
            a = ctypes.c_uint(); b = ctypes.c_uint(); rc = nv.nvmlDeviceGetMigMode(h, ctypes.byref(a), ctypes.byref(b))
        elif s == "driverver":
            nv.nvmlSystemGetDriverVersion(buf, 80); rc = nv.nvmlSystemGetNVMLVersion(buf, 80)
        elif s == "cudaver":
            rc = nv.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(ver))
        elif s == "memory":
            m = Mem2(); m.version = ctypes.sizeof(Mem2) | (2 << 24)
            rc = nv.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(m))
        elif s == "procs":
            n.value = 1024; rc = nv.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(n), procs)
            n.value = 1024; nv.nvmlDeviceGetGraphicsRunningProcesses_v3(h, ctypes.byref(n), procs)
        elif s == "gauges":
            ut = u(); nv.nvmlDeviceGetUtilizationRates(h, ut)
            t = ctypes.c_uint(); nv.nvmlDeviceGetTemperature(h, 0, ctypes.byref(t))
            rc = nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(t))
        elif s == "procutil":
            cnt = ctypes.c_uint(0)
            nv.nvmlDeviceGetProcessUtilization(h, None, ctypes.byref(cnt), ctypes.c_ulonglong(0))
            arr = (ctypes.c_ulonglong * (3 * max(cnt.value, 1) + 3))()
            rc = nv.nvmlDeviceGetProcessUtilization(h, arr, ctypes.byref(cnt), ctypes.c_ulonglong(0))
        elif s == "loop":
            for _ in range(30):
                m = Mem2(); m.version = ctypes.sizeof(Mem2) | (2 << 24)
                nv.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(m))
                n.value = 1024; nv.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(n), procs)
            rc = 0
        res.append((s + ("" if rc == 0 else " rc=%d" % rc), cats()))
    print(json.dumps(res))

if len(sys.argv) > 1:
    child(sys.argv[1].split(","))
    sys.exit(0)

variants = [
    "init,handle,info,driverver,cudaver,memory,procs,gauges,procutil,loop",
    "init,handle,info,driverver,memory,procs,gauges,procutil,loop,cudaver",
    "init,handle,memory,procs,loop",
]
for v in variants:
    out = subprocess.run([sys.executable, __file__, v], capture_output=True, text=True)
    if out.returncode != 0:
        print("variant", v, "failed:", out.stderr[-500:]); continue
    res = json.loads(out.stdout)
    print("\nvariant:", v)
    print("%-22s %8s %8s %8s %8s   (KiB resident; delta to previous step)" % ("step", "anon", "libcuda", "nvml", "otherfile"))
    prev = None
    for name, c in res:
        if prev is None:
            print("%-22s %8d %8d %8d %8d" % (name, c["anon"], c["libcuda"], c["nvml"], c["other_file"]))
        else:
            print("%-22s %+8d %+8d %+8d %+8d" % (name, c["anon"]-prev["anon"], c["libcuda"]-prev["libcuda"], c["nvml"]-prev["nvml"], c["other_file"]-prev["other_file"]))
        prev = c
    print("%-22s %8d %8d %8d %8d" % ("total", prev["anon"], prev["libcuda"], prev["nvml"], prev["other_file"]))
