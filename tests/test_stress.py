"""Many threads doing everything at once, for a bounded time.

N threads × M iterations of mixed work chosen at random per iteration (seeded
per thread): a shared primitive on the thread's own stream and on one stream
every thread shares, a shared compiled graph partition whose Python
allocator every thread calls, primitive descriptors and primitives created
on the fly, memory created and dropped with map/unmap round trips. Every
result is checked against NumPy; afterwards every graph allocation has been
freed, and the reference counts of the shared objects are back where they
started (nothing the threads did kept or lost a reference).

`STRESS_ROUNDS=5 python -m pytest tests/test_stress.py` runs the whole mix
five times (with other seeds).
"""

import collections
import gc
import os
import sys
import threading

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, INFERENCE, oi, plain_desc
from test_threads import _AttentionWorker, _compiled_attention, _CountingAllocator, _run_threads, _small_ints

THREADS = 4
ITERATIONS = 30
ROUNDS = int(os.environ.get("STRESS_ROUNDS", "1"))
M, K, N = 8, 16, 12
KINDS = ("own stream", "shared stream", "graph", "usm memory", "new primitive")


class _Shared:
    """What every thread uses: one engine, one stream, one matmul+ReLU
    primitive, one compiled attention partition with a counting allocator."""

    def __init__(self, engine, context, device):
        self.engine = engine
        self.queue = cl.CommandQueue(context, device)
        self.stream = oi.make_stream(engine, self.queue)
        ops = dnnl.post_ops()
        ops.append_eltwise(ALG.eltwise_relu)
        attr = dnnl.primitive_attr()
        attr.set_post_ops(ops)
        self.pd = dnnl.matmul.primitive_desc(engine, plain_desc([M, K]), plain_desc([K, N]),
                                             plain_desc([M, N]), attr)
        self.matmul = dnnl.matmul(self.pd)
        self.counting = _CountingAllocator()
        self.graph_engine, self.partition, self.compiled = _compiled_attention(
            device, context, self.counting.allocator)

    def refcounts(self):
        return {name: sys.getrefcount(getattr(self, name))
                for name in ("engine", "stream", "pd", "matmul", "graph_engine", "compiled")}


def _matmul_round(shared, stream, rng, tag):
    """New memories (made and dropped here), data written through map/unmap,
    the shared primitive on `stream`, the result read back and checked."""
    src, wei, dst = (dnnl.memory(d, shared.engine)
                     for d in (shared.pd.src_desc(), shared.pd.weights_desc(), shared.pd.dst_desc()))
    a, b = _small_ints(rng, (M, K)), _small_ints(rng, (K, N))
    dnnl.arrays.write(src, a)
    dnnl.arrays.write(wei, b)
    shared.matmul.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: wei, dnnl.ARG_DST: dst})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(dst), np.maximum(a @ b, 0), err_msg=tag)


def _usm_round(shared, rng, tag):
    """USM memory allocated by oneDNN, written and read through map/unmap, dropped."""
    mem = oi.make_memory(plain_desc([64]), shared.engine, oi.memory_kind.usm)
    values = rng.standard_normal(64).astype(np.float32)
    view = mem.map_data()
    view[...] = values
    mem.unmap_data(view)
    np.testing.assert_array_equal(dnnl.arrays.read(mem), values, err_msg=tag)


def _new_primitive_round(shared, stream, rng, tag):
    """A descriptor and primitive made here (from oneDNN's primitive cache
    after the first), run once."""
    alpha = float(rng.integers(1, 4))
    desc = plain_desc([4, 5])
    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        shared.engine, INFERENCE, ALG.eltwise_linear, desc, desc, alpha, 1.0))
    src, dst = dnnl.memory(desc, shared.engine), dnnl.memory(desc, shared.engine)
    x = _small_ints(rng, (4, 5))
    dnnl.arrays.write(src, x)
    relu.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(dst), alpha * x + 1, err_msg=tag)


@pytest.mark.timeout(600, method="thread")
@pytest.mark.parametrize("round_index", range(ROUNDS))
def test_mixed_work_from_many_threads(engine, cl_context, cl_device, round_index):
    shared = _Shared(engine, cl_context, cl_device)
    before = shared.refcounts()
    done = collections.Counter()
    lock = threading.Lock()

    def worker(index):
        rng = np.random.default_rng(100 * round_index + index)
        queue = cl.CommandQueue(cl_context, cl_device)
        own_stream = oi.make_stream(shared.engine, queue)
        with _AttentionWorker(index, cl_context, cl_device, shared.graph_engine,
                              shared.partition, out_allocate=index % 2 == 1) as attention:
            for iteration in range(ITERATIONS):
                kind = KINDS[rng.integers(len(KINDS))]
                tag = f"thread {index}, iteration {iteration}, {kind}"
                if kind == "own stream":
                    _matmul_round(shared, own_stream, rng, tag)
                elif kind == "shared stream":
                    _matmul_round(shared, shared.stream, rng, tag)
                elif kind == "graph":
                    attention.run(shared.compiled)
                elif kind == "usm memory":
                    _usm_round(shared, rng, tag)
                else:
                    _new_primitive_round(shared, own_stream, rng, tag)
                with lock:
                    done[kind] += 1
        own_stream.wait()

    assert _run_threads([worker] * THREADS, join_seconds=500) >= 2, \
        "the threads never ran at the same time"
    assert sum(done.values()) == THREADS * ITERATIONS
    assert len(done) == len(KINDS), f"some kinds of work never ran: {dict(done)}"

    gc.collect()
    assert shared.refcounts() == before, "the threads kept or dropped references to shared objects"
    counting = shared.counting
    assert counting.total_mallocs > 0
    shared = None  # dropped; the workers' closure names it
    gc.collect()
    counting.assert_all_freed()
