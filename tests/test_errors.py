"""Errors as oneDNN defines them, and faults in graph allocator callbacks.

oneDNN's C++ API throws dnnl::error with a status; the binding raises
dnnl.error with that status, as a subclass for the common statuses that also
derives from the matching Python exception (invalid_arguments a ValueError,
out_of_memory a MemoryError, ...). These tests check the classes, that every
way an error is raised (oneDNN's own failures, the binding's refusals on
oneDNN's behalf, NULL handles, failing OpenCL calls mapped as oneDNN maps
them, graph allocator failures) gives the class of its status, and that a
KeyboardInterrupt, SystemExit or GeneratorExit raised in a graph allocator
callable leaves compile/execute unchanged, after oneDNN has returned and the
memory is released. A pointer that misses the alignment oneDNN asked for is
refused like other unusable malloc returns.
"""

import collections
import gc
import sys
import traceback
import weakref

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (DT, TAG, allocated_inputs, attention_partition, attention_reference,
                     compile_partition, download, sub_device_or_skip, g, goi, oi, plain_desc, usm)

# (class name, the Python exception it also derives from)
SUBCLASSES = [
    ("out_of_memory", MemoryError),
    ("invalid_arguments", ValueError),
    ("unimplemented", NotImplementedError),
    ("runtime_error", RuntimeError),
    ("invalid_graph", ValueError),
    ("invalid_graph_op", ValueError),
    ("invalid_shape", ValueError),
    ("invalid_data_type", ValueError),
]

INTERRUPTS = [KeyboardInterrupt, SystemExit, GeneratorExit]

BATCH, SEQ, HEAD = 2, 16, 8
SHAPE = (BATCH, SEQ, HEAD)


def _assert_raised_as(error, name):
    """`error` is dnnl.<name>: its status, its class, both handlers."""
    assert type(error) is getattr(dnnl, name), f"{type(error).__name__}: {error}"
    assert isinstance(error, dnnl.error)
    assert error.status == getattr(dnnl.status, name)
    assert str(error).endswith(f"(status: {name})")


# ------------------------------------------------------------ the classes

@pytest.mark.parametrize("name, python_base", SUBCLASSES)
def test_status_class_derives_from_error_and_python_exception(name, python_base):
    cls = getattr(dnnl, name)
    assert cls.__mro__[:3] == (cls, dnnl.error, python_base)
    assert cls.__name__ == name and cls.__module__ == "dnnl_ocl_interop._core"
    assert name in dnnl.__all__
    # one Python exception each: no other handler catches it by accident
    others = {base for _, base in SUBCLASSES} - {python_base}
    assert not any(issubclass(cls, other) for other in others if not issubclass(python_base, other))


def test_every_common_status_has_its_class():
    with_class = {name for name, _ in SUBCLASSES}
    assert {s.name for s in dnnl.status} - with_class == {
        "success", "last_impl_reached", "not_required"}
    assert not issubclass(dnnl.error, (ValueError, MemoryError, RuntimeError))
    assert issubclass(dnnl.error, Exception)


# ------------------------------------------------ each way an error is raised

def test_onednn_failure_raises_the_status_class():
    # oneDNN's own check (memory::desc::reshape), through the translator
    desc = plain_desc([2, 3])
    with pytest.raises(ValueError) as info:
        desc.reshape([7])
    _assert_raised_as(info.value, "invalid_arguments")
    assert "reshape" in str(info.value)


def test_onednn_unimplemented_is_not_implemented_error(engine):
    # int8 pooling has no forward_training implementation (test_primitives)
    desc = dnnl.memory.desc([1, 8, 4, 4], DT.s8, TAG.nchw)
    out = dnnl.memory.desc([1, 8, 2, 2], DT.s8, TAG.nchw)
    with pytest.raises(NotImplementedError) as info:
        dnnl.pooling_forward.primitive_desc(
            engine, dnnl.prop_kind.forward_training, dnnl.algorithm.pooling_max,
            desc, out, [2, 2], [2, 2], [0, 0], [0, 0], [0, 0])
    _assert_raised_as(info.value, "unimplemented")


def test_graph_status_is_a_value_error():
    lt, f32, strided = g.logical_tensor, g.logical_tensor.data_type.f32, \
        g.logical_tensor.layout_type.strided
    a, b, c = lt(0, f32, [2, 3], strided), lt(1, f32, [3, 2], strided), lt(2, f32, [2, 2], strided)
    bad = g.op(0, g.op.kind.MatMul, [a, b], [c])
    bad.set_attr(g.op.attr.transpose_b, 1)  # s64 where oneDNN wants bool
    with pytest.raises(ValueError) as info:
        g.graph(dnnl.engine.kind.gpu).add_op(bad)
    _assert_raised_as(info.value, "invalid_graph_op")


def test_binding_refusal_raises_the_status_class(engine, stream):
    # a check the binding makes on oneDNN's behalf (status_error)
    desc = plain_desc([2, 3])
    pd = dnnl.eltwise_forward.primitive_desc(engine, dnnl.prop_kind.forward_inference,
                                             dnnl.algorithm.eltwise_relu, desc, desc, 0.0, 0.0)
    with pytest.raises(ValueError) as info:
        dnnl.eltwise_forward(pd).execute(stream, {dnnl.ARG_SRC: dnnl.memory(desc, engine)})
    _assert_raised_as(info.value, "invalid_arguments")
    assert "ARG_DST" in str(info.value)


@pytest.mark.parametrize("call, param", [
    (lambda dev, ctx, q: oi.make_engine(0, ctx), "device"),
    (lambda dev, ctx, q: oi.make_engine(dev, 0), "context"),
    (lambda dev, ctx, q: usm.memcpy(0, np.zeros(4, np.uint8), np.zeros(4, np.uint8), 4), "queue"),
    (lambda dev, ctx, q: usm.memcpy(q, np.zeros(4, np.uint8), np.zeros(4, np.uint8), 4,
                                    deps=[None, 0]), "deps[1]"),
], ids=["device", "context", "queue", "deps"])
def test_null_handle_is_invalid_arguments(cl_device, cl_context, cl_queue, call, param):
    # oneDNN's C API answers a NULL handle with invalid_arguments
    with pytest.raises(dnnl.error) as info:
        call(cl_device, cl_context, cl_queue)
    _assert_raised_as(info.value, "invalid_arguments")
    assert isinstance(info.value, ValueError)
    assert f"{param} is a NULL handle" in str(info.value)


_HOST_WORDS = np.zeros(4, np.uint64)  # readable memory that is no OpenCL object


@pytest.mark.parametrize("stray", [0x1234, _HOST_WORDS.ctypes.data], ids=["unmapped", "host memory"])
@pytest.mark.parametrize("call, param", [
    (lambda dev, ctx, q, v: oi.make_engine(v, ctx), "device"),
    (lambda dev, ctx, q, v: oi.make_engine(dev, v), "context"),
    (lambda dev, ctx, q, v: usm.memcpy(v, np.zeros(4, np.uint8), np.zeros(4, np.uint8), 4), "queue"),
    (lambda dev, ctx, q, v: usm.memcpy(q, np.zeros(4, np.uint8), np.zeros(4, np.uint8), 4,
                                       deps=[None, v]), "deps[1]"),
    (lambda dev, ctx, q, v: usm.set_kernel_arg(v, 0, 0), "kernel"),
], ids=["device", "context", "queue", "deps", "kernel"])
def test_int_that_is_no_opencl_object_is_invalid_arguments(cl_device, cl_context, cl_queue, call, param,
                                                            stray):
    """An int handle that does not start with the platform's ICD dispatch
    table is refused before the driver dereferences it (a segfault); the
    ints of live objects are taken (test_ocl_engine, test_events, test_arrays_usm)."""
    with pytest.raises(dnnl.error) as info:
        call(cl_device, cl_context, cl_queue, stray)
    _assert_raised_as(info.value, "invalid_arguments")
    assert f"{param} is not an OpenCL object" in str(info.value)


def test_handle_beyond_64_bits_is_invalid_arguments(cl_context):
    # no C++ caller can pass one; refused as every bad value is
    with pytest.raises(ValueError) as info:
        oi.make_engine(2 ** 64, cl_context)
    _assert_raised_as(info.value, "invalid_arguments")


def test_strides_not_one_per_dimension_are_invalid_arguments():
    # memory::desc's own validate_dims
    with pytest.raises(ValueError) as info:
        dnnl.memory.desc([2, 3], DT.f32, [1])
    _assert_raised_as(info.value, "invalid_arguments")
    with pytest.raises(ValueError) as info:  # the binding's guard, refused the same way
        dnnl.memory.desc([2, 3], DT.f32, [-3, 1])
    _assert_raised_as(info.value, "invalid_arguments")


# ------------------------------------------ OpenCL failures as oneDNN maps them

def test_opencl_invalid_device_is_runtime_error(cl_context, cl_device):
    # A device outside the context: CL_INVALID_DEVICE, which oneDNN maps to
    # runtime_error (the binding used to say invalid_arguments).
    sub_device, _all = sub_device_or_skip(cl_device)
    with pytest.raises(RuntimeError) as info:
        usm.device_alloc(cl_context, sub_device, 64)
    _assert_raised_as(info.value, "runtime_error")
    assert "CL_INVALID_DEVICE (-33)" in str(info.value)
    assert (info.value.cl_error, info.value.cl_error_name) == (-33, "CL_INVALID_DEVICE")


def test_opencl_invalid_value_is_invalid_arguments(cl_context, cl_device):
    # an alignment that is not a power of two: CL_INVALID_VALUE
    with pytest.raises(ValueError) as info:
        usm.device_alloc(cl_context, cl_device, 64, 3)
    _assert_raised_as(info.value, "invalid_arguments")
    assert "CL_INVALID_VALUE (-30)" in str(info.value)
    assert (info.value.cl_error, info.value.cl_error_name) == (-30, "CL_INVALID_VALUE")


def test_opencl_allocation_failure_is_out_of_memory(cl_context, cl_device):
    with pytest.raises(MemoryError) as info:
        usm.device_alloc(cl_context, cl_device, 1 << 50)
    _assert_raised_as(info.value, "out_of_memory")
    assert str(1 << 50) in str(info.value)
    # the OpenCL runtime's own code for the failure, with its name
    assert isinstance(info.value.cl_error, int) and info.value.cl_error < 0
    assert info.value.cl_error_name.startswith("CL_")
    assert f"{info.value.cl_error_name} ({info.value.cl_error})" in str(info.value)


@pytest.mark.test_hooks
def test_failure_without_an_opencl_call_has_no_cl_error():
    with pytest.raises(dnnl.error) as info:
        dnnl.memory.desc([2, 3], DT.f32, TAG.abcd)  # a 4-d tag for 2 dims
    assert info.value.cl_error is None and info.value.cl_error_name is None


# ---------------------------------------------------- graph allocator faults

@pytest.fixture(scope="module")
def partition():
    return attention_partition(BATCH, SEQ, HEAD)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(12)
    return [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3)]


# The callables of every allocator the tests make (_make_allocator): an
# allocator holds its callables as long as it lives, so a callable still alive
# after its test says that an allocator was kept (by a reference cycle through
# an exception's frames, or by an allocation oneDNN never freed).
_CALLABLES: "weakref.WeakSet[object]" = weakref.WeakSet()


def _make_allocator(malloc, free, kind=None):
    """goi.make_allocator(malloc, free) (or `kind`(malloc, free)), its
    callables watched by no_allocator_left_behind."""
    _CALLABLES.update((malloc, free))
    return (kind or goi.make_allocator)(malloc, free)


@pytest.fixture(autouse=True)
def no_allocator_left_behind():
    """Every allocator a test made is gone after it (none kept alive by a
    reference cycle through an exception's frames, nor by an allocation
    oneDNN never freed): on every build, the callables of the allocators
    made through _make_allocator are gone; on a build with the test hooks
    (not the released wheel, whose suite tools/check_wheel.sh runs), the
    binding's own counts of live allocators and allocations, which see
    allocators made in C++ too, are back where they were."""
    gc.collect()
    alive_before = set(_CALLABLES)
    counts = (goi._live_allocators(), goi._live_allocations()) if dnnl._core._test_hooks else None
    yield
    gc.collect()
    kept = [f"{f.__qualname__}" for f in set(_CALLABLES) - alive_before]
    assert not kept, f"allocators outlived the test that made them, holding {kept}"
    if counts is not None:
        assert (goi._live_allocators(), goi._live_allocations()) == counts


class _Allocator:
    """USM device memory from Python callables that log every call.

    ``on_malloc(index, size, alignment, device, context)`` and
    ``on_free(index, ptr)`` may raise, or return a pointer to hand out
    instead (malloc; None: allocate normally). The callables hold the logs,
    not this object: the allocator (a pybind11 object, which the garbage
    collector cannot see into) must not be part of a reference cycle."""

    def __init__(self, on_malloc=None, on_free=None):
        mallocs, frees, returned = self.mallocs, self.frees, self.returned = [], [], []

        def malloc(size, alignment, device, context):
            mallocs.append((size, alignment))
            if on_malloc:
                ptr = on_malloc(len(mallocs) - 1, size, alignment, device, context)
                if ptr is not None:
                    returned.append(ptr)
                    return ptr
            ptr = usm.device_alloc(context, device, size, alignment)
            returned.append(ptr)
            return ptr

        def free(ptr, device, context, event):
            frees.append(ptr)
            if event is not None:
                event.wait()
            usm.free(context, ptr)
            if on_free:
                on_free(len(frees) - 1, ptr)

        self.allocator = _make_allocator(malloc, free)

    def balanced(self):
        """Every pointer handed out was freed exactly once, and nothing else."""
        return collections.Counter(self.frees) == collections.Counter(self.returned)


def _flow(partition, engine, stream, queue, data):
    """compile, MEMORY_ALLOCATE tensors, execute; the result."""
    compiled = compile_partition(partition, engine)
    ins = allocated_inputs(partition, engine, queue, data)
    out = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    compiled.execute(stream, ins, [out])
    stream.wait()
    return download(queue, out.get_data_handle(), SHAPE)


def _check(result, data):
    np.testing.assert_allclose(result, attention_reference(*data), rtol=1e-5, atol=1e-5)


def _raised_in(error, function_name):
    return any(frame.name == function_name for frame in traceback.extract_tb(error.__traceback__))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("interrupt", INTERRUPTS, ids=lambda t: t.__name__)
def test_interrupt_in_malloc_comes_out_unchanged(interrupt, partition, data, cl_device,
                                                 cl_context, cl_queue):
    counting = _Allocator()
    engine = goi.make_engine_with_allocator(cl_device, cl_context, counting.allocator)
    _check(_flow(partition, engine, oi.make_stream(engine, cl_queue), cl_queue, data), data)
    calls = len(counting.mallocs)
    del engine
    gc.collect()
    assert calls >= 5 and counting.balanced()

    for k in range(calls):
        raised = []

        def on_malloc(index, *args, k=k, raised=raised):
            if index == k:
                raised.append(interrupt(f"stop at malloc {index}"))
                raise raised[-1]

        alloc = _Allocator(on_malloc=on_malloc)
        engine = goi.make_engine_with_allocator(cl_device, cl_context, alloc.allocator)
        stream = oi.make_stream(engine, cl_queue)
        with pytest.raises(BaseException) as info:
            _flow(partition, engine, stream, cl_queue, data)
        error = info.value
        assert error is raised[0], f"k={k}: {type(error).__name__}: {error}"
        assert type(error) is interrupt and error.__cause__ is None
        assert _raised_in(error, "on_malloc"), "the callable's traceback was lost"
        stream.wait()
        # the engine works again
        _check(_flow(partition, engine, stream, cl_queue, data), data)
        # the interrupt's traceback holds _flow's frame, and its tensors
        del engine, stream, info, error
        raised.clear()
        gc.collect()
        assert alloc.balanced(), f"k={k}: leaked or double-freed memory"


@pytest.mark.parametrize("interrupt", INTERRUPTS, ids=lambda t: t.__name__)
def test_interrupt_in_free_comes_out_unchanged(interrupt, partition, data, cl_device,
                                               cl_context, cl_queue):
    raised = []
    state = {"stop": True}

    def on_free(index, ptr):  # after the memory is released, as a signal would
        if state["stop"]:
            state["stop"] = False
            raised.append(interrupt("stop in free"))
            raise raised[-1]

    alloc = _Allocator(on_free=on_free)
    engine = goi.make_engine_with_allocator(cl_device, cl_context, alloc.allocator)
    stream = oi.make_stream(engine, cl_queue)
    compiled = compile_partition(partition, engine)
    ins = allocated_inputs(partition, engine, cl_queue, data)
    out = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    frees_before = len(alloc.frees)
    with pytest.raises(BaseException) as info:
        compiled.execute(stream, ins, [out])  # frees its scratch memory
    stream.wait()
    assert info.value is raised[0] and type(info.value) is interrupt
    assert info.value.__cause__ is None and _raised_in(info.value, "on_free")
    assert len(alloc.frees) > frees_before
    compiled.execute(stream, ins, [out])
    stream.wait()
    _check(download(cl_queue, out.get_data_handle(), SHAPE), data)
    del compiled, ins, out, stream, engine, info
    raised.clear()
    gc.collect()
    assert alloc.balanced()


@pytest.mark.test_hooks
@pytest.mark.parametrize("interrupt", INTERRUPTS, ids=lambda t: t.__name__)
def test_no_malloc_after_an_interrupt_during_a_call(interrupt, cl_device, cl_context):
    # oneDNN 3.13 makes one allocation per call: the test hook makes three
    raised = [interrupt("stop")]

    def on_malloc(index, *args):
        if index == 1:
            raise raised[0]

    alloc = _Allocator(on_malloc=on_malloc)
    with pytest.raises(interrupt) as info:
        alloc.allocator._malloc_and_free(256, 0, cl_device, cl_context, 3)
    assert info.value is raised[0]
    raised.clear()  # its traceback holds this frame, and so the allocator
    assert len(alloc.mallocs) == 2, "malloc was called again after the interrupt"
    # the first allocation went back to free; the binding freed its own
    assert alloc.frees == alloc.returned and len(alloc.returned) == 1

    alloc.allocator._malloc_and_free(256, 0, cl_device, cl_context, 3)  # the next call is normal
    assert len(alloc.mallocs) == 5 and alloc.balanced()


@pytest.mark.test_hooks
def test_interrupt_takes_precedence_over_a_failure(cl_device, cl_context):
    # the first malloc of a call fails, the second is interrupted: the
    # interrupt comes out, not the failure chained to dnnl.error
    raised = [LookupError("no memory"), KeyboardInterrupt("stop")]

    def on_malloc(index, *args):
        raise raised[index]

    alloc = _Allocator(on_malloc=on_malloc)
    with pytest.raises(KeyboardInterrupt) as info:
        alloc.allocator._malloc_and_free(256, 0, cl_device, cl_context, 2)
    assert info.value is raised[1] and info.value.__cause__ is None
    raised.clear()
    assert alloc.frees == [] and alloc.returned == []  # both served by the binding


@pytest.mark.parametrize("interrupt", INTERRUPTS, ids=lambda t: t.__name__)
def test_interrupt_outside_a_call_is_unraisable(interrupt, partition, cl_device, cl_context,
                                                monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    raised = [interrupt("stop while releasing")]

    def on_free(index, ptr):
        raise raised[0]

    alloc = _Allocator(on_free=on_free)
    engine = goi.make_engine_with_allocator(cl_device, cl_context, alloc.allocator)
    tensor = g.tensor(partition.get_output_ports()[0], engine, dnnl.MEMORY_ALLOCATE)
    del tensor  # oneDNN frees the memory now, outside any binding call
    gc.collect()
    assert [r.exc_value for r in reported] == raised
    reported.clear()
    raised.clear()
    del engine
    gc.collect()
    assert alloc.balanced()


# ----------------------------------------------------------------- alignment

def _offset_allocator(offset, size_factor=1.0, free_raises=None):
    """An allocator whose malloc hands out `offset` bytes into a USM
    allocation of `size * size_factor + alignment` bytes; free releases the
    allocation, then raises free_raises[0] if given (a list the test clears:
    the exception's frames lead back to the allocator, a cycle through C++)."""
    log = {"returned": [], "freed": []}
    bases = {}

    def malloc(size, alignment, device, context):
        base = usm.device_alloc(context, device, int(size * size_factor) + max(alignment, 1),
                                max(alignment, 1))
        bases[base + offset] = base
        log["returned"].append(base + offset)
        return base + offset

    def free(ptr, device, context, event):
        log["freed"].append(ptr)
        usm.free(context, bases.pop(ptr))
        if free_raises:
            raise free_raises[0]

    return _make_allocator(malloc, free), log


@pytest.mark.test_hooks
@pytest.mark.parametrize("alignment", [64, 4096])
def test_misaligned_malloc_return_is_refused(alignment, cl_device, cl_context):
    allocator, log = _offset_allocator(alignment // 2)
    with pytest.raises(RuntimeError) as info:
        allocator._malloc_and_free(256, alignment, cl_device, cl_context)
    _assert_raised_as(info.value, "runtime_error")
    cause = info.value.__cause__
    assert type(cause) is ValueError and f"aligned to the requested {alignment} bytes" in str(cause)
    # refused, passed back to free once, never used: the binding's own memory was
    assert log["freed"] == log["returned"] and len(log["returned"]) == 1


@pytest.mark.test_hooks
@pytest.mark.parametrize("refused", ["misaligned", "too short"])
def test_refused_malloc_return_keeps_its_reason_when_free_raises(refused, cl_device, cl_context):
    # Giving a refused pointer back calls free; a free that raises used to
    # replace the refusal's reason with its own exception.
    raised = [LookupError("free broke")]
    allocator, log = (_offset_allocator(32, free_raises=raised) if refused == "misaligned"
                      else _offset_allocator(0, size_factor=0.25, free_raises=raised))
    with pytest.raises(RuntimeError) as info:
        allocator._malloc_and_free(256, 64, cl_device, cl_context)
    _assert_raised_as(info.value, "runtime_error")
    cause = info.value.__cause__
    reason = "aligned to the requested 64 bytes" if refused == "misaligned" else "bytes left"
    assert type(cause) is ValueError and reason in str(cause), str(cause)
    assert "passed back to free, which raised LookupError: free broke" in str(cause)
    assert cause.__context__ is raised[0]
    assert log["freed"] == log["returned"] and len(log["returned"]) == 1
    raised.clear()  # see _offset_allocator


@pytest.mark.test_hooks
def test_refused_host_malloc_return_keeps_its_reason_when_host_free_raises():
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    bases = {}
    raised = [LookupError("host_free broke")]

    def host_malloc(size, alignment):
        base = libc.malloc(size + 128)
        ptr = base + 1 if base % 2 == 0 else base  # odd: misaligned for 64
        bases[ptr] = base
        return ptr

    def host_free(ptr):
        libc.free(bases.pop(ptr))
        raise raised[0]

    allocator = _make_allocator(host_malloc, host_free, g.allocator)
    with pytest.raises(RuntimeError) as info:
        allocator._host_malloc_and_free(128, 64)
    cause = info.value.__cause__
    assert type(cause) is ValueError and "aligned to the requested 64 bytes" in str(cause)
    assert "passed back to host_free, which raised LookupError: host_free broke" in str(cause)
    assert cause.__context__ is raised[0]
    assert bases == {}
    raised.clear()  # as above


@pytest.mark.test_hooks
@pytest.mark.parametrize("offset, alignment", [(0, 64), (0, 4096), (1, 0), (8, 8)])
def test_malloc_return_meeting_the_alignment_is_used(offset, alignment, cl_device, cl_context):
    allocator, log = _offset_allocator(offset)
    allocator._malloc_and_free(256, alignment, cl_device, cl_context)
    assert log["freed"] == log["returned"] and len(log["returned"]) == 1


@pytest.mark.test_hooks
def test_graph_allocator_failure_is_runtime_error_with_cause(cl_device, cl_context):
    raised = [LookupError("no memory today")]

    def malloc(size, alignment, device, context):
        raise raised[0]

    allocator = _make_allocator(malloc, lambda *args: None)
    with pytest.raises(RuntimeError) as info:
        allocator._malloc_and_free(256, 0, cl_device, cl_context)
    _assert_raised_as(info.value, "runtime_error")
    assert info.value.__cause__ is raised[0]
    assert _raised_in(info.value.__cause__, "malloc"), "the cause's traceback was lost"
    raised.clear()
