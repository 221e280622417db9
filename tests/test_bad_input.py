"""Bad input: every refusal is a Python exception, never a crash.

Mirrors the refusals of oneDNN's OpenCL gtests (test_engine.cpp InvalidArgs:
a device and a context that do not belong together; test_stream.cpp
InteropIncompatibleQueue: a queue of another context; test_memory_usm.cpp:
pointers that are not USM of the engine's context) and adds what a Python
binding must refuse before oneDNN sees it: wrong types (TypeError naming the
parameter), NULL handles (dnnl.invalid_arguments, a ValueError), cl_mem objects and USM allocations too
small for the descriptor or from another context (dnnl.error with
invalid_arguments), and misuse of map_data/unmap_data and the special
handles. Cases that could crash the interpreter run in a child process.
"""

import re
import subprocess
import sys
import textwrap
import types

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (DT, ENTRY_POINTS, MF, TAG, USM_POINTER_USES, entry_calls, sub_device_or_skip,
                     oi, usm)


@pytest.fixture
def o(engine, cl_device, cl_context, cl_queue):
    """Valid arguments, so that each case can spoil exactly one."""
    ns = types.SimpleNamespace(engine=engine, device=cl_device, context=cl_context,
                               queue=cl_queue)
    ns.desc = dnnl.memory.desc([2, 3], DT.f32, TAG.ab)
    ns.mem = dnnl.memory(ns.desc, engine)
    ns.stream = oi.make_stream(engine, cl_queue)
    ns.buffer = cl.Buffer(cl_context, MF.READ_WRITE, ns.desc.get_size())
    ns.ptr = usm.device_alloc(cl_context, cl_device, ns.desc.get_size())
    ns.usm_mem = oi.make_memory(ns.desc, engine, oi.memory_kind.usm, ns.ptr)
    ns.host = np.zeros(ns.desc.get_size(), dtype=np.uint8)
    ns.event = cl.enqueue_marker(cl_queue)
    yield ns
    cl_queue.finish()
    usm.free(cl_context, ns.ptr)


@pytest.fixture
def other_context(cl_device):
    """A second context on the same device: its objects are foreign to `engine`."""
    return cl.Context([cl_device])


# Wrong types ---------------------------------------------------------------
#
# (entry point, bad values); the entry points are helpers.ENTRY_POINTS. A bad
# value "WRONG_FAMILY" is replaced by a pyopencl object of another OpenCL
# family than the parameter takes.

CL_HANDLE = ["text", None, 1.5, True, "WRONG_FAMILY"]
PY_OBJECT = ["text", None, 1.5]
INTEGER = ["text", None, 1.5]
EVENT_ITEM = ["text", 1.5, True, "WRONG_FAMILY"]  # None in deps is skipped, by design

TYPE_CASES = [
    # dnnl.ocl_interop
    ("make_engine.device", CL_HANDLE),
    ("make_engine.context", CL_HANDLE),
    ("make_engine.cache_blob", ["text", 1.5, [1, 2]]),
    ("get_context", PY_OBJECT),
    ("get_device", PY_OBJECT),
    ("make_stream.engine", PY_OBJECT),
    ("make_stream.queue", CL_HANDLE),
    ("get_command_queue", PY_OBJECT),
    ("make_memory.desc", PY_OBJECT),
    ("make_memory.engine", PY_OBJECT),
    ("make_memory.kind", ["text", None, 1.5]),
    ("make_memory.mem_object", ["text", None, True, "WRONG_FAMILY"]),
    ("make_memory.buffer_handle", ["text", None, 1.5, True]),
    ("make_memory.usm_handle", ["text", None, 1.5, True, "BUFFER"]),
    ("get_mem_object", PY_OBJECT),
    ("set_mem_object.memory", PY_OBJECT),
    ("set_mem_object.mem_object", CL_HANDLE),
    ("get_memory_kind", PY_OBJECT),
    ("get_engine_cache_blob_id", CL_HANDLE),
    ("get_engine_cache_blob", PY_OBJECT),
    # dnnl.usm
    ("device_alloc.context", CL_HANDLE),
    ("device_alloc.device", CL_HANDLE),
    ("device_alloc.size", INTEGER),
    ("device_alloc.alignment", INTEGER),
    ("shared_alloc.context", CL_HANDLE),
    ("shared_alloc.device", CL_HANDLE),
    ("shared_alloc.size", INTEGER),
    ("host_alloc.context", CL_HANDLE),
    ("host_alloc.size", INTEGER),
    ("host_alloc.alignment", INTEGER),
    ("free.context", CL_HANDLE),
    ("free.ptr", INTEGER),
    ("pointer_type.context", CL_HANDLE),
    ("pointer_type.ptr", INTEGER),
    ("memcpy.queue", CL_HANDLE),
    ("memcpy.dst", ["text", None, 1.5]),
    ("memcpy.src", [None, 1.5, object()]),
    ("memcpy.size", INTEGER),
    ("memcpy.deps", ["text", 1.5, "EVENT"]),
    ("memcpy.deps[0]", EVENT_ITEM),
    ("fill.queue", CL_HANDLE),
    ("fill.ptr", INTEGER),
    ("fill.pattern", [None, 1.5, 7]),
    ("fill.size", INTEGER),
    ("fill.deps[0]", EVENT_ITEM),
    # core
    ("memory.desc", PY_OBJECT),
    # a number in the engine's place is C++'s memory(desc, value): a host scalar
    ("memory.engine", ["text", None]),
    ("memory.handle", ["text", None, 1.5, True]),
    ("memory.set_data_handle", ["text", None, 1.5, True]),
    ("stream.engine", PY_OBJECT),
    ("stream.flags", ["text", None, 1.5]),
    ("desc.dims", ["text", None, 1.5]),
    ("desc.data_type", PY_OBJECT),
]


def _bad_value(o, value, param):
    if value == "WRONG_FAMILY":
        # A pyopencl object of another OpenCL family than the parameter takes.
        return o.device if param in ("context", "queue", "mem_object") else o.context
    if value == "BUFFER":
        return o.buffer
    if value == "EVENT":
        return o.event  # one event, not a list of them
    return value


def _type_params():
    for key, values in TYPE_CASES:
        name, param, call = ENTRY_POINTS[key]
        for value in values:
            label = value if isinstance(value, str) else type(value).__name__
            yield pytest.param(call, param, value, id=f"{name}-{param}-{label}")


@pytest.mark.parametrize("call, param, value", list(_type_params()))
def test_wrong_type_raises_type_error_naming_the_parameter(o, call, param, value):
    with pytest.raises(TypeError) as info:
        call(o, _bad_value(o, value, param))
    assert param.split("[")[0] in str(info.value)


@pytest.mark.parametrize("param, call", [
    ("device", lambda o, v: oi.make_engine(v, o.context)),
    ("context", lambda o, v: oi.make_engine(o.device, v)),
    ("queue", lambda o, v: oi.make_stream(o.engine, v)),
    ("mem_object", lambda o, v: oi.set_mem_object(o.mem, v)),
    ("device", lambda o, v: oi.get_engine_cache_blob_id(v)),
])
def test_wrong_family_message_says_what_is_expected(o, param, call):
    """The typed signature names the parameter with its pyopencl type, and
    the message shows what was given."""
    with pytest.raises(TypeError) as info:
        call(o, "text")
    message = str(info.value)
    assert re.search(rf"\b{param}: pyopencl\.\w+ \| int\b", message), message
    assert "Invoked with" in message and "'text'" in message


# NULL and out-of-range handles ---------------------------------------------------

NULL_CASES = [
    "make_engine.device",
    "make_engine.context",
    "make_engine_with_blob.device",
    "make_stream.queue",
    "make_memory.mem_object",
    "set_mem_object.mem_object",
    "get_engine_cache_blob_id",
    "device_alloc.context",
    "device_alloc.device",
    "shared_alloc.context",
    "shared_alloc.device",
    "host_alloc.context",
    "free.context",
    "pointer_type.context",
    "memcpy.queue",
    "memcpy.dst",
    "memcpy.usm_src",
    "memcpy.deps[0]",
    "fill.queue",
    "fill.deps[0]",
]


@pytest.mark.parametrize("call, param", [
    pytest.param(entry.call, entry.param, id=f"{entry.name}-{entry.param}")
    for entry in map(ENTRY_POINTS.__getitem__, NULL_CASES)])
def test_null_handle_raises_invalid_arguments(o, call, param):
    # as oneDNN's C API answers a NULL handle; a ValueError too
    with pytest.raises(ValueError) as info:
        call(o, 0)
    assert type(info.value) is dnnl.invalid_arguments
    assert info.value.status == dnnl.status.invalid_arguments
    assert param in str(info.value)


@pytest.mark.parametrize("value", [-1, 2**64], ids=["negative", "too-large"])
@pytest.mark.parametrize("param, call", [
    (entry.param, entry.call) for entry in map(ENTRY_POINTS.__getitem__, [
        "make_engine.device", "make_engine.context", "make_stream.queue",
        "set_mem_object.mem_object", "memory.handle"])])
def test_handle_out_of_range_raises_invalid_arguments(o, param, call, value):
    """A refused value is dnnl.invalid_arguments (also a ValueError), the one
    kind of refusal, naming the parameter."""
    with pytest.raises(dnnl.invalid_arguments) as info:
        call(o, value)
    assert info.value.status == dnnl.status.invalid_arguments
    assert param in str(info.value)


def test_fill_on_a_null_pointer_raises(o):
    with pytest.raises((ValueError, dnnl.error)) as info:
        usm.fill(o.queue, 0, b"\0", 8)
    assert "ptr" in str(info.value)


# cl_mem too small or from another context ----------------------------------------

BUFFER_ENTRY_POINTS = entry_calls({
    "make_memory": "make_memory.mem_object",
    "make_memory_kind_buffer": "make_memory.buffer_handle",
    "memory": "memory.handle",
    "set_mem_object": "set_mem_object.mem_object",
    "set_data_handle": "memory.set_data_handle",
})


@pytest.mark.parametrize("as_int", [False, True], ids=["pyopencl", "int"])
@pytest.mark.parametrize("entry", list(BUFFER_ENTRY_POINTS))
def test_too_small_cl_mem_is_refused(o, entry, as_int):
    small_size = o.desc.get_size() - 4
    small = cl.Buffer(o.context, MF.READ_WRITE, small_size)
    before = o.mem.get_data_handle()
    with pytest.raises(dnnl.error) as info:
        BUFFER_ENTRY_POINTS[entry](o, small.int_ptr if as_int else small)
    assert info.value.status == dnnl.status.invalid_arguments
    assert str(small_size) in str(info.value)
    assert str(o.desc.get_size()) in str(info.value)
    assert o.mem.get_data_handle() == before  # a refused call changes nothing
    assert small.reference_count == 1


@pytest.mark.parametrize("entry", list(BUFFER_ENTRY_POINTS))
def test_cl_mem_from_another_context_is_refused(o, other_context, entry):
    foreign = cl.Buffer(other_context, MF.READ_WRITE, 4 * o.desc.get_size())
    before = o.mem.get_data_handle()
    with pytest.raises(dnnl.error) as info:
        BUFFER_ENTRY_POINTS[entry](o, foreign)
    assert info.value.status == dnnl.status.invalid_arguments
    assert o.mem.get_data_handle() == before
    assert foreign.reference_count == 1


# USM pointers too small or from another context -----------------------------------

USM_ENTRY_POINTS = {use: USM_POINTER_USES[use] for use in ("make_memory", "set_data_handle")}


@pytest.mark.parametrize("entry", list(USM_ENTRY_POINTS))
def test_usm_pointer_from_another_context_is_refused(o, other_context, entry):
    foreign = usm.device_alloc(other_context, o.device, 4 * o.desc.get_size())
    try:
        with pytest.raises(dnnl.error) as info:
            USM_ENTRY_POINTS[entry](o, foreign)
        assert info.value.status == dnnl.status.invalid_arguments
        assert o.usm_mem.get_data_handle() == o.ptr
    finally:
        usm.free(other_context, foreign)


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
@pytest.mark.parametrize("entry", list(USM_ENTRY_POINTS))
def test_usm_allocation_too_small_is_refused(o, entry, kind):
    small_size = o.desc.get_size() - 4
    if kind == "host":
        small = usm.host_alloc(o.context, small_size)
    else:
        small = getattr(usm, f"{kind}_alloc")(o.context, o.device, small_size)
    try:
        with pytest.raises(dnnl.error) as info:
            USM_ENTRY_POINTS[entry](o, small)
        assert info.value.status == dnnl.status.invalid_arguments
        assert str(o.desc.get_size()) in str(info.value)
        assert o.usm_mem.get_data_handle() == o.ptr
    finally:
        usm.free(o.context, small)


@pytest.mark.parametrize("entry", list(USM_ENTRY_POINTS))
def test_usm_interior_pointer_without_enough_room_is_refused(o, entry):
    # o.ptr holds exactly desc.get_size() bytes; 8 bytes in, 8 are missing.
    with pytest.raises(dnnl.error) as info:
        USM_ENTRY_POINTS[entry](o, o.ptr + 8)
    assert info.value.status == dnnl.status.invalid_arguments
    assert str(o.desc.get_size() - 8) in str(info.value)


@pytest.mark.parametrize("entry", list(USM_ENTRY_POINTS))
def test_freed_usm_pointer_is_refused(o, entry):
    freed = usm.device_alloc(o.context, o.device, o.desc.get_size())
    usm.free(o.context, freed)
    with pytest.raises(dnnl.error):
        USM_ENTRY_POINTS[entry](o, freed)


def test_set_mem_object_on_usm_memory_is_refused(o):
    with pytest.raises(dnnl.error) as info:
        oi.set_mem_object(o.usm_mem, o.buffer)
    assert info.value.status == dnnl.status.invalid_arguments
    assert o.usm_mem.get_data_handle() == o.ptr


def test_usm_pointer_as_cl_mem_for_set_data_handle_of_usm_memory(o):
    with pytest.raises(dnnl.error):
        o.usm_mem.set_data_handle(o.buffer)


# A USM pointer where a cl_mem is expected: checked in a child process, since
# treating a pointer as a cl_mem may bring the interpreter down.

_CHILD = textwrap.dedent("""
    import dnnl_ocl_interop as dnnl
    from dnnl_ocl_interop import emulation
    emulation.ensure_device()
    import pyopencl as cl

    oi, usm = dnnl.ocl_interop, dnnl.usm
    device = [d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices() if d.type & cl.device_type.GPU][0]
    context = cl.Context([device])
    engine = oi.make_engine(device, context)
    desc = dnnl.memory.desc([2, 3], dnnl.memory.data_type.f32,
                            dnnl.memory.format_tag.ab)
    ptr = usm.device_alloc(context, device, 4 * desc.get_size())
    try:
        {statement}
    except (dnnl.error, TypeError, ValueError) as e:
        print("raised", type(e).__name__, e)
    else:
        print("accepted")
    usm.free(context, ptr)
""")

USM_AS_CL_MEM = {
    "memory": "dnnl.memory(desc, engine, ptr)",
    "make_memory": "oi.make_memory(desc, engine, ptr)",
    "make_memory_kind_buffer": "oi.make_memory(desc, engine, oi.memory_kind.buffer, ptr)",
    "set_mem_object": "oi.set_mem_object(dnnl.memory(desc, engine), ptr)",
    "set_data_handle": "dnnl.memory(desc, engine).set_data_handle(ptr)",
}


@pytest.mark.parametrize("entry", list(USM_AS_CL_MEM))
def test_usm_pointer_given_as_cl_mem_is_refused(entry):
    script = _CHILD.replace("{statement}", USM_AS_CL_MEM[entry])
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, (
        f"the interpreter died (exit {run.returncode}): {run.stderr[-1500:]}")
    assert run.stdout.startswith("raised"), run.stdout


# Engines and streams ------------------------------------------------------------

def test_device_not_in_the_context_is_refused(cl_device, cl_context):
    # test_engine.cpp InvalidArgs: device and context must belong together.
    # With one device, a sub-device and its own context make the mismatch.
    sub_device, _all = sub_device_or_skip(cl_device)
    sub_context = cl.Context([sub_device])
    context_refs = cl_context.reference_count
    with pytest.raises(dnnl.error) as info:
        oi.make_engine(sub_device, cl_context)
    assert info.value.status == dnnl.status.invalid_arguments
    with pytest.raises(dnnl.error) as info:
        oi.make_engine(cl_device, sub_context)
    assert info.value.status == dnnl.status.invalid_arguments
    # A refused engine keeps no reference.
    assert cl_context.reference_count == context_refs
    assert sub_context.reference_count == 1


def test_queue_of_another_context_is_refused(engine, cl_device, other_context):
    # test_stream.cpp InteropIncompatibleQueue
    foreign = cl.CommandQueue(other_context, cl_device)
    with pytest.raises(dnnl.error) as info:
        oi.make_stream(engine, foreign)
    assert info.value.status == dnnl.status.invalid_arguments
    assert foreign.reference_count == 1


def test_user_queue_is_refused_by_the_library_engine(cl_queue):
    library_engine = dnnl.engine(dnnl.engine.kind.gpu, 0)
    with pytest.raises(dnnl.error) as info:
        oi.make_stream(library_engine, cl_queue)
    assert info.value.status == dnnl.status.invalid_arguments


def test_queue_on_a_sub_device_is_refused(engine, cl_device):
    sub_device, _all = sub_device_or_skip(cl_device)
    sub_queue = cl.CommandQueue(cl.Context([sub_device]), sub_device)
    with pytest.raises(dnnl.error) as info:
        oi.make_stream(engine, sub_queue)
    assert info.value.status == dnnl.status.invalid_arguments


def test_empty_cache_blob_is_refused(cl_device, cl_context):
    with pytest.raises(dnnl.error) as info:
        oi.make_engine(cl_device, cl_context, b"")
    assert info.value.status == dnnl.status.invalid_arguments


def test_engine_index_out_of_range_is_refused():
    count = dnnl.engine.get_count(dnnl.engine.kind.gpu)
    with pytest.raises(dnnl.error) as info:
        dnnl.engine(dnnl.engine.kind.gpu, count)
    assert info.value.status == dnnl.status.invalid_arguments


# map_data / unmap_data and special handles ------------------------------------------

def test_unmap_data_with_a_plain_array(o):
    with pytest.raises(TypeError):
        o.mem.unmap_data(np.zeros((2, 3), dtype=np.float32))


def test_unmap_data_with_something_else(o):
    with pytest.raises(TypeError):
        o.mem.unmap_data([1, 2, 3])


def test_unmap_twice(o):
    view = o.mem.map_data()
    o.mem.unmap_data(view)
    with pytest.raises(ValueError):
        o.mem.unmap_data(view)


def test_unmap_a_mapping_of_another_memory(o):
    other = dnnl.memory(o.desc, o.engine)
    view = other.map_data()
    try:
        with pytest.raises(ValueError):
            o.mem.unmap_data(view)
    finally:
        other.unmap_data(view)


def test_set_data_handle_to_memory_allocate(o):
    before = o.mem.get_data_handle()
    with pytest.raises(ValueError) as info:
        o.mem.set_data_handle(dnnl.MEMORY_ALLOCATE)
    assert "MEMORY_ALLOCATE" in str(info.value)
    assert o.mem.get_data_handle() == before


def test_map_data_without_storage(o):
    for mem in (dnnl.memory(o.desc, o.engine, dnnl.MEMORY_NONE),
                oi.make_memory(o.desc, o.engine, oi.memory_kind.usm, dnnl.MEMORY_NONE)):
        with pytest.raises(dnnl.error):
            mem.map_data()


# Memory descriptors ----------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: dnnl.memory.desc([2, 3], DT.f32, TAG.abcd),
    lambda: dnnl.memory.desc([-2, 3], DT.f32, TAG.ab),
    lambda: dnnl.memory.desc([2, 3], DT.f32, TAG.ab).reshape([5]),
    lambda: dnnl.memory.desc([2, 3], DT.f32, TAG.ab).permute_axes([0, 0]),
    lambda: dnnl.memory.desc([2, 3], DT.f32, TAG.ab).submemory_desc([2, 3], [1, 1]),
], ids=["tag-rank", "negative-dim", "reshape-count", "permute-repeat",
        "submemory-out-of-bounds"])
def test_invalid_descriptor_is_refused(make):
    with pytest.raises(dnnl.error) as info:
        make()
    assert info.value.status == dnnl.status.invalid_arguments


@pytest.mark.parametrize("strides", [[1], [3, 1, 1], [-3, 1]], ids=["short", "long", "negative"])
def test_strides_that_do_not_fit_the_dims_are_refused(strides):
    # Checked by the binding: oneDNN accepts extra and negative strides.
    with pytest.raises(ValueError, match="strides"):
        dnnl.memory.desc([2, 3], DT.f32, strides)


# USM helpers ---------------------------------------------------------------

def test_zero_size_allocation(o):
    with pytest.raises(ValueError) as info:
        usm.device_alloc(o.context, o.device, 0)
    assert "size" in str(info.value)


def test_negative_size_allocation(o):
    with pytest.raises((TypeError, ValueError, OverflowError)) as info:
        usm.shared_alloc(o.context, o.device, -8)
    assert "size" in str(info.value)


def test_alignment_not_a_power_of_two(o):
    with pytest.raises(dnnl.error):
        usm.host_alloc(o.context, 64, 3)


def test_impossible_allocation(o):
    with pytest.raises(dnnl.error):
        usm.device_alloc(o.context, o.device, 1 << 62)


def test_free_twice(o):
    ptr = usm.device_alloc(o.context, o.device, 64)
    usm.free(o.context, ptr)
    with pytest.raises(dnnl.error):
        usm.free(o.context, ptr)


def test_free_in_another_context(o, other_context):
    with pytest.raises(dnnl.error):
        usm.free(other_context, o.ptr)
    assert usm.pointer_type(o.context, o.ptr) == "device"


def test_free_of_host_memory(o):
    with pytest.raises(dnnl.error):
        usm.free(o.context, o.host.ctypes.data)


def test_memcpy_larger_than_the_array(o):
    with pytest.raises(ValueError) as info:
        usm.memcpy(o.queue, o.ptr, np.zeros(4, dtype=np.uint8), 8)
    assert "src" in str(info.value)
    with pytest.raises(ValueError) as info:
        usm.memcpy(o.queue, np.zeros(4, dtype=np.uint8), o.ptr, 8)
    assert "dst" in str(info.value)


def test_memcpy_larger_than_the_usm_allocation(o):
    big = np.zeros(o.desc.get_size() + 4, dtype=np.uint8)
    with pytest.raises(dnnl.error) as info:
        usm.memcpy(o.queue, o.ptr, big, big.nbytes)
    assert "dst" in str(info.value)
    with pytest.raises(dnnl.error) as info:
        usm.memcpy(o.queue, big, o.ptr, big.nbytes)
    assert "src" in str(info.value)


def test_memcpy_with_a_pointer_of_another_context(o, other_context):
    foreign = usm.device_alloc(other_context, o.device, 64)
    try:
        with pytest.raises(dnnl.error) as info:
            usm.memcpy(o.queue, foreign, o.host, 8)
        assert info.value.status == dnnl.status.invalid_arguments
    finally:
        usm.free(other_context, foreign)


def test_memcpy_with_a_non_contiguous_array(o):
    with pytest.raises(ValueError) as info:
        usm.memcpy(o.queue, o.ptr, np.zeros(16, dtype=np.uint8)[::2], 8)
    assert "contiguous" in str(info.value)


def test_memcpy_into_a_read_only_array(o):
    read_only = np.zeros(8, dtype=np.uint8)
    read_only.setflags(write=False)
    with pytest.raises((ValueError, TypeError, BufferError)):
        usm.memcpy(o.queue, read_only, o.ptr, 8)
    assert not read_only.any()


def test_fill_with_a_pattern_that_does_not_divide_the_size(o):
    with pytest.raises(ValueError):
        usm.fill(o.queue, o.ptr, b"\1\2\3", 8)
    with pytest.raises(ValueError):
        usm.fill(o.queue, o.ptr, b"", 8)


def test_fill_beyond_the_allocation(o):
    with pytest.raises(dnnl.error):
        usm.fill(o.queue, o.ptr, b"\0\0\0\0", o.desc.get_size() + 4)


# Enums: the binding's caster remembers members (cpp/common/enum_caster.hpp) --------


def test_enum_results_are_the_members_and_enum_arguments_are_checked_by_class(o):
    desc = dnnl.memory.desc([2, 3], DT.f32, TAG.ab)
    assert desc.get_data_type() is DT.f32  # found by value: the member itself
    assert desc.get_data_type() is DT.f32
    assert dnnl.ocl_interop.get_memory_kind(o.mem) is dnnl.ocl_interop.memory_kind.buffer
    assert dnnl.ocl_interop.get_memory_kind(o.usm_mem) is dnnl.ocl_interop.memory_kind.usm
    for wrong in (dnnl.prop_kind.forward_inference, 3, "f32", None, DT):  # another enum, its value, ...
        with pytest.raises(TypeError):
            dnnl.memory.desc([2, 3], wrong, TAG.ab)
    # A member seen once is still told from another enum's afterwards.
    assert dnnl.memory.desc([2, 3], DT.s8, TAG.ab).get_data_type() is DT.s8
    with pytest.raises(TypeError):
        dnnl.memory.desc([2, 3], dnnl.algorithm.eltwise_relu, TAG.ab)


def test_post_op_argument_index_outside_int_range_is_refused():
    """C's DNNL_ARG_ATTR_MULTIPLE_POST_OP multiplies in int: -1 gave 0
    (ARG_UNDEF), 2**24 + 1 the same value as index 1, larger ones overflowed.
    Indices 0 to 65534 give oneDNN's values; others are refused."""
    assert dnnl.ARG_ATTR_MULTIPLE_POST_OP(0) == 32768
    assert dnnl.ARG_ATTR_MULTIPLE_POST_OP(65534) == 32768 * 65535
    for bad in (-1, -2, 65535, 2**24 + 1, 2**31 - 1):
        with pytest.raises(dnnl.invalid_arguments, match=f"index must be from 0 to 65534.*not {bad}"):
            dnnl.ARG_ATTR_MULTIPLE_POST_OP(bad)


def _bound_classes():
    """Every class the compiled module binds (its submodules and nested
    classes included), by qualified name."""
    found, seen = {}, set()

    def walk(scope):
        if id(scope) in seen:
            return
        seen.add(id(scope))
        for value in list(vars(scope).values()):
            if isinstance(value, types.ModuleType) and value.__name__.startswith("dnnl_ocl_interop._core"):
                walk(value)
            elif isinstance(value, type) and type(value) is type(dnnl.engine):
                found[f"{value.__module__}.{value.__qualname__}"] = value
                walk(value)
    walk(dnnl._core)
    return found


def test_no_bound_class_is_made_by_new_alone():
    """cls.__new__(cls) without __init__ made objects that held nothing, and
    their first method call crashed the interpreter (engine.get_kind,
    memory.desc.get_size, graph.graph.finalize, post_ops' len, ...). Every
    bound class refuses it with a TypeError naming the class; calling the
    class still makes its objects."""
    classes = _bound_classes()
    assert len(classes) > 100 and "dnnl_ocl_interop._core.memory.desc" in classes
    # through the module's own metaclass, pybind11's default one's subclass
    # (tests/test_other_extensions.py: other modules' classes keep theirs)
    metaclass = type(dnnl.engine)
    assert metaclass.__name__ == "_guarded_type" and metaclass.__bases__[0].__name__ == "pybind11_type"
    for cls in classes.values():
        with pytest.raises(TypeError, match=rf"{re.escape(cls.__qualname__)} cannot be made by "
                                            r"__new__ alone"):
            cls.__new__(cls)
    assert dnnl.memory.desc([2, 3], DT.f32, TAG.ab).get_size() == 24


def test_python_subclasses_of_bound_classes_still_work():
    """The guard serves a Python subclass's instances made by calling it,
    its own __new__ calling super().__new__ too, and refuses its __new__
    called alone."""
    class Desc(dnnl.memory.desc):
        def __init__(self, *args):
            super().__init__(*args)
            self.note = "mine"

    class Tensor(dnnl.graph.logical_tensor):
        def __new__(cls, *args):
            return super().__new__(cls, *args)

    lt = dnnl.graph.logical_tensor
    d = Desc([4], DT.f32, TAG.a)
    assert (d.get_size(), d.note) == (16, "mine")
    assert Tensor(0, lt.data_type.f32, [2], lt.layout_type.strided).get_dims() == [2]
    with pytest.raises(TypeError, match="Desc cannot be made by __new__ alone"):
        Desc.__new__(Desc)
