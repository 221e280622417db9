"""Core memory: dnnl.memory.desc, dnnl.memory, map_data/unmap_data, special
handles.

Mirrors the memory parts of oneDNN's C++ API as the OpenCL gtests use them
(memory::desc queries, memory(desc, engine[, handle]) with
DNNL_MEMORY_ALLOCATE / DNNL_MEMORY_NONE, get/set_data_handle, map_data /
unmap_data), checked against NumPy's view of the same layouts. map_data's
NumPy arrays are compared with what OpenCL itself reads from or writes to
the memory's cl_mem.
"""

import gc

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import DT, TAG, oi, usm

# data type -> the NumPy dtype of map_data (f16 as float16, bf16 as uint16)
NUMPY_OF = {
    DT.f32: np.float32, DT.f16: np.float16, DT.bf16: np.uint16,
    DT.s32: np.int32, DT.s8: np.int8, DT.u8: np.uint8,
}


def _read_cl(queue, mem, dtype, count):
    out = np.empty(count, dtype=dtype)
    cl.enqueue_copy(queue, out, oi.get_mem_object(mem))
    queue.finish()
    return out


def _write_cl(queue, mem, array):
    cl.enqueue_copy(queue, oi.get_mem_object(mem), np.ascontiguousarray(array))
    queue.finish()


# memory.desc ----------------------------------------------------------------

@pytest.mark.parametrize("data_type", list(NUMPY_OF), ids=lambda t: t.name)
def test_desc_queries_for_each_data_type(data_type):
    dims = [2, 3, 4]
    desc = dnnl.memory.desc(dims, data_type, TAG.abc)
    assert desc.get_dims() == dims
    assert desc.get_ndims() == len(dims)
    assert desc.get_data_type() == data_type
    assert desc.get_format_kind() == dnnl.memory.format_kind.blocked
    assert desc.get_inner_nblks() == 0
    itemsize = np.dtype(NUMPY_OF[data_type]).itemsize
    assert desc.get_size() == np.prod(dims) * itemsize
    expected_strides = [s // itemsize for s in np.empty(dims, NUMPY_OF[data_type]).strides]
    assert desc.get_strides() == expected_strides


@pytest.mark.parametrize("tag, order", [
    (TAG.ab, (0, 1)), (TAG.ba, (1, 0)), (TAG.nchw, (0, 1, 2, 3)), (TAG.nhwc, (0, 2, 3, 1)),
    (TAG.acb, (0, 2, 1)), (TAG.cba, (2, 1, 0)),
], ids=lambda v: v.name if hasattr(v, "name") else None)
def test_desc_strides_follow_the_format_tag(tag, order):
    dims = [2, 3, 4, 5][: len(order)]
    desc = dnnl.memory.desc(dims, DT.f32, tag)
    # The tag lists the dimensions from outermost to innermost in memory.
    physical = np.empty([dims[i] for i in order], dtype=np.float32)
    logical = physical.transpose(np.argsort(order))
    assert desc.get_strides() == [s // 4 for s in logical.strides]
    assert desc.get_size() == physical.nbytes


def test_desc_from_strides_equals_desc_from_tag():
    dims = [2, 3, 4, 5]
    nhwc = dnnl.memory.desc(dims, DT.f32, TAG.nhwc)
    by_strides = dnnl.memory.desc(dims, DT.f32, nhwc.get_strides())
    assert by_strides == nhwc
    assert by_strides.get_strides() == nhwc.get_strides()
    assert not (by_strides != nhwc)
    assert dnnl.memory.desc(dims, DT.f32, TAG.nchw) != nhwc
    assert dnnl.memory.desc(dims, DT.f16, TAG.nhwc) != nhwc
    assert dnnl.memory.desc([2, 3, 5, 4], DT.f32, TAG.nhwc) != nhwc


def test_desc_with_padding_strides():
    desc = dnnl.memory.desc([3, 4], DT.f32, [8, 1])  # rows padded to 8 elements
    assert desc.get_strides() == [8, 1]
    # oneDNN sizes a plain layout by its largest dims[i] * strides[i].
    assert desc.get_size() == max(3 * 8, 4 * 1) * 4


def test_desc_reshape_and_permute_axes():
    dims = [4, 6]
    desc = dnnl.memory.desc(dims, DT.f32, TAG.ab)
    base = np.empty(dims, dtype=np.float32)

    flat = desc.reshape([24])
    assert flat.get_dims() == [24]
    assert flat.get_size() == desc.get_size()

    reshaped = desc.reshape([2, 2, 6])
    assert reshaped.get_strides() == [s // 4 for s in base.reshape(2, 2, 6).strides]

    permuted = desc.permute_axes([1, 0])
    assert permuted.get_dims() == [6, 4]
    assert permuted.get_strides() == [s // 4 for s in base.T.strides]
    assert permuted == dnnl.memory.desc([6, 4], DT.f32, TAG.ba)


def test_submemory_desc():
    dims = [4, 6]
    desc = dnnl.memory.desc(dims, DT.f32, TAG.ab)
    sub = desc.submemory_desc([2, 3], [1, 2])
    assert sub.get_dims() == [2, 3]
    assert sub.get_strides() == desc.get_strides()
    assert sub.get_submemory_offset() == 1 * 6 + 2


def test_zero_desc():
    zero = dnnl.memory.desc()
    assert zero.is_zero()
    assert zero.get_size() == 0
    assert zero.get_ndims() == 0
    assert not dnnl.memory.desc([1], DT.f32, TAG.a).is_zero()


def test_format_any_desc_has_no_layout_and_cannot_make_memory(engine):
    desc = dnnl.memory.desc([2, 3], DT.f32, TAG.any)
    assert desc.get_format_kind() == dnnl.memory.format_kind.any
    with pytest.raises(dnnl.error) as info:
        dnnl.memory(desc, engine)
    assert info.value.status == dnnl.status.invalid_arguments


def test_blocked_desc():
    desc = dnnl.memory.desc([1, 16, 2, 2], DT.f32, TAG.nChw16c)
    assert desc.get_inner_nblks() == 1
    assert desc.get_inner_blks() == [16]
    assert desc.get_inner_idxs() == [1]
    assert desc.get_size() == 1 * 16 * 2 * 2 * 4


# memory, handles --------------------------------------------------------------

def test_memory_reports_desc_and_engine(engine):
    desc = dnnl.memory.desc([3, 5], DT.s32, TAG.ab)
    mem = dnnl.memory(desc, engine)
    assert mem.get_desc() == desc
    assert mem.get_engine() == engine
    assert mem.get_data_handle() != 0


def test_memory_allocate_is_the_default(engine):
    desc = dnnl.memory.desc([3, 5], DT.f32, TAG.ab)
    default = dnnl.memory(desc, engine)
    explicit = dnnl.memory(desc, engine, dnnl.MEMORY_ALLOCATE)
    assert default.get_data_handle() != 0
    assert explicit.get_data_handle() != 0
    assert default.get_data_handle() != explicit.get_data_handle()


def test_memory_none_has_no_storage(engine):
    desc = dnnl.memory.desc([3, 5], DT.f32, TAG.ab)
    mem = dnnl.memory(desc, engine, handle=dnnl.MEMORY_NONE)
    assert mem.get_data_handle() == 0
    with pytest.raises(dnnl.error):
        mem.map_data()


def test_special_handles_are_distinct():
    assert dnnl.MEMORY_ALLOCATE is not dnnl.MEMORY_NONE
    assert "MEMORY_ALLOCATE" in repr(dnnl.MEMORY_ALLOCATE)
    assert "MEMORY_NONE" in repr(dnnl.MEMORY_NONE)


def test_set_data_handle_to_none_and_back(engine, cl_queue):
    desc = dnnl.memory.desc([8], DT.f32, TAG.a)
    mem = dnnl.memory(desc, engine)
    buf = oi.get_mem_object(mem)
    mem.set_data_handle(dnnl.MEMORY_NONE)
    assert mem.get_data_handle() == 0
    mem.set_data_handle(buf.int_ptr)
    assert mem.get_data_handle() == buf.int_ptr
    expected = np.arange(8, dtype=np.float32)
    _write_cl(cl_queue, mem, expected)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_error_carries_a_status():
    assert issubclass(dnnl.error, Exception)
    with pytest.raises(dnnl.error) as info:
        dnnl.memory.desc([2, 3], DT.f32, TAG.abcd)  # 4-d tag for 2-d dims
    assert isinstance(info.value.status, dnnl.status)
    assert info.value.status == dnnl.status.invalid_arguments


# map_data / unmap_data ------------------------------------------------------------

@pytest.mark.parametrize("data_type", list(NUMPY_OF), ids=lambda t: t.name)
def test_map_data_is_typed_and_shaped(engine, cl_queue, data_type):
    dims = [3, 4]
    dtype = NUMPY_OF[data_type]
    mem = dnnl.memory(dnnl.memory.desc(dims, data_type, TAG.ab), engine)
    expected = (np.arange(12) % 100).astype(dtype).reshape(dims)
    view = mem.map_data()
    assert view.dtype == dtype
    assert view.shape == tuple(dims)
    view[...] = expected
    mem.unmap_data(view)
    np.testing.assert_array_equal(_read_cl(cl_queue, mem, dtype, 12).reshape(dims), expected)


def test_map_data_reads_f16_values(engine, cl_queue):
    mem = dnnl.memory(dnnl.memory.desc([5], DT.f16, TAG.a), engine)
    expected = np.array([0.5, -1.25, 3.0, 65504.0, -0.0], dtype=np.float16)
    _write_cl(cl_queue, mem, expected)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_map_data_shows_bf16_bits(engine, cl_queue):
    mem = dnnl.memory(dnnl.memory.desc([4], DT.bf16, TAG.a), engine)
    values = np.array([1.0, -2.0, 0.15625, 3.5], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact in bf16
    _write_cl(cl_queue, mem, bits)
    view = mem.map_data()
    np.testing.assert_array_equal(view, bits)
    np.testing.assert_array_equal((view.astype(np.uint32) << 16).view(np.float32), values)
    mem.unmap_data(view)


def test_map_data_of_a_permuted_layout_is_logical(engine, cl_queue):
    dims = [2, 3, 4, 5]
    mem = dnnl.memory(dnnl.memory.desc(dims, DT.f32, TAG.nhwc), engine)
    physical = np.arange(np.prod(dims), dtype=np.float32).reshape(2, 4, 5, 3)
    _write_cl(cl_queue, mem, physical)
    view = mem.map_data()
    assert view.shape == tuple(dims)
    np.testing.assert_array_equal(view, physical.transpose(0, 3, 1, 2))
    mem.unmap_data(view)


def test_map_data_of_a_blocked_layout_is_raw_bytes(engine, cl_queue):
    desc = dnnl.memory.desc([1, 16, 2, 2], DT.f32, TAG.nChw16c)
    mem = dnnl.memory(desc, engine)
    raw = np.arange(desc.get_size(), dtype=np.uint32).astype(np.uint8)
    _write_cl(cl_queue, mem, raw)
    view = mem.map_data()
    assert view.dtype == np.uint8
    assert view.shape == (desc.get_size(),)
    np.testing.assert_array_equal(view, raw)
    view[:4] = 255
    mem.unmap_data(view)
    raw[:4] = 255
    np.testing.assert_array_equal(_read_cl(cl_queue, mem, np.uint8, raw.size), raw)


def test_map_data_of_a_submemory(engine, cl_queue):
    desc = dnnl.memory.desc([4, 6], DT.f32, TAG.ab)
    whole = dnnl.memory(desc, engine)
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    _write_cl(cl_queue, whole, values)
    sub_desc = desc.submemory_desc([2, 3], [1, 2])
    sub = dnnl.memory(sub_desc, engine, oi.get_mem_object(whole))
    view = sub.map_data()
    np.testing.assert_array_equal(view, values[1:3, 2:5])
    view[...] = -1
    sub.unmap_data(view)
    expected = values.copy()
    expected[1:3, 2:5] = -1
    np.testing.assert_array_equal(_read_cl(cl_queue, whole, np.float32, 24).reshape(4, 6),
                                  expected)


def test_map_data_with_explicit_strides(engine, cl_queue):
    desc = dnnl.memory.desc([3, 4], DT.f32, [8, 1])
    mem = dnnl.memory(desc, engine)
    padded = np.arange(desc.get_size() // 4, dtype=np.float32)
    _write_cl(cl_queue, mem, padded)
    view = mem.map_data()
    expected = np.lib.stride_tricks.as_strided(padded, (3, 4), (32, 4))
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_unmap_through_a_view_of_the_mapping(engine, cl_queue):
    mem = dnnl.memory(dnnl.memory.desc([2, 4], DT.f32, TAG.ab), engine)
    view = mem.map_data()
    view[...] = 0
    view[1] = 9
    mem.unmap_data(view[1:, ::2])
    np.testing.assert_array_equal(_read_cl(cl_queue, mem, np.float32, 8),
                                  [0, 0, 0, 0, 9, 9, 9, 9])
    with pytest.raises(ValueError):
        mem.unmap_data(view)  # the same mapping, already unmapped


def test_dropping_the_last_view_unmaps(engine, cl_queue):
    mem = dnnl.memory(dnnl.memory.desc([6], DT.f32, TAG.a), engine)
    view = mem.map_data()
    view[...] = 4.5
    part = view[2:]
    del view
    gc.collect()
    part[...] = 5.5  # still mapped: `part` keeps the mapping
    del part
    gc.collect()
    np.testing.assert_array_equal(_read_cl(cl_queue, mem, np.float32, 6),
                                  [4.5, 4.5, 5.5, 5.5, 5.5, 5.5])


def test_map_again_after_unmap_sees_the_written_data(engine):
    mem = dnnl.memory(dnnl.memory.desc([3, 3], DT.s8, TAG.ab), engine)
    expected = np.arange(-4, 5, dtype=np.int8).reshape(3, 3)
    view = mem.map_data()
    view[...] = expected
    mem.unmap_data(view)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


# What a descriptor addresses from its handle: get_size() leaves out a
# sub-memory's offset and is 0 for all-zero strides.

_SUB = dnnl.memory.desc([10], DT.f32, TAG.a).submemory_desc([3], [7])  # bytes 28 … 40
_ZERO_STRIDES = dnnl.memory.desc([3, 3], DT.f32, [0, 0])  # every element is the first


def _guarded_buffer(context, queue, nbytes, guard=64):
    """A cl_mem of nbytes + guard bytes, filled with 42.0: (whole, the first
    nbytes as a sub-buffer)."""
    whole = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes + guard)
    cl.enqueue_copy(queue, whole, np.full((nbytes + guard) // 4, 42.0, np.float32)).wait()
    return whole, whole.get_sub_region(0, nbytes)


@pytest.mark.parametrize("desc, needed", [(_SUB, 40), (_ZERO_STRIDES, 4)], ids=["offset", "zero strides"])
def test_storage_must_hold_what_the_descriptor_addresses(engine, cl_context, cl_device, cl_queue, desc,
                                                         needed):
    """A cl_mem or USM pointer with get_size() bytes but fewer than the
    descriptor addresses (its sub-memory offset, or one element for all-zero
    strides) is refused before oneDNN reads or writes past it; exactly enough
    is taken."""
    assert desc.get_size() < needed
    _, short = _guarded_buffer(cl_context, cl_queue, needed - 1)
    with pytest.raises(dnnl.invalid_arguments, match=f"cl_mem has {needed - 1} bytes, but the memory "
                                                     f"descriptor needs {needed}"):
        oi.make_memory(desc, engine, oi.memory_kind.buffer, short)
    with pytest.raises(dnnl.invalid_arguments, match=f"needs {needed}"):
        dnnl.memory(desc, engine, short)
    with dnnl.usm.allocation(cl_context, 64, "device", cl_device) as usm:
        with pytest.raises(dnnl.invalid_arguments, match=f"USM allocation has {needed - 1} bytes"):
            oi.make_memory(desc, engine, oi.memory_kind.usm, usm.ptr + 64 - (needed - 1))
        oi.make_memory(desc, engine, oi.memory_kind.usm, usm.ptr + 64 - needed)
    _, enough = _guarded_buffer(cl_context, cl_queue, needed)
    oi.make_memory(desc, engine, oi.memory_kind.buffer, enough)


def test_a_submemory_writes_within_its_storage(engine, stream, cl_context, cl_queue):
    """A reorder into a sub-memory at offset 7 of a 40-byte buffer writes
    elements 7 … 9 and nothing past them."""
    whole, storage = _guarded_buffer(cl_context, cl_queue, 40)
    sub = oi.make_memory(_SUB, engine, oi.memory_kind.buffer, storage)
    src = dnnl.memory(dnnl.memory.desc([3], DT.f32, TAG.a), engine)
    dnnl.arrays.write(src, np.array([-1, -2, -3], np.float32))
    dnnl.reorder(src, sub).execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: sub})
    stream.wait()
    expected = np.full(26, 42.0, np.float32)
    expected[7:10] = [-1, -2, -3]
    written = np.empty(26, np.float32)
    cl.enqueue_copy(cl_queue, written, whole).wait()
    np.testing.assert_array_equal(written, expected)


@pytest.mark.parametrize("make", [
    lambda desc, engine: dnnl.memory(desc, engine),
    lambda desc, engine: oi.make_memory(desc, engine, oi.memory_kind.buffer),
    lambda desc, engine: oi.make_memory(desc, engine, oi.memory_kind.usm),
], ids=["memory", "make_memory buffer", "make_memory usm"])
def test_allocated_memory_holds_what_the_descriptor_addresses(engine, stream, make):
    """dnnl.MEMORY_ALLOCATE of a sub-memory descriptor: oneDNN itself
    allocates get_size() bytes (12), and its kernels write at bytes 28 … 40;
    the binding allocates the 40 bytes. Values written go where they are
    read back from, by a reorder and by map_data."""
    mem = make(_SUB, engine)
    if oi.get_memory_kind(mem) == oi.memory_kind.buffer:
        assert oi.get_mem_object(mem).size == 40
    src, back = (dnnl.memory(dnnl.memory.desc([3], DT.f32, TAG.a), engine) for _ in range(2))
    dnnl.arrays.write(src, np.array([-1, -2, -3], np.float32))
    dnnl.reorder(src, mem).execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: mem})
    dnnl.reorder(mem, back).execute(stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: back})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(back), [-1, -2, -3])
    view = mem.map_data()
    np.testing.assert_array_equal(view, [-1, -2, -3])
    mem.unmap_data(view)


def test_zero_strides_memory_reads_its_one_element(engine, stream, cl_context, cl_queue):
    """All-zero strides: one element of storage, allocated and read as the
    whole tensor; map_data, which oneDNN sizes by get_size() (0), is refused
    saying so."""
    mem = dnnl.memory(_ZERO_STRIDES, engine)
    assert oi.get_mem_object(mem).size == 4
    cl.enqueue_copy(cl_queue, oi.get_mem_object(mem), np.array([5.0], np.float32)).wait()
    dense = dnnl.memory(dnnl.memory.desc([3, 3], DT.f32, TAG.ab), engine)
    dnnl.reorder(mem, dense).execute(stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: dense})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(dense), np.full((3, 3), 5.0, np.float32))
    with pytest.raises(dnnl.invalid_arguments, match="strides are all 0"):
        mem.map_data()


def test_a_blocked_sub_memory_on_its_parents_buffer(engine, stream, cl_queue):
    """A sub-memory of a blocked layout keeps its parent's strides: its
    get_size() is the parent's extent, and its offset lies within it (its
    furthest block ends at the parent's end), so it is taken on the
    parent's own buffer; get_size() plus the offset refused it. A reorder
    into it writes its elements where the parent's layout puts them, and
    nothing else (read as raw bytes, with no other reorder involved)."""
    parent_desc = dnnl.memory.desc([2, 32, 4, 4], DT.f32, TAG.aBcd16b)
    for dims, offsets in (([2, 16, 4, 4], [0, 16, 0, 0]), ([2, 32, 2, 4], [0, 0, 2, 0])):
        parent = dnnl.memory(parent_desc, engine)
        storage = oi.get_mem_object(parent)
        cl.enqueue_fill_buffer(cl_queue, storage, np.float32(0), 0, storage.size).wait()
        sub = parent_desc.submemory_desc(dims, offsets)
        assert sub._addressed_bytes() == 4096 == storage.size
        oi.make_memory(sub, engine, oi.memory_kind.buffer, storage)
        target = dnnl.memory(sub, engine, storage)
        values = np.arange(1, 1 + np.prod(dims), dtype=np.float32).reshape(dims)
        source = dnnl.memory(dnnl.memory.desc(dims, DT.f32, TAG.abcd), engine)
        dnnl.arrays.write(source, values)
        dnnl.reorder(source, target).execute(stream, {dnnl.ARG_FROM: source, dnnl.ARG_TO: target})
        stream.wait()
        expected = np.zeros((2, 32, 4, 4), np.float32)
        expected[tuple(slice(o, o + d) for o, d in zip(offsets, dims))] = values
        # aBcd16b: [n][c / 16][h][w][c % 16]
        expected_raw = expected.reshape(2, 2, 16, 4, 4).transpose(0, 1, 3, 4, 2).ravel()
        raw = np.empty(1024, np.float32)
        cl.enqueue_copy(cl_queue, raw, storage).wait()
        np.testing.assert_array_equal(raw, expected_raw)


@pytest.mark.parametrize("kind", ["host", "shared"])
def test_map_data_of_a_sub_memory_on_host_visible_usm(engine, cl_context, cl_device, kind):
    """oneDNN maps host and shared USM in place (the pointer itself, no
    copy of get_size() bytes): a sub-memory ending at its allocation's end
    maps. (Device USM and buffers are copied by that size: refused there.)"""
    whole = dnnl.memory.desc([4, 8], DT.f32, TAG.ab)
    values = np.arange(32, dtype=np.float32).reshape(4, 8)
    with usm.allocation(cl_context, whole.get_size(), kind, cl_device) as storage:
        storage.as_array(np.float32)[:] = values.ravel()
        sub = oi.make_memory(whole.submemory_desc([4, 4], [0, 4]), engine, oi.memory_kind.usm, storage.ptr)
        view = sub.map_data()
        np.testing.assert_array_equal(view, values[:, 4:])
        sub.unmap_data(view)
        del view, sub
    with usm.allocation(cl_context, whole.get_size(), "device", cl_device) as storage:
        sub = oi.make_memory(whole.submemory_desc([4, 4], [0, 4]), engine, oi.memory_kind.usm, storage.ptr)
        with pytest.raises(dnnl.invalid_arguments, match="oneDNN maps 144 bytes"):
            sub.map_data()


@pytest.mark.parametrize("kind", [oi.memory_kind.usm, oi.memory_kind.buffer])
def test_memory_the_binding_allocates_maps(engine, kind):
    """A strided layout addresses fewer bytes than get_size(), which oneDNN
    maps: the binding's own allocations hold both, so its memory maps."""
    desc = dnnl.memory.desc([4, 3], DT.f32, [6, 1])
    mem = oi.make_memory(desc, engine, kind)
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    dnnl.arrays.write(mem, values)
    np.testing.assert_array_equal(dnnl.arrays.read(mem), values)
