"""A sequence of dnnl.ops calls captured once and replayed in one call:

    program = ops.capture(block, x)     # runs block(x) once, recording its primitives
    y = program(new_x)                  # every primitive again, from C++, in one call

The block is the pre-norm MLP of examples/ops_mlp.py (a layer norm and two
matmuls with fused GELU, bias and residual add), its weights prepared once
in oneDNN's preferred layout and captured by reference. The program is
replayed on new inputs and checked against NumPy each time; replayed from a
second thread on its own queue (each queue gets its own results); an input
of another shape is refused naming it; and the eager block and the replay
are timed on this machine (for information: docs/ops.md, "Capture and
replay", has the measured table).

    python examples/ops_replay.py
"""

import threading
import time
from typing import Any, Dict, List

import dnnl_ocl_interop as dnnl

print(f"device:   {dnnl.emulation.ensure_device()}")

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402
import pyopencl.array as cla  # noqa: E402

from dnnl_ocl_interop import ops  # noqa: E402

TOKENS, HIDDEN, INTERMEDIATE = 16, 64, 256

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)

rng = np.random.default_rng(0)
gamma = (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
beta = (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
w1 = (rng.standard_normal((HIDDEN, INTERMEDIATE)) / np.sqrt(HIDDEN)).astype(np.float32)
b1 = (0.1 * rng.standard_normal(INTERMEDIATE)).astype(np.float32)
w2 = (rng.standard_normal((INTERMEDIATE, HIDDEN)) / np.sqrt(INTERMEDIATE)).astype(np.float32)
b2 = (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
p: Dict[str, Any] = {name: cla.to_device(queue, value) for name, value in
     dict(gamma=gamma, beta=beta, w1=w1, b1=b1, w2=w2, b2=b2).items()}
like_x = cla.empty(queue, (TOKENS, HIDDEN), np.float32)
like_h = cla.empty(queue, (TOKENS, INTERMEDIATE), np.float32)
p["w1"] = ops.prepare_weights(ops.matmul, like_x, p["w1"])
p["w2"] = ops.prepare_weights(ops.matmul, like_h, p["w2"])


def block(x):
    """One pre-norm MLP block: x + W2 · gelu(W1 · layer_norm(x) + b1) + b2."""
    h = ops.layer_norm(x, p["gamma"], p["beta"])
    h = ops.matmul(h, p["w1"], p["b1"], post_ops=["gelu_tanh"])
    return ops.matmul(h, p["w2"], p["b2"], post_ops=[("add", x)])


def reference(x):
    x = x.astype(np.float64)
    h = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gamma + beta
    h = h @ w1 + b1
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    return x + h @ w2 + b2


def relative_error(got, want):
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def new_input():
    return rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32)


program = ops.capture(block, cla.to_device(queue, new_input()))
print(f"captured: {program}, {len(program.captured_by_reference)} arrays by reference")

worst = 0.0
for _ in range(3):
    x = new_input()
    y = program(cla.to_device(queue, x))  # the host does not wait here
    worst = max(worst, relative_error(y.get(), reference(x)))
print(f"replayed: 3 new inputs, largest relative difference from NumPy {worst:.2e}")
assert worst < 1e-4, worst

# Another thread, its own queue: the program makes that queue's results at
# its first replay there.
errors: List[float] = []


def other_thread():
    own = cl.CommandQueue(context, device)
    x = new_input()
    errors.append(relative_error(program(cla.to_device(own, x)).get(), reference(x)))


thread = threading.Thread(target=other_thread)
thread.start()
thread.join()
print(f"thread:   its own queue, largest relative difference {errors[0]:.2e}; "
      f"results kept on {program.queues()} queues")
assert errors[0] < 1e-4 and program.queues() == 2

try:
    program(cla.to_device(queue, np.zeros((2 * TOKENS, HIDDEN), np.float32)))
    raise AssertionError("an input of another shape was taken")
except ValueError as refused:
    print(f"refused:  {refused}")

# The same block eager and replayed, timed here (the host waits once per block).
x = cla.to_device(queue, new_input())


def timed(run, repeats=200):
    for _ in range(20):
        run()
    queue.finish()
    start = time.perf_counter()
    for _ in range(repeats):
        run()
        queue.finish()
    return (time.perf_counter() - start) / repeats * 1e6


eager_us = timed(lambda: block(x))
replay_us = timed(lambda: program(x))
print(f"timed:    eager {eager_us:.0f} µs, replayed {replay_us:.0f} µs per block and wait "
      f"({program.steps} primitives)")
print("ops_replay: OK")
