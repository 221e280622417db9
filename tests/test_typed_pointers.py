"""Typed USM pointers: ``dnnl.usm.allocation`` (or any object whose
``__index__`` is the address) is taken wherever a pointer is, with one
conversion, and what is made on it keeps it alive; ints still work."""

import gc
import weakref

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from helpers import DT, TAG, oi, plain_desc

usm = dnnl.usm
USM = oi.memory_kind.usm


class Pointer:
    """A user's own typed pointer: anything with __index__ takes part."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_memory_on_an_allocation_keeps_it_alive(engine, stream, cl_context, cl_device):
    desc = plain_desc([4, 4])
    values = np.arange(16, dtype=np.float32).reshape(4, 4)
    allocation = usm.allocation(cl_context, desc.get_size(), "shared", cl_device)
    address = int(allocation)
    alive = weakref.ref(allocation)
    memory = oi.make_memory(desc, engine, USM, allocation)
    assert memory.get_data_handle() == address
    dnnl.arrays.write(memory, values)
    del allocation
    gc.collect()
    assert alive() is not None  # the memory holds it: not freed under the memory
    np.testing.assert_array_equal(dnnl.arrays.read(memory), values)
    del memory
    gc.collect()
    assert alive() is None  # and lets it go with the memory (freed by its __del__)


def test_set_data_handle_takes_and_releases_typed_pointers(engine, cl_context, cl_device):
    desc = plain_desc([8])
    first = usm.allocation(cl_context, desc.get_size(), "device", cl_device)
    second = usm.allocation(cl_context, desc.get_size(), "device", cl_device)
    memory = oi.make_memory(desc, engine, USM, first)
    first_alive, second_alive = weakref.ref(first), weakref.ref(second)
    memory.set_data_handle(second)
    del first, second
    gc.collect()
    assert first_alive() is None and second_alive() is not None
    assert memory.get_data_handle() == int(second_alive())
    memory.set_data_handle(dnnl.MEMORY_NONE)
    gc.collect()
    assert second_alive() is None


def test_user_typed_pointer_and_numpy_int(engine, cl_context, cl_device):
    desc = plain_desc([8])
    with usm.allocation(cl_context, desc.get_size(), "device", cl_device) as allocation:
        pointer = Pointer(int(allocation))
        memory = oi.make_memory(desc, engine, USM, pointer)
        assert memory.get_data_handle() == int(allocation)
        holder = weakref.ref(pointer)
        del pointer
        gc.collect()
        assert holder() is not None
        numpy_int = np.uint64(int(allocation))
        assert oi.make_memory(desc, engine, USM, numpy_int).get_data_handle() == int(allocation)
        del memory
        gc.collect()


def test_graph_tensor_keeps_its_allocation_alive(engine, cl_context, cl_device):
    lt = dnnl.graph.logical_tensor(0, dnnl.graph.logical_tensor.data_type.f32, [4], [1])
    allocation = usm.allocation(cl_context, 16, "device", cl_device)
    alive = weakref.ref(allocation)
    tensor = dnnl.graph.tensor(lt, engine, allocation)
    assert tensor.get_data_handle() == int(allocation)
    del allocation
    gc.collect()
    assert alive() is not None
    tensor.set_data_handle(dnnl.MEMORY_NONE)
    gc.collect()
    assert alive() is None


def test_usm_functions_take_allocations(cl_context, cl_device, cl_queue):
    values = np.arange(32, dtype=np.uint8)
    with usm.allocation(cl_context, 32, "device", cl_device) as device, \
            usm.allocation(cl_context, 32, "host") as host:
        assert usm.pointer_type(cl_context, device) == "device"
        usm.memcpy(cl_queue, device, values, 32)
        usm.fill(cl_queue, host, b"\x07", 32).wait()
        usm.memcpy(cl_queue, host, device, 16).wait()
        np.testing.assert_array_equal(host.as_array()[:16], values[:16])
        np.testing.assert_array_equal(host.as_array()[16:], 7)


@pytest.mark.parametrize("bad, error", [(True, TypeError), (-1, dnnl.invalid_arguments),
                                        (2 ** 64, dnnl.invalid_arguments),
                                        (Pointer(-5), dnnl.invalid_arguments), (1.5, TypeError)])
def test_bad_pointers_are_refused_naming_the_parameter(engine, cl_context, bad, error):
    with pytest.raises(error, match="handle"):
        oi.make_memory(plain_desc([4]), engine, USM, bad)
    with pytest.raises(error, match="ptr|incompatible"):
        usm.pointer_type(cl_context, bad)


def test_a_refused_value_from_python_is_invalid_arguments(engine):
    """One error kind for a refused value, whichever side refuses it."""
    with pytest.raises(dnnl.invalid_arguments) as from_cpp:
        dnnl.memory.desc([2, 2], DT.f32, [2, -1])
    with pytest.raises(dnnl.invalid_arguments) as from_python:
        dnnl.usm.allocation(None, 16, kind="texture")
    for raised in (from_cpp.value, from_python.value):
        assert isinstance(raised, ValueError)
        assert raised.status == dnnl.status.invalid_arguments
        assert str(raised).endswith("(status: invalid_arguments)")
    assert dnnl.memory.desc([2, 2], DT.f32, TAG.ab)  # and a good value is taken
