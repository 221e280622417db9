"""Graph engines whose memory comes from Python allocators.

dnnl.graph.ocl_interop.make_allocator wraps two Python callables in a
oneDNN graph allocator (the binding's trampoline); make_engine_with_allocator
makes a GPU engine on the user's device and context that asks it for the
memory of compiled partitions (scratch) and of MEMORY_ALLOCATE tensors.
These tests run an attention block (MatMul(Q, K^T) -> SoftMax -> MatMul(., V)),
which oneDNN fuses into one partition that needs scratch memory, and check:
the calls and their arguments, that every allocation is freed exactly once
once everything is dropped, the ready-made allocators of
dnnl.graph.allocators, that each allocator gets only its own calls, failing
allocators (exceptions and bad returns chained as __cause__ of dnnl.runtime_error,
and recovery), execution ordered by OpenCL events on out-of-order queues,
engines made from a cache blob, the limit on live allocators, oneDNN's
default allocator and host allocators (dnnl.graph.allocator), engines of a
device index (dnnl.graph.make_engine_with_allocator), and a user scratchpad
keeping execute off the allocator.
Results are compared with NumPy.
"""

import collections
import contextlib
import gc
import threading
import time
import weakref

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (OOO, allocated_inputs, attention_partition, attention_reference,
                     compile_partition, download, g, goi, oi, upload, usm)

BATCH, SEQ, HEAD = 2, 16, 8
SHAPE = (BATCH, SEQ, HEAD)


# --------------------------------------------------------------- helpers

@pytest.fixture(scope="module")
def partition():
    return attention_partition(BATCH, SEQ, HEAD)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2024)
    return [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3)]


def _check(result, data):
    np.testing.assert_allclose(result, attention_reference(*data), rtol=1e-5, atol=1e-5)


def _engine_stream_compiled(partition, device, context, allocator, queue):
    """A graph engine of `allocator`, a stream of it on `queue`, and
    `partition` compiled for it."""
    engine = goi.make_engine_with_allocator(device, context, allocator)
    return engine, oi.make_stream(engine, queue), compile_partition(partition, engine)


class _UserBuffers:
    """Input/output USM buffers owned by the test (not by any allocator)."""

    def __init__(self, context, device, queue, data):
        self.queue = queue
        self.blocks = [usm.allocation(context, int(np.prod(SHAPE)) * 4, "device", device)
                       for _ in range(4)]
        for block, array in zip(self.blocks, data):
            upload(queue, block.ptr, array)

    def tensors(self, partition, engine):
        ins = [g.tensor(p, engine, self.blocks[p.get_id()].ptr) for p in partition.get_input_ports()]
        outs = [g.tensor(partition.get_output_ports()[0], engine, self.blocks[3].ptr)]
        return ins, outs

    def clear_output(self):
        upload(self.queue, self.blocks[3].ptr, np.zeros(SHAPE, np.float32))

    def result(self):
        return download(self.queue, self.blocks[3].ptr, SHAPE)

    def free(self):
        for block in self.blocks:
            block.free()


@pytest.fixture
def user_buffers(cl_context, cl_device, cl_queue, data):
    buffers = _UserBuffers(cl_context, cl_device, cl_queue, data)
    yield buffers
    buffers.free()


class _Recorder:
    """malloc/free callables that hand out USM device memory and log calls.

    ``fail`` decides, from the 0-based malloc call index, what malloc does
    instead of allocating (None: allocate normally). The callables hold only
    the recorder's log, not this object.
    """

    def __init__(self, fail=None):
        log = self.log = {"malloc": [], "free": [], "returned": [], "order": []}
        self.fail = fail
        recorder = weakref.ref(self)

        def malloc(size, alignment, device, context):
            index = len(log["malloc"])
            log["malloc"].append((size, alignment, device, context))
            owner = recorder()
            action = owner.fail(index) if owner is not None and owner.fail else None
            if action is not None:
                return action(size, alignment, device, context)
            ptr = usm.device_alloc(context, device, size, alignment)
            log["returned"].append(ptr)
            log["order"].append(("malloc", ptr))
            return ptr

        def free(ptr, device, context, event):
            log["free"].append((ptr, device, context, event))
            log["order"].append(("free", ptr))
            if event is not None:
                event.wait()
            usm.free(context, ptr)

        self.callables = (weakref.ref(malloc), weakref.ref(free))
        self.allocator = goi.make_allocator(malloc, free)

    def freed_pointers(self):  # ptr -> number of frees
        return collections.Counter(entry[0] for entry in self.log["free"])


def _unbalanced(log):
    """Replays a _Recorder's calls: the pointers freed while not live, and
    those still live at the end."""
    live, bad_frees = collections.Counter(), []
    for call, ptr in log["order"]:
        if call == "malloc":
            live[ptr] += 1
        elif live[ptr] > 0:
            live[ptr] -= 1
        else:
            bad_frees.append(ptr)
    return bad_frees, +live


def _run_flow(partition, engine, stream, queue, data):
    """compile, MEMORY_ALLOCATE tensors, execute: every allocator use of a
    normal run. Returns the result (tensors are dropped on return)."""
    compiled = compile_partition(partition, engine)
    ins = allocated_inputs(partition, engine, queue, data)
    out = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    compiled.execute(stream, ins, [out])
    stream.wait()
    return download(queue, out.get_data_handle(), SHAPE)


# --------------------------------------------- calls, arguments, lifetime

def test_statistics_allocator_used_by_execute_and_all_freed(partition, data, cl_device, cl_context,
                                                             cl_queue, user_buffers):
    statistics = g.allocators.statistics_allocator()
    stats = statistics.stats
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                       statistics.allocator, cl_queue)
    ins, outs = user_buffers.tensors(partition, engine)
    before = stats.allocations

    compiled.execute(stream, ins, outs)
    stream.wait()
    _check(user_buffers.result(), data)
    after_one = stats.allocations
    assert after_one > before, "execute did not ask the allocator for memory"
    assert stats.peak_bytes > 0

    # the engine keeps the allocator's callables: drop the Python wrapper
    del statistics
    gc.collect()
    user_buffers.clear_output()
    for _ in range(2):
        compiled.execute(stream, ins, outs)
    stream.wait()
    _check(user_buffers.result(), data)
    assert stats.allocations == after_one + 2 * (after_one - before)

    allocated = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    assert stats.sizes.get(allocated.get_data_handle(), 0) >= allocated.get_logical_tensor().get_mem_size()
    assert stats.live_bytes > 0

    del allocated, compiled, ins, outs, stream, engine
    gc.collect()
    assert stats.allocations > 0
    assert stats.allocations == stats.frees
    assert stats.live_bytes == 0
    assert stats.sizes == {}


def test_every_allocation_freed_exactly_once(partition, data, cl_device, cl_queue):
    context = cl.Context([cl_device])  # nothing else allocates in it
    queue = cl.CommandQueue(context, cl_device)
    recorder = _Recorder()
    log = recorder.log
    engine = goi.make_engine_with_allocator(cl_device, context, recorder.allocator)
    stream = oi.make_stream(engine, queue)
    ooo_stream = oi.make_stream(engine, cl.CommandQueue(context, cl_device, properties=OOO))
    compiled = compile_partition(partition, engine)
    ins = allocated_inputs(partition, engine, queue, data)
    out = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    handles = {t.get_data_handle() for t in ins + [out]}
    assert handles <= set(log["returned"]), "MEMORY_ALLOCATE tensors do not use the allocator"

    for _ in range(2):
        compiled.execute(stream, ins, [out])
        goi.execute(compiled, ooo_stream, ins, [out]).wait()
    stream.wait()
    _check(download(queue, out.get_data_handle(), SHAPE), data)
    assert len(log["returned"]) > len(handles), "execute did not allocate"

    callables = recorder.callables
    assert all(ref() is not None for ref in callables)
    del compiled, ins, out, stream, ooo_stream, engine, recorder
    gc.collect()

    bad_frees, still_live = _unbalanced(log)
    assert bad_frees == [], "free got pointers that were not live allocations"
    assert not still_live, "allocations never freed"
    for ptr in set(log["returned"]):
        assert usm.pointer_type(context, ptr) == "unknown"
    assert all(ref() is None for ref in callables), "the allocator's callables were kept alive"


def test_callback_arguments(partition, data, cl_device, cl_context, cl_queue, cl_ooo_queue,
                            user_buffers):
    recorder = _Recorder()
    log = recorder.log
    engine = goi.make_engine_with_allocator(cl_device, cl_context, recorder.allocator)
    assert oi.get_context(engine) == cl_context
    compiled = compile_partition(partition, engine)
    ins, outs = user_buffers.tensors(partition, engine)

    in_order = oi.make_stream(engine, cl_queue)
    compiled.execute(in_order, ins, outs)
    in_order.wait()
    in_order_frees = list(log["free"])

    ooo = oi.make_stream(engine, cl_ooo_queue)
    free_count = len(log["free"])
    event = goi.execute(compiled, ooo, ins, outs)
    assert isinstance(event, cl.Event)
    event.wait()
    ooo_frees = log["free"][free_count:]
    _check(user_buffers.result(), data)

    assert log["malloc"] and in_order_frees and ooo_frees
    for size, alignment, device, context in log["malloc"]:
        assert type(size) is int and size > 0
        # oneDNN passes 0 (no particular alignment) for graph memory
        assert type(alignment) is int and alignment >= 0 and alignment & (alignment - 1) == 0
        assert isinstance(device, cl.Device) and device == cl_device
        assert isinstance(context, cl.Context) and context == cl_context
    for ptr, device, context, event in log["free"]:
        assert ptr in log["returned"]
        assert isinstance(device, cl.Device) and device == cl_device
        assert isinstance(context, cl.Context) and context == cl_context
        assert event is None or isinstance(event, cl.Event)
    # scratch of an out-of-order execution can only be freed after its event
    assert all(isinstance(entry[3], cl.Event) for entry in ooo_frees)
    assert len(log["returned"]) == len(log["malloc"])
    for (_, alignment, _, _), ptr in zip(log["malloc"], log["returned"]):
        assert ptr % max(alignment, 1) == 0


@pytest.mark.test_hooks
def test_tensor_memory_allocate_calls_allocator(partition, cl_device, cl_context):
    recorder = _Recorder()
    log = recorder.log
    engine = goi.make_engine_with_allocator(cl_device, cl_context, recorder.allocator)
    port = partition.get_output_ports()[0]
    tensor = g.tensor(port, engine, dnnl.MEMORY_ALLOCATE)
    assert len(log["malloc"]) == 1
    assert log["malloc"][0][0] >= port.get_mem_size()
    assert tensor.get_data_handle() == log["returned"][0]
    assert log["free"] == []
    del tensor
    gc.collect()
    assert [entry[0] for entry in log["free"]] == log["returned"]
    empty = g.tensor(port, engine, dnnl.MEMORY_NONE)
    assert empty.get_data_handle() == 0
    assert len(log["malloc"]) == 1, "MEMORY_NONE must not allocate"


# --------------------------------------------------------- caching pool

def _cached_blocks(pool):
    """{pointer: event handle (0: ready, or none given)} of the blocks the
    pool holds, oldest first per size."""
    return dict(pool._pool._cached())


def _pool_partition(pool, partition, data, cl_device):
    """The partition compiled on an engine of `pool`, in a private context and
    in-order queue, with user USM buffers (made with the real allocator)
    holding `data` and the output: (context, queue, engine, stream, compiled,
    blocks, ins, outs)."""
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context, cl_device)
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, context,
                                                       pool.allocator, queue)
    blocks = [usm.allocation(context, int(np.prod(SHAPE)) * 4, "device", cl_device) for _ in range(4)]
    for block, array in zip(blocks, data):
        upload(queue, block.ptr, array)
    ins = [g.tensor(p, engine, blocks[p.get_id()].ptr) for p in partition.get_input_ports()]
    outs = [g.tensor(partition.get_output_ports()[0], engine, blocks[3].ptr)]
    return context, queue, engine, stream, compiled, blocks, ins, outs


@pytest.mark.test_hooks
@pytest.mark.timeout(300)
def test_caching_pool_serves_the_steady_state_without_device_allocations(partition, data, cl_device):
    """Once warm, the pool serves every per-execute allocation (the
    partition's scratchpad) from its cache: no driver allocation at all over
    many executes on an in-order queue."""
    pool = g.allocators.caching_pool()
    context, queue, engine, stream, compiled, blocks, ins, outs = _pool_partition(
        pool, partition, data, cl_device)
    for _ in range(3):  # warm up
        compiled.execute(stream, ins, outs)
    stream.wait()
    misses, hits = pool.misses, pool.hits
    cached = set(_cached_blocks(pool))
    runs = 30
    for _ in range(runs):
        compiled.execute(stream, ins, outs)
    stream.wait()
    _check(download(queue, blocks[3].ptr, SHAPE), data)
    assert pool.hits - hits >= runs, "some execute asked nothing of the allocator"
    assert pool.misses == misses, "the pool went to the device in steady state"
    assert set(_cached_blocks(pool)) == cached, "the pool holds other blocks than before"
    del ins, outs, compiled, stream, engine
    gc.collect()
    pool.release()
    for block in blocks:
        block.free()


@pytest.mark.test_hooks
@pytest.mark.timeout(300)
def test_caching_pool_reuses_and_frees_everything(partition, data, cl_device):
    pool = g.allocators.caching_pool()
    context, queue, engine, stream, compiled, blocks, ins, outs = _pool_partition(
        pool, partition, data, cl_device)

    runs = 5
    for _ in range(runs):
        compiled.execute(stream, ins, outs)
    stream.wait()
    _check(download(queue, blocks[3].ptr, SHAPE), data)
    assert pool.misses >= 1
    assert pool.hits >= runs - 1, "the pool did not reuse its blocks"
    pool_pointers = set(_cached_blocks(pool))
    assert 0 < len(pool_pointers) == pool.misses < runs, "every execute got fresh driver memory"
    assert pool.stats.live_bytes == 0 and pool.stats.allocations == pool.stats.frees
    assert pool.stats.sizes == {}
    assert pool.cached_bytes > 0 and pool.stats.peak_bytes == pool.cached_bytes
    assert all(usm.pointer_type(context, ptr) == "device" for ptr in pool_pointers)

    pool.release()
    assert pool.cached_bytes == 0 and _cached_blocks(pool) == {}
    for ptr in pool_pointers:
        assert usm.pointer_type(context, ptr) == "unknown", "release() did not free a block"
    misses = pool.misses
    compiled.execute(stream, ins, outs)
    stream.wait()
    assert pool.misses == misses + 1  # nothing cached any more
    _check(download(queue, blocks[3].ptr, SHAPE), data)

    last = set(_cached_blocks(pool))
    assert len(last) == 1
    for block in blocks:
        block.free()
    del compiled, ins, outs, stream, engine, pool
    gc.collect()
    for ptr in last:
        assert usm.pointer_type(context, ptr) == "unknown", \
            "a block of the pool was not freed once the pool was gone"


@pytest.mark.test_hooks
def test_caching_pool_without_reuse_without_event_needs_no_blocking_free(
        partition, data, cl_device, cl_context, cl_queue, user_buffers):
    """reuse_without_event=False: on an in-order queue the pool gets a marker
    event for each execute's scratchpad (in_order_events) and frees nothing
    inside execute: a block comes back once its event completed (a block
    freed at once would make every malloc go to the device)."""
    pool = g.allocators.caching_pool(reuse_without_event=False)
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                       pool.allocator, cl_queue)
    ins, outs = user_buffers.tensors(partition, engine)
    for _ in range(3):
        compiled.execute(stream, ins, outs)
        stream.wait()  # the block's marker completes before the next malloc
    _check(user_buffers.result(), data)
    assert pool.misses == 1 and pool.hits == 2
    assert len(_cached_blocks(pool)) == 1
    # a tensor dropped (no event, outside an execute) is freed at once
    tensor = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    ptr = tensor.get_data_handle()
    del tensor
    gc.collect()
    assert ptr not in _cached_blocks(pool) and usm.pointer_type(cl_context, ptr) == "unknown"
    del ins, outs, compiled, stream, engine
    gc.collect()
    pool.release()


@pytest.mark.test_hooks
def test_caching_pool_through_the_trampoline(cl_device, cl_context):
    """The pool's allocator as oneDNN calls it: blocks by size class, reused
    by size and alignment, its statistics, and a limit that runs dry as a
    MemoryError chained to dnnl.out_of_memory."""
    pool = g.allocators.caching_pool(granularity=1024)
    pool.allocator._malloc_and_free(100, 0, cl_device, cl_context, count=3)
    assert (pool.misses, pool.hits, pool.stats.allocations, pool.stats.frees) == (3, 0, 3, 3)
    assert pool.cached_bytes == 3 * 1024 and pool.stats.peak_bytes == 3 * 1024
    pool.allocator._malloc_and_free(1000, 0, cl_device, cl_context, count=2)  # the same class
    assert (pool.misses, pool.hits) == (3, 2)
    pool.allocator._malloc_and_free(1025, 0, cl_device, cl_context)  # the next class
    assert pool.misses == 4 and pool.cached_bytes == 3 * 1024 + 2048
    pool.limit_bytes = 4 * 1024
    with pytest.raises(MemoryError, match="ran dry") as info:  # 2048 more do not fit
        pool.allocator._malloc_and_free(1025, 0, cl_device, cl_context, count=3)
    assert isinstance(info.value, dnnl.out_of_memory) and isinstance(info.value.__cause__, MemoryError)
    assert pool.stats.live_bytes == 0
    with pytest.raises(ValueError, match="must not be negative"):
        pool.limit_bytes = -1
    with pytest.raises(TypeError):
        pool.limit_bytes = "1 KiB"
    pool.limit_bytes = None
    assert pool.limit_bytes is None
    with pytest.raises(ValueError):
        g.allocators.caching_pool(granularity=0)
    pool.release()
    assert pool.cached_bytes == 0


@pytest.mark.test_hooks
def test_caching_pool_refuses_a_size_no_multiple_of_its_granularity_holds(cl_device, cl_context):
    """A size whose rounding up to the granularity passes 2**64 - 1 is
    refused as exhausted (MemoryError chained to dnnl.out_of_memory), not
    rounded around to a small block; the largest size that rounds (to
    18446744073709551000, the largest multiple of 1000 in 64 bits) goes to
    the driver, which refuses it as too large."""
    pool = g.allocators.caching_pool(granularity=1000)
    for size in (2**64 - 1, 2**64 - 615):
        with pytest.raises(MemoryError, match=f"{size} bytes asked for cannot be rounded up to a "
                           "multiple of granularity=1000") as info:
            pool.allocator._malloc_and_free(size, 0, cl_device, cl_context)
        assert isinstance(info.value, dnnl.out_of_memory)
    with pytest.raises(MemoryError, match="USM allocation of 18446744073709551000 bytes failed"):
        pool.allocator._malloc_and_free(2**64 - 616, 0, cl_device, cl_context)
    assert (pool.stats.allocations, pool.cached_bytes) == (0, 0)
    pool.release()


def test_caching_pool_refuses_sizes_it_cannot_hold_naming_the_parameter():
    """granularity: an int from 1 to 2**63 (sizes up to 2**63 round to a
    multiple of it in 64 bits; any int, not only powers of two);
    limit_bytes: an int from 0 to 2**64 - 1, or None. Nothing beyond turns
    into a cast error or a pool that fails later with another message."""
    pool_of = g.allocators.caching_pool
    for bad in (1.5, True, "256"):
        with pytest.raises(TypeError, match="granularity must be an int"):
            pool_of(granularity=bad)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="granularity must be positive"):
            pool_of(granularity=bad)
    for bad in (2**63 + 1, 2**64 - 1, 2**70):
        with pytest.raises(ValueError, match=r"granularity must be at most 2\*\*63"):
            pool_of(granularity=bad)
    for good in (1, 1000, 2**63):
        pool_of(granularity=good)
    with pytest.raises(ValueError, match=r"limit_bytes must be at most 2\*\*64 - 1"):
        pool_of(limit_bytes=2**64)

    pool = pool_of(limit_bytes=2**64 - 1)
    assert pool.limit_bytes == 2**64 - 1
    pool.limit_bytes = 4096
    for bad in (2**64, 2**70):
        with pytest.raises(ValueError, match=r"limit_bytes must be at most 2\*\*64 - 1"):
            pool.limit_bytes = bad
    with pytest.raises(ValueError, match="limit_bytes must not be negative"):
        pool.limit_bytes = -1
    for bad in (True, 1.0, "1 KiB"):
        with pytest.raises(TypeError, match="limit_bytes must be an int or None"):
            pool.limit_bytes = bad
    assert pool.limit_bytes == 4096  # a refused value changes nothing
    pool.limit_bytes = 0
    assert pool.limit_bytes == 0


class _Gate:
    """A pyopencl user event that keeps what depends on it pending until
    opened (opened anyway after `seconds`, if a test blocked on it: then
    `blocked` is true)."""

    def __init__(self, context, seconds=20.0):
        self.event = cl.UserEvent(context)
        self.opened_by_timer = threading.Event()

        def open_late():
            self.opened_by_timer.set()
            self.open()
        self.timer = threading.Timer(seconds, open_late)
        self.timer.start()

    @property
    def blocked(self):
        return self.opened_by_timer.is_set()

    def open(self):
        self.timer.cancel()
        if self.event.command_execution_status != cl.command_execution_status.COMPLETE:
            self.event.set_status(cl.command_execution_status.COMPLETE)


@contextlib.contextmanager
def _two_queues(partition, data, cl_device, pool, properties=0):
    """A new context with two queues (of `properties`) on one engine with
    `pool`'s allocator: yields (context, queues, engine, streams, compiled partition,
    user buffers for each queue's executes); at the end the queues are
    finished and the buffers freed."""
    context = cl.Context([cl_device])
    queues = [cl.CommandQueue(context, cl_device, properties=properties) for _ in range(2)]
    engine = goi.make_engine_with_allocator(cl_device, context, pool.allocator)
    streams = [oi.make_stream(engine, q) for q in queues]
    compiled = compile_partition(partition, engine)
    buffers = [_UserBuffers(context, cl_device, queues[0], data) for _ in range(2)]
    try:
        yield context, queues, engine, streams, compiled, buffers
    finally:
        for q in queues:
            q.finish()
        for b in buffers:
            b.free()


@pytest.mark.test_hooks
@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["out-of-order", "in-order, two queues"])
def test_caching_pool_never_hands_out_a_block_a_pending_kernel_uses(mode, partition, data, cl_device):
    """A block freed by an execute whose kernels wait behind a closed gate is
    not handed out again until they have run, however many executes (on
    another queue) ask for memory meanwhile; the execute that freed it did
    not wait for the gate. Out-of-order: oneDNN's event guards the block
    (default pool); in order on two queues: the marker event the pool asks
    for (reuse_without_event=False)."""
    pool = g.allocators.caching_pool(reuse_without_event=mode == "out-of-order")
    with _two_queues(partition, data, cl_device, pool, OOO if mode == "out-of-order" else 0) as (
            context, queues, engine, streams, compiled, buffers):
        tensors = [b.tensors(partition, engine) for b in buffers]
        for _ in range(2):  # warm: a block in the cache
            goi.execute(compiled, streams[1], *tensors[1])
            streams[1].wait()
        assert pool.misses == 1 and len(_cached_blocks(pool)) == 1

        gate = _Gate(context)
        try:
            pending = goi.execute(compiled, streams[0], *tensors[0], deps=[gate.event])
            assert not gate.blocked, "execute waited for its dependency"
            cached = _cached_blocks(pool)
            held = [(ptr, event) for ptr, event in cached.items() if event
                    and cl.Event.from_int_ptr(event).command_execution_status
                    != cl.command_execution_status.COMPLETE]
            assert len(held) == 1, f"the gated execute's block is not held pending: {cached}"
            (ptr, event), = held
            misses = pool.misses
            for _ in range(5):
                goi.execute(compiled, streams[1], *tensors[1])
                streams[1].wait()
                # the same entry: not handed out (and freed back with another event)
                assert _cached_blocks(pool).get(ptr) == event, \
                    "a block was handed out while its kernel was pending"
            assert pool.misses == misses + 1, "the other queue's executes did not get a block of their own"
            assert pending is None or pending.command_execution_status != cl.command_execution_status.COMPLETE
        finally:
            gate.open()
        streams[0].wait()
        streams[1].wait()
        for b in buffers:
            _check(b.result(), data)
        for _ in range(3):  # both blocks are ready: no more misses
            goi.execute(compiled, streams[0], *tensors[0])
            streams[0].wait()
        assert pool.misses == misses + 1


@pytest.mark.timeout(300)
def test_default_caching_pool_reuses_a_block_only_on_the_queue_that_freed_it(
        partition, data, cl_device):
    """With the default pool (reuse without an event) on two in-order queues
    of one engine, a block an execute on one queue freed is not handed to an
    execute on the other while the first queue's kernel that uses it waits
    behind a closed gate: each queue gets blocks of its own, and the results
    are right."""
    pool = g.allocators.caching_pool()
    with _two_queues(partition, data, cl_device, pool) as (
            context, queues, engine, streams, compiled, buffers):
        tensors = [b.tensors(partition, engine) for b in buffers]
        for _ in range(2):  # warm: a block of queue 1 in the cache
            goi.execute(compiled, streams[1], *tensors[1])
        streams[1].wait()
        assert pool.misses == 1
        gate = _Gate(context)
        try:
            goi.execute(compiled, streams[0], *tensors[0], deps=[gate.event])
            assert pool.misses == 2, "queue 0's execute was given queue 1's block"
            hits = pool.hits
            for _ in range(5):
                goi.execute(compiled, streams[1], *tensors[1])
            streams[1].wait()  # queue 1 is not held up by queue 0's gate
            assert pool.misses == 2 and pool.hits == hits + 5, \
                "queue 1's executes were given the block queue 0's pending kernel uses"
            assert not gate.blocked
        finally:
            gate.open()
        streams[0].wait()
        for b in buffers:
            _check(b.result(), data)


@pytest.mark.timeout(300)
def test_caching_pool_reuses_at_once_on_one_in_order_queue(partition, data, cl_device):
    """The default pool on one in-order queue hands a block out again while
    the kernel that used it is still pending (behind a gate): the queue's
    order runs the next user after it, so results stay right."""
    pool = g.allocators.caching_pool()
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context, cl_device)
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, context,
                                                       pool.allocator, queue)
    buffers = _UserBuffers(context, cl_device, queue, data)
    try:
        ins, outs = buffers.tensors(partition, engine)
        compiled.execute(stream, ins, outs)
        stream.wait()
        buffers.clear_output()
        gate = _Gate(context)
        try:
            goi.execute(compiled, stream, ins, outs, deps=[gate.event])
            hits = pool.hits
            compiled.execute(stream, ins, outs)  # queued behind the gated one
            assert pool.hits == hits + 1 and pool.misses == 1
            assert not gate.blocked
        finally:
            gate.open()
        stream.wait()
        _check(buffers.result(), data)
    finally:
        queue.finish()
        del ins, outs
        buffers.free()


# --------------------------------------------- several allocators at once

@pytest.mark.timeout(300)
def test_two_engines_two_allocators_alternately(partition, data, cl_device, cl_context, cl_queue):
    other_context = cl.Context([cl_device])
    other_queue = cl.CommandQueue(other_context, cl_device)
    setups, user_buffers = [], []
    for context, queue in ((cl_context, cl_queue), (other_context, other_queue)):
        recorder = _Recorder()
        engine, stream, compiled = _engine_stream_compiled(partition, cl_device, context,
                                                           recorder.allocator, queue)
        buffers = _UserBuffers(context, cl_device, queue, data)
        user_buffers.append(buffers)
        ins, outs = buffers.tensors(partition, engine)
        setups.append((recorder, context, stream, compiled, buffers, ins, outs))
    del recorder, engine, stream, compiled, ins, outs
    try:
        for step in range(6):
            mine = step % 2
            counts = [len(s[0].log["malloc"]) for s in setups]
            _, _, stream, compiled, buffers, ins, outs = setups[mine]
            buffers.clear_output()
            compiled.execute(stream, ins, outs)
            stream.wait()
            _check(buffers.result(), data)
            assert len(setups[mine][0].log["malloc"]) > counts[mine]
            assert len(setups[1 - mine][0].log["malloc"]) == counts[1 - mine], \
                "an allocator got a call of another engine"
            del stream, compiled, ins, outs
        logs = []
        for recorder, context, *_ in setups:
            assert all(c == context and d == cl_device for _, _, d, c in recorder.log["malloc"])
            assert all(c == context and d == cl_device for _, d, c, _ in recorder.log["free"])
            logs.append(recorder.log)
        del recorder
        setups.clear()
        gc.collect()
        for log in logs:
            assert _unbalanced(log) == ([], collections.Counter())
    finally:
        for buffers in user_buffers:
            buffers.free()


# ------------------------------------------------------ failing mallocs

class _Boom(Exception):
    pass


def _foreign_pointers(device):
    context = cl.Context([device])
    made = []

    def allocate(size, alignment, _device, _context):
        ptr = usm.device_alloc(context, device, size, alignment)
        made.append(ptr)
        return ptr

    def release():
        for ptr in made:
            usm.free(context, ptr)

    return allocate, release


@pytest.mark.parametrize("mode, cause_types", [
    ("raise", (_Boom,)),
    ("zero", (MemoryError,)),
    ("str", (TypeError,)),
    ("none", (TypeError,)),
    ("float", (TypeError,)),
    ("bool", (TypeError,)),
    ("foreign", (ValueError,)),
    ("too_small", (ValueError,)),
    ("negative", (TypeError, ValueError)),
    ("beyond_64_bits", (TypeError, ValueError)),
])
def test_failing_malloc_raises_chained_error(mode, cause_types, partition, data, cl_device,
                                             cl_context, cl_queue, user_buffers):
    raised = []
    small = []
    foreign_allocate, foreign_release = _foreign_pointers(cl_device)

    def bad(size, alignment, device, context):
        if mode == "raise":
            raised.append(_Boom(f"no memory today ({size} bytes)"))
            raise raised[-1]
        if mode == "too_small":
            small.append(usm.device_alloc(context, device, 16))
            return small[-1]
        if mode == "foreign":
            return foreign_allocate(size, alignment, device, context)
        return {"zero": 0, "str": "0x1000", "none": None, "float": 4096.0, "bool": True,
                "negative": -4096, "beyond_64_bits": 2 ** 70}[mode]

    recorder = _Recorder(fail=lambda index: bad)
    try:
        engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                           recorder.allocator, cl_queue)
        ins, outs = user_buffers.tensors(partition, engine)
        with pytest.raises(dnnl.error) as info:
            compiled.execute(stream, ins, outs)
            stream.wait()
        stream.wait()
        error = info.value
        if cause_types == (MemoryError,):  # NULL from malloc: out of memory, as oneDNN says
            assert error.status == dnnl.status.out_of_memory
            assert type(error) is dnnl.out_of_memory and isinstance(error, MemoryError)
        else:
            assert error.status == dnnl.status.runtime_error
            assert type(error) is dnnl.runtime_error and isinstance(error, RuntimeError)
        assert isinstance(error.__cause__, cause_types), \
            f"cause is {type(error.__cause__).__name__}: {error.__cause__}"
        if mode == "raise":
            assert error.__cause__ is raised[0]
            assert str(raised[0]) in str(error)

        # MEMORY_ALLOCATE on the same engine fails the same way
        with pytest.raises(dnnl.error) as info:
            g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
        assert isinstance(info.value.__cause__, cause_types)

        if mode == "too_small":
            # handed back to free (once), never used
            assert recorder.freed_pointers() == collections.Counter(small)
        else:
            assert recorder.log["free"] == [], "free got a pointer malloc did not hand out"
        del compiled, ins, outs, stream, engine
        gc.collect()
    finally:
        foreign_release()

    # another engine with a working allocator is unaffected
    statistics = g.allocators.statistics_allocator()
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                       statistics.allocator, cl_queue)
    ins, outs = user_buffers.tensors(partition, engine)
    user_buffers.clear_output()
    compiled.execute(stream, ins, outs)
    stream.wait()
    _check(user_buffers.result(), data)
    assert statistics.stats.allocations > 0


def test_failing_free_raises_chained_error(partition, data, cl_device, cl_context, cl_queue,
                                           user_buffers):
    state = {"fail": True, "frees": 0}

    def malloc(size, alignment, device, context):
        return usm.device_alloc(context, device, size, alignment)

    def free(ptr, device, context, event):
        if event is not None:
            event.wait()
        usm.free(context, ptr)  # the memory is released; then complain
        state["frees"] += 1
        if state["fail"]:
            raise KeyError("free failed on purpose")

    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                       goi.make_allocator(malloc, free), cl_queue)
    ins, outs = user_buffers.tensors(partition, engine)
    with pytest.raises(dnnl.error) as info:
        compiled.execute(stream, ins, outs)
        stream.wait()
    stream.wait()
    assert isinstance(info.value.__cause__, KeyError)
    assert "free failed on purpose" in str(info.value.__cause__)

    state["fail"] = False
    user_buffers.clear_output()
    compiled.execute(stream, ins, outs)
    stream.wait()
    _check(user_buffers.result(), data)


@pytest.mark.timeout(300)
def test_allocator_failing_on_kth_call_recovers(partition, data, cl_device, cl_context, cl_queue):
    # how many mallocs a normal run makes
    counting = _Recorder()
    engine = goi.make_engine_with_allocator(cl_device, cl_context, counting.allocator)
    stream = oi.make_stream(engine, cl_queue)
    _check(_run_flow(partition, engine, stream, cl_queue, data), data)
    calls = len(counting.log["malloc"])
    assert calls >= 5  # 4 MEMORY_ALLOCATE tensors and the scratch of execute
    del engine, stream
    gc.collect()

    for k in range(calls):
        injected = []

        def fail_kth(index, k=k, injected=injected):
            if index != k:
                return None

            def boom(size, *args):
                injected.append(_Boom(f"call {index} fails"))
                raise injected[-1]
            return boom

        recorder = _Recorder(fail=fail_kth)
        engine = goi.make_engine_with_allocator(cl_device, cl_context, recorder.allocator)
        stream = oi.make_stream(engine, cl_queue)
        with pytest.raises(dnnl.error) as info:
            _run_flow(partition, engine, stream, cl_queue, data)
        assert info.value.__cause__ is injected[0], f"k={k}"
        stream.wait()
        # the failure is gone: the same engine works again
        _check(_run_flow(partition, engine, stream, cl_queue, data), data)
        assert len(recorder.log["malloc"]) > calls
        # the cause's traceback reaches _run_flow's frame (its tensors) through
        # the frames' f_back, as for any exception kept after it was raised
        del engine, stream, info
        injected.clear()
        gc.collect()
        bad_frees, still_live = _unbalanced(recorder.log)
        assert bad_frees == [] and not still_live, f"k={k}: leaked or double-freed memory"


# --------------------------------------------- events, blobs, limits

@pytest.mark.timeout(300)
def test_execute_after_deps_on_out_of_order_queue(partition, data, cl_device, cl_context,
                                                  cl_ooo_queue, cl_queue):
    # The pool frees without waiting, so nothing in execute blocks on deps.
    pool = g.allocators.caching_pool()
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                       pool.allocator, cl_ooo_queue)
    size = int(np.prod(SHAPE)) * 4
    staged = [usm.allocation(cl_context, size, "device", cl_device) for _ in range(3)]
    targets = [usm.allocation(cl_context, size, "device", cl_device) for _ in range(4)]
    copy_queue = cl.CommandQueue(cl_context, cl_device)
    try:
        for block, array in zip(staged, data):
            upload(cl_queue, block.ptr, array)
        for block in targets:  # stale contents the partition must not see
            upload(cl_queue, block.ptr, np.full(SHAPE, 3.0, np.float32))

        gate = cl.UserEvent(cl_context)
        opened_by_timer = threading.Event()

        def open_gate():  # only if execute blocked on its deps
            opened_by_timer.set()
            gate.set_status(cl.command_execution_status.COMPLETE)
        timer = threading.Timer(20.0, open_gate)
        timer.start()
        try:
            # on another queue: only the events order the copies and execute
            copies = [usm.memcpy(copy_queue, targets[i].ptr, staged[i].ptr, size, deps=[gate])
                      for i in range(3)]
            ins = [g.tensor(p, engine, targets[p.get_id()].ptr) for p in partition.get_input_ports()]
            outs = [g.tensor(partition.get_output_ports()[0], engine, targets[3].ptr)]
            event = goi.execute(compiled, stream, ins, outs, deps=copies)
            assert not opened_by_timer.is_set(), "execute blocked until its deps completed"
            assert isinstance(event, cl.Event)
            time.sleep(0.2)
            assert event.command_execution_status != cl.command_execution_status.COMPLETE
        finally:
            timer.cancel()
            if not opened_by_timer.is_set():
                gate.set_status(cl.command_execution_status.COMPLETE)
        event.wait()
        _check(download(cl_ooo_queue, targets[3].ptr, SHAPE, wait_for=[event]), data)
    finally:
        cl_ooo_queue.finish()
        copy_queue.finish()
        for block in staged + targets:
            block.free()


def test_engine_from_cache_blob_with_allocator(partition, data, cl_device, cl_context, cl_queue,
                                               user_buffers):
    first = g.allocators.statistics_allocator()
    engine = goi.make_engine_with_allocator(cl_device, cl_context, first.allocator)
    compile_partition(partition, engine)
    blob = oi.get_engine_cache_blob(engine)
    assert isinstance(blob, bytes) and len(blob) > 0

    statistics = g.allocators.statistics_allocator()
    from_blob = goi.make_engine_with_allocator(cl_device, cl_context, statistics.allocator, blob)
    assert from_blob.get_kind() == dnnl.engine.kind.gpu
    assert oi.get_context(from_blob) == cl_context
    assert oi.get_device(from_blob) == cl_device
    stream = oi.make_stream(from_blob, cl_queue)
    compiled = compile_partition(partition, from_blob)
    ins, outs = user_buffers.tensors(partition, from_blob)
    compiled.execute(stream, ins, outs)
    stream.wait()
    _check(user_buffers.result(), data)
    assert statistics.stats.allocations > 0
    assert first.stats.allocations == 0, "the first engine's allocator got the blob engine's calls"


def test_make_allocator_argument_errors(cl_device, cl_context):
    with pytest.raises(TypeError):
        goi.make_allocator(1, lambda *args: None)
    with pytest.raises(TypeError):
        goi.make_allocator(lambda *args: 0, None)
    allocator = goi.make_allocator(lambda *args: 0, lambda *args: None)
    with pytest.raises(TypeError):
        goi.make_engine_with_allocator(cl_device, cl_context, "allocator")
    with pytest.raises(TypeError):
        goi.make_engine_with_allocator("device", cl_context, allocator)
    with pytest.raises(TypeError):
        goi.make_engine_with_allocator(cl_device, cl_context, allocator, "not bytes")
    # int handles are accepted
    engine = goi.make_engine_with_allocator(cl_device.int_ptr, cl_context.int_ptr, allocator)
    assert oi.get_context(engine) == cl_context


def _trivial_allocator():
    """An allocator whose callables hold nothing but themselves."""
    def malloc(size, alignment, device, context):
        return usm.device_alloc(context, device, size, alignment)

    def free(ptr, device, context, event):
        usm.free(context, ptr)

    return goi.make_allocator(malloc, free), weakref.ref(malloc)


def _made_in_a_cycle(count):
    """`count` allocators kept alive by reference cycles only, as a frame
    that saves the exception it caught in a local makes one (the exception's
    traceback holds the frame, whose locals hold the exception and the
    allocator). Returns weak references to their malloc callables."""
    refs = []

    def make():
        allocator, ref = _trivial_allocator()
        refs.append(ref)
        try:
            raise LookupError("kept")
        except LookupError as exc:
            saved = exc  # noqa: F841  (the cycle: saved -> traceback -> this frame -> saved)

    for _ in range(count):
        make()
    return refs


@pytest.mark.test_hooks
@pytest.mark.timeout(300)
def test_allocators_beyond_the_old_limit_each_get_their_own_calls(cl_device):
    """No fixed number of allocators: 300 alive at once (the binding had 64
    trampoline slots), each called through the same trampoline, each getting
    only its own calls, and the call's context."""
    gc.collect()
    allocators_before = goi._live_allocators()
    contexts = [cl.Context([cl_device]) for _ in range(3)]
    logs = [[] for _ in range(300)]
    made = []
    for log in logs:
        def malloc(size, alignment, device, context, log=log):
            ptr = usm.device_alloc(context, device, size, alignment)
            log.append(("malloc", ptr, context))
            return ptr

        def free(ptr, device, context, event, log=log):
            log.append(("free", ptr, context))
            usm.free(context, ptr)

        made.append(goi.make_allocator(malloc, free))
    assert goi._live_allocators() == allocators_before + 300
    for i in (299, 0, 150, 64, 65, 1):
        made[i]._malloc_and_free(256, 0, cl_device, contexts[i % 3], count=2)
    for i, log in enumerate(logs):
        if i in (299, 0, 150, 64, 65, 1):
            assert [call for call, _, _ in log] == ["malloc", "malloc", "free", "free"], i
            assert all(context == contexts[i % 3] for _, _, context in log)
            assert {ptr for call, ptr, _ in log if call == "malloc"} \
                == {ptr for call, ptr, _ in log if call == "free"}
        else:
            assert log == [], f"allocator {i} got another allocator's calls"
    del made, malloc, free
    gc.collect()
    assert goi._live_allocators() == allocators_before


@pytest.mark.test_hooks
@pytest.mark.timeout(300)
def test_dead_allocators_in_reference_cycles_do_not_block_new_ones(cl_device, cl_context):
    """Allocators that only reference cycles keep (garbage not yet
    collected) take nothing new allocators need: with the collector off,
    after 100 of them, 200 more are made and used; a collection frees them."""
    gc.collect()
    allocators_before = goi._live_allocators()
    gc.disable()
    try:
        cycled = _made_in_a_cycle(100)
        assert all(ref() is not None for ref in cycled), "the cycles did not keep the allocators"
        fresh = [_trivial_allocator() for _ in range(200)]
        for allocator, _ in fresh:
            allocator._malloc_and_free(128, 0, cl_device, cl_context)
        assert goi._live_allocators() == allocators_before + 300
    finally:
        gc.enable()
    del fresh, allocator
    gc.collect()
    assert all(ref() is None for ref in cycled), "a collection did not free the cycled allocators"
    assert goi._live_allocators() == allocators_before


@pytest.mark.test_hooks
def test_malloc_handing_out_memory_oneDNN_holds_is_refused(cl_device, cl_context):
    """A malloc that returns a pointer oneDNN already holds (handed out and
    not freed: a pool's bookkeeping error) is refused before oneDNN uses the
    same memory twice; the binding's memory stands in."""
    log = {"returned": [], "freed": []}
    block = usm.device_alloc(cl_context, cl_device, 256)

    def malloc(size, alignment, device, context):
        log["returned"].append(block)
        return block

    def free(ptr, device, context, event):
        log["freed"].append(ptr)

    allocator = goi.make_allocator(malloc, free)
    allocations = goi._live_allocations()
    try:
        with pytest.raises(dnnl.error) as info:
            allocator._malloc_and_free(256, 0, cl_device, cl_context, count=2)
        assert type(info.value.__cause__) is ValueError
        assert "oneDNN holds already" in str(info.value.__cause__)
        # the first was used and freed once; the second never reached free
        assert log == {"returned": [block, block], "freed": [block]}
        assert goi._live_allocations() == allocations
    finally:
        usm.free(cl_context, block)


def test_scratchpad_free_gets_a_marker_event_on_in_order_streams(partition, data, cl_device,
                                                                 cl_context, cl_queue,
                                                                 user_buffers):
    """make_allocator(..., in_order_events=True): the memory an execute on an
    in-order stream allocated and frees (its scratchpad) comes with an event
    that completes after the execute's work, where oneDNN passes None; other
    frees (a tensor dropped) keep None. Without the flag: None."""
    for in_order_events in (True, False):
        frees = []

        def malloc(size, alignment, device, context):
            return usm.device_alloc(context, device, size, alignment)

        def free(ptr, device, context, event, frees=frees):
            frees.append(event)
            if event is not None:
                event.wait()
            usm.free(context, ptr)

        allocator = goi.make_allocator(malloc, free, in_order_events=in_order_events)
        engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                           allocator, cl_queue)
        ins, outs = user_buffers.tensors(partition, engine)
        user_buffers.clear_output()
        compiled.execute(stream, ins, outs)
        goi.execute(compiled, stream, ins, outs)
        stream.wait()
        _check(user_buffers.result(), data)
        assert len(frees) == 2
        if in_order_events:
            assert all(isinstance(event, cl.Event) for event in frees)
            assert all(event.command_execution_status == cl.command_execution_status.COMPLETE
                       for event in frees)
        else:
            assert frees == [None, None]
        tensor = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
        del tensor
        gc.collect()
        assert frees[2:] == [None], "a tensor's free got an event"
        del engine, stream, compiled, ins, outs


# ------------------------------- dnnl.graph.allocator and engines of an index

@pytest.mark.test_hooks
def test_default_allocator_engines(partition, data, cl_device, cl_context, cl_queue,
                                   user_buffers):
    """allocator(): oneDNN's own USM memory, on an engine of the user's
    context and on the engine of index 0 (make_engine_with_allocator(kind,
    index, allocator))."""
    default = g.allocator()
    engine = goi.make_engine_with_allocator(cl_device, cl_context, default)
    stream = oi.make_stream(engine, cl_queue)
    result = _run_flow(partition, engine, stream, cl_queue, data)
    _check(result, data)

    indexed = g.make_engine_with_allocator(dnnl.engine.kind.gpu, 0, default)
    assert indexed.get_kind() == dnnl.engine.kind.gpu
    stream = dnnl.stream(indexed)
    queue = oi.get_command_queue(stream)
    _check(_run_flow(partition, indexed, stream, queue, data), data)
    allocated = g.tensor(partition.get_output_ports()[0], indexed)
    assert usm.pointer_type(oi.get_context(indexed), allocated.get_data_handle()) == "device"

    with pytest.raises(dnnl.error, match="default allocator"):
        default._malloc_and_free(64, 0, cl_device, cl_context)
    with pytest.raises(dnnl.error):
        g.make_engine_with_allocator(dnnl.engine.kind.gpu, dnnl.engine.get_count(
            dnnl.engine.kind.gpu), default)  # no such device
    with pytest.raises(TypeError):
        g.make_engine_with_allocator(dnnl.engine.kind.gpu, 0, "allocator")


def test_engine_of_index_with_python_allocator(partition, data):
    """make_engine_with_allocator(kind.gpu, 0, ...) sends the engine's graph
    memory to the Python allocator, as the engine of the user's context does."""
    recorder = _Recorder()
    engine = g.make_engine_with_allocator(dnnl.engine.kind.gpu, 0, recorder.allocator)
    stream = dnnl.stream(engine)
    queue = oi.get_command_queue(stream)
    context = oi.get_context(engine)
    _check(_run_flow(partition, engine, stream, queue, data), data)
    assert recorder.log["malloc"], "the engine did not ask its allocator for memory"
    assert all(call[3] == context for call in recorder.log["malloc"])
    del recorder  # the engine keeps the callables
    gc.collect()
    _check(_run_flow(partition, engine, stream, queue, data), data)


def test_user_scratchpad_keeps_execute_off_the_allocator(partition, data, cl_device, cl_context,
                                                         cl_queue, user_buffers):
    """A partition executed with the user's scratchpad asks the engine's
    allocator for nothing; without one, oneDNN allocates it per execute."""
    statistics = g.allocators.statistics_allocator()
    stats = statistics.stats
    engine, stream, compiled = _engine_stream_compiled(partition, cl_device, cl_context,
                                                       statistics.allocator, cl_queue)
    ins, outs = user_buffers.tensors(partition, engine)
    size = compiled.get_scratchpad_logical_tensor().get_mem_size()
    assert size > 0
    with usm.allocation(cl_context, size, "device", cl_device) as block:
        scratchpad = g.tensor(compiled.get_scratchpad_logical_tensor(), engine, block.ptr)
        before = stats.allocations
        compiled.execute(stream, ins, outs, scratchpad)
        goi.execute(compiled, stream, ins, outs, scratchpad=scratchpad)
        stream.wait()
        assert stats.allocations == before
        _check(user_buffers.result(), data)
        compiled.execute(stream, ins, outs)
        stream.wait()
        assert stats.allocations > before


class _HostRecorder:
    """host_malloc/host_free over ctypes buffers, logging calls."""

    def __init__(self, fail=None):
        import ctypes
        log = self.log = {"malloc": [], "free": []}
        live = self.live = {}

        def host_malloc(size, alignment):
            log["malloc"].append((size, alignment))
            if fail is not None:
                return fail(size, alignment)
            buffer = ctypes.create_string_buffer(size + max(alignment, 1))
            address = ctypes.addressof(buffer)
            if alignment > 1:
                address += -address % alignment
            live[address] = buffer
            return address

        def host_free(ptr):
            log["free"].append(ptr)
            live.pop(ptr, None)

        self.allocator = g.allocator(host_malloc, host_free)


@pytest.mark.test_hooks
def test_host_allocator_callbacks(cl_device, cl_context):
    recorder = _HostRecorder()
    recorder.allocator._host_malloc_and_free(100, 64, count=3)
    assert recorder.log["malloc"] == [(100, 64)] * 3
    assert len(recorder.log["free"]) == 3 and len(set(recorder.log["free"])) == 3
    assert all(ptr % 64 == 0 for ptr in recorder.log["free"])
    assert recorder.live == {}
    with pytest.raises(dnnl.error, match="not an OpenCL allocator"):
        recorder.allocator._malloc_and_free(64, 0, cl_device, cl_context)
    ocl = goi.make_allocator(lambda *args: 0, lambda *args: None)
    with pytest.raises(dnnl.error, match="not a host allocator"):
        ocl._host_malloc_and_free(64, 0)


@pytest.mark.parametrize("returned, cause_type", [
    (_Boom, _Boom), (0, MemoryError), ("0x1000", TypeError), (True, TypeError),
    (-1, ValueError), (4096 + 8, ValueError),  # not aligned to 64
])
@pytest.mark.test_hooks
def test_failing_host_allocator_raises_chained_error(returned, cause_type):
    def fail(size, alignment):
        if returned is _Boom:
            raise _Boom("no host memory today")
        return returned

    recorder = _HostRecorder(fail=fail)
    with pytest.raises(dnnl.error) as info:
        recorder.allocator._host_malloc_and_free(128, 64)
    error = info.value
    # NULL (a MemoryError cause) is running out of memory, as oneDNN calls it
    assert type(error) is (dnnl.out_of_memory if cause_type is MemoryError else dnnl.runtime_error)
    assert isinstance(error.__cause__, cause_type), f"{type(error.__cause__)}: {error.__cause__}"
    assert "host_malloc" in str(error)
    # the binding's own memory stood in, and was not passed to host_free
    assert recorder.log["free"] == ([4096 + 8] if returned == 4096 + 8 else [])


def test_host_allocator_on_opencl_engines(partition, data, cl_device, cl_context, cl_queue):
    """oneDNN asks a host allocator only for CPU engines (this oneDNN has
    none): OpenCL engines made with one get oneDNN's default OpenCL memory."""
    recorder = _HostRecorder()
    for engine in (goi.make_engine_with_allocator(cl_device, cl_context, recorder.allocator),
                   g.make_engine_with_allocator(dnnl.engine.kind.gpu, 0, recorder.allocator)):
        stream = dnnl.stream(engine)
        _check(_run_flow(partition, engine, stream, oi.get_command_queue(stream), data), data)
    assert recorder.log == {"malloc": [], "free": []}


def test_host_allocator_argument_errors():
    with pytest.raises(TypeError, match="host_malloc"):
        g.allocator(1, lambda ptr: None)
    with pytest.raises(TypeError, match="host_free"):
        g.allocator(lambda size, alignment: 0, None)
    with pytest.raises(TypeError):
        g.allocator(lambda size, alignment: 0)
