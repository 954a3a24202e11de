"""Host-to-device copies from pageable memory, the sizes GPT-2's model move
makes (1.5 KB to 77 MB), each size copied REPEAT times and each copy timed
with CUDA events around it: what a copy takes in the program, with or
without a recorder beside it (experiments/copies/gpu_copy_fidelity.sh BENCH=1).

usage: python3 copy_bench.py [REPEAT]
Prints one line per size: the median and the minimum µs and the GB/s of the
median.
"""
import sys
import torch

repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 12
sizes = [1536, 6144, 1179648, 3538944, 4718592, 77194752]
torch.cuda.init()
for size in sizes:
    src = torch.randint(0, 255, (size,), dtype=torch.uint8)  # pageable, every page written
    dst = torch.empty(size, dtype=torch.uint8, device="cuda")
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    med = times[len(times) // 2]
    print(f"copy_bench h2d {size} bytes: median {med:.2f} us (min {times[0]:.2f}), {size / med / 1e3:.2f} GB/s", flush=True)
