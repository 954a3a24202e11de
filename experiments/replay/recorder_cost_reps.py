#!/usr/bin/env python3
"""One process of the recorder-cost diagnosis (experiments/replay/gpu_recorder_cost.sh).

Builds a workload of experiments/colocation/colocation_workloads.py, runs its
warm-up, then its measured step REPS times in the same process, and prints
{"kind": K, "seconds": [s1, s2, ...], "cpus": [c1, c2, ...], "setup_s": S} (the CPU
the main thread was on at the end of each rep; S: from before the imports to the
workload built). The first rep is marked as phase
`generate` (what `replay --together` measures), the others as `more`: the
reps show how much a process varies from run to run, apart from how much
processes vary between each other.

    python3 recorder_cost_reps.py mlp --reps 5 [--gauge] [workload options]

--gauge: before and after each rep, placement_probe.py's pure-Python loop (µs per
1000 steps, the median of 3 of 20,000 steps), the same in traced and untraced
processes (it makes no driver call): "gauge_us": [[before, after], ...].
"""
import time

STARTED = time.perf_counter()  # before the imports: setup_s includes them

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "colocation"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import colocation_workloads as cw  # noqa: E402
from tracer_markers import mark  # noqa: E402


def main():
    argv = sys.argv[1:]
    reps = pop_int(argv, "--reps", 5)
    gauge = "--gauge" in argv
    if gauge:
        argv.remove("--gauge")
        from placement_probe import py_loop
    a = cw.parse(argv)
    mark("phase", "setup")
    step = cw.build(a)
    setup_s = time.perf_counter() - STARTED
    mark("phase", "warmup")
    step()
    out, cpus, gauges = [], [], []

    def g():
        return sorted(py_loop() for _ in range(3))[1]

    for r in range(reps):
        before = g() if gauge else None
        mark("phase", "generate" if r == 0 else "more")
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
        mark("phase", "gauge")
        cpus.append(current_cpu())
        if gauge:
            gauges.append([before, g()])
    mark("phase", "end")
    res = {"kind": a.kind, "seconds": out, "cpus": cpus, "setup_s": setup_s}
    if gauge:
        res["gauge_us"] = gauges
    print(json.dumps(res), flush=True)


def pop_int(argv, name, default):
    """The value of option NAME (an int), taken out of argv, or default."""
    if name not in argv:
        return default
    i = argv.index(name)
    v = int(argv[i + 1])
    del argv[i : i + 2]
    return v


def current_cpu():
    """The CPU this thread last ran on (/proc/thread-self/stat field 39), or -1."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


if __name__ == "__main__":
    main()
