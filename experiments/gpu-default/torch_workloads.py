#!/usr/bin/env python3
"""PyTorch workloads of the "GPU by default" runs (experiments/gpu-default/gpu_default.sh).

Each sets up, runs a warm-up, then its timed part, and prints one line
`STEADY_S <seconds>`: the time of the timed part (after the warm-up),
measured here with perf_counter. Phases are marked for tracer (setup,
warmup, steady, end; iteration markers inside steady for gpt2).

  gpt2   GPT-2 small generation at batch 1 (random fp16 weights, greedy, a
         fixed number of new tokens; as examples/transformer_inference.py):
         one warm-up generation, then --iterations timed ones;
  mlp    the latency-sensitive loop of experiments/colocation/colocation_workloads.py:
         a 4-layer fp16 MLP (1024 wide) at batch 1, a synchronization after
         every step (--steps steps per pass; one warm-up pass, one timed);
  train  the CNN training step of colocation_workloads.py (`cnn`: four 3x3
         convolutions on 32 images of 3x96x96, SGD, the loss copied back each
         step; --steps steps per pass; one warm-up pass, one timed).

Sizes are chosen for a whole run (Python start included) of about 3-5 s on
an H200; each is an option.

    python3 experiments/gpu-default/torch_workloads.py gpt2 --new-tokens 16 --iterations 2
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "colocation"))
from tracer_markers import mark  # noqa: E402


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=("gpt2", "mlp", "train"))
    ap.add_argument("--new-tokens", type=int, default=16, help="gpt2: new tokens per generation")
    ap.add_argument("--prompt-len", type=int, default=16, help="gpt2: prompt length")
    ap.add_argument("--iterations", type=int, default=2, help="gpt2: timed generations")
    ap.add_argument("--layers", type=int, default=12, help="gpt2: layers (GPT-2 small has 12)")
    ap.add_argument("--steps", type=int, default=None, help="mlp: steps per pass (5000); train: steps per pass (20)")
    ap.add_argument("--width", type=int, default=1024, help="mlp: layer width")
    ap.add_argument("--cudnn", action="store_true", help="train: convolutions through cuDNN")
    return ap.parse_args(argv)


def gpt2(a):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: this workload needs an NVIDIA GPU")
    torch.manual_seed(0)
    config = GPT2Config(n_layer=a.layers)  # GPT-2 small shapes, random weights
    model = GPT2LMHeadModel(config).to(dtype=torch.float16).to("cuda").eval()
    ids = torch.randint(0, config.vocab_size, (1, a.prompt_len), device="cuda")
    gen = dict(max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, do_sample=False, pad_token_id=0,
               attention_mask=torch.ones_like(ids))
    torch.cuda.synchronize()
    with torch.inference_mode():
        mark("phase", "warmup")
        model.generate(ids, **gen)
        torch.cuda.synchronize()
        mark("phase", "steady")
        t = time.perf_counter()
        for i in range(a.iterations):
            mark("iteration", i, tokens=a.new_tokens)
            ti = time.perf_counter()
            out = model.generate(ids, **gen)
            torch.cuda.synchronize()
            print(f"[iteration {i}] {time.perf_counter() - ti:.4f}s", flush=True)
        dt = time.perf_counter() - t
        mark("phase", "end")
    print(f"[done] output shape {tuple(out.shape)}", flush=True)
    return dt


def colocation(a):
    import colocation_workloads as cw

    kind = {"mlp": "mlp", "train": "cnn"}[a.kind]
    steps = a.steps or {"mlp": 5000, "train": 20}[a.kind]
    argv = [kind, "--steps", str(steps), "--width", str(a.width)] + (["--cudnn"] if a.cudnn else [])
    step = cw.build(cw.parse(argv))  # ends synchronized
    mark("phase", "warmup")
    step()
    mark("phase", "steady")
    t = time.perf_counter()
    step()
    dt = time.perf_counter() - t
    mark("phase", "end")
    print(f"[{a.kind}] {steps} steps in {dt:.4f}s", flush=True)
    return dt


def main(argv=None):
    a = parse(argv)
    mark("phase", "setup")
    dt = gpt2(a) if a.kind == "gpt2" else colocation(a)
    print(f"STEADY_S {dt:.6f}", flush=True)


if __name__ == "__main__":
    main()
