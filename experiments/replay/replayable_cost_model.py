#!/usr/bin/env python3
"""What each recording mode's probes cost a program's timed part, from the
recordings themselves (issue 44: `--replayable` against the default on GPT-2
generation; the guide's per-call cost model): per trace, the eBPF programs'
run time per run (footer `bpf_stats`, kernel.bpf_stats_enabled) and the
uprobe traps (header `probe_trap_ns`, `return_trap_ns`, measured by the
recording at its start) over every probed call of the steady phase (between
the program's `steady` and `end` phase markers), against the untraced run's
steady time.

    python3 replayable_cost_model.py --untraced-s 0.41 MODE=TRACE [MODE=TRACE ...]
    python3 replayable_cost_model.py --scan-only MODE#ROUND=TRACE      # one JSON line, no points
    python3 replayable_cost_model.py --untraced-s 0.41 --rounds SCANS.jsonl

--rounds: the --scan-only lines of several rounds (MODE#ROUND); per run its
points, per mode the median (and range) of points over the rounds, and per
mode the paired differences to the default of the same round (median, range).

TRACE: a .jsonl(.gz|.zst) trace or a NAME.rec directory. Prints a table:
per mode, the steady phase's probed calls (entries; returns), the programs'
ns per call, the traps' ns per call, their sum over the phase in ms and in
points of the untraced steady time, and each mode's difference to the first
MODE (the base, e.g. default).

What it leaves out (say so beside the figure): the stops of image loads
(`--replayable`: before the timed part in these programs; `stopped` off_cpu
lines in the phase are counted and summed separately), CUPTI's windows
(default: the footer's `window_cost_ns`, the whole run's, printed), cache
effects of the probes on the program's own code.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys

ENTRY_PROGS = ("cu_enter", "cu_enter_str", "cu_enter_blob", "cu_launch")
RETURN_PROGS = ("cu_exit",)


def lines(path):
    if os.path.isdir(path):
        for n in ("trace.jsonl", "trace.jsonl.zst", "trace.jsonl.gz"):
            if os.path.exists(os.path.join(path, n)):
                path = os.path.join(path, n)
                break
    if path.endswith(".gz"):
        f = gzip.open(path, "rt")
    elif path.endswith(".zst"):
        f = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE, text=True).stdout
    else:
        f = open(path)
    for line in f:
        yield line


def scan(path):
    header = footer = None
    steady = end = None
    calls = []  # (ts, returned)
    stops = []  # (ts, end)
    for line in lines(path):
        t = line[line.find('"type":"') + 8:]
        t = t[: t.find('"')]
        if t == "header":
            header = json.loads(line)
        elif t == "footer":
            footer = json.loads(line)
        elif t == "marker":
            v = json.loads(line)
            if v.get("op") == "phase" and v.get("label") == "steady":
                steady = v["ts"]
            elif v.get("op") == "phase" and v.get("label") == "end":
                end = v["ts"]
        elif t == "sched":
            if '"stopped"' in line:
                v = json.loads(line)
                if v.get("name") == "stopped":
                    stops.append((v["ts"], v["end_ts"]))
        elif t in ("process", "power", "gpu", "gpu_window", "stack", "sample", "durations", "copy_data",
                   "count", "kernel_count", "ioctl", "nvidia_fd"):
            continue
        else:
            v = json.loads(line)
            if "ts" in v and "name" in v and str(v.get("name", "")).startswith("cu"):
                calls.append((v["ts"], "duration_us" in v or "ret" in v))
    return header, footer, steady, end, calls, stops


def per_run(stats, names):
    runs = sum((stats.get(n) or {}).get("runs", 0) for n in names)
    ns = sum((stats.get(n) or {}).get("run_time_ns", 0) for n in names)
    return (ns / runs if runs else None), runs


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if n == 0 else (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)


def rounds_table(rows, untraced_s):
    """Per run, per mode and paired to the default of the same round."""
    for r in rows:
        r["points"] = r["cost_ms"] / 1e3 / untraced_s * 100
    print(f"steady phase; untraced steady time (median of the untraced runs) {untraced_s} s; "
          "points = probes' time / untraced steady time x 100\n")
    print("| run | calls (returns) | entry prog ns | launch prog ns (runs) | return prog ns | trap ns (return) | probes ms | points | recorded steady s |")
    print("|---|---|---|---|---|---|---|---|---|")
    f = lambda x, d=0: "–" if x is None else f"{x:,.{d}f}"
    for r in rows:
        print(f"| {r['mode']} | {r['calls']:,} ({r['returns']:,}) | {f(r['entry_prog_ns'])} | {f(r.get('launch_prog_ns'))} "
              f"({f(r.get('launch_runs'))}) | {f(r['return_prog_ns'])} | {f(r['trap_ns'])} ({f(r['return_trap_ns'])}) | "
              f"{r['cost_ms']:.1f} | {r['points']:.2f} | {r['recorded_steady_s']:.3f} |")
    by_mode, by_round = {}, {}
    for r in rows:
        m, _, k = r["mode"].partition("#")
        by_mode.setdefault(m, []).append(r)
        by_round.setdefault(k, {})[m] = r
    print("\n| mode | runs | points: median (range) | − default, paired by round: median (range) | launch prog ns: median (range) |")
    print("|---|---|---|---|---|")
    summary = {}
    for m, rs in by_mode.items():
        pts = [r["points"] for r in rs]
        diffs = [rr[m]["points"] - rr["default"]["points"] for rr in by_round.values() if m in rr and "default" in rr]
        lp = [r["launch_prog_ns"] for r in rs if r.get("launch_prog_ns")]
        summary[m] = {"runs": len(rs), "points_median": median(pts), "points_min": min(pts), "points_max": max(pts),
                      "paired_vs_default_median": median(diffs) if m != "default" else None,
                      "paired_vs_default": diffs if m != "default" else None, "launch_prog_ns_median": median(lp)}
        d = "" if m == "default" or not diffs else f"{median(diffs):+.2f} ({min(diffs):+.2f} … {max(diffs):+.2f})"
        lps = "" if not lp else f"{median(lp):,.0f} ({min(lp):,.0f}-{max(lp):,.0f})"
        print(f"| {m} | {len(rs)} | {median(pts):.2f} ({min(pts):.2f}-{max(pts):.2f}) | {d} | {lps} |")
    print("\n" + json.dumps({"untraced_s": untraced_s, "modes": summary, "runs": rows}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--untraced-s", type=float, help="the untraced run's steady time (s; a median)")
    ap.add_argument("--scan-only", action="store_true", help="print each trace's row as one JSON line, without points")
    ap.add_argument("--rounds", help="a file of --scan-only lines: the rounds' table")
    ap.add_argument("traces", nargs="*", help="MODE=TRACE")
    a = ap.parse_args()
    if a.rounds:
        if a.untraced_s is None:
            sys.exit("--rounds needs --untraced-s")
        with open(a.rounds) as fh:
            rounds_table([json.loads(l) for l in fh if l.strip()], a.untraced_s)
        return
    if a.untraced_s is None and not a.scan_only:
        sys.exit("--untraced-s is needed (or --scan-only)")
    rows = []
    for mt in a.traces:
        mode, _, path = mt.partition("=")
        header, footer, steady, end, calls, stops = scan(path)
        if steady is None or end is None:
            sys.exit(f"{path}: no steady/end phase markers")
        stats = (footer or {}).get("bpf_stats") or {}
        if not stats:
            sys.exit(f"{path}: no bpf_stats in the footer (record with --bpf-stats)")
        entry_ns, entry_runs = per_run(stats, ENTRY_PROGS)
        launch_ns, launch_runs = per_run(stats, ("cu_launch",))
        ret_ns, ret_runs = per_run(stats, RETURN_PROGS)
        trap = (header or {}).get("probe_trap_ns") or 700.0
        rtrap = (header or {}).get("return_trap_ns") or trap
        inside = [c for c in calls if steady <= c[0] < end]
        n_entry = len(inside)
        n_ret = sum(1 for c in inside if c[1])
        ns = n_entry * (trap + (entry_ns or 0)) + n_ret * (rtrap + (ret_ns or 0))
        stop_ns = sum(max(0, min(e, end) - max(s, steady)) for s, e in stops if e > steady and s < end)
        gt = (footer or {}).get("gpu_timestamps") or {}
        rows.append({
            "mode": mode, "calls": n_entry, "returns": n_ret, "entry_prog_ns": entry_ns, "return_prog_ns": ret_ns,
            "trap_ns": trap, "return_trap_ns": rtrap, "cost_ms": ns / 1e6,
            "points": ns / 1e9 / a.untraced_s * 100 if a.untraced_s else None, "stops_ms": stop_ns / 1e6,
            "launch_prog_ns": launch_ns, "launch_runs": launch_runs,
            "window_cost_ms": (gt.get("window_cost_ns") or 0) / 1e6, "recorded_steady_s": (end - steady) / 1e9,
        })
    if a.scan_only:
        for r in rows:
            print(json.dumps(r))
        return
    print(f"steady phase; untraced steady time {a.untraced_s} s; points = probes' time / untraced steady time x 100\n")
    print("| mode | calls (returns) | entry prog ns | return prog ns | trap ns (return) | probes ms | points | − base | stops in phase ms | CUPTI windows ms (run) | recorded steady s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    base = rows[0]["points"]
    f = lambda x, d=0: "–" if x is None else f"{x:,.{d}f}"
    for r in rows:
        print(f"| {r['mode']} | {r['calls']:,} ({r['returns']:,}) | {f(r['entry_prog_ns'])} | {f(r['return_prog_ns'])} | "
              f"{f(r['trap_ns'])} ({f(r['return_trap_ns'])}) | {r['cost_ms']:.1f} | {r['points']:.2f} | {r['points'] - base:+.2f} | "
              f"{r['stops_ms']:.1f} | {r['window_cost_ms']:.1f} | {r['recorded_steady_s']:.3f} |")
    print("\n" + json.dumps(rows))


if __name__ == "__main__":
    main()
