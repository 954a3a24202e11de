#!/usr/bin/env python3
"""Tensor-parallel greedy generation of a GPT-2-shaped model (random fp16
weights, no downloads) over the GPUs of one host, one process per GPU,
started by torchrun; NCCL all-reduces after each attention and MLP block.

Each rank holds n_head/world heads and 4*d/world MLP columns of every
layer (Megatron's split: column-parallel QKV and fc1, row-parallel output
projection and fc2, an all-reduce after each), the embeddings and LM head
whole. Greedy decoding with a KV cache; every rank computes the same tokens.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      sudo -E tracer -- torchrun --nproc-per-node 2 examples/tp_generate.py

Each rank writes its own phase and iteration markers (docs/markers.md),
stamped with its pid: tracer's report and gaps give per-rank phases.
--profile-kernels: torch.profiler over the generation, per rank, printing
its kernel and launch counts to compare with tracer's per-rank counts.
NVLink multicast is never used (no cuMulticastCreate): NCCL's NVLS is off
through the variables above, which this script also sets if absent.
"""
import argparse
import os
import time

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_k, _v)

from tracer_markers import mark  # noqa: E402  (phase markers, next to this file)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--profile-kernels", action="store_true")
    args = ap.parse_args()

    mark("phase", "import")
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    mark("phase", "init")
    dist.init_process_group("nccl", device_id=dev)
    d, h = args.d_model, args.heads
    assert h % world == 0, "heads must divide among the ranks"
    hl, dh = h // world, d // h

    mark("phase", "model_load")
    g = torch.Generator(device="cpu").manual_seed(0)

    def w(*shape):  # the same full weights on every rank, then each takes its part
        return (torch.randn(*shape, generator=g) * 0.02).to(torch.float16)

    wte, wpe = w(args.vocab, d).to(dev), w(1024, d).to(dev)
    layers = []
    for _ in range(args.layers):
        qkv, proj, fc1, fc2 = w(d, 3 * d), w(d, d), w(d, 4 * d), w(4 * d, d)
        cols = lambda m, n: m.view(d, n, world, -1)[:, :, rank].reshape(d, -1)  # noqa: E731
        layers.append(dict(
            ln1=torch.ones(d, dtype=torch.float16, device=dev), ln2=torch.ones(d, dtype=torch.float16, device=dev),
            qkv=cols(qkv, 3).contiguous().to(dev),                                # d -> 3 * d/world
            proj=proj.view(world, d // world, d)[rank].contiguous().to(dev),     # d/world -> d
            fc1=fc1.view(d, world, -1)[:, rank].contiguous().to(dev),            # d -> 4d/world
            fc2=fc2.view(world, -1, d)[rank].contiguous().to(dev),               # 4d/world -> d
        ))
    torch.cuda.synchronize()

    def block(x, L, cache, pos):
        y = F.layer_norm(x, (d,), L["ln1"])
        q, k, v = (y @ L["qkv"]).view(x.shape[0], x.shape[1], 3, hl, dh).unbind(2)
        k = torch.cat([cache[0], k], 1) if cache else k
        v = torch.cat([cache[1], v], 1) if cache else v
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=not cache)
        o = a.transpose(1, 2).reshape(x.shape[0], x.shape[1], hl * dh) @ L["proj"]
        dist.all_reduce(o)
        x = x + o
        m = F.gelu(F.layer_norm(x, (d,), L["ln2"]) @ L["fc1"]) @ L["fc2"]
        dist.all_reduce(m)
        return x + m, (k, v)

    def generate(ids):
        caches, pos, out = [None] * args.layers, 0, ids
        x_ids = ids
        for _ in range(args.new_tokens):
            x = wte[x_ids] + wpe[pos:pos + x_ids.shape[1]]
            for i, L in enumerate(layers):
                x, caches[i] = block(x, L, caches[i], pos)
            pos += x_ids.shape[1]
            x_ids = (x[:, -1] @ wte.T).argmax(-1, keepdim=True)
            out = torch.cat([out, x_ids], 1)
        return out

    ids = torch.randint(0, args.vocab, (args.batch, args.prompt_len), generator=g).to(dev)
    prof = None
    with torch.inference_mode():
        mark("phase", "warmup")
        generate(ids)
        torch.cuda.synchronize()
        if args.profile_kernels:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        mark("phase", "generate")
        for i in range(args.iterations):
            mark("iteration", i, tokens=args.batch * args.new_tokens)
            t = time.perf_counter()
            out = generate(ids)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t
            print(f"[rank {rank}] iteration {i}: {dt:.3f}s, {args.batch * args.new_tokens / dt:.1f} tokens/s",
                  flush=True)
        mark("phase", "end")
    if prof is not None:
        prof.__exit__(None, None, None)
        report_profile(prof, rank)
    same = torch.tensor([int(out.sum().item())], device=dev)
    dist.all_reduce(same, op=dist.ReduceOp.MAX)
    print(f"[rank {rank}] pid {os.getpid()} device {local} done, tokens agree: "
          f"{int(same.item()) == int(out.sum().item())}", flush=True)
    dist.destroy_process_group()


def report_profile(prof, rank) -> None:
    """torch.profiler's counts over the timed iterations: GPU kernels (NCCL
    apart) and the runtime's launch calls."""
    from collections import Counter
    kinds = Counter()
    for e in prof.events():
        dev = str(getattr(e, "device_type", ""))
        if dev.endswith("CUDA"):
            if "Memcpy" in e.name or "Memset" in e.name:
                kinds["gpu_copy_or_set"] += 1
            elif "ncclKernel" in e.name or "ncclDevKernel" in e.name:
                kinds["gpu_nccl_kernel"] += 1
            else:
                kinds["gpu_kernel"] += 1
        elif e.name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"):
            kinds["runtime_" + e.name] += 1
    print(f"[rank {rank}] [torch.profiler] " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())), flush=True)


if __name__ == "__main__":
    main()
