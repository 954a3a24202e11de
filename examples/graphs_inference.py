#!/usr/bin/env python3
"""CUDA graph workloads for tracer (issue 17): GPT-2 with random weights, no downloads.

  capture  a GPT-2 forward pass captured once with torch.cuda.graph, then
           replayed --replays times (one cuGraphLaunch each)
  decode   greedy decoding of --tokens tokens over a fixed window of --seq
           positions (static shapes: the whole window each step, no KV
           cache), --impl eager (every kernel through cuLaunchKernel) or
           --impl compiled (torch.compile(mode="reduce-overhead"): CUDA
           graphs), at --batch

Marked for tracer: phases warmup / capture / run, one iteration marker per
replay (capture) or per token (decode, tokens=batch). The printed
"kernels per replay/token" come from torch.profiler over one extra replay
or token after the traced part (--count-kernels), to compare with tracer's
expansion and CUPTI's count.

    sudo tracer --gpu-timestamps -- python3 examples/graphs_inference.py capture --replays 50
    sudo tracer --gpu-timestamps -- python3 examples/graphs_inference.py decode --impl compiled --batch 8

Commands and what to compare: docs/graphs-gpu-check.md.
"""
import argparse
import time

from tracer_markers import mark  # phase markers for tracer (next to this file)


def model_and_input(args):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: this example needs an NVIDIA GPU")
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_positions=max(1024, args.seq))
    model = GPT2LMHeadModel(config).to(dtype=torch.float16).to("cuda").eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")
    return model, ids


def count_kernels(fn) -> int:
    """Kernels torch.profiler sees GPU-side for one call of fn (graph kernels included)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.name
               and not e.name.startswith(("Memcpy", "Memset")))


def capture(args) -> None:
    import torch

    model, ids = model_and_input(args)
    static_ids = ids.clone()

    def forward():
        return model(static_ids, use_cache=False).logits

    mark("phase", "warmup")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            forward()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    mark("phase", "capture")
    try:  # keep_graph (torch >= 2.8): the graph stays for debug_dump
        g = torch.cuda.CUDAGraph(keep_graph=bool(args.graph_dot))
    except TypeError:
        g = torch.cuda.CUDAGraph()
    if args.graph_dot:
        g.enable_debug_mode()
    with torch.no_grad(), torch.cuda.graph(g):
        out = forward()
    torch.cuda.synchronize()
    if args.graph_dot:
        if getattr(g, "instantiate", None):
            g.instantiate()
        g.debug_dump(args.graph_dot)  # cudaGraphDebugDotPrint, verbose

    mark("phase", "run")
    events = [torch.cuda.Event(enable_timing=True) for _ in range(args.replays + 1)] if args.time_launches else None
    t = time.perf_counter()
    for i in range(args.replays):
        mark("iteration", i)
        if events:
            events[i].record()
        g.replay()
    if events:
        events[-1].record()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    if events:
        per = sorted(events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(args.replays))
        print(f"[capture] per replay (CUDA events, back to back): median {per[len(per) // 2]:.1f} us, "
              f"min {per[0]:.1f} us, max {per[-1]:.1f} us", flush=True)
    checksum = float(out.float().sum())
    print(f"[capture] {args.replays} replays in {dt:.3f}s ({dt / args.replays * 1e3:.3f} ms each), "
          f"logits checksum {checksum:.6g}", flush=True)
    if args.count_kernels:
        mark("phase", "profiled")
        print(f"[capture] kernels per replay (torch.profiler): {count_kernels(g.replay)}", flush=True)


def decode(args) -> None:
    import torch

    model, ids = model_and_input(args)
    window = ids.clone()
    start = args.seq - args.tokens
    if start < 1:
        raise SystemExit("--seq must exceed --tokens")

    def step(w):
        # The logits of the whole window; the next token of each row is read
        # at the current position by the caller (static shapes).
        return model(w, use_cache=False).logits

    fn = torch.compile(step, mode="reduce-overhead", fullgraph=True) if args.impl == "compiled" else step

    def one_token(pos: int) -> None:
        logits = fn(window)
        window[:, pos] = logits[:, pos - 1].argmax(-1)

    mark("phase", "warmup")
    t = time.perf_counter()
    with torch.no_grad():
        for pos in range(start, start + 3):  # compiles and records the graphs (compiled)
            one_token(pos)
    torch.cuda.synchronize()
    print(f"[decode] warm-up ({args.impl}) {time.perf_counter() - t:.3f}s", flush=True)

    window.copy_(ids)
    mark("phase", "run")
    t = time.perf_counter()
    with torch.no_grad():
        for i, pos in enumerate(range(start, start + args.tokens)):
            mark("iteration", i, tokens=args.batch)
            one_token(pos)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    out = window[:, start:].cpu()
    print(f"[decode] {args.impl} batch {args.batch}: {args.tokens} tokens in {dt:.3f}s "
          f"({dt / args.tokens * 1e3:.3f} ms/token), first row {out[0, :8].tolist()}", flush=True)
    if args.count_kernels:
        mark("phase", "profiled")
        with torch.no_grad():
            print(f"[decode] kernels per token (torch.profiler): {count_kernels(lambda: one_token(start))}",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["capture", "decode"])
    ap.add_argument("--impl", choices=["eager", "compiled"], default="compiled", help="decode only")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=64, help="tokens in the window (capture: the input length)")
    ap.add_argument("--tokens", type=int, default=32, help="decode: tokens generated")
    ap.add_argument("--replays", type=int, default=50, help="capture: graph replays")
    ap.add_argument("--graph-dot", metavar="PATH",
                    help="capture: write the captured graph as DOT (every node's parameters and attributes), "
                         "to compare with replay's rebuilt one (replay --graph-dot DIR)")
    ap.add_argument("--time-launches", action="store_true",
                    help="capture: time each replay with CUDA events (an event between launches) and print the median")
    ap.add_argument("--layers", type=int, default=12, help="GPT-2 small has 12")
    ap.add_argument("--count-kernels", action="store_true",
                    help="after the run, count one replay's / token's GPU kernels with torch.profiler")
    args = ap.parse_args()
    mark("phase", "import")
    (capture if args.mode == "capture" else decode)(args)


if __name__ == "__main__":
    main()
