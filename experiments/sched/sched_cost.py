#!/usr/bin/env python3
"""The cost of the scheduler events on GPT-2 generation (experiments/sched/gpu_sched.sh).

    sched_cost.py TIMES BPFSTATS_TRACE

TIMES: lines "ROUND MODE SECONDS" (one per generation iteration; modes untraced,
nosched, sched). Prints, per mode, the median iteration time and its ratio to the
untraced one, the paired per-round ratios sched/nosched (median and range) beside the
untraced round-to-round spread, and, from the --bpf-stats trace, the scheduler
programs' runs and time per run, and their time per second of the traced run.
"""
import json
import statistics as st
import sys
from collections import defaultdict


def main() -> None:
    per = defaultdict(lambda: defaultdict(list))
    for line in open(sys.argv[1]):
        r, m, s = line.split()
        per[m][int(r)].append(float(s))
    med = {m: st.median([x for v in per[m].values() for x in v]) for m in per}
    base = med.get("untraced")
    print(f"{'mode':<10} {'rounds':>6} {'iters':>6} {'median s':>9} {'vs untraced':>12}")
    for m in ("untraced", "nosched", "sched"):
        if m not in per:
            continue
        n = sum(len(v) for v in per[m].values())
        print(f"{m:<10} {len(per[m]):>6} {n:>6} {med[m]:>9.4f} {med[m] / base:>12.3f}" if base else m)
    rounds = sorted(set(per["sched"]) & set(per["nosched"]))
    ratio = [st.median(per["sched"][r]) / st.median(per["nosched"][r]) for r in rounds]
    if ratio:
        print(f"paired per round, sched / nosched: median {st.median(ratio):.3f}, "
              f"range {min(ratio):.3f}-{max(ratio):.3f} ({len(ratio)} rounds)")
    u = [st.median(v) for _, v in sorted(per["untraced"].items())]
    if len(u) > 1:
        pairs = [u[i + 1] / u[i] for i in range(len(u) - 1)]
        print(f"untraced round to round (noise): median {st.median(pairs):.3f}, range {min(pairs):.3f}-{max(pairs):.3f}; "
              f"untraced rounds min {min(u):.4f} s, max {max(u):.4f} s")
    if len(sys.argv) > 2:
        lines = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
        head, foot = lines[0], lines[-1]
        ts = [l["ts"] for l in lines[1:-1] if isinstance(l.get("ts"), int) and l.get("type") != "sched"]
        secs = (max(ts) - min(ts)) / 1e9 if ts else 0
        off = sum(1 for l in lines if l.get("type") == "sched" and l.get("op") == "off_cpu")
        print(f"--bpf-stats run: sched path {head.get('sched_path')}, {secs:.1f} s traced, {off} off_cpu lines "
              f"({off / secs if secs else 0:.0f}/s)")
        for name, s in sorted((foot.get("bpf_stats") or {}).items()):
            if name.startswith("sched_") and s.get("runs"):
                print(f"  {name:<18} {s['runs']:>10} runs {s['ns_per_run']:>8.0f} ns/run "
                      f"{s['run_time_ns'] / 1e6:>9.2f} ms ({s['run_time_ns'] / 1e9 / secs * 100 if secs else 0:.3f} % of one CPU)")


if __name__ == "__main__":
    main()
