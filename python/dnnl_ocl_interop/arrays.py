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

from . import _array_memory, _core
from ._array_memory import DATA_TYPES as _DATA_TYPES  # noqa: F401  (the table data_type reads)
from ._array_memory import cl as _cl
from ._array_memory import data_type
from ._array_memory import desc_facts as _desc_facts
from ._array_memory import is_plain as _is_plain
from ._array_memory import memory as _memory
from ._array_memory import memory_key as _memory_key
from ._array_memory import same_context as _same_context
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
    found = None if desc is None else _desc_facts(desc)
    return memory_and_events(_memory(array, engine, found, _memory_key(engine, found)),
                             list(array.events))


#: How many memory objects (engines × descriptors) :func:`as_memory` keeps on
#: one array; the oldest goes first.
MEMORIES_PER_ARRAY = _array_memory.MEMORIES_PER_ARRAY


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

