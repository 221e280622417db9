"""dnnl.memory.__dlpack__ / __dlpack_device__: host and shared USM memory
seen by NumPy as kDLCPU data without a copy.

NumPy views share the pointer (identity checked), see what primitives write
and are what primitives read, and stay valid when the memory object is
dropped. The capsules themselves are read with ctypes, against the DLPack
ABI, for what NumPy cannot show (bf16, the versioned header). Device USM,
buffer memory (whose map_data view is the DLPack-capable object), blocked
layouts and unsupported requests are refused with BufferError saying what
to do instead.
"""

import ctypes
import gc

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import arrays
from helpers import ALG, DT, INFERENCE, TAG, oi, usm

NUMPY = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "s8": np.int8, "u8": np.uint8,
         "s32": np.int32, "s64": np.int64}
HOST_VISIBLE = ["host", "shared"]


# -- the DLPack ABI, written out independently of the binding's header ------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def capsule_contents(capsule):
    """(name, managed struct, tensor fields as a dict) of an unconsumed capsule."""
    name = _get_name(capsule).decode()
    kind = DLManagedTensorVersioned if name == "dltensor_versioned" else DLManagedTensor
    managed = kind.from_address(_get_pointer(capsule, name.encode()))
    t = managed.dl_tensor
    fields = {
        "data": t.data, "device": (t.device.device_type, t.device.device_id),
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        "shape": [t.shape[i] for i in range(t.ndim)],
        "strides": [t.strides[i] for i in range(t.ndim)], "byte_offset": t.byte_offset,
    }
    return name, managed, fields


@pytest.fixture
def make_usm(engine, cl_context, cl_device):
    """make_usm(desc, kind) -> memory on a user USM allocation of `kind`;
    allocations live until the test ends (views must be gone by then)."""
    keep = []

    def make(desc, kind):
        alloc = usm.allocation(cl_context, max(desc.get_size(), 64), kind, cl_device)
        keep.append(alloc)
        return oi.make_memory(desc, engine, oi.memory_kind.usm, alloc.ptr)

    yield make
    gc.collect()
    for alloc in keep:
        alloc.free()


def linear(engine, stream, src, dst, alpha, beta):
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_linear,
                                             src.get_desc(), dst.get_desc(), alpha, beta)
    dnnl.eltwise_forward(pd).execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})


# --------------------------------------------------------------------------
# NumPy views


@pytest.mark.parametrize("kind", HOST_VISIBLE)
def test_numpy_view_is_zero_copy(make_usm, kind):
    mem = make_usm(dnnl.memory.desc([3, 4], DT.f32, TAG.ab), kind)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    arrays.write(mem, x)
    assert mem.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(mem)
    assert view.ctypes.data == mem.get_data_handle()
    assert view.shape == (3, 4) and view.dtype == np.float32 and view.flags.writeable
    np.testing.assert_array_equal(view, x)
    view[1, 2] = -1.0  # the memory's storage itself
    x[1, 2] = -1.0
    np.testing.assert_array_equal(arrays.read(mem), x)
    del view


@pytest.mark.parametrize("kind", HOST_VISIBLE)
def test_views_meet_primitives(engine, stream, make_usm, kind):
    """Written through the view, read by eltwise; written by eltwise, read
    through the view (after the stream is waited on)."""
    desc = dnnl.memory.desc([5, 6], DT.f32, TAG.ab)
    src, dst = make_usm(desc, kind), make_usm(desc, kind)
    src_view, dst_view = np.from_dlpack(src), np.from_dlpack(dst)
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    src_view[...] = x
    dst_view[...] = 0
    linear(engine, stream, src, dst, 2.0, 0.5)
    stream.wait()
    np.testing.assert_array_equal(dst_view, np.float32(2) * x + np.float32(0.5))
    del src_view, dst_view


@pytest.mark.parametrize("dt", list(NUMPY))
def test_dtypes(make_usm, dt):
    mem = make_usm(dnnl.memory.desc([2, 5], getattr(DT, dt), TAG.ab), "shared")
    values = (np.arange(10).reshape(2, 5) * 3 - 7).astype(np.int64)
    if dt == "u8":
        values = values + 7
    arrays.write(mem, values.astype(NUMPY[dt]))
    view = np.from_dlpack(mem)
    assert view.dtype == NUMPY[dt]
    np.testing.assert_array_equal(view, values.astype(NUMPY[dt]))
    assert view.ctypes.data == mem.get_data_handle()
    del view


def test_bf16_capsule(make_usm):
    """NumPy has no bf16 (it refuses kDLBfloat); the capsule says bf16."""
    mem = make_usm(dnnl.memory.desc([4], DT.bf16, TAG.a), "shared")
    arrays.write(mem, arrays.bf16_from_float32([1.0, -2.0, 0.5, 3.0]))
    name, _, t = capsule_contents(mem.__dlpack__())
    assert name == "dltensor"
    assert t["dtype"] == (4, 16, 1)  # kDLBfloat, 16 bits, 1 lane
    assert t["data"] == mem.get_data_handle() and t["shape"] == [4] and t["strides"] == [1]
    bits = np.ctypeslib.as_array(ctypes.cast(t["data"], ctypes.POINTER(ctypes.c_uint16)), (4,))
    np.testing.assert_array_equal(arrays.float32_from_bf16(bits), [1.0, -2.0, 0.5, 3.0])


@pytest.mark.parametrize("dt,code", [("f32", (2, 32, 1)), ("f16", (2, 16, 1)), ("s8", (0, 8, 1)),
                                     ("u8", (1, 8, 1)), ("s32", (0, 32, 1)), ("f64", (2, 64, 1)),
                                     ("s64", (0, 64, 1))])
def test_capsule_data_types(make_usm, dt, code):
    mem = make_usm(dnnl.memory.desc([3], getattr(DT, dt), TAG.a), "host")
    assert capsule_contents(mem.__dlpack__())[2]["dtype"] == code


def test_versioned_capsule(make_usm):
    mem = make_usm(dnnl.memory.desc([2, 3, 4, 5], DT.f32, TAG.nhwc), "shared")
    name, managed, t = capsule_contents(mem.__dlpack__(max_version=(1, 0)))
    assert name == "dltensor_versioned"
    assert (managed.version.major, managed.version.minor) == (1, 0)
    assert managed.flags == 0  # writable, not a copy
    assert t["device"] == (1, 0) and t["data"] == mem.get_data_handle()
    assert t["shape"] == [2, 3, 4, 5] and t["strides"] == mem.get_desc().get_strides()
    assert t["byte_offset"] == 0
    # Older consumers, and max_version below 1.0, get the unversioned capsule.
    assert capsule_contents(mem.__dlpack__())[0] == "dltensor"
    assert capsule_contents(mem.__dlpack__(max_version=(0, 8)))[0] == "dltensor"


def test_permuted_layout(make_usm):
    dims = [2, 3, 4, 5]
    mem = make_usm(dnnl.memory.desc(dims, DT.f32, TAG.nhwc), "shared")
    x = np.arange(120, dtype=np.float32).reshape(dims)
    arrays.write(mem, x)
    view = np.from_dlpack(mem)
    assert view.shape == tuple(dims)
    assert view.strides == tuple(4 * s for s in mem.get_desc().get_strides())
    np.testing.assert_array_equal(view, x)
    del view


def test_sub_memory_offset(engine, make_usm):
    parent = make_usm(dnnl.memory.desc([4, 6], DT.f32, TAG.ab), "shared")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    arrays.write(parent, x)
    sub_desc = parent.get_desc().submemory_desc([2, 3], [1, 2])
    sub = oi.make_memory(sub_desc, engine, oi.memory_kind.usm, parent.get_data_handle())
    _, _, t = capsule_contents(sub.__dlpack__())
    assert t["data"] == parent.get_data_handle() and t["byte_offset"] == (6 + 2) * 4
    view = np.from_dlpack(sub)
    assert view.ctypes.data == parent.get_data_handle() + (6 + 2) * 4
    np.testing.assert_array_equal(view, x[1:3, 2:5])
    del view


# --------------------------------------------------------------------------
# lifetimes


def test_view_outlives_the_memory(engine, stream, cl_context, cl_device):
    desc = dnnl.memory.desc([8], DT.s32, TAG.a)
    with usm.allocation(cl_context, desc.get_size(), "shared", cl_device) as alloc:
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm, alloc.ptr)
        arrays.write(mem, np.arange(8, dtype=np.int32))
        view = np.from_dlpack(mem)
        del mem
        gc.collect()
        np.testing.assert_array_equal(view, np.arange(8))
        view += 10  # still the allocation
        np.testing.assert_array_equal(alloc.as_array(np.int32, 8), np.arange(10, 18))
        again = oi.make_memory(desc, engine, oi.memory_kind.usm, alloc.ptr)
        np.testing.assert_array_equal(arrays.read(again), np.arange(10, 18))
        sub = view[2:5]  # views of the view keep the export too
        del view, again
        gc.collect()
        np.testing.assert_array_equal(sub, [12, 13, 14])
        del sub
        gc.collect()


def test_unconsumed_capsules_release_their_memory(make_usm):
    mem = make_usm(dnnl.memory.desc([16], DT.f32, TAG.a), "host")
    for _ in range(100):
        mem.__dlpack__()
        mem.__dlpack__(max_version=(1, 0))
    capsule = mem.__dlpack__()
    del mem
    gc.collect()
    assert capsule_contents(capsule)[2]["shape"] == [16]
    del capsule


# --------------------------------------------------------------------------
# refusals


@pytest.mark.parametrize("kind", ["device", "allocate"])
def test_device_usm_refused(engine, make_usm, kind):
    desc = dnnl.memory.desc([8], DT.f32, TAG.a)
    if kind == "allocate":  # oneDNN allocates device USM
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm)
    else:
        mem = make_usm(desc, kind)
    with pytest.raises(BufferError, match="device USM.*dnnl.arrays.read"):
        np.from_dlpack(mem)
    with pytest.raises(BufferError, match="device USM"):
        mem.__dlpack_device__()
    arrays.write(mem, np.ones(8, np.float32))  # the way out works
    np.testing.assert_array_equal(arrays.read(mem), 1.0)


def test_buffer_memory_refused_its_mapping_exported(engine):
    mem = dnnl.memory(dnnl.memory.desc([2, 3], DT.f32, TAG.ab), engine)
    with pytest.raises(BufferError, match=r"map_data\(\).*dnnl.arrays.read"):
        np.from_dlpack(mem)
    with pytest.raises(BufferError, match="buffer-based"):
        mem.__dlpack_device__()
    mapped = mem.map_data()  # a NumPy array: DLPack-capable itself
    view = np.from_dlpack(mapped)
    assert view.ctypes.data == mapped.ctypes.data
    view[...] = 4.0
    mem.unmap_data(mapped)
    del view, mapped
    np.testing.assert_array_equal(arrays.read(mem), np.full((2, 3), 4.0, np.float32))


def test_blocked_layout_refused(make_usm):
    mem = make_usm(dnnl.memory.desc([1, 16, 2, 2], DT.f32, TAG.nChw16c), "shared")
    with pytest.raises(BufferError, match="reorder"):
        np.from_dlpack(mem)


@pytest.mark.parametrize("dt", [DT.f8_e4m3, DT.f8_e5m2, DT.s4, DT.e8m0])
def test_data_types_without_dlpack_code_refused(make_usm, dt):
    mem = make_usm(dnnl.memory.desc([8], dt, TAG.a), "shared")
    with pytest.raises(BufferError, match=f"{dt.name} is not exported"):
        mem.__dlpack__()


def test_memory_without_storage_refused(engine):
    mem = oi.make_memory(dnnl.memory.desc([8], DT.f32, TAG.a), engine, oi.memory_kind.usm,
                         dnnl.MEMORY_NONE)
    with pytest.raises(BufferError, match="no storage"):
        np.from_dlpack(mem)


def test_freed_allocation_refused(engine, cl_context, cl_device):
    desc = dnnl.memory.desc([8], DT.f32, TAG.a)
    alloc = usm.allocation(cl_context, desc.get_size(), "shared", cl_device)
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, alloc.ptr)
    alloc.free()
    with pytest.raises(BufferError, match="freed"):
        mem.__dlpack__()


def test_request_keywords(make_usm):
    mem = make_usm(dnnl.memory.desc([4], DT.f32, TAG.a), "shared")
    mem.__dlpack__(stream=None, dl_device=(1, 0), copy=False, max_version=(1, 1))
    with pytest.raises(BufferError, match="stream must be None"):
        mem.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="dl_device"):
        mem.__dlpack__(dl_device=(14, 0))  # kDLOneAPI
    with pytest.raises(BufferError, match="dl_device"):
        mem.__dlpack__(dl_device=(1, 1))
    with pytest.raises(BufferError, match="copy=True"):
        np.from_dlpack(mem, copy=True)
    with pytest.raises(TypeError):
        mem.__dlpack__(None)  # keyword-only, as the array API has it
    assert np.from_dlpack(mem, device="cpu", copy=False).ctypes.data == mem.get_data_handle()
