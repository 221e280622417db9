"""A transformer MLP block in a few lines of dnnl.ops, on pyopencl arrays:

    y = x + W2 · gelu(W1 · layer_norm(x) + b1) + b2

Each line is one oneDNN primitive with its bias and post-ops fused
(GELU after the first matmul, the residual add after the second). The
weights are prepared once in the layout oneDNN prefers; the block then runs
three times with no host wait between calls (each result carries the event
the next call waits for) and is read once, checked against NumPy. The last
lines print the ops cache's statistics: one miss per distinct primitive
(5: the reorder of each weight into its layout, then the block's layer
norm and two matmuls), hits after that.

The queue has profiling enabled, so a dnnl.profiling recorder sees every
primitive the three blocks run: their summary is printed and their
timeline written as a trace that https://ui.perfetto.dev opens.

    python examples/ops_mlp.py [TRACE.json]
"""

import os
import sys
import tempfile


import dnnl_ocl_interop as dnnl

print(f"device:   {dnnl.emulation.ensure_device()}")

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402
import pyopencl.array as cla  # noqa: E402

from dnnl_ocl_interop import ops  # noqa: E402

TOKENS, HIDDEN, INTERMEDIATE = 32, 64, 256

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
# Profiling enabled on the (in-order) queue: dnnl.profiling can time what runs there.
queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)

rng = np.random.default_rng(0)
x = rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32)
gamma = (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
beta = (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
w1 = (rng.standard_normal((HIDDEN, INTERMEDIATE)) / np.sqrt(HIDDEN)).astype(np.float32)
b1 = (0.1 * rng.standard_normal(INTERMEDIATE)).astype(np.float32)
w2 = (rng.standard_normal((INTERMEDIATE, HIDDEN)) / np.sqrt(INTERMEDIATE)).astype(np.float32)
b2 = (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
dev = {name: cla.to_device(queue, value) for name, value in
       dict(x=x, gamma=gamma, beta=beta, w1=w1, b1=b1, w2=w2, b2=b2).items()}


def mlp_block(x, p):
    """One pre-norm MLP block; weights [in, out]."""
    h = ops.layer_norm(x, p["gamma"], p["beta"])
    h = ops.matmul(h, p["w1"], p["b1"], post_ops=["gelu_tanh"])
    return ops.matmul(h, p["w2"], p["b2"], post_ops=[("add", x)])


# Weights prepared once for calls like the block's: the first argument only
# shows the shape and dtype of the activations they will meet. No host wait:
# the reorders are ordered by events like everything else. (Weights kept as
# [out, in] are prepared with transpose_b=True.)
like_x = cla.empty(queue, (TOKENS, HIDDEN), np.float32)
like_h = cla.empty(queue, (TOKENS, INTERMEDIATE), np.float32)
params = dict(dev, w1=ops.prepare_weights(ops.matmul, like_x, dev["w1"]),
              w2=ops.prepare_weights(ops.matmul, like_h, dev["w2"]))
print(f"prepared: {params['w1']}")

# The block three times, chained on the device, recorded; read once.
y = dev["x"]
with dnnl.profiling.recorder() as recorder:
    for _ in range(3):
        y = mlp_block(y, params)
result = y.get()
recorder.print_summary()
trace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "ops_mlp.json")
recorder.write_trace(trace)
print(f"trace:    {trace} ({len(recorder.executions)} executes; open it in https://ui.perfetto.dev)")


def reference(x):
    mean = x.mean(axis=-1, keepdims=True)
    h = (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * gamma + beta
    h = h @ w1 + b1
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    return x + h @ w2 + b2


expected = x.astype(np.float64)
for _ in range(3):
    expected = reference(expected)
error = float(np.max(np.abs(result - expected)) / np.max(np.abs(expected)))
print(f"output:   {result.shape}, largest relative difference from NumPy {error:.2e}")
info = ops.cache_info()
print(f"cache:    {info['misses']} primitives made, {info['hits']} calls served from the cache")
assert error < 1e-4, error
assert info["misses"] == 5 and info["hits"] == 6, info
assert len(recorder.executions) == 9  # 3 blocks of a layer norm and two matmuls
print("ops_mlp:  OK")
