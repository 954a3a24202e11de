#!/usr/bin/env python3
"""Sanity checks of a trace recorded with `tracer --gpu-timestamps`.

    scripts/gpu_timestamps_check.py TRACE.jsonl[.gz]

Pairs each measured kernel (`type: gpu, op: kernel`) with its launch line
(`type: kernel, op: launch`, returned 0): per process and stream handle, the
n-th launch with the n-th kernel by start time. Checks and prints: counts
(kernels vs launches, copies and sets vs their calls), same kernel name in
each pair, every kernel starting after its launch, launch-to-start delay and
kernel duration distributions, GPU busy time. Exit status 1 if a check fails.
"""
import gzip
import json
import statistics as st
import sys
from collections import Counter, defaultdict


def lines(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        for l in f:
            l = l.strip()
            if l:
                yield json.loads(l)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else None


def main():
    path = sys.argv[1]
    header = footer = None
    launches = defaultdict(list)  # (pid, stream) -> [(ts, kernel)]
    kernels = defaultdict(list)  # (pid, stream) -> [(ts, end, name)]
    calls = Counter()
    gpu = Counter()
    for v in lines(path):
        t = v.get("type")
        if t == "header":
            header = v
        elif t == "footer":
            footer = v
        elif t == "kernel" and v.get("op") == "launch" and v.get("ret") == 0:
            launches[(v["pid"], v.get("stream"))].append((v["ts"], v.get("kernel")))
        elif t in ("memcpy", "memset") and v.get("ret") == 0:
            calls[t] += 1
        elif t == "gpu":
            gpu[v["op"]] += 1
            if v["op"] == "kernel":
                kernels[(v["pid"], v.get("stream"))].append((v["ts"], v["end_ts"], v.get("name")))
    ok = True

    def check(cond, msg):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + msg)
        ok &= bool(cond)

    print("header.gpu_timestamps:", json.dumps(header.get("gpu_timestamps")))
    print("footer.gpu_timestamps:", json.dumps(footer.get("gpu_timestamps") if footer else None))
    nl = sum(len(x) for x in launches.values())
    nk = gpu["kernel"]
    check(nl == nk, f"kernels measured {nk} == launches returned 0 {nl}")
    print(f"     copies measured {gpu['memcpy']} (memcpy calls {calls['memcpy']}), sets measured {gpu['memset']} "
          f"(memset calls {calls['memset']})")
    unknown = sum(len(v) for (p, s), v in kernels.items() if s is None)
    check(unknown == 0, f"kernels without a stream handle: {unknown}")
    delays, durs, name_mismatch, before, unpaired = [], [], 0, 0, 0
    for key in set(kernels) | set(launches):
        ks = sorted(kernels.get(key, []))
        ls = sorted(launches.get(key, []))
        unpaired += abs(len(ls) - len(ks))
        for (lts, lname), (kts, kend, kname) in zip(ls, ks):
            if lname is not None and kname is not None and lname != kname:
                name_mismatch += 1
            if kts < lts:
                before += 1
            delays.append((kts - lts) / 1000)
            durs.append((kend - kts) / 1000)
    check(unpaired == 0, f"launches and kernels per (pid, stream) differ by {unpaired}")
    check(name_mismatch == 0, f"pairs (n-th launch, n-th kernel of a stream) with different kernel names: {name_mismatch}")
    check(before == 0, f"kernels starting before their launch: {before}")
    if durs:
        print(f"     kernel duration us: min {min(durs):.2f} p50 {st.median(durs):.2f} p90 {pct(durs, 90):.2f} "
              f"p99 {pct(durs, 99):.2f} max {max(durs):.1f}; busy {sum(durs) / 1e3:.1f} ms")
        print(f"     launch -> start us: min {min(delays):.2f} p50 {st.median(delays):.2f} p90 {pct(delays, 90):.2f} "
              f"p99 {pct(delays, 99):.2f} max {max(delays):.1f}")
        check(min(durs) > 0 and max(durs) < 10e6, "kernel durations within (0, 10 s)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
