#!/usr/bin/env python3
"""A launch-bound loop: tiny element-wise kernels on a 1-element tensor,
a stream synchronization every 100 launches (as a training or decoding loop
that reads a value back). The GPU is idle almost all the time; what tracer
measures is the launch path. Marked like examples/transformer_inference.py
(phases warmup / generate, one iteration marker per timed iteration).

    sudo tracer -- python3 examples/launch_loop.py --iterations 3 --launches 20000
"""
import argparse
import time

from tracer_markers import mark


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--launches", type=int, default=20000)
    args = ap.parse_args()
    import torch

    x = torch.zeros(1, device="cuda")

    def step() -> None:
        for i in range(args.launches):
            x.add_(1.0)
            if i % 100 == 99:
                torch.cuda.synchronize()
        torch.cuda.synchronize()

    mark("phase", "warmup")
    step()
    mark("phase", "generate")
    for i in range(args.iterations):
        mark("iteration", i)
        t = time.perf_counter()
        step()
        dt = time.perf_counter() - t
        print(f"[iteration {i}] {dt:.3f}s, {args.launches / dt:.0f} launches/s", flush=True)
    mark("phase", "end")
    assert x.item() == args.launches * (args.iterations + 1)


if __name__ == "__main__":
    main()
