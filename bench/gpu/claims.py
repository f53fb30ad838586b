"""Claims: two waiters started at the same moment never get the same GPU.

  python3 bench/gpu/claims.py VRAMTOP_BINARY [MIB] [HOLD_S]

Two rounds, each with two `vramtop wait --min-free MIB` started at once, each
followed by a real PyTorch job that allocates MIB MiB on the GPU it was given
and holds it for HOLD_S seconds (default: 60% of GPU 0's memory, so two
cannot share one card, and 10 s):

  run    vramtop wait --min-free MIB -- python3 claims.py job ...
         (the claim is held while the job runs)
  $(...) CUDA_VISIBLE_DEVICES=$(vramtop wait --min-free MIB) python3 claims.py job ...
         (the claim lasts until the job's process shows up on the card)

Prints a table, one row per job: the GPU (UUID) it got, when it started and
ended, how long its waiter waited, and whether it ran out of memory; then
whether any two jobs held one GPU at the same time. Exits 1 if they did, or if
a job failed. VRAMTOP_CLAIMS_DIR is a fresh directory for the run. DEMO=1 runs
it on the demo GPUs, with jobs that only sleep (a check of the script).
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


def job(mib, hold_s, log):
    """A tenant: allocate mib MiB on the first visible GPU, hold it, log."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    t0 = time.time()
    status = "ok"
    if os.environ.get("DEMO") != "1":
        import torch
        try:
            x = torch.empty(mib << 20, dtype=torch.uint8, device="cuda:0")
            x.fill_(1)
            torch.cuda.synchronize()
        except RuntimeError as e:
            status = "OOM" if "out of memory" in str(e) else "error"
    start = time.time()
    time.sleep(hold_s)
    with open(log, "a") as f:
        f.write(f"{vis} {t0:.3f} {start:.3f} {time.time():.3f} {status}\n")
    return 0 if status == "ok" else 1


def gpu0_mib():
    out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", "0"], text=True)
    return int(out.split()[0])


def round_(binary, form, mib, hold_s, work, demo):
    log = os.path.join(work, ("run" if form == "run" else "subst") + ".log")
    jobcmd = f"{sys.executable} {HERE} job {mib} {hold_s} {log}"
    flags = f"--min-free {mib}MiB --settle 1s --interval 200ms --uuid --timeout {int(hold_s * 6 + 120)}s"
    if demo:
        flags += " --demo"
    if form == "run":
        shell = f"t=$(date +%s.%N); {binary} wait {flags} -- {jobcmd}; echo \"waited-from $t\""
    else:
        shell = f"t=$(date +%s.%N); CUDA_VISIBLE_DEVICES=$({binary} wait {flags}) {jobcmd}; echo \"waited-from $t\""
    procs = [subprocess.Popen(["sh", "-c", shell], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    rows = []
    with open(log) as f:
        for line in f:
            vis, t0, start, end, status = line.split()
            rows.append((vis, float(t0), float(start), float(end), status))
    return rows, [p.returncode for p in procs], outs


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "job":
        sys.exit(job(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]))
    binary = os.path.abspath(sys.argv[1])
    demo = os.environ.get("DEMO") == "1"
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else (1024 if demo else int(gpu0_mib() * 0.6))
    hold_s = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    work = tempfile.mkdtemp(prefix="vramtop-claims-bench-")
    os.environ["VRAMTOP_CLAIMS_DIR"] = os.path.join(work, "claims")
    os.environ["XDG_STATE_HOME"] = os.path.join(work, "state")
    bad = False
    print(f"{'form':7} {'job':>3} {'GPU':44} {'start s':>8} {'end s':>8} {'alloc':>6} {'status':6}")
    for form in ("run", "$(...)"):
        t_begin = time.time()
        rows, codes, outs = round_(binary, form, mib, hold_s, work, demo)
        rows.sort(key=lambda r: r[2])
        for i, (vis, t0, start, end, status) in enumerate(rows):
            print(f"{form:7} {i:>3} {vis:44} {start - t_begin:8.2f} {end - t_begin:8.2f} {start - t0:6.2f} {status:6}")
        overlap = [(a[0]) for i, a in enumerate(rows) for b in rows[i + 1:] if a[0] == b[0] and b[2] < a[3] and a[2] < b[3]]
        if len(rows) != 2 or any(codes) or any(r[4] != "ok" for r in rows):
            bad = True
            print(f"{form}: {len(rows)} jobs logged, exit statuses {codes}")
            for o in outs:
                print("  | " + o.strip().replace("\n", "\n  | "))
        print(f"{form}: same GPU held by two jobs at once: {'YES ' + ','.join(overlap) if overlap else 'no'}")
        bad = bad or bool(overlap)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
