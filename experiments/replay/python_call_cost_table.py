#!/usr/bin/env python3
"""The table of gpu_python_call_cost.sh: per traced run and kind of work, what a probed
call cost the Python program (its probed - unprobed difference less the untraced runs'
median difference) against the cost model compensated pacing uses (the trap measured
warm at the start, the return trap, the entry and return programs' mean runs from the
run's own bpf_stats), and the trap measured after each walk size (TRACER_TRAP_COLD).

    python3 python_call_cost_table.py pc_runs.jsonl
"""
import json
import statistics
import sys

# the programs at a call's entry: recorded calls (cu_enter*: cuCtxSetCurrent), counted ones
# (cu_count: cuGetErrorString)
RECORDED = ("cu_enter", "cu_enter_str", "cu_enter_blob")
COUNTED = ("cu_count",)
PROGRAMS = {"cuGetErrorString": COUNTED}


def mean_run(bs, names):
    runs = sum(bs.get(n, {}).get("runs", 0) for n in names)
    t = sum(bs.get(n, {}).get("run_time_ns", 0) for n in names)
    return (t / runs if runs else 0.0), runs


def by_fn(program):
    """{fn: {work: figures}}; the first form (one function, cuGetErrorString) had "work"."""
    return program.get("fns") or {"cuGetErrorString": program["work"]}


def main():
    runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    works = ("none", "py", "cold")
    fns = sorted({f for r in runs if "program" in r for f in by_fn(r["program"])})
    base = {}
    for f in fns:
        for w in works:
            d = [by_fn(r["program"])[f][w]["delta_ns"] for r in runs
                 if r["mode"] == "untraced" and "program" in r and f in by_fn(r["program"])]
            base[(f, w)] = statistics.median(d) if d else None
    print("Untraced probed − unprobed difference per call (the two functions' own): "
          + "; ".join(f"{f} " + ", ".join(f"{w} {base[(f, w)]:.0f} ns" for w in works if base[(f, w)] is not None) for f in fns))
    print()
    print("| function | mode | round | trap warm | return trap | entry prog | return prog | model | work | measured | measured − model | trap after walk (KiB: ns) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    unnamed = {}
    for r in runs:
        if r["mode"] == "untraced" or "program" not in r or not r.get("bpf_stats"):
            continue
        h, bs = r["header"], r["bpf_stats"]
        trap, ret = h.get("probe_trap_ns") or 0, h.get("return_trap_ns") or 0
        cold = (h.get("probe_trap") or {}).get("cold") or []
        cold_s = ", ".join(f"{c['kib']}: {c['entry_trap_ns']:.0f}" for c in cold if isinstance(c, dict))
        for f, figs in by_fn(r["program"]).items():
            progs = PROGRAMS.get(f, RECORDED)
            ent, n_ent = mean_run(bs, progs)
            ext, n_ext = mean_run(bs, ("cu_exit",))
            # returns: the counted calls have none; the recorded ones' share of the returns
            ret_share = 0.0 if progs == COUNTED or not n_ent else min(n_ext / n_ent, 1.0)
            model = trap + ent + ret_share * (ret + ext)
            for w in works:
                if base[(f, w)] is None:
                    continue
                meas = figs[w]["delta_ns"] - base[(f, w)]
                unnamed.setdefault((f, r["mode"], w), []).append(meas - model)
                print(f"| {f} | {r['mode']} | {r['round']} | {trap:.0f} | {ret:.0f} | {ent:.0f} | {ext:.0f} (×{ret_share:.2f}) "
                      f"| {model:.0f} | {w} | {meas:.0f} | {meas - model:+.0f} | {cold_s} |")
    print()
    print("| function | mode | work | measured − model: median (range) ns per call |")
    print("|---|---|---|---|")
    for (f, m, w), v in sorted(unnamed.items()):
        print(f"| {f} | {m} | {w} | {statistics.median(v):+.0f} ({min(v):+.0f} … {max(v):+.0f}) |")


if __name__ == "__main__":
    main()
