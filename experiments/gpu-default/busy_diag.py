#!/usr/bin/env python3
"""Why a default run's busy time differs from full CUPTI's (issue 43: JAX's steady phase
+8-12 %): two figures per traced run, from its measured kernels and power samples.

- Overlap: the measured kernels' summed durations against the union of their intervals,
  over the whole run and the steady phase (`phase` markers `steady` to `end`). The
  inferred timeline runs a graph's nodes one after the other on the launch stream, so
  where measured kernels overlap (graph branches, several streams), it counts the sum
  where the GPU was busy for the union.
- Clocks: per NVML GPU, the median SM clock of the power samples inside the run's measured
  windows (`gpu_window` lines; a full run: its whole run) against the steady phase's
  (`GPU:MHz|GPU:MHz`). Kernels measured while the clock still ramps up would run longer
  than in the steady phase. (The H200 runs of 2026-11-27 in docs/graphs/ ran every kernel
  at 1,980 MHz, the idle GPU beside it at 345.)

    grep -F -e '"type":"gpu"' -e '"type":"power"' -e '"type":"gpu_window"' -e '"type":"marker"' TRACE \\
        | python3 busy_diag.py PROG ROUND MODE
prints one CSV line: prog,round,mode,kernels,sum_ms,union_ms,overlap_pct,steady_kernels,
steady_sum_ms,steady_union_ms,steady_overlap_pct,clock_windows_mhz,clock_steady_mhz,windows
"""
import json
import statistics
import sys


def union_ns(iv):
    total, end = 0, None
    for s, e in sorted(iv):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    prog, rnd, mode = sys.argv[1:4]
    kernels, power, windows, phases = [], [], [], {}
    for line in sys.stdin:
        try:
            x = json.loads(line)
        except ValueError:
            continue
        t = x.get("type")
        if t == "gpu" and x.get("op") == "kernel" and x.get("ts") and x.get("end_ts"):
            kernels.append((x["ts"], x["end_ts"]))
        elif t == "power" and x.get("sm_clock_mhz") is not None:
            power.append((x["ts"], x["sm_clock_mhz"], x.get("gpu")))
        elif t == "gpu_window" and x.get("ts") and x.get("end_ts"):
            windows.append((x["ts"], x["end_ts"]))
        elif t == "marker" and x.get("op") == "phase":
            phases.setdefault(x.get("label"), x.get("ts"))
    t0, t1 = phases.get("steady"), phases.get("end")
    steady = [(s, e) for s, e in kernels if t0 and t1 and s >= t0 and e <= t1]

    def figs(iv):
        if not iv:
            return ["0", "", "", ""]
        sm, un = sum(e - s for s, e in iv), union_ns(iv)
        return [str(len(iv)), f"{sm / 1e6:.3f}", f"{un / 1e6:.3f}", f"{100 * (sm - un) / sm:.2f}"]

    if not windows and kernels:  # full CUPTI: the whole run is measured
        windows = [(min(s for s, _ in kernels), max(e for _, e in kernels))]

    def clock(spans):
        # per NVML GPU (the idle ones sit at their lowest clock): "GPU:MHz" joined by '|'
        out = []
        for g in sorted({p[2] for p in power}, key=str):
            v = [c for ts, c, q in power if q == g and any(s <= ts <= e for s, e in spans)]
            if v:
                out.append(f"{g}:{statistics.median(v):.0f}")
        return "|".join(out)

    steady_span = [(t0, t1)] if t0 and t1 else []
    print(",".join([prog, rnd, mode] + figs(kernels) + figs(steady) + [clock(windows), clock(steady_span), str(len(windows))]))


if __name__ == "__main__":
    main()
