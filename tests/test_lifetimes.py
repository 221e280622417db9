"""Object lifetimes: drop every Python reference in every order, then use what is left.

Each ``*_dropped_in_every_order`` test builds a set of objects (pyopencl
originals and binding objects), deletes them in every order
(``itertools.permutations``), and after each deletion (and ``gc.collect()``)
uses every object still alive -- executes the primitive or partition, maps
memory, waits on the stream or event, reads the user's buffer -- checking
the data with NumPy. Reference counts are read through pyopencl objects the
test holds itself ("watchers"), after every step:

* while a binding object that must retain an OpenCL object is alive (an
  engine its context, a stream its queue, a memory its user buffer), the
  count is above what the test's own references account for;
* once none is alive, the count is exactly back to its value before the
  package touched the object (minus the test's references it dropped).

Every test uses a fresh ``cl.Context`` so that counts start at 1 and no other
test disturbs them. oneDNN's primitive cache and compiled-partition cache
keep the kernels they compiled, and those kernels retain the context, after
every user object is gone (by design: the next primitive on the same engine
reuses them; the compiled-partition cache even keeps one entry per engine,
so the graph test switches it off, see ``no_compiled_partition_cache``). The
tests therefore compile once before taking their "before" counts, and at the
end empty both caches (``helpers.empty_onednn_caches``, through the
binding's cache capacity controls) and check that the context is back to the
test's single reference.
``test_primitive_cache_can_be_emptied_from_python`` and
``test_compiled_partition_cache_can_be_emptied_from_python`` check for
``dnnl.set_primitive_cache_capacity`` and
``dnnl.graph.set_compiled_partition_cache_capacity`` (mirrors of dnnl.hpp
and dnnl_graph.hpp).

A failed check in one order does not stop the others (``_run_orders``): the
test fails at the end listing every distinct failure with the number of
orders that hit it. A graph allocator object may keep the context of the
last call it served (the binding caches the pyopencl objects it passes to
the callables) until it is dropped: allowed while it lives.

Also: objects returned by get_context/get_device/get_command_queue/
get_mem_object hold their own reference, USM allocation views keep the
allocation alive, statistics allocators see allocations == frees after every
order of dropping a graph engine's objects, a MEMORY_ALLOCATE graph tensor
dropped after its engine still frees its memory, and a test that touches
every kind of object and event ends with every count back at its start.

``gc.freeze()`` (fixture ``cheap_gc``) moves the objects that exist before a
test out of the collector's reach, so the thousands of ``gc.collect()`` calls
only scan what the test created. Not on a free-threaded Python: its collector
walks every block of the heap, frozen or not (measured on 3.13t: 49 ms per
order of the core set against 2 ms on 3.11, 4 minutes or more for its 5,040
orders). There each test drops its objects in a sample of its orders
(``_orders``): every order of the sets of 120, and of the larger sets 360
orders drawn at random with a fixed seed, the first and the reverse of the
first among them; ``DNNL_OCL_INTEROP_EVERY_ORDER=1`` runs every order there
too.
"""

import functools
import gc
import itertools
import os
import random
import sysconfig
import time

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (ALG, CHILD_STREAM, INFERENCE, MF, OOO, allocated_inputs, attention_partition,
                     attention_reference, compile_partition, compiled_partition_cache_capacity,
                     download, empty_onednn_caches, first_sub_device, g, goi, oi, plain_desc,
                     upload, usm)

COMPLETE = cl.command_execution_status.COMPLETE


def _settled_reference_count(event, expected=1, seconds=2.0):
    """The event's reference count once it is `expected`, or after `seconds`.
    OpenCL calls the count "immediately stale": oneDNN or the runtime may
    still hold its own reference for a moment after a wait returns (once in
    a CI run, 1 of 120 graph orders read 2 right after the wait). Not the
    binding's: tools/graph_event_refcount.cpp, oneDNN's graph API and the
    CPU runtime without Python, reads 2 in about 1 of 1,500 graph executes
    on an out-of-order queue, each back to 1 within milliseconds while the
    caller does nothing. A reference the binding keeps never goes, so the
    check still fails on a leak, after `seconds`."""
    deadline = time.monotonic() + seconds
    count = event.reference_count
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.001)
        count = event.reference_count
    return count

# eltwise relu on a 4x8 f32 tensor: exact in f32
DESC_DIMS = (4, 8)
X = ((np.arange(32, dtype=np.float32) - 15.5) / 4).reshape(DESC_DIMS)
RELU = np.maximum(X, 0)
SENTINEL = np.full(DESC_DIMS, -7.0, np.float32)

# matmul of small integers: exact in f32
M, K, N = 3, 5, 4
A = (np.arange(M * K, dtype=np.float32).reshape(M, K) % 7) - 3
B = (np.arange(K * N, dtype=np.float32).reshape(K, N) % 5) - 2
C = A @ B

# attention block for the graph tests (MatMul(Q, K^T) -> SoftMax -> MatMul(., V))
BATCH, SEQ, HEAD = 1, 8, 4
SHAPE = (BATCH, SEQ, HEAD)
_RNG = np.random.default_rng(11)
QKV = [_RNG.standard_normal(SHAPE).astype(np.float32) for _ in range(3)]

ATTENTION = attention_reference(*QKV)


# ---------------------------------------------------------------- helpers

@pytest.fixture
def cheap_gc():
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.collect()


@pytest.fixture
def no_compiled_partition_cache():
    """oneDNN's compiled-partition cache keys its entries by engine: every
    new engine that compiles a partition adds an entry, which keeps the
    context until it is evicted (up to the capacity, 1024 by default). Tests
    that check the context's count after each of many engines switch that
    cache off meanwhile (compiling then still reuses the kernels of oneDNN's
    primitive cache, so it stays fast)."""
    with compiled_partition_cache_capacity(0):
        yield


def _alias(obj):
    """Another pyopencl object for the same OpenCL object, with its own reference."""
    return type(obj).from_int_ptr(obj.int_ptr, retain=True)


def _assert_count(name, watcher, floor, held, step):
    """held True: something of the package must retain it (count above floor);
    False: nothing may (count exactly floor); None: either."""
    count = watcher.reference_count
    if held is True:
        assert count > floor, (f"{step}: {name} has reference count {count}, but a binding "
                               f"object that must retain it is alive (the test's own: {floor})")
    elif held is False:
        assert count == floor, (f"{step}: {name} has reference count {count}, expected {floor} "
                                f"with no binding object holding it")
    else:
        assert count >= floor, f"{step}: {name} has reference count {count} < {floor}"


def _run_orders(round_fn, orders, *args):
    """Runs round_fn(*args, order) for every order; a failed check does not
    stop the others: the test fails at the end with every distinct failure,
    how many orders hit it, and the first order that did."""
    failures = {}
    for order in orders:
        try:
            round_fn(*args, order)
        except AssertionError as error:
            message = str(error).split("\n")[0].replace(str(order), "<order>")
            failures.setdefault(message, []).append(order)
        gc.collect()
    if failures:
        report = [f"{len(hit)} of {len(orders)} orders, e.g. {hit[0]}: {message}"
                  for message, hit in sorted(failures.items(), key=lambda item: -len(item[1]))]
        pytest.fail("\n".join(report), pytrace=False)


# See the module's docstring: gc.collect() after every step is costly on a
# free-threaded Python.
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
SAMPLED_ORDERS = 360


def _orders(names, expected):
    """The orders to drop `names` in (`expected` of them in all): every
    order, or on a free-threaded Python a sample of SAMPLED_ORDERS of the
    larger sets (see the module's docstring)."""
    orders = list(itertools.permutations(names))
    assert len(orders) == expected
    if (not FREE_THREADED or len(orders) <= SAMPLED_ORDERS
            or os.environ.get("DNNL_OCL_INTEROP_EVERY_ORDER") == "1"):
        return orders
    ends = [orders[0], orders[-1]]  # (the last is the reverse of the first)
    drawn = random.Random(len(orders)).sample(orders[1:-1], SAMPLED_ORDERS - len(ends))
    return ends + drawn


def _drop_one_by_one(o, order, check, use, *args):
    """Calls use(o, *args) and check(step), first with every object of `o`,
    then again after dropping each, in `order`."""
    use(o, *args)
    check(f"{order}, nothing dropped")
    for name in order:
        del o[name]
        gc.collect()
        use(o, *args)
        check(f"{order}, after dropping {name}")


def _assert_allocator_freed_all(stats, order):
    assert (stats.allocations, stats.live_bytes) == (stats.frees, 0), (
        f"{order}: the allocator's memory was not all freed once every object was dropped "
        f"({stats.allocations - stats.frees} allocation(s) of {stats.live_bytes} bytes never "
        f"passed to free)")


DESC = plain_desc(DESC_DIMS)


def _relu(engine):
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_relu, DESC, DESC, 0.0, 0.0)
    return dnnl.eltwise_forward(pd)


def _matmul_pd(engine):
    return dnnl.matmul.primitive_desc(engine, plain_desc((M, K)), plain_desc((K, N)), plain_desc((M, N)))


def _filled(engine, array):
    mem = dnnl.memory(plain_desc(array.shape), engine)
    dnnl.arrays.write(mem, array)
    return mem


def _read_buffer(queue, buf, like, wait_for=None):
    host = np.empty_like(like)
    cl.enqueue_copy(queue, host, buf, wait_for=wait_for, is_blocking=True)
    return host


def _write_buffer(queue, buf, array):
    cl.enqueue_copy(queue, buf, np.ascontiguousarray(array), is_blocking=True)


def _warm_up_primitives(device, context):
    """Compiles the test's primitives for `context` (oneDNN's primitive cache
    keeps them, and the context, from now on)."""
    engine = oi.make_engine(device, context)
    stream = dnnl.stream(engine)
    dst = dnnl.memory(DESC, engine)
    _relu(engine).execute(stream, {dnnl.ARG_SRC: _filled(engine, X), dnnl.ARG_DST: dst})
    out = dnnl.memory(plain_desc((M, N)), engine)
    dnnl.matmul(_matmul_pd(engine)).execute(
        stream, {dnnl.ARG_SRC: _filled(engine, A), dnnl.ARG_WEIGHTS: _filled(engine, B), dnnl.ARG_DST: out})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(dst), RELU)
    np.testing.assert_array_equal(dnnl.arrays.read(out), C)
    del engine, stream, dst, out
    gc.collect()


def _finish_test(context):
    """Once every object of the test is gone and oneDNN's caches are empty,
    only the test's own reference to the context is left."""
    gc.collect()
    empty_onednn_caches()
    assert context.reference_count == 1, (
        f"context reference count {context.reference_count} after every object was dropped "
        f"and oneDNN's caches were emptied")


# ------------------------------------- core objects, in every order (5040)

CORE = ("context", "queue", "buffer", "engine", "stream", "memory", "primitive")


def _use_core(o, dst, handles, context, device):
    if "primitive" in o:
        dnnl.arrays.write(dst, SENTINEL)
        engine = dst.get_engine()
        stream = o["stream"] if "stream" in o else dnnl.stream(engine)
        src = o["memory"] if "memory" in o else _filled(engine, X)
        o["primitive"].execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
        stream.wait()
        np.testing.assert_array_equal(dnnl.arrays.read(dst), RELU)
    if "memory" in o:
        np.testing.assert_array_equal(dnnl.arrays.read(o["memory"]), X)
        assert oi.get_mem_object(o["memory"]).int_ptr == handles["buffer"]
    if "stream" in o:
        o["stream"].wait()
        assert oi.get_command_queue(o["stream"]).int_ptr == handles["queue"]
    if "engine" in o:
        assert oi.get_context(o["engine"]).int_ptr == handles["context"]
    if "buffer" in o:
        queue = o["queue"] if "queue" in o else cl.CommandQueue(context, device)
        np.testing.assert_array_equal(_read_buffer(queue, o["buffer"], X), X)
    if "queue" in o:
        o["queue"].finish()
    if "context" in o:
        assert o["context"].int_ptr == handles["context"]


def _core_round(device, context, order):
    o = {"context": _alias(context)}
    o["queue"] = cl.CommandQueue(o["context"], device)
    o["buffer"] = cl.Buffer(o["context"], MF.READ_WRITE, X.nbytes)
    watchers = {"context": context, "queue": _alias(o["queue"]), "buffer": _alias(o["buffer"])}
    handles = {name: w.int_ptr for name, w in watchers.items()}
    before = {name: w.reference_count for name, w in watchers.items()}

    o["engine"] = oi.make_engine(device, o["context"])
    o["stream"] = oi.make_stream(o["engine"], o["queue"])
    o["memory"] = oi.make_memory(DESC, o["engine"], o["buffer"])
    o["primitive"] = _relu(o["engine"])
    dst = dnnl.memory(DESC, o["engine"])
    dnnl.arrays.write(o["memory"], X)

    def check(step, dst_alive=True):
        engine_alive = dst_alive or any(k in o for k in ("engine", "stream", "memory", "primitive"))
        for name, held in (("context", engine_alive), ("queue", "stream" in o), ("buffer", "memory" in o)):
            _assert_count(name, watchers[name], before[name] - (name not in o), held, step)

    _drop_one_by_one(o, order, check, _use_core, dst, handles, context, device)
    np.testing.assert_array_equal(dnnl.arrays.read(dst), RELU)
    del dst
    gc.collect()
    check(f"{order}, all dropped", dst_alive=False)


@pytest.mark.timeout(900)
def test_core_objects_dropped_in_every_order(cl_device, cheap_gc):
    context = cl.Context([cl_device])
    _warm_up_primitives(cl_device, context)
    orders = _orders(CORE, 5040)
    _run_orders(_core_round, orders, cl_device, context)
    _finish_test(context)


# --------------- engine, stream, memories, primitive_desc, primitive (720)

ENGINE_SET = ("engine", "stream", "src", "weights", "pd", "primitive")


def _use_matmul(o, dst, handles, queue_watcher):
    prims = []
    if "primitive" in o:
        prims.append(o["primitive"])
    if "pd" in o:
        assert oi.get_context(o["pd"].get_engine()).int_ptr == handles["context"]
        prims.append(dnnl.matmul(o["pd"]))  # a primitive from a pd that outlived its engine
    for prim in prims:
        dnnl.arrays.write(dst, np.full((M, N), -7.0, np.float32))
        engine = o["pd"].get_engine() if "pd" in o else dst.get_engine()
        stream = o["stream"] if "stream" in o else oi.make_stream(engine, queue_watcher)
        src = o["src"] if "src" in o else _filled(engine, A)
        weights = o["weights"] if "weights" in o else _filled(engine, B)
        prim.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: weights, dnnl.ARG_DST: dst})
        stream.wait()
        np.testing.assert_array_equal(dnnl.arrays.read(dst), C)
    if "src" in o:
        assert oi.get_memory_kind(o["src"]) == oi.memory_kind.usm
        np.testing.assert_array_equal(dnnl.arrays.read(o["src"]), A)
    if "weights" in o:
        assert oi.get_memory_kind(o["weights"]) == oi.memory_kind.buffer
        np.testing.assert_array_equal(dnnl.arrays.read(o["weights"]), B)
    if "stream" in o:
        o["stream"].wait()
        assert oi.get_command_queue(o["stream"]).int_ptr == handles["queue"]
    if "engine" in o:
        assert oi.get_context(o["engine"]).int_ptr == handles["context"]


def _engine_round(device, context, order):
    queue = cl.CommandQueue(context, device)
    watchers = {"context": context, "queue": _alias(queue)}
    handles = {name: w.int_ptr for name, w in watchers.items()}
    before = {name: w.reference_count - (name == "queue") for name, w in watchers.items()}
    o = {"engine": oi.make_engine(device, context)}
    o["stream"] = oi.make_stream(o["engine"], queue)
    del queue  # only the watcher and the stream hold it now
    o["src"] = oi.make_memory(plain_desc((M, K)), o["engine"], oi.memory_kind.usm)
    o["weights"] = oi.make_memory(plain_desc((K, N)), o["engine"], oi.memory_kind.buffer)
    dnnl.arrays.write(o["src"], A)
    dnnl.arrays.write(o["weights"], B)
    o["pd"] = _matmul_pd(o["engine"])
    o["primitive"] = dnnl.matmul(o["pd"])
    dst = dnnl.memory(plain_desc((M, N)), o["engine"])

    def check(step, dst_alive=True):
        _assert_count("context", context, before["context"], dst_alive or bool(o), step)
        _assert_count("queue", watchers["queue"], before["queue"], "stream" in o, step)

    _drop_one_by_one(o, order, check, _use_matmul, dst, handles, watchers["queue"])
    np.testing.assert_array_equal(dnnl.arrays.read(dst), C)
    del dst
    gc.collect()
    check(f"{order}, all dropped", dst_alive=False)


@pytest.mark.timeout(600)
def test_engine_and_primitive_desc_dropped_in_every_order(cl_device, cheap_gc):
    context = cl.Context([cl_device])
    _warm_up_primitives(cl_device, context)
    orders = _orders(ENGINE_SET, 720)
    _run_orders(_engine_round, orders, cl_device, context)
    _finish_test(context)


# ------------- stream before the events it returned, out of order (120)

EVENT_SET = ("engine", "stream", "primitive", "src", "event")


def _use_events(o, dst, queue, src_buf, dst_buf, handles):
    if "event" in o:
        event = o["event"]
        event.wait()
        assert event.command_execution_status == COMPLETE
        assert _settled_reference_count(event) == 1, "the returned event is not owned by the caller alone"
        assert event.get_info(cl.event_info.COMMAND_QUEUE).int_ptr == handles["queue"]
        np.testing.assert_array_equal(_read_buffer(queue, dst_buf, X, wait_for=[event]), RELU)
    if "primitive" in o:
        clear = cl.enqueue_copy(queue, dst_buf, SENTINEL, is_blocking=False)
        engine = dst.get_engine()
        stream = o["stream"] if "stream" in o else oi.make_stream(engine, queue)
        src = o["src"] if "src" in o else oi.make_memory(DESC, engine, src_buf)
        deps = [clear] + ([o["event"]] if "event" in o else [])
        event = oi.execute(o["primitive"], stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst}, deps)
        assert isinstance(event, cl.Event)
        np.testing.assert_array_equal(_read_buffer(queue, dst_buf, X, wait_for=[event]), RELU)
    if "src" in o:
        assert oi.get_mem_object(o["src"]).int_ptr == src_buf.int_ptr
    if "stream" in o:
        o["stream"].wait()
    if "engine" in o:
        assert oi.get_context(o["engine"]).int_ptr == handles["context"]


def _event_round(device, context, order):
    queue = cl.CommandQueue(context, device, properties=OOO)
    src_buf = cl.Buffer(context, MF.READ_WRITE, X.nbytes)
    dst_buf = cl.Buffer(context, MF.READ_WRITE, X.nbytes)
    watchers = {"context": context, "queue": queue, "src_buf": src_buf, "dst_buf": dst_buf}
    handles = {name: w.int_ptr for name, w in watchers.items()}
    before = {name: w.reference_count for name, w in watchers.items()}
    _write_buffer(queue, src_buf, X)
    fill = cl.enqueue_copy(queue, dst_buf, SENTINEL, is_blocking=False)

    o = {"engine": oi.make_engine(device, context)}
    o["stream"] = oi.make_stream(o["engine"], queue)
    o["primitive"] = _relu(o["engine"])
    o["src"] = oi.make_memory(DESC, o["engine"], src_buf)
    dst = oi.make_memory(DESC, o["engine"], dst_buf)
    o["event"] = oi.execute(o["primitive"], o["stream"], {dnnl.ARG_SRC: o["src"], dnnl.ARG_DST: dst},
                            [fill])
    del fill

    def check(step, dst_alive=True):
        _assert_count("context", context, before["context"],
                      dst_alive or any(k in o for k in ("engine", "stream", "primitive", "src")), step)
        # an event may or may not keep its queue (up to the OpenCL runtime)
        queue_held = True if "stream" in o else (None if "event" in o else False)
        _assert_count("queue", queue, before["queue"], queue_held, step)
        _assert_count("src_buf", src_buf, before["src_buf"], "src" in o, step)
        _assert_count("dst_buf", dst_buf, before["dst_buf"], dst_alive, step)

    _drop_one_by_one(o, order, check, _use_events, dst, queue, src_buf, dst_buf, handles)
    del dst
    gc.collect()
    queue.finish()
    check(f"{order}, all dropped", dst_alive=False)


@pytest.mark.timeout(300)
def test_stream_and_events_dropped_in_every_order(cl_device, cheap_gc):
    context = cl.Context([cl_device])
    _warm_up_primitives(cl_device, context)
    orders = _orders(EVENT_SET, 120)
    _run_orders(_event_round, orders, cl_device, context)
    _finish_test(context)


# --------- graph: allocator, engine, stream, compiled partition, tensors (720)

@pytest.fixture(scope="module")
def partition():
    return attention_partition(BATCH, SEQ, HEAD)


def _check_attention(result):
    np.testing.assert_allclose(result, ATTENTION, rtol=1e-5, atol=1e-5)


GRAPH_SET = ("allocator", "engine", "stream", "compiled", "inputs", "output")


def _graph_engine_of(o):
    if "engine" in o:
        return o["engine"]
    if "stream" in o:
        return o["stream"].get_engine()
    for name in ("inputs", "output"):
        if name in o:
            return (o[name][0] if name == "inputs" else o[name]).get_engine()
    return None


def _use_graph(o, partition, queue, handles, stats):
    out_port = partition.get_output_ports()[0]
    engine = _graph_engine_of(o)
    if "compiled" in o and engine is not None:
        # (a compiled partition alone cannot make tensors or streams: it is
        # used again as soon as any object of its engine is left)
        stream = o["stream"] if "stream" in o else oi.make_stream(engine, queue)
        inputs = o["inputs"] if "inputs" in o else allocated_inputs(partition, engine, queue, QKV)
        output = o["output"] if "output" in o else g.tensor(out_port, engine, dnnl.MEMORY_ALLOCATE)
        upload(queue, output.get_data_handle(), np.zeros(SHAPE, np.float32))
        o["compiled"].execute(stream, inputs, [output])
        stream.wait()
        _check_attention(download(queue, output.get_data_handle(), SHAPE))
    if "inputs" in o:
        for tensor in o["inputs"]:
            expected = QKV[tensor.get_logical_tensor().get_id()]
            np.testing.assert_array_equal(download(queue, tensor.get_data_handle(), SHAPE), expected)
    if "output" in o:
        _check_attention(download(queue, o["output"].get_data_handle(), SHAPE))
    if "stream" in o:
        o["stream"].wait()
        assert oi.get_command_queue(o["stream"]).int_ptr == handles["queue"]
    if "engine" in o:
        assert oi.get_context(o["engine"]).int_ptr == handles["context"]
        # the engine still reaches its allocator's callables
        allocations = stats.allocations
        tensor = g.tensor(out_port, o["engine"], dnnl.MEMORY_ALLOCATE)
        assert stats.allocations == allocations + 1
        assert stats.sizes[tensor.get_data_handle()] >= out_port.get_mem_size()


def _graph_round(device, context, partition, order):
    queue = cl.CommandQueue(context, device)
    watchers = {"context": context, "queue": _alias(queue)}
    handles = {name: w.int_ptr for name, w in watchers.items()}
    before = {name: w.reference_count - (name == "queue") for name, w in watchers.items()}
    statistics = g.allocators.statistics_allocator()
    stats = statistics.stats
    o = {"allocator": statistics}
    o["engine"] = goi.make_engine_with_allocator(device, context, statistics.allocator)
    del statistics
    o["stream"] = oi.make_stream(o["engine"], queue)
    del queue
    o["compiled"] = compile_partition(partition, o["engine"])
    o["inputs"] = allocated_inputs(partition, o["engine"], watchers["queue"], QKV)
    o["output"] = g.tensor(partition.get_output_ports()[0], o["engine"], dnnl.MEMORY_ALLOCATE)

    def check(step):
        engine_alive = any(k in o for k in ("engine", "stream", "compiled", "inputs", "output"))
        # the allocator may keep the context of the last call it served
        context_held = True if engine_alive else (None if "allocator" in o else False)
        _assert_count("context", context, before["context"], context_held, step)
        _assert_count("queue", watchers["queue"], before["queue"], "stream" in o, step)

    _drop_one_by_one(o, order, check, _use_graph, partition, watchers["queue"], handles, stats)
    assert stats.allocations > 0
    _assert_allocator_freed_all(stats, order)


@pytest.mark.timeout(900)
def test_graph_objects_dropped_in_every_order(cl_device, partition, no_compiled_partition_cache,
                                             cheap_gc):
    context = cl.Context([cl_device])
    # compile once: oneDNN's caches keep the kernels (and the context) from now on
    warm = g.allocators.statistics_allocator()
    engine = goi.make_engine_with_allocator(cl_device, context, warm.allocator)
    compile_partition(partition, engine)
    _warm_up_primitives(cl_device, context)
    del engine, warm
    gc.collect()
    orders = _orders(GRAPH_SET, 720)
    _run_orders(_graph_round, orders, cl_device, context, partition)
    _finish_test(context)


@pytest.mark.parametrize("allocator", ["default", "statistics"])
def test_graph_tensor_outliving_its_engine_frees_its_memory(cl_device, partition, allocator,
                                                            cheap_gc):
    """A MEMORY_ALLOCATE tensor keeps its engine: dropped after the engine's
    last other reference, it still hands its memory back (to oneDNN's own
    allocator, or to the engine's Python allocator)."""
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context, cl_device)
    statistics = g.allocators.statistics_allocator() if allocator == "statistics" else None
    if statistics is None:
        engine = oi.make_engine(cl_device, context)
    else:
        engine = goi.make_engine_with_allocator(cl_device, context, statistics.allocator)
    tensor = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    ptr = tensor.get_data_handle()
    upload(queue, ptr, QKV[0])
    del engine
    gc.collect()
    assert tensor.get_engine() is not None
    np.testing.assert_array_equal(download(queue, ptr, SHAPE), QKV[0])
    assert usm.pointer_type(context, ptr) != "unknown"
    del tensor
    gc.collect()
    assert usm.pointer_type(context, ptr) == "unknown", (
        "the memory of a tensor dropped after its engine was never freed")
    if statistics is not None:
        stats = statistics.stats
        assert (stats.allocations, stats.frees, stats.live_bytes) == (1, 1, 0)
    del queue, statistics
    _finish_test(context)


GRAPH_EVENT_SET = ("engine", "stream", "compiled", "tensors", "event")


def _graph_event_round(device, context, partition, copy_queue, order):
    queue = cl.CommandQueue(context, device, properties=OOO)
    queue_before = queue.reference_count
    statistics = g.allocators.statistics_allocator()
    stats = statistics.stats
    o = {"engine": goi.make_engine_with_allocator(device, context, statistics.allocator)}
    del statistics
    o["stream"] = oi.make_stream(o["engine"], queue)
    o["compiled"] = compile_partition(partition, o["engine"])
    inputs = allocated_inputs(partition, o["engine"], copy_queue, QKV)
    output = g.tensor(partition.get_output_ports()[0], o["engine"], dnnl.MEMORY_ALLOCATE)
    out_ptr = output.get_data_handle()
    o["tensors"] = (inputs, output)
    o["event"] = goi.execute(o["compiled"], o["stream"], inputs, [output])
    assert isinstance(o["event"], cl.Event)
    del inputs, output
    for name in order:
        step = f"{order}, after dropping {name}"
        del o[name]
        gc.collect()
        if "event" in o:
            o["event"].wait()
            assert o["event"].command_execution_status == COMPLETE, step
            assert _settled_reference_count(o["event"]) == 1, step
        if "tensors" in o:
            # the output (whichever other objects are gone) holds the result
            queue.finish()
            _check_attention(download(copy_queue, out_ptr, SHAPE))
        if "stream" in o:
            o["stream"].wait()
        held = True if "stream" in o else (None if "event" in o else False)
        _assert_count("queue", queue, queue_before, held, step)
    _assert_allocator_freed_all(stats, order)


@pytest.mark.timeout(300)
def test_graph_stream_before_its_events_in_every_order(cl_device, partition, cheap_gc):
    context = cl.Context([cl_device])
    copy_queue = cl.CommandQueue(context, cl_device)
    orders = _orders(GRAPH_EVENT_SET, 120)
    _run_orders(_graph_event_round, orders, cl_device, context, partition, copy_queue)
    del copy_queue
    _finish_test(context)


# --------------------------- returned OpenCL objects hold their own reference

def test_accessors_return_objects_with_their_own_reference(cl_device, cheap_gc):
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context, cl_device)
    buffer = cl.Buffer(context, MF.READ_WRITE, X.nbytes)
    context_before = context.reference_count
    engine = oi.make_engine(cl_device, context)
    stream = oi.make_stream(engine, queue)
    memory = oi.make_memory(DESC, engine, buffer)
    dnnl.arrays.write(memory, X)

    cases = [
        ("get_context", functools.partial(oi.get_context, engine), context, cl.Context),
        ("get_command_queue", functools.partial(oi.get_command_queue, stream), queue, cl.CommandQueue),
        ("get_mem_object", functools.partial(oi.get_mem_object, memory), buffer, cl.Buffer),
    ]
    for name, get, target, kind in cases:
        before = target.reference_count
        returned = [get() for _ in range(3)]
        for obj in returned:
            assert isinstance(obj, kind) and obj.int_ptr == target.int_ptr, name
        assert target.reference_count == before + 3, f"{name}: the returned objects hold no reference"
        del returned, obj
        gc.collect()
        assert target.reference_count == before, f"{name}: a dropped returned object kept its reference"
    del cases, get, target

    # the returned objects outlive everything else and still work
    got_context = oi.get_context(engine)
    got_queue = oi.get_command_queue(stream)
    got_buffer = oi.get_mem_object(memory)
    queue_handle, buffer_handle = queue.int_ptr, buffer.int_ptr
    del engine, stream, memory, context, queue, buffer
    gc.collect()
    assert (got_queue.int_ptr, got_buffer.int_ptr) == (queue_handle, buffer_handle)
    assert got_queue.reference_count == 1
    assert got_buffer.reference_count == 1
    assert got_context.reference_count == context_before  # ours replaced by got_context's
    np.testing.assert_array_equal(_read_buffer(got_queue, got_buffer, X), X)
    extra = cl.Buffer(got_context, MF.READ_WRITE, 64)
    assert extra.context.int_ptr == got_context.int_ptr
    del extra, got_queue, got_buffer
    gc.collect()
    assert got_context.reference_count == 1


def test_get_device_is_kept_alive_by_the_engine_and_its_objects(cl_device, cheap_gc):
    """pyopencl cannot own a reference to a device wrapped from a handle
    (Device.from_int_ptr never retains), so get_device's object borrows the
    engine's: the engine, and every object keeping the engine, keep the
    device alive. Root devices are not reference counted: use a sub-device."""
    sub, _all = first_sub_device(cl_device)
    if sub is None:
        pytest.fail("the device cannot be partitioned: no reference-counted device to check")
    context = cl.Context([sub])
    start = sub.reference_count
    engine = oi.make_engine(sub, context)
    with_engine = sub.reference_count
    assert with_engine == start + 1, "the engine does not retain its sub-device"
    returned = [oi.get_device(engine) for _ in range(2)]
    assert all(isinstance(d, cl.Device) and d.int_ptr == sub.int_ptr for d in returned)
    assert sub.reference_count == with_engine  # borrowed, as documented
    mem = _filled(engine, X)
    del engine
    gc.collect()
    # the memory keeps the engine, and so the sub-device: the returned devices still work
    assert sub.reference_count == with_engine
    np.testing.assert_array_equal(dnnl.arrays.read(mem), X)
    assert returned[0].max_compute_units >= 1
    del returned, mem
    gc.collect()
    assert sub.reference_count == start
    assert context.reference_count == 1


# --------------------------------------------------- USM allocation views

@pytest.mark.parametrize("kind", ["shared", "host"])
def test_usm_allocation_views_keep_the_allocation_alive(cl_device, kind, cheap_gc):
    context = cl.Context([cl_device])
    engine = oi.make_engine(cl_device, context)
    stream = dnnl.stream(engine)
    allocation = usm.allocation(context, X.nbytes, kind, cl_device)
    ptr = allocation.ptr
    view = allocation.as_array(np.float32, DESC_DIMS)
    view[...] = X
    memory = oi.make_memory(DESC, engine, oi.memory_kind.usm, ptr)
    assert memory.get_data_handle() == ptr

    del allocation
    gc.collect()
    assert usm.pointer_type(context, ptr) == kind, "the allocation was freed while a view used it"
    _relu(engine).execute(stream, {dnnl.ARG_SRC: memory, dnnl.ARG_DST: memory})
    stream.wait()
    np.testing.assert_array_equal(view, RELU)  # oneDNN wrote through the memory, seen by the view

    row = view[1]  # a view of the view also keeps it
    del view
    gc.collect()
    assert usm.pointer_type(context, ptr) == kind
    np.testing.assert_array_equal(row, RELU[1])
    np.testing.assert_array_equal(dnnl.arrays.read(memory), RELU)
    del row
    gc.collect()
    assert usm.pointer_type(context, ptr) == "unknown", "the allocation outlived its last view"
    del memory, stream, engine
    _finish_test(context)


# -------------------- every kind of object and event: counts back at start

def test_counts_return_to_start_after_every_kind_of_object(cl_device, partition, cheap_gc):
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context, cl_device)
    ooo_queue = cl.CommandQueue(context, cl_device, properties=OOO)
    src_buf = cl.Buffer(context, MF.READ_WRITE, X.nbytes)
    dst_buf = cl.Buffer(context, MF.READ_WRITE, X.nbytes)
    gate = cl.UserEvent(context)
    watched = {"context": context, "queue": queue, "ooo_queue": ooo_queue,
               "src_buf": src_buf, "dst_buf": dst_buf, "gate": gate}
    start = {name: obj.reference_count for name, obj in watched.items()}
    statistics = g.allocators.statistics_allocator()
    stats = statistics.stats

    def run(queue, ooo_queue, src_buf, dst_buf, gate, statistics):
        _write_buffer(queue, src_buf, X)
        engine = oi.make_engine(cl_device, context)
        stream = oi.make_stream(engine, queue)
        ooo = oi.make_stream(engine, ooo_queue)
        src = oi.make_memory(DESC, engine, src_buf)
        dst = oi.make_memory(DESC, engine, oi.memory_kind.buffer, dst_buf)
        usm_mem = oi.make_memory(DESC, engine, oi.memory_kind.usm)
        allocated = dnnl.memory(DESC, engine)
        relu = _relu(engine)
        assert oi.execute(relu, stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: usm_mem}) is None
        stream.wait()
        view = usm_mem.map_data()
        np.testing.assert_array_equal(view, RELU)
        usm_mem.unmap_data(view)
        first = oi.execute(relu, ooo, {dnnl.ARG_SRC: usm_mem, dnnl.ARG_DST: allocated}, [gate])
        second = oi.execute(relu, ooo, {dnnl.ARG_SRC: allocated, dnnl.ARG_DST: dst}, [first, gate])
        gate.set_status(COMPLETE)
        np.testing.assert_array_equal(_read_buffer(ooo_queue, dst_buf, X, wait_for=[second]), RELU)
        oi.get_context(engine), oi.get_device(engine), oi.get_command_queue(ooo), oi.get_mem_object(dst)

        graph_engine = goi.make_engine_with_allocator(cl_device, context, statistics.allocator)
        compiled = compile_partition(partition, graph_engine)
        inputs = allocated_inputs(partition, graph_engine, queue, QKV)
        output = g.tensor(partition.get_output_ports()[0], graph_engine, dnnl.MEMORY_ALLOCATE)
        compiled.execute(oi.make_stream(graph_engine, queue), inputs, [output])
        queue.finish()
        _check_attention(download(queue, output.get_data_handle(), SHAPE))
        graph_ooo = oi.make_stream(graph_engine, ooo_queue)
        upload(queue, output.get_data_handle(), np.zeros(SHAPE, np.float32))
        event = goi.execute(compiled, graph_ooo, inputs, [output], deps=[second])
        event.wait()
        _check_attention(download(queue, output.get_data_handle(), SHAPE))
        return [first, second, event]

    events = run(queue, ooo_queue, src_buf, dst_buf, gate, statistics)
    gc.collect()
    queue.finish()
    ooo_queue.finish()
    for event in events:
        assert _settled_reference_count(event) == 1, "an event returned by execute has other owners"
    del events, event
    gc.collect()
    counts = {name: obj.reference_count for name, obj in watched.items()}
    del counts["context"]  # oneDNN's caches hold kernels: checked by _finish_test
    assert counts == {name: n for name, n in start.items() if name != "context"}
    assert stats.allocations > 0 and (stats.allocations, stats.live_bytes) == (stats.frees, 0)
    del statistics, queue, ooo_queue, src_buf, dst_buf, gate, watched
    _finish_test(context)


# ------------------------- oneDNN's caches, emptied through the binding

def test_primitive_cache_can_be_emptied_from_python(cl_device, cheap_gc):
    """dnnl::set_primitive_cache_capacity / get_primitive_cache_capacity
    (dnnl.hpp): without them a Python program cannot release the contexts
    that cached primitives keep."""
    context = cl.Context([cl_device])
    engine = oi.make_engine(cl_device, context)
    stream = dnnl.stream(engine)
    mem = _filled(engine, X)
    _relu(engine).execute(stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(mem), RELU)
    del engine, stream, mem
    gc.collect()
    capacity = dnnl.get_primitive_cache_capacity()
    assert isinstance(capacity, int) and capacity > 0
    try:
        dnnl.set_primitive_cache_capacity(0)
        assert dnnl.get_primitive_cache_capacity() == 0
    finally:
        dnnl.set_primitive_cache_capacity(capacity)
    assert dnnl.get_primitive_cache_capacity() == capacity
    assert context.reference_count == 1


def test_compiled_partition_cache_can_be_emptied_from_python(cl_device, partition, cheap_gc):
    """dnnl::graph::set_compiled_partition_cache_capacity /
    get_compiled_partition_cache_capacity (dnnl_graph.hpp)."""
    empty_onednn_caches()  # only the compiled partition's kernels below
    context = cl.Context([cl_device])
    engine = goi.make_engine_with_allocator(cl_device, context,
                                            g.allocators.statistics_allocator().allocator)
    compile_partition(partition, engine)
    del engine
    gc.collect()
    capacity = g.get_compiled_partition_cache_capacity()
    assert isinstance(capacity, int) and capacity > 0
    primitive_capacity = dnnl.get_primitive_cache_capacity()
    try:
        g.set_compiled_partition_cache_capacity(0)
        dnnl.set_primitive_cache_capacity(0)  # graph kernels may live in primitives too
        assert g.get_compiled_partition_cache_capacity() == 0
    finally:
        g.set_compiled_partition_cache_capacity(capacity)
        dnnl.set_primitive_cache_capacity(primitive_capacity)
    assert g.get_compiled_partition_cache_capacity() == capacity
    assert context.reference_count == 1


_DROP_BEFORE_WAIT = CHILD_STREAM + """
import numpy as np
other_queue = cl.CommandQueue(context, device)  # not ordered after the matmuls
n = 384
square = dnnl.memory.desc([n, n], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
matmul = dnnl.matmul(dnnl.matmul.primitive_desc(engine, square, square, square))
nan = np.full((n, n), np.nan, np.float32)
results, junk = [], []
for _ in range(5):
    a, b, c = (oi.make_memory(square, engine, oi.memory_kind.usm) for _ in range(3))
    for m in (a, b):
        dnnl.arrays.write(m, np.ones((n, n), np.float32))
    matmul.execute(stream, {dnnl.ARG_SRC: a, dnnl.ARG_WEIGHTS: b, dnnl.ARG_DST: c})
    del a, b  # dropped while the kernel runs
    # Storage of the same size, filled with NaN on another queue: storage
    # freed under the kernel would be handed out again here and overwritten.
    for _ in range(2):
        ptr = dnnl.usm.device_alloc(context, device, square.get_size())
        dnnl.usm.memcpy(other_queue, ptr, nan, nan.nbytes).wait()
        junk.append(ptr)
    results.append(c)
stream.wait()
for c in results:
    np.testing.assert_array_equal(dnnl.arrays.read(c), np.full((n, n), float(n), np.float32))
for ptr in junk:
    dnnl.usm.free(context, ptr)
print("ok")
"""


def test_usm_memory_dropped_while_a_kernel_uses_it():
    """USM memory allocated for a memory (MEMORY_ALLOCATE) and dropped right
    after execute, before the stream is waited on: its storage is freed only
    once the kernel has finished (oneDNN's own non-blocking free would free
    it under the kernel). The kernel's results are read: storage allocated
    right after the drop and filled with NaN would show in them had the
    sources been freed early (or the CPU runtime would crash). In a
    subprocess, so that a crash is a failure with its signal rather than the
    end of the run."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", _DROP_BEFORE_WAIT], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "ok", (
        f"exit {result.returncode}\n{result.stdout}\n{result.stderr[-3000:]}")


# ------------------------ a recorded stream whose engine is gone before stop()

def test_recorded_stream_outlives_its_engine_objects(cl_device, cheap_gc):
    """A dnnl.profiling recorder keeps what it recorded readable after every
    Python object of a stream's engine is dropped: a oneDNN stream does not
    own its engine, and stop() used to read the freed engine through the
    stream (it raised invalid_arguments, "could not get an OpenCL command
    queue", and lost the whole recording; with the memory reused, it read
    whatever was there)."""
    def run_on_own_engine():
        context = cl.Context([cl_device])
        queue = cl.CommandQueue(context, cl_device,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
        engine = oi.make_engine(cl_device, context)
        stream = oi.make_stream(engine, queue)
        relu = _relu(engine)
        relu.execute(stream, {dnnl.ARG_SRC: dnnl.memory(DESC, engine), dnnl.ARG_DST: dnnl.memory(DESC, engine)})
        return queue.int_ptr

    with dnnl.profiling.recorder() as recorder:
        queue_handle = run_on_own_engine()
        gc.collect()
        churn = [oi.make_engine(cl_device, cl.Context([cl_device])) for _ in range(5)]
    del churn
    assert [(e.name, e.queue) for e in recorder.executions] == [("eltwise", queue_handle)]
    assert recorder.executions[0].kernel_ns
