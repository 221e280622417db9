"""USM-based memory on OpenCL engines, and the dnnl.usm helpers.

Mirrors oneDNN's tests/gtests/ocl/api/test_memory_usm.cpp: make_memory of
kind usm on a user pointer reports it back and shares its data
(Constructor); MEMORY_NONE gives no pointer (ConstructorNone);
MEMORY_ALLOCATE and the default allocate (ConstructorAllocate,
DefaultConstructor); map/unmap on device and shared (and host) allocations
(DeviceMapUnmap, SharedMapUnmap); system memory is refused unless the device
supports shared system USM (ErrorMakeMemoryUsingSystemMemory). Data is
moved with dnnl.usm.memcpy and read with map_data, and the other way round.
Refused pointers (other context, too small) are in test_bad_input.py.
"""

import ctypes
import gc

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import DT, TAG, map_round_trip, oi, usm
N = 100


@pytest.fixture
def desc():
    return dnnl.memory.desc([N], DT.f32, TAG.x)


@pytest.fixture
def alloc(cl_context, cl_device):
    """alloc(kind, size) -> pointer; every pointer is freed after the test."""
    made = []

    def allocate(kind, size, alignment=0):
        if kind == "host":
            ptr = usm.host_alloc(cl_context, size, alignment)
        else:
            ptr = getattr(usm, f"{kind}_alloc")(cl_context, cl_device, size, alignment)
        made.append(ptr)
        return ptr

    yield allocate
    for ptr in made:
        if usm.pointer_type(cl_context, ptr) != "unknown":
            usm.free(cl_context, ptr)


def _to_usm(queue, ptr, array):
    usm.memcpy(queue, ptr, np.ascontiguousarray(array), array.nbytes)


def _from_usm(queue, ptr, like):
    out = np.zeros_like(like)
    usm.memcpy(queue, out, ptr, out.nbytes)
    return out


def _ramp(n=N, offset=0.0):
    return np.arange(n, dtype=np.float32) + np.float32(offset)


def test_make_memory_on_user_pointer(engine, cl_queue, alloc, desc):
    # Constructor
    ptr = alloc("shared", desc.get_size())
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, ptr)
    assert mem.get_data_handle() == ptr
    assert oi.get_memory_kind(mem) == oi.memory_kind.usm
    assert oi.get_mem_object(mem) is None
    assert mem.get_desc() == desc and mem.get_engine() == engine

    expected = _ramp()
    _to_usm(cl_queue, ptr, expected)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


@pytest.mark.parametrize("dims", [[0], [N]], ids=["empty", "sized"])
def test_make_memory_usm_none(engine, dims):
    # ConstructorNone
    desc = dnnl.memory.desc(dims, DT.f32, TAG.x)
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, dnnl.MEMORY_NONE)
    assert mem.get_data_handle() == 0
    assert oi.get_memory_kind(mem) == oi.memory_kind.usm
    assert oi.get_mem_object(mem) is None


@pytest.mark.parametrize("explicit", [True, False], ids=["MEMORY_ALLOCATE", "default"])
def test_make_memory_usm_allocates(engine, cl_context, cl_queue, desc, explicit):
    # ConstructorAllocate, DefaultConstructor
    if explicit:
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm, dnnl.MEMORY_ALLOCATE)
    else:
        mem = oi.make_memory(desc, engine, oi.memory_kind.usm)
    assert oi.get_memory_kind(mem) == oi.memory_kind.usm
    assert oi.get_mem_object(mem) is None
    ptr = mem.get_data_handle()
    assert ptr != 0
    assert usm.pointer_type(cl_context, ptr) in ("device", "shared", "host")

    expected = _ramp(offset=-50)
    _to_usm(cl_queue, ptr, expected)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_memory_frees_what_it_allocated_but_not_user_pointers(engine, cl_context,
                                                             alloc, desc):
    owned = oi.make_memory(desc, engine, oi.memory_kind.usm)
    owned_ptr = owned.get_data_handle()
    user_ptr = alloc("device", desc.get_size())
    borrowed = oi.make_memory(desc, engine, oi.memory_kind.usm, user_ptr)
    del owned, borrowed
    gc.collect()
    assert usm.pointer_type(cl_context, owned_ptr) == "unknown"
    assert usm.pointer_type(cl_context, user_ptr) == "device"


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_map_unmap(engine, cl_queue, alloc, desc, kind):
    # DeviceMapUnmap, SharedMapUnmap (and host)
    ptr = alloc(kind, desc.get_size())
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, ptr)
    assert oi.get_memory_kind(mem) == oi.memory_kind.usm

    expected = _ramp(offset=0.25)
    assert expected.shape == (N,) and expected.dtype == np.float32
    map_round_trip(mem, expected)
    # The user's pointer holds the data.
    np.testing.assert_array_equal(_from_usm(cl_queue, ptr, expected), expected)


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_data_copied_into_user_pointer_is_seen_by_map_data(engine, cl_queue, alloc,
                                                            desc, kind):
    ptr = alloc(kind, desc.get_size())
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, ptr)
    expected = _ramp(offset=7)
    _to_usm(cl_queue, ptr, expected)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_set_data_handle_moves_usm_memory(engine, cl_queue, alloc, desc):
    first = alloc("device", desc.get_size())
    second = alloc("shared", desc.get_size())
    _to_usm(cl_queue, first, _ramp(offset=1))
    _to_usm(cl_queue, second, _ramp(offset=2))
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, first)
    mem.set_data_handle(second)
    assert mem.get_data_handle() == second
    assert oi.get_memory_kind(mem) == oi.memory_kind.usm
    view = mem.map_data()
    np.testing.assert_array_equal(view, _ramp(offset=2))
    mem.unmap_data(view)

    mem.set_data_handle(dnnl.MEMORY_NONE)
    assert mem.get_data_handle() == 0


def test_interior_pointer_with_enough_room(engine, cl_queue, alloc, desc):
    skip = 16  # elements
    ptr = alloc("device", desc.get_size() + skip * 4)
    whole = _ramp(N + skip)
    _to_usm(cl_queue, ptr, whole)
    mem = oi.make_memory(desc, engine, oi.memory_kind.usm, ptr + skip * 4)
    view = mem.map_data()
    np.testing.assert_array_equal(view, whole[skip:])
    mem.unmap_data(view)


def _shared_system_memory_supported(device):
    opencl = ctypes.CDLL("libOpenCL.so.1")
    CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL = 0x4193
    CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL = 1 << 0
    caps = ctypes.c_uint64(0)
    status = opencl.clGetDeviceInfo(
        ctypes.c_void_p(device.int_ptr),
        ctypes.c_uint32(CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL),
        ctypes.c_size_t(ctypes.sizeof(caps)), ctypes.byref(caps), None)
    return status == 0 and bool(caps.value & CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL)


def test_make_memory_refuses_system_memory(engine, cl_device, desc):
    # ErrorMakeMemoryUsingSystemMemory: oneDNN accepts plain host memory when
    # the device supports shared system USM. The binding refuses it on every
    # device: it cannot know how many bytes a plain pointer has, so it could
    # not stop the device writing past the end.
    system_buf = _ramp(offset=3)
    with pytest.raises(dnnl.error, match="not a USM allocation") as info:
        oi.make_memory(desc, engine, oi.memory_kind.usm, system_buf.ctypes.data)
    assert info.value.status == dnnl.status.invalid_arguments


# dnnl.usm helpers -----------------------------------------------------------

@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_pointer_type_names_the_allocation(cl_context, alloc, kind):
    ptr = alloc(kind, 256)
    assert usm.pointer_type(cl_context, ptr) == kind
    assert usm.pointer_type(cl_context, ptr + 100) == kind  # interior pointer


def test_pointer_type_unknown_for_other_memory(cl_context, cl_device):
    host = np.zeros(16, dtype=np.uint8)
    assert usm.pointer_type(cl_context, host.ctypes.data) == "unknown"
    other_context = cl.Context([cl_device])
    ptr = usm.device_alloc(other_context, cl_device, 64)
    try:
        assert usm.pointer_type(cl_context, ptr) == "unknown"
        assert usm.pointer_type(other_context, ptr) == "device"
    finally:
        usm.free(other_context, ptr)
    assert usm.pointer_type(other_context, ptr) == "unknown"


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_alignment_is_honoured(alloc, kind):
    alignment = 4096
    ptr = alloc(kind, 100, alignment)
    assert ptr % alignment == 0


def test_memcpy_between_usm_pointers_and_arrays(cl_queue, alloc):
    src = np.random.default_rng(0).integers(0, 255, 1000, dtype=np.uint8)
    a = alloc("device", src.nbytes)
    b = alloc("shared", src.nbytes)
    event = usm.memcpy(cl_queue, a, src, src.nbytes)
    assert isinstance(event, cl.Event)
    usm.memcpy(cl_queue, b, a, src.nbytes).wait()
    out = np.zeros_like(src)
    usm.memcpy(cl_queue, out, b, src.nbytes)
    np.testing.assert_array_equal(out, src)


def test_memcpy_of_part_of_an_array(cl_queue, alloc):
    src = np.arange(32, dtype=np.int32)
    ptr = alloc("device", src.nbytes)
    usm.fill(cl_queue, ptr, b"\0\0\0\0", src.nbytes)
    usm.memcpy(cl_queue, ptr + 8 * 4, src[8:], 8 * 4)  # 8 elements from src[8]
    out = np.full_like(src, -1)
    usm.memcpy(cl_queue, out, ptr, src.nbytes)
    expected = np.zeros_like(src)
    expected[8:16] = src[8:16]
    np.testing.assert_array_equal(out, expected)


def test_fill_repeats_the_pattern(cl_queue, alloc):
    pattern = np.array([0x1234, 0xBEEF], dtype=np.uint16)
    count = 50
    ptr = alloc("device", pattern.nbytes * count)
    event = usm.fill(cl_queue, ptr, pattern.tobytes(), pattern.nbytes * count)
    assert isinstance(event, cl.Event)
    out = np.zeros(2 * count, dtype=np.uint16)
    usm.memcpy(cl_queue, out, ptr, out.nbytes, deps=[event])
    np.testing.assert_array_equal(out, np.tile(pattern, count))


def test_free_releases_the_allocation(cl_context, cl_device):
    ptr = usm.shared_alloc(cl_context, cl_device, 64)
    assert usm.pointer_type(cl_context, ptr) == "shared"
    usm.free(cl_context, ptr)
    assert usm.pointer_type(cl_context, ptr) == "unknown"
