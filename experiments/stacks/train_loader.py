#!/usr/bin/env python3
"""A CNN training loop whose data loader (shard_reader.py) reads and decodes
a shard of images from disk before every step, in the training thread: the
GPU waits for read_shard and decode_images. With stacks, `tracer gaps`
should name them (and this file's load_batch) as what held the GPU idle.

    sudo tracer -- python3 experiments/stacks/train_loader.py --steps 40
"""
import argparse
import time

import numpy as np

import shard_reader


def load_batch(paths: list[str], step: int, side: int):
    import torch

    raw = shard_reader.read_shard(paths[step % len(paths)])
    x = shard_reader.decode_images(raw, side)
    y = np.arange(len(x)) % 10
    return torch.from_numpy(x).pin_memory(), torch.from_numpy(y).pin_memory()


def train_step(model, opt, x, y) -> None:
    import torch

    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    loss.item()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--side", type=int, default=64)
    ap.add_argument("--dir", default="/tmp/tracer-train-loader")
    args = ap.parse_args()
    paths = shard_reader.write_shards(args.dir, args.shards, args.images, args.side)
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 3, padding=1, stride=2), torch.nn.ReLU(),
        torch.nn.Conv2d(128, 128, 3, padding=1, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.perf_counter()
    for step in range(args.steps):
        x, y = load_batch(paths, step, args.side)
        train_step(model, opt, x.cuda(non_blocking=True), y.cuda(non_blocking=True))
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
