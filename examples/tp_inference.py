#!/usr/bin/env python3
"""Tensor-parallel GPT-2-shaped generation over NCCL, one process per GPU.

A decoder with GPT-2's structure (pre-norm blocks, GELU MLP, tied
embedding; GPT-2 medium's shapes by default) with random fp16 weights, so
nothing is downloaded. Megatron-style tensor parallelism: each rank holds
1/world of the attention heads and of the MLP, the attention output and
MLP down projections are row-parallel and end in an all-reduce, so every
layer makes two NCCL all-reduces per step. Greedy decoding with a KV cache;
rank 0's token is broadcast so the ranks never diverge.

Stages (tracer markers, per rank): import, model_load, warmup, generate
with one iteration marker per generate() call, end.

    torchrun --nproc-per-node 2 examples/tp_inference.py --iterations 3
    sudo tracer record -o tp.jsonl -- torchrun --nproc-per-node 2 examples/tp_inference.py

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1 are set below unless already set): on shared hosts a
program using it can put the GPUs out of service.
"""
import argparse
import os
import time

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
               ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_k, _v)

from profiler_counts import report_profile  # torch.profiler counted as tracer counts (next to this file)
from tracer_markers import mark  # phase markers for tracer (next to this file)


def build(torch, d, heads, layers, vocab, world, rank):
    """Random fp16 weights: replicated ones from one seed, shards from a seed per rank."""
    from types import SimpleNamespace
    dev = "cuda"
    g = torch.Generator(device="cpu").manual_seed(0)

    def rand(*shape, gen=g):
        return (torch.randn(*shape, generator=gen) * 0.02).to(dtype=torch.float16, device=dev)

    local_heads = heads // world
    hd = d // heads
    ff = 4 * d // world
    shard = torch.Generator(device="cpu").manual_seed(1000 + rank)
    m = SimpleNamespace()
    m.wte = rand(vocab, d)
    m.wpe = rand(1024, d)
    m.blocks = []
    for _ in range(layers):
        b = {
            "ln1": (torch.ones(d, dtype=torch.float16, device=dev), torch.zeros(d, dtype=torch.float16, device=dev)),
            "qkv": rand(3 * local_heads * hd, d, gen=shard),  # column-parallel
            "out": rand(d, local_heads * hd, gen=shard),      # row-parallel
            "ln2": (torch.ones(d, dtype=torch.float16, device=dev), torch.zeros(d, dtype=torch.float16, device=dev)),
            "fc": rand(ff, d, gen=shard),                     # column-parallel
            "proj": rand(d, ff, gen=shard),                   # row-parallel
        }
        m.blocks.append(b)
    m.lnf = (torch.ones(d, dtype=torch.float16, device=dev), torch.zeros(d, dtype=torch.float16, device=dev))
    m.local_heads, m.hd, m.d = local_heads, hd, d
    return m


def step(torch, dist, m, ids, pos0, cache):
    """One forward pass over `ids` (batch, t) starting at position pos0; fills the KV cache."""
    F = torch.nn.functional
    b, t = ids.shape
    pos = torch.arange(pos0, pos0 + t, device="cuda")
    x = m.wte[ids] + m.wpe[pos]
    for i, blk in enumerate(m.blocks):
        h = F.layer_norm(x, (m.d,), *blk["ln1"])
        qkv = F.linear(h, blk["qkv"]).view(b, t, 3, m.local_heads, m.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if cache[i] is not None:
            k = torch.cat([cache[i][0], k], dim=2)
            v = torch.cat([cache[i][1], v], dim=2)
        cache[i] = (k, v)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=cache[i][0].shape[2] == t)
        a = F.linear(a.transpose(1, 2).reshape(b, t, m.local_heads * m.hd), blk["out"])
        dist.all_reduce(a)
        x = x + a
        h = F.layer_norm(x, (m.d,), *blk["ln2"])
        h = F.linear(F.gelu(F.linear(h, blk["fc"]), approximate="tanh"), blk["proj"])
        dist.all_reduce(h)
        x = x + h
    x = F.layer_norm(x, (m.d,), *m.lnf)
    return F.linear(x[:, -1], m.wte)  # tied embedding, last position only


def generate(torch, dist, m, ids, new_tokens):
    cache = [None] * len(m.blocks)
    out = [ids]
    logits = step(torch, dist, m, ids, 0, cache)
    pos = ids.shape[1]
    for _ in range(new_tokens):
        nxt = logits.argmax(dim=-1, keepdim=True)
        dist.broadcast(nxt, src=0)
        out.append(nxt)
        logits = step(torch, dist, m, nxt, pos, cache)
        pos += 1
    return torch.cat(out, dim=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--layers", type=int, default=24, help="GPT-2 medium has 24")
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--profile-kernels", action="store_true",
                    help="also run torch.profiler after import and print this rank's kernel and "
                         "launch counts (to compare with a tracer recording of the same run)")
    args = ap.parse_args()

    mark("phase", "import")
    t = time.perf_counter()
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    tag = f"[rank {rank}]"
    print(f"{tag} [import] {time.perf_counter() - t:.3f}s (torch {torch.__version__}) pid={os.getpid()}", flush=True)
    if args.heads % world or (4 * args.d_model) % world:
        raise SystemExit(f"--heads {args.heads} and 4*--d-model must divide by the world size {world}")
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))

    prof = None
    if args.profile_kernels:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()

    mark("phase", "model_load")
    t = time.perf_counter()
    m = build(torch, args.d_model, args.heads, args.layers, 50257, world, rank)
    torch.cuda.synchronize()
    print(f"{tag} [load] {time.perf_counter() - t:.3f}s on cuda:{local} "
          f"({torch.cuda.get_device_name(local)})", flush=True)

    g = torch.Generator(device="cpu").manual_seed(7)
    ids = torch.randint(0, 50257, (args.batch, args.prompt_len), generator=g).to("cuda")
    with torch.inference_mode():
        mark("phase", "warmup")
        t = time.perf_counter()
        generate(torch, dist, m, ids, args.new_tokens)
        torch.cuda.synchronize()
        print(f"{tag} [warmup] {time.perf_counter() - t:.3f}s", flush=True)
        mark("phase", "generate")
        for i in range(args.iterations):
            dist.barrier()
            mark("iteration", i, tokens=args.batch * args.new_tokens)
            t = time.perf_counter()
            out = generate(torch, dist, m, ids, args.new_tokens)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t
            print(f"{tag} [iteration {i}] {dt:.3f}s, {args.batch * args.new_tokens / dt:.1f} tokens/s", flush=True)
        mark("phase", "end")
    print(f"{tag} [done] output {tuple(out.shape)} checksum {int(out.sum())}", flush=True)
    if prof is not None:
        prof.__exit__(None, None, None)
        report_profile(prof, tag)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
