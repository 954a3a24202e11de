"""A chain of PyTorch ops captured into one CUDA graph and launched 50 times
back to back, each launch timed with CUDA events (median printed as
graph_chain_rt prints it), to find which kinds of kernels a replayed graph
runs slower than the program's own graph.

usage: python3 torch_chain.py KIND [NODES]
KIND: elementwise (x * a + b: vectorized elementwise kernels), gemm (a
small fp16 matmul: cuBLAS nvjet kernels), layernorm, mix (the three in turn)
CHAIN_TIMING=pair: each launch timed by an event before and one after it, as
replay --time-graph-launches times them (default: one event between launches)
CHAIN_PHASES=N: the warm-up and the timed launches N times (the graph captured once);
with CHAIN_MULTI=1 each later warm-up first runs kernels on the legacy stream
and on another created stream too (CHAIN_MULTI=legacy, other: on one of them)
"""
import os
import sys
import torch

kind = sys.argv[1]
nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 294
dev = "cuda"
x = torch.randn(1 << 14, device=dev, dtype=torch.float16)
a = torch.randn(64, 768, device=dev, dtype=torch.float16)
w = torch.randn(768, 768, device=dev, dtype=torch.float16)
ln = torch.nn.LayerNorm(768, device=dev, dtype=torch.float16)


def step(k):
    global x, a
    if k == "elementwise":
        x.mul_(1.0001).add_(1e-4)
    elif k == "gemm":
        a = torch.mm(a, w) * 0.01
    elif k == "layernorm":
        a = ln(a)


def body():
    kinds = ["elementwise", "gemm", "layernorm"] if kind == "mix" else [kind]
    per = {"elementwise": 2, "gemm": 2, "layernorm": 1}
    n = 0
    while n < nodes:
        for k in kinds:
            step(k)
            n += per[k]


side = torch.cuda.Stream()


other = torch.cuda.Stream()


def warm_up(multi=""):
    # multi: kernels on more streams first, as the program's set-up ran them: "legacy" (random
    # numbers on the legacy stream), "other" (an op on another created stream), "1" (both)
    with torch.no_grad():
        if multi in ("1", "legacy"):
            x.normal_()
        if multi in ("1", "other"):
            other.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(other):
                x.add_(0.0)
            torch.cuda.current_stream().wait_stream(other)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def timed():
    """50 graph launches back to back, each timed; the median and the minimum (µs)."""
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    if os.environ.get("CHAIN_TIMING") == "pair":
        # as replay --time-graph-launches times them: an event before and one after each launch
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(50)]
        for a_, b_ in ev:
            a_.record()
            g.replay()
            b_.record()
        torch.cuda.synchronize()
        t = sorted(a_.elapsed_time(b_) * 1e3 for a_, b_ in ev)
    else:
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(51)]
        for i in range(50):
            ev[i].record()
            g.replay()
        ev[50].record()
        torch.cuda.synchronize()
        t = sorted(ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(50))
    return t[25], t[0]


warm_up()
g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    body()
torch.cuda.synchronize()
how = " (an event before and after each)" if os.environ.get("CHAIN_TIMING") == "pair" else ""
# CHAIN_PHASES=N: after the first timed launches, N - 1 more phases of the
# warm-up run eagerly again and the graph timed again (as replay's passes run
# the program's whole sequence, warm-up included, each time)
phases = int(os.environ.get("CHAIN_PHASES", "1"))
for phase in range(1, phases + 1):
    if phase > 1:
        warm_up(multi=os.environ.get("CHAIN_MULTI", ""))
    med, lo = timed()
    at = f" (phase {phase})" if phases > 1 else ""
    print(f"torch    {kind}: median {med:.1f} us per launch (min {lo:.1f}){how}{at}", flush=True)
