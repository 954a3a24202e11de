#!/usr/bin/env python3
"""Overhead of `tracer agent` (metrics only, with sampled probes
`--duty-cycle`, with duty-cycled recording) on the GPU machine, side by
side with untraced and with `tracer record`, in one run (modes
interleaved, rotated each repetition). `untraced_b` is a second untraced
mode: its ratio to `untraced` is the machine's own spread.

- gen:    GPT-2 generation (bench/workloads.py --workloads gen)
- launch: the launch-bound loop (examples/launch_loop.py)

Per workload and mode: median iteration time, ratio to untraced (median of
the paired per-repetition ratios of medians, their min and max, and the
ratio of means: a sampled agent slows only the iterations inside its
windows, which the median hides and the mean does not), and for the agent modes what the agent
saw (launches of the workload's process from /metrics, lost records, the
agent's own CPU seconds and resident memory). Writes
docs/bench/agent_overhead_<date>_<gpu>.{json,md} and prints the Markdown.

    sudo python3 bench/agent_overhead.py --tracer .device-bin/tracer --reps 3
    sudo python3 bench/agent_overhead.py --tracer .device-bin/tracer --workloads gen \
        --modes untraced,untraced_b,agent,agent_sampled --reps 12 --iterations 100 --duty-cycle 1s/10s
"""
import argparse
import datetime
import json
import os
import random
import re
import signal
import socket
import statistics as st
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MODES = ["untraced", "untraced_b", "agent", "agent_sampled", "agent_duty", "record"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def workload_cmd(args, w):
    if w == "gen":
        return [sys.executable, os.path.join(HERE, "workloads.py"), "--workloads", "gen",
                "--iterations", str(args.iterations)]
    return [sys.executable, os.path.join(ROOT, "examples", "launch_loop.py"),
            "--iterations", str(args.iterations), "--launches", str(args.launches)]


def iterations(w, out):
    if w == "gen":
        return [json.loads(l[6:])["seconds"] for l in out.splitlines() if l.startswith("BENCH ")]
    return [float(m.group(1)) for m in re.finditer(r"\[iteration \d+\] ([0-9.]+)s", out)]


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def sample(text, name, pid=None):
    tot = 0.0
    for l in text.splitlines():
        if l.startswith(name + "{") or l.startswith(name + " "):
            if pid is None or f'pid="{pid}"' in l:
                tot += float(l.rsplit(" ", 1)[1])
    return tot


def start_agent(args, extra):
    port = free_port()
    cmd = [args.tracer, "agent", "--listen", f"127.0.0.1:{port}", "--all-libcuda", "--scan-interval-ms", "200", *extra]
    if args.libcuda:
        cmd += ["--libcuda", args.libcuda]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while True:
        try:
            metrics(port)
            return p, port
        except Exception:
            if p.poll() is not None or time.time() - t0 > 60:
                raise SystemExit(f"agent did not start: {' '.join(cmd)}\n{p.stderr.read()[-3000:]}")
            time.sleep(0.2)


def duty_period_s(spec):
    """The PERIOD of ON/PERIOD, in seconds (1s/10s, 500ms/5s, 1m)."""
    v = spec.split("/")[1]
    m = re.fullmatch(r"([0-9.]+)(ms|s|m|h)?", v)
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def run_one(args, w, mode):
    cmd = workload_cmd(args, w)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "examples") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if args.pin is not None:
        cmd = ["taskset", "-c", str(args.pin), *cmd]
    agent = None
    rec = {"workload": w, "mode": mode}
    tmp = tempfile.mkdtemp(prefix="agent_overhead_")
    if mode in ("agent", "agent_duty", "agent_sampled"):
        extra = {"agent": [], "agent_duty": ["--record-dir", tmp, "--record-every", "10s", "--record-for", "2s"],
                 "agent_sampled": ["--duty-cycle", args.duty_cycle]}[mode]
        agent, port = start_agent(args, extra)
        if mode == "agent_sampled":
            # The workload starts at a random phase of the sampling period:
            # over the repetitions its iterations meet the windows in their
            # true share (the first window opens as the agent starts).
            time.sleep(random.uniform(0, duty_period_s(args.duty_cycle)))
    elif mode == "record":
        cmd = [args.tracer, "-q", "--force", "-o", os.path.join(tmp, "t.jsonl"), "--", *cmd]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate(timeout=args.timeout)
    if p.returncode != 0:
        raise SystemExit(f"{w}/{mode}: {' '.join(cmd)} failed ({p.returncode}):\n{err[-3000:]}")
    rec["seconds"] = iterations(w, out)
    if agent is not None:
        time.sleep(1.5)  # the exit line and the last housekeeping round
        text = metrics(port)
        rec.update(launches=sample(text, "tracer_kernel_launches_total", p.pid),
                   lost=sample(text, "tracer_lost_records_total"),
                   agent_cpu_s=sample(text, "tracer_agent_cpu_seconds_total"),
                   agent_rss_mib=sample(text, "tracer_agent_resident_bytes") / 2**20,
                   recordings=sample(text, "tracer_recordings_total"),
                   sampling_windows=sample(text, "tracer_sampling_windows_total"))
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=60)
    subprocess.run(["rm", "-rf", tmp])
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracer", help="the tracer binary (not needed with --merge)")
    ap.add_argument("--libcuda", default=None, help="the libcuda the workloads load (default: the agent resolves it)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--workloads", default="gen,launch")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--duty-cycle", default="1s/10s", help="agent_sampled's --duty-cycle ON/PERIOD")
    ap.add_argument("--pin", type=int, default=None, help="CPU to pin the workload to (default: not pinned, as users run it)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "bench"))
    ap.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                    help="no runs: the table of the runs in these files (several device calls of the same modes)")
    args = ap.parse_args()
    if not args.tracer and not args.merge:
        ap.error("--tracer TRACER is required (unless --merge)")
    modes = args.modes.split(",")
    runs = []
    gpu = None
    if args.merge:
        for i, path in enumerate(args.merge):
            with open(path) as fh:
                d = json.load(fh)
            gpu = gpu or d.get("gpu")
            for r in d["runs"]:
                r["rep"] = f"{i}.{r['rep']}"
                runs.append(r)
        modes = [m for m in modes if any(r["mode"] == m for r in runs)]
        args.workloads = ",".join(dict.fromkeys(r["workload"] for r in runs))
        args.reps = len({r["rep"] for r in runs})
        args.iterations = len(runs[0]["seconds"]) if runs else 0
    for rep in range(0 if args.merge else args.reps):
        for w in args.workloads.split(","):
            k = rep % len(modes)
            for m in modes[k:] + modes[:k]:
                r = run_one(args, w, m)
                r["rep"] = rep
                runs.append(r)
                print(f"rep {rep} {w} {m}: median {st.median(r['seconds']) * 1e3:.2f} ms", flush=True)
    table = []
    for w in args.workloads.split(","):
        base = {r["rep"]: st.median(r["seconds"]) for r in runs if r["workload"] == w and r["mode"] == "untraced"}
        for m in modes:
            rs = [r for r in runs if r["workload"] == w and r["mode"] == m]
            allv = [s for r in rs for s in r["seconds"]]
            paired = [st.median(r["seconds"]) / base[r["rep"]] for r in rs if r["rep"] in base]
            base_mean = [st.mean(r["seconds"]) for r in runs if r["workload"] == w and r["mode"] == "untraced"]
            row = {"workload": w, "mode": m, "median_s": st.median(allv), "mean_s": st.mean(allv),
                   "paired_ratio": st.median(paired) if paired else None,
                   "paired_min": min(paired) if paired else None, "paired_max": max(paired) if paired else None,
                   "mean_ratio": st.mean(allv) / st.mean(base_mean) if base_mean else None}
            for k in ("launches", "lost", "agent_cpu_s", "agent_rss_mib", "recordings", "sampling_windows"):
                if rs and k in rs[0]:
                    row[k] = st.median([r[k] for r in rs])
            table.append(row)
    if gpu is None:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().split("\n")[0]
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    md = [f"tracer agent overhead, {day}, {gpu}; {args.reps} repetitions x {args.iterations} iterations, modes interleaved.",
          "", "| workload | mode | median iteration | paired ratio (min–max) | ratio of means | launches seen | lost | agent CPU s | agent RSS MiB |",
          "|---|---|---|---|---|---|---|---|---|"]
    f = lambda v, fmt: fmt.format(v) if v is not None else "–"
    for r in table:
        md.append(f"| {r['workload']} | {r['mode']} | {r['median_s'] * 1e3:.2f} ms | {f(r['paired_ratio'], '{:.3f}x')} "
                  f"({f(r['paired_min'], '{:.3f}')}–{f(r['paired_max'], '{:.3f}')}) | {f(r['mean_ratio'], '{:.3f}x')} | "
                  f"{f(r.get('launches'), '{:.0f}')} | {f(r.get('lost'), '{:.0f}')} | {f(r.get('agent_cpu_s'), '{:.2f}')} | "
                  f"{f(r.get('agent_rss_mib'), '{:.1f}')} |")
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"agent_overhead_{day}_{(gpu.split(', ')[0] or 'gpu').replace(' ', '_')}")
    with open(stem + ".json", "w") as fh:
        json.dump({"gpu": gpu, "args": vars(args), "runs": runs, "table": table}, fh, indent=1)
    with open(stem + ".md", "w") as fh:
        fh.write("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"\nwritten: {stem}.json, {stem}.md")


if __name__ == "__main__":
    main()
