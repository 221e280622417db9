"""What the test files share: short names for the binding's namespaces, plain
memory descriptors, NumPy references (eltwise algorithms, softmax), USM
copies, the attention partition and its NumPy reference, a graph engine whose
Python allocator calls a hook, control of oneDNN's
caches, sub-devices, and the table of API entry points whose arguments the
bad-input and property-based tests spoil one at a time.

The test files import it as ``from helpers import ...``: tests/ has no
__init__.py, so pytest's default (prepend) import mode puts tests/ on
sys.path. It is imported only after conftest.py has chosen the OpenCL device.
"""

import contextlib
import gc
import math
import textwrap
import threading
from typing import Callable, NamedTuple

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl

# ------------------------------------------------------------------ aliases

oi = dnnl.ocl_interop
usm = dnnl.usm
g = dnnl.graph
goi = g.ocl_interop
lt = g.logical_tensor
DT = dnnl.memory.data_type
TAG = dnnl.memory.format_tag
ALG = dnnl.algorithm
INFERENCE = dnnl.prop_kind.forward_inference
F32 = lt.data_type.f32
STRIDED = lt.layout_type.strided
MF = cl.mem_flags
OOO = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


# ---------------------------------------------------------- fresh processes

# The start of a script a test runs in a fresh process: the device chosen as
# this process chose it (the environment is inherited), then `device`,
# `context` and `engine` on the first Intel GPU.
CHILD_ENGINE = textwrap.dedent("""
    import dnnl_ocl_interop as dnnl
    dnnl.emulation.ensure_device()
    import pyopencl as cl

    device = [d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices() if d.type & cl.device_type.GPU][0]
    context = cl.Context([device])
    engine = dnnl.ocl_interop.make_engine(device, context)
""")

# The same, then `oi` (dnnl.ocl_interop) and `stream` on an in-order `queue`.
CHILD_STREAM = CHILD_ENGINE + textwrap.dedent("""
    oi = dnnl.ocl_interop
    queue = cl.CommandQueue(context, device)
    stream = oi.make_stream(engine, queue)
""")


# ------------------------------------------------------- memory descriptors

def plain_tag(ndims):
    """The plain (row-major) format tag of `ndims` dims: a, ab, abc, ..."""
    return [TAG.a, TAG.ab, TAG.abc, TAG.abcd, TAG.abcde][ndims - 1]


def plain_desc(dims, data_type=DT.f32):
    """A row-major memory descriptor of `dims`."""
    return dnnl.memory.desc(list(dims), data_type, plain_tag(len(dims)))


class ProblemShown(Exception):
    """oneDNN computed wrong what a known problem says it computes wrong:
    what the strict xfails watching oneDNN expect (``raises=ProblemShown``),
    so that a failing guard in them (an AssertionError) fails the test."""


def assert_right(got, expected, rtol=1e-4, atol=1e-4, what="oneDNN's result"):
    """Raise ProblemShown unless `got` matches `expected` (NumPy's
    allclose): the check of a watch of a known problem."""
    try:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    except AssertionError as e:
        raise ProblemShown(f"{what}: {e}") from None


def refused_here(problem, make):
    """The refusal of make() (a primitive descriptor) for known problem
    `problem`, asserted where the implementation oneDNN picks for it (with
    the rule off) is one the problem names; elsewhere (a GPU running other
    implementations) the calling test skips, saying which ran."""
    import pytest

    implementation_here(problem, make)
    with pytest.raises(dnnl.unimplemented, match=problem) as info:
        make()
    assert info.value.known_problem == problem
    return info.value


def implementation_here(problem, make):
    """The implementation oneDNN picks for make() with `problem`'s rule off,
    when the problem names it; else the calling test skips saying which."""
    import pytest

    with dnnl.known_problems.disabled(problem):
        pd = make()
    impl = pd.impl_info_str()
    if not dnnl.known_problems.names(problem, pd.get_kind(), impl):
        pytest.skip(f"oneDNN picks {impl} for this case here, which {problem} does not name")
    return impl


def watch(problem, reason):
    """The marker of a test watching oneDNN's own behaviour for `problem`
    (its rule off through workarounds_off): a strict xfail that expects
    ProblemShown only."""
    import pytest

    return pytest.mark.xfail(strict=True, raises=ProblemShown,
                             reason=f"oneDNN 3.13.1: {reason} (known problem {problem}); this "
                                    "watches oneDNN with the rule off")


def workarounds_off(*problem_ids):
    """The binding's rules for these known oneDNN problems (every one's
    without ids) switched off through the public switch
    (dnnl.known_problems.disabled), to watch oneDNN's own behaviour."""
    return dnnl.known_problems.disabled(*problem_ids)


def map_round_trip(mem, values):
    """Writes `values` into `mem` through one map_data view (of their shape
    and dtype) and checks that the next view reads them back."""
    view = mem.map_data()
    assert view.shape == values.shape and view.dtype == values.dtype
    view[...] = values
    mem.unmap_data(view)

    view = mem.map_data()
    np.testing.assert_array_equal(view, values)
    mem.unmap_data(view)


# ------------------------------------------------- values in plain memory

def write_values(mem, values):
    """Writes `values` (already representable in the memory's data type) into
    plain-layout memory, converting them to its data type (bf16 as bits)."""
    data_type = mem.get_desc().get_data_type()
    values = np.asarray(values)
    if data_type == DT.bf16:
        dnnl.arrays.write(mem, dnnl.arrays.bf16_from_float32(values.astype(np.float32)))
    else:
        dnnl.arrays.write(mem, values.astype(dnnl.arrays.numpy_dtype(data_type)))


def read_values(mem):
    """Contents of plain-layout memory as float64 (bf16 decoded)."""
    out = dnnl.arrays.read(mem)
    if mem.get_desc().get_data_type() == DT.bf16:
        return dnnl.arrays.float32_from_bf16(out).astype(np.float64)
    return out.astype(np.float64)


# --------------------------------------------------------- NumPy references

_erf = np.vectorize(math.erf)


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


# oneDNN's eltwise algorithms, with NumPy references:
# name: (algorithm, alpha, beta, reference, input range)
ELTWISE = {
    "relu": (ALG.eltwise_relu, 0.0, 0.0, lambda x: np.maximum(x, 0), (-3, 3)),
    "leaky_relu": (ALG.eltwise_relu, 0.25, 0.0, lambda x: np.where(x > 0, x, 0.25 * x), (-3, 3)),
    "tanh": (ALG.eltwise_tanh, 0.0, 0.0, np.tanh, (-3, 3)),
    "logistic": (ALG.eltwise_logistic, 0.0, 0.0, _logistic, (-3, 3)),
    "exp": (ALG.eltwise_exp, 0.0, 0.0, np.exp, (-3, 3)),
    "log": (ALG.eltwise_log, 0.0, 0.0, np.log, (0.1, 3)),
    "abs": (ALG.eltwise_abs, 0.0, 0.0, np.abs, (-3, 3)),
    "sqrt": (ALG.eltwise_sqrt, 0.0, 0.0, np.sqrt, (0.1, 3)),
    "square": (ALG.eltwise_square, 0.0, 0.0, np.square, (-3, 3)),
    "linear": (ALG.eltwise_linear, 2.0, -3.0, lambda x: 2.0 * x - 3.0, (-3, 3)),
    "clip": (ALG.eltwise_clip, -1.0, 1.5, lambda x: np.clip(x, -1.0, 1.5), (-3, 3)),
    "elu": (ALG.eltwise_elu, 0.5, 0.0, lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), (-3, 3)),
    "soft_relu": (ALG.eltwise_soft_relu, 1.0, 0.0, lambda x: np.log1p(np.exp(x)), (-3, 3)),
    "swish": (ALG.eltwise_swish, 1.0, 0.0, lambda x: x * _logistic(x), (-3, 3)),
    "gelu_tanh": (ALG.eltwise_gelu_tanh, 0.0, 0.0,
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), (-3, 3)),
    "gelu_erf": (ALG.eltwise_gelu_erf, 0.0, 0.0, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), (-3, 3)),
    "hardswish": (ALG.eltwise_hardswish, 1 / 6, 0.5, lambda x: x * np.clip(x / 6 + 0.5, 0, 1), (-4, 4)),
    "pow": (ALG.eltwise_pow, 1.5, 2.0, lambda x: 1.5 * x ** 2, (-3, 3)),
    "mish": (ALG.eltwise_mish, 0.0, 0.0, lambda x: x * np.tanh(np.log1p(np.exp(x))), (-3, 3)),
}


def ref_softmax(x, axis, log):
    """NumPy softmax (or log-softmax) of `x` along `axis`."""
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=axis, keepdims=True)
    return shifted - np.log(s) if log else e / s


# ---------------------------------------------------------------- USM copies

def upload(queue, ptr, array, dtype=None):
    """Copies `array` (C-contiguous, converted to `dtype` if given) to the
    USM pointer `ptr` on `queue`, and waits."""
    array = np.ascontiguousarray(array, dtype=dtype)
    usm.memcpy(queue, ptr, array, array.nbytes).wait()


def download(queue, ptr, shape, dtype=np.float32, wait_for=()):
    """A new array of `shape` and `dtype` copied from the USM pointer `ptr`
    on `queue` once the events `wait_for` are complete."""
    out = np.empty(shape, dtype)
    usm.memcpy(queue, out, ptr, out.nbytes, deps=list(wait_for)).wait()
    return out


# ------------------------------------------------ graphs: attention partition

def engine_with_hooked_allocator(device, context, before_malloc):
    """A graph engine whose Python allocator calls ``before_malloc()`` at
    every malloc, then allocates device USM; its free waits for the event
    oneDNN passes (if any) and frees (a blocking USM free)."""
    def malloc(size, alignment, device, context):
        before_malloc()
        return dnnl.usm.device_alloc(context, device, size, alignment)

    def free(ptr, device, context, event):
        if event is not None:
            event.wait()
        dnnl.usm.free(context, ptr)

    return goi.make_engine_with_allocator(device, context, goi.make_allocator(malloc, free))


def attention_partition(batch, seq, head):
    """The single fused partition of MatMul(Q, K^T) -> SoftMax -> MatMul(., V),
    f32, strided; logical tensor ids 0, 1, 2 (Q, K, V) in and 5 out."""
    query, key, value = (lt(i, F32, [batch, seq, head], STRIDED) for i in range(3))
    scores = lt(3, F32, [batch, seq, seq], STRIDED)
    probabilities = lt(4, F32, [batch, seq, seq], STRIDED)
    output = lt(5, F32, [batch, seq, head], STRIDED)
    qk = g.op(0, g.op.kind.MatMul, [query, key], [scores], "qk")
    qk.set_attr(g.op.attr.transpose_b, True)
    softmax = g.op(1, g.op.kind.SoftMax, [scores], [probabilities], "softmax")
    softmax.set_attr(g.op.attr.axis, -1)
    pv = g.op(2, g.op.kind.MatMul, [probabilities, value], [output], "pv")
    graph = g.graph(dnnl.engine.kind.gpu)
    for op in (qk, softmax, pv):
        graph.add_op(op)
    graph.finalize()
    partitions = graph.get_partitions()
    assert len(partitions) == 1 and partitions[0].is_supported(), \
        f"expected one supported partition, got {[p.get_ops() for p in partitions]}"
    return partitions[0]


def attention_reference(q, k, v):
    """NumPy attention: softmax(q @ k^T) @ v over the last axes."""
    logits = q @ np.swapaxes(k, -1, -2)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


def compile_partition(partition, engine):
    """`partition` compiled for `engine` on its own input and output ports."""
    return partition.compile(partition.get_input_ports(), partition.get_output_ports(), engine)


def allocated_inputs(partition, engine, queue, data):
    """MEMORY_ALLOCATE tensors for the partition's inputs on `engine`, each
    holding data[its logical tensor id]."""
    tensors = [g.tensor(p, engine, dnnl.MEMORY_ALLOCATE) for p in partition.get_input_ports()]
    for tensor in tensors:
        upload(queue, tensor.get_data_handle(), data[tensor.get_logical_tensor().get_id()])
    return tensors


# ------------------------------------------------------------- oneDNN's caches
#
# oneDNN's primitive and compiled-partition caches hold kernels, and so the
# OpenCL context, after every Python object is gone: tests that count
# references empty or shrink them.

def empty_onednn_caches():
    """Evict every cached primitive and compiled partition (capacity 0, then back)."""
    for get, set_ in ((dnnl.get_primitive_cache_capacity, dnnl.set_primitive_cache_capacity),
                      (g.get_compiled_partition_cache_capacity,
                       g.set_compiled_partition_cache_capacity)):
        capacity = get()
        set_(0)
        set_(capacity)
    gc.collect()


@contextlib.contextmanager
def compiled_partition_cache_capacity(capacity):
    """Run with oneDNN's compiled-partition cache at `capacity` entries."""
    previous = g.get_compiled_partition_cache_capacity()
    g.set_compiled_partition_cache_capacity(capacity)
    try:
        yield
    finally:
        g.set_compiled_partition_cache_capacity(previous)


# ---------------------------------------------------------------- sub-devices

def first_sub_device(device):
    """A sub-device of `device` (partitioned the way the device allows) and
    all the sub-devices made with it, or (None, []) when the device cannot be
    partitioned."""
    if device.partition_max_sub_devices == 0:
        return None, []
    P = cl.device_partition_property
    if P.EQUALLY in device.partition_properties:
        subs = device.create_sub_devices([P.EQUALLY, 1])
    else:
        subs = device.create_sub_devices(
            [P.BY_AFFINITY_DOMAIN, cl.device_affinity_domain.NEXT_PARTITIONABLE])
    return subs[0], subs


def sub_device_or_skip(device):
    """first_sub_device(device), or the test skipped saying why: a device
    that cannot be partitioned (some real GPUs) has no sub-device to check
    with. The emulated device always has them (the CPU device splits), so
    there the test never skips."""
    sub_device, subs = first_sub_device(device)
    if sub_device is None:
        assert not dnnl.emulation.is_enabled(), "the emulated device has sub-devices"
        pytest.skip(f"{device.name} cannot be partitioned into sub-devices: no sub-device to check with")
    return sub_device, subs


# ------------------------------------------------------------ API entry points

class EntryPoint(NamedTuple):
    """An API call with one argument open: ``call(o, value)`` passes `value`
    as the parameter `param` (as error messages name it) and takes every
    other argument from `o`, a test's namespace of valid objects (engine,
    device, context, queue, desc, mem, usm_mem, buffer, ptr, host, stream,
    prim, args, allocator, lts, tensors, compiled, partition: whichever the
    call uses). `name` is the function, as test ids show it."""
    name: str
    param: str
    call: Callable


def _make_memory_third_argument(o, v):  # a memory_kind, or a cl_mem (another overload)
    return oi.make_memory(o.desc, o.engine, v)


# Keyed by id (test_hypothesis.py's test ids; test_bad_input.py's show name
# and param).
ENTRY_POINTS = {
    # dnnl.ocl_interop
    "make_engine.device": EntryPoint(
        "make_engine", "device", lambda o, v: oi.make_engine(v, o.context)),
    "make_engine.context": EntryPoint(
        "make_engine", "context", lambda o, v: oi.make_engine(o.device, v)),
    "make_engine.cache_blob": EntryPoint(
        "make_engine", "cache_blob", lambda o, v: oi.make_engine(o.device, o.context, v)),
    "make_engine_with_blob.device": EntryPoint(
        "make_engine_with_blob", "device", lambda o, v: oi.make_engine(v, o.context, b"blob")),
    "get_context": EntryPoint("get_context", "engine", lambda o, v: oi.get_context(v)),
    "get_device": EntryPoint("get_device", "engine", lambda o, v: oi.get_device(v)),
    "get_engine_cache_blob": EntryPoint(
        "get_engine_cache_blob", "engine", lambda o, v: oi.get_engine_cache_blob(v)),
    "get_engine_cache_blob_id": EntryPoint(
        "get_engine_cache_blob_id", "device", lambda o, v: oi.get_engine_cache_blob_id(v)),
    "make_stream.engine": EntryPoint(
        "make_stream", "engine", lambda o, v: oi.make_stream(v, o.queue)),
    "make_stream.queue": EntryPoint(
        "make_stream", "queue", lambda o, v: oi.make_stream(o.engine, v)),
    "get_command_queue": EntryPoint(
        "get_command_queue", "stream", lambda o, v: oi.get_command_queue(v)),
    "make_memory.desc": EntryPoint(
        "make_memory", "desc", lambda o, v: oi.make_memory(v, o.engine, oi.memory_kind.buffer)),
    "make_memory.engine": EntryPoint(
        "make_memory", "engine", lambda o, v: oi.make_memory(o.desc, v, oi.memory_kind.buffer)),
    "make_memory.kind": EntryPoint("make_memory", "kind", _make_memory_third_argument),
    "make_memory.mem_object": EntryPoint("make_memory", "mem_object", _make_memory_third_argument),
    "make_memory.usm_handle": EntryPoint(
        "make_memory_usm", "handle",
        lambda o, v: oi.make_memory(o.desc, o.engine, oi.memory_kind.usm, v)),
    "make_memory.buffer_handle": EntryPoint(
        "make_memory_buffer", "handle",
        lambda o, v: oi.make_memory(o.desc, o.engine, oi.memory_kind.buffer, v)),
    "get_mem_object": EntryPoint("get_mem_object", "memory", lambda o, v: oi.get_mem_object(v)),
    "get_memory_kind": EntryPoint(
        "get_memory_kind", "memory", lambda o, v: oi.get_memory_kind(v)),
    "set_mem_object.memory": EntryPoint(
        "set_mem_object", "memory", lambda o, v: oi.set_mem_object(v, o.buffer)),
    "set_mem_object.mem_object": EntryPoint(
        "set_mem_object", "mem_object", lambda o, v: oi.set_mem_object(o.mem, v)),
    "execute.primitive": EntryPoint(
        "execute", "primitive", lambda o, v: oi.execute(v, o.stream, o.args)),
    "execute.stream": EntryPoint("execute", "stream", lambda o, v: oi.execute(o.prim, v, o.args)),
    "execute.args": EntryPoint("execute", "args", lambda o, v: oi.execute(o.prim, o.stream, v)),
    "execute.deps": EntryPoint(
        "execute", "deps", lambda o, v: oi.execute(o.prim, o.stream, o.args, deps=v)),
    # dnnl.usm
    "device_alloc.context": EntryPoint(
        "device_alloc", "context", lambda o, v: usm.device_alloc(v, o.device, 64)),
    "device_alloc.device": EntryPoint(
        "device_alloc", "device", lambda o, v: usm.device_alloc(o.context, v, 64)),
    "device_alloc.size": EntryPoint(
        "device_alloc", "size", lambda o, v: usm.device_alloc(o.context, o.device, v)),
    "device_alloc.alignment": EntryPoint(
        "device_alloc", "alignment", lambda o, v: usm.device_alloc(o.context, o.device, 64, v)),
    "shared_alloc.context": EntryPoint(
        "shared_alloc", "context", lambda o, v: usm.shared_alloc(v, o.device, 64)),
    "shared_alloc.device": EntryPoint(
        "shared_alloc", "device", lambda o, v: usm.shared_alloc(o.context, v, 64)),
    "shared_alloc.size": EntryPoint(
        "shared_alloc", "size", lambda o, v: usm.shared_alloc(o.context, o.device, v)),
    "host_alloc.context": EntryPoint(
        "host_alloc", "context", lambda o, v: usm.host_alloc(v, 64)),
    "host_alloc.size": EntryPoint("host_alloc", "size", lambda o, v: usm.host_alloc(o.context, v)),
    "host_alloc.alignment": EntryPoint(
        "host_alloc", "alignment", lambda o, v: usm.host_alloc(o.context, 64, v)),
    "free.context": EntryPoint("free", "context", lambda o, v: usm.free(v, o.ptr)),
    "free.ptr": EntryPoint("free", "ptr", lambda o, v: usm.free(o.context, v)),
    "pointer_type.context": EntryPoint(
        "pointer_type", "context", lambda o, v: usm.pointer_type(v, o.ptr)),
    "pointer_type.ptr": EntryPoint(
        "pointer_type", "ptr", lambda o, v: usm.pointer_type(o.context, v)),
    "memcpy.queue": EntryPoint("memcpy", "queue", lambda o, v: usm.memcpy(v, o.ptr, o.host, 8)),
    # host to device: v is the destination pointer, or the source array
    "memcpy.dst": EntryPoint("memcpy", "dst", lambda o, v: usm.memcpy(o.queue, v, o.host, 8)),
    "memcpy.src": EntryPoint("memcpy", "src", lambda o, v: usm.memcpy(o.queue, o.ptr, v, 8)),
    # device to host: v is the source pointer
    "memcpy.usm_src": EntryPoint(
        "memcpy", "src", lambda o, v: usm.memcpy(o.queue, o.host, v, 8)),
    "memcpy.size": EntryPoint(
        "memcpy", "size", lambda o, v: usm.memcpy(o.queue, o.ptr, o.host, v)),
    "memcpy.deps": EntryPoint(
        "memcpy", "deps", lambda o, v: usm.memcpy(o.queue, o.ptr, o.host, 8, deps=v)),
    "memcpy.deps[0]": EntryPoint(
        "memcpy", "deps[0]", lambda o, v: usm.memcpy(o.queue, o.ptr, o.host, 8, deps=[v])),
    "fill.queue": EntryPoint("fill", "queue", lambda o, v: usm.fill(v, o.ptr, b"\0", 8)),
    "fill.ptr": EntryPoint("fill", "ptr", lambda o, v: usm.fill(o.queue, v, b"\0", 8)),
    "fill.pattern": EntryPoint("fill", "pattern", lambda o, v: usm.fill(o.queue, o.ptr, v, 8)),
    "fill.size": EntryPoint("fill", "size", lambda o, v: usm.fill(o.queue, o.ptr, b"\0", v)),
    "fill.deps[0]": EntryPoint(
        "fill", "deps[0]", lambda o, v: usm.fill(o.queue, o.ptr, b"\0", 8, deps=[v])),
    "allocation.size": EntryPoint(
        "allocation", "size", lambda o, v: usm.allocation(o.context, v, "device", o.device)),
    "allocation.kind": EntryPoint(
        "allocation", "kind", lambda o, v: usm.allocation(o.context, 64, v, o.device)),
    "allocation.context": EntryPoint(
        "allocation", "context", lambda o, v: usm.allocation(v, 64, "host")),
    # core
    "memory.desc": EntryPoint("memory", "desc", lambda o, v: dnnl.memory(v, o.engine)),
    "memory.engine": EntryPoint("memory", "engine", lambda o, v: dnnl.memory(o.desc, v)),
    "memory.handle": EntryPoint(
        "memory", "handle", lambda o, v: dnnl.memory(o.desc, o.engine, v)),
    "memory.set_data_handle": EntryPoint(
        "set_data_handle", "handle", lambda o, v: o.mem.set_data_handle(v)),
    "usm_memory.set_data_handle": EntryPoint(
        "set_data_handle", "handle", lambda o, v: o.usm_mem.set_data_handle(v)),
    "memory.unmap_data": EntryPoint("unmap_data", "view", lambda o, v: o.mem.unmap_data(v)),
    "stream.engine": EntryPoint("stream", "engine", lambda o, v: dnnl.stream(v)),
    "stream.flags": EntryPoint("stream", "flags", lambda o, v: dnnl.stream(o.engine, v)),
    "desc.dims": EntryPoint("desc", "dims", lambda o, v: dnnl.memory.desc(v, DT.f32, TAG.ab)),
    "desc.data_type": EntryPoint(
        "desc", "data_type", lambda o, v: dnnl.memory.desc([2, 3], v, TAG.ab)),
    "desc.layout": EntryPoint(  # a format tag, or strides (another overload)
        "desc", "layout", lambda o, v: dnnl.memory.desc([2, 3], DT.f32, v)),
    "primitive.execute.stream": EntryPoint(
        "execute", "stream", lambda o, v: o.prim.execute(v, o.args)),
    "primitive.execute.args": EntryPoint(
        "execute", "args", lambda o, v: o.prim.execute(o.stream, v)),
    "matmul.primitive_desc.engine": EntryPoint(
        "matmul.primitive_desc", "engine",
        lambda o, v: dnnl.matmul.primitive_desc(v, o.desc, o.desc, o.desc)),
    "matmul.primitive_desc.weights": EntryPoint(
        "matmul.primitive_desc", "weights_desc",
        lambda o, v: dnnl.matmul.primitive_desc(o.engine, o.desc, v, o.desc)),
    "eltwise.primitive_desc.alpha": EntryPoint(
        "eltwise_forward.primitive_desc", "alpha",
        lambda o, v: dnnl.eltwise_forward.primitive_desc(
            o.engine, INFERENCE, ALG.eltwise_relu, o.desc, o.desc, alpha=v)),  # positional: attr
    "reorder.primitive_desc.dst": EntryPoint(
        "reorder.primitive_desc", "dst_desc",
        lambda o, v: dnnl.reorder.primitive_desc(o.engine, o.desc, o.engine, v)),
    # dnnl.graph
    "make_allocator.malloc": EntryPoint(
        "make_allocator", "malloc", lambda o, v: goi.make_allocator(v, lambda *a: None)),
    "make_allocator.free": EntryPoint(
        "make_allocator", "free", lambda o, v: goi.make_allocator(lambda *a: 0, v)),
    "make_engine_with_allocator.device": EntryPoint(
        "make_engine_with_allocator", "device",
        lambda o, v: goi.make_engine_with_allocator(v, o.context, o.allocator)),
    "make_engine_with_allocator.context": EntryPoint(
        "make_engine_with_allocator", "context",
        lambda o, v: goi.make_engine_with_allocator(o.device, v, o.allocator)),
    "make_engine_with_allocator.allocator": EntryPoint(
        "make_engine_with_allocator", "allocator",
        lambda o, v: goi.make_engine_with_allocator(o.device, o.context, v)),
    "make_engine_with_allocator.cache_blob": EntryPoint(
        "make_engine_with_allocator", "cache_blob",
        lambda o, v: goi.make_engine_with_allocator(o.device, o.context, o.allocator, v)),
    "tensor.logical_tensor": EntryPoint(
        "tensor", "logical_tensor", lambda o, v: g.tensor(v, o.engine, o.ptr)),
    "tensor.engine": EntryPoint("tensor", "engine", lambda o, v: g.tensor(o.lts[0], v, o.ptr)),
    "tensor.handle": EntryPoint(
        "tensor", "handle", lambda o, v: g.tensor(o.lts[0], o.engine, v)),
    "tensor.set_data_handle": EntryPoint(
        "set_data_handle", "handle", lambda o, v: o.tensors[0].set_data_handle(v)),
    "compiled.execute.stream": EntryPoint(
        "execute", "stream", lambda o, v: o.compiled.execute(v, o.tensors[:2], o.tensors[2:])),
    "compiled.execute.inputs": EntryPoint(
        "execute", "inputs", lambda o, v: o.compiled.execute(o.stream, v, o.tensors[2:])),
    "compiled.execute.outputs": EntryPoint(
        "execute", "outputs", lambda o, v: o.compiled.execute(o.stream, o.tensors[:2], v)),
    "graph.execute.deps": EntryPoint(
        "execute", "deps",
        lambda o, v: goi.execute(o.compiled, o.stream, o.tensors[:2], o.tensors[2:], deps=v)),
    "graph.execute.scratchpad": EntryPoint(
        "execute", "scratchpad",
        lambda o, v: goi.execute(o.compiled, o.stream, o.tensors[:2], o.tensors[2:],
                                 scratchpad=v)),
    "logical_tensor.dims": EntryPoint(
        "logical_tensor", "dims", lambda o, v: lt(7, F32, v, STRIDED)),
    "logical_tensor.data_type": EntryPoint(
        "logical_tensor", "data_type", lambda o, v: lt(7, v, [2], STRIDED)),
    "op.kind": EntryPoint("op", "kind", lambda o, v: g.op(9, v)),
    "op.set_attr.value": EntryPoint(
        "set_attr", "value",
        lambda o, v: g.op(9, g.op.kind.MatMul).set_attr(g.op.attr.transpose_a, v)),
    "op.set_attr.attr": EntryPoint(
        "set_attr", "name", lambda o, v: g.op(9, g.op.kind.MatMul).set_attr(v, True)),
    "graph.add_op": EntryPoint(
        "add_op", "op", lambda o, v: g.graph(dnnl.engine.kind.gpu).add_op(v)),
    "graph.engine_kind": EntryPoint("graph", "engine_kind", lambda o, v: g.graph(v)),
    "partition.compile.inputs": EntryPoint(
        "compile", "inputs", lambda o, v: o.partition.compile(v, [o.lts[2]], o.engine)),
    "partition.compile.engine": EntryPoint(
        "compile", "engine",
        lambda o, v: o.partition.compile(list(o.lts[:2]), [o.lts[2]], v)),
}


def entry_calls(ids):
    """{test id: call} for the entry points ENTRY_POINTS names {test id: key}."""
    return {test_id: ENTRY_POINTS[key].call for test_id, key in ids.items()}


# The uses of a USM pointer (v), by test id.
USM_POINTER_USES = entry_calls({
    "make_memory": "make_memory.usm_handle",
    "set_data_handle": "usm_memory.set_data_handle",
    "graph.tensor": "tensor.handle",
    "tensor.set_data_handle": "tensor.set_data_handle",
    "memcpy.dst": "memcpy.dst",
    "memcpy.src": "memcpy.usm_src",
    "memcpy.device_to_device": "memcpy.src",
    "fill": "fill.ptr",
    "free": "free.ptr",
})


# ------------------------------------------------ scripts of the repository

def load_script(name, path):
    """Import a script of the repository that is not in a package (for
    example third_party/onednn_bundle.py) as module `name`."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------ the OpenCL runtime's own choices

_SUB_GROUP_PROBE = """
__kernel void probe(__global int *size) {
    if (get_global_id(0) == 0) size[0] = get_sub_group_size();
}
"""


_sub_group_sizes: dict = {}


def default_sub_group_size(context, queue, work_group=16):
    """The sub-group size the OpenCL compiler picks for a kernel that asks
    for none, launched with `work_group` work-items (what oneDNN 3.13.1's
    reusable softmax leaves to it, unless the emulation asks for 16:
    docs/known-problems.md). Probed once per context and work-group size."""
    key = (context.int_ptr, work_group)
    if key not in _sub_group_sizes:
        _sub_group_sizes[key] = _probe_sub_group_size(context, queue, work_group)
    return _sub_group_sizes[key]


def _probe_sub_group_size(context, queue, work_group):
    import pyopencl as cl

    program = cl.Program(context, _SUB_GROUP_PROBE).build()
    out = np.zeros(1, np.int32)
    buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    cl.Kernel(program, "probe")(queue, (work_group,), (work_group,), buffer)
    cl.enqueue_copy(queue, out, buffer)
    queue.finish()
    return int(out[0])


def run_in_threads(work, arguments):
    """Run ``work(*args)`` for each tuple of ``arguments`` in its own thread,
    all started before any is joined; raise the first exception a thread
    raised (the others are chained in its notes)."""
    errors = []

    def guarded(*args):
        try:
            work(*args)
        except BaseException as e:  # re-raised in the calling thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=tuple(args)) for args in arguments]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for other in errors[1:]:
            errors[0].add_note(f"another thread raised {other!r}")
        raise errors[0]

