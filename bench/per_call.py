#!/usr/bin/env python3
"""Per-call cost of tracing, without Rust: the per-call pass of `cargo xtask
bench collector` (xtask/src/bench/collector.rs: build_env, run_calls,
summarize_calls) as a standalone script, for a machine that only has
Python 3, cc and a carried release `tracer` binary (the GPU machine).

tracer/tests/fakecuda/bench.c calls a probed function of the fake libcuda
(built as build_env does: every function starts with `push %rbp`, like real
libcuda's) N times per thread and times its loop itself. Per repetition
every configuration runs once, in an order rotated every repetition
(interleaved, so drift hits all alike):

    untraced, untraced_again        the bench alone (twice: the noise)
    empty, empty_again              `--bench-probe empty`: an empty entry
                                    program on every probed function, the
                                    mechanism's floor (twice: its noise)
    empty_return                    `--bench-probe empty-return` (only for
                                    functions tracer probes entry+return by
                                    default, e.g. memcpy: their floor)
    filter                          `--bench-probe filter`
    ring                            `--bench-probe ring`
    default                         tracer's default
    counts                          `tracer --counts`

Per configuration: the calling thread's CPU time per call (the bench's
`cpu_ns_per_call`, else `ns_per_call`), the cost added over the same
repetition's untraced run, and the ratio of that to the floor's added cost
of the same repetition (paired; median with min-max). Every traced run of
tracer proper must record every call ((N+1000)*T, none lost), else the
script fails. Writes per_call_<date>_<host>.json and .md to --out.

    sudo python3 bench/per_call.py --tracer target/release/tracer
    sudo python3 bench/per_call.py --tracer .device-bin/tracer --funcs launch,memcpy --out "$OUT"
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import socket
import statistics as st
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "tracer", "tests", "fakecuda")

FUNCS = ("launch", "memcpy")
# Functions of bench.c that tracer's default probes entry-only (no return
# probe); the others get entry+return, whose floor is empty-return.
ENTRY_ONLY_BY_DEFAULT = {"launch"}


def configs(func):
    """(name, tracer options or None for untraced, floor name or None)."""
    entry_only = func in ENTRY_ONLY_BY_DEFAULT
    floor_default = "empty" if entry_only else "empty_return"
    c = [
        ("untraced", None, None),
        ("untraced_again", None, None),
        ("empty", ["--bench-probe", "empty"], "empty"),
        ("empty_again", ["--bench-probe", "empty"], "empty"),
    ]
    if not entry_only:
        c.append(("empty_return", ["--bench-probe", "empty-return"], "empty_return"))
    c += [
        ("filter", ["--bench-probe", "filter"], "empty"),
        ("ring", ["--bench-probe", "ring"], "empty"),
        ("default", [], floor_default),
        ("counts", ["--counts"], floor_default),
    ]
    return c


LABELS = {
    "untraced": "untraced",
    "untraced_again": "untraced, again (noise)",
    "empty": "empty entry program (the floor)",
    "empty_again": "empty entry program, again (floor noise)",
    "empty_return": "empty entry+return programs (floor of default)",
    "filter": "`--bench-probe filter`",
    "ring": "`--bench-probe ring`",
    "default": "tracer default",
    "counts": "`tracer --counts`",
}


def die(msg):
    print(f"per_call.py: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, **kw)
    if p.returncode != 0:
        die(f"{' '.join(shlex.quote(c) for c in cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-4000:]}")
    return p


def build_env(work):
    """The fake libcuda and the bench loop, with build_env's flags."""
    lib = os.path.join(work, "libcuda.so.1")
    bench = os.path.join(work, "bench")
    cc = os.environ.get("CC", "cc")
    # Same flags as the tests' fake: every function starts with push %rbp.
    run([cc, "-O0", "-fno-omit-frame-pointer", "-fcf-protection=none", "-fPIC", "-shared",
         "-Wl,-soname,libcuda.so.1", "-o", lib, os.path.join(SRC, "fakecuda.c")])
    run([cc, "-O2", "-Wall", "-o", bench, os.path.join(SRC, "bench.c"), f"-L{work}", "-l:libcuda.so.1",
         f"-Wl,-rpath,{work}", "-pthread"])
    return lib, bench


def last_json_object(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            return v
    return None


def read_footer(trace):
    """The trace's last line, which must be the footer (read from the end)."""
    with open(trace, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - (1 << 20)))
        tail = f.read().decode("utf-8", "replace")
    for line in reversed(tail.splitlines()):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except ValueError:
            break
        if isinstance(v, dict) and v.get("type") == "footer":
            return v
        break
    die(f"{trace}: the last line is not a footer (tracer killed or trace truncated?)")


def counted_calls(trace):
    """The calls of the `count` lines of a --counts trace."""
    n = 0
    with open(trace, encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"count"' not in line:
                continue
            v = json.loads(line)
            if v.get("type") == "count":
                n += int(v.get("calls") or 0)
    return n


def run_calls(a, env, func, name, opts):
    """One loop run; the bench's figures, plus the footer's when traced."""
    lib, bench, trace = env
    argv = [bench, "calls", func, str(a.calls), str(a.threads)]
    if opts is not None:
        argv = [a.tracer, "-q", "--force", "-o", trace, "--libcuda", lib] + a.tracer_args + opts + ["--"] + argv
    try:
        p = run(argv)
        v = last_json_object(p.stdout)
        if v is None or "ns_per_call" not in v:
            die(f"{func} {name}: no result line from bench:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        if opts is not None:
            f = read_footer(trace)
            want = (a.calls + 1000) * a.threads
            if "--counts" in opts and func in ENTRY_ONLY_BY_DEFAULT:
                recorded = counted_calls(trace)
            else:
                recorded = int(f.get("calls") or 0)
            lost = (f.get("lost") or {}).get("total")
            lost = -1 if lost is None else int(lost)
            # The bench probes record nothing; tracer must record every call.
            if not (opts and opts[0] == "--bench-probe") and (recorded != want or lost != 0):
                die(f"{func} {name}: recorded {recorded} of {want} calls, {lost} lost; footer: {json.dumps(f)}")
            coll = f.get("collector") or {}
            v["recorded"] = recorded
            v["lost"] = lost
            v["collector_cpu_s"] = (coll.get("cpu_user_s") or 0) + (coll.get("cpu_system_s") or 0)
            v["collector_max_rss_kib"] = coll.get("max_rss_kib")
            v["tracer_duration_s"] = f.get("duration_s")
    finally:
        if os.path.exists(trace):
            os.remove(trace)
    return v


def per_call(v):
    x = v.get("cpu_ns_per_call")
    return float(x if x is not None else v["ns_per_call"])


def spread(xs):
    xs = [x for x in xs if x == x]
    if not xs:
        return {"median": None, "min": None, "max": None}
    return {"median": st.median(xs), "min": min(xs), "max": max(xs)}


def summarize(func, samples, a):
    """samples: name -> list (per repetition) of run_calls results."""
    cfgs = configs(func)
    reps = len(samples["untraced"])
    ns = {name: [per_call(v) for v in samples[name]] for name, _, _ in cfgs}
    base = ns["untraced"]
    added = {name: [ns[name][r] - base[r] for r in range(reps)] for name, _, _ in cfgs}

    def ratio(x, y):
        return x / y if y > 0 else float("nan")

    modes = {}
    for name, opts, floor in cfgs:
        m = {
            "tracer_options": opts,
            "ns_per_call": spread(ns[name]),
            "ns_per_call_samples": ns[name],
            "added_ns_per_call": spread(added[name]),
            "added_ns_per_call_samples": added[name],
        }
        if floor:
            r = [ratio(added[name][i], added[floor][i]) for i in range(reps)]
            m["floor"] = floor
            m["vs_floor"] = spread(r)
            m["vs_floor_samples"] = r
            # Against the entry-only floor too (memcpy: default vs empty).
            if floor != "empty":
                m["vs_empty"] = spread([ratio(added[name][i], added["empty"][i]) for i in range(reps)])
        cpu = [v["collector_cpu_s"] for v in samples[name] if "collector_cpu_s" in v]
        if cpu and opts is not None:
            m["collector_cpu_ns_per_call"] = st.median(cpu) * 1e9 / ((a.calls + 1000) * a.threads)
            rss = [v["collector_max_rss_kib"] for v in samples[name] if v.get("collector_max_rss_kib") is not None]
            m["collector_max_rss_kib"] = st.median(rss) if rss else None
            m["recorded"] = [v.get("recorded") for v in samples[name]]
            m["lost"] = [v.get("lost") for v in samples[name]]
        modes[name] = m
    noise = {
        # The machine's own noise, beside every ratio.
        "untraced_again_minus_untraced_ns": spread([ns["untraced_again"][i] - base[i] for i in range(reps)]),
        "untraced_again_vs_untraced": spread([ratio(ns["untraced_again"][i], base[i]) for i in range(reps)]),
        "empty_again_vs_empty": modes["empty_again"]["vs_floor"],
    }
    return {"func": func, "threads": a.threads, "calls_per_thread": a.calls, "repetitions": reps,
            "modes": modes, "noise": noise}


def fmt(x, d=0):
    if x is None or x != x:
        return "–"
    if round(x, d) == 0:
        x = 0.0
    return f"{x:,.{d}f}".replace("-", "−")


def fmt_spread(s, d=0, suffix="", sign=False):
    if s["median"] is None:
        return "–"
    p = "+" if sign and s["median"] >= 0 else ""
    return f"{p}{fmt(s['median'], d)}{suffix} ({fmt(s['min'], d)}–{fmt(s['max'], d)})"


def markdown(r):
    h = r["host"]
    out = [
        f"## Per call: fake libcuda, {h['hostname']} ({r['date']})",
        "",
        f"Host: {h['cpu_model']}, {h['nproc']} CPUs, kernel {h['kernel']}; load average "
        f"{h['loadavg_before']} before, {h['loadavg_after']} after. tracer: {r['tracer']['version']} "
        f"(sha256 {r['tracer']['sha256'][:12]}). {r['calls_per_thread']:,} calls per thread, "
        f"{r['threads']} thread(s), {r['repetitions']} repetitions, configurations interleaved "
        f"(order rotated every repetition); {r['elapsed_s']:.0f} s in all.",
        "",
        f"Command: `{r['command']}`",
        "",
        "Per call: the calling thread's CPU time (`cpu_ns_per_call`); added: minus the same repetition's "
        "untraced run; vs floor: added ÷ the floor's added cost in the same repetition. Medians (min–max).",
    ]
    for p in r["per_call"]:
        m = p["modes"]
        out += ["", f"### {p['func']}, {p['threads']} thread(s)", "",
                "| configuration | ns per call | added per call | vs floor, paired | floor | collector CPU per call (startup included) |",
                "|---|---|---|---|---|---|"]
        for name, mm in m.items():
            vs = fmt_spread(mm["vs_floor"], 2, "×") if "vs_floor" in mm else "–"
            if "vs_empty" in mm:
                vs += f"; vs empty {fmt_spread(mm['vs_empty'], 2, '×')}"
            out.append(
                f"| {LABELS[name]} | {fmt_spread(mm['ns_per_call'], 0)} | "
                f"{fmt_spread(mm['added_ns_per_call'], 0, ' ns', sign=True) if name != 'untraced' else '–'} | "
                f"{vs} | {mm.get('floor') or '–'} | "
                f"{fmt(mm.get('collector_cpu_ns_per_call')) + ' ns' if name in ('default', 'counts') else '–'} |")
        n = p["noise"]
        out += ["",
                f"Noise: untraced vs untraced {fmt_spread(n['untraced_again_vs_untraced'], 2, '×')} "
                f"({fmt_spread(n['untraced_again_minus_untraced_ns'], 1, ' ns', sign=True)}); "
                f"empty vs empty {fmt_spread(n['empty_again_vs_empty'], 2, '×')}. "
                f"Every run of tracer proper recorded all {(p['calls_per_thread'] + 1000) * p['threads']:,} calls, "
                f"none lost."]
    return "\n".join(out) + "\n"


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def host_info():
    model = ""
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    vuln = {}
    vdir = "/sys/devices/system/cpu/vulnerabilities"
    for k in ("spectre_v2", "spec_rstack_overflow", "retbleed"):
        s = read(os.path.join(vdir, k))
        if s:
            vuln[k] = s
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "uname": " ".join(platform.uname()),
        "cpu_model": model or platform.processor(),
        "nproc": os.cpu_count(),
        "mem_total": next((l.split(":", 1)[1].strip() for l in read("/proc/meminfo").splitlines()
                           if l.startswith("MemTotal")), None),
        "vulnerabilities": vuln,
        "python": platform.python_version(),
    }


def loadavg():
    return " ".join(read("/proc/loadavg").split()[:3])


def tracer_info(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    p = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, universal_newlines=True)
    return {"path": os.path.abspath(path), "version": p.stdout.strip(), "sha256": h.hexdigest(),
            "repo_commit": git.stdout.strip() if git.returncode == 0 else None}


def check_bench_probes(tracer):
    """Only --bench-probe values this tracer has (a hidden option)."""
    p = subprocess.run([tracer, "record", "--bench-probe", "no-such-value", "--", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    m = re.search(r"possible values: ([^\]]*)\]", p.stdout)
    have = {v.strip() for v in m.group(1).split(",")} if m else set()
    for v in ("empty", "empty-return", "filter", "ring"):
        if v not in have:
            die(f"{tracer} has no `--bench-probe {v}` (its answer: {p.stdout.strip()[:500]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracer", required=True, help="a release tracer binary")
    ap.add_argument("--calls", type=int, default=200000, help="calls per thread and run (default 200000)")
    ap.add_argument("--reps", type=int, default=8, help="repetitions (default 8)")
    ap.add_argument("--threads", type=int, default=1, help="calling threads (default 1)")
    ap.add_argument("--funcs", default="launch", help="comma-separated: launch, memcpy (default launch)")
    ap.add_argument("--work", help="build and trace directory (default: a temporary one, removed)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.getcwd(),
                    help="where the .json and .md go (default $OUT, else the current directory)")
    ap.add_argument("--tracer-args", default="",
                    help="extra tracer options for every traced run (shell words; default none)")
    a = ap.parse_args()
    a.tracer = os.path.abspath(a.tracer)
    a.tracer_args = shlex.split(a.tracer_args)
    funcs = [f.strip() for f in a.funcs.split(",") if f.strip()]
    for f in funcs:
        if f not in FUNCS:
            die(f"unknown function {f!r} (launch, memcpy)")
    if not funcs or a.calls < 1 or a.reps < 1 or not 1 <= a.threads <= 64:
        die("need --funcs, --calls >= 1, --reps >= 1, 1 <= --threads <= 64")
    if os.geteuid() != 0:
        die("tracer loads eBPF programs and uprobes: run this as root")
    if not os.access(a.tracer, os.X_OK):
        die(f"{a.tracer}: not an executable")
    check_bench_probes(a.tracer)

    t0 = time.time()
    own_work = a.work is None
    work = tempfile.mkdtemp(prefix="per_call.") if own_work else os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    host = host_info()
    load_before = loadavg()
    try:
        lib, bench = build_env(work)
        env = (lib, bench, os.path.join(work, f"calls.{os.getpid()}.jsonl"))
        samples = {f: {name: [] for name, _, _ in configs(f)} for f in funcs}
        for rep in range(a.reps):
            for func in funcs:
                cfgs = configs(func)
                k = rep % len(cfgs)
                for name, opts, _ in cfgs[k:] + cfgs[:k]:
                    samples[func][name].append(run_calls(a, env, func, name, opts))
            print(f"repetition {rep + 1}/{a.reps} done ({time.time() - t0:.0f} s)", flush=True)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.time() - t0
    host["loadavg_before"] = load_before
    host["loadavg_after"] = loadavg()
    now = datetime.datetime.now(datetime.timezone.utc)
    result = {
        "benchmark": "per_call",
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": host,
        "tracer": tracer_info(a.tracer),
        "calls_per_thread": a.calls,
        "threads": a.threads,
        "repetitions": a.reps,
        "funcs": funcs,
        "tracer_args": a.tracer_args,
        "elapsed_s": elapsed,
        "command": " ".join(shlex.quote(x) for x in [sys.executable] + sys.argv),
        "per_call": [summarize(f, samples[f], a) for f in funcs],
        "samples": samples,
    }
    md = markdown(result)
    print()
    print(md)
    os.makedirs(a.out, exist_ok=True)
    stem = f"per_call_{now.strftime('%Y%m%d')}_{host['hostname']}"
    path, i = os.path.join(a.out, stem), 1
    while os.path.exists(path + ".json") or os.path.exists(path + ".md"):
        i += 1
        path = os.path.join(a.out, f"{stem}_{i}")
    with open(path + ".json", "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    with open(path + ".md", "w") as f:
        f.write(md)
    print(f"written: {path}.json and .md")


if __name__ == "__main__":
    main()
