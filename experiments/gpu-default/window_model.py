#!/usr/bin/env python3
"""The default's windows' cost per run by the cost model, from gpu_default.sh's footers.jsonl.

    window_model.py footers.jsonl runs.csv [NS_PER_RECORD] > model.md

Per default run: the windows that overlap the steady phase (phase markers `steady` to
`end`), each charged its share of the run's attach and detach times plus NS_PER_RECORD per
record (default 960: the in-window cost per graph-node record window_cost.cu measured on the
H200, the higher of its two figures; a plain launch costs 1,300-2,000 ns), in proportion to
its overlap with the phase; in points of the untraced runs' median steady time. Beside it
the paired difference default − nogpu of the same round (points of that round's untraced
steady time), which the processes' spread dominates. Without untraced runs (MODES="default
full") the points are of the default runs' own median steady time, and the output says so.

A second table gives the same for the whole run (the command's wall time, what a user
times): every window by the model, and the footer's own estimate (`window_cost_ns`, what
the budget charged), in points of the untraced runs' median wall time (else the default
runs' own).
"""
import csv
import json
import statistics as st
import sys


def main():
    foot, runs = sys.argv[1], sys.argv[2]
    c = float(sys.argv[3]) if len(sys.argv) > 3 else 960.0
    steady, wall = {}, {}
    for r in csv.DictReader(open(runs)):
        if r["rc"] == "0" and r["steady_s"]:
            steady[(r["prog"], int(r["round"]), r["mode"])] = float(r["steady_s"])
        if r["rc"] == "0" and r.get("wall_s"):
            wall[(r["prog"], int(r["round"]), r["mode"])] = float(r["wall_s"])
    progs = sorted({k[0] for k in steady})
    print(f"# The default's windows in the steady phase, by the cost model ({c:.0f} ns a record)\n")
    print("| program | round | windows in steady | records there | model ms | model points | mode − nogpu points (paired) |")
    print("|---|---|---|---|---|---|---|")
    meds = []
    for p in progs:
        unt = [v for (q, _, m), v in steady.items() if q == p and m == "untraced"]
        what = "untraced"
        if not unt:
            unt = [v for (q, _, m), v in steady.items() if q == p and m == "default"]
            what = "no untraced runs: the default runs' own"
        if not unt:
            continue
        base = st.median(unt)
        meds.append(f"{p} {base:.4f} s ({what})")
        for mode in ("default", "default_h"):
            model_mode(p, mode, foot, steady, base, c)
    print("\nSteady median, the points' base: " + ", ".join(meds) + ".")
    print(f"\n# The default's windows over the whole run ({c:.0f} ns a record)\n")
    print("| program | round | windows | records | model ms | model points | footer's estimate ms | its points |")
    print("|---|---|---|---|---|---|---|---|")
    bases = []
    for p in progs:
        unt = [v for (q, _, m), v in wall.items() if q == p and m == "untraced"]
        what = "untraced"
        if not unt:
            unt = [v for (q, _, m), v in wall.items() if q == p and m in ("default", "first_default")]
            what = "no untraced runs: the default runs' own"
        if not unt:
            continue
        base = st.median(unt)
        bases.append(f"{p} {base:.2f} s ({what})")
        for mode in ("first_default", "default", "default_h"):
            whole_mode(p, mode, foot, base, c)
    print("\nWall median, the points' base: " + ", ".join(bases) + ".")


def whole_mode(p, mode, foot, base, c):
    """The whole-run rows of one program's runs of one mode."""
    name = p if mode == "default" else f"{p} ({mode})"
    pts, est = [], []
    for line in open(foot):
        x = json.loads(line)
        if x["prog"] != p or x["mode"] != mode:
            continue
        g = x.get("gpu_timestamps") or {}
        rec = sum((w[2] or 0) for w in x.get("windows") or [])
        cost = (g.get("attach_ns") or 0) + (g.get("detach_ns") or 0) + rec * c
        e = g.get("window_cost_ns")
        pts.append(100 * cost / 1e9 / base)
        if e is not None:
            est.append(100 * e / 1e9 / base)
        print(f"| {name} | {x['round']} | {g.get('windows', len(x.get('windows') or []))} | {rec} | {cost / 1e6:.1f} | "
              f"{pts[-1]:.2f} | {'' if e is None else f'{e / 1e6:.1f}'} | {'' if e is None else f'{est[-1]:.2f}'} |")
    if pts:
        print(f"| {name} | median | | | | **{st.median(pts):.2f}** (range {min(pts):.2f}-{max(pts):.2f}) | | "
              f"{'' if not est else f'**{st.median(est):.2f}** (range {min(est):.2f}-{max(est):.2f})'} |")


def model_mode(p, mode, foot, steady, base, c):
    """The rows of one program's runs of one mode (default, or gpu_default.sh's default_h)."""
    name = p if mode == "default" else f"{p} ({mode})"
    pts, paired = [], []
    for line in open(foot):
        x = json.loads(line)
        if x["prog"] != p or x["mode"] != mode:
            continue
        ph = {label: ts for ts, label in x["phases"]}
        t0, t1 = ph.get("steady"), ph.get("end")
        if t0 is None or t1 is None:
            continue
        g = x["gpu_timestamps"]
        n = max(g.get("windows") or 1, 1)
        share = ((g.get("attach_ns") or 0) + (g.get("detach_ns") or 0)) / n
        cost, k, rec = 0.0, 0, 0
        for s, e, r, _ in x["windows"]:
            if not e or e <= t0 or s >= t1:
                continue
            f = (min(e, t1) - max(s, t0)) / max(e - s, 1)
            cost += share + f * (r or 0) * c
            k += 1
            rec += round(f * (r or 0))
        pt = 100 * cost / 1e9 / base
        pts.append(pt)
        rd = x["round"]
        d = None
        u = steady.get((p, rd, "untraced"))
        dv, nv = steady.get((p, rd, mode)), steady.get((p, rd, "nogpu"))
        if u and dv and nv:
            d = 100 * (dv - nv) / u
            paired.append(d)
        print(f"| {name} | {rd} | {k} | {rec} | {cost / 1e6:.1f} | {pt:.1f} | {'' if d is None else f'{d:+.1f}'} |")
    if pts:
        print(f"| {name} | median | | | | **{st.median(pts):.1f}** (range {min(pts):.1f}-{max(pts):.1f}) | "
              f"{'' if not paired else f'{st.median(paired):+.1f} (range {min(paired):+.1f} … {max(paired):+.1f})'} |")


if __name__ == "__main__":
    main()
