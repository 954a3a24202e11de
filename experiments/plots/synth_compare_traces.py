#!/usr/bin/env python3
"""Writes two SYNTHETIC traces for measuring `tracer plot --compare` on large
inputs: a "recording" and a "replay timeline" (header source "replay", a
`line` link on every gpu line, kernels 2 % longer), N gpu lines each on three
streams (every 10th a copy), an iteration marker every 1,000 intervals.
Deterministic (fixed seed). Not GPU data: only for time and memory figures.

    python3 experiments/plots/synth_compare_traces.py 1000000 /tmp/rec.jsonl /tmp/rep.jsonl
    /usr/bin/time -v tracer plot /tmp/rec.jsonl --compare /tmp/rep.jsonl -o /tmp/cmp
"""
import json
import random
import sys

NAMES = [
    "nvjet_sm90_gemm",
    "_ZN2at6native29vectorized_elementwise_kernel",
    "_ZN2at6native13reduce_kernel",
    "fmha_fwd",
    "k",
]


def write(path, n, scale, replay):
    rng = random.Random(1)
    with open(path, "w") as f:
        h = {"type": "header", "format": "tracer-jsonl", "format_version": 1}
        if replay:
            h.update(source="replay", replay={"mode": "sequence", "pass": 1, "shift_ns": 0})
        f.write(json.dumps(h) + "\n")
        t = 10**12
        for i in range(n):
            d = int(rng.randint(1000, 20000) * scale)
            op = "kernel" if i % 10 else "memcpy"
            v = {
                "ts": t, "end_ts": t + d, "type": "gpu", "op": op,
                "name": NAMES[i % 5] if op == "kernel" else "memcpy_htod",
                "device": 0, "stream_id": 7 + i % 3, "source": "cupti", "pid": 1, "tid": 0,
            }
            if replay:
                v["line"] = i + 2
            f.write(json.dumps(v) + "\n")
            if i % 1000 == 0:
                f.write(json.dumps({"ts": t - 10, "type": "marker", "op": "iteration", "label": str(i // 1000),
                                    "pid": 1, "tid": 1}) + "\n")
            t += d + rng.randint(0, 5000)
        f.write('{"type":"footer"}\n')


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(f"usage: {sys.argv[0]} N RECORDED.jsonl REPLAYED.jsonl")
    n = int(sys.argv[1])
    write(sys.argv[2], n, 1.0, False)
    write(sys.argv[3], n, 1.02, True)
