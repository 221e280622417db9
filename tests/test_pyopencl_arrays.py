"""dnnl.arrays.as_memory / to_pyopencl (pyopencl arrays and buffer memory
sharing one cl_mem, no copies) and dnnl.usm.set_kernel_arg (USM memory
meeting a pyopencl kernel).

Each sharing test checks identity (the memory's cl_mem is the array's, or a
sub-buffer of it at the view's offset) and then data: a real primitive reads
and writes the array, and the results are compared with NumPy. Views whose
offset OpenCL cannot make a sub-buffer at, negative strides, foreign
contexts, wrong dtypes and descriptors that reach past the array are
refused before oneDNN sees them.
"""

import gc

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import arrays
from helpers import (ALG, DT, INFERENCE, TAG, assert_right, implementation_here, oi, plain_desc,
                     refused_here, usm, watch, workarounds_off)

NUMPY_TYPES = {"f32": np.float32, "f16": np.float16, "s8": np.int8, "u8": np.uint8, "s32": np.int32}


def align_bytes(context):
    """The sub-buffer alignment of the context's devices, in bytes."""
    return max(d.mem_base_addr_align for d in context.devices) // 8


def linear(engine, stream, src, dst, alpha, beta, deps=()):
    """dst = alpha * src + beta with oneDNN's eltwise primitive."""
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_linear,
                                             src.get_desc(), dst.get_desc(), alpha, beta)
    return oi.execute(dnnl.eltwise_forward(pd), stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst},
                      list(deps))


def reorder(stream, src, dst, deps=()):
    prim = dnnl.reorder(dnnl.reorder.primitive_desc(src, dst))
    return oi.execute(prim, stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst}, list(deps))


def plain_memory(engine, shape, data_type=DT.f32):
    tags = [TAG.a, TAG.ab, TAG.abc, TAG.abcd]
    return dnnl.memory(dnnl.memory.desc(list(shape), data_type, tags[len(shape) - 1]), engine)


# --------------------------------------------------------------------------
# as_memory: identity, dtypes


@pytest.mark.parametrize("dt", list(NUMPY_TYPES))
def test_as_memory_shares_the_cl_mem(engine, stream, cl_queue, dt):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5)) * 20).astype(NUMPY_TYPES[dt])
    a = cla.to_device(cl_queue, x)
    mem, events = arrays.as_memory(a, engine)
    assert isinstance(events, list)
    assert mem.get_data_handle() == a.base_data.int_ptr
    assert oi.get_mem_object(mem).int_ptr == a.base_data.int_ptr
    assert oi.get_memory_kind(mem) == oi.memory_kind.buffer
    desc = mem.get_desc()
    assert desc.get_dims() == [3, 5] and desc.get_strides() == [5, 1]
    assert desc.get_data_type() == getattr(DT, dt)
    cl_queue.finish()
    np.testing.assert_array_equal(arrays.read(mem), x)  # the array's data, no copy made
    # oneDNN writes the array: a reorder from f32 values into it.
    values = np.arange(15, dtype=np.float32).reshape(3, 5) * 2 + 1  # fits every type
    src = plain_memory(engine, (3, 5))
    arrays.write(src, values)
    reorder(stream, src, mem)
    stream.wait()
    np.testing.assert_array_equal(a.get(), values.astype(NUMPY_TYPES[dt]))


def test_named_fields(engine, cl_queue):
    a = cla.zeros(cl_queue, 8, np.float32)
    result = arrays.as_memory(a, engine)
    assert result.memory.get_data_handle() == a.base_data.int_ptr
    assert result.events == list(a.events)
    mem, events = result
    assert mem is result.memory and events is result.events


def test_memory_keeps_the_cl_mem_alive(engine, cl_queue):
    x = np.arange(6, dtype=np.float32)
    a = cla.to_device(cl_queue, x)
    buf = a.base_data
    mem, _ = arrays.as_memory(a, engine)
    refs = buf.reference_count
    del a, buf
    gc.collect()
    cl_queue.finish()
    np.testing.assert_array_equal(arrays.read(mem), x)
    assert oi.get_mem_object(mem).reference_count == refs  # oneDNN's + the new wrapper's


def test_arrays_of_a_memory_pool(engine, stream, cl_context, cl_queue):
    """pyopencl's pooled buffers are cl_mem objects too, offsets included."""
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(cl_queue))
    step = align_bytes(cl_context) // 4
    x = np.arange(3 * step, dtype=np.float32)
    a = cla.to_device(cl_queue, x, allocator=pool)
    assert isinstance(a.base_data, cl_tools.PooledBuffer)
    mem, _ = arrays.as_memory(a, engine)
    assert mem.get_data_handle() == a.base_data.int_ptr
    view, _ = arrays.as_memory(a[step:], engine)
    cl_queue.finish()
    linear(engine, stream, view, view, -1.0, 0.0)
    stream.wait()
    np.testing.assert_array_equal(arrays.read(mem), np.concatenate([x[:step], -x[step:]]))


def test_as_memory_is_made_once_per_array_engine_and_desc(engine, cl_device, cl_context, cl_queue):
    a = cla.zeros(cl_queue, 8, np.float32)
    first, first_events = arrays.as_memory(a, engine)
    again, again_events = arrays.as_memory(a, engine)
    assert again is first
    assert again_events == list(a.events) and again_events is not first_events  # copied anew
    flat = dnnl.memory.desc([8], DT.f32, TAG.a)
    with_desc = arrays.as_memory(a, engine, flat).memory
    assert with_desc is not first
    # plain descriptors are told apart by value (dims, type, strides), not by object
    assert arrays.as_memory(a, engine, dnnl.memory.desc([8], DT.f32, TAG.a)).memory is with_desc
    square = dnnl.memory.desc([2, 4], DT.f32, TAG.ab)
    assert arrays.as_memory(a, engine, square).memory.get_desc() == square
    other_engine = oi.make_engine(cl_device, cl_context)
    elsewhere = arrays.as_memory(a, other_engine).memory
    assert elsewhere is not first and elsewhere.get_engine() == other_engine


def test_as_memory_notices_a_changed_data_handle(engine, cl_context, cl_queue):
    """A user may point the memory as_memory returned at another buffer: the
    next call must not hand that memory out for the array."""
    x = np.arange(8, dtype=np.float32)
    a = cla.to_device(cl_queue, x)
    mem, _ = arrays.as_memory(a, engine)
    other = cl.Buffer(cl_context, cl.mem_flags.READ_WRITE, 64)
    oi.set_mem_object(mem, other)
    fresh, _ = arrays.as_memory(a, engine)
    assert fresh is not mem
    assert fresh.get_data_handle() == a.base_data.int_ptr
    cl_queue.finish()
    np.testing.assert_array_equal(arrays.read(fresh), x)


def test_as_memory_follows_the_arrays_storage(engine, cl_context, cl_queue):
    """An array given another buffer or offset gets memory on those."""
    step = align_bytes(cl_context) // 4
    x = np.arange(2 * step, dtype=np.float32)
    a = cla.to_device(cl_queue, x[:step].copy())
    arrays.as_memory(a, engine)
    b = cla.to_device(cl_queue, x)
    a.base_data = b.base_data
    moved = arrays.as_memory(a, engine).memory
    assert moved.get_data_handle() == b.base_data.int_ptr
    a.offset = step * 4
    shifted = arrays.as_memory(a, engine).memory
    assert oi.get_mem_object(shifted).associated_memobject.int_ptr == b.base_data.int_ptr
    cl_queue.finish()
    np.testing.assert_array_equal(arrays.read(shifted), x[step:])


def test_as_memory_keeps_a_bounded_number_per_array(engine, cl_queue):
    a = cla.zeros(cl_queue, 64, np.float32)
    descs = [dnnl.memory.desc([n], DT.f32, TAG.a) for n in range(1, arrays.MEMORIES_PER_ARRAY + 2)]
    made = [arrays.as_memory(a, engine, d).memory for d in descs]
    assert arrays.as_memory(a, engine, descs[-1]).memory is made[-1]
    assert arrays.as_memory(a, engine, descs[1]).memory is made[1]
    assert arrays.as_memory(a, engine, descs[0]).memory is not made[0]  # the oldest went


def test_new_axes(engine, cl_queue):
    """np.newaxis gives a dimension of 1 with stride 0: still the same elements."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = cla.to_device(cl_queue, x)
    cl_queue.finish()
    for view, expected in [(a[:, None], x[:, None]), (a[None], x[None])]:
        mem, _ = arrays.as_memory(view, engine)
        assert mem.get_data_handle() == a.base_data.int_ptr
        np.testing.assert_array_equal(arrays.read(mem), expected)


# --------------------------------------------------------------------------
# offset views


def test_aligned_offset_view_is_a_sub_buffer(engine, stream, cl_context, cl_queue):
    step = align_bytes(cl_context) // 4  # f32 elements per alignment unit
    n = 3 * step
    x = np.arange(n, dtype=np.float32)
    a = cla.to_device(cl_queue, x)
    view = a[step:]
    assert view.offset == step * 4
    mem, _ = arrays.as_memory(view, engine)
    sub = oi.get_mem_object(mem)
    assert sub.associated_memobject.int_ptr == a.base_data.int_ptr  # a sub-buffer of a's cl_mem
    assert sub.offset == view.offset
    assert mem.get_desc().get_dims() == [n - step]
    cl_queue.finish()
    linear(engine, stream, mem, mem, 2.0, 1.0)  # in place, on the view only
    stream.wait()
    expected = x.copy()
    expected[step:] = 2 * x[step:] + 1
    np.testing.assert_array_equal(a.get(), expected)


def test_offset_view_of_an_array_on_a_sub_buffer(engine, stream, cl_context, cl_queue):
    """OpenCL nests no sub-buffers: the view's sub-buffer is made on the root."""
    step = align_bytes(cl_context) // 4
    root = cl.Buffer(cl_context, cl.mem_flags.READ_WRITE, 4 * step * 4)
    cl.enqueue_copy(cl_queue, root, np.arange(4 * step, dtype=np.float32))
    outer = cla.Array(cl_queue, (3 * step,), np.float32, data=root.get_sub_region(step * 4, 3 * step * 4))
    view = outer[step:]
    mem, _ = arrays.as_memory(view, engine)
    sub = oi.get_mem_object(mem)
    assert sub.associated_memobject.int_ptr == root.int_ptr
    assert sub.offset == 2 * step * 4
    cl_queue.finish()
    np.testing.assert_array_equal(arrays.read(mem), np.arange(2 * step, 4 * step, dtype=np.float32))


@pytest.mark.parametrize("index", [slice(3, None), slice(1, 7)])
def test_views_at_unaligned_elements_are_shared_with_a_submemory_offset(engine, stream, cl_queue, index):
    """a[3:] of a float32 array: OpenCL starts no sub-buffer at byte 12, so
    the memory's handle is the aligned byte before it and its descriptor
    says the rest (a sub-memory offset of 3 elements), as oneDNN's C++ API
    takes such a view. A reorder honours the offset: the view's values
    come out, and writing through a reorder changes only the view."""
    x = np.arange(64, dtype=np.float32)
    a = cla.to_device(cl_queue, x)
    view = a[index]
    mem, _ = arrays.as_memory(view, engine)
    desc = mem.get_desc()
    assert desc.get_submemory_offset() == index.start
    assert desc.get_dims() == [len(x[index])]
    dense = plain_memory(engine, (len(x[index]),))
    cl_queue.finish()
    dnnl.reorder(mem, dense).execute(stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: dense})
    stream.wait()
    np.testing.assert_array_equal(arrays.read(dense), x[index])
    arrays.write(dense, -x[index])
    dnnl.reorder(dense, mem).execute(stream, {dnnl.ARG_FROM: dense, dnnl.ARG_TO: mem})
    stream.wait()
    expected = x.copy()
    expected[index] = -x[index]
    np.testing.assert_array_equal(a.get(), expected)


def test_column_slices_at_unaligned_elements_are_shared(engine, stream, cl_queue):
    """x[:, 1:] and x[1:, 1:] of a 4 x 8 array: offsets the views' strides
    spell (a parent reaching back to the aligned handle)."""
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    a = cla.to_device(cl_queue, x)
    for index in ((slice(None), slice(1, None)), (slice(1, None), slice(1, None))):
        mem, _ = arrays.as_memory(a[index], engine)
        dense = plain_memory(engine, x[index].shape)
        cl_queue.finish()
        dnnl.reorder(mem, dense).execute(stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: dense})
        stream.wait()
        np.testing.assert_array_equal(arrays.read(dense), x[index])


def test_an_offset_the_strides_cannot_spell_is_refused(engine, cl_queue):
    """a[:, 1::2] of a 4 x 6 array starts 1 element past an aligned byte,
    and its strides (6, 2) reach only even offsets: no descriptor says it."""
    a = cla.to_device(cl_queue, np.arange(24, dtype=np.float32).reshape(4, 6))
    with pytest.raises(ValueError, match="not a sum of its strides"):
        arrays.as_memory(a[:, 1::2], engine)


def test_a_primitive_that_ignores_the_offset_is_refused_for_the_view(engine, cl_queue):
    """A binary on a[3:]: oneDNN's ocl:simple binary addresses its
    arguments from their handles (known problem submemory-offsets): refused
    where that implementation is oneDNN's choice."""
    a = cla.to_device(cl_queue, np.arange(64, dtype=np.float32))
    desc = arrays.as_memory(a[3:35], engine).memory.get_desc()
    refused_here("submemory-offsets", lambda: dnnl.binary.primitive_desc(
        engine, ALG.binary_add, desc, desc, desc))


# --------------------------------------------------------------------------
# strided views used by primitives


def test_strided_view_read_by_binary(engine, stream, cl_queue):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = cla.to_device(cl_queue, x)
    view = a[:, ::2]
    mem, _ = arrays.as_memory(view, engine)
    assert mem.get_data_handle() == a.base_data.int_ptr
    assert mem.get_desc().get_dims() == [4, 3]
    assert mem.get_desc().get_strides() == [6, 2]
    y = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    other, dst = plain_memory(engine, (4, 3)), plain_memory(engine, (4, 3))
    arrays.write(other, y)
    pd = dnnl.binary.primitive_desc(engine, ALG.binary_mul, mem.get_desc(), other.get_desc(),
                                    dst.get_desc())
    cl_queue.finish()
    oi.execute(dnnl.binary(pd), stream, {dnnl.ARG_SRC_0: mem, dnnl.ARG_SRC_1: other,
                                         dnnl.ARG_DST: dst})
    stream.wait()
    np.testing.assert_array_equal(arrays.read(dst), x[:, ::2] * y)


@pytest.mark.parametrize("view", ["every other column", "offset rows"])
def test_eltwise_on_a_view_oneDNN_would_treat_as_dense_is_refused(engine, cl_queue, view):
    """oneDNN's GPU eltwise ignores strides and sub-memory offsets (known
    problem eltwise-strides): the descriptor is refused with the problem
    named, or empty with allow_empty, instead of computing wrong results."""
    a = cla.to_device(cl_queue, np.arange(24, dtype=np.float32).reshape(4, 6))
    if view == "every other column":
        desc = arrays.as_memory(a[:, ::2], engine).memory.get_desc()
    else:
        desc = plain_desc([4, 6]).submemory_desc([2, 6], [2, 0])
    refused_here("eltwise-strides", lambda: dnnl.eltwise_forward.primitive_desc(
        engine, INFERENCE, ALG.eltwise_linear, desc, desc, 2.0, 1.0))
    assert not dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_linear,
                                                   desc, desc, 2.0, 1.0, allow_empty=True)


def test_eltwise_on_dense_views_is_right(engine, stream, cl_queue):
    """What the refusal leaves: dense layouts, permuted ones included, compute
    NumPy's result (oneDNN itself has no GPU eltwise between two different
    layouts)."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for axes in [(0, 1, 2), (2, 1, 0), (0, 2, 1)]:
        a = cla.to_device(cl_queue, x)
        src, _ = arrays.as_memory(a.transpose(axes), engine)
        dst = dnnl.memory(src.get_desc(), engine)
        cl_queue.finish()
        linear(engine, stream, src, dst, 2.0, 1.0)
        stream.wait()
        np.testing.assert_array_equal(arrays.read(dst), 2 * np.transpose(x, axes) + 1)


@watch("eltwise-strides", "GPU eltwise (ocl:xe) ignores strides")
def test_eltwise_on_a_strided_view_raw_onednn(engine, stream, cl_queue):
    """oneDNN's own behaviour (the binding's refusal switched off): in place on
    a[:, ::2] only the view's elements may change. Today oneDNN changes the
    first 12 elements of the buffer instead; the day it is fixed this passes,
    strict xfail fails, and the workaround's `fixed` version is due."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = cla.to_device(cl_queue, x)
    mem, _ = arrays.as_memory(a[:, ::2], engine)
    desc = mem.get_desc()
    implementation_here("eltwise-strides", lambda: dnnl.eltwise_forward.primitive_desc(
        engine, INFERENCE, ALG.eltwise_linear, desc, desc, 2.0, 1.0))
    with workarounds_off("eltwise-strides"):
        cl_queue.finish()
        linear(engine, stream, mem, mem, 2.0, 1.0)
        stream.wait()
    expected = x.copy()
    expected[:, ::2] = 2 * x[:, ::2] + 1
    assert_right(a.get(), expected, rtol=0, atol=0)


def test_strided_view_written_by_reorder(engine, stream, cl_queue):
    """Only the view's elements change; the others keep their values."""
    x = np.full((4, 6), -5.0, np.float32)
    a = cla.to_device(cl_queue, x)
    mem, _ = arrays.as_memory(a[:, ::2], engine)
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    src = plain_memory(engine, (4, 3))
    arrays.write(src, values)
    cl_queue.finish()
    reorder(stream, src, mem)
    stream.wait()
    expected = x.copy()
    expected[:, ::2] = values
    np.testing.assert_array_equal(a.get(), expected)


def test_transposed_views(engine, stream, cl_queue):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = cla.to_device(cl_queue, x)
    for axes in [(1, 0, 2), (2, 1, 0), (0, 2, 1)]:
        view = a.transpose(axes)
        mem, _ = arrays.as_memory(view, engine)
        assert mem.get_data_handle() == a.base_data.int_ptr
        dst = plain_memory(engine, view.shape)
        cl_queue.finish()
        reorder(stream, mem, dst)
        stream.wait()
        np.testing.assert_array_equal(arrays.read(dst), np.transpose(x, axes))
    # And written through a transpose: a = (values.T) afterwards.
    values = np.arange(24, dtype=np.float32).reshape(4, 3, 2) * 10
    src = plain_memory(engine, (4, 3, 2))
    arrays.write(src, values)
    mem, _ = arrays.as_memory(a.transpose((2, 1, 0)), engine)
    reorder(stream, src, mem)
    stream.wait()
    np.testing.assert_array_equal(a.get(), np.transpose(values, (2, 1, 0)))


def test_bf16_bits_with_a_desc(engine, stream, cl_queue):
    """bf16 has no NumPy type: a uint16 array with a bf16 descriptor."""
    values = np.array([1.0, -2.5, 3.140625, 0.0, 65536.0, -0.0078125], np.float32)
    bits = arrays.bf16_from_float32(values)
    a = cla.to_device(cl_queue, bits)
    with pytest.raises(TypeError, match="bf16"):
        arrays.as_memory(a, engine)  # uint16 alone means nothing to oneDNN
    desc = dnnl.memory.desc([6], DT.bf16, TAG.a)
    mem, _ = arrays.as_memory(a, engine, desc)
    assert mem.get_data_handle() == a.base_data.int_ptr
    dst = plain_memory(engine, (6,))
    cl_queue.finish()
    reorder(stream, mem, dst)
    stream.wait()
    np.testing.assert_array_equal(arrays.read(dst), arrays.float32_from_bf16(bits))


def test_permuted_desc_on_a_flat_array(engine, stream, cl_queue):
    """A desc says how oneDNN reads the array's bytes: here dims [2, 3, 4]
    stored in acb order."""
    flat = np.arange(24, dtype=np.float32)
    a = cla.to_device(cl_queue, flat)
    mem, _ = arrays.as_memory(a, engine, dnnl.memory.desc([2, 3, 4], DT.f32, TAG.acb))
    assert mem.get_data_handle() == a.base_data.int_ptr
    dst = plain_memory(engine, (2, 3, 4))
    cl_queue.finish()
    reorder(stream, mem, dst)
    stream.wait()
    np.testing.assert_array_equal(arrays.read(dst), flat.reshape(2, 4, 3).transpose(0, 2, 1))


def test_blocked_desc_needs_its_padded_size(engine, cl_queue):
    """nChw16c with 3 channels pads them to 16: the array must hold all."""
    desc = dnnl.memory.desc([1, 3, 2, 2], DT.f32, TAG.nChw16c)
    assert desc.get_size() == 16 * 4 * 4
    small = cla.zeros(cl_queue, 3 * 4, np.float32)
    with pytest.raises(ValueError, match="spans 48"):
        arrays.as_memory(small, engine, desc)
    mem, _ = arrays.as_memory(cla.zeros(cl_queue, 16 * 4, np.float32), engine, desc)
    assert mem.get_desc() == desc


# --------------------------------------------------------------------------
# refusals


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.complex64, np.uint32])
def test_dtype_without_a_data_type_refused(engine, cl_queue, dtype):
    a = cla.zeros(cl_queue, 8, dtype)
    with pytest.raises(TypeError, match=str(np.dtype(dtype))):
        arrays.as_memory(a, engine)


@pytest.mark.parametrize("array_dtype,data_type", [(np.float32, DT.f16), (np.float16, DT.f32),
                                                   (np.int8, DT.u8), (np.int32, DT.f32),
                                                   (np.uint16, DT.f16)])
def test_desc_of_another_data_type_refused(engine, cl_queue, array_dtype, data_type):
    a = cla.zeros(cl_queue, 16, array_dtype)
    with pytest.raises(TypeError, match="dtype"):
        arrays.as_memory(a, engine, dnnl.memory.desc([16], data_type, TAG.a))


@pytest.mark.parametrize("dims,strides", [([17], [1]), ([5, 4], [4, 1]), ([2, 8], [9, 1]),
                                          ([4, 4], [1, 5])])
def test_desc_reaching_past_the_array_refused(engine, cl_queue, dims, strides):
    buf = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE, 4 * 64)
    a = cla.Array(cl_queue, (16,), np.float32, data=buf)  # the buffer is larger than the array
    with pytest.raises(ValueError, match="spans 64"):
        arrays.as_memory(a, engine, dnnl.memory.desc(dims, DT.f32, strides))


def test_desc_with_a_sub_memory_offset_refused(engine, cl_queue):
    a = cla.zeros(cl_queue, 16, np.float32)
    desc = dnnl.memory.desc([16], DT.f32, TAG.a).submemory_desc([8], [4])
    with pytest.raises(ValueError, match="sub-memory offset"):
        arrays.as_memory(a, engine, desc)


def test_negative_strides_refused(engine, cl_queue):
    a = cla.to_device(cl_queue, np.arange(8, dtype=np.float32))
    with pytest.raises(ValueError, match="negative strides"):
        arrays.as_memory(a[::-1], engine)


def test_array_of_another_context_refused(engine, cl_device):
    other = cl.Context([cl_device])
    queue = cl.CommandQueue(other)
    a = cla.zeros(queue, 8, np.float32)
    with pytest.raises(ValueError, match="another OpenCL context"):
        arrays.as_memory(a, engine)


def test_not_an_array_refused(engine, cl_context):
    with pytest.raises(TypeError, match="pyopencl.array.Array"):
        arrays.as_memory(np.zeros(4, np.float32), engine)
    with pytest.raises(TypeError, match="pyopencl.array.Array"):
        arrays.as_memory(cl.Buffer(cl_context, cl.mem_flags.READ_WRITE, 16), engine)


def test_strided_view_reaching_its_buffer_end_is_taken(engine, stream, cl_queue):
    """a[:, :3] of a 4 x 6 array on an 84-byte cl_mem addresses those 84
    bytes, though its descriptor's get_size() is 96 (max(dim * stride)
    elements): make_memory takes it, as oneDNN's C++ API does, and a
    reorder reads every element; map_data, where oneDNN maps get_size()
    bytes, would read past the cl_mem and is refused saying so. One byte
    less is refused."""
    values = np.arange(21, dtype=np.float32)
    buf = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)
    a = cla.Array(cl_queue, (4, 3), np.float32, data=buf, strides=(24, 4))
    mem = arrays.as_memory(a, engine).memory
    dense = dnnl.memory(dnnl.memory.desc([4, 3], DT.f32, TAG.ab), engine)
    dnnl.reorder(mem, dense).execute(stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: dense})
    stream.wait()
    np.testing.assert_array_equal(arrays.read(dense), np.arange(24, dtype=np.float32).reshape(4, 6)[:, :3])
    with pytest.raises(dnnl.invalid_arguments, match="oneDNN maps 96 bytes.*storage's 84"):
        mem.map_data()
    short = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE, 83)
    with pytest.raises(dnnl.invalid_arguments, match="cl_mem has 83 bytes, but the memory descriptor needs 84"):
        oi.make_memory(mem.get_desc(), engine, short)


def test_svm_arrays_refused(engine, cl_context, cl_queue):
    """Arrays of pyopencl's SVM allocator hold no cl_mem."""
    svm = cl_tools.SVMAllocator(cl_context, queue=cl_queue)
    a = cla.zeros(cl_queue, 16, np.float32, allocator=svm)
    with pytest.raises(ValueError, match="not a cl_mem"):
        arrays.as_memory(a, engine)


def test_empty_and_zero_dimensional_arrays_refused(engine, cl_queue):
    with pytest.raises(ValueError, match="no storage|no elements"):
        arrays.as_memory(cla.zeros(cl_queue, (0, 4), np.float32), engine)
    with pytest.raises(ValueError, match="0-dimensional"):
        arrays.as_memory(cla.zeros(cl_queue, (), np.float32), engine)


def test_array_larger_than_its_buffer_refused(engine, cl_queue):
    """An Array made over too small a cl_mem (pyopencl does not check)."""
    buf = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE, 32)
    a = cla.Array(cl_queue, (16,), np.float32, data=buf)
    with pytest.raises(ValueError, match="32-byte buffer"):
        arrays.as_memory(a, engine)


# --------------------------------------------------------------------------
# events


def test_array_events_are_deps(engine, cl_context, cl_queue, cl_ooo_queue):
    """A pyopencl kernel writes the array after a gate opens; oneDNN, on
    another (out-of-order) queue, reads it after the array's events."""
    n = 64
    program = cl.Program(cl_context, """
        __kernel void fill(__global float *a, float v) { a[get_global_id(0)] = v; }
    """).build()
    a = cla.zeros(cl_queue, n, np.float32)
    cl_queue.finish()
    gate = cl.UserEvent(cl_context)
    fill = program.fill(cl_queue, (n,), None, a.data, np.float32(7), wait_for=[gate])
    a.add_event(fill)
    mem, events = arrays.as_memory(a, engine)
    assert fill in events

    stream = oi.make_stream(engine, cl_ooo_queue)
    dst = plain_memory(engine, (n,))
    done = linear(engine, stream, mem, dst, 2.0, 1.0, deps=events)
    assert done.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    done.wait()
    np.testing.assert_array_equal(arrays.read(dst), np.full(n, 15.0, np.float32))

    # And back: the array waits for oneDNN's event before pyopencl reads it.
    gate2 = cl.UserEvent(cl_context)
    done2 = linear(engine, stream, dst, mem, 1.0, 1.0, deps=[gate2])
    a.add_event(done2)
    gate2.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_array_equal(a.get(), np.full(n, 16.0, np.float32))


# --------------------------------------------------------------------------
# to_pyopencl


@pytest.mark.parametrize("dt", list(NUMPY_TYPES) + ["bf16"])
def test_to_pyopencl_shares_the_cl_mem(engine, cl_queue, dt):
    desc = dnnl.memory.desc([3, 4], getattr(DT, dt), TAG.ab)
    mem = dnnl.memory(desc, engine)
    values = (np.arange(12).reshape(3, 4) - 4).astype(arrays.numpy_dtype(getattr(DT, dt)))
    arrays.write(mem, values)
    a = arrays.to_pyopencl(mem, cl_queue)
    assert isinstance(a, cla.Array)
    assert a.base_data.int_ptr == mem.get_data_handle()
    assert a.shape == (3, 4) and a.dtype == values.dtype and a.offset == 0
    np.testing.assert_array_equal(a.get(), values)
    a.set(np.full((3, 4), 3, values.dtype))  # pyopencl writes the memory's storage
    cl_queue.finish()  # a read through oneDNN's own queue is not ordered after pyopencl's
    np.testing.assert_array_equal(arrays.read(mem), np.full((3, 4), 3, values.dtype))


def test_to_pyopencl_keeps_the_cl_mem(engine, cl_queue):
    mem = dnnl.memory(dnnl.memory.desc([5], DT.s32, TAG.a), engine)
    arrays.write(mem, np.arange(5, dtype=np.int32))
    a = arrays.to_pyopencl(mem, cl_queue)
    del mem
    gc.collect()
    np.testing.assert_array_equal(a.get(), np.arange(5))


def test_to_pyopencl_permuted_layout(engine, cl_queue):
    dims = [2, 3, 4, 5]
    x = np.arange(120, dtype=np.float32).reshape(dims)
    mem = dnnl.memory(dnnl.memory.desc(dims, DT.f32, TAG.nhwc), engine)
    arrays.write(mem, x)
    a = arrays.to_pyopencl(mem, cl_queue)
    assert a.shape == tuple(dims)
    assert a.strides == (3 * 4 * 5 * 4, 4, 5 * 3 * 4, 3 * 4)
    # Physical order (n, h, w, c) is contiguous: pyopencl can read it.
    np.testing.assert_array_equal(a.transpose((0, 2, 3, 1)).get(), x.transpose(0, 2, 3, 1))
    # And as_memory gives the same layout back.
    back, _ = arrays.as_memory(a, engine)
    assert back.get_desc() == mem.get_desc()


def test_to_pyopencl_sub_memory(engine, cl_queue):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    parent = dnnl.memory(dnnl.memory.desc([4, 6], DT.f32, TAG.ab), engine)
    arrays.write(parent, x)
    sub = oi.make_memory(parent.get_desc().submemory_desc([2, 6], [1, 0]), engine,
                         oi.get_mem_object(parent))
    a = arrays.to_pyopencl(sub, cl_queue)
    assert a.offset == 6 * 4 and a.shape == (2, 6)
    np.testing.assert_array_equal(a.get(), x[1:3])


def test_to_pyopencl_events(engine, cl_context, cl_queue, cl_ooo_queue):
    """The array waits for the events given (oneDNN's execute event)."""
    src = plain_memory(engine, (32,))
    dst = plain_memory(engine, (32,))
    arrays.write(src, np.arange(32, dtype=np.float32))
    ooo_stream = oi.make_stream(engine, cl_ooo_queue)
    gate = cl.UserEvent(cl_context)
    done = linear(engine, ooo_stream, src, dst, -1.0, 0.0, deps=[gate])
    a = arrays.to_pyopencl(dst, cl_queue, events=[done, None])
    assert a.events == [done]
    gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_array_equal(a.get(), -np.arange(32, dtype=np.float32))


@pytest.mark.parametrize("kind", ["allocate", "device", "shared"])
def test_to_pyopencl_refuses_usm(engine, cl_context, cl_device, cl_queue, kind):
    desc = dnnl.memory.desc([8], DT.f32, TAG.a)
    with usm.allocation(cl_context, desc.get_size(), "device" if kind == "allocate" else kind,
                        cl_device) as alloc:
        handle = dnnl.MEMORY_ALLOCATE if kind == "allocate" else alloc.ptr
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm, handle)
        with pytest.raises(TypeError, match="no Intel USM.*set_kernel_arg"):
            arrays.to_pyopencl(mem, cl_queue)
        del mem


def test_to_pyopencl_refusals(engine, cl_device, cl_queue):
    none = dnnl.memory(dnnl.memory.desc([8], DT.f32, TAG.a), engine, dnnl.MEMORY_NONE)
    with pytest.raises(ValueError, match="no storage"):
        arrays.to_pyopencl(none, cl_queue)
    blocked = dnnl.memory(dnnl.memory.desc([1, 16, 2, 2], DT.f32, TAG.nChw16c), engine)
    with pytest.raises(ValueError, match="blocked"):
        arrays.to_pyopencl(blocked, cl_queue)
    sub_byte = dnnl.memory(dnnl.memory.desc([8], DT.s4, TAG.a), engine)
    with pytest.raises(ValueError, match="NumPy dtype"):
        arrays.to_pyopencl(sub_byte, cl_queue)
    plain = dnnl.memory(dnnl.memory.desc([8], DT.f32, TAG.a), engine)
    other = cl.Context([cl_device])
    with pytest.raises(ValueError, match="another OpenCL context"):
        arrays.to_pyopencl(plain, cl.CommandQueue(other))
    with pytest.raises(TypeError, match="CommandQueue"):
        arrays.to_pyopencl(plain, cl_queue.context)


# --------------------------------------------------------------------------
# USM memory and pyopencl kernels: usm.set_kernel_arg

SCALE = """
__kernel void scale(__global float *x, float a) { x[get_global_id(0)] *= a; }
"""


@pytest.mark.parametrize("kind", ["allocate", "device", "shared", "host"])
def test_set_kernel_arg_runs_a_pyopencl_kernel_on_usm_memory(engine, cl_context, cl_device,
                                                            cl_queue, kind):
    n = 40
    desc = dnnl.memory.desc([n], DT.f32, TAG.a)
    x = np.linspace(-3, 3, n, dtype=np.float32)
    with usm.allocation(cl_context, desc.get_size(), "device" if kind == "allocate" else kind,
                        cl_device) as alloc:
        handle = dnnl.MEMORY_ALLOCATE if kind == "allocate" else alloc.ptr
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm, handle)
        arrays.write(mem, x)
        kernel = cl.Program(cl_context, SCALE).build().scale
        kernel.set_arg(1, np.float32(-2.5))
        usm.set_kernel_arg(kernel, 0, mem.get_data_handle())
        cl.enqueue_nd_range_kernel(cl_queue, kernel, (n,), None).wait()
        np.testing.assert_array_equal(arrays.read(mem), x * np.float32(-2.5))
        del mem


def test_set_kernel_arg_refusals(cl_context, cl_device):
    kernel = cl.Program(cl_context, SCALE).build().scale
    host = np.zeros(16, np.float32)
    with pytest.raises(dnnl.invalid_arguments, match="not a USM allocation"):
        usm.set_kernel_arg(kernel, 0, host.ctypes.data)
    with pytest.raises(dnnl.invalid_arguments, match="NULL"):
        usm.set_kernel_arg(kernel, 0, 0)
    other = cl.Context([cl_device])
    with usm.allocation(other, 64, "device", cl_device) as foreign:
        with pytest.raises(dnnl.invalid_arguments, match="kernel's OpenCL context"):
            usm.set_kernel_arg(kernel, 0, foreign.ptr)
    with usm.allocation(cl_context, 64, "device", cl_device) as alloc:
        with pytest.raises(dnnl.error, match="clSetKernelArgMemPointerINTEL"):
            usm.set_kernel_arg(kernel, 7, alloc.ptr)
        with pytest.raises(TypeError, match="kernel"):
            usm.set_kernel_arg("scale", 0, alloc.ptr)
        with pytest.raises(TypeError):
            usm.set_kernel_arg(kernel, -1, alloc.ptr)
