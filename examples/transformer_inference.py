#!/usr/bin/env python3
"""GPT-2 small text generation with random fp16 weights (no downloads).

The model is built from GPT2Config, so nothing is fetched from a hub; the
token ids are random. Generation at batch 1 is launch-bound: a few thousand
tiny kernels per generated token, which is what makes tracing overhead
visible.

Stages: import, model to GPU, warm-up generation, N timed generation
iterations. Under `tracer record` each stage and each generate() call is
marked in the trace (phase/iteration markers, docs/markers.md).

    sudo tracer -- python3 examples/transformer_inference.py --iterations 3
"""
import argparse
import time

from profiler_counts import report_profile  # torch.profiler counted as tracer counts (next to this file)
from tracer_markers import mark  # phase markers for tracer (next to this file)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--layers", type=int, default=12, help="GPT-2 small has 12")
    ap.add_argument("--profile-kernels", action="store_true",
                    help="also run torch.profiler over everything after import and print its kernel "
                         "and launch counts (to compare with a tracer recording of the same run)")
    args = ap.parse_args()

    mark("phase", "import")
    t = time.perf_counter()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    print(f"[import] {time.perf_counter() - t:.3f}s (torch {torch.__version__})", flush=True)
    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: this example needs an NVIDIA GPU")

    prof = None
    if args.profile_kernels:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()

    mark("phase", "model_load")
    t = time.perf_counter()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers)  # GPT-2 small shapes, random weights
    model = GPT2LMHeadModel(config).to(dtype=torch.float16).to("cuda").eval()
    torch.cuda.synchronize()
    n = sum(p.numel() for p in model.parameters())
    print(f"[load] model to GPU: {time.perf_counter() - t:.3f}s ({n:,} parameters, fp16)", flush=True)

    ids = torch.randint(0, config.vocab_size, (args.batch, args.prompt_len), device="cuda")
    mask = torch.ones_like(ids)
    gen = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, do_sample=False,
               pad_token_id=0, attention_mask=mask)

    with torch.inference_mode():
        mark("phase", "warmup")
        t = time.perf_counter()
        model.generate(ids, **gen)
        torch.cuda.synchronize()
        print(f"[warmup] {time.perf_counter() - t:.3f}s", flush=True)
        mark("phase", "generate")
        for i in range(args.iterations):
            mark("iteration", i, tokens=args.batch * args.new_tokens)
            t = time.perf_counter()
            out = model.generate(ids, **gen)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t
            toks = args.batch * args.new_tokens
            print(f"[iteration {i}] {dt:.3f}s, {toks / dt:.1f} tokens/s", flush=True)
        mark("phase", "end")
    print(f"[done] output shape {tuple(out.shape)}", flush=True)
    if prof is not None:
        prof.__exit__(None, None, None)
        report_profile(prof)


if __name__ == "__main__":
    main()
