"""Soak: create, execute and destroy every kind of object thousands of times.

Every iteration of ``_soak`` makes a oneDNN engine on the user's device and
context (a new one every iteration: oneDNN's primitive cache keeps the kernels,
so this is cheap), streams on a user in-order and a user out-of-order queue,
buffer memory on a user ``cl.Buffer`` and USM memory on a user USM allocation,
buffer and USM memory oneDNN allocates (``MEMORY_ALLOCATE``), maps and unmaps
them, re-creates an eltwise and a matmul primitive, executes them on the
in-order stream and, ordered by events, on the out-of-order one
(``ocl_interop.execute``), calls the accessors (get_context,
get_command_queue, get_mem_object), allocates, copies and frees USM, and every
few iterations compiles and executes a graph partition on an engine with a
statistics allocator (in order). Every result is checked with NumPy. Then
it drops everything.

Measured: resident memory (VmRSS of /proc/self/status, after gc.collect()
and glibc's malloc_trim so that memory freed to the C allocator does not
count) after a warm-up phase and at the end; its growth must stay below the
stated bound (RSS_BOUND_*). The reference counts of the user's context and
queues must be back at their start once everything is dropped (the context
after oneDNN's kernel caches are emptied, see ``helpers.empty_onednn_caches``), and
the statistics allocators must have freed all they allocated.

``test_soak_short`` is in the default run; ``test_soak_long`` is marked
``soak`` (run it with ``python -m pytest -m soak tests/test_soak.py``).
Neither executes graphs out of order: oneDNN 3.13.1 loses about 5 KiB in
each such execution, which would take up much of their bounds. Out-of-order
graph executions are measured alone instead (``test_out_of_order_graph_*``):
no more lost per execution than oneDNN's own loss, and a strict xfail that
watches for oneDNN's fix.
"""

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (ALG, CHILD_ENGINE, INFERENCE, MF, OOO, allocated_inputs, attention_partition,
                     attention_reference, compile_partition, compiled_partition_cache_capacity,
                     download, empty_onednn_caches, g, goi, oi, plain_desc, upload, usm)

SHORT_ITERATIONS = 1000
LONG_ITERATIONS = 20000
# Iterations run before the first RSS sample: the first ones compile kernels
# and fill oneDNN's caches, the OpenCL runtime's pools and the C allocator's
# arenas.
WARMUP_SHORT = 200
WARMUP_LONG = 500
# Resident memory may grow at most this much from the end of the warm-up to
# the end. Measured on the emulated device (Intel's CPU OpenCL runtime),
# without out-of-order graph executions (see the module's docstring): 0.15
# MiB over the 800 measured iterations of the short run, 0.5 MiB over the
# 19500 of the long one. All of the bound is the binding's: the long one fails
# for any leak of about 220 bytes or more per iteration, the short one for
# leaks of about 2.6 KiB or more per iteration.
RSS_BOUND_SHORT = 2 * 1024 * 1024
RSS_BOUND_LONG = 4 * 1024 * 1024
# oneDNN 3.13.1 loses memory in each graph partition execution on an
# out-of-order stream, with or without deps, through either execute (in-order
# ones lose nothing): measured 5.1 KiB per execution (5202 to 5226 bytes over
# 1000 executions), most likely the graph backend's cl_event leak that
# oneDNN PR #5708 fixes upstream. Out-of-order executions may lose at most
# ONEDNN_OOO_LOSS each, so a leak of the binding's own on that path of about
# 0.8 KiB per execution or more fails; and at most OOO_NO_LOSS each once
# oneDNN is fixed (a strict xfail until then).
OOO_EXECUTIONS, OOO_WARMUP = 600, 100
ONEDNN_OOO_LOSS = 6 * 1024
OOO_NO_LOSS = 256

GRAPH_EVERY = 5  # graph compile + execute (in order)
GRAPH_ENGINE_EVERY = 20  # a new graph engine (with a new statistics allocator)
# oneDNN's compiled-partition cache keeps one entry per engine (~70 KiB and a
# reference to the context each, up to 1024 entries by default): memory that
# is bounded, but only after 1024 engines. The soak lowers the capacity so
# that the cache is full within the warm-up and its plateau is not mistaken
# for (or does not hide) a leak.
PARTITION_CACHE_CAPACITY = 4

# eltwise relu and matmul inputs: results exact in f32
ELT_DIMS = (8, 16)
X = ((np.arange(128, dtype=np.float32) - 63.5) / 8).reshape(ELT_DIMS)
RELU = np.maximum(X, 0)
M, K, N = 4, 6, 5
A = (np.arange(M * K, dtype=np.float32).reshape(M, K) % 7) - 3
B = (np.arange(K * N, dtype=np.float32).reshape(K, N) % 5) - 2
C = A @ B
USM_BYTES = 4096

BATCH, SEQ, HEAD = 1, 8, 4
SHAPE = (BATCH, SEQ, HEAD)
_RNG = np.random.default_rng(5)
QKV = [_RNG.standard_normal(SHAPE).astype(np.float32) for _ in range(3)]

ATTENTION = attention_reference(*QKV)


# ---------------------------------------------------------------- helpers

def _rss_bytes():
    gc.collect()
    _LIBC.malloc_trim(0)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


_LIBC = ctypes.CDLL(None)


@pytest.fixture
def small_partition_cache():
    with compiled_partition_cache_capacity(PARTITION_CACHE_CAPACITY):
        yield


ELT = plain_desc(ELT_DIMS)


# ------------------------------------------------------------- the body

class _Soak:
    def __init__(self, device):
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device)
        self.ooo_queue = cl.CommandQueue(self.context, device, properties=OOO)
        self.partition = attention_partition(BATCH, SEQ, HEAD)
        self.graph_engine = None
        self.graph_stats = None  # the statistics of the graph engine's allocator
        self.graph_engines = 0

    def counts(self):
        return {"context": self.context.reference_count, "queue": self.queue.reference_count,
                "ooo_queue": self.ooo_queue.reference_count}

    def iteration(self, i):
        context, device, queue, ooo_queue = self.context, self.device, self.queue, self.ooo_queue
        engine = oi.make_engine(device, context)
        assert oi.get_context(engine).int_ptr == context.int_ptr
        stream = oi.make_stream(engine, queue)
        ooo = oi.make_stream(engine, ooo_queue)
        assert oi.get_command_queue(ooo).int_ptr == ooo_queue.int_ptr

        # memory of every kind
        user_buffer = cl.Buffer(context, MF.READ_WRITE, X.nbytes)
        on_buffer = oi.make_memory(ELT, engine, user_buffer)
        assert oi.get_mem_object(on_buffer).int_ptr == user_buffer.int_ptr
        user_usm = usm.allocation(context, X.nbytes, "shared", device)
        on_usm = oi.make_memory(ELT, engine, oi.memory_kind.usm, user_usm.ptr)
        usm_allocated = oi.make_memory(ELT, engine, oi.memory_kind.usm)
        buffer_allocated = oi.make_memory(ELT, engine, oi.memory_kind.buffer)
        allocated = dnnl.memory(ELT, engine)

        view = on_buffer.map_data()
        view[...] = X
        on_buffer.unmap_data(view)
        del view

        # primitives, re-created every iteration, in order
        relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
            engine, INFERENCE, ALG.eltwise_relu, ELT, ELT, 0.0, 0.0))
        matmul = dnnl.matmul(dnnl.matmul.primitive_desc(engine, plain_desc((M, K)), plain_desc((K, N)),
                                                        plain_desc((M, N))))
        src, weights, dst = (dnnl.memory(plain_desc(s), engine) for s in ((M, K), (K, N), (M, N)))
        dnnl.arrays.write(src, A)
        dnnl.arrays.write(weights, B)
        relu.execute(stream, {dnnl.ARG_SRC: on_buffer, dnnl.ARG_DST: usm_allocated})
        assert oi.execute(relu, stream, {dnnl.ARG_SRC: usm_allocated,
                                         dnnl.ARG_DST: buffer_allocated}) is None
        matmul.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: weights, dnnl.ARG_DST: dst})
        stream.wait()
        np.testing.assert_array_equal(dnnl.arrays.read(buffer_allocated), RELU)
        np.testing.assert_array_equal(dnnl.arrays.read(dst), C)

        # out of order, ordered by events (a user event gates the first)
        gate = cl.UserEvent(context)
        first = oi.execute(relu, ooo, {dnnl.ARG_SRC: buffer_allocated, dnnl.ARG_DST: on_usm}, [gate])
        second = oi.execute(relu, ooo, {dnnl.ARG_SRC: on_usm, dnnl.ARG_DST: allocated}, [first])
        gate.set_status(cl.command_execution_status.COMPLETE)
        second.wait()
        np.testing.assert_array_equal(user_usm.as_array(np.float32, ELT_DIMS), RELU)
        np.testing.assert_array_equal(dnnl.arrays.read(allocated), RELU)

        # USM alloc, copy, free
        ptr = usm.device_alloc(context, device, USM_BYTES)
        payload = np.arange(USM_BYTES // 4, dtype=np.float32) + i
        usm.memcpy(queue, ptr, payload, USM_BYTES).wait()
        back = np.empty_like(payload)
        usm.memcpy(ooo_queue, back, ptr, USM_BYTES).wait()
        np.testing.assert_array_equal(back, payload)
        usm.free(context, ptr)

        if i % GRAPH_EVERY == 0:
            self.graph(i)

    def graph(self, i):
        if i % GRAPH_ENGINE_EVERY == 0 or self.graph_engine is None:
            self.retire_graph_engine()
            statistics = g.allocators.statistics_allocator()
            self.graph_stats = statistics.stats
            self.graph_engine = goi.make_engine_with_allocator(self.device, self.context,
                                                               statistics.allocator)
            self.graph_engines += 1
        engine, partition, queue = self.graph_engine, self.partition, self.queue
        compiled = compile_partition(partition, engine)
        inputs = allocated_inputs(partition, engine, queue, QKV)
        output = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
        stream = oi.make_stream(engine, queue)
        compiled.execute(stream, inputs, [output])
        stream.wait()
        result = download(queue, output.get_data_handle(), SHAPE)
        np.testing.assert_allclose(result, ATTENTION, rtol=1e-5, atol=1e-5)

    def retire_graph_engine(self):
        """Drops the graph engine (the last object made on it): its allocator
        must have freed everything it allocated."""
        if self.graph_engine is None:
            return
        stats = self.graph_stats
        self.graph_engine = self.graph_stats = None
        assert stats.allocations > 0
        assert (stats.allocations, stats.live_bytes) == (stats.frees, 0), stats


def _soak(device, iterations, warmup, bound):
    soak = _Soak(device)
    start_counts = soak.counts()
    rss = {"start": _rss_bytes()}
    samples = []
    sample_every = max(iterations // 50, 10)
    started = time.monotonic()
    for i in range(iterations):
        soak.iteration(i)
        if i + 1 == warmup:
            rss["after warm-up"] = _rss_bytes()
            counts_after_warmup = soak.counts()
        if (i + 1) % sample_every == 0:
            samples.append((i + 1, _rss_bytes() >> 10))
    rss["end"] = _rss_bytes()
    elapsed = time.monotonic() - started
    counts_end = soak.counts()
    soak.retire_graph_engine()
    assert soak.graph_engines == -(-iterations // GRAPH_ENGINE_EVERY)

    growth = rss["end"] - rss["after warm-up"]
    report = (f"{iterations} iterations in {elapsed:.1f} s; VmRSS start {rss['start'] >> 10} KiB, "
              f"after the warm-up ({warmup} iterations) {rss['after warm-up'] >> 10} KiB, "
              f"end {rss['end'] >> 10} KiB: growth {growth >> 10} KiB "
              f"({growth / (iterations - warmup):.0f} bytes per iteration); "
              f"samples (iteration, KiB): {samples}")
    print(report)
    assert growth < bound, (f"resident memory grew by {growth >> 10} KiB after the warm-up "
                            f"(bound {bound >> 10} KiB): {report}")
    # the queues: only what is alive holds them (nothing is, by now)
    assert counts_end["queue"] == start_counts["queue"], (start_counts, counts_end)
    assert counts_end["ooo_queue"] == start_counts["ooo_queue"], (start_counts, counts_end)
    # the context: oneDNN's caches hold it a fixed number of times once they
    # are full (the graph engine alive both times), so no growth after warm-up
    assert counts_end["context"] == counts_after_warmup["context"], (counts_after_warmup, counts_end)
    context = soak.context
    del soak
    empty_onednn_caches()
    assert context.reference_count == 1, (
        f"context reference count {context.reference_count} once everything was dropped")
    return rss


@pytest.mark.timeout(600)
def test_soak_short(cl_device, small_partition_cache):
    _soak(cl_device, SHORT_ITERATIONS, WARMUP_SHORT, RSS_BOUND_SHORT)


@pytest.fixture(scope="module")
def out_of_order_graph_loss():
    """Resident memory lost per graph execution on an out-of-order stream
    (through graph.ocl_interop.execute, without deps, result checked), after
    a warm-up; bytes per execution. Measured in a fresh process: in the
    suite's, earlier tests leave memory freed to the allocators of the
    OpenCL runtime, which a leak then reuses without growing the resident
    size (the strict xfail below passed so, twice)."""
    code = CHILD_ENGINE + textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import test_soak
        print(test_soak.out_of_order_loss(device))
    """)
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=500)
    assert child.returncode == 0, child.stderr[-3000:]
    return float(child.stdout.split()[-1])


def out_of_order_loss(cl_device):
    """The fixture's measurement (in the fresh process it starts)."""
    soak = _Soak(cl_device)
    engine = goi.make_engine_with_allocator(cl_device, soak.context,
                                            g.allocators.statistics_allocator().allocator)
    compiled = compile_partition(soak.partition, engine)
    inputs = allocated_inputs(soak.partition, engine, soak.queue, QKV)
    output = g.tensor(soak.partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    stream = oi.make_stream(engine, soak.ooo_queue)

    def execute():
        event = goi.execute(compiled, stream, inputs, [output])
        event.wait()

    for _ in range(OOO_WARMUP):
        execute()
    # Free heap pages go back to the system first: a leak filling pages the
    # process had freed earlier (other tests' memory) would not grow the
    # resident size (an XPASS once, 2026-11-27, after tests were added)
    ctypes.CDLL(None).malloc_trim(0)
    start = _rss_bytes()
    for _ in range(OOO_EXECUTIONS):
        execute()
    lost = (_rss_bytes() - start) / OOO_EXECUTIONS
    upload(soak.queue, output.get_data_handle(), np.zeros(SHAPE, np.float32))
    execute()
    np.testing.assert_allclose(download(soak.queue, output.get_data_handle(), SHAPE), ATTENTION,
                               rtol=1e-5, atol=1e-5)
    return lost


def test_out_of_order_graph_executions_lose_no_more_than_onednn(out_of_order_graph_loss):
    assert out_of_order_graph_loss < ONEDNN_OOO_LOSS, (
        f"{out_of_order_graph_loss:.0f} bytes lost per out-of-order graph execution")


class GraphExecutionsLoseMemory(Exception):
    """Out-of-order graph executions lose memory (oneDNN's loss: see
    ONEDNN_OOO_LOSS)."""


@pytest.mark.xfail(strict=True, raises=GraphExecutionsLoseMemory,
                   reason="oneDNN 3.13.1 loses ~5 KiB per graph execution on an out-of-order stream "
                          "(docs/known-problems.md)")
def test_out_of_order_graph_executions_lose_nothing(out_of_order_graph_loss):
    if out_of_order_graph_loss >= OOO_NO_LOSS:
        raise GraphExecutionsLoseMemory(
            f"{out_of_order_graph_loss:.0f} bytes lost per out-of-order graph execution")


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_soak_long(cl_device, small_partition_cache):
    # Without out-of-order graph executions: see ONEDNN_OOO_LOSS.
    _soak(cl_device, LONG_ITERATIONS, WARMUP_LONG, RSS_BOUND_LONG)
