#!/usr/bin/env python3
"""What one probed driver call costs a Python program, inside one process (issue 44).

Compensated pacing takes out of each host gap the trap per probe hit (measured warm at
the recording's start, collect/trap_cost.rs) and the eBPF programs' runs (bpf_stats).
Recordings of Python loops still ran 1.5-2.6 µs per probed call longer than that
(docs/replay.md). This measures the per-call cost where a Python program pays it:

per block, N iterations of (Python work; one ctypes call), the call either a probed
driver function or an unprobed one called the same way (libc's `abs`), the blocks
alternated REPS times. The probed functions (`--fn`, a comma list; each one a block
pair of its own): `cuGetErrorString` (cheap, needs no cuInit; tracer counts it,
cu_count, and writes no record), `cuCtxSetCurrent` (returns NOT_INITIALIZED before
cuInit; tracer records it: an entry program that writes a ring record the collector
then reads). The difference probed - unprobed, per call, is the probe's cost plus the
two functions' own difference; the untraced process gives the latter, so

    cost per probed call = (probed - unprobed) traced - (probed - unprobed) untraced

for three kinds of work between the calls: none, `py` (attribute and dict work, as
placement_probe.py's loop, ~1 µs) and `cold` (random reads over a 64 MiB list: the
caches and TLB another program's work leaves behind). A function the library lacks
is left out. Prints one JSON line:

    {"fns": {"cuGetErrorString": {"none": {"probed_ns": .., "unprobed_ns": .., "delta_ns": ..}, ...}}, ...}

    python3 python_call_cost.py [--reps 15] [--n 2000] [--fn cuGetErrorString,cuCtxSetCurrent]
"""
import argparse
import ctypes
import json
import random
import statistics
import time

from py_work import Obj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--libcuda", default="libcuda.so.1")
    ap.add_argument("--fn", default="cuGetErrorString,cuCtxSetCurrent", help="the probed functions, each called (0, &out)")
    a = ap.parse_args()
    cuda = ctypes.CDLL(a.libcuda)
    libc = ctypes.CDLL("libc.so.6")
    v = ctypes.c_void_p()
    ref = ctypes.byref(v)
    plain = libc.abs
    plain.argtypes = [ctypes.c_int, ctypes.c_void_p]
    fns = {}
    for name in a.fn.split(","):
        try:
            fns[name] = getattr(cuda, name)
        except AttributeError:
            continue
        fns[name].argtypes = [ctypes.c_int, ctypes.c_void_p]
    o = Obj()
    big = list(range(8 << 20))  # 8 Mi pointers: 64 MiB of list, the ints beside it
    idx = [random.randrange(len(big)) for _ in range(4096)]

    def block(fn, work, n):
        s = 0
        if work == "none":
            t = time.perf_counter_ns()
            for i in range(n):
                fn(0, ref)
        elif work == "py":
            t = time.perf_counter_ns()
            for i in range(n):
                s += o.f(i) + o.f(i + 1) + o.f(i + 2)
                fn(0, ref)
        else:
            t = time.perf_counter_ns()
            for i in range(n):
                j = i * 8 & 4095
                s += big[idx[j]] + big[idx[j + 1]] + big[idx[j + 2]] + big[idx[j + 3]]
                s += big[idx[j + 4]] + big[idx[j + 5]] + big[idx[j + 6]] + big[idx[j + 7]]
                fn(0, ref)
        return (time.perf_counter_ns() - t) / n

    def pair(probed, work):
        block(probed, work, a.n)
        block(plain, work, a.n)
        p, u = [], []
        for r in range(a.reps):
            first, second = (probed, plain) if r % 2 == 0 else (plain, probed)
            x = block(first, work, a.n)
            y = block(second, work, a.n)
            (p if first is probed else u).append(x)
            (u if first is probed else p).append(y)
        d = [pp - uu for pp, uu in zip(p, u)]
        return {
            "probed_ns": round(statistics.median(p), 1),
            "unprobed_ns": round(statistics.median(u), 1),
            "delta_ns": round(statistics.median(d), 1),
            "delta_min_ns": round(min(d), 1),
            "delta_max_ns": round(max(d), 1),
        }

    out = {name: {w: pair(fn, w) for w in ("none", "py", "cold")} for name, fn in fns.items()}
    calls = 3 * (a.reps + 1) * a.n
    print(json.dumps({"fns": out, "probed_calls_per_fn": calls}), flush=True)


if __name__ == "__main__":
    main()
