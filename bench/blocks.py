#!/usr/bin/env python3
"""The workload process of the overhead benchmark (bench/overhead.py).

One process, started once, runs blocks of timed iterations on command, so
that every configuration (untraced, tracer attached with `-p` in one mode or
another, torch.profiler) is measured in the same process, on the same warm
model and the same memory, interleaved with the others. Process-to-process
noise (untraced GPT-2 generation varies by up to 1.5x from one process to
the next on the H100 machines) then drops out of the paired ratios.

Workloads, as the examples run them:
- gen:  examples/transformer_inference.py at its defaults: GPT-2 small
        (GPT2Config, 12 layers, random fp16 weights), batch 1, a 16-token
        prompt, 20 new tokens per generate(), greedy. Launch-bound.
- loop: examples/launch_loop.py: `x.add_(1)` on one element, a
        synchronization every 100 launches, 20,000 launches per iteration.

Protocol (stdin/stdout, one line each):
    -> READY {"pid": ..., "setup_s": ...}
    <- BLOCK {"name": ..., "profiler": false, "warmup": 1, "gen": 5, "loop": 5}
    -> ITER {"block": ..., "workload": "gen", "seconds": ...}   (per timed iteration)
    -> DONE {"block": ..., "cpu_s": ..., "nivcsw": ..., "nvcsw": ...}
    <- QUIT
"""
import json
import os
import resource
import sys
import time


def out(tag, obj):
    sys.stdout.write(tag + " " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    t0 = time.perf_counter()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: the overhead benchmark needs an NVIDIA GPU")
    torch.manual_seed(0)
    config = GPT2Config(n_layer=12)
    model = GPT2LMHeadModel(config).to(dtype=torch.float16).to("cuda").eval()
    ids = torch.randint(0, config.vocab_size, (1, 16), device="cuda")
    kw = dict(max_new_tokens=20, min_new_tokens=20, do_sample=False, pad_token_id=0,
              attention_mask=torch.ones_like(ids))
    x = torch.zeros(1, device="cuda")

    def gen():
        model.generate(ids, **kw)
        torch.cuda.synchronize()

    def loop():
        for i in range(20000):
            x.add_(1.0)
            if i % 100 == 99:
                torch.cuda.synchronize()
        torch.cuda.synchronize()

    steps = {"gen": gen, "loop": loop}
    with torch.inference_mode():
        gen()
        loop()
        out("READY", {"pid": os.getpid(), "setup_s": round(time.perf_counter() - t0, 3)})
        for line in sys.stdin:
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "QUIT":
                break
            if cmd != "BLOCK":
                raise SystemExit(f"blocks.py: unknown command {line.strip()!r}")
            b = json.loads(arg)
            prof = None
            if b.get("profiler"):
                from torch.profiler import ProfilerActivity, profile
                prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                prof.__enter__()
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            c0 = time.process_time()
            for w in ("gen", "loop"):
                n = int(b.get(w, 0))
                if n == 0:
                    continue
                for _ in range(int(b.get("warmup", 1))):
                    steps[w]()
                for i in range(n):
                    t = time.perf_counter()
                    steps[w]()
                    out("ITER", {"block": b["name"], "workload": w, "iteration": i,
                                 "seconds": round(time.perf_counter() - t, 6)})
            cpu = time.process_time() - c0
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            if prof is not None:
                prof.__exit__(None, None, None)
                del prof
            out("DONE", {"block": b["name"], "cpu_s": round(cpu, 4),
                         "nivcsw": ru1.ru_nivcsw - ru0.ru_nivcsw, "nvcsw": ru1.ru_nvcsw - ru0.ru_nvcsw,
                         "minflt": ru1.ru_minflt - ru0.ru_minflt})


if __name__ == "__main__":
    main()
