#!/usr/bin/env python3
"""Overhead as users see it (issue 19), on the GPU machine, as root, in one
command of about 6-8 minutes (`cargo xtask bench overhead` builds tracer
here and prints it):

    python3 bench/overhead.py --tracer .device-bin/tracer --out "$OUT"

Two parts, both unpinned unless --pin CPU is given (the workload on CPU,
tracer on the others):

1. Attached blocks (bench/blocks.py): ONE workload process runs GPT-2
   generation at batch 1 (examples/transformer_inference.py's model and
   settings) and the launch-bound loop (examples/launch_loop.py) in blocks
   of timed iterations. Before each block tracer is attached with `-p` in
   one configuration (or nothing is: untraced), and detached after it.
   Configurations, in an order rotated every repetition: untraced,
   untraced again (the machine's own noise), tracer (default), tracer
   --no-power, tracer --counts, the floor (an empty program on every probed
   function: `--bench-probe empty`, what any uprobe costs), tracer
   --bpf-stats (per-program time, kernel.bpf_stats_enabled; kept out of the
   default's figures as it adds ~20-50 ns per run) and torch.profiler.
   Per repetition and workload, each block's median iteration is divided by
   the untraced block's of the same repetition (paired ratio); the tables
   give the median of those ratios with their min-max, next to the p10
   ratio (10th percentile of all iterations over untraced's).
2. Whole processes, as users run them: `python3 examples/transformer_inference.py`
   and `examples/launch_loop.py`, untraced, under `tracer --`, under
   `tracer --gpu-timestamps --` (CUPTI must be injected at start, so it has
   no attached block) and untraced again; as many rounds as the time budget
   allows (--budget-s).

Per traced block or process: calls recorded, lost, tracer's CPU time by
thread (the collector's main thread, tracer-nvml, tracer-markers; read from
/proc while the workload runs) and the workload's own CPU time, voluntary
and involuntary context switches (does tracer take its CPU?).

Writes overhead_<date>_<gpu>.json and .md into --out, and prints the tables.
"""
import argparse
import datetime
import json
import os
import signal
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> tracer options (None: nothing attached); optional ones are
# dropped (with a line saying so) when this tracer lacks the option.
BLOCKS = [
    ("untraced", None),
    ("untraced_again", None),
    ("tracer", []),
    ("tracer_no_power", ["--no-power"]),
    ("tracer_counts", ["--counts"]),
    ("floor_empty_uprobe", ["--bench-probe", "empty"]),
    ("tracer_bpf_stats", ["--bpf-stats"]),
    ("torch_profiler", None),
]
PROCESS_MODES = [
    ("untraced", None),
    ("tracer", []),
    ("tracer_gpu_timestamps", ["--gpu-timestamps"]),
    ("untraced_again", None),
]
EXAMPLES = {
    "gen": ["examples/transformer_inference.py", "--iterations", "5"],
    "loop": ["examples/launch_loop.py", "--iterations", "5", "--launches", "20000"],
}


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception:
        return ""


def footer(path):
    last = None
    try:
        with open(path, "rb") as f:
            for line in f:
                last = line
        v = json.loads(last)
        return v if v.get("type") == "footer" else None
    except Exception:
        return None


def thread_cpu(pid):
    """CPU seconds (user+system) per thread of process `pid`: "main" (the
    collection loop), else by thread name (tracer-nvml, tracer-markers)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        try:
            s = open(f"/proc/{pid}/task/{t}/stat").read()
        except OSError:
            continue
        name = "main" if t == str(pid) else s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        out[name] = out.get(name, 0.0) + (int(f[11]) + int(f[12])) / tick
    return out


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))] if v else None


def traced_summary(trace, mode):
    f = footer(trace)
    if f is None:
        raise SystemExit(f"{mode}: the trace {trace} has no footer")
    c = f.get("collector") or {}
    r = {"calls": f.get("calls"), "lost": (f.get("lost") or {}).get("total"), "duration_s": f.get("duration_s"),
         "collector_cpu_s": (c.get("cpu_user_s") or 0) + (c.get("cpu_system_s") or 0)}
    if f.get("bpf_stats"):
        r["bpf_stats"] = f["bpf_stats"]
    if "--counts" in mode or mode.endswith("counts"):
        # Counted calls are in the count lines, not in the footer's calls.
        with open(trace, "rb") as fh:
            r["counted_calls"] = sum(json.loads(l)["calls"] for l in fh if b'"type":"count"' in l)
    return r


class Attached:
    """The workload process and tracer attached to it block by block."""

    def __init__(self, args):
        self.args = args
        cmd = [sys.executable, os.path.join(HERE, "blocks.py")]
        if args.pin is not None:
            cmd = ["taskset", "-c", str(args.pin), *cmd]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        ready = self.read("READY")
        self.pid = ready["pid"]
        self.setup_s = ready["setup_s"]

    def read(self, want):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit(f"blocks.py ended (waiting for {want}); exit code {self.p.wait()}")
            tag, _, rest = line.strip().partition(" ")
            if tag == want:
                return json.loads(rest)
            if tag == "ITER":
                self.iters.append(json.loads(rest))

    def block(self, name, opts, rep):
        a = self.args
        self.iters = []
        trace = f"/tmp/bench_overhead_{os.getpid()}_{name}.jsonl"
        tracer = None
        rec = {"mode": name, "rep": rep}
        if opts is not None:
            cmd = [a.tracer, "-q", "--force", "-o", trace, *opts, "-p", str(self.pid)]
            if a.pin is not None:
                cmd = ["taskset", "-c", others(a.pin), *cmd]
            if os.path.exists(trace):
                os.remove(trace)
            t0 = time.time()
            tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            # Attached once the header is on disk (written after the probes).
            while not (os.path.exists(trace) and os.path.getsize(trace) > 0 and
                       open(trace, "rb").read(1 << 20).find(b"\n") >= 0):
                if tracer.poll() is not None:
                    raise SystemExit(f"{name}: {' '.join(cmd)} failed ({tracer.returncode}):\n{tracer.stderr.read()[-3000:]}")
                if time.time() - t0 > 60:
                    raise SystemExit(f"{name}: tracer did not attach within 60 s")
                time.sleep(0.05)
            rec["attach_s"] = round(time.time() - t0, 3)
            cpu0 = thread_cpu(tracer.pid)
        b = {"name": name, "profiler": name == "torch_profiler", "warmup": 1, "gen": a.gen, "loop": a.loop}
        self.p.stdin.write("BLOCK " + json.dumps(b) + "\n")
        self.p.stdin.flush()
        done = self.read("DONE")
        rec["iterations"] = self.iters
        rec["workload_cpu_s"] = done["cpu_s"]
        rec["workload_nivcsw"] = done["nivcsw"]
        rec["workload_nvcsw"] = done["nvcsw"]
        rec["workload_minflt"] = done["minflt"]
        if tracer is not None:
            cpu1 = thread_cpu(tracer.pid)
            rec["tracer_thread_cpu_s"] = {k: round(v - cpu0.get(k, 0.0), 3) for k, v in cpu1.items()}
            tracer.send_signal(signal.SIGINT)
            try:
                _, err = tracer.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                tracer.kill()
                raise SystemExit(f"{name}: tracer did not stop within 120 s of SIGINT")
            if tracer.returncode not in (0, 130):
                raise SystemExit(f"{name}: tracer exited {tracer.returncode}:\n{err[-3000:]}")
            rec.update(traced_summary(trace, name))
            os.remove(trace)
        return rec

    def close(self):
        try:
            self.p.stdin.write("QUIT\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        self.p.wait(timeout=60)


def others(pin):
    return ",".join(str(c) for c in sorted(os.sched_getaffinity(0)) if c != pin)


def run_process(args, workload, mode, opts):
    cmd = [sys.executable, *EXAMPLES[workload]]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "examples"), PYTHONUNBUFFERED="1")
    if args.pin is not None:
        cmd = ["taskset", "-c", str(args.pin), *cmd]
    trace = f"/tmp/bench_overhead_{os.getpid()}_proc.jsonl"
    if opts is not None:
        cmd = [args.tracer, "-q", "--force", "-o", trace, *opts, "--", *cmd]
        if args.pin is not None:
            cmd = ["taskset", "-c", others(args.pin), *cmd]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{workload} {mode}: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    its = []
    for line in p.stdout.splitlines():
        if line.startswith("[iteration "):
            its.append(float(line.split("]")[1].split("s,")[0]))
    rec = {"workload": workload, "mode": mode, "wall_s": round(time.time() - t0, 2), "iterations": its}
    if opts is not None:
        rec.update(traced_summary(trace, mode))
        os.remove(trace)
    return rec


def med(v):
    return st.median(v) if v else None


def summarize_blocks(runs, modes):
    rows = []
    for w in ("gen", "loop"):
        its = {}
        rep_med = {}
        for r in runs:
            s = [i["seconds"] for i in r["iterations"] if i["workload"] == w]
            if s:
                its.setdefault(r["mode"], []).extend(s)
                rep_med.setdefault(r["mode"], {})[r["rep"]] = st.median(s)
        if "untraced" not in its:
            continue
        base = rep_med["untraced"]
        ratios = {}
        for m in modes:
            if m not in its:
                continue
            paired = [v / base[rep] for rep, v in rep_med[m].items() if rep in base]
            ratios[m] = med(paired)
            rs = [r for r in runs if r["mode"] == m]
            row = {"workload": w, "mode": m, "blocks": len(rep_med[m]), "n_iterations": len(its[m]),
                   "median_s": med(its[m]), "p10_s": pct(its[m], 0.1), "p90_s": pct(its[m], 0.9),
                   "paired_ratio_median": med(paired), "paired_ratio_min": min(paired) if paired else None,
                   "paired_ratio_max": max(paired) if paired else None,
                   "p10_ratio": pct(its[m], 0.1) / pct(its["untraced"], 0.1),
                   "workload_cpu_s_per_block": med([r["workload_cpu_s"] for r in rs]),
                   "workload_nivcsw_per_block": med([r["workload_nivcsw"] for r in rs])}
            tr = [r for r in rs if "calls" in r]
            if tr:
                th = {}
                for r in tr:
                    for k, v in r.get("tracer_thread_cpu_s", {}).items():
                        th.setdefault(k, []).append(v)
                row.update(calls_per_block=med([r["calls"] + r.get("counted_calls", 0) for r in tr]),
                           lost=sum(r["lost"] or 0 for r in tr),
                           collector_cpu_s=med([r["collector_cpu_s"] for r in tr]),
                           tracer_thread_cpu_s={k: med(v) for k, v in th.items()})
            rows.append(row)
        floor = ratios.get("floor_empty_uprobe")
        for row in rows:
            if row["workload"] == w and floor and floor > 1 and row["paired_ratio_median"] and \
                    not row["mode"].startswith("untraced"):
                row["cost_vs_floor"] = (row["paired_ratio_median"] - 1) / (floor - 1)
    return rows


def summarize_processes(procs):
    rows = []
    for w in EXAMPLES:
        by = {}
        for r in procs:
            if r["workload"] == w and r["iterations"]:
                by.setdefault(r["mode"], []).append(r)
        if "untraced" not in by:
            continue
        base_it = [s for r in by["untraced"] for s in r["iterations"]]
        for m, rs in by.items():
            it = [s for r in rs for s in r["iterations"]]
            row = {"workload": w, "mode": m, "processes": len(rs), "n_iterations": len(it), "median_s": med(it),
                   "p10_s": pct(it, 0.1), "ratio": med(it) / med(base_it), "p10_ratio": pct(it, 0.1) / pct(base_it, 0.1),
                   "process_medians_s": [med(r["iterations"]) for r in rs]}
            tr = [r for r in rs if "calls" in r]
            if tr:
                row.update(calls=med([r["calls"] for r in tr]), lost=sum(r["lost"] or 0 for r in tr),
                           collector_cpu_s=med([r["collector_cpu_s"] for r in tr]))
            rows.append(row)
    return rows


def bpf_table(runs):
    per = {}
    for r in runs:
        for prog, s in (r.get("bpf_stats") or {}).items():
            per.setdefault(prog, []).append(s)
    out = {}
    for prog, ss in per.items():
        out[prog] = {"ns_per_run": med([s.get("ns_per_run") for s in ss if s.get("ns_per_run") is not None]),
                     "runs_per_block": med([s.get("run_cnt") or s.get("runs") or 0 for s in ss])}
    return out


def f(v, fmt):
    return fmt.format(v) if v is not None else "–"


def markdown(res):
    h = res["host"]
    s = [f"Overhead benchmark (issue 19 method), {res['date']}, {h['gpu']} (driver {h['driver']}), "
         f"{h['cpus']} CPUs ({h['cpu']}), Linux {h['kernel']}, tracer {res['tracer_version']};",
         f"`{res['command']}`; workload {'pinned to CPU ' + str(res['pinned_cpu']) if res['pinned_cpu'] is not None else 'not pinned'}.",
         "", f"### Attached blocks: one workload process ({res['setup_s']} s to set up), {res['reps']} repetitions, "
         f"per block 1 warm-up + {res['gen_iterations']} GPT-2 generations (20 tokens, batch 1) and 1 + "
         f"{res['loop_iterations']} launch-loop iterations (20,000 launches)", "",
         "| workload | configuration | median iteration | paired ratio, median (min–max) | p10 ratio | cost vs floor | "
         "calls/block (recorded + counted) | lost | tracer CPU s/block (main, nvml) | workload CPU s, invol. switches /block |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["blocks_table"]:
        th = r.get("tracer_thread_cpu_s") or {}
        main = th.get("main")
        nv = th.get("tracer-nvml")
        s.append(f"| {r['workload']} | {r['mode']} | {r['median_s'] * 1e3:.1f} ms | "
                 f"{f(r['paired_ratio_median'], '{:.3f}×')} ({f(r['paired_ratio_min'], '{:.3f}')}–{f(r['paired_ratio_max'], '{:.3f}')}) | "
                 f"{f(r['p10_ratio'], '{:.3f}×')} | {f(r.get('cost_vs_floor'), '{:.2f}×')} | "
                 f"{f(r.get('calls_per_block'), '{:.0f}')} | {f(r.get('lost'), '{}')} | "
                 f"{f(main, '{:.2f}')}, {f(nv, '{:.2f}')} | {f(r['workload_cpu_s_per_block'], '{:.2f}')}, "
                 f"{f(r['workload_nivcsw_per_block'], '{:.0f}')} |")
    if res.get("bpf_stats"):
        s += ["", "Per-program cost (`--bpf-stats` block; kernel.bpf_stats_enabled run_time_ns / run_cnt, "
              "includes ~20-50 ns of the measurement itself):", "", "| program | ns per run | runs per block |", "|---|---|---|"]
        for prog, v in sorted(res["bpf_stats"].items()):
            s.append(f"| {prog} | {f(v['ns_per_run'], '{:.0f}')} | {f(v['runs_per_block'], '{:.0f}')} |")
    s += ["", "### Whole processes, as users run them (the examples' own iteration times)", "",
          "| workload | mode | processes | median iteration | ratio | p10 ratio | per-process medians | calls | lost | collector CPU s |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["process_table"]:
        s.append(f"| {r['workload']} | {r['mode']} | {r['processes']} | {r['median_s'] * 1e3:.1f} ms | {r['ratio']:.3f}× | "
                 f"{r['p10_ratio']:.3f}× | {', '.join(f'{x * 1e3:.0f}' for x in r['process_medians_s'])} ms | "
                 f"{f(r.get('calls'), '{:.0f}')} | {f(r.get('lost'), '{}')} | {f(r.get('collector_cpu_s'), '{:.2f}')} |")
    if res.get("skipped"):
        s += ["", "Skipped (time budget): " + ", ".join(res["skipped"])]
    return "\n".join(s) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracer", required=True)
    ap.add_argument("--reps", type=int, default=5, help="repetitions of every attached block (at least 5)")
    ap.add_argument("--gen", type=int, default=5, help="timed GPT-2 generations per block")
    ap.add_argument("--loop", type=int, default=5, help="timed launch-loop iterations per block")
    ap.add_argument("--blocks", default=",".join(m for m, _ in BLOCKS),
                    help="comma-separated subset of: " + ", ".join(m for m, _ in BLOCKS))
    ap.add_argument("--budget-s", type=float, default=420,
                    help="whole-process rounds run while they fit in this many seconds from the start (default 420)")
    ap.add_argument("--no-processes", action="store_true", help="attached blocks only")
    ap.add_argument("--pin", type=int, default=None, help="CPU for the workload (tracer on the others); default: not pinned")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "docs", "bench"))
    args = ap.parse_args()
    start = time.time()
    if os.geteuid() != 0:
        raise SystemExit("tracer needs root: run this as root")
    help_text = sh([args.tracer, "record", "--help"])
    wanted = args.blocks.split(",")
    modes = []
    for m, opts in BLOCKS:
        if m not in wanted:
            continue
        if opts and opts[0] not in help_text and opts[0] != "--bench-probe":
            print(f"skipping {m}: this tracer has no {opts[0]}", flush=True)
            continue
        modes.append((m, opts))
    gpu = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).split("\n")[0]
    name, _, driver = gpu.partition(", ")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"overhead_{day}_{name.replace(' ', '_') or 'gpu'}")
    res = {"benchmark": "overhead (issue 19)", "date": day, "command": " ".join(sys.argv),
           "host": {"gpu": name, "driver": driver, "kernel": os.uname().release, "cpu": cpu,
                    "cpus": len(os.sched_getaffinity(0)),
                    "governor": sh(["cat", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"]) or None},
           "tracer_version": sh([args.tracer, "--version"]), "pinned_cpu": args.pin, "reps": 0,
           "gen_iterations": args.gen, "loop_iterations": args.loop, "blocks_table": [], "process_table": [],
           "bpf_stats": {}, "blocks": [], "processes": [], "skipped": []}

    def save():
        res["elapsed_s"] = round(time.time() - start, 1)
        with open(stem + ".json", "w") as fh:
            json.dump(res, fh, indent=1)
        with open(stem + ".md", "w") as fh:
            fh.write(markdown(res))

    a = Attached(args)
    res["setup_s"] = a.setup_s
    print(f"workload process {a.pid} ready after {a.setup_s} s", flush=True)
    try:
        for rep in range(args.reps):
            k = rep % len(modes)
            for m, opts in modes[k:] + modes[:k]:
                r = a.block(m, opts, rep)
                res["blocks"].append(r)
                meds = {w: med([i["seconds"] for i in r["iterations"] if i["workload"] == w]) for w in ("gen", "loop")}
                print(f"rep {rep + 1}/{args.reps} {m}: " + ", ".join(f"{w} {v * 1e3:.1f} ms" for w, v in meds.items() if v)
                      + (f", {r['calls']} calls, {r['lost']} lost" if "calls" in r else ""), flush=True)
            res["reps"] = rep + 1
            res["blocks_table"] = summarize_blocks(res["blocks"], [m for m, _ in modes])
            res["bpf_stats"] = bpf_table(res["blocks"])
            save()
    finally:
        a.close()
    if not args.no_processes:
        # Rounds of whole processes while the budget allows: a round of a
        # workload starts only if the last one of it would still fit.
        rnd, last = 0, {}
        while True:
            ran = False
            for w in EXAMPLES:
                if time.time() - start + last.get(w, 0) > args.budget_s:
                    res["skipped"].append(f"round {rnd + 1} {w}")
                    continue
                t0 = time.time()
                for m, opts in PROCESS_MODES:
                    if opts and opts[0] not in help_text:
                        continue
                    r = run_process(args, w, m, opts)
                    r["round"] = rnd
                    res["processes"].append(r)
                    print(f"process round {rnd + 1} {w} {m}: median {med(r['iterations']) * 1e3:.1f} ms, wall {r['wall_s']} s",
                          flush=True)
                    res["process_table"] = summarize_processes(res["processes"])
                    save()
                last[w] = time.time() - t0
                ran = True
            rnd += 1
            if not ran:
                break
    save()
    print()
    print(markdown(res))
    print(f"written: {stem}.json and .md ({res['elapsed_s']} s)")


if __name__ == "__main__":
    main()
