"""Fused causal attention from dnnl.graph.patterns on USM inputs.

Q, K and V are uploaded to USM device memory; dnnl.graph.patterns.sdpa
builds oneDNN's causal SDPA graph on an engine whose graph memory comes from
a dnnl.graph.allocators.caching_pool, and compiles it once. The first call
(cold: compiling and the first execution) and later ones (warm: the cached
pattern, the pool's blocks) are timed; the result is checked against NumPy.
"""

import dnnl_ocl_interop as dnnl

print(f"device:     {dnnl.emulation.ensure_device()}")

import time  # noqa: E402

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

g = dnnl.graph
BATCH, HEADS, SEQ_Q, SEQ_KV, HEAD_SIZE = 1, 2, 32, 128, 32
WARM_RUNS = 5

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)
pool = g.allocators.caching_pool()
engine = g.ocl_interop.make_engine_with_allocator(device, context, pool.allocator)
stream = dnnl.ocl_interop.make_stream(engine, queue)

rng = np.random.default_rng(7)
q = rng.uniform(-1, 1, (BATCH, HEADS, SEQ_Q, HEAD_SIZE)).astype(np.float32)
k, v = (rng.uniform(-1, 1, (BATCH, HEADS, SEQ_KV, HEAD_SIZE)).astype(np.float32)
        for _ in range(2))
blocks = []
for array in (q, k, v):
    block = dnnl.usm.allocation(context, array.nbytes, "device", device)
    dnnl.usm.memcpy(queue, block.ptr, array, array.nbytes)  # done on return
    blocks.append(block)


def attention():
    pattern = g.patterns.sdpa(engine, BATCH, HEADS, SEQ_Q, SEQ_KV, HEAD_SIZE, mask="causal")
    output, _ = pattern(stream, *(b.ptr for b in blocks))
    stream.wait()
    return pattern, output


start = time.perf_counter()
pattern, output = attention()
cold = time.perf_counter() - start
start = time.perf_counter()
for _ in range(WARM_RUNS):
    pattern, output = attention()
warm = (time.perf_counter() - start) / WARM_RUNS
print(f"pattern:    {pattern.implementation}, scratchpad {pattern.scratchpad_bytes} bytes")
print(f"timings:    cold {cold * 1e3:.1f} ms (build, compile, run), "
      f"warm {warm * 1e3:.1f} ms a call")
print(f"cache:      {g.patterns.cache_info()}; pool hits {pool.hits}, misses {pool.misses}")
for info in pattern.dispatched(stream, *(b.ptr for b in blocks)):
    print(f"dispatched: {info['partition_kind']} partition of {len(info['ops'])} ops -> "
          f"{info['implementation']} ({info['backend']}), {info['time_ms']:.2f} ms; "
          f"separate kernels {info['separate_kernels']}")

result = np.empty(q.shape, np.float32)
dnnl.usm.memcpy(queue, result, output.get_data_handle(), result.nbytes)
scores = q @ k.swapaxes(-1, -2) / np.sqrt(HEAD_SIZE)
rows, cols = np.arange(SEQ_Q)[:, None], np.arange(SEQ_KV)[None, :]
scores = np.where(cols <= rows + SEQ_KV - SEQ_Q, scores, -np.inf)  # bottom-right causal
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
expected = weights / weights.sum(axis=-1, keepdims=True) @ v
error = float(np.abs(result - expected).max())
print(f"result:     max abs error against NumPy {error:.2e}")
assert error < 1e-4
assert pattern.fused and g.patterns.cache_info()["hits"] == WARM_RUNS
assert pool.hits > 0, "warm calls should reuse the pool's blocks"

del output, pattern
g.patterns.clear_cache()
for block in blocks:
    block.free()
print("attention: OK")
