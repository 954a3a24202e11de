#!/usr/bin/env python3
"""A JAX jitted training loop for the "GPU by default" runs (experiments/gpu-default/gpu_default.sh).

One jitted step of a small MLP (--depth layers, --width wide, batch --batch,
float32): forward, gradient of a squared loss, SGD update (the parameters
donated, so the step reuses their buffers), run --steps times with a
`block_until_ready` every --sync-every steps. The compilation and
--warmup steps come first; the line `STEADY_S <seconds>` is the time of the
timed steps, measured here. Phases are marked for tracer (setup, warmup,
steady, end).

    python3 experiments/gpu-default/jax_loop.py --steps 4000 --sync-every 10
"""
import argparse
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # no 75 % of the GPU's memory at start
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from tracer_markers import mark  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4000, help="timed steps")
    ap.add_argument("--warmup", type=int, default=200, help="warm-up steps (after the compilation)")
    ap.add_argument("--sync-every", type=int, default=10, help="block_until_ready every N steps")
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args(argv)
    mark("phase", "setup")
    import jax
    import jax.numpy as jnp

    dev = jax.devices()[0]
    if dev.platform != "gpu":
        raise SystemExit(f"JAX runs on {dev.platform}, not a GPU: this workload needs jax with CUDA")
    keys = jax.random.split(jax.random.PRNGKey(0), 2 * a.depth + 2)
    scale = 1.0 / a.width**0.5
    params = [(jax.random.normal(keys[2 * i], (a.width, a.width)) * scale, jnp.zeros((a.width,)))
              for i in range(a.depth)]
    x = jax.random.normal(keys[-2], (a.batch, a.width))
    y = jax.random.normal(keys[-1], (a.batch, a.width))

    def loss(p, x, y):
        h = x
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < len(p) - 1:
                h = jax.nn.relu(h)
        return jnp.mean((h - y) ** 2)

    def step(p, x, y):
        val, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda q, d: q - 0.01 * d, p, g), val

    step = jax.jit(step, donate_argnums=(0,))
    every = max(1, a.sync_every)

    def run(p, n):
        val = None
        for i in range(n):
            p, val = step(p, x, y)
            if i % every == every - 1:
                val.block_until_ready()
        if val is not None:
            val.block_until_ready()
        return p, val

    mark("phase", "warmup")
    params, val = run(params, max(1, a.warmup))  # the first call compiles
    mark("phase", "steady")
    t = time.perf_counter()
    params, val = run(params, a.steps)
    dt = time.perf_counter() - t
    mark("phase", "end")
    last = float(val) if val is not None else float("nan")
    print(f"[jax] {a.steps} steps in {dt:.4f}s on {dev}, loss {last:.4f}", flush=True)
    print(f"STEADY_S {dt:.6f}", flush=True)


if __name__ == "__main__":
    main()
