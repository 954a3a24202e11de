#!/usr/bin/env python3
"""Which host-speed probe sees the vCPU placement? (issue 44; gpu_placement_probe.sh).

One process: builds the latency-sensitive workload (colocation_workloads.py KIND),
warms it up, then ROUNDS times runs every probe and the workload's step back to back on
the same thread, each with the CPU it ran on, and prints one JSON line per round:

  chase_256m_ns   ns per dependent load, 256 MiB random cycle (memory latency)
  chase_8m_ns     the same over 8 MiB (last-level cache)
  stream_ns       ns per 64-byte line, 64 MiB read sequentially
  spin_ns         ns per step of a dependent integer loop (core clock)
  py_us           µs per 1000 steps of a pure-Python loop (attribute and dict work)
  rtt_us          median µs of a one-element add + synchronize (a GPU round trip)
  launch_us       µs per launch of 2000 one-element adds queued without waiting
  step_ms         the workload's measured step

    python3 placement_probe.py PROBE_SO mlp --rounds 6 [workload options]
"""
import ctypes
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "colocation"))
import colocation_workloads as cw  # noqa: E402
from py_work import Obj  # noqa: E402
from recorder_cost_reps import current_cpu, pop_int  # noqa: E402


def py_loop(n=20000):
    o = Obj()
    t = time.perf_counter()
    s = 0
    for i in range(n):
        s += o.f(i)
    return (time.perf_counter() - t) * 1e6 / (n / 1000)


def main():
    so, argv = sys.argv[1], sys.argv[2:]
    rounds = pop_int(argv, "--rounds", 6)
    lib = ctypes.CDLL(so)
    for f in ("chase", "stream", "spin"):
        getattr(lib, f).restype = ctypes.c_double
    lib.chase.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    lib.stream.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    lib.spin.argtypes = [ctypes.c_uint64]
    import torch

    a = cw.parse(argv)
    step = cw.build(a)
    step()
    x = torch.zeros(1, device="cuda")
    lib.chase(4 << 20, 1000)  # build both cycles before the first round
    lib.chase(128 << 10, 1000)
    for r in range(rounds):
        row = {"round": r, "cpu0": current_cpu()}
        row["chase_256m_ns"] = lib.chase(4 << 20, 300_000)
        row["chase_8m_ns"] = lib.chase(128 << 10, 1_000_000)
        row["stream_ns"] = lib.stream(64 << 20, 2)
        row["spin_ns"] = lib.spin(2_000_000)
        row["py_us"] = py_loop()
        torch.cuda.synchronize()
        rtts = []
        for _ in range(300):
            t = time.perf_counter()
            x.add_(1)
            torch.cuda.synchronize()
            rtts.append((time.perf_counter() - t) * 1e6)
        row["rtt_us"] = statistics.median(rtts)
        t = time.perf_counter()
        for _ in range(2000):
            x.add_(1)
        row["launch_us"] = (time.perf_counter() - t) * 1e6 / 2000
        torch.cuda.synchronize()
        row["cpu1"] = current_cpu()
        t = time.perf_counter()
        step()
        row["step_ms"] = (time.perf_counter() - t) * 1e3
        row["cpu2"] = current_cpu()
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
