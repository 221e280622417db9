"""NumPy and pyopencl arrays in and out of oneDNN memory, checked against the
memory descriptor.

:func:`read` and :func:`write` copy NumPy data, for buffer- and USM-based
memory alike (through ``memory.map_data``). :func:`as_memory` and
:func:`to_pyopencl` share storage with ``pyopencl.array.Array`` objects
without a copy (buffer memory only: pyopencl has no Intel USM). Element
types map as in ``map_data``: f16 is ``float16``, bf16 is raw ``uint16``
bits, f8 types raw ``uint8`` bits (see :func:`bf16_from_float32` and
:func:`float32_from_bf16`).
"""

from typing import Any, List, NamedTuple, Optional, Sequence

import numpy as np

from . import _core
from ._errors import invalid_argument

__all__ = ["MEMORIES_PER_ARRAY", "as_memory", "bf16_from_float32", "data_type",
           "float32_from_bf16", "memory_and_events", "numpy_dtype", "read", "to_pyopencl", "write"]

def numpy_dtype(data_type: "_core.memory.data_type") -> np.dtype:
    """The NumPy dtype that holds one element of a oneDNN data type (the
    table ``map_data`` uses: ``memory.numpy_dtype``); dnnl.invalid_arguments for
    sub-byte types."""
    dtype = _core.memory.numpy_dtype(data_type)
    if dtype is None:
        raise invalid_argument(f"no NumPy dtype holds {data_type} elements")
    return dtype


# The oneDNN data type of each NumPy element type that holds its values (the
# data-type table's, cpp/common/data_types.cpp), as as_memory takes an array
# without a desc. bf16 and the f8 types have no NumPy type: their bits live in
# uint16 / uint8 arrays, which need a desc (or data_type(..., bf16_bits=True))
# saying what they hold.
_DATA_TYPES = {np.dtype(numpy): getattr(_core.memory.data_type, name)
               for name, in_memory, _, _, numpy, holds in _core._data_type_table
               if in_memory and holds == "values"}


def data_type(dtype, bf16_bits: bool = False) -> "_core.memory.data_type":
    """The oneDNN data type of a NumPy dtype (the inverse of :func:`numpy_dtype`).

    ``dtype`` is anything ``numpy.dtype`` takes (``numpy.float16``,
    ``"float32"``, an array's ``.dtype``), a ``dnnl.memory.data_type``
    (returned as it is) or the name of one (``"bf16"``, ``"s8"``):
    float32, float16, float64, int8, uint8, int32 and int64 are f32, f16,
    f64, s8, u8, s32 and s64. uint16 is bf16 bits when ``bf16_bits`` is
    true (``numpy_dtype(bf16)`` is uint16), and has no data type otherwise.
    Other dtypes raise ``TypeError`` (the one message ``as_memory`` gives).
    """
    data_types = _core.memory.data_type
    if isinstance(dtype, data_types):
        return dtype
    if isinstance(dtype, str) and dtype in data_types.__members__:
        return data_types.__members__[dtype]
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is neither a NumPy dtype nor a oneDNN data type") from None
    found = _DATA_TYPES.get(dtype)
    if found is None:
        if dtype == np.uint16 and bf16_bits:
            return data_types.bf16
        hint = (" (bf16 bits: pass desc=dnnl.memory.desc(shape, data_type.bf16, strides))"
                if dtype == np.uint16 else "")
        raise TypeError(f"dtype {dtype} matches no oneDNN data type{hint}")
    return found


def _is_plain(desc) -> bool:
    """Whether a descriptor is a plain strided layout (blocked, no inner blocks)."""
    return desc.get_format_kind() == _core.memory.format_kind.blocked and not desc.get_inner_nblks()


def _plain_dims(memory) -> list:
    desc = memory.get_desc()
    if not _is_plain(desc):
        raise invalid_argument("the memory has a blocked layout: reorder it to a plain "
                         "layout (e.g. with dnnl.reorder) to move data in or out")
    return desc.get_dims()


def write(memory, array) -> None:
    """Copy ``array`` into ``memory``; dtype and shape must match its descriptor.

    Blocks until the data is in the memory.
    """
    array = np.asarray(array)
    dims = _plain_dims(memory)
    expected = numpy_dtype(memory.get_desc().get_data_type())
    if array.dtype != expected:
        raise TypeError(f"array has dtype {array.dtype}, the memory holds {expected}")
    if list(array.shape) != list(dims):
        raise invalid_argument(f"array has shape {tuple(array.shape)}, the memory has dims {tuple(dims)}")
    view = memory.map_data()
    try:
        view[...] = array
    finally:
        memory.unmap_data(view)


def read(memory) -> np.ndarray:
    """A new NumPy array with the memory's contents, shaped by its dims.

    Maps the memory, which waits for oneDNN's service queue but not for work
    on other queues: wait on the stream (or the event) that wrote it first.
    """
    _plain_dims(memory)
    view = memory.map_data()
    try:
        return np.array(view, copy=True)
    finally:
        memory.unmap_data(view)


def bf16_from_float32(array) -> np.ndarray:
    """bf16 bit patterns (uint16) of float32 values, rounded to nearest even;
    NaNs stay NaN (quieted, sign kept), as in oneDNN's conversion (the
    data-type table's rounding, shared with host scalars)."""
    return _core._bf16_from_float32(np.asarray(array, dtype=np.float32))


def float32_from_bf16(bits) -> np.ndarray:
    """float32 values of bf16 bit patterns (uint16)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# -- pyopencl arrays -----------------------------------------------------------


class memory_and_events(NamedTuple):
    """What :func:`as_memory` returns: the memory and the array's pending
    events, to pass as ``deps`` of ``dnnl.ocl_interop.execute``."""

    memory: Any  #: dnnl.memory on the array's cl_mem (or a sub-buffer of it)
    events: List[Any]  #: the array's pending pyopencl.Event objects (a copy of array.events)


_pyopencl = None


def _cl():
    global _pyopencl
    if _pyopencl is None:
        import pyopencl  # imported on use: NumPy-only users need no OpenCL here

        _pyopencl = pyopencl
    return _pyopencl


def _same_context(a, b) -> bool:
    return a.int_ptr == b.int_ptr


_layouts: dict = {}  # (shape, strides, itemsize) -> extent, for layouts that passed


def _layout_extent(shape, strides, itemsize) -> int:
    """The bytes a view of this layout spans, once its layout is checked
    (remembered: arrays of one layout are shared again and again)."""
    key = (shape, strides, itemsize)
    extent = _layouts.get(key)
    if extent is not None:
        return extent
    if not shape:
        raise invalid_argument("array is 0-dimensional: reshape it to (1,) first")
    if any(s < 0 for s in strides):
        raise invalid_argument(f"array has negative strides {strides}: oneDNN descriptors "
                         "cannot express them (copy the array first)")
    if any(s % itemsize for s in strides):
        raise invalid_argument(f"array strides {strides} are not multiples of its item size "
                         f"{itemsize}")
    extent = _view_extent(shape, strides, itemsize)
    if extent == 0:
        raise invalid_argument(f"array of shape {shape} has no elements")
    if len(_layouts) > 4096:  # bounded: layouts may vary without end
        _layouts.clear()
    _layouts[key] = extent
    return extent


def _view_extent(shape, strides, itemsize) -> int:
    """Bytes from a view's first element to the end of its last one."""
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def as_memory(array, engine, desc=None) -> memory_and_events:
    """oneDNN memory on a ``pyopencl.array.Array``'s own storage, without a copy.

    Returns ``(memory, events)`` (a :class:`memory_and_events`): buffer
    memory on ``array.base_data`` and a copy of ``array.events``, the work
    still writing the array; pass them as ``deps`` to
    ``dnnl.ocl_interop.execute`` (on an in-order stream over the array's own
    queue they are already ordered). After oneDNN writes the memory,
    ``array.add_event(event)`` makes pyopencl's own operations on the array
    wait for it.

    Without ``desc`` the descriptor is derived from the array: its shape as
    dims, its strides (bytes in pyopencl) as strides in elements, its dtype
    as the data type (float32, float16, float64, int8, uint8, int32, int64).
    A view's ``offset`` becomes an OpenCL sub-buffer starting at the view's
    first element (the memory's cl_mem is then that sub-buffer, whose parent
    is ``array.base_data``). OpenCL allows sub-buffers only at offsets that
    are multiples of the device's ``mem_base_addr_align`` (in bits; 128 bytes
    on many devices): a view at any other element starts its sub-buffer at
    the aligned byte before it, and its descriptor says the rest as a
    sub-memory offset (``submemory_desc``), as oneDNN's C++ API takes such a
    view (reorders honour the offset; primitives whose implementations
    ignore it are refused for that by the known-problems registry, naming
    ``submemory-offsets``, and ``dnnl.ops`` copies the view first). A view
    whose offset its strides cannot express (no combination of them reaches
    it) raises ``dnnl.invalid_arguments``. Negative strides and strides that
    are not whole elements raise ``dnnl.invalid_arguments``.

    With ``desc`` (a ``dnnl.memory.desc``), the array's bytes are taken as
    that descriptor says, e.g. bf16 bits in a uint16 array, or a blocked
    layout of a flat array: its data type must be held in the array's dtype
    (``numpy_dtype``, ``TypeError`` otherwise), and every byte it addresses
    must lie within the array's extent (``dnnl.invalid_arguments`` otherwise); a
    descriptor with a sub-memory offset is refused (make the view instead),
    but the offset a view at an unaligned element needs (see above).

    The array must be on the engine's OpenCL context and hold a cl_mem
    (``dnnl.invalid_arguments`` otherwise; arrays of pyopencl's SVM allocators are
    refused). The memory keeps the cl_mem alive.

    The memory is made once per array, engine and descriptor and kept on the
    array (at most :data:`MEMORIES_PER_ARRAY`): later calls return the same
    ``dnnl.memory`` while the array's storage, offset, shape, strides and
    dtype are unchanged and the memory still points at it (a
    ``set_data_handle`` on it is noticed, and a new memory made), so sharing
    an array again costs a lookup, not a memory creation. The events are
    copied anew on every call.
    """
    return _as_memory(array, engine, None if desc is None else _desc_facts(desc))


class _facts(NamedTuple):
    """What as_memory checks of a descriptor, found once (dnnl.ops keeps
    them with the primitive the descriptor was made for)."""

    desc: Any
    dtype: Any  #: the NumPy dtype holding its elements, or None
    submemory_offset: int
    extent: int  #: bytes it addresses from the start of its storage
    key: Any  #: equal for equal descriptors (see _desc_key)


def _desc_facts(desc) -> _facts:
    return _facts(desc, _core.memory.numpy_dtype(desc.get_data_type()),
                  desc.get_submemory_offset(), desc._addressed_bytes(), _desc_key(desc))


def _desc_key(desc):
    """A value naming a descriptor among the memories kept on an array: a
    plain layout by its dims, data type, strides, padded dims, size and
    offset; any other by its bytes (``get_blob``), which include the
    struct's uninitialized padding, so that two equal descriptors may get
    two keys (a second memory, never a wrong one)."""
    if _is_plain(desc):
        return ("plain", tuple(desc.get_dims()), desc.get_data_type()._name_,
                tuple(desc.get_strides()), tuple(desc.get_padded_dims()), desc.get_size(),
                desc.get_submemory_offset())
    return ("bytes", desc.get_blob())


#: How many memory objects (engines × descriptors) :func:`as_memory` keeps on
#: one array; the oldest goes first.
MEMORIES_PER_ARRAY = 8

_SHARED = "_dnnl_ocl_interop_memories"  # the array attribute holding them


# What as_memory keeps per key in an array's _SHARED dict: the memory and what
# it was made from, valid while they are the array's and the memory's handle
# is still the one it was made with. A plain tuple: made once per memory, read
# on every call (a NamedTuple's constructor costs 0.4 µs of Python).
# (engine: held, so that the id() in the key names no other engine, base,
#  offset, shape, strides, dtype, handle, memory)


def _shared_memory(array, key):
    """The memory as_memory made before for `key` on `array`, if still valid."""
    try:
        memories = array.__dict__.get(_SHARED)
    except AttributeError:  # not an object with attributes (as_memory refuses it below)
        return None
    if memories is None:
        return None
    found = memories.get(key)
    if found is None:
        return None
    _, base, offset, shape, strides, dtype, handle, memory = found
    if (base is not array.base_data or offset != array.offset or shape != array.shape
            or strides != array.strides or dtype != array.dtype
            or memory.get_data_handle() != handle):
        return None
    return memory


def _keep_memory(array, key, engine, memory) -> None:
    try:
        attributes = array.__dict__
    except AttributeError:  # an array type without __dict__: nothing kept
        return
    memories = attributes.get(_SHARED)
    if memories is None:
        memories = attributes[_SHARED] = {}
    elif len(memories) >= MEMORIES_PER_ARRAY and key not in memories:
        try:
            del memories[next(iter(memories))]
        except (KeyError, StopIteration, RuntimeError):  # another thread changed it first
            pass
    memories[key] = (engine, array.base_data, array.offset, array.shape, array.strides,
                     array.dtype, memory.get_data_handle(), memory)


def _memory_on_new(array, engine, facts: _facts):
    """as_memory on an array just made for `facts`' descriptor (dense, at
    offset 0 of its own buffer, of the descriptor's size: dnnl.ops's
    results), without as_memory's checks of what its maker guarantees."""
    memory = _core.ocl_interop.make_memory(facts.desc, engine, array.base_data)
    _keep_memory(array, _memory_key(engine, facts), engine, memory)
    return memory


def _memory_key(engine, facts: Optional[_facts]):
    """The key of a memory on an array: its engine and descriptor (None: the
    array's own layout)."""
    return (id(engine), None if facts is None else facts.key)


def _as_memory(array, engine, facts: Optional[_facts]) -> memory_and_events:
    """as_memory, with the descriptor's facts found already (or None)."""
    memory = _memory(array, engine, facts, _memory_key(engine, facts))
    return memory_and_events(memory, list(array.events))


def _memory(array, engine, facts: Optional[_facts], key):
    """The memory of :func:`_as_memory` alone, `key` its ``_memory_key``
    found once by the caller: what dnnl.ops runs on every call (it reads
    the array's events itself, without a copy or a memory_and_events)."""
    memory = _shared_memory(array, key)
    if memory is None:
        memory = _new_shared_memory(array, engine, facts, key)
    return memory


def _new_shared_memory(array, engine, facts: Optional[_facts], key):
    """Check `array` for as_memory, make its memory and keep it under `key`."""
    cl = _cl()
    oi = _core.ocl_interop
    base = getattr(array, "base_data", None)
    if not hasattr(array, "strides") or not hasattr(array, "offset"):
        raise TypeError(f"array must be a pyopencl.array.Array, not {type(array).__name__}")
    if base is None:
        raise invalid_argument("array has no storage (an empty array)")
    if not isinstance(base, cl.MemoryObjectHolder):
        raise invalid_argument(f"array's storage is a {type(base).__name__}, not a cl_mem buffer: "
                         "oneDNN buffer memory needs a cl_mem (arrays of SVM allocators "
                         "cannot be shared)")
    dtype = np.dtype(array.dtype)
    shape, strides = tuple(array.shape), tuple(array.strides)
    extent = _layout_extent(shape, strides, dtype.itemsize)
    if array.offset + extent > base.size:
        raise invalid_argument(f"array addresses bytes {array.offset} to {array.offset + extent} "
                         f"of a {base.size}-byte buffer")

    # From the aligned byte at or before the first element to the end of the
    # buffer: make_memory checks that this holds the bytes desc addresses,
    # as for any cl_mem.
    mem_object, skipped = _sub_buffer(cl, base, array.offset) if array.offset else (base, 0)
    if skipped % dtype.itemsize:
        raise invalid_argument(f"array's offset of {array.offset} bytes is not a whole number of "
                               f"{dtype.itemsize}-byte elements past the device's alignment")
    element_offset = skipped // dtype.itemsize
    if facts is None:
        try:
            element_type = data_type(dtype)
        except TypeError as e:
            raise TypeError(f"array: {e}") from None
        desc = _at_element_offset(list(shape), element_type, [s // dtype.itemsize for s in strides],
                                 element_offset)
    else:
        desc = facts.desc
        if facts.dtype is None or facts.dtype != dtype:
            raise TypeError(f"desc holds {desc.get_data_type()} elements ({facts.dtype}), "
                            f"the array has dtype {dtype}")
        if facts.submemory_offset not in (0, element_offset):
            raise invalid_argument("desc has a sub-memory offset: view the array at that "
                                   "element instead")
        if facts.extent - facts.submemory_offset * dtype.itemsize > extent:
            raise invalid_argument(f"desc addresses {facts.extent} bytes from the array's first "
                             f"element, but the array spans {extent}")
        if element_offset and not facts.submemory_offset:
            desc = _offset_of_the_view(desc, element_offset)
    try:
        memory = oi.make_memory(desc, engine, mem_object)
    except ValueError:
        # make_memory checks the cl_mem's context; asking first cost 1 µs of
        # this function's 4 (measured). The refusal is said of the array here.
        if not _same_context(base.context, oi.get_context(engine)):
            raise invalid_argument("array belongs to another OpenCL context than the engine's") from None
        raise
    _keep_memory(array, key, engine, memory)
    return memory


def _root_buffer(base):
    """(the buffer whose cl_mem holds `base`'s bytes, where `base` starts in
    it): `base` itself from 0, or the parent of a sub-buffer (OpenCL nests
    no sub-buffers)."""
    parent = base.associated_memobject
    return (base, 0) if parent is None else (parent, base.offset)


_alignments: dict = {}  # context handle -> its devices' largest mem_base_addr_align, in bytes


def _alignment(context) -> int:
    found = _alignments.get(context.int_ptr)
    if found is None:
        found = max(d.mem_base_addr_align for d in context.devices) // 8
        if len(_alignments) > 256:
            _alignments.clear()
        _alignments[context.int_ptr] = found
    return found


def _skipped_bytes(base, offset: int) -> int:
    """Bytes from the aligned byte at or before a view's first element (at
    `offset` into `base`) to that element: where OpenCL lets a sub-buffer
    start."""
    parent, origin = _root_buffer(base)
    return (origin + offset) % _alignment(parent.context)


def _element_offset(array) -> int:
    """The sub-memory offset (in elements) :func:`as_memory` gives the
    descriptor of `array`: 0 for a view at an element OpenCL can start a
    sub-buffer at (a multiple of the device's alignment), the elements from
    the aligned byte before it otherwise."""
    if not array.offset:
        return 0
    return _skipped_bytes(array.base_data, array.offset) // np.dtype(array.dtype).itemsize


def _sub_buffer(cl, base, offset: int):
    """(a sub-buffer of `base` from the aligned byte at or before `offset`
    to its end, the bytes it holds before `offset`)."""
    parent, origin = _root_buffer(base)
    skipped = _skipped_bytes(base, offset)
    start = origin + offset - skipped
    handle = cl.Buffer.from_int_ptr(parent.int_ptr, retain=True)
    return (handle if start == 0 else handle.get_sub_region(start, parent.size - start)), skipped


def _at_element_offset(dims: Sequence[int], element_type, strides: Sequence[int], offset: int):
    """The descriptor of a view of `dims` and `strides` (elements) whose
    first element lies `offset` elements past its memory's handle: a plain
    descriptor for 0, else a ``submemory_desc`` of a parent reaching back to
    the handle (the offset spelled in the view's strides); invalid_arguments
    where they cannot spell it."""
    desc = _core.memory.desc(list(dims), element_type, list(strides))
    return _offset_of_the_view(desc, offset) if offset else desc


def _offset_of_the_view(desc, offset: int):
    dims, strides = desc.get_dims(), desc.get_strides()
    steps = [0] * len(dims)
    left = offset
    for d in sorted(range(len(dims)), key=lambda d: -strides[d]):
        if strides[d] > 0:
            steps[d], left = divmod(left, strides[d])
    if left:
        raise invalid_argument(f"the view's offset of {offset} elements from an aligned byte is "
                               f"not a sum of its strides {tuple(strides)}: no descriptor says "
                               "it (copy the view with pyopencl first)")
    parent = _core.memory.desc([n + k for n, k in zip(dims, steps)], desc.get_data_type(),
                               list(strides))
    return parent.submemory_desc(list(dims), steps)


def to_pyopencl(memory, queue, events: Optional[Sequence[Any]] = None):
    """A ``pyopencl.array.Array`` over buffer ``memory``'s cl_mem, without a copy.

    Shaped by the memory's dims, typed by its data type (as
    :func:`numpy_dtype`: bf16 as uint16 bits), strided by its strides (in
    bytes, as pyopencl counts them) and offset by its sub-memory offset. The
    array holds its own reference to the cl_mem. ``queue`` must be on the
    engine's context; ``events`` (e.g. the event ``ocl_interop.execute``
    returned) become the array's pending events, which pyopencl's operations
    on it wait for.

    USM memory raises ``TypeError``: pyopencl's arrays live in cl_mem buffers
    and pyopencl has no Intel USM. Pass a USM pointer to a pyopencl kernel
    with ``dnnl.usm.set_kernel_arg(kernel, index, memory.get_data_handle())``
    instead, or copy it (``dnnl.usm.memcpy``, ``read``). Memory without
    storage, blocked layouts and sub-byte types raise ``dnnl.invalid_arguments``.
    """
    cl = _cl()
    import pyopencl.array as cla

    oi = _core.ocl_interop
    if oi.get_memory_kind(memory) == oi.memory_kind.usm:
        raise TypeError("memory is USM-based: pyopencl arrays need a cl_mem buffer and "
                        "pyopencl has no Intel USM. Give the pointer to a pyopencl kernel "
                        "with dnnl.usm.set_kernel_arg(kernel, index, "
                        "memory.get_data_handle()), or copy it (dnnl.usm.memcpy, "
                        "dnnl.arrays.read)")
    dims = _plain_dims(memory)
    desc = memory.get_desc()
    dtype = numpy_dtype(desc.get_data_type())
    buffer = oi.get_mem_object(memory)
    if buffer is None:
        raise invalid_argument("memory has no storage (dnnl.MEMORY_NONE)")
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")
    if not _same_context(queue.context, buffer.context):
        raise invalid_argument("queue belongs to another OpenCL context than the memory's engine")
    item = dtype.itemsize
    return cla.Array(queue, tuple(dims), dtype, data=buffer,
                     offset=desc.get_submemory_offset() * item,
                     strides=tuple(s * item for s in desc.get_strides()),
                     events=list(e for e in (events or ()) if e is not None))
