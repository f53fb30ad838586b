"""A GPU tenant for vramtop's measurements: holds, spikes or churns memory.

  tenant.py hold MIB READYFILE [GPUS]   allocate MIB MiB on each GPU of GPUS (a comma
                                        list of indices, default 0), write READYFILE, sleep
  tenant.py spike BASE_MIB SPIKE_MIB PERIOD_S HOLD_S LOGFILE SECONDS
                                        hold BASE, and every PERIOD_S add SPIKE
                                        for HOLD_S; log each spike's start/end
  tenant.py allocloop SECONDS           allocation-heavy loop; print iterations/s
  tenant.py grow STEP_MIB               grow until out of memory (for `vramtop run`)
  tenant.py flip FROM_MIB TO_MIB START PERIOD_S COUNT READYFILE
                                        hold FROM, write READYFILE, then at the epoch
                                        START and every PERIOD_S after, COUNT times,
                                        switch between holding FROM and TO (bench/gpu/swap.py)
"""
import os
import signal
import sys
import time

import torch

MiB = 1 << 20


def hold(mib, ready, gpus="0"):
    xs = []
    for g in gpus.split(","):
        x = torch.empty(mib * MiB, dtype=torch.uint8, device=f"cuda:{g}")
        x.fill_(1)
        xs.append(x)
        torch.cuda.synchronize(int(g))
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ready + ".tmp", ready)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    while True:
        time.sleep(3600)


def spike(base, size, period, hold_s, log, seconds):
    b = torch.empty(base * MiB, dtype=torch.uint8, device="cuda")
    b.fill_(1)
    torch.cuda.synchronize()
    end = time.time() + seconds
    next_t = time.time() + period
    with open(log, "w") as f:
        while time.time() < end:
            time.sleep(max(0.0, next_t - time.time()))
            next_t += period
            x = torch.empty(size * MiB, dtype=torch.uint8, device="cuda")
            x.fill_(1)
            torch.cuda.synchronize()
            t0 = time.time()
            time.sleep(hold_s)
            t1 = time.time()
            del x
            torch.cuda.empty_cache()  # hand the spike back to the driver
            torch.cuda.synchronize()
            f.write(f"{t0:.6f} {t1:.6f}\n")
            f.flush()


def allocloop(seconds):
    # Every allocation goes to the driver (no caching), so NVML's driver lock
    # is in the way of each one: the worst case for a monitor's cost to a job.
    torch.cuda.init()
    sizes = [(i % 16 + 1) * 4 * MiB for i in range(64)]
    n = 0
    t0 = time.time()
    while time.time() - t0 < seconds:
        for s in sizes:
            x = torch.empty(s, dtype=torch.uint8, device="cuda")
            x.fill_(1)
            del x
            torch.cuda.empty_cache()
        n += len(sizes)
    torch.cuda.synchronize()
    print(f"{n / (time.time() - t0):.1f}")


def flip(frm, to, start, period, count, ready):
    # The smaller size stays allocated; the difference comes and goes, and
    # goes back to the driver (empty_cache), so that two tenants flipping
    # opposite ways move memory between them and leave the total alone.
    base = torch.empty(min(frm, to) * MiB, dtype=torch.uint8, device="cuda")
    base.fill_(1)
    extra = None

    def resize(want):
        nonlocal extra
        if want > min(frm, to) and extra is None:
            extra = torch.empty((want - min(frm, to)) * MiB, dtype=torch.uint8, device="cuda")
            extra.fill_(1)
        elif want == min(frm, to) and extra is not None:
            extra = None
            torch.cuda.empty_cache()
        torch.cuda.synchronize()

    resize(frm)
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ready + ".tmp", ready)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    for k in range(count):
        time.sleep(max(0.0, start + k * period - time.time()))
        resize(to if k % 2 == 0 else frm)
    while True:
        time.sleep(3600)


def grow(step):
    keep = []
    i = 0
    while True:
        keep.append(torch.ones(step * MiB, dtype=torch.uint8, device="cuda"))
        i += 1
        if i % 10 == 0:
            print(f"holding {i * step} MiB; max reserved {torch.cuda.max_memory_reserved() // MiB} MiB",
                  file=sys.stderr, flush=True)
        time.sleep(0.05)


if __name__ == "__main__":
    mode = sys.argv[1]
    a = sys.argv[2:]
    if mode == "hold":
        hold(int(a[0]), a[1], *a[2:3])
    elif mode == "spike":
        spike(int(a[0]), int(a[1]), float(a[2]), float(a[3]), a[4], float(a[5]))
    elif mode == "allocloop":
        allocloop(float(a[0]))
    elif mode == "flip":
        flip(int(a[0]), int(a[1]), float(a[2]), float(a[3]), int(a[4]), a[5])
    elif mode == "grow":
        try:
            grow(int(a[0]))
        except torch.OutOfMemoryError:
            print(f"max_memory_reserved {torch.cuda.max_memory_reserved()} bytes", file=sys.stderr, flush=True)
            raise
    else:
        sys.exit(f"unknown mode {mode}")
