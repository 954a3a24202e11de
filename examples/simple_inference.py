#!/usr/bin/env python3
"""A small MLP inference pipeline: the first workload to trace.

Stages: CUDA init, weights to GPU, input transfer, warm-up, N timed
iterations, results back to the host. No downloads. Under `tracer record`
each stage and iteration is marked in the trace (docs/markers.md).

    sudo tracer -- python3 examples/simple_inference.py --iterations 10
"""
import argparse
import time

from tracer_markers import mark  # phase markers for tracer (next to this file)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()

    mark("phase", "import")
    t = time.perf_counter()
    import torch

    print(f"[1] import torch: {time.perf_counter() - t:.3f}s (torch {torch.__version__})", flush=True)
    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: this example needs an NVIDIA GPU")

    mark("phase", "cuda_init")
    t = time.perf_counter()
    dev = torch.device("cuda")
    torch.cuda.init()
    print(f"[2] CUDA init: {time.perf_counter() - t:.3f}s on {torch.cuda.get_device_name(0)}", flush=True)

    mark("phase", "model_load")
    t = time.perf_counter()
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev).eval()
    torch.cuda.synchronize()
    n = sum(p.numel() for p in model.parameters())
    print(f"[3] weights to GPU: {time.perf_counter() - t:.3f}s ({n:,} parameters)", flush=True)

    mark("phase", "input_copy")
    t = time.perf_counter()
    x = torch.randn(args.batch, args.hidden).to(dev)
    torch.cuda.synchronize()
    print(f"[4] input to GPU: {time.perf_counter() - t:.3f}s shape {tuple(x.shape)}", flush=True)

    with torch.inference_mode():
        mark("phase", "warmup")
        t = time.perf_counter()
        model(x)
        torch.cuda.synchronize()
        print(f"[5] warm-up: {time.perf_counter() - t:.3f}s", flush=True)
        times = []
        mark("phase", "inference")
        for i in range(args.iterations):
            mark("iteration", i)
            t = time.perf_counter()
            y = model(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    print(f"[6] {args.iterations} iterations: mean {1e3 * sum(times) / len(times):.3f} ms", flush=True)

    mark("phase", "copy_back")
    t = time.perf_counter()
    out = y.cpu()
    print(f"[7] result to host: {time.perf_counter() - t:.4f}s checksum {out.sum().item():.4f}", flush=True)
    mark("phase", "end")


if __name__ == "__main__":
    main()
