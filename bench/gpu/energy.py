"""Energy: vramtop run's energy of a real job against nvidia-smi's power.draw integrated.

  python3 bench/gpu/energy.py VRAMTOP_BINARY [SECONDS] [GPU]

Runs a PyTorch job of SECONDS (default 40) on GPU (default 0): full-speed
matmuls for the first half, then matmuls a quarter of the time (so the power
moves), under `VRAMTOP_BINARY run --report json`. Meanwhile nvidia-smi samples
the GPU's power.draw every 100 ms (and its total_energy_consumption where this
nvidia-smi knows that field). Prints a table: the energy vramtop reports (its
method: NVML's total-energy counter, or power integrated), nvidia-smi's
power.draw integrated by trapezoids over the same window (the report's
energy.from to energy.to), the ratio, nvidia-smi's own counter difference over
the window where available, and the job's share vramtop gives. Exits 1 where
vramtop reports no energy or the ratio is off by more than 10%.

  python3 bench/gpu/energy.py selftest    checks the parsing and the integral
                                          on made-up input (no GPU needed)
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

HERE = os.path.abspath(__file__)


def job(seconds):
    """The load: matmuls at full speed, then a quarter of the time."""
    import torch
    a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.float16)
    b = torch.randn(8192, 8192, device="cuda:0", dtype=torch.float16)
    t0 = time.time()
    n = 0
    while time.time() - t0 < seconds:
        busy = time.time() - t0 < seconds / 2
        s = time.time()
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
        n += 20
        if not busy:
            time.sleep(3 * (time.time() - s))
    del c
    print(f"job: {n} matmuls of 8192x8192 fp16 in {time.time() - t0:.1f} s", file=sys.stderr)
    return 0


def parse_time(s):
    """An RFC 3339 time as Go writes it (nanoseconds, Z or an offset), as Unix seconds."""
    s = s.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    frac = ""
    if "." in s:
        head, rest = s.split(".", 1)
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        frac, tz = rest[:i], rest[i:]
        s = head + tz
    t = datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp() + (float("0." + frac) if frac else 0.0)


def number(field):
    """A CSV field of nvidia-smi (nounits) as a float; None for [N/A] and the like."""
    field = field.strip()
    try:
        return float(field)
    except ValueError:
        return None


def parse_smi(lines):
    """(arrival time, 'power, [energy]' line) pairs as (t, watts, mJ or None), skipping bad lines."""
    out = []
    for t, line in lines:
        parts = line.strip().split(",")
        if not parts or parts == [""]:
            continue
        w = number(parts[0])
        if w is None:
            continue
        e = number(parts[1]) if len(parts) > 1 else None
        out.append((t, w, e))
    return out


def at(samples, t, k):
    """samples[*][k] at time t, linearly interpolated (None outside or unknown)."""
    for (t0, *v0), (t1, *v1) in zip(samples, samples[1:]):
        if t0 <= t <= t1 and v0[k - 1] is not None and v1[k - 1] is not None:
            if t1 == t0:
                return v0[k - 1]
            return v0[k - 1] + (v1[k - 1] - v0[k - 1]) * (t - t0) / (t1 - t0)
    return None


def integrate(samples, t_from, t_to):
    """The power (W) of samples integrated by trapezoids over [t_from, t_to], in J;
    the ends interpolated. None where the samples do not cover the window."""
    if not samples or samples[0][0] > t_from or samples[-1][0] < t_to or t_to <= t_from:
        return None
    pts = [(t_from, at(samples, t_from, 1))]
    pts += [(t, w) for t, w, _ in samples if t_from < t < t_to]
    pts.append((t_to, at(samples, t_to, 1)))
    if any(w is None for _, w in pts):
        return None
    return sum((w0 + w1) / 2 * (t1 - t0) for (t0, w0), (t1, w1) in zip(pts, pts[1:]))


def smi_fields():
    """The query: power.draw, and total_energy_consumption where nvidia-smi has it."""
    fields = ["power.draw"]
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=power.draw,total_energy_consumption",
                            "--format=csv,noheader,nounits", "-i", "0"], capture_output=True, text=True, timeout=30)
        if r.returncode == 0 and number(r.stdout.strip().split(",")[-1]) is not None:
            fields.append("total_energy_consumption")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return fields


def sample(gpu, fields, lines, stop):
    p = subprocess.Popen(["nvidia-smi", "-i", str(gpu), "--query-gpu=" + ",".join(fields),
                          "--format=csv,noheader,nounits", "-lms", "100"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def read():
        for line in p.stdout:
            lines.append((time.time(), line))
    th = threading.Thread(target=read, daemon=True)
    th.start()
    stop.wait()
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
    th.join(timeout=5)


def table(report, gpu, smi):
    """The rows to print and whether they are within 10%."""
    g = next((g for g in report.get("gpus", []) if g.get("id") == str(gpu)), None)
    if g is None:
        return [f"vramtop's report has no GPU {gpu}: {[x.get('id') for x in report.get('gpus', [])]}"], False
    e = g.get("energy")
    if e is None:
        return [f"GPU {gpu}: vramtop: {g.get('energy_unknown', 'no energy')}"], False
    t0, t1 = parse_time(e["from"]), parse_time(e["to"])
    j_smi = integrate(smi, t0, t1)
    e0, e1 = at(smi, t0, 2), at(smi, t1, 2)
    counter = (e1 - e0) / 1000 if e0 is not None and e1 is not None else None
    rows = [f"{'GPU':>3}  {'method':>7}  {'window s':>8}  {'vramtop J':>10}  {'smi power J':>11}  {'ratio':>6}  "
            f"{'smi counter J':>13}  {'job share J':>11}  {'vramtop kWh':>11}"]
    ratio = e["joules"] / j_smi if j_smi else None
    rows.append(f"{gpu:>3}  {e['method']:>7}  {e['seconds']:>8.1f}  {e['joules']:>10.0f}  "
                f"{j_smi if j_smi is not None else float('nan'):>11.0f}  "
                f"{ratio if ratio is not None else float('nan'):>6.3f}  "
                f"{counter if counter is not None else float('nan'):>13.0f}  "
                f"{e['job_joules']:>11.0f}  {e['kwh']:>11.6f}")
    rows.append(f"(job share by {e['job_share_by']}; average {e['average_watts']:.0f} W; "
                f"{len(smi)} nvidia-smi samples; nan: not available)")
    return rows, ratio is not None and abs(ratio - 1) <= 0.10


def main(argv):
    if len(argv) >= 2 and argv[1] == "job":
        return job(float(argv[2]))
    if len(argv) >= 2 and argv[1] == "selftest":
        return selftest()
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[1])
    seconds = float(argv[2]) if len(argv) > 2 else 40
    gpu = int(argv[3]) if len(argv) > 3 else 0
    fields = smi_fields()
    lines, stop = [], threading.Event()
    th = threading.Thread(target=sample, args=(gpu, fields, lines, stop), daemon=True)
    th.start()
    time.sleep(3)  # an idle stretch before the job
    with tempfile.TemporaryDirectory() as work:
        rep = os.path.join(work, "report.json")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), CUDA_DEVICE_ORDER="PCI_BUS_ID")
        cmd = [binary, "run", "--report", "json", "--report-file", rep, "--",
               sys.executable, HERE, "job", str(seconds)]
        r = subprocess.run(cmd, env=env, timeout=seconds + 300)
        time.sleep(2)
        stop.set()
        th.join(timeout=20)
        if r.returncode != 0:
            print(f"vramtop run exited with status {r.returncode}", file=sys.stderr)
            return 1
        with open(rep) as f:
            report = json.load(f)
    smi = parse_smi(lines)
    print(f"nvidia-smi fields: {','.join(fields)}; job {seconds:.0f} s on GPU {gpu}; "
          f"command: {' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd[:7]))} ...")
    rows, ok = table(report, gpu, smi)
    print("\n".join(rows))
    return 0 if ok else 1


def selftest():
    """The parsing and the integral on made-up input."""
    assert abs(parse_time("2026-12-02T06:18:00.5526344Z") - (datetime(2026, 12, 2, 6, 18, tzinfo=timezone.utc).timestamp() + 0.5526344)) < 1e-6
    assert abs(parse_time("2026-12-02T07:18:00.25+01:00") - (datetime(2026, 12, 2, 6, 18, tzinfo=timezone.utc).timestamp() + 0.25)) < 1e-6
    assert parse_time("2026-12-02T06:18:00Z") == datetime(2026, 12, 2, 6, 18, tzinfo=timezone.utc).timestamp()
    base = 1_000_000.0
    # 100 W rising 10 W a second, 10 samples a second for 20 s, and a
    # counter that is its exact integral; a line of [N/A] and an empty one.
    raw = []
    for i in range(201):
        t = base + i / 10
        w = 100 + 10 * (i / 10)
        mj = 5e9 + (100 * (i / 10) + 5 * (i / 10) ** 2) * 1000
        raw.append((t, f"{w:.2f}, {mj:.0f}\n"))
    raw.insert(50, (base + 4.95, "[N/A], [N/A]\n"))
    raw.append((base + 30, "\n"))
    smi = parse_smi(raw)
    assert len(smi) == 201, len(smi)
    # From 2.05 s to 17.3 s: 100*dt + 5*(t1^2 - t0^2).
    t0, t1 = 2.05, 17.3
    want = 100 * (t1 - t0) + 5 * (t1 ** 2 - t0 ** 2)
    got = integrate(smi, base + t0, base + t1)
    assert abs(got - want) < 1e-6 * want, (got, want)
    assert integrate(smi, base - 1, base + 3) is None  # not covered
    only_power = parse_smi([(t, line.split(",")[0]) for t, line in raw])
    assert all(e is None for _, _, e in only_power)
    report = {"gpus": [{"id": "0", "energy": {
        "joules": want * 1.02, "kwh": want * 1.02 / 3.6e6, "method": "counter",
        "from": datetime.fromtimestamp(base + t0, timezone.utc).isoformat().replace("+00:00", "Z"),
        "to": datetime.fromtimestamp(base + t1, timezone.utc).isoformat().replace("+00:00", "Z"),
        "seconds": t1 - t0, "average_watts": want / (t1 - t0), "job_joules": want, "job_kwh": want / 3.6e6,
        "job_fraction": 1, "job_share_by": "alone"}}]}
    rows, ok = table(report, 0, smi)
    assert ok and " 1.020 " in rows[1], rows
    counter = float(rows[1].split()[6])
    assert abs(counter - want) < 2, (counter, want)
    rows, ok = table(report, 0, only_power)
    assert ok and rows[1].split()[6] == "nan", rows
    rows, ok = table({"gpus": [{"id": "0", "energy_unknown": "energy unknown: reading the energy counter: no permission"}]}, 0, smi)
    assert not ok and "no permission" in rows[0], rows
    rows, ok = table({"gpus": []}, 0, smi)
    assert not ok, rows
    print("\n".join(table(report, 0, smi)[0]))
    print("selftest: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
