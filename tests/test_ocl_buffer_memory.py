"""Buffer-based (cl_mem) memory on OpenCL engines.

Mirrors oneDNN's tests/gtests/ocl/api/test_memory_buffer.cpp: memory made
with the runtime-agnostic API is buffer-based (BasicInteropC/Cpp), has no
cl_mem with MEMORY_NONE, takes a user cl_mem with set_mem_object and holds
no reference to it once destroyed; make_memory on a user cl_mem reports it
back and releases it (BasicInteropCtor); map/unmap round trips
(BufferMapUnmap). Data is checked to move without copies: written through
pyopencl, read through map_data, and the other way round. Refused cl_mem
objects (too small, foreign context) are in test_bad_input.py.
"""

import gc

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import DT, MF, TAG, map_round_trip, oi
DIMS = [2, 3, 4, 5]


@pytest.fixture
def desc():
    return dnnl.memory.desc(DIMS, DT.f32, TAG.nchw)


def _values(seed=0):
    return (np.arange(np.prod(DIMS), dtype=np.float32) * 0.5 - seed).reshape(DIMS)


def _user_buffer(context, nbytes):
    return cl.Buffer(context, MF.READ_WRITE, nbytes)


def _write(queue, buf, array):
    cl.enqueue_copy(queue, buf, np.ascontiguousarray(array))
    queue.finish()


def _read(queue, buf, like):
    out = np.empty_like(like)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out


def test_runtime_agnostic_memory_is_buffer_based(engine, cl_context, desc):
    mem = dnnl.memory(desc, engine)
    assert oi.get_memory_kind(mem) == oi.memory_kind.buffer
    buf = oi.get_mem_object(mem)
    assert isinstance(buf, cl.Buffer)
    assert buf.context == cl_context
    assert buf.size >= desc.get_size()
    assert mem.get_data_handle() == buf.int_ptr
    assert mem.get_desc() == desc
    assert mem.get_engine() == engine


def test_memory_none_then_set_mem_object(engine, cl_context, desc):
    # BasicInteropC
    mem = dnnl.memory(desc, engine, dnnl.MEMORY_NONE)
    assert oi.get_memory_kind(mem) == oi.memory_kind.buffer
    assert oi.get_mem_object(mem) is None
    assert mem.get_data_handle() == 0

    user = _user_buffer(cl_context, desc.get_size())
    oi.set_mem_object(mem, user)
    assert oi.get_mem_object(mem) == user
    assert mem.get_data_handle() == user.int_ptr
    assert user.reference_count == 2

    del mem
    gc.collect()
    assert user.reference_count == 1


def test_set_mem_object_replaces_allocated_buffer(engine, cl_context, cl_queue, desc):
    # BasicInteropCpp
    mem = dnnl.memory(desc, engine)
    allocated = oi.get_mem_object(mem)
    assert allocated is not None

    user = _user_buffer(cl_context, desc.get_size())
    expected = _values(3)
    _write(cl_queue, user, expected)
    oi.set_mem_object(mem, user)
    assert oi.get_mem_object(mem) == user
    assert oi.get_mem_object(mem) != allocated
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)

    del mem, view  # a mapped view keeps its memory alive
    gc.collect()
    assert user.reference_count == 1


def test_set_mem_object_releases_the_previous_user_buffer(engine, cl_context, desc):
    first = _user_buffer(cl_context, desc.get_size())
    second = _user_buffer(cl_context, desc.get_size())
    mem = oi.make_memory(desc, engine, first)
    assert (first.reference_count, second.reference_count) == (2, 1)
    oi.set_mem_object(mem, second.int_ptr)
    assert (first.reference_count, second.reference_count) == (1, 2)
    del mem
    gc.collect()
    assert (first.reference_count, second.reference_count) == (1, 1)


def test_make_memory_on_user_buffer(engine, cl_context, desc):
    # BasicInteropCtor
    user = _user_buffer(cl_context, desc.get_size())
    mem = oi.make_memory(desc, engine, user)
    assert oi.get_memory_kind(mem) == oi.memory_kind.buffer
    from_mem = oi.get_mem_object(mem)
    assert from_mem.int_ptr == user.int_ptr
    assert user.reference_count == 3  # ours, oneDNN's, from_mem's
    del from_mem
    gc.collect()
    assert user.reference_count == 2
    del mem
    gc.collect()
    assert user.reference_count == 1


@pytest.mark.parametrize("as_int", [False, True], ids=["pyopencl", "int"])
def test_make_memory_of_kind_buffer_on_user_buffer(engine, cl_context, cl_queue, desc, as_int):
    user = _user_buffer(cl_context, desc.get_size())
    expected = _values(1)
    _write(cl_queue, user, expected)
    mem = oi.make_memory(desc, engine, oi.memory_kind.buffer,
                         user.int_ptr if as_int else user)
    assert oi.get_mem_object(mem) == user
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


@pytest.mark.parametrize("as_int", [False, True], ids=["pyopencl", "int"])
def test_runtime_agnostic_memory_on_user_buffer(engine, cl_context, cl_queue, desc, as_int):
    user = _user_buffer(cl_context, desc.get_size())
    expected = _values(2)
    _write(cl_queue, user, expected)
    mem = dnnl.memory(desc, engine, user.int_ptr if as_int else user)
    assert oi.get_mem_object(mem) == user
    assert user.reference_count == 2
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_make_memory_of_kind_buffer_allocates(engine, cl_context, cl_queue, desc):
    mem = oi.make_memory(desc, engine, oi.memory_kind.buffer)
    assert oi.get_memory_kind(mem) == oi.memory_kind.buffer
    buf = oi.get_mem_object(mem)
    assert buf.context == cl_context and buf.size >= desc.get_size()
    explicit = oi.make_memory(desc, engine, oi.memory_kind.buffer, dnnl.MEMORY_ALLOCATE)
    assert oi.get_mem_object(explicit) is not None
    assert oi.get_mem_object(explicit) != buf
    none = oi.make_memory(desc, engine, oi.memory_kind.buffer, dnnl.MEMORY_NONE)
    assert oi.get_memory_kind(none) == oi.memory_kind.buffer
    assert oi.get_mem_object(none) is None


def test_buffer_map_unmap(engine, cl_context, cl_queue, desc):
    # BufferMapUnmap: write through one mapping, read through the next.
    user = _user_buffer(cl_context, desc.get_size())
    mem = oi.make_memory(desc, engine, oi.memory_kind.buffer, user)
    expected = _values(4)
    assert expected.shape == tuple(DIMS) and expected.dtype == np.float32
    map_round_trip(mem, expected)
    # And the user's cl_mem holds the data: no copy was made.
    np.testing.assert_array_equal(_read(cl_queue, user, expected), expected)


def test_data_written_by_opencl_is_seen_by_map_data(engine, cl_queue, desc):
    mem = dnnl.memory(desc, engine)
    expected = _values(5)
    _write(cl_queue, oi.get_mem_object(mem), expected)
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)


def test_memory_keeps_a_dropped_user_buffer_alive(engine, cl_context, cl_queue, desc):
    user = _user_buffer(cl_context, desc.get_size())
    handle = user.int_ptr
    expected = _values(6)
    _write(cl_queue, user, expected)
    mem = oi.make_memory(desc, engine, user)
    del user
    gc.collect()
    assert mem.get_data_handle() == handle
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    view[...] = -expected
    mem.unmap_data(view)
    kept = oi.get_mem_object(mem)
    assert kept.int_ptr == handle
    assert kept.reference_count == 2  # oneDNN's and kept's
    np.testing.assert_array_equal(_read(cl_queue, kept, expected), -expected)


def test_returned_buffer_outlives_its_memory(engine, cl_queue, desc):
    mem = dnnl.memory(desc, engine)
    buf = oi.get_mem_object(mem)
    assert buf.reference_count == 2
    del mem
    gc.collect()
    assert buf.reference_count == 1
    expected = _values(7)
    _write(cl_queue, buf, expected)
    np.testing.assert_array_equal(_read(cl_queue, buf, expected), expected)


def test_set_data_handle_moves_buffer_memory_to_another_cl_mem(engine, cl_context,
                                                               cl_queue, desc):
    mem = dnnl.memory(desc, engine)
    other = _user_buffer(cl_context, desc.get_size())
    expected = _values(8)
    _write(cl_queue, other, expected)
    mem.set_data_handle(other)
    assert mem.get_data_handle() == other.int_ptr
    assert oi.get_mem_object(mem) == other
    view = mem.map_data()
    np.testing.assert_array_equal(view, expected)
    mem.unmap_data(view)

    mem.set_data_handle(dnnl.MEMORY_NONE)
    assert mem.get_data_handle() == 0
    assert oi.get_mem_object(mem) is None
    assert other.reference_count == 1


@pytest.mark.parametrize("end", ["unmap_data", "dropped view"])
def test_set_data_handle_while_mapped_unmaps_the_mapped_buffer(engine, cl_context, cl_queue, desc,
                                                               end):
    """A mapping is made and undone on the cl_mem mapped, whatever the
    memory holds by then: set_data_handle while a view lives (oneDNN takes
    it) used to send the unmap to the new buffer (refused) and leave the
    old one mapped and pinned for ever."""
    first, second = (_user_buffer(cl_context, desc.get_size()) for _ in range(2))
    _write(cl_queue, first, _values(1))
    mem = oi.make_memory(desc, engine, first)
    view = mem.map_data()
    view[...] = _values(2)
    mem.set_data_handle(second)
    if end == "unmap_data":
        mem.unmap_data(view)
    del view
    gc.collect()
    np.testing.assert_array_equal(_read(cl_queue, first, _values()), _values(2))  # written back
    assert first.get_info(cl.mem_info.MAP_COUNT) == 0  # (a debugging aid in OpenCL, exact here)
    del mem
    gc.collect()
    assert first.reference_count == 1  # neither mapped nor held
    assert second.reference_count == 1


def test_buffer_larger_than_needed_is_accepted(engine, cl_context, cl_queue, desc):
    user = _user_buffer(cl_context, desc.get_size() + 64)
    expected = np.arange(np.prod(DIMS) + 16, dtype=np.float32)
    _write(cl_queue, user, expected)
    mem = oi.make_memory(desc, engine, user)
    view = mem.map_data()
    np.testing.assert_array_equal(view.ravel(), expected[: np.prod(DIMS)])
    mem.unmap_data(view)
