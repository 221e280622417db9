"""dnnl.ops.capture: a function's ops calls captured once and replayed in one
call (python/dnnl_ocl_interop/ops/_capture.py, cpp/arrays/replays.cpp).

A replay on new inputs gives what the eager calls give (checked against
NumPy and against the eager function); an input that differs from the
capture's is refused naming it; arrays captured by reference stay alive and
are read as they are at each replay; several threads replay one program on
their own queues; results are static per queue; what cannot be captured is
refused at the capture.
"""

import gc
import threading
import weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import ops
from helpers import run_in_threads

RNG = np.random.default_rng(45)


def rand(*shape):
    return RNG.uniform(-2, 2, size=shape).astype(np.float32)


def ref_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def queue(cl_queue):
    return cl_queue


class _Layer:
    """A matmul with bias and ReLU, then a softmax over 16 columns, and a
    second output: the layer norm of the matmul's result."""

    def __init__(self, queue):
        self.w_host, self.b_host = rand(24, 16), rand(16)
        self.w = cla.to_device(queue, self.w_host)
        self.b = cla.to_device(queue, self.b_host)

    def __call__(self, x, scale):
        y = ops.matmul(x, self.w, self.b, post_ops=["relu"])
        z = ops.mul(y, scale)
        return ops.softmax(z, axis=1), ops.layer_norm(y, eps=1e-5)

    def reference(self, x, scale):
        y = np.maximum(x.astype(np.float64) @ self.w_host + self.b_host, 0)
        mean, var = y.mean(axis=1, keepdims=True), y.var(axis=1, keepdims=True)
        return ref_softmax(y * scale), (y - mean) / np.sqrt(var + 1e-5)


def test_replay_with_new_inputs_gives_the_eager_results(queue):
    layer = _Layer(queue)
    x0, s0 = cla.to_device(queue, rand(4, 24)), cla.to_device(queue, rand(4, 16))
    program = ops.capture(layer, x0, s0)
    assert program.steps == 4
    for _ in range(3):
        xh, sh = rand(4, 24), rand(4, 16)
        x, s = cla.to_device(queue, xh), cla.to_device(queue, sh)
        soft, norm = program(x, s)
        eager_soft, eager_norm = layer(x, s)
        want_soft, want_norm = layer.reference(xh, sh)
        np.testing.assert_allclose(soft.get(), want_soft, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(norm.get(), want_norm, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(soft.get(), eager_soft.get())
        np.testing.assert_array_equal(norm.get(), eager_norm.get())


def test_the_outputs_carry_the_replays_event(queue):
    layer = _Layer(queue)
    x = cla.to_device(queue, rand(4, 24))
    s = cla.to_device(queue, rand(4, 16))
    program = ops.capture(layer, x, s)
    soft, norm = program(x, s)
    assert len(soft.events) == 1 and len(norm.events) == 1
    soft.events[0].wait()
    assert soft.events[0].command_execution_status == cl.command_execution_status.COMPLETE


def test_outputs_are_static_per_queue(queue, cl_context, cl_device):
    """Every replay on a queue writes and returns the same arrays (the
    capture's on its queue); another queue has its own."""
    w = cla.to_device(queue, rand(8, 8))

    def f(x):
        return ops.matmul(x, w)

    x = cla.to_device(queue, rand(2, 8))
    program = ops.capture(f, x)
    first = program(x)
    assert program(cla.to_device(queue, rand(2, 8))) is first
    other = cl.CommandQueue(cl_context, cl_device)
    xh = rand(2, 8)
    on_other = program(cla.to_device(other, xh))
    assert on_other is not first and on_other.queue == other
    np.testing.assert_allclose(on_other.get(), xh @ w.get(), rtol=1e-5, atol=1e-5)
    assert program.queues() == 2
    program.release()
    assert program.queues() == 0
    np.testing.assert_allclose(program(cla.to_device(other, xh)).get(), xh @ w.get(), rtol=1e-5,
                               atol=1e-5)


def test_arrays_captured_by_reference_stay_alive_and_are_read_at_each_replay(queue):
    def make_program():
        w = cla.to_device(queue, np.eye(8, dtype=np.float32))  # only the program holds it after
        bias = cla.to_device(queue, np.zeros(8, np.float32))

        def f(x):
            return ops.matmul(x, w, bias)

        return ops.capture(f, cla.to_device(queue, rand(3, 8))), weakref.ref(w)

    program, w_ref = make_program()
    gc.collect()
    w = w_ref()
    assert w is not None, "the program let its weights go"
    assert any(a is w for a in program.captured_by_reference)
    xh = rand(3, 8)
    x = cla.to_device(queue, xh)
    np.testing.assert_allclose(program(x).get(), xh, rtol=1e-6)
    w.set(2 * np.eye(8, dtype=np.float32))  # by reference: the next replay reads this
    np.testing.assert_allclose(program(x).get(), 2 * xh, rtol=1e-6)
    del w
    program = None
    gc.collect()
    assert w_ref() is None, "the weights outlived their program"


X = r"inputs\[0\] \(x\): "


@pytest.mark.parametrize("bad, message", [
    (lambda q: cla.to_device(q, rand(4, 16)), X + r"shape \(4, 16\) where the capture had \(4, 24\)"),
    (lambda q: cla.to_device(q, rand(4, 24).astype(np.float16)),
     X + r".*dtype float16 where the capture had float32"),
    (lambda q: cla.to_device(q, rand(24, 4)).T, X + r"strides \(4, 16\) where the capture had \(96, 4\)"),
    # 4 bytes into a buffer: an element offset on any device (no base address is 4-byte aligned)
    (lambda q: cla.to_device(q, rand(97))[1:].reshape(4, 24), X + r"sub-memory offset 1 where the capture had 0"),
])
def test_an_input_unlike_the_captures_is_refused_naming_it(queue, bad, message):
    layer = _Layer(queue)
    s = cla.to_device(queue, rand(4, 16))
    program = ops.capture(layer, cla.to_device(queue, rand(4, 24)), s)
    with pytest.raises(ValueError, match=message):
        program(bad(queue), s)


def test_other_refused_inputs(queue, cl_device):
    layer = _Layer(queue)
    x, s = cla.to_device(queue, rand(4, 24)), cla.to_device(queue, rand(4, 16))
    program = ops.capture(layer, x, s)
    with pytest.raises(TypeError, match=r"takes 2 inputs \(as captured: x, scale\), not 1"):
        program(x)
    with pytest.raises(TypeError, match=r"inputs\[1\] \(scale\) must be a pyopencl.array.Array, not ndarray"):
        program(x, rand(4, 16))
    with pytest.raises(ValueError, match=r"inputs\[0\] \(x\) has no queue"):
        program(x.with_queue(None), s)
    other_context = cl.Context([cl_device])
    other_queue = cl.CommandQueue(other_context, cl_device)
    with pytest.raises(ValueError, match=r"inputs\[1\] \(scale\) belongs to another OpenCL context"):
        program(x, cla.to_device(other_queue, rand(4, 16)))
    with pytest.raises(ValueError, match=r"inputs\[0\] \(x\) is on a queue of another OpenCL context"):
        program(cla.to_device(other_queue, rand(4, 24)), cla.to_device(other_queue, rand(4, 16)))


def test_an_input_sharing_storage_with_the_programs_results_is_refused(queue):
    def f(x):
        return ops.relu(ops.add(x, 1.0))

    x = cla.to_device(queue, rand(16))
    program = ops.capture(f, x)
    out = program(x)
    with pytest.raises(ValueError, match=r"inputs\[0\] \(x\) shares storage with a result"):
        program(out)
    again = program(ops.copy(out))  # a copy is fine
    np.testing.assert_allclose(again.get(), np.maximum(np.maximum(x.get() + 1, 0) + 1, 0), rtol=1e-6)


def test_replays_from_several_threads_on_their_own_queues(queue, cl_context, cl_device):
    layer = _Layer(queue)
    program = ops.capture(layer, cla.to_device(queue, rand(4, 24)), cla.to_device(queue, rand(4, 16)))
    start = threading.Barrier(4)

    def work(index):
        own = cl.CommandQueue(cl_context, cl_device)
        rng = np.random.default_rng(index)
        start.wait()
        for _ in range(25):
            xh = rng.uniform(-2, 2, (4, 24)).astype(np.float32)
            sh = rng.uniform(-2, 2, (4, 16)).astype(np.float32)
            soft, norm = program(cla.to_device(own, xh), cla.to_device(own, sh))
            want_soft, want_norm = layer.reference(xh, sh)
            np.testing.assert_allclose(soft.get(), want_soft, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(norm.get(), want_norm, rtol=1e-4, atol=1e-4)

    run_in_threads(work, [(i,) for i in range(4)])
    assert program.queues() == 4


def test_replay_on_an_out_of_order_queue_chains_its_steps(cl_context, cl_device):
    ooo = cl.CommandQueue(cl_context, cl_device,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)

    def f(x):
        y = x
        for _ in range(6):
            y = ops.tanh(ops.add(y, 0.25))
        return y

    program = ops.capture(f, cla.to_device(ooo, rand(64)))
    for _ in range(3):  # each replay after the last one (they write the same results)
        xh = rand(64)
        want = xh.astype(np.float64)
        for _ in range(6):
            want = np.tanh(want + 0.25)
        out = program(cla.to_device(ooo, xh))
        np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=1e-6)


def test_views_of_results_replay_on_the_capture_queue_only(queue, cl_context, cl_device):
    w = cla.to_device(queue, rand(32, 4))

    def f(x):
        y = ops.relu(x)
        return ops.matmul(y.reshape(2, 32), w)  # a view of a result made inside

    xh = rand(4, 16)
    program = ops.capture(f, cla.to_device(queue, xh))
    xh = rand(4, 16)
    np.testing.assert_allclose(program(cla.to_device(queue, xh)).get(),
                               np.maximum(xh, 0).reshape(2, 32) @ w.get(), rtol=1e-5, atol=1e-5)
    other = cl.CommandQueue(cl_context, cl_device)
    with pytest.raises(ValueError, match="replays only on the capture's queue: a launch reads a view"):
        program(cla.to_device(other, xh))


def test_what_cannot_be_captured_is_refused(queue):
    x = cla.to_device(queue, rand(8))
    with pytest.raises(ValueError, match="made no dnnl.ops call"):
        ops.capture(lambda a: a, x)
    with pytest.raises(ValueError, match="output 0 was not made by a dnnl.ops call"):
        ops.capture(lambda a: (a, ops.relu(a))[0], x)
    with pytest.raises(ValueError, match=r"inputs\[1\] \(b\) is the same array as inputs\[0\] \(a\)"):
        ops.capture(lambda a, b: ops.add(a, b), x, x)
    with pytest.raises(TypeError, match="needs the function's inputs"):
        ops.capture(lambda: ops.relu(x))
    with pytest.raises(TypeError, match="function must be callable"):
        ops.capture(3, x)
    with pytest.raises(RuntimeError, match="inside another capture"):
        ops.capture(lambda a: ops.capture(ops.relu, a), x)


def test_eager_calls_run_by_their_bound_calls_again_after_a_capture(queue):
    """During a capture calls are planned (and recorded); after it, even
    one that raised inside the function, the eager calls of a known
    signature run by their bound calls again."""
    x = cla.to_device(queue, rand(8))
    ops.relu(x)
    hits = dnnl._core._arrays.bound_hits()
    ops.relu(x)
    assert dnnl._core._arrays.bound_hits() == hits + 1

    def failing(a):
        ops.relu(a)
        raise KeyError("inside")

    with pytest.raises(KeyError):
        ops.capture(failing, x)
    before = dnnl._core._arrays.bound_hits()
    ops.relu(x)
    assert dnnl._core._arrays.bound_hits() == before + 1
    ops.capture(ops.relu, x)
    before = dnnl._core._arrays.bound_hits()
    ops.relu(x)
    assert dnnl._core._arrays.bound_hits() == before + 1


def test_a_program_holds_its_primitives_when_the_cache_drops_them(queue):
    x = cla.to_device(queue, rand(8))
    program = ops.capture(lambda a: ops.exp(ops.add(a, 1.0)), x)
    ops.clear_cache()
    xh = rand(8)
    np.testing.assert_allclose(program(cla.to_device(queue, xh)).get(), np.exp(xh + 1.0), rtol=1e-5)


def test_a_view_of_an_input_is_refused_at_the_capture(queue):
    """A view is another Python object on the input's storage: captured by
    reference, a replay would read the capture's input through it."""
    def f(x):
        return ops.relu(x.reshape(2, 8))

    with pytest.raises(ValueError, match=r"reads a view of inputs\[0\] \(x\)"):
        ops.capture(f, cla.to_device(queue, rand(16)))


def test_an_input_a_launch_writes_gets_the_replays_event(queue):
    """out= into an input: the input's events hold the replay's event after
    it (not only the outputs'), and two inputs sharing storage are refused
    then."""
    def f(x, y):
        ops.relu(x, out=x)
        return ops.add(x, y)

    x0, y0 = cla.to_device(queue, rand(32)), cla.to_device(queue, rand(32))
    program = ops.capture(f, x0, y0)
    xh, yh = rand(32), rand(32)
    x, y = cla.to_device(queue, xh), cla.to_device(queue, yh)
    out = program(x, y)
    assert len(x.events) == 1 and x.events[0].int_ptr == out.events[0].int_ptr
    np.testing.assert_allclose(x.get(), np.maximum(xh, 0))
    np.testing.assert_allclose(out.get(), np.maximum(xh, 0) + yh, rtol=1e-6)
    both = cla.to_device(queue, rand(64))
    with pytest.raises(ValueError, match=r"inputs\[1\] \(y\) shares storage with an earlier input"):
        program(both[:32], both[32:])


def test_release_and_replay_on_an_out_of_order_queue(cl_context, cl_device):
    """The first replay after the capture, and after release(), waits for the
    work still pending on the results it writes again."""
    ooo = cl.CommandQueue(cl_context, cl_device,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)

    def f(x):
        y = x
        for _ in range(8):
            y = ops.exp(ops.mul(y, -0.5))
        return y

    def want(xh):
        y = xh.astype(np.float64)
        for _ in range(8):
            y = np.exp(y * -0.5)
        return y

    x0 = rand(256)
    program = ops.capture(f, cla.to_device(ooo, x0))
    x1 = rand(256)
    np.testing.assert_allclose(program(cla.to_device(ooo, x1)).get(), want(x1), rtol=1e-5)
    program.release()
    x2 = rand(256)
    np.testing.assert_allclose(program(cla.to_device(ooo, x2)).get(), want(x2), rtol=1e-5)
