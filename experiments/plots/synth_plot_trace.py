#!/usr/bin/env python3
"""Writes a SYNTHETIC trace (tracer-jsonl) that uses every line type `tracer plot`
draws: CUDA calls on two threads, phase / iteration / mark markers, NVML power
samples and measured GPU intervals ("gpu" lines), as agreed in the trace format.
It exists to show and test the figures' GPU, power and energy parts until real
recordings with those lines are committed. Deterministic (fixed seed).

    python3 experiments/plots/synth_plot_trace.py /tmp/synthetic.jsonl
    tracer plot /tmp/synthetic.jsonl -o docs/images
"""
import json
import random
import sys

rng = random.Random(7)
PID, TID, WORKER = 1000, 1000, 1017
T0 = 50_000_000_000  # CLOCK_MONOTONIC ns
lines = []
power_ranges = []  # (start, end, watts)


def call(ts, dur_ns, ty, op, name, tid=TID, **kw):
    lines.append(dict(ts=ts, pid=PID, tid=tid, type=ty, op=op, name=name, duration_us=dur_ns / 1000, ret=0, **kw))


def marker(ts, op, label, **kw):
    lines.append(dict(ts=ts, pid=PID, tid=TID, type="marker", op=op, name="marker", label=label, **kw))


def gpu(start, end, op, name, stream_id):
    lines.append(dict(ts=start, end_ts=end, duration_us=(end - start) / 1000, pid=PID, tid=0, type="gpu", op=op,
                      name=name, source="cupti", device=0, context_id=1, stream_id=stream_id, stream=None,
                      correlation_id=len(lines)))


t = T0
lines.append(dict(ts=t, pid=PID, tid=TID, type="process", op="exec", name="process", filename="/usr/bin/python3"))
marker(t, "phase", "import")
t += 1_800_000_000
marker(t, "phase", "model load")
call(t, 300_000_000, "init", "init", "cuInit")
t += 310_000_000
for i in range(40):  # weights to the GPU
    size = rng.choice([2_359_296, 9_437_184, 589_824])
    call(t, 20_000, "memory", "alloc", "cuMemAlloc_v2", size=size)
    t += 30_000
    d = size // 20  # ~20 GB/s
    call(t, d + 8_000, "memcpy", "copy", "cuMemcpyHtoD_v2", size=size, direction="h2d")
    gpu(t + 4_000, t + 4_000 + d, "memcpy", "memcpy_htod", 7)
    t += d + 30_000
for i in range(30):  # a helper thread's calls
    call(T0 + 2_000_000_000 + i * 20_000_000, 40_000, "memory", "free", "cuMemFree_v2", tid=WORKER)
power_ranges.append((T0, t, 72.0))


def iteration(t, tokens, launches_per_token):
    gpu_free = t
    for _ in range(tokens):
        for _ in range(launches_per_token):
            d = rng.randint(3_000, 6_000)
            call(t, d, "kernel", "launch", "cuLaunchKernel", kernel="gemv_kernel", stream="0x0")
            start = max(t + d, gpu_free)
            k = rng.choice([2_000, 3_000, 4_000, 9_000, 25_000])
            gpu(start, start + k, "kernel", "gemv_kernel", 7)
            gpu_free = start + k
            t += d + rng.randint(4_000, 12_000)
        s_end = max(t + 5_000, gpu_free + 3_000)
        call(t, s_end - t, "sync", "stream_synchronize", "cuStreamSynchronize", stream="0x0")
        t = s_end + rng.randint(50_000, 400_000)  # Python between tokens
    return t


marker(t, "phase", "warm-up")
s = t
t = iteration(t, 5, 150)
power_ranges.append((s, t, 180.0))
marker(t, "phase", "generate")
for it in range(6):
    marker(t, "iteration", str(it), tokens=20)
    s = t
    t = iteration(t, 20, 150)
    power_ranges.append((s, t, 240.0))
    lines.append(dict(ts=t, pid=PID, tid=TID, type="marker", op="mark", name="marker", label=f"gc {it}"))
    t += 20_000_000 if it % 2 else 2_000_000
marker(t, "phase", "shutdown")
t += 400_000_000
marker(t, "phase", "end")
end = t

# NVML samples every 10 ms: power from the ranges above (idle 70 W otherwise), energy integrated.
energy = 1_000_000_000.0  # mJ since driver load
ts = T0
while ts <= end:
    w = 70.0
    for a, b, pw in power_ranges:
        if a <= ts < b:
            w = pw
    w += rng.uniform(-4, 4)
    lines.append(dict(ts=ts, pid=0, tid=0, type="power", op="sample", name="nvml", gpu=0, bus_id="00000000:00:06.0",
                      energy_mj=round(energy), power_mw=round(w * 1000), sm_clock_mhz=1980, mem_clock_mhz=2619,
                      util_gpu_pct=None, util_mem_pct=None, temp_c=40))
    energy += w * 10  # 10 ms at w W = 10 w mJ
    ts += 10_000_000

lines.sort(key=lambda v: v["ts"])
header = dict(type="header", format="tracer-jsonl", format_version=1, tracer_version="synthetic",
              command=["python3", "synthetic_example.py"], pid=PID,
              gpus=[dict(bus="0000:00:06.0", model="synthetic GPU")],
              power=dict(available=True, reason=None, interval_ms=10, gpus=[dict(index=0, name="synthetic GPU")]))
with open(sys.argv[1], "w") as f:
    f.write(json.dumps(header) + "\n")
    for v in lines:
        f.write(json.dumps(v) + "\n")
    f.write(json.dumps(dict(type="footer", calls=sum(1 for v in lines if v["name"].startswith("cu")))) + "\n")
