#!/usr/bin/env python3
"""Measures how often NVML's counters really change on this GPU.

Polls nvmlDeviceGetTotalEnergyConsumption, nvmlDeviceGetPowerUsage (and the
instantaneous/average power field values where the driver has them) as
fast as it can (no sleep: each call is a few microseconds to tens of
microseconds) on GPU 0, first idle, then under a steady load (a separate
process running fp16 matmuls in a loop), and records every change of value
with the CLOCK_MONOTONIC time of the poll that saw it. Prints, per counter
and phase: polls, distinct values, the intervals between changes
(min/p10/median/p90/max) and the typical step; writes every change to
CHANGES_CSV.

    python3 experiments/power/nvml_update_periods.py OUT_TXT CHANGES_CSV [seconds_per_phase]
"""
import os
import statistics
import subprocess
import sys
import time

import pynvml

LOAD = r"""
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.half)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.half)
torch.cuda.synchronize()
print("load running", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
"""


def field_ids():
    ids = {}
    for name in ("NVML_FI_DEV_POWER_INSTANT", "NVML_FI_DEV_POWER_AVERAGE"):
        if hasattr(pynvml, name):
            ids[name[len("NVML_FI_DEV_"):].lower()] = getattr(pynvml, name)
    return ids


def poll(h, seconds, fields):
    """Returns {counter: [(t_ns, value), ...changes]}, polls, call_ns."""
    readers = {
        "energy_mj": lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h),
        "power_mw": lambda: pynvml.nvmlDeviceGetPowerUsage(h),
    }
    for name, fid in fields.items():
        def rd(fid=fid):
            v = pynvml.nvmlDeviceGetFieldValues(h, [fid])[0]
            if v.nvmlReturn != 0:
                raise pynvml.NVMLError(v.nvmlReturn)
            return v.value.uiVal
        try:
            rd()
            readers[name + "_mw"] = rd
        except Exception as e:  # not supported by this driver/GPU
            print(f"# field {name}: {e}", flush=True)
    last = {k: None for k in readers}
    changes = {k: [] for k in readers}
    polls = 0
    t_calls = 0
    end = time.monotonic_ns() + int(seconds * 1e9)
    while True:
        t0 = time.monotonic_ns()
        if t0 >= end:
            break
        for k, rd in readers.items():
            t = time.monotonic_ns()
            v = rd()
            if v != last[k]:
                changes[k].append((t, v))
                last[k] = v
        t_calls += time.monotonic_ns() - t0
        polls += 1
    return changes, polls, t_calls / max(polls, 1)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def report(phase, changes, polls, call_ns, out):
    out.append(f"## {phase}: {polls} polls, {call_ns / 1e3:.1f} us per poll of all counters")
    for k, ch in changes.items():
        # The first entry is the initial value, not a change.
        ts = [t for t, _ in ch[1:]]
        vals = [v for _, v in ch]
        if len(ts) < 3:
            out.append(f"{k}: {len(ts)} changes")
            continue
        iv = [(b - a) / 1e6 for a, b in zip(ts, ts[1:])]
        steps = [b - a for a, b in zip(vals[1:], vals[2:])]
        out.append(
            f"{k}: {len(ts)} changes over {(ts[-1] - ts[0]) / 1e9:.2f} s; interval ms min {min(iv):.2f} "
            f"p10 {pct(iv, 10):.2f} median {statistics.median(iv):.2f} p90 {pct(iv, 90):.2f} max {max(iv):.2f}; "
            f"step median {statistics.median(steps)} (first {vals[0]}, last {vals[-1]})"
        )
        if k == "energy_mj":
            span = (ch[-1][0] - ch[1][0]) / 1e9
            out.append(f"  mean power from the energy counter: {(vals[-1] - vals[1]) / span / 1e3:.1f} W")


def main():
    out_txt, out_csv = sys.argv[1], sys.argv[2]
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 8.0
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    out = [
        f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {pynvml.nvmlDeviceGetName(h)}, "
        f"driver {pynvml.nvmlSystemGetDriverVersion()}, nvidia-ml-py {getattr(pynvml, '__version__', '?')}",
        f"# busy polling, {secs:.0f} s per phase; times are CLOCK_MONOTONIC of the poll that saw the new value",
    ]
    fields = field_ids()
    rows = []
    ch, n, c = poll(h, secs, fields)
    report("idle", ch, n, c, out)
    rows += [("idle", k, t, v) for k, xs in ch.items() for t, v in xs]
    load = subprocess.Popen([sys.executable, "-c", LOAD, str(secs + 6)], stdout=subprocess.PIPE, text=True)
    assert load.stdout.readline().strip() == "load running"
    time.sleep(2.0)  # let power settle
    ch, n, c = poll(h, secs, fields)
    report("load (fp16 8192^3 matmuls)", ch, n, c, out)
    rows += [("load", k, t, v) for k, xs in ch.items() for t, v in xs]
    load.wait()
    text = "\n".join(out) + "\n"
    print(text, end="", flush=True)
    with open(out_txt, "w") as f:
        f.write(text)
    with open(out_csv, "w") as f:
        f.write("phase,counter,t_ns,value\n")
        for r in rows:
            f.write(",".join(map(str, r)) + "\n")


if __name__ == "__main__":
    main()
