#!/usr/bin/env python3
"""Overhead benchmark driver (run on the GPU machine; `cargo xtask bench
overhead` builds tracer and prints the command, or runs it where a GPU is).

Runs bench/workloads.py untraced, under tracer in several modes and under
torch.profiler, modes interleaved (rotated each repetition so no mode always
follows another), and writes JSON and Markdown tables: per workload and mode
the median iteration time, its spread, the ratio to untraced (and the paired
per-repetition ratios), and what tracer recorded (calls, loss, collector CPU).

    python3 bench/overhead.py --tracer .device-bin/tracer --reps 5 --out docs/bench
"""
import argparse
import datetime
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> tracer options (None: not traced). Optional modes are dropped when
# this tracer does not know the option.
MODES = [
    ("untraced", None),
    ("tracer", []),
    ("tracer_returns_all", ["--returns", "all"]),
    ("tracer_ioctls", ["--ioctls"]),
    ("tracer_replayable", ["--replayable"]),
    ("tracer_gpu_timestamps", ["--gpu-timestamps"]),
    ("torch_profiler", None),
]


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception:
        return ""


def footer(path):
    last = None
    with open(path, "rb") as f:
        for line in f:
            last = line
    try:
        v = json.loads(last)
        return v if v.get("type") == "footer" else None
    except Exception:
        return None


def run_one(args, mode, opts, trace):
    cmd = [sys.executable, os.path.join(HERE, "workloads.py"), "--workloads", args.workloads,
           "--iterations", str(args.iterations)]
    if mode == "torch_profiler":
        cmd.append("--torch-profiler")
    if args.pin is not None:
        # The workload on one CPU, tracer (the collector) on the others: the
        # scheduler no longer moves the launching thread around, which made
        # untraced runs alone vary by 2x on the GPU machine.
        cmd = ["taskset", "-c", str(args.pin), *cmd]
    # --replayable writes a directory with the trace inside.
    rec_dir = trace[:-len(".jsonl")] + ".rec" if opts and "--replayable" in opts else None
    if opts is not None:
        cmd = [args.tracer, "-q", "--force", "-o", rec_dir or trace, *opts, "--", *cmd]
        if args.pin is not None:
            others = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)) if c != args.pin)
            cmd = ["taskset", "-c", others, *cmd]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    wall = time.time() - t0
    if p.returncode != 0:
        raise SystemExit(f"{mode}: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    iters = [json.loads(l[6:]) for l in p.stdout.splitlines() if l.startswith("BENCH ")]
    rec = {"mode": mode, "wall_s": wall, "iterations": iters}
    if opts is not None:
        if rec_dir:
            trace = os.path.join(rec_dir, "trace.jsonl")
        f = footer(trace)
        if f is None:
            raise SystemExit(f"{mode}: the trace has no footer")
        c = f.get("collector") or {}
        rec.update(calls=f["calls"], lost=f["lost"]["total"], duration_s=f["duration_s"],
                   collector_cpu_s=(c.get("cpu_user_s") or 0) + (c.get("cpu_system_s") or 0),
                   collector_max_rss_kib=c.get("max_rss_kib"), trace_bytes=os.path.getsize(trace))
        if rec_dir:
            r = f.get("replay") or {}
            rec.update(replay=r, recording_bytes=sum(
                os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(rec_dir) for n in ns))
            shutil.rmtree(rec_dir)
        else:
            os.remove(trace)
    return rec


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def summarize(runs, modes, workloads):
    out = []
    for w in workloads:
        per_rep = {}  # mode -> [median of that run's iterations]
        all_it = {}
        for r in runs:
            s = [i["seconds"] for i in r["iterations"] if i["workload"] == w]
            if s:
                per_rep.setdefault(r["mode"], []).append((r["rep"], st.median(s)))
                all_it.setdefault(r["mode"], []).extend(s)
        base = st.median(all_it["untraced"]) if "untraced" in all_it else None
        base_rep = dict(per_rep.get("untraced", []))
        for m in modes:
            if m not in all_it:
                continue
            v = all_it[m]
            paired = [med / base_rep[rep] for rep, med in per_rep[m] if rep in base_rep]
            rs = [r for r in runs if r["mode"] == m and "calls" in r]
            row = {
                "workload": w, "mode": m, "n_iterations": len(v), "median_s": st.median(v),
                "p10_s": pct(v, 0.1), "p90_s": pct(v, 0.9),
                "rep_medians_s": [med for _, med in per_rep[m]],
                "ratio": st.median(v) / base if base else None,
                # Noise on a shared host only ever adds time: the 10th
                # percentile is the robust comparison.
                "p10_ratio": pct(v, 0.1) / pct(all_it["untraced"], 0.1) if base else None,
                "paired_ratio_median": st.median(paired) if paired else None,
                "paired_ratio_min": min(paired) if paired else None,
                "paired_ratio_max": max(paired) if paired else None,
            }
            if rs:
                row.update(
                    calls_per_run=st.median([r["calls"] for r in rs]),
                    lost=sum(r["lost"] for r in rs),
                    calls_per_s=st.median([r["calls"] / r["duration_s"] for r in rs]),
                    collector_cpu_s=st.median([r["collector_cpu_s"] for r in rs]),
                    collector_max_rss_kib=max(r["collector_max_rss_kib"] or 0 for r in rs))
            out.append(row)
    return out


def markdown(res):
    h = res["host"]
    s = [f"Overhead benchmark, {res['date']}, {h['gpu']} (driver {h['driver']}), tracer {res['tracer_version']};",
         f"`{res['command']}`; {res['reps']} repetitions × {res['iterations']} timed iterations per workload, "
         "modes interleaved.", "",
         "| workload | mode | median iteration | p10–p90 | median ratio | p10 ratio | paired ratio (min–max) | calls/run | calls/s | lost | collector CPU s |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["table"]:
        f = lambda k, fmt: (fmt.format(r[k]) if r.get(k) is not None else "–")
        s.append(f"| {r['workload']} | {r['mode']} | {r['median_s'] * 1e3:.2f} ms | "
                 f"{r['p10_s'] * 1e3:.2f}–{r['p90_s'] * 1e3:.2f} ms | {f('ratio', '{:.3f}×')} | {f('p10_ratio', '{:.3f}×')} | "
                 f"{f('paired_ratio_median', '{:.3f}×')} ({f('paired_ratio_min', '{:.3f}')}–{f('paired_ratio_max', '{:.3f}')}) | "
                 f"{f('calls_per_run', '{:.0f}')} | {f('calls_per_s', '{:.0f}')} | {f('lost', '{}')} | {f('collector_cpu_s', '{:.2f}')} |")
    return "\n".join(s) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracer", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--workloads", default="gen,matmul,copy")
    ap.add_argument("--modes", default=",".join(m for m, _ in MODES),
                    help="comma-separated subset of: " + ", ".join(m for m, _ in MODES))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "bench"))
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--pin", type=int, default=None if len(os.sched_getaffinity(0)) < 4 else 2,
                    help="CPU for the workload (tracer gets the others); default 2 on 4+ CPUs; -1: no pinning")
    args = ap.parse_args()
    if args.pin is not None and args.pin < 0:
        args.pin = None
    help_text = sh([args.tracer, "record", "--help"])
    wanted = args.modes.split(",")
    modes = []
    for m, opts in MODES:
        if m not in wanted:
            continue
        if opts and opts[0].startswith("--") and opts[0] not in help_text:
            print(f"skipping {m}: this tracer has no {opts[0]}", flush=True)
            continue
        modes.append((m, opts))
    gpu = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).split("\n")[0]
    name, _, driver = gpu.partition(", ")
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"overhead_{day}_{name.replace(' ', '_') or 'gpu'}")
    trace = os.path.join("/tmp", f"bench_overhead_{os.getpid()}.jsonl")
    runs = []
    res = {}
    for rep in range(args.reps):
        k = rep % len(modes)
        for m, opts in modes[k:] + modes[:k]:
            r = run_one(args, m, opts, trace)
            r["rep"] = rep
            runs.append(r)
            print(f"rep {rep + 1}/{args.reps} {m}: " + ", ".join(
                f"{w} {st.median([i['seconds'] for i in r['iterations'] if i['workload'] == w]) * 1e3:.2f} ms"
                for w in args.workloads.split(",")), flush=True)
        res = {
            "benchmark": "overhead", "date": day, "command": " ".join(sys.argv),
            "host": {"gpu": name, "driver": driver, "kernel": os.uname().release},
            "tracer_version": sh([args.tracer, "--version"]), "reps": rep + 1, "iterations": args.iterations,
            "pinned_cpu": args.pin,
            "table": summarize(runs, [m for m, _ in modes], args.workloads.split(",")), "runs": runs,
        }
        # Written after every repetition: a cut-short run still leaves figures.
        with open(stem + ".json", "w") as f:
            json.dump(res, f, indent=1)
        with open(stem + ".md", "w") as f:
            f.write(markdown(res))
    print(markdown(res))
    print(f"written: {stem}.json and .md")


if __name__ == "__main__":
    main()
