#!/usr/bin/env python3
"""Workloads for the what-if on another GPU (docs/what-if.md, issue 34).

  generate  GPT-2 greedy generation (--batch, --new-tokens per generate()
            call), --iterations calls after one warm-up call: launch-bound at
            batch 1 (the GPU mostly idle between its many small kernels)
  train     GPT-2 training steps (AdamW, bf16 autocast, --batch sequences of
            --seq tokens), --iterations steps after 3 warm-up steps: the GPU
            busy with GEMMs (the part a faster GPU shortens)

GPT-2 small shapes from its config, random weights: no downloads. The model
is built directly on the GPU (its weights initialized by GPU kernels), so a
`tracer record --replayable --capture-data` recording holds no weight bytes
and stays small enough to carry to another machine; the token ids come from
the GPU's generator too. Marked for tracer (docs/markers.md): phases
`warmup` and `generate`/`train`, one `iteration` per generate() call or
training step.

    sudo tracer record --replayable --capture-data --gpu-timestamps -o gen.rec -- \\
        python3 examples/whatif_workloads.py generate
"""
import argparse
import time

from tracer_markers import mark  # phase markers for tracer (next to this file)


def model_on_gpu(args, dtype):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: this example needs an NVIDIA GPU")
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_positions=max(1024, args.seq))
    with torch.device("cuda"):
        model = GPT2LMHeadModel(config)
    model = model.to(dtype=dtype)
    if next(model.parameters()).device.type != "cuda":
        model = model.to("cuda")  # built elsewhere by this transformers version: then copied
    return model, config


def generate(args) -> None:
    import torch

    model, config = model_on_gpu(args, torch.float16)
    model.eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.prompt_len), device="cuda")
    mask = torch.ones_like(ids)
    gen = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, do_sample=False,
               pad_token_id=0, attention_mask=mask)
    with torch.inference_mode():
        mark("phase", "warmup")
        model.generate(ids, **gen)
        torch.cuda.synchronize()
        mark("phase", "generate")
        t = time.perf_counter()
        for i in range(args.iterations):
            mark("iteration", i, tokens=args.batch * args.new_tokens)
            out = model.generate(ids, **gen)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        mark("phase", "end")
    print(f"[generate] batch {args.batch}: {args.iterations} x {args.new_tokens} tokens in {dt:.3f}s "
          f"({dt / args.iterations * 1e3:.2f} ms per generate), last row {out[0, -4:].tolist()}", flush=True)


def train(args) -> None:
    import torch

    model, config = model_on_gpu(args, torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        return loss.item()  # the host waits for the step: one synchronization per iteration

    mark("phase", "warmup")
    for _ in range(3):
        step()
    mark("phase", "train")
    t = time.perf_counter()
    for i in range(args.iterations):
        mark("iteration", i, tokens=args.batch * args.seq)
        loss = step()
    dt = time.perf_counter() - t
    mark("phase", "end")
    print(f"[train] batch {args.batch} x {args.seq}: {args.iterations} steps in {dt:.3f}s "
          f"({dt / args.iterations * 1e3:.2f} ms per step), loss {loss:.4f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["generate", "train"])
    ap.add_argument("--batch", type=int, default=None, help="generate: 1, train: 8")
    ap.add_argument("--prompt-len", type=int, default=16, help="generate")
    ap.add_argument("--new-tokens", type=int, default=20, help="generate")
    ap.add_argument("--seq", type=int, default=256, help="train: tokens per sequence")
    ap.add_argument("--iterations", type=int, default=None, help="generate: 3 calls, train: 10 steps")
    ap.add_argument("--layers", type=int, default=12, help="GPT-2 small has 12")
    args = ap.parse_args()
    if args.batch is None:
        args.batch = 1 if args.mode == "generate" else 8
    if args.iterations is None:
        args.iterations = 3 if args.mode == "generate" else 10
    mark("phase", "import")
    (generate if args.mode == "generate" else train)(args)


if __name__ == "__main__":
    main()
