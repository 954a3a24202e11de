#!/usr/bin/env python3
"""A launch-bound loop for the "GPU by default" runs (experiments/gpu-default/gpu_default.sh).

Tiny element-wise kernels (x.add_(1) on one element) back to back, a
synchronization only every --sync-every launches (a few per run: the host
is never held by the GPU, the GPU idles between kernels). Unlike
examples/launch_loop.py (a synchronization every 100 launches, per-iteration
lines) it runs one long timed pass and prints `STEADY_S <seconds>`: the
time of the launches after the warm-up, measured here. Phases are marked
for tracer (setup, warmup, steady, end).

    python3 experiments/gpu-default/launch_bound.py --launches 100000 --sync-every 5000
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from tracer_markers import mark  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=100000, help="timed launches")
    ap.add_argument("--warmup", type=int, default=5000, help="warm-up launches")
    ap.add_argument("--sync-every", type=int, default=5000, help="a synchronization every N launches")
    a = ap.parse_args(argv)
    mark("phase", "setup")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: this workload needs an NVIDIA GPU")
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    every = max(1, a.sync_every)

    def run(n):
        for i in range(n):
            x.add_(1.0)
            if i % every == every - 1:
                torch.cuda.synchronize()
        torch.cuda.synchronize()

    mark("phase", "warmup")
    run(a.warmup)
    mark("phase", "steady")
    t = time.perf_counter()
    run(a.launches)
    dt = time.perf_counter() - t
    mark("phase", "end")
    v = x.item()
    if v != float(a.warmup + a.launches):
        print(f"launch_bound: x is {v}, expected {a.warmup + a.launches}", file=sys.stderr)
    print(f"[launch] {a.launches} launches in {dt:.4f}s, {a.launches / dt:.0f} launches/s", flush=True)
    print(f"STEADY_S {dt:.6f}", flush=True)


if __name__ == "__main__":
    main()
