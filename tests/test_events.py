"""Ordering by OpenCL events: pyopencl kernels and oneDNN primitives mixed on
an out-of-order queue.

On an out-of-order queue nothing orders commands but their wait lists, so
each chain below gives wrong results if ``dnnl.ocl_interop.execute`` dropped
its ``deps`` or returned an event that completes before the primitive does.
The first command of a chain is a deliberately slow kernel writing data that
a later command reads (on this device a command without dependencies does
overtake it: ``test_the_queue_really_runs_out_of_order`` checks that the
chains can detect lost ordering). Also: in-order streams return ``None``,
deps given as int handles, and the returned event is owned by the caller.
"""

import threading
import time

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, DT, INFERENCE, MF, TAG, oi, plain_desc, usm

STATUS = cl.command_execution_status

N = 1024
SLOW_ITERS = 4_000_000  # about a quarter of a second on the emulated device
SENTINEL = -1000.0

KERNELS = """
// dst = src, after a long loop the compiler cannot remove (mask is 0 at run time).
__kernel void slow_copy(__global const float *src, __global float *dst, int iters, uint mask) {
    int i = get_global_id(0);
    float acc = src[i];
    uint h = (uint)i;
    for (int k = 0; k < iters; ++k) {
        h = h * 1664525u + 1013904223u;
        acc += (float)(h & mask);
    }
    dst[i] = acc;
}

__kernel void affine(__global const float *src, __global float *dst, float a, float b) {
    int i = get_global_id(0);
    dst[i] = a * src[i] + b;
}

__kernel void add_into(__global const float *src, __global float *dst) {
    int i = get_global_id(0);
    dst[i] = dst[i] + src[i];
}
"""


@pytest.fixture(scope="module")
def kernels(cl_context):
    program = cl.Program(cl_context, KERNELS).build()
    return {name: cl.Kernel(program, name) for name in ("slow_copy", "affine", "add_into")}


@pytest.fixture
def ooo_stream(engine, cl_ooo_queue):
    stream = oi.make_stream(engine, cl_ooo_queue)
    return stream


def f32(x):
    return np.asarray(x, dtype=np.float32)


def buffer(context, queue, init=None, n=N):
    """A cl.Buffer of n floats holding `init` (or SENTINEL)."""
    buf = cl.Buffer(context, MF.READ_WRITE, n * 4)
    host = f32(np.full(n, SENTINEL) if init is None else init)
    cl.enqueue_copy(queue, buf, host, is_blocking=True)
    return buf


def wrap(engine, buf, dims=(N,)):
    return oi.make_memory(plain_desc(dims), engine, buf)


def read(queue, buf, wait_for, n=N):
    out = np.empty(n, np.float32)
    cl.enqueue_copy(queue, out, buf, wait_for=wait_for, is_blocking=True)
    return out


def slow_copy(kernels, queue, src, dst, wait_for=None, n=N):
    return kernels["slow_copy"](queue, (n,), None, src, dst, np.int32(SLOW_ITERS), np.uint32(0), wait_for=wait_for)


def affine(kernels, queue, src, dst, a, b, wait_for=None, n=N):
    return kernels["affine"](queue, (n,), None, src, dst, np.float32(a), np.float32(b), wait_for=wait_for)


def eltwise(engine, algorithm, alpha=0.0, beta=0.0, dims=(N,)):
    desc = plain_desc(dims)
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, algorithm, desc, desc, alpha, beta)
    return dnnl.eltwise_forward(pd)


def binary_add(engine):
    desc = dnnl.memory.desc([N], DT.f32, TAG.a)
    return dnnl.binary(dnnl.binary.primitive_desc(engine, ALG.binary_add, desc, desc, desc))


def test_the_queue_really_runs_out_of_order(cl_context, cl_ooo_queue, engine, ooo_stream, kernels):
    """Without deps, a primitive overtakes a kernel that waits for a user
    event: the chains below can tell lost ordering from kept ordering. The
    gate opens only after the primitive has finished, so this does not
    depend on timing."""
    x = np.random.default_rng(0).uniform(-1, 1, N)
    a, b, c = buffer(cl_context, cl_ooo_queue, x), buffer(cl_context, cl_ooo_queue), buffer(cl_context, cl_ooo_queue)
    prim = eltwise(engine, ALG.eltwise_linear, 2.0, 1.0)
    gate = cl.UserEvent(cl_context)
    gated = slow_copy(kernels, cl_ooo_queue, a, b, wait_for=[gate])
    ev = oi.execute(prim, ooo_stream, {dnnl.ARG_SRC: wrap(engine, b), dnnl.ARG_DST: wrap(engine, c)})
    cl_ooo_queue.flush()
    deadline = time.monotonic() + 60
    while ev.command_execution_status != cl.command_execution_status.COMPLETE:
        if time.monotonic() > deadline:
            gate.set_status(cl.command_execution_status.COMPLETE)
            pytest.fail("the primitive did not run ahead of a blocked kernel: the queue is in order")
        time.sleep(0.01)
    out = read(cl_ooo_queue, c, [ev])
    gate.set_status(cl.command_execution_status.COMPLETE)
    gated.wait()
    np.testing.assert_array_equal(out, f32(2 * SENTINEL + 1))


def test_kernel_primitive_kernel_chain(cl_context, cl_ooo_queue, engine, ooo_stream, kernels):
    """slow kernel -> eltwise -> kernel -> binary (two inputs) -> kernel,
    each step reading the previous one's output."""
    x = f32(np.random.default_rng(1).uniform(-1, 1, N))
    q = cl_ooo_queue
    a, b, c, d = (buffer(cl_context, q, x if i == 0 else None) for i in range(4))
    lin = eltwise(engine, ALG.eltwise_linear, 2.0, 1.0)
    add = binary_add(engine)

    ev1 = slow_copy(kernels, q, a, b)                                    # b = x
    ev2 = oi.execute(lin, ooo_stream, {dnnl.ARG_SRC: wrap(engine, b), dnnl.ARG_DST: wrap(engine, c)},
                     deps=[ev1])                                         # c = 2b + 1
    assert isinstance(ev2, cl.Event)
    ev3 = affine(kernels, q, c, c, 3.0, -2.0, wait_for=[ev2])             # c = 3c - 2
    ev4 = oi.execute(add, ooo_stream, {dnnl.ARG_SRC_0: wrap(engine, c), dnnl.ARG_SRC_1: wrap(engine, b),
                                       dnnl.ARG_DST: wrap(engine, d)}, deps=[ev3])  # d = c + b
    ev5 = affine(kernels, q, d, d, 0.5, 0.0, wait_for=[ev4])              # d = d / 2
    out = read(q, d, [ev5])

    ref = f32(x)
    c_ref = f32(f32(2 * ref + 1) * 3 - 2)
    np.testing.assert_allclose(out, f32((c_ref + ref) * 0.5), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("as_int", [False, True], ids=["events", "int_handles"])
def test_matmul_waits_for_two_kernels(cl_context, cl_ooo_queue, engine, ooo_stream, kernels, as_int):
    """src and weights each written by their own slow kernel; the matmul
    depends on both (given as pyopencl events or int handles)."""
    rng = np.random.default_rng(2)
    Mv, Kv, Nv = 16, 32, 32  # Mv*Kv = 512 and Kv*Nv = 1024 floats
    src, wei = f32(rng.uniform(-1, 1, (Mv, Kv))), f32(rng.uniform(-1, 1, (Kv, Nv)))
    q = cl_ooo_queue
    src_in, src_buf = buffer(cl_context, q, src.ravel(), Mv * Kv), buffer(cl_context, q, n=Mv * Kv)
    wei_in, wei_buf = buffer(cl_context, q, wei.ravel(), Kv * Nv), buffer(cl_context, q, n=Kv * Nv)
    dst_buf = buffer(cl_context, q, n=Mv * Nv)

    def d(*dims):
        return dnnl.memory.desc(list(dims), DT.f32, TAG.ab)

    mm = dnnl.matmul(dnnl.matmul.primitive_desc(engine, d(Mv, Kv), d(Kv, Nv), d(Mv, Nv)))
    ev_src = slow_copy(kernels, q, src_in, src_buf, n=Mv * Kv)
    ev_wei = slow_copy(kernels, q, wei_in, wei_buf, n=Kv * Nv)
    deps = [ev_src.int_ptr, ev_wei.int_ptr] if as_int else [ev_src, ev_wei]
    ev = oi.execute(mm, ooo_stream, {dnnl.ARG_SRC: wrap(engine, src_buf, (Mv, Kv)),
                                     dnnl.ARG_WEIGHTS: wrap(engine, wei_buf, (Kv, Nv)),
                                     dnnl.ARG_DST: wrap(engine, dst_buf, (Mv, Nv))}, deps=deps)
    out = read(q, dst_buf, [ev], Mv * Nv).reshape(Mv, Nv)
    np.testing.assert_allclose(out, src.astype(np.float64) @ wei, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("as_int", [False, True], ids=["events", "int_handles"])
def test_chain_of_50_dependent_steps(cl_context, cl_ooo_queue, engine, ooo_stream, kernels, as_int):
    """50 steps alternating two buffers, each step reading the other's
    output: oneDNN eltwise (x + 1, or -x + 0.5) and every fifth step a
    pyopencl kernel (2x - 1); the first input comes from a slow kernel."""
    x = f32(np.random.default_rng(3).uniform(-1, 1, N))
    q = cl_ooo_queue
    src = buffer(cl_context, q, x)
    bufs = [buffer(cl_context, q), buffer(cl_context, q)]
    mems = [wrap(engine, b) for b in bufs]
    plus_one = eltwise(engine, ALG.eltwise_linear, 1.0, 1.0)
    flip = eltwise(engine, ALG.eltwise_linear, -1.0, 0.5)
    ev = slow_copy(kernels, q, src, bufs[0])
    ref = x.copy()
    for step in range(50):
        i, o = step % 2, (step + 1) % 2
        if step % 5 == 4:
            ev = affine(kernels, q, bufs[i], bufs[o], 2.0, -1.0, wait_for=[ev])
            ref = f32(f32(2 * ref) - 1)
        else:
            prim, (a, b) = (plus_one, (1.0, 1.0)) if step % 2 == 0 else (flip, (-1.0, 0.5))
            dep = ev.int_ptr if as_int else ev
            new = oi.execute(prim, ooo_stream, {dnnl.ARG_SRC: mems[i], dnnl.ARG_DST: mems[o]}, deps=[dep])
            assert isinstance(new, cl.Event)
            ev = new
            ref = f32(f32(a * ref) + b)
    out = read(q, bufs[50 % 2], [ev])
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_usm_fill_primitive_memcpy_chain(cl_context, cl_device, cl_ooo_queue, engine, ooo_stream):
    """dnnl.usm.fill -> eltwise on USM memory -> dnnl.usm.memcpy to the
    host, each waiting for the previous event."""
    desc = dnnl.memory.desc([N], DT.f32, TAG.a)
    with usm.allocation(cl_context, N * 4, "device", cl_device) as src, \
            usm.allocation(cl_context, N * 4, "device", cl_device) as dst:
        prim = eltwise(engine, ALG.eltwise_linear, 3.0, 0.25)
        src_mem = oi.make_memory(desc, engine, oi.memory_kind.usm, src.ptr)
        dst_mem = oi.make_memory(desc, engine, oi.memory_kind.usm, dst.ptr)
        for round_ in range(5):
            value = np.float32(round_ + 1.5)
            fill_ev = usm.fill(cl_ooo_queue, src.ptr, value.tobytes(), N * 4)
            ev = oi.execute(prim, ooo_stream, {dnnl.ARG_SRC: src_mem, dnnl.ARG_DST: dst_mem}, deps=[fill_ev])
            out = np.empty(N, np.float32)
            copy_ev = usm.memcpy(cl_ooo_queue, out, dst.ptr, N * 4, deps=[ev])
            assert copy_ev.command_execution_status == STATUS.COMPLETE  # array copies are blocking
            np.testing.assert_array_equal(out, np.float32(3 * value + 0.25))


def test_primitive_waits_for_a_user_event(cl_context, cl_ooo_queue, engine, ooo_stream):
    """execute() returns at once; its event stays incomplete and the output
    unwritten until the user event it depends on completes."""
    x = f32(np.random.default_rng(4).uniform(-1, 1, N))
    src, dst = buffer(cl_context, cl_ooo_queue, x), buffer(cl_context, cl_ooo_queue)
    prim = eltwise(engine, ALG.eltwise_abs)
    gate = cl.UserEvent(cl_context)
    released = threading.Event()

    def release():
        released.set()
        gate.set_status(STATUS.COMPLETE)

    # Released from another thread in any case, so a blocking execute() could not hang.
    timer = threading.Timer(3.0, release)
    timer.start()
    try:
        start = time.monotonic()
        ev = oi.execute(prim, ooo_stream, {dnnl.ARG_SRC: wrap(engine, src), dnnl.ARG_DST: wrap(engine, dst)},
                        deps=[gate])
        assert time.monotonic() - start < 3.0, "execute() blocked on its dependencies"
        time.sleep(0.2)
        if not released.is_set():
            assert ev.command_execution_status != STATUS.COMPLETE
            early = np.empty(N, np.float32)
            cl.enqueue_copy(cl_ooo_queue, early, dst, is_blocking=True)  # no wait list: reads now
            if not released.is_set():
                np.testing.assert_array_equal(early, f32(SENTINEL))
        timer.cancel()
        if not released.is_set():
            release()
    finally:
        timer.join()
    cl.wait_for_events([ev])
    assert ev.command_execution_status == STATUS.COMPLETE
    np.testing.assert_array_equal(read(cl_ooo_queue, dst, [ev]), np.abs(x))


def test_in_order_stream_returns_none(cl_context, cl_queue, engine, stream, kernels):
    """On an in-order stream execute() returns None; order follows the queue,
    with or without deps (pyopencl events or int handles)."""
    x = f32(np.random.default_rng(5).uniform(-1, 1, N))
    a, b, c = buffer(cl_context, cl_queue, x), buffer(cl_context, cl_queue), buffer(cl_context, cl_queue)
    prim = eltwise(engine, ALG.eltwise_linear, -2.0, 0.5)
    ev1 = slow_copy(kernels, cl_queue, a, b)
    args = {dnnl.ARG_SRC: wrap(engine, b), dnnl.ARG_DST: wrap(engine, c)}
    assert oi.execute(prim, stream, args) is None
    assert oi.execute(prim, stream, args, deps=[ev1]) is None
    assert oi.execute(prim, stream, args, deps=[ev1.int_ptr]) is None
    # Returned None chains on as a dep.
    assert oi.execute(prim, stream, args, deps=[oi.execute(prim, stream, args)]) is None
    stream.wait()
    np.testing.assert_array_equal(read(cl_queue, c, None), f32(f32(-2.0 * x) + 0.5))


def test_in_order_stream_waits_for_a_user_event(cl_context, cl_queue, engine, stream):
    """On an in-order stream too, the primitive waits for its deps: a user
    event holds it (and what follows it on the queue) back until completed.
    oneDNN 3.13 drops deps there; the binding holds the queue with a barrier
    (docs/known-problems.md)."""
    x = f32(np.random.default_rng(8).uniform(-1, 1, N))
    src, dst = buffer(cl_context, cl_queue, x), buffer(cl_context, cl_queue)
    prim = eltwise(engine, ALG.eltwise_abs)
    gate = cl.UserEvent(cl_context)
    try:
        assert oi.execute(prim, stream, {dnnl.ARG_SRC: wrap(engine, src), dnnl.ARG_DST: wrap(engine, dst)},
                          deps=[gate]) is None
        after = cl.enqueue_marker(cl_queue)  # completes once everything before it has
        time.sleep(0.2)
        assert after.command_execution_status != STATUS.COMPLETE, "the primitive did not wait for its deps"
        early = np.empty(N, np.float32)
        copy_queue = cl.CommandQueue(cl_context)
        cl.enqueue_copy(copy_queue, early, dst, is_blocking=True)  # another queue: reads now
        np.testing.assert_array_equal(early, f32(SENTINEL))
    finally:
        gate.set_status(STATUS.COMPLETE)
    stream.wait()
    np.testing.assert_array_equal(read(cl_queue, dst, None), np.abs(x))


def test_in_order_stream_ordered_with_kernels(cl_context, cl_queue, engine, stream, kernels):
    """In-order queue: slow kernel, primitive, kernel, primitive, with no
    events at all."""
    x = f32(np.random.default_rng(6).uniform(-1, 1, N))
    a, b, c = buffer(cl_context, cl_queue, x), buffer(cl_context, cl_queue), buffer(cl_context, cl_queue)
    lin = eltwise(engine, ALG.eltwise_linear, 2.0, 1.0)
    slow_copy(kernels, cl_queue, a, b)
    lin.execute(stream, {dnnl.ARG_SRC: wrap(engine, b), dnnl.ARG_DST: wrap(engine, c)})
    affine(kernels, cl_queue, c, b, -1.0, 0.0)
    lin.execute(stream, {dnnl.ARG_SRC: wrap(engine, b), dnnl.ARG_DST: wrap(engine, c)})
    stream.wait()
    ref = f32(f32(2 * -f32(f32(2 * x) + 1)) + 1)
    np.testing.assert_array_equal(read(cl_queue, c, None), ref)


def test_returned_event_is_owned(cl_context, cl_ooo_queue, engine, ooo_stream):
    x = f32(np.random.default_rng(7).uniform(-1, 1, N))
    src, dst = buffer(cl_context, cl_ooo_queue, x), buffer(cl_context, cl_ooo_queue)
    prim = eltwise(engine, ALG.eltwise_relu)
    args = {dnnl.ARG_SRC: wrap(engine, src), dnnl.ARG_DST: wrap(engine, dst)}
    events = [oi.execute(prim, ooo_stream, args) for _ in range(3)]
    cl.wait_for_events(events)
    cl_ooo_queue.finish()
    for ev in events:
        assert isinstance(ev, cl.Event)
        assert ev.get_info(cl.event_info.REFERENCE_COUNT) == 1
        assert ev.get_info(cl.event_info.CONTEXT).int_ptr == cl_context.int_ptr
        assert ev.get_info(cl.event_info.COMMAND_QUEUE).int_ptr == cl_ooo_queue.int_ptr
        assert ev.command_execution_status == STATUS.COMPLETE
    # The events are distinct and usable as deps after completion.
    assert len({ev.int_ptr for ev in events}) == 3
    again = oi.execute(prim, ooo_stream, args, deps=events + [events[0].int_ptr])
    again.wait()
    np.testing.assert_array_equal(read(cl_ooo_queue, dst, [again]), np.maximum(x, 0))


def test_returned_event_usable_by_pyopencl(cl_context, cl_ooo_queue, engine, ooo_stream, kernels):
    """The event works in pyopencl wait lists and with cl.wait_for_events,
    also after a pyopencl copy of it was made from its int handle."""
    x = f32(np.random.default_rng(8).uniform(-1, 1, N))
    q = cl_ooo_queue
    a, b, c = buffer(cl_context, q, x), buffer(cl_context, q), buffer(cl_context, q)
    prim = eltwise(engine, ALG.eltwise_square)
    ev1 = slow_copy(kernels, q, a, b)
    ev2 = oi.execute(prim, ooo_stream, {dnnl.ARG_SRC: wrap(engine, b), dnnl.ARG_DST: wrap(engine, c)}, deps=[ev1])
    alias = cl.Event.from_int_ptr(ev2.int_ptr, retain=True)
    ev3 = kernels["add_into"](q, (N,), None, b, c, wait_for=[alias])
    cl.wait_for_events([ev2, ev3])
    assert ev2.command_execution_status == STATUS.COMPLETE
    del alias
    assert ev2.get_info(cl.event_info.REFERENCE_COUNT) == 1
    np.testing.assert_allclose(read(q, c, [ev3]), x * x + x, rtol=1e-6, atol=1e-7)
