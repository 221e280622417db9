"""OpenCL interop streams.

Mirrors oneDNN's tests/gtests/ocl/api/test_stream.cpp: a stream oneDNN creates
runs on a queue of the engine's device and context (CreateC/Cpp); a stream on
the user's queue reports that queue and retains it (reference count 2 while
the stream lives, 1 after; BasicInteropC/Cpp); an out-of-order user queue
makes an out-of-order stream (out_of_order_queue); profiling is refused with
out-of-order queues (TestProfilingAPIOutOfOrderQueue). Queues of another
context are refused in test_bad_input.py.
"""

import gc
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, CHILD_ENGINE, DT, MF, OOO, TAG, oi, usm

QP = cl.command_queue_properties


def _round_trip_through(queue, engine):
    """Copy data into oneDNN memory on `queue` and read it back with map_data."""
    desc = dnnl.memory.desc([4, 5], DT.f32, TAG.ab)
    mem = dnnl.memory(desc, engine)
    expected = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    cl.enqueue_copy(queue, oi.get_mem_object(mem), expected)
    queue.finish()
    view = mem.map_data()
    try:
        np.testing.assert_array_equal(view, expected)
    finally:
        mem.unmap_data(view)


def test_library_stream_runs_on_the_engines_device_and_context(engine, cl_device, cl_context):
    stream = dnnl.stream(engine)
    queue = oi.get_command_queue(stream)
    assert isinstance(queue, cl.CommandQueue)
    assert queue.device == cl_device
    assert queue.context == cl_context
    assert not queue.properties & OOO
    assert stream.get_engine() == engine
    _round_trip_through(queue, engine)


def test_library_stream_with_in_order_flag(engine):
    stream = dnnl.stream(engine, flags=dnnl.stream.flags.in_order)
    assert not oi.get_command_queue(stream).properties & OOO
    assert dnnl.stream.flags.default_flags == dnnl.stream.flags.in_order


def test_library_stream_with_out_of_order_flag(engine, cl_context):
    stream = dnnl.stream(engine, dnnl.stream.flags.out_of_order)
    queue = oi.get_command_queue(stream)
    assert queue.properties & OOO
    assert queue.context == cl_context
    stream.wait()


def test_library_stream_with_profiling_flag(engine):
    stream = dnnl.stream(engine, dnnl.stream.flags.profiling)
    assert oi.get_command_queue(stream).properties & QP.PROFILING_ENABLE
    stream.wait()


@pytest.mark.parametrize("capture", ["1", "0"], ids=["interposer", "default"])
def test_profiling_is_refused_with_out_of_order_saying_why(capture):
    # oneDNN says why only in its verbose output: with the interposer the
    # refusal carries it; by default its message says how to get it. In a
    # fresh process: the setting is the process's.
    script = CHILD_ENGINE + textwrap.dedent("""
        import json
        QP = cl.command_queue_properties
        found = []
        try:
            dnnl.stream(engine, dnnl.stream.flags.profiling | dnnl.stream.flags.out_of_order)
        except dnnl.invalid_arguments as e:
            found.append([str(e), e.reasons])
        queue = cl.CommandQueue(context, device,
                                properties=QP.PROFILING_ENABLE | QP.OUT_OF_ORDER_EXEC_MODE_ENABLE)
        try:
            dnnl.ocl_interop.make_stream(engine, queue)
        except dnnl.invalid_arguments as e:
            found.append([str(e), e.reasons])
        print(json.dumps(found))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_VERBOSE", "DNNL_VERBOSE")}
    env["DNNL_OCL_INTEROP_VERBOSE_CAPTURE"] = capture
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=300, env=env)
    assert child.returncode == 0, child.stderr
    found = json.loads(child.stdout.splitlines()[-1])
    assert len(found) == 2  # both refused (invalid_arguments)
    why = "profiling is not supported with out-of-order queues"
    for message, reasons in found:
        if capture == "1":
            assert why in message and any(why in line for line in reasons)
        else:
            assert reasons == [] and "DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1" in message


def test_make_stream_reports_the_users_queue(engine, cl_queue):
    stream = oi.make_stream(engine, cl_queue)
    queue = oi.get_command_queue(stream)
    assert queue.int_ptr == cl_queue.int_ptr
    assert queue == cl_queue
    assert stream.get_engine() == engine


def test_make_stream_from_int_handle(engine, cl_queue):
    stream = oi.make_stream(engine, cl_queue.int_ptr)
    assert oi.get_command_queue(stream) == cl_queue


def test_stream_retains_and_releases_the_users_queue(engine, cl_context, cl_device):
    queue = cl.CommandQueue(cl_context, cl_device)
    assert queue.reference_count == 1
    stream = oi.make_stream(engine, queue)
    assert queue.reference_count == 2
    returned = oi.get_command_queue(stream)
    assert queue.reference_count == 3  # the accessor's object holds its own
    del returned
    gc.collect()
    assert queue.reference_count == 2
    del stream
    gc.collect()
    assert queue.reference_count == 1


def test_stream_keeps_a_dropped_queue_alive(engine, cl_context, cl_device):
    queue = cl.CommandQueue(cl_context, cl_device)
    handle = queue.int_ptr
    stream = oi.make_stream(engine, queue)
    del queue
    gc.collect()
    kept = oi.get_command_queue(stream)
    assert kept.int_ptr == handle
    assert kept.reference_count == 2  # the stream's and kept's
    _round_trip_through(kept, engine)
    stream.wait()


def test_stream_wait_waits_for_work_on_its_queue(engine, cl_queue, cl_context):
    stream = oi.make_stream(engine, cl_queue)
    n = 1 << 16
    src = np.arange(n, dtype=np.int32)
    buf = cl.Buffer(cl_context, MF.READ_WRITE, src.nbytes)
    cl.enqueue_copy(cl_queue, buf, src, is_blocking=False)
    marker = cl.enqueue_marker(cl_queue)
    stream.wait()
    assert marker.command_execution_status == cl.command_execution_status.COMPLETE
    out = np.empty_like(src)
    cl.enqueue_copy(cl_queue, out, buf)
    np.testing.assert_array_equal(out, src)


def test_out_of_order_queue_makes_out_of_order_stream(engine, cl_ooo_queue):
    stream = oi.make_stream(engine, cl_ooo_queue)
    queue = oi.get_command_queue(stream)
    assert queue == cl_ooo_queue
    assert queue.properties & OOO


def test_out_of_order_stream_orders_work_by_events(engine, cl_ooo_queue):
    # out_of_order_queue: clEnqueueWriteBuffer -> eltwise (relu) in place ->
    # clEnqueueReadBuffer, each waiting only for the previous one's event.
    desc = dnnl.memory.desc([2, 3, 4, 5], DT.f32, TAG.nchw)
    pd = dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward, ALG.eltwise_relu, desc, desc, 0.0)
    relu = dnnl.eltwise_forward(pd)
    mem = oi.make_memory(desc, engine, oi.memory_kind.buffer)
    stream = oi.make_stream(engine, cl_ooo_queue)

    size = int(np.prod(desc.get_dims()))
    src = (np.arange(size) - size // 2).astype(np.float32)
    write = cl.enqueue_copy(cl_ooo_queue, oi.get_mem_object(mem), src, is_blocking=False)
    done = oi.execute(relu, stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem}, [write])
    assert isinstance(done, cl.Event)
    dst = np.full(size, -1, dtype=np.float32)
    read = cl.enqueue_copy(cl_ooo_queue, dst, oi.get_mem_object(mem), is_blocking=False,
                           wait_for=[done])
    read.wait()
    np.testing.assert_array_equal(dst, np.maximum(src, 0))


def test_usm_copies_ordered_by_events_on_out_of_order_stream(engine, cl_ooo_queue,
                                                            cl_context, cl_device):
    stream = oi.make_stream(engine, cl_ooo_queue)
    queue = oi.get_command_queue(stream)
    n = 64
    a = usm.device_alloc(cl_context, cl_device, n * 4)
    b = usm.device_alloc(cl_context, cl_device, n * 4)
    try:
        value = np.float32(2.5)
        filled = usm.fill(queue, a, value.tobytes(), n * 4)
        copied = usm.memcpy(queue, b, a, n * 4, deps=[filled])
        assert isinstance(copied, cl.Event)
        out = np.zeros(n, dtype=np.float32)
        usm.memcpy(queue, out, b, n * 4, deps=[copied])
        np.testing.assert_array_equal(out, np.full(n, value))
        stream.wait()
    finally:
        usm.free(cl_context, a)
        usm.free(cl_context, b)


def test_stream_on_a_foreign_context_engine_and_queue(cl_device):
    # A second, independent context: engine and queue that match each other.
    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context, cl_device)
    engine = oi.make_engine(cl_device, context)
    stream = oi.make_stream(engine, queue)
    assert oi.get_command_queue(stream).context == context
    _round_trip_through(queue, engine)
