"""A chain of PyTorch ops captured into one CUDA graph and launched 50 times
back to back, each launch timed with CUDA events (median printed as
graph_chain_rt prints it), to find which kinds of kernels a replayed graph
runs slower than the program's own graph.

usage: python3 torch_chain.py KIND [NODES]
KIND: elementwise (x * a + b: vectorized elementwise kernels), gemm (a
small fp16 matmul: cuBLAS nvjet kernels), layernorm, mix (the three in turn)
"""
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
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(3):
        body()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    body()
torch.cuda.synchronize()
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
ev = [torch.cuda.Event(enable_timing=True) for _ in range(51)]
for i in range(50):
    ev[i].record()
    g.replay()
ev[50].record()
torch.cuda.synchronize()
t = sorted(ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(50))
print(f"torch    {kind}: median {t[25]:.1f} us per launch (min {t[0]:.1f})", flush=True)
