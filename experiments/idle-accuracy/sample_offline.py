#!/usr/bin/env python3
"""Turn a fully measured recording (`tracer --gpu-timestamps`) into the one
`--gpu-sample WINDOW_MS/PERIOD_MS` would have made of the same run: per
process, windows of WINDOW ms every PERIOD ms from the process's first
driver call; the `gpu` lines of the launches, copies and sets made outside
them are dropped, and one `gpu_window` line per window is added.

Measured work is tied to its call the way tracer does it
(analysis::timeline::link_measured_to_launches): per process, in submission
order, kernels by name, copies by direction, sets in order.

    python3 experiments/idle-accuracy/sample_offline.py FULL.jsonl[.gz] OUT.jsonl 20/200

Then `tracer gaps OUT.jsonl --json` (sampled timeline) against
`tracer gaps FULL.jsonl --json` (measured) gives the accuracy of the
calibration alone, on the same run (docs/idle-accuracy.md).
"""
import collections
import gzip
import json
import sys

COPY_DIRS = {"memcpy_htod": "h2d", "memcpy_dtoh": "d2h", "memcpy_dtod": "d2d", "memcpy_htoh": "h2h"}


def lines(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def key_of_call(v):
    ty, op = v.get("type"), v.get("op")
    if v.get("ret", 0) not in (0, None):
        return None
    if ty == "kernel" and op == "launch":
        return ("k", v["pid"], v.get("kernel"))
    if ty == "memcpy":
        return ("c", v["pid"], v.get("direction"))
    if ty == "memset":
        return ("s", v["pid"])
    return None


def key_of_gpu(v):
    if v["op"] == "kernel":
        return ("k", v["pid"], v.get("name"))
    if v["op"] == "memcpy":
        return ("c", v["pid"], v.get("direction"))
    return ("s", v["pid"])


def main():
    src, dst, spec = sys.argv[1], sys.argv[2], sys.argv[3]
    w_ms, p_ms = (int(x) for x in spec.split("/"))
    all_lines = list(lines(src))
    first = {}
    calls = collections.defaultdict(list)
    for v in all_lines:
        if "ts" in v and "pid" in v and v.get("type") not in ("gpu", "power", "marker", "process", "header", "footer"):
            first[v["pid"]] = min(first.get(v["pid"], v["ts"]), v["ts"])
        k = key_of_call(v)
        if k is not None:
            calls[k].append(v["ts"])
    for q in calls.values():
        q.sort()
    gpu = sorted((v for v in all_lines if v.get("type") == "gpu"), key=lambda v: (v["ts"], v["end_ts"]))
    end = max(v.get("end_ts", v.get("ts", 0)) for v in all_lines if "ts" in v)

    def inside(pid, ts):
        if pid not in first or ts < first[pid]:
            return False
        return (ts - first[pid]) % (p_ms * 1_000_000) < w_ms * 1_000_000

    taken = collections.Counter()
    kept = dropped = unlinked = 0
    keep_ids = set()
    for v in gpu:
        k = key_of_gpu(v)
        q = calls.get(k, [])
        i = taken[k]
        if i >= len(q):
            unlinked += 1
            continue
        taken[k] += 1
        if inside(v["pid"], q[i]):
            keep_ids.add(id(v))
            kept += 1
        else:
            dropped += 1
    windows = []
    for pid, t0 in first.items():
        t = t0
        while t < end:
            windows.append({"ts": t, "end_ts": t + w_ms * 1_000_000, "pid": pid, "tid": 0, "type": "gpu_window",
                            "op": "measured", "name": "cupti"})
            t += p_ms * 1_000_000
    with open(dst, "w") as f:
        for v in all_lines:
            if v.get("type") == "gpu" and id(v) not in keep_ids:
                continue
            f.write(json.dumps(v) + "\n")
        for w in windows:
            f.write(json.dumps(w) + "\n")
    print(f"{src} -> {dst} ({spec}): {len(windows)} windows, {kept} gpu lines kept, {dropped} dropped, "
          f"{unlinked} not linked to a call (dropped)")


if __name__ == "__main__":
    main()
