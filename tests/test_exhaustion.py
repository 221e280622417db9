"""Running out: device memory, a pool with a budget, many engines and streams.

Each exhaustion gives a clear error — dnnl.out_of_memory (also a
MemoryError) where memory ran out — and the process goes on working: after
each, a primitive still computes the right result on the same engine.
"""

import gc

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, INFERENCE, g, goi, oi, plain_desc, usm
from test_threads import _AttentionWorker, _compiled_attention


def assert_engine_works(engine, stream):
    """A ReLU on `engine` gives NumPy's answer."""
    desc = plain_desc([3, 4])
    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, INFERENCE, ALG.eltwise_relu, desc, desc))
    src, dst = dnnl.memory(desc, engine), dnnl.memory(desc, engine)
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    dnnl.arrays.write(src, x)
    relu.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(dst), np.maximum(x, 0))


HUGE = [1 << 16, 1 << 16, 1 << 4]  # 2**36 f32 values: 256 GiB, beyond any device here


@pytest.mark.parametrize("make", [
    pytest.param(lambda desc, engine: dnnl.memory(desc, engine), id="buffer"),
    pytest.param(lambda desc, engine: oi.make_memory(desc, engine, oi.memory_kind.usm), id="usm"),
])
def test_memory_larger_than_the_device_is_out_of_memory(engine, stream, make):
    desc = dnnl.memory.desc(HUGE, dnnl.memory.data_type.f32, dnnl.memory.format_tag.abc)
    for _ in range(3):  # and again: nothing is left half-made
        with pytest.raises(MemoryError) as info:
            make(desc, engine)
        assert isinstance(info.value, dnnl.out_of_memory)
        assert info.value.status == dnnl.status.out_of_memory
    assert_engine_works(engine, stream)


def test_usm_allocation_larger_than_the_device_is_out_of_memory(engine, stream, cl_context, cl_device):
    limit = cl_device.max_mem_alloc_size
    with pytest.raises(dnnl.out_of_memory, match=str(limit + 1)):
        usm.device_alloc(cl_context, cl_device, limit + 1)
    ptr = usm.device_alloc(cl_context, cl_device, 1 << 20)  # a normal one still works
    usm.free(cl_context, ptr)
    assert_engine_works(engine, stream)


def test_graph_tensor_larger_than_the_device_is_out_of_memory(cl_context, cl_device):
    engine = goi.make_engine_with_allocator(cl_device, cl_context, g.allocators.statistics_allocator().allocator)
    lt = g.logical_tensor(0, g.logical_tensor.data_type.f32, HUGE, g.logical_tensor.layout_type.strided)
    with pytest.raises(MemoryError) as info:
        g.tensor(lt, engine, dnnl.MEMORY_ALLOCATE)
    assert isinstance(info.value, dnnl.out_of_memory)
    assert isinstance(info.value.__cause__, MemoryError)  # what the allocator raised


@pytest.mark.timeout(300, method="thread")
def test_caching_pool_that_runs_dry(cl_context, cl_device):
    pool = g.allocators.caching_pool(limit_bytes=0)
    engine, partition, compiled = _compiled_attention(cl_device, cl_context, pool.allocator)
    with _AttentionWorker(0, cl_context, cl_device, engine, partition, out_allocate=False) as work:
        out_port = partition.get_output_ports()[0]
        with pytest.raises(MemoryError, match="ran dry") as info:
            g.tensor(out_port, engine, dnnl.MEMORY_ALLOCATE)
        assert isinstance(info.value, dnnl.out_of_memory)
        assert "ran dry" in str(info.value.__cause__)
        assert pool.stats.live_bytes == 0  # nothing handed out, nothing lost
        # A budget for a few outputs: the pool serves, then runs dry, then
        # serves again once memory comes back.
        size = out_port.get_mem_size()
        pool.limit_bytes = 2 * size
        held = [g.tensor(out_port, engine, dnnl.MEMORY_ALLOCATE) for _ in range(2)]
        with pytest.raises(dnnl.out_of_memory):
            g.tensor(out_port, engine, dnnl.MEMORY_ALLOCATE)
        del held[0]
        gc.collect()
        held.append(g.tensor(out_port, engine, dnnl.MEMORY_ALLOCATE))
        assert pool.hits >= 1  # the freed block served it
        pool.limit_bytes = None
        work.run(compiled)  # the engine and partition still compute right
    with pytest.raises(ValueError, match="must not be negative"):
        pool.limit_bytes = -1
    del held, compiled, engine
    gc.collect()
    pool.release()
    assert pool.stats.live_bytes == 0


@pytest.mark.timeout(600, method="thread")
def test_a_thousand_live_engines_and_streams(cl_context, cl_device):
    queue = cl.CommandQueue(cl_context, cl_device)
    engines, streams = [], []
    for i in range(1000):
        engines.append(oi.make_engine(cl_device, cl_context))
        # half on the user's queue, half each on a queue of its own
        streams.append(oi.make_stream(engines[-1], queue) if i % 2 else dnnl.stream(engines[-1]))
    for i in (0, 1, 499, 998, 999):
        assert_engine_works(engines[i], streams[i])
    del engines, streams
    gc.collect()
    engine = oi.make_engine(cl_device, cl_context)
    assert_engine_works(engine, oi.make_stream(engine, queue))
