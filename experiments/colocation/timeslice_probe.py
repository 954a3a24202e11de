#!/usr/bin/env python3
"""Measures how the GPU time-slices between two processes' contexts, for the
co-location prediction's constants (docs/colocation.md, `--timeslice-us`,
`--switch-us`). No MPS, no GPU setting changed: two ordinary processes.

1. A *hog* process keeps a queue of spin kernels (torch.cuda._sleep) of L µs
   on the GPU without a break; a *probe* process, every 0.3-2.3 ms (random),
   launches one tiny kernel and waits for it. The probe's latency minus its
   latency alone is its wait for the GPU: for L above the time slice T it is
   spread over [c, T + c] (c: the switch); for short L, it shows whether the
   GPU switches at kernel boundaries instead.
2. Two hogs of real work (4096² fp16 matrix products; a spin kernel's clock
   runs on while its context is switched out), alone, together, alone again:
   the products done together against alone is the GPU time the switches
   cost.

    python3 timeslice_probe.py [--lengths 20,200,2000,20000] [--probes 400] [--skip-probes]
Prints a table and writes --out (JSON).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def cycles_per_us(torch):
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = 20_000_000
    a.record()
    torch.cuda._sleep(n)
    b.record()
    b.synchronize()
    return n / (a.elapsed_time(b) * 1000.0)


def hog(a):
    """Keeps spin kernels of a.length µs queued until a.seconds pass; prints kernels done."""
    import torch

    if a.work == "matmul":  # real work: a preempted kernel does not progress (a spin's clock does)
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        w, y = x.clone(), torch.empty_like(x)
        torch.matmul(x, w, out=y)
        kernel = lambda: torch.matmul(x, w, out=y)  # noqa: E731
        batch = 100
    else:
        cyc = int(a.length * cycles_per_us(torch))
        kernel = lambda: torch.cuda._sleep(cyc)  # noqa: E731
        batch = max(2, int(20_000 / a.length))  # ~20 ms of work between events
    torch.cuda.synchronize()
    events = []
    open(a.ready, "w").close()
    while not os.path.exists(a.go):
        time.sleep(0.0002)
    t0 = time.perf_counter()
    done = 0
    while time.perf_counter() - t0 < a.seconds:
        for _ in range(batch):
            kernel()
        e = torch.cuda.Event()
        e.record()
        events.append(e)
        if len(events) > 2:  # two batches queued at all times
            events.pop(0).synchronize()
            done += batch
    for e in events:
        e.synchronize()
    done += batch * len(events)
    dt = time.perf_counter() - t0
    print(json.dumps({"length_us": a.length, "kernels": done, "seconds": dt, "busy_s": done * a.length / 1e6}), flush=True)


def probe_latencies(torch, n, seed):
    rng = random.Random(seed)
    lat = []
    for _ in range(n):
        t = time.perf_counter() + rng.uniform(0.0003, 0.0023)
        while time.perf_counter() < t:
            pass
        t0 = time.perf_counter()
        torch.cuda._sleep(100)
        torch.cuda.synchronize()
        lat.append((time.perf_counter() - t0) * 1e6)
    return lat


def start_hog(script, length, seconds, d, tag, work="spin"):
    ready, go = os.path.join(d, f"ready.{tag}"), os.path.join(d, f"go.{tag}")
    p = subprocess.Popen([sys.executable, script, "--hog", "--length", str(length), "--seconds", str(seconds),
                          "--ready", ready, "--go", go, "--work", work], stdout=subprocess.PIPE, text=True)
    while not os.path.exists(ready):
        if p.poll() is not None:
            raise SystemExit(f"hog exited with status {p.returncode}")
        time.sleep(0.01)
    return p, go


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="20,200,2000,20000", help="hog kernel lengths, µs")
    ap.add_argument("--probes", type=int, default=400)
    ap.add_argument("--out", default="timeslice.json")
    ap.add_argument("--hog", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--length", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=3.0, help=argparse.SUPPRESS)
    ap.add_argument("--ready", help=argparse.SUPPRESS)
    ap.add_argument("--go", help=argparse.SUPPRESS)
    ap.add_argument("--work", default="spin", help=argparse.SUPPRESS)
    ap.add_argument("--skip-probes", action="store_true", help="only the two-hog measurement")
    a = ap.parse_args()
    if a.hog:
        return hog(a)
    import torch

    script = os.path.abspath(__file__)
    d = tempfile.mkdtemp(prefix="timeslice-")
    cpu = cycles_per_us(torch)
    alone = probe_latencies(torch, a.probes, 1)
    base = statistics.median(alone)
    res = {"gpu": torch.cuda.get_device_name(0), "cycles_per_us": cpu, "probe_alone_us": {
        "p10": pct(alone, .1), "median": base, "p90": pct(alone, .9), "max": max(alone)}, "beside": []}
    print(f"GPU {res['gpu']}; spin clock {cpu:.0f} cycles/µs; probe alone: median {base:.1f} µs, "
          f"p90 {pct(alone, .9):.1f}, max {max(alone):.1f}")
    print(f"{'hog kernel µs':>14} {'waits':>6} {'min':>8} {'p10':>8} {'median':>8} {'mean':>8} {'p90':>8} {'p99':>8} {'max':>8}   (probe wait = latency − alone median, µs)")
    for k, length in enumerate(float(x) for x in ("" if a.skip_probes else a.lengths).split(",") if x):
        seconds = a.probes * 0.0016 + 1.5
        p, go = start_hog(script, length, seconds, d, f"h{k}")
        open(go, "w").close()
        time.sleep(0.3)  # the hog's queue fills
        lat = probe_latencies(torch, a.probes, 2 + k)
        out, _ = p.communicate(timeout=seconds + 60)
        w = [x - base for x in lat]
        row = {"hog_kernel_us": length, "probes": len(w), "min": min(w), "p10": pct(w, .1), "median": statistics.median(w),
               "mean": statistics.fmean(w), "p90": pct(w, .9), "p99": pct(w, .99), "max": max(w),
               "hog": json.loads(out.strip().splitlines()[-1]) if out.strip() else None}
        res["beside"].append(row)
        print(f"{length:>14.0f} {len(w):>6} " + " ".join(f"{row[q]:>8.1f}" for q in ("min", "p10", "median", "mean", "p90", "p99", "max")))
    # two GPU-bound hogs of real work (4096² fp16 products): the GPU time lost to switching
    share = {}
    for what, tags in (("alone", ["a"]), ("together", ["b", "c"]), ("alone again", ["e"])):
        ps = [start_hog(script, 1000.0, 3.0, d, t, "matmul") for t in tags]
        for _, go in ps:
            open(go, "w").close()
        outs = [json.loads(p.communicate(timeout=90)[0].strip().splitlines()[-1]) for p, _ in ps]
        share[what] = outs
    rates = [share[w][0]["kernels"] / share[w][0]["seconds"] for w in ("alone", "alone again")]
    alone_rate = sum(rates) / 2
    tog = [o["kernels"] / o["seconds"] for o in share["together"]]
    eff = sum(tog) / alone_rate
    res["two_hogs"] = {"alone_per_s": rates, "together_per_s": tog, "efficiency": eff}
    print(f"two hogs of 4096² fp16 products: alone {rates[0]:.0f}, {rates[1]:.0f} products/s; together {tog[0]:.0f} + {tog[1]:.0f} /s "
          f"= {100 * eff:.2f} % of alone (GPU time lost to switching: {100 * (1 - eff):.2f} %; with slices of T, a switch costs T·(1/eff − 1))")
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
