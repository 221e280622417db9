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

Made for a free-threaded Python, where the threads run the binding's C++ at
once with no GIL between them (they run on a build with a GIL too):

- eight threads executing graph partitions with Python allocators, one
  allocator shared by all and one of each thread's own, every result checked
  and every allocation, allocator and reference accounted for after;
- threads creating engines, profiling streams, memories, descriptors and
  primitives, executing, mapping and dropping them, while another thread
  starts and stops profiling recorders, then every OpenCL reference the
  objects took given back (the context's count), and every execute recorded
  while a recorder ran being one of theirs.
"""

import collections
import gc
import os
import sys
import threading
import time

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, INFERENCE, compile_partition, empty_onednn_caches, goi, oi, plain_desc
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
    gc.collect()  # earlier tests' cycles may still hold the session's engine
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


# ------------------------------------------- graph executes with Python allocators

GRAPH_THREADS = 8
GRAPH_ITERATIONS = 200  # with the live table's mutex removed, 2 of 10 runs failed at 200 (0 of 4 at 12)


@pytest.mark.test_hooks  # the binding's live allocation and allocator counts
@pytest.mark.timeout(600, method="thread")
def test_graph_executes_with_python_allocators_from_eight_threads(cl_context, cl_device):
    """Eight threads execute the attention partition: the even ones a
    partition compiled once on an engine whose Python allocator they all
    share, the odd ones their own engine, allocator and compile (the
    allocator called from one thread only); half of them have the output
    allocated by the allocator too. Every result is checked against NumPy;
    after, every allocation went back to its allocator's free, no allocation
    or allocator is left alive in the binding, and the shared objects' counts
    are where they began."""
    gc.collect()  # earlier tests' cycles may still hold allocators and allocations
    allocations_before, allocators_before = goi._live_allocations(), goi._live_allocators()
    shared = _CountingAllocator()
    engine, partition, compiled = _compiled_attention(cl_device, cl_context, shared.allocator)
    before = [sys.getrefcount(o) for o in (engine, partition, compiled)]
    own_allocators = [None] * GRAPH_THREADS
    done = collections.Counter()

    def worker(index):
        if index % 2 == 0:
            my_engine, my_compiled = engine, compiled
        else:
            own_allocators[index] = _CountingAllocator()
            my_engine = goi.make_engine_with_allocator(cl_device, cl_context,
                                                       own_allocators[index].allocator)
            my_compiled = compile_partition(partition, my_engine)
        with _AttentionWorker(index, cl_context, cl_device, my_engine, partition,
                              out_allocate=index % 4 >= 2) as work:
            for _ in range(GRAPH_ITERATIONS):
                work.run(my_compiled)
                done[index] += 1

    assert _run_threads([worker] * GRAPH_THREADS, join_seconds=500) >= 2, \
        "the threads never ran at the same time"
    assert done == {i: GRAPH_ITERATIONS for i in range(GRAPH_THREADS)}
    with shared.lock:
        callers = set(shared.mallocs)
    assert {f"worker-{i}" for i in range(0, GRAPH_THREADS, 2)} <= callers, \
        f"not every thread sharing the allocator called it: {callers}"
    for index in range(1, GRAPH_THREADS, 2):
        with own_allocators[index].lock:
            assert set(own_allocators[index].mallocs) == {f"worker-{index}"}, \
                "a thread's own allocator was called from another thread"
    gc.collect()
    assert [sys.getrefcount(o) for o in (engine, partition, compiled)] == before, \
        "the threads kept or dropped references to the shared graph objects"
    engine = compiled = None  # dropped; the workers' closure names them
    gc.collect()
    for counting in [shared] + own_allocators[1::2]:
        counting.assert_all_freed()
    assert (goi._live_allocations(), goi._live_allocators()) == \
        (allocations_before, allocators_before + 1 + GRAPH_THREADS // 2), \
        "allocations left in the binding's table, or allocators kept alive"
    own_allocators = shared = counting = None
    gc.collect()
    assert (goi._live_allocations(), goi._live_allocators()) == (allocations_before, allocators_before)


# -------------------------------- objects made, used, recorded and dropped at once

MAKERS = 4
MAKER_ITERATIONS = 15


def _made_used_dropped(device, context, rng, tag):
    """An engine, a profiling queue and stream, memories and a primitive, all
    made here, used (written by mapping, executed, read by mapping) and
    dropped; returns the queue (an int) its executes ran on."""
    engine = oi.make_engine(device, context)
    queue = cl.CommandQueue(context, device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    stream = oi.make_stream(engine, queue)
    alpha = float(rng.integers(1, 4))
    desc = plain_desc([6, 5])
    linear = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, INFERENCE, ALG.eltwise_linear, desc, desc, alpha, -1.0))
    kind = oi.memory_kind.usm if rng.integers(2) else oi.memory_kind.buffer
    src, dst = oi.make_memory(desc, engine, kind), oi.make_memory(desc, engine, kind)
    x = _small_ints(rng, (6, 5))
    view = src.map_data()
    view[...] = x
    src.unmap_data(view)
    linear.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
    stream.wait()
    view = dst.map_data()
    try:
        np.testing.assert_array_equal(view, alpha * x - 1, err_msg=tag)
    finally:
        dst.unmap_data(view)
    return queue.int_ptr


@pytest.mark.timeout(600, method="thread")
def test_objects_made_used_recorded_and_dropped_from_many_threads(cl_device):
    """Four threads make, use and drop every kind of core object on one
    context while another thread starts and stops profiling recorders; every
    result is checked; what a recorder recorded are executes of the threads'
    queues; and once everything is dropped (and oneDNN's caches emptied) the
    context is back to the test's one reference."""
    context = cl.Context([cl_device])
    _made_used_dropped(cl_device, context, np.random.default_rng(0), "warm-up")
    gc.collect()
    empty_onednn_caches()
    assert context.reference_count == 1
    queues = set()
    recorded = []
    lock = threading.Lock()

    def maker(index):
        rng = np.random.default_rng(500 + index)
        for iteration in range(MAKER_ITERATIONS):
            queue = _made_used_dropped(cl_device, context, rng, f"thread {index}, iteration {iteration}")
            with lock:
                queues.add(queue)

    def recording(stop):
        while not stop.is_set():
            with dnnl.profiling.recorder() as rec:
                time.sleep(0.02)
            with lock:
                recorded.extend(rec.executions)

    assert _run_threads([maker] * MAKERS, join_seconds=500, background=[recording]) >= 2, \
        "the threads never ran at the same time"
    assert recorded, "no recorder recorded an execute while the threads ran"
    assert {r.queue for r in recorded} <= queues, "a recorder recorded an execute of no thread's queue"
    assert {(r.kind, r.name) for r in recorded} == {("primitive", "eltwise")}
    recorded = None
    gc.collect()
    empty_onednn_caches()
    assert context.reference_count == 1, (
        f"context reference count {context.reference_count} after every object was dropped: "
        "an object made on some thread kept its context")
