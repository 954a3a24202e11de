"""Coverage workload: JAX/XLA, a jitted while loop of matmuls (XLA may run it as command
buffers, i.e. CUDA graphs) and a block_until_ready per step."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import jax.numpy as jnp


@jax.jit
def loop(a, b):
    def body(c):
        i, x = c
        return i + 1, jnp.tanh(x @ b)

    return jax.lax.while_loop(lambda c: c[0] < 16, body, (0, a))[1]


a = jax.random.normal(jax.random.PRNGKey(0), (512, 512))
b = jax.random.normal(jax.random.PRNGKey(1), (512, 512)) / 32
for _ in range(10):
    r = loop(a, b).block_until_ready()
print("jax_prog: devices", jax.devices(), "mean", float(r.mean()))
