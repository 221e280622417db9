"""dnnl.arrays (NumPy in and out of memory) and dnnl.usm (allocations,
copies, fills, pointer queries).

arrays.write/read round trip every supported data type through buffer and
USM memory (oneDNN's own allocation and user device, shared and host
pointers), in plain and permuted layouts, and refuse wrong dtypes, shapes
and blocked layouts. The bf16 helpers are checked against an independent
reference and against oneDNN's own f32 -> bf16 reorder. usm.allocation
frees itself exactly when nothing uses it any more: its NumPy views keep it
alive.
"""

import ctypes
import gc

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import arrays
from helpers import ALG, DT, INFERENCE, TAG, oi, usm

NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "s8": np.int8, "u8": np.uint8, "s32": np.int32}
KINDS = ["buffer", "usm_allocate", "usm_device", "usm_shared", "usm_host"]
DIMS = [3, 4, 5]


def random_values(rng, dt, shape):
    """Arbitrary contents: for bf16 and f16 any bit pattern but NaN."""
    if dt == "f32":
        return rng.standard_normal(shape).astype(np.float32) * 100
    if dt == "f16":
        return rng.uniform(-60000, 60000, shape).astype(np.float16)
    if dt == "bf16":
        bits = rng.integers(0, 1 << 16, shape, dtype=np.uint32).astype(np.uint16)
        return np.where((bits & 0x7F80) == 0x7F80, bits & 0x807F, bits).astype(np.uint16)
    info = np.iinfo(NUMPY[dt])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(NUMPY[dt])


@pytest.fixture
def make_memory(engine, cl_context, cl_device):
    """make_memory(desc, kind) -> memory; user allocations live until the test ends."""
    keep = []

    def make(desc, kind):
        if kind == "buffer":
            mem = dnnl.memory(desc, engine)
            assert oi.get_memory_kind(mem) == oi.memory_kind.buffer
        elif kind == "usm_allocate":
            mem = oi.make_memory(desc, engine, oi.memory_kind.usm)
        else:
            alloc = usm.allocation(cl_context, max(desc.get_size(), 1), kind[4:], cl_device)
            keep.append(alloc)
            mem = oi.make_memory(desc, engine, oi.memory_kind.usm, alloc.ptr)
            assert mem.get_data_handle() == alloc.ptr
        return mem

    yield make
    keep.clear()


# --------------------------------------------------------------------------
# arrays


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dt", list(NUMPY))
def test_write_read_round_trip(make_memory, dt, kind):
    rng = np.random.default_rng(0)
    desc = dnnl.memory.desc(DIMS, getattr(DT, dt), TAG.abc)
    mem = make_memory(desc, kind)
    data = random_values(rng, dt, DIMS)
    arrays.write(mem, data)
    out = arrays.read(mem)
    assert out.dtype == NUMPY[dt] and out.shape == tuple(DIMS)
    np.testing.assert_array_equal(out.view(np.uint8), data.view(np.uint8))  # bit exact
    # read returns a copy: changing it does not change the memory.
    out[...] = 0
    np.testing.assert_array_equal(arrays.read(mem).view(np.uint8), data.view(np.uint8))
    # A second write replaces everything.
    data2 = random_values(rng, dt, DIMS)
    arrays.write(mem, data2)
    np.testing.assert_array_equal(arrays.read(mem).view(np.uint8), data2.view(np.uint8))


@pytest.mark.parametrize("kind", ["buffer", "usm_shared"])
def test_write_is_visible_to_the_device(engine, stream, make_memory, kind):
    """Data written with arrays.write is what a primitive reads, and what it
    writes is what arrays.read returns."""
    rng = np.random.default_rng(1)
    desc = dnnl.memory.desc([4, 6], DT.f32, TAG.ab)
    src, dst = make_memory(desc, kind), make_memory(desc, kind)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    arrays.write(src, x)
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_linear, desc, desc,
                                             2.0, 1.0)
    dnnl.eltwise_forward(pd).execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
    stream.wait()
    np.testing.assert_array_equal(arrays.read(dst), np.float32(2) * x + np.float32(1))


@pytest.mark.parametrize("tag,physical", [(TAG.nhwc, (0, 2, 3, 1)), (TAG.cdba, (2, 3, 1, 0)),
                                          (TAG.acdb, (0, 2, 3, 1))])
@pytest.mark.parametrize("kind", ["buffer", "usm_device"])
def test_permuted_plain_layouts(engine, make_memory, tag, physical, kind):
    """Arrays are logical (shaped by dims); the bytes are in the layout's order."""
    dims = [2, 3, 4, 5]
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    mem = make_memory(dnnl.memory.desc(dims, DT.f32, tag), kind)
    arrays.write(mem, x)
    np.testing.assert_array_equal(arrays.read(mem), x)
    # The same storage seen as plain memory with the dims in physical order.
    phys_dims = [dims[i] for i in physical]
    phys_desc = dnnl.memory.desc(phys_dims, DT.f32, TAG.abcd)
    if kind == "buffer":
        raw = oi.make_memory(phys_desc, engine, oi.get_mem_object(mem))
    else:
        raw = oi.make_memory(phys_desc, engine, oi.memory_kind.usm, mem.get_data_handle())
    np.testing.assert_array_equal(arrays.read(raw), np.transpose(x, physical))


def test_strided_descriptor_with_padding(engine):
    """A plain descriptor given by strides with gaps: only the elements are touched."""
    desc = dnnl.memory.desc([3, 4], DT.f32, [8, 1])
    mem = dnnl.memory(desc, engine)
    full = dnnl.memory(dnnl.memory.desc([3, 8], DT.f32, TAG.ab), engine, oi.get_mem_object(mem))
    arrays.write(full, np.full((3, 8), -1.0, np.float32))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    arrays.write(mem, x)
    np.testing.assert_array_equal(arrays.read(mem), x)
    expected = np.full((3, 8), -1.0, np.float32)
    expected[:, :4] = x
    np.testing.assert_array_equal(arrays.read(full), expected)


@pytest.mark.parametrize("dt,wrong", [("f32", np.float64), ("f32", np.float16), ("f16", np.float32),
                                      ("bf16", np.float32), ("bf16", np.int16), ("s8", np.uint8),
                                      ("u8", np.int8), ("s32", np.int64), ("s32", np.float32)])
@pytest.mark.parametrize("kind", ["buffer", "usm_allocate"])
def test_write_wrong_dtype(make_memory, dt, wrong, kind):
    mem = make_memory(dnnl.memory.desc(DIMS, getattr(DT, dt), TAG.abc), kind)
    arrays.write(mem, np.ones(DIMS, NUMPY[dt]))
    with pytest.raises(TypeError, match="dtype"):
        arrays.write(mem, np.zeros(DIMS, wrong))
    np.testing.assert_array_equal(arrays.read(mem), np.ones(DIMS, NUMPY[dt]))


@pytest.mark.parametrize("shape", [[3, 4], [5, 4, 3], [3, 4, 5, 1], [60], [3, 4, 6], []])
@pytest.mark.parametrize("kind", ["buffer", "usm_allocate"])
def test_write_wrong_shape(make_memory, shape, kind):
    mem = make_memory(dnnl.memory.desc(DIMS, DT.f32, TAG.abc), kind)
    arrays.write(mem, np.ones(DIMS, np.float32))
    with pytest.raises(ValueError, match="shape"):
        arrays.write(mem, np.zeros(shape, np.float32))
    np.testing.assert_array_equal(arrays.read(mem), np.ones(DIMS, np.float32))


def test_write_accepts_array_likes_and_non_contiguous(engine):
    mem = dnnl.memory(dnnl.memory.desc([2, 3], DT.s32, TAG.ab), engine)
    arrays.write(mem, np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    np.testing.assert_array_equal(arrays.read(mem), [[1, 2, 3], [4, 5, 6]])
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    arrays.write(mem, base.T[:2, :3])  # a non-contiguous view
    np.testing.assert_array_equal(arrays.read(mem), base.T[:2, :3])


@pytest.mark.parametrize("tag", [TAG.nChw16c, TAG.aBcd8b])
def test_blocked_layout_refused(engine, tag):
    dims = [1, 16, 2, 2]
    mem = dnnl.memory(dnnl.memory.desc(dims, DT.f32, tag), engine)
    assert mem.get_desc().get_inner_nblks() > 0
    with pytest.raises(ValueError, match="blocked"):
        arrays.write(mem, np.zeros(dims, np.float32))
    with pytest.raises(ValueError, match="blocked"):
        arrays.read(mem)


def test_blocked_layout_refused_for_weights_any(engine):
    """What a primitive picks for format_tag.any may be blocked; then arrays
    refuse it (the fix is a reorder)."""
    desc = dnnl.memory.desc([16, 16, 3, 3], DT.f32, TAG.OIhw16i16o)
    mem = dnnl.memory(desc, engine)
    with pytest.raises(ValueError, match="reorder"):
        arrays.read(mem)


def test_memory_without_storage(engine):
    mem = dnnl.memory(dnnl.memory.desc([2, 2], DT.f32, TAG.ab), engine, dnnl.MEMORY_NONE)
    with pytest.raises((dnnl.error, ValueError)):
        arrays.read(mem)
    with pytest.raises((dnnl.error, ValueError)):
        arrays.write(mem, np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("dt,expected", [(DT.f32, np.float32), (DT.f16, np.float16), (DT.bf16, np.uint16),
                                         (DT.s8, np.int8), (DT.u8, np.uint8), (DT.s32, np.int32),
                                         (DT.f64, np.float64), (DT.s64, np.int64),
                                         (DT.f8_e4m3, np.uint8), (DT.f8_e5m2, np.uint8)])
def test_numpy_dtype(dt, expected):
    """One table: dnnl.arrays and map_data agree on every data type."""
    assert arrays.numpy_dtype(dt) == np.dtype(expected)
    assert dnnl.memory.numpy_dtype(dt) == np.dtype(expected)


@pytest.mark.parametrize("dt", [DT.undef, DT.s4, DT.u4, DT.f4_e2m1])
def test_numpy_dtype_unknown(dt):
    with pytest.raises(ValueError):
        arrays.numpy_dtype(dt)


@pytest.mark.parametrize("dt", [DT.f32, DT.f16, DT.f64, DT.s8, DT.u8, DT.s32, DT.s64])
def test_data_type_inverts_numpy_dtype(dt):
    """data_type is numpy_dtype's inverse wherever a NumPy dtype stands for one
    oneDNN type, given as a dtype, a type, a name or the data type itself."""
    dtype = arrays.numpy_dtype(dt)
    assert arrays.data_type(dtype) == dt
    assert arrays.data_type(dtype.type) == dt
    assert arrays.data_type(dtype.name) == dt
    assert arrays.data_type(dt.name) == dt
    assert arrays.data_type(dt) is dt


def test_data_type_of_uint16_is_bf16_only_when_asked():
    assert arrays.data_type(np.uint16, bf16_bits=True) == DT.bf16
    assert arrays.data_type("bf16") == DT.bf16
    with pytest.raises(TypeError, match="bf16 bits"):
        arrays.data_type(np.uint16)
    for bad in (np.float128 if hasattr(np, "float128") else np.complex64, np.bool_, "f77", object):
        with pytest.raises(TypeError):
            arrays.data_type(bad)


# -- bf16 helpers --------------------------------------------------------------


def bf16_value(bits):
    """float64 value of bf16 bit patterns, computed field by field."""
    bits = np.asarray(bits, dtype=np.int64)
    sign = np.where(bits >> 15, -1.0, 1.0)
    exp = (bits >> 7) & 0xFF
    frac = bits & 0x7F
    with np.errstate(over="ignore"):
        normal = sign * (1 + frac / 128.0) * np.exp2(exp.astype(np.float64) - 127)
    subnormal = sign * (frac / 128.0) * 2.0 ** -126
    special = np.where(frac == 0, sign * np.inf, np.nan)
    return np.where(exp == 0, subnormal, np.where(exp == 255, special, normal))


def reference_bf16(values):
    """Round-to-nearest-even bf16 bits of finite float32 values, by picking the
    nearer of the two neighbouring bf16 numbers (float64 arithmetic). As in
    IEEE 754, overflow is decided as if the number after the largest finite
    one, +-2**128, existed: beyond the midpoint the result is an infinity."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32).astype(np.int64)
    lower = bits >> 16                           # truncation: toward zero
    upper = lower + 1                            # next away from zero
    x = values.astype(np.float64)
    upper_value = np.where((upper & 0x7FFF) == 0x7F80, np.copysign(2.0 ** 128, x), bf16_value(upper))
    d_lower = np.abs(x - bf16_value(lower))
    d_upper = np.abs(upper_value - x)
    pick_upper = (d_upper < d_lower) | ((d_upper == d_lower) & (lower & 1 == 1))
    return np.where(pick_upper, upper, lower).astype(np.uint16)


SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -1.0, 1.00390625, 1.01171875, 1.0078125, 3.14159265, 65504.0,
                        np.finfo(np.float32).max, -np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                        1e-40, -1e-40, 1e-45, 3.3895314e38, 3.3961776e38, 1 + 2 ** -8, 1 + 3 * 2 ** -8,
                        1 + 2 ** -8 + 2 ** -20], dtype=np.float32)


def test_bf16_from_float32_matches_reference():
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values = np.concatenate([values[np.isfinite(values)], SPECIAL_F32])
    got = arrays.bf16_from_float32(values)
    assert got.dtype == np.uint16 and got.shape == values.shape
    np.testing.assert_array_equal(got, reference_bf16(values))


def test_bf16_rounding_ties_to_even():
    # 1 + 2^-8 lies halfway between bf16 1.0 and 1.0078125: even mantissa (1.0) wins;
    # 1 + 3 * 2^-8 lies halfway between 1.0078125 and 1.015625: 1.015625 (even) wins.
    got = arrays.bf16_from_float32(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8)], np.float32))
    np.testing.assert_array_equal(got, [0x3F80, 0x3F82, 0xBF80])


def test_bf16_overflow_and_infinities():
    got = arrays.bf16_from_float32(np.array([np.inf, -np.inf, np.finfo(np.float32).max], np.float32))
    np.testing.assert_array_equal(got, [0x7F80, 0xFF80, 0x7F80])


@pytest.mark.parametrize("nan_bits", [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FBFFFFF],
                         ids=hex)
def test_bf16_from_float32_keeps_nan(nan_bits):
    """A NaN stays a NaN (not an infinity, not a zero), whatever its payload."""
    value = np.array([nan_bits], np.uint32).view(np.float32)
    got = int(arrays.bf16_from_float32(value)[0])
    assert (got & 0x7F80) == 0x7F80 and (got & 0x7F) != 0, hex(got)
    assert np.isnan(arrays.float32_from_bf16(np.array([got], np.uint16))[0])


def test_float32_from_bf16_every_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = arrays.float32_from_bf16(bits)
    assert got.dtype == np.float32 and got.shape == bits.shape
    # Independent construction: the bf16 bits are the high half of the float32 (little endian).
    pairs = np.zeros((bits.size, 2), np.uint16)
    pairs[:, 1] = bits
    expected = pairs.view(np.float32).ravel()
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    finite = np.isfinite(bf16_value(bits))
    np.testing.assert_array_equal(got[finite].astype(np.float64), bf16_value(bits)[finite])


def test_bf16_round_trip_is_identity_on_bf16_values():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    finite = bits[(bits & 0x7F80) != 0x7F80]
    np.testing.assert_array_equal(arrays.bf16_from_float32(arrays.float32_from_bf16(finite)), finite)


def test_bf16_helpers_keep_shape():
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    b = arrays.bf16_from_float32(x)
    assert b.shape == x.shape
    assert arrays.float32_from_bf16(b).shape == x.shape
    assert arrays.bf16_from_float32([1.0, 2.0]).tolist() == [0x3F80, 0x4000]


def test_bf16_helpers_agree_with_onednn(engine, stream):
    """f32 -> bf16 reorder on the device gives the helper's bits (NaNs: both NaN)."""
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 1 << 32, 1000, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([bits.view(np.float32), SPECIAL_F32,
                             np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF], np.uint32).view(np.float32),
                             np.array([np.inf, -np.inf], np.float32)])
    n = values.size
    src = dnnl.memory(dnnl.memory.desc([n], DT.f32, TAG.a), engine)
    dst = dnnl.memory(dnnl.memory.desc([n], DT.bf16, TAG.a), engine)
    arrays.write(src, values)
    dnnl.reorder(dnnl.reorder.primitive_desc(src, dst)).execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    stream.wait()
    device = arrays.read(dst)
    helper = arrays.bf16_from_float32(values)
    nan = np.isnan(values)
    np.testing.assert_array_equal(helper[~nan], device[~nan])
    # NaNs stay NaN in the helper. oneDNN's OpenCL reorder rounds NaN
    # payloads like any value, so 0x7F800001 and 0x7FFFFFFF become inf and
    # -0 on this device: only the canonical NaN is compared with it.
    assert np.all(np.isnan(arrays.float32_from_bf16(helper[nan])))
    canonical = values.view(np.uint32) == 0x7FC00000
    assert canonical.any() and np.all(np.isnan(arrays.float32_from_bf16(device[canonical])))
    # And back: bf16 -> f32 on the device equals float32_from_bf16.
    back = dnnl.memory(dnnl.memory.desc([n], DT.f32, TAG.a), engine)
    dnnl.reorder(dnnl.reorder.primitive_desc(dst, back)).execute(stream, {dnnl.ARG_FROM: dst, dnnl.ARG_TO: back})
    stream.wait()
    np.testing.assert_array_equal(arrays.read(back)[~nan].view(np.uint32),
                                  arrays.float32_from_bf16(device)[~nan].view(np.uint32))


# --------------------------------------------------------------------------
# usm.allocation


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_allocation_basics(cl_context, cl_device, kind):
    device = None if kind == "host" else cl_device
    a = usm.allocation(cl_context, 256, kind, device)
    try:
        assert a.ptr != 0 and int(a) == a.ptr and a.__index__() == a.ptr
        assert a.size == 256 and a.kind == kind
        assert usm.pointer_type(cl_context, a.ptr) == kind
        assert usm.pointer_type(cl_context, a.ptr + 255) == kind  # inside the allocation
        assert kind in repr(a) and hex(a.ptr) in repr(a)
    finally:
        a.free()
    assert a.ptr == 0 and "freed" in repr(a)


def test_allocation_needs_a_device_for_device_and_shared(cl_context):
    for kind in ("device", "shared"):
        with pytest.raises(TypeError, match="device"):
            usm.allocation(cl_context, 64, kind)


def test_allocation_is_neither_copied_nor_pickled(cl_context):
    """An allocation frees its pointer: copy.copy made a second owner whose
    collection freed the original's memory (its as_array() then wrote to
    freed memory: a segfault). copy, deepcopy and pickle raise TypeError and
    leave the allocation as it was."""
    import copy
    import pickle
    with usm.allocation(cl_context, 64, "host") as a:
        for attempt, said in ((copy.copy, "copied"), (copy.deepcopy, "copied"), (pickle.dumps, "pickled")):
            with pytest.raises(TypeError, match=f"cannot be {said}"):
                attempt(a)
        gc.collect()
        assert usm.pointer_type(cl_context, a.ptr) == "host"
        a.as_array()[:] = 7
        assert a.as_array().sum() == 7 * 64


def test_allocation_bad_kind(cl_context, cl_device):
    with pytest.raises(ValueError, match="kind"):
        usm.allocation(cl_context, 64, "system", cl_device)


def test_allocation_size_zero(cl_context, cl_device):
    with pytest.raises(ValueError, match="size"):
        usm.allocation(cl_context, 0, "device", cl_device)


@pytest.mark.parametrize("size", [1 << 50, (1 << 64) - 1])
def test_allocation_too_large(cl_context, cl_device, size):
    with pytest.raises(dnnl.error) as info:
        usm.allocation(cl_context, size, "device", cl_device)
    assert info.value.status == dnnl.status.out_of_memory
    assert str(size) in str(info.value)


@pytest.mark.parametrize("alignment", [64, 4096])
@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_allocation_alignment(cl_context, cl_device, kind, alignment):
    with usm.allocation(cl_context, 100, kind, cl_device, alignment=alignment) as a:
        assert a.ptr % alignment == 0


def test_free_is_idempotent(cl_context, cl_device):
    a = usm.allocation(cl_context, 64, "shared", cl_device)
    ptr = a.ptr
    a.free()
    assert usm.pointer_type(cl_context, ptr) == "unknown"
    a.free()
    a.free()
    assert a.ptr == 0
    with pytest.raises(ValueError, match="freed"):
        a.as_array()


def test_context_manager_frees(cl_context, cl_device):
    with usm.allocation(cl_context, 64, "device", cl_device) as a:
        ptr = a.ptr
        assert usm.pointer_type(cl_context, ptr) == "device"
    assert a.ptr == 0
    assert usm.pointer_type(cl_context, ptr) == "unknown"


def test_context_manager_frees_on_exception(cl_context, cl_device):
    with pytest.raises(RuntimeError):
        with usm.allocation(cl_context, 64, "host") as a:
            ptr = a.ptr
            raise RuntimeError("boom")
    assert usm.pointer_type(cl_context, ptr) == "unknown"


def test_garbage_collection_frees(cl_context, cl_device):
    a = usm.allocation(cl_context, 64, "device", cl_device)
    ptr = a.ptr
    del a
    gc.collect()
    assert usm.pointer_type(cl_context, ptr) == "unknown"


@pytest.mark.parametrize("kind", ["shared", "host"])
def test_as_array_is_a_zero_copy_view(cl_context, cl_device, cl_queue, kind):
    with usm.allocation(cl_context, 64, kind, cl_device) as a:
        view = a.as_array(np.float32, (4, 4))
        assert view.shape == (4, 4) and view.dtype == np.float32
        assert view.ctypes.data == a.ptr
        view[...] = np.arange(16, dtype=np.float32).reshape(4, 4)
        out = np.zeros(16, np.float32)
        usm.memcpy(cl_queue, out, a.ptr, 64)
        np.testing.assert_array_equal(out, np.arange(16))
        usm.memcpy(cl_queue, a.ptr, np.full(16, 7.0, np.float32), 64)
        np.testing.assert_array_equal(view, 7.0)
        flat = a.as_array()
        assert flat.dtype == np.uint8 and flat.shape == (64,)
        assert a.as_array(np.int16).shape == (32,)
        del view, flat


def test_as_array_view_keeps_allocation_alive(cl_context, cl_device):
    a = usm.allocation(cl_context, 40, "shared", cl_device)
    ptr = a.ptr
    view = a.as_array(np.int32, 10)
    view[...] = np.arange(10)
    del a
    gc.collect()
    assert usm.pointer_type(cl_context, ptr) == "shared"
    view += 1  # still valid memory
    np.testing.assert_array_equal(view, np.arange(1, 11))
    sub = view[2:5]  # a view of the view keeps it alive too
    del view
    gc.collect()
    assert usm.pointer_type(cl_context, ptr) == "shared"
    np.testing.assert_array_equal(sub, [3, 4, 5])
    del sub
    gc.collect()
    assert usm.pointer_type(cl_context, ptr) == "unknown"


def test_as_array_on_device_memory_refused(cl_context, cl_device):
    with usm.allocation(cl_context, 64, "device", cl_device) as a:
        with pytest.raises(ValueError, match="device"):
            a.as_array(np.float32)


@pytest.mark.parametrize("dtype,shape", [(np.float32, (17,)), (np.float64, (3, 3)), (np.uint8, (65,)),
                                         (np.int32, (4, 5)),
                                         # NumPy's product of these wraps around to 0
                                         (np.uint8, (2**32, 2**32)), (np.float32, (2**62, 4))])
def test_as_array_larger_than_allocation(cl_context, cl_device, dtype, shape):
    with usm.allocation(cl_context, 64, "shared", cl_device) as a:
        with pytest.raises(ValueError, match="64 bytes"):
            a.as_array(dtype, shape)


@pytest.mark.parametrize("dtype", [object, [("name", np.float32), ("ref", object)], "V0"])
def test_as_array_refuses_dtypes_that_cannot_view_bytes(cl_context, cl_device, dtype):
    """Bytes read as PyObject pointers would crash the interpreter."""
    with usm.allocation(cl_context, 64, "shared", cl_device) as a:
        with pytest.raises(TypeError, match="cannot view raw memory"):
            a.as_array(dtype)


def test_as_array_refuses_negative_dimensions(cl_context, cl_device):
    with usm.allocation(cl_context, 64, "shared", cl_device) as a:
        with pytest.raises(ValueError, match="negative"):
            a.as_array(np.float32, (-2, -2))


def test_allocation_as_memory_handle(engine, stream, cl_context, cl_device):
    """An allocation passes as a USM handle (int(allocation)) to make_memory."""
    desc = dnnl.memory.desc([8], DT.f32, TAG.a)
    with usm.allocation(cl_context, desc.get_size(), "shared", cl_device) as a:
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm, int(a))
        arrays.write(mem, np.arange(8, dtype=np.float32))
        np.testing.assert_array_equal(a.as_array(np.float32), np.arange(8))


# --------------------------------------------------------------------------
# low-level alloc/free, pointer_type


def test_low_level_alloc_and_free(cl_context, cl_device):
    ptrs = {"device": usm.device_alloc(cl_context, cl_device, 128),
            "shared": usm.shared_alloc(cl_context, cl_device, 128),
            "host": usm.host_alloc(cl_context, 128)}
    for kind, ptr in ptrs.items():
        assert isinstance(ptr, int) and ptr
        assert usm.pointer_type(cl_context, ptr) == kind
        # int handles work as well as pyopencl objects
        assert usm.pointer_type(cl_context.int_ptr, ptr) == kind
    for ptr in ptrs.values():
        usm.free(cl_context, ptr)
        assert usm.pointer_type(cl_context, ptr) == "unknown"
        with pytest.raises(dnnl.error) as info:  # a second free is refused
            usm.free(cl_context, ptr)
        assert info.value.status == dnnl.status.invalid_arguments


def test_free_of_a_foreign_pointer_refused(cl_context):
    array = np.zeros(16)
    with pytest.raises(dnnl.error, match="not a USM allocation") as info:
        usm.free(cl_context, array.ctypes.data)
    assert info.value.status == dnnl.status.invalid_arguments
    usm.free(cl_context, 0)  # like free(NULL)


def test_pointer_type_unknown(cl_context, cl_device):
    array = np.zeros(16)
    buf = ctypes.create_string_buffer(64)
    assert usm.pointer_type(cl_context, array.ctypes.data) == "unknown"
    assert usm.pointer_type(cl_context, ctypes.addressof(buf)) == "unknown"
    assert usm.pointer_type(cl_context, 0) == "unknown"
    with usm.allocation(cl_context, 64, "device", cl_device) as a:
        assert usm.pointer_type(cl_context, a.ptr + 64) == "unknown"  # one past the end


def test_pointer_type_is_per_context(cl_device, cl_context):
    other = cl.Context([cl_device])
    with usm.allocation(other, 64, "shared", cl_device) as a:
        assert usm.pointer_type(other, a.ptr) == "shared"
        assert usm.pointer_type(cl_context, a.ptr) == "unknown"


def test_handles_of_the_wrong_type(cl_context, cl_device):
    with pytest.raises(TypeError, match="context"):
        usm.device_alloc("context", cl_device, 64)
    with pytest.raises(TypeError, match="device"):
        usm.device_alloc(cl_context, cl_context, 64)
    with pytest.raises(TypeError, match="context"):
        usm.pointer_type(cl_device, 0)


# --------------------------------------------------------------------------
# memcpy and fill


@pytest.fixture
def device_ptrs(cl_context, cl_device):
    allocs = [usm.allocation(cl_context, 4096, "device", cl_device) for _ in range(2)]
    yield [a.ptr for a in allocs]
    for a in allocs:
        a.free()


def test_memcpy_array_to_pointer_to_pointer_to_array(cl_queue, device_ptrs):
    src = np.random.default_rng(4).standard_normal(1024).astype(np.float32)
    p, q = device_ptrs
    ev1 = usm.memcpy(cl_queue, p, src, src.nbytes)
    assert isinstance(ev1, cl.Event)
    ev2 = usm.memcpy(cl_queue, q, p, src.nbytes, deps=[ev1])
    out = np.zeros_like(src)
    ev3 = usm.memcpy(cl_queue, out, q, src.nbytes, deps=[ev2])
    assert ev3.command_execution_status == cl.command_execution_status.COMPLETE  # blocking with arrays
    np.testing.assert_array_equal(out, src)


def test_memcpy_ordered_by_deps_on_out_of_order_queue(cl_ooo_queue, device_ptrs):
    """fill -> copy -> copy -> copy to host, each after the previous event,
    repeated: every round must see its own fill."""
    p, q = device_ptrs
    for value in (1, 2, 3, 4):
        pattern = np.full(1, value, np.int32).tobytes()
        ev = usm.fill(cl_ooo_queue, p, pattern, 4096)
        ev = usm.memcpy(cl_ooo_queue, q, p, 4096, deps=[ev])
        ev = usm.memcpy(cl_ooo_queue, p + 2048, q, 2048, deps=[ev.int_ptr])  # int handle dep
        out = np.zeros(1024, np.int32)
        usm.memcpy(cl_ooo_queue, out, p, 4096, deps=[ev])
        np.testing.assert_array_equal(out, value)


def test_memcpy_partial_and_offsets(cl_queue, device_ptrs):
    p, _ = device_ptrs
    usm.memcpy(cl_queue, p, np.zeros(1024, np.int32), 4096)
    usm.memcpy(cl_queue, p + 8, np.array([5, 6, 7], np.int32), 12)
    out = np.full(8, -1, np.int32)
    usm.memcpy(cl_queue, out, p, 32)
    np.testing.assert_array_equal(out, [0, 0, 5, 6, 7, 0, 0, 0])
    # size smaller than the array: the rest of the array is untouched
    out2 = np.full(8, -1, np.int32)
    usm.memcpy(cl_queue, out2, p + 8, 8)
    np.testing.assert_array_equal(out2, [5, 6, -1, -1, -1, -1, -1, -1])


def test_memcpy_multidimensional_arrays(cl_queue, device_ptrs):
    p, _ = device_ptrs
    src = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    usm.memcpy(cl_queue, p, src, src.nbytes)
    out = np.zeros((4, 6))
    usm.memcpy(cl_queue, out, p, out.nbytes)
    np.testing.assert_array_equal(out.ravel(), src.ravel())


def test_memcpy_shared_and_host_pointers(cl_context, cl_device, cl_queue):
    with usm.allocation(cl_context, 64, "shared", cl_device) as s, usm.allocation(cl_context, 64, "host") as h:
        s.as_array(np.int32)[...] = np.arange(16)
        usm.memcpy(cl_queue, h.ptr, s.ptr, 64).wait()
        np.testing.assert_array_equal(h.as_array(np.int32), np.arange(16))


def test_memcpy_size_larger_than_array(cl_queue, device_ptrs):
    p, _ = device_ptrs
    with pytest.raises(ValueError, match="src"):
        usm.memcpy(cl_queue, p, np.zeros(4, np.float32), 17)
    with pytest.raises(ValueError, match="dst"):
        usm.memcpy(cl_queue, np.zeros(4, np.float32), p, 17)


def test_memcpy_size_larger_than_allocation(cl_queue, device_ptrs):
    p, q = device_ptrs
    with pytest.raises(dnnl.error, match="fewer than size bytes") as info:
        usm.memcpy(cl_queue, p, q, 4097)
    assert info.value.status == dnnl.status.invalid_arguments
    with pytest.raises(dnnl.error, match="fewer than size bytes"):
        usm.memcpy(cl_queue, p + 4000, np.zeros(100, np.uint8), 100)


def test_memcpy_foreign_pointer(cl_queue, device_ptrs):
    host = np.zeros(16, np.uint8)
    with pytest.raises(dnnl.error, match="not a USM allocation"):
        usm.memcpy(cl_queue, host.ctypes.data, device_ptrs[0], 16)
    with pytest.raises(ValueError, match="NULL"):
        usm.memcpy(cl_queue, 0, device_ptrs[0], 16)


def test_memcpy_pointer_of_another_context(cl_device, cl_queue):
    other = cl.Context([cl_device])
    with usm.allocation(other, 64, "device", cl_device) as a:
        with pytest.raises(dnnl.error, match="queue's context"):
            usm.memcpy(cl_queue, a.ptr, np.zeros(16, np.uint8), 16)


def test_memcpy_bad_arrays(cl_queue, device_ptrs):
    p, _ = device_ptrs
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        usm.memcpy(cl_queue, ro, p, 16)
    usm.memcpy(cl_queue, p, ro, 16)  # a read-only source is fine
    with pytest.raises(ValueError, match="C-contiguous"):
        usm.memcpy(cl_queue, np.zeros((4, 4), np.float32)[:, 0], p, 16)
    with pytest.raises(ValueError, match="C-contiguous"):
        usm.memcpy(cl_queue, p, np.zeros((4, 4), np.float32).T, 16)
    with pytest.raises(TypeError, match="dst"):
        usm.memcpy(cl_queue, "dst", p, 16)
    with pytest.raises(TypeError, match="src"):
        usm.memcpy(cl_queue, p, [1.0, 2.0], 8)


def test_memcpy_bad_deps(cl_queue, device_ptrs):
    p, q = device_ptrs
    with pytest.raises(TypeError, match=r"deps\[1\]"):
        usm.memcpy(cl_queue, p, q, 16, deps=[usm.memcpy(cl_queue, p, q, 16), "event"])
    with pytest.raises(TypeError, match="deps"):
        usm.memcpy(cl_queue, p, q, 16, deps=5)


@pytest.mark.parametrize("pattern_dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_fill(cl_context, cl_device, cl_queue, kind, pattern_dtype):
    with usm.allocation(cl_context, 256, kind, cl_device) as a:
        usm.memcpy(cl_queue, a.ptr, np.zeros(256, np.uint8), 256)
        value = np.array([-3 if np.issubdtype(pattern_dtype, np.signedinteger) else 3], pattern_dtype)
        ev = usm.fill(cl_queue, a.ptr, value.tobytes(), 128)
        assert isinstance(ev, cl.Event)
        out = np.full(256, 0xAB, np.uint8)
        usm.memcpy(cl_queue, out, a.ptr, 256, deps=[ev])
        np.testing.assert_array_equal(out[:128].view(pattern_dtype), value[0])
        np.testing.assert_array_equal(out[128:], 0)  # past size: untouched


def test_fill_multibyte_pattern_order(cl_queue, device_ptrs):
    p, _ = device_ptrs
    usm.fill(cl_queue, p, bytes([1, 2, 3, 4]), 16)
    out = np.zeros(16, np.uint8)
    usm.memcpy(cl_queue, out, p, 16)
    np.testing.assert_array_equal(out, [1, 2, 3, 4] * 4)


def test_fill_bad_sizes(cl_queue, device_ptrs):
    p, _ = device_ptrs
    with pytest.raises(ValueError, match="multiple"):
        usm.fill(cl_queue, p, b"\x01\x02\x03\x04", 6)
    with pytest.raises(ValueError, match="pattern"):
        usm.fill(cl_queue, p, b"", 4)
    with pytest.raises(dnnl.error, match="size bytes left"):
        usm.fill(cl_queue, p, b"\x00", 4097)
    with pytest.raises(dnnl.error, match="size bytes left"):
        usm.fill(cl_queue, p + 4096 - 4, b"\x00\x00\x00\x00", 8)


def test_fill_of_zero_bytes_returns_an_event_after_its_deps(cl_context, cl_ooo_queue, device_ptrs):
    """0 bytes fill nothing, and still return the event the docstring
    promises (the CPU runtime gives none: a marker stands for it), which
    completes only after the call's deps, as a fill's would."""
    p, _ = device_ptrs
    gate = cl.UserEvent(cl_context)
    ev = usm.fill(cl_ooo_queue, p, b"\x05", 0, deps=[gate])
    assert isinstance(ev, cl.Event)
    assert ev.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    ev.wait()


def test_fill_foreign_pointer(cl_queue):
    host = np.zeros(16, np.uint8)
    with pytest.raises(dnnl.error, match="not a USM allocation"):
        usm.fill(cl_queue, host.ctypes.data, b"\x01", 16)
    np.testing.assert_array_equal(host, 0)


def test_fill_ordered_after_deps(cl_context, cl_ooo_queue, device_ptrs):
    """A fill that waits for a user event does not run before it."""
    p, _ = device_ptrs
    usm.fill(cl_ooo_queue, p, b"\x00", 64).wait()
    gate = cl.UserEvent(cl_context)
    ev = usm.fill(cl_ooo_queue, p, b"\x05", 64, deps=[gate])
    out = np.full(64, 9, np.uint8)
    usm.memcpy(cl_ooo_queue, out, p, 64)  # no deps: runs now
    np.testing.assert_array_equal(out, 0)
    assert ev.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    usm.memcpy(cl_ooo_queue, out, p, 64, deps=[ev])
    np.testing.assert_array_equal(out, 5)
