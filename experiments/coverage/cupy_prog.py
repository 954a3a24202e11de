"""Coverage workload: CuPy arrays, an elementwise kernel, a reduction and a stream sync."""
import cupy as cp

x = cp.arange(1 << 20, dtype=cp.float32)
k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2.0f + 1.0f", "twice_plus_one")
s = cp.cuda.Stream(non_blocking=True)
with s:
    for _ in range(20):
        y = k(x)
        t = float(y.sum())
    s.synchronize()
cp.cuda.Device().synchronize()
print("cupy_prog: sum", t)
