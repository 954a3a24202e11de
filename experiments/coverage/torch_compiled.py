"""Coverage workload: an MLP under torch.compile (Triton kernels launched by Inductor)."""
import torch

torch.manual_seed(0)
mlp = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024), torch.nn.LayerNorm(1024)
).cuda()
f = torch.compile(mlp)
x = torch.randn(64, 1024, device="cuda")
with torch.no_grad():
    for _ in range(20):
        y = f(x)
    torch.cuda.synchronize()
    ref = mlp(x)
print("torch_compiled: max abs diff", float((y - ref).abs().max()))
