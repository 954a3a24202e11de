#!/usr/bin/env python3
"""A training loop whose data loader reads files between steps (no downloads).

Writes SHARDS shard files of random tokens (default 16 x 32 MiB) under
--dir, then runs STEPS training steps of a small GPT-2 (random weights,
fp16 autocast): before each step the loop reads the next shard from disk in
the training thread (after dropping it from the page cache, so the read
waits for the disk), decodes a batch from it on the CPU, and copies it to
the GPU. The GPU idles while the loader reads and decodes: `tracer gaps`
shows those gaps as blocked in read (file) and on CPU.

    sudo tracer -- python3 examples/dataloader_training.py --steps 30
"""
import argparse
import os
import time

from tracer_markers import mark  # phase markers for tracer (next to this file)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--shard-mib", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--dir", default="/tmp/tracer-dataloader")
    args = ap.parse_args()

    import numpy as np

    mark("phase", "write_shards")
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(args.shards):
        p = os.path.join(args.dir, f"shard-{i:04d}.bin")
        n = args.shard_mib * 1024 * 1024 // 4
        if not os.path.exists(p) or os.path.getsize(p) != n * 4:
            rng.integers(0, 50257, n, dtype=np.int32).tofile(p)
        paths.append(p)
    os.sync()

    mark("phase", "import")
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    mark("phase", "model_load")
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_positions=args.seq)
    model = GPT2LMHeadModel(config).to("cuda").train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def load(step: int) -> torch.Tensor:
        """Reads one shard from disk (cache dropped first) and decodes a batch on the CPU."""
        p = paths[step % len(paths)]
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            with os.fdopen(fd, "rb", buffering=0) as f:
                fd = -1
                raw = f.read()
        finally:
            if fd >= 0:
                os.close(fd)
        tokens = np.frombuffer(raw, dtype=np.int32)
        # "Decoding": shuffle windows and clip, on the CPU.
        starts = rng.integers(0, len(tokens) - args.seq, args.batch)
        batch = np.stack([tokens[s:s + args.seq] for s in starts]) % config.vocab_size
        return torch.from_numpy(batch.astype(np.int64)).pin_memory()

    mark("phase", "train")
    t0 = time.perf_counter()
    for step in range(args.steps):
        mark("iteration", step)
        t = time.perf_counter()
        ids = load(step).to("cuda", non_blocking=True)
        t_load = time.perf_counter() - t
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_v = loss.item()  # synchronizes
        print(f"[step {step}] {time.perf_counter() - t:.3f}s (load {t_load:.3f}s) loss {loss_v:.3f}", flush=True)
    print(f"[train] {args.steps} steps in {time.perf_counter() - t0:.3f}s", flush=True)


if __name__ == "__main__":
    main()
