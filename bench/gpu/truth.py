"""Truth check: `vramtop --once --json` against nvidia-smi, to the MiB.

  python3 bench/gpu/truth.py VRAMTOP_BINARY [COUNTS] [REPEATS]

Starts PyTorch tenants holding different amounts (cumulatively up to each
count in COUNTS, default 1,10,100), then compares device memory (total,
reserved, used, free) and per-process memory from both tools REPEATS times
(default 3). Prints a table; exits 1 on any mismatch.
"""
import os
import sys
import tempfile

from common import gpu_count, start_tenants, stop, smi_gpus, smi_apps, vramtop_json, mib


def norm_bus(b):
    # nvidia-smi prints 00000000:19:00.0; keep the last 12 characters.
    return b.lower()[-12:]


def compare(binary):
    """One comparison; returns (device fields compared, process rows compared, mismatches)."""
    doc = vramtop_json(binary)
    gpus = smi_gpus()
    apps = smi_apps()
    bad = []
    nd = 0
    vt_apps = {}
    for d in doc["devices"]:
        if d.get("mig"):
            continue
        s = gpus.get(d["index"])
        if s is None:
            bad.append(f"GPU {d['index']} missing from nvidia-smi")
            continue
        for field, key in (("total", "memory_total_bytes"), ("reserved", "memory_reserved_bytes"),
                           ("used", "memory_used_bytes"), ("free", "memory_free_bytes")):
            nd += 1
            if mib(d.get(key)) != s[field]:
                bad.append(f"GPU {d['index']} {field}: vramtop {mib(d.get(key))} MiB, nvidia-smi {s[field]} MiB")
        for p in d["processes"]:
            if "compute" in p["type"]:
                vt_apps[(norm_bus(d.get("pci_bus_id", "")), p["pid"])] = mib(p.get("used_bytes"))
    smi = {(norm_bus(b), pid): v for (b, pid), v in apps.items()}
    for k in sorted(set(smi) | set(vt_apps)):
        if smi.get(k, "absent") != vt_apps.get(k, "absent"):
            bad.append(f"PID {k[1]}: vramtop {vt_apps.get(k, 'absent')} MiB, nvidia-smi {smi.get(k, 'absent')} MiB")
    return nd, len(smi), bad


def main():
    binary = sys.argv[1]
    counts = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "1,10,100").split(",")]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    work = tempfile.mkdtemp()
    tenants = []
    rows = []
    failed = False
    try:
        if gpu_count() > 1:
            # One process holding memory on two GPUs.
            tenants += start_tenants([512], work, gpus=["0,1"])
        for n in counts:
            sizes = [((i * 37) % 13 + 1) * 64 for i in range(len(tenants), n)]
            tenants += start_tenants(sizes, work)
            for r in range(repeats):
                nd, np_, bad = compare(binary)
                rows.append((n, r + 1, nd, np_, len(bad)))
                for b in bad:
                    print("  mismatch:", b)
                failed |= bool(bad)
    finally:
        stop(tenants)
    print(f"{'tenants':>7} {'run':>3} {'device fields':>13} {'processes':>9} {'mismatches':>10}")
    for n, r, nd, np_, nb in rows:
        print(f"{n:>7} {r:>3} {nd:>13} {np_:>9} {nb:>10}")
    print("truth:", "MISMATCH" if failed else "all equal to the MiB")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
