#!/usr/bin/env python3
"""Workloads of the overhead benchmark (`cargo xtask bench overhead`).

One process runs the chosen workloads in turn, each with warm-up iterations
then timed ones, and prints one line per timed iteration:

    BENCH {"workload": "gen", "iteration": 3, "seconds": 0.1523}

- gen:    GPT-2 small fp16 generation at batch 1 (GPT2Config, random weights,
          20 new tokens per generate()), as examples/transformer_inference.py:
          launch-bound, thousands of tiny kernels per token.
- matmul: 8192x8192 bf16 matrix products, 20 per iteration: compute-bound,
          a handful of launches per second of GPU work.
- copy:   2,000 small copies per iteration (64 KiB, host<->device both ways,
          pinned and pageable, synchronizing every 100): copy-call-bound.

--torch-profiler wraps each workload's timed iterations in torch.profiler
(CPU and CUDA activities), the alternative users compare with.
"""
import argparse
import json
import time


def timed(name, iterations, warmup, step, profiler):
    import torch
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    prof = None
    if profiler:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    for i in range(iterations):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        print("BENCH " + json.dumps({"workload": name, "iteration": i, "seconds": round(dt, 6)}), flush=True)
    if prof is not None:
        prof.__exit__(None, None, None)


def gen(args):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(n_layer=12)
    model = GPT2LMHeadModel(config).to(dtype=torch.float16).to("cuda").eval()
    ids = torch.randint(0, config.vocab_size, (1, 16), device="cuda")
    kw = dict(max_new_tokens=20, min_new_tokens=20, do_sample=False, pad_token_id=0,
              attention_mask=torch.ones_like(ids))
    with torch.inference_mode():
        timed("gen", args.iterations, 2, lambda: model.generate(ids, **kw), args.torch_profiler)


def matmul(args):
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)

    def step():
        for _ in range(20):
            torch.matmul(a, b, out=c)
    timed("matmul", args.iterations, 2, step, args.torch_profiler)


def copy(args):
    import torch
    n = 64 * 1024 // 4
    pinned = torch.empty(n, dtype=torch.float32).pin_memory()
    pageable = torch.empty(n, dtype=torch.float32)
    dev = torch.empty(n, dtype=torch.float32, device="cuda")

    def step():
        for i in range(500):
            dev.copy_(pinned, non_blocking=True)
            pinned.copy_(dev, non_blocking=True)
            dev.copy_(pageable)
            pageable.copy_(dev)
            if i % 25 == 24:
                torch.cuda.synchronize()
    timed("copy", args.iterations, 2, step, args.torch_profiler)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="gen,matmul,copy")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--torch-profiler", action="store_true")
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: the overhead benchmark needs an NVIDIA GPU")
    for w in args.workloads.split(","):
        {"gen": gen, "matmul": matmul, "copy": copy}[w](args)


if __name__ == "__main__":
    main()
