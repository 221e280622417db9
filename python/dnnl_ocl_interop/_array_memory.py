"""oneDNN memory on pyopencl arrays, made once and kept on the array: the
one cache ``dnnl.arrays.as_memory`` and ``dnnl.ops`` share arrays through.

A memory is made per array, engine and descriptor (its *token*:
:func:`memory_key`) and kept on the array (at most ``MEMORIES_PER_ARRAY``,
the oldest dropped), valid while the array's storage, offset, shape,
strides and dtype and the memory's handle are those it was made on: the
shelf is the compiled part's (``_core._arrays``, cpp/arrays/array_memories),
which ops' launches read without Python; this module makes a memory on a
miss, with every check of the array (:func:`new_memory`), and describes
descriptors and views for it. Both ``arrays`` and ``ops`` import it; it
imports neither.
"""

import itertools
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import _core
from ._errors import invalid_argument

_kept = _core._arrays
MEMORIES_PER_ARRAY: int = _kept.MEMORIES_PER_ARRAY
kept_memory = _kept.kept_memory  # (array, token, engine) -> the valid kept memory, or None
keep_memory = _kept.keep_memory  # (array, token, engine, memory)


# The oneDNN data type of each NumPy element type that holds its values (the
# data-type table's, cpp/common/data_types.cpp), as as_memory takes an array
# without a desc. bf16 and the f8 types have no NumPy type: their bits live in
# uint16 / uint8 arrays, which need a desc (or data_type(..., bf16_bits=True))
# saying what they hold.
DATA_TYPES = {np.dtype(numpy): getattr(_core.memory.data_type, name)
              for name, in_memory, _, _, numpy, holds in _core._data_type_table
              if in_memory and holds == "values"}


def data_type(dtype: Any, bf16_bits: bool = False) -> "_core.memory.data_type":
    """The oneDNN data type of a NumPy dtype (the inverse of
    ``dnnl.arrays.numpy_dtype``).

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
    found = DATA_TYPES.get(dtype)
    if found is None:
        if dtype == np.uint16 and bf16_bits:
            return data_types.bf16
        hint = (" (bf16 bits: pass desc=dnnl.memory.desc(shape, data_type.bf16, strides))"
                if dtype == np.uint16 else "")
        raise TypeError(f"dtype {dtype} matches no oneDNN data type{hint}")
    return found


def is_plain(desc: Any) -> bool:
    """Whether a descriptor is a plain strided layout (blocked, no inner blocks)."""
    return desc.get_format_kind() == _core.memory.format_kind.blocked and not desc.get_inner_nblks()


_pyopencl: Any = None


def cl() -> Any:
    """pyopencl, imported on first use: NumPy-only users need no OpenCL."""
    global _pyopencl
    if _pyopencl is None:
        import pyopencl

        _pyopencl = pyopencl
    return _pyopencl


def same_context(a: Any, b: Any) -> bool:
    """Whether two pyopencl contexts are one OpenCL context."""
    return a.int_ptr == b.int_ptr


_layouts: dict = {}  # (shape, strides, itemsize) -> extent, for layouts that passed


def layout_extent(shape: Any, strides: Any, itemsize: int) -> int:
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
    extent = view_extent(shape, strides, itemsize)
    if extent == 0:
        raise invalid_argument(f"array of shape {shape} has no elements")
    if len(_layouts) > 4096:  # bounded: layouts may vary without end
        _layouts.clear()
    _layouts[key] = extent
    return extent


def view_extent(shape: Any, strides: Any, itemsize: int) -> int:
    """Bytes from a view's first element to the end of its last one."""
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


class facts(NamedTuple):
    """What as_memory checks of a descriptor, found once (dnnl.ops keeps
    them with the primitive the descriptor was made for)."""

    desc: Any
    dtype: Any  #: the NumPy dtype holding its elements, or None
    submemory_offset: int
    extent: int  #: bytes it addresses from the start of its storage
    key: Any  #: equal for equal descriptors (see desc_key)


def desc_facts(desc: Any) -> facts:
    return facts(desc, _core.memory.numpy_dtype(desc.get_data_type()),
                 desc.get_submemory_offset(), desc._addressed_bytes(), desc_key(desc))


def desc_key(desc: Any) -> Any:
    """A value naming a descriptor among the memories kept on an array: a
    plain layout by its dims, data type, strides, padded dims, size and
    offset; any other by its bytes (``get_blob``), which include the
    struct's uninitialized padding, so that two equal descriptors may get
    two keys (a second memory, never a wrong one)."""
    if is_plain(desc):
        return ("plain", tuple(desc.get_dims()), desc.get_data_type()._name_,
                tuple(desc.get_strides()), tuple(desc.get_padded_dims()), desc.get_size(),
                desc.get_submemory_offset())
    return ("bytes", desc.get_blob())


# (id(engine), descriptor key or None) -> its token: an int, compared by the
# shelf on every lookup (a descriptor key's tuple would be hashed on each).
# The engine is kept with each memory, so its id names no other engine while
# a memory has the token; tokens are never reused.
_tokens: dict = {}
_next_token = itertools.count(1)


def memory_key(engine: Any, found: Optional[facts]) -> int:
    """The token of memory on an array for `engine` and a descriptor (None:
    the array's own layout)."""
    key = (id(engine), None if found is None else found.key)
    token = _tokens.get(key)
    if token is None:
        if len(_tokens) > 65536:  # bounded: descriptors may vary without end (a clear: misses)
            _tokens.clear()
        token = _tokens.setdefault(key, next(_next_token))
    return token


def memory(array: Any, engine: Any, found: Optional[facts], token: int) -> Any:
    """The memory of ``as_memory(array, engine, desc)`` for a descriptor
    whose facts were found once (or None: the array's own layout), `token`
    its :func:`memory_key`: the kept one, else a new one, kept."""
    kept = kept_memory(array, token, engine)
    if kept is None:
        kept = new_memory(array, engine, found, token)
    return kept


def new_memory(array: Any, engine: Any, found: Optional[facts], token: int) -> Any:
    """Check `array` for as_memory, make its memory and keep it under `token`."""
    pyopencl = cl()
    oi = _core.ocl_interop
    base = getattr(array, "base_data", None)
    if not hasattr(array, "strides") or not hasattr(array, "offset"):
        raise TypeError(f"array must be a pyopencl.array.Array, not {type(array).__name__}")
    if base is None:
        raise invalid_argument("array has no storage (an empty array)")
    if not isinstance(base, pyopencl.MemoryObjectHolder):
        raise invalid_argument(f"array's storage is a {type(base).__name__}, not a cl_mem buffer: "
                               "oneDNN buffer memory needs a cl_mem (arrays of SVM allocators "
                               "cannot be shared)")
    dtype = np.dtype(array.dtype)
    shape, strides = tuple(array.shape), tuple(array.strides)
    extent = layout_extent(shape, strides, dtype.itemsize)
    if array.offset + extent > base.size:
        raise invalid_argument(f"array addresses bytes {array.offset} to {array.offset + extent} "
                               f"of a {base.size}-byte buffer")

    # From the aligned byte at or before the first element to the end of the
    # buffer: make_memory checks that this holds the bytes desc addresses,
    # as for any cl_mem.
    mem_object, skipped = sub_buffer(pyopencl, base, array.offset) if array.offset else (base, 0)
    if skipped % dtype.itemsize:
        raise invalid_argument(f"array's offset of {array.offset} bytes is not a whole number of "
                               f"{dtype.itemsize}-byte elements past the device's alignment")
    element_offset = skipped // dtype.itemsize
    if found is None:
        try:
            element_type = data_type(dtype)
        except TypeError as e:
            raise TypeError(f"array: {e}") from None
        desc = at_element_offset(list(shape), element_type, [s // dtype.itemsize for s in strides],
                                 element_offset)
    else:
        desc = found.desc
        if found.dtype is None or found.dtype != dtype:
            raise TypeError(f"desc holds {desc.get_data_type()} elements ({found.dtype}), "
                            f"the array has dtype {dtype}")
        if found.submemory_offset not in (0, element_offset):
            raise invalid_argument("desc has a sub-memory offset: view the array at that "
                                   "element instead")
        if found.extent - found.submemory_offset * dtype.itemsize > extent:
            raise invalid_argument(f"desc addresses {found.extent} bytes from the array's first "
                                   f"element, but the array spans {extent}")
        if element_offset and not found.submemory_offset:
            desc = offset_of_the_view(desc, element_offset)
    try:
        made = oi.make_memory(desc, engine, mem_object)
    except ValueError:
        # make_memory checks the cl_mem's context; asking first cost 1 µs of
        # this function's 4 (measured). The refusal is said of the array here.
        if not same_context(base.context, oi.get_context(engine)):
            raise invalid_argument("array belongs to another OpenCL context than the engine's") from None
        raise
    keep_memory(array, token, engine, made)
    return made


def root_buffer(base: Any) -> Any:
    """(the buffer whose cl_mem holds `base`'s bytes, where `base` starts in
    it): `base` itself from 0, or the parent of a sub-buffer (OpenCL nests
    no sub-buffers)."""
    parent = base.associated_memobject
    return (base, 0) if parent is None else (parent, base.offset)


def storage_of(array: Any) -> Any:
    """(root, origin) of an array's bytes: the cl_mem handle they are in
    (its base_data, or that buffer's parent for a sub-buffer: two pyopencl
    objects of one cl_mem, or a buffer and its sub-buffer, have one root)
    and where base_data starts in it (bytes; the array's first element is at
    ``origin + array.offset``). Kept on the array while its base_data is the
    same object."""
    return _kept.storage_of(array)


_alignments: dict = {}  # context handle -> its devices' largest mem_base_addr_align, in bytes


def alignment(context: Any) -> int:
    found = _alignments.get(context.int_ptr)
    if found is None:
        found = max(d.mem_base_addr_align for d in context.devices) // 8
        if len(_alignments) > 256:
            _alignments.clear()
        _alignments[context.int_ptr] = found
    return found


def skipped_bytes(base: Any, offset: int) -> int:
    """Bytes from the aligned byte at or before a view's first element (at
    `offset` into `base`) to that element: where OpenCL lets a sub-buffer
    start."""
    parent, origin = root_buffer(base)
    return (origin + offset) % alignment(parent.context)


def element_offset(array: Any) -> int:
    """The sub-memory offset (in elements) :func:`new_memory` gives the
    descriptor of `array`: 0 for a view at an element OpenCL can start a
    sub-buffer at (a multiple of the device's alignment), the elements from
    the aligned byte before it otherwise."""
    if not array.offset:
        return 0
    return skipped_bytes(array.base_data, array.offset) // np.dtype(array.dtype).itemsize


def sub_buffer(pyopencl: Any, base: Any, offset: int) -> Any:
    """(a sub-buffer of `base` from the aligned byte at or before `offset`
    to its end, the bytes it holds before `offset`)."""
    parent, origin = root_buffer(base)
    skipped = skipped_bytes(base, offset)
    start = origin + offset - skipped
    handle = pyopencl.Buffer.from_int_ptr(parent.int_ptr, retain=True)
    return (handle if start == 0 else handle.get_sub_region(start, parent.size - start)), skipped


def at_element_offset(dims: Sequence[int], element_type: Any, strides: Sequence[int],
                      offset: int) -> Any:
    """The descriptor of a view of `dims` and `strides` (elements) whose
    first element lies `offset` elements past its memory's handle: a plain
    descriptor for 0, else a ``submemory_desc`` of a parent reaching back to
    the handle (the offset spelled in the view's strides); invalid_arguments
    where they cannot spell it."""
    desc = _core.memory.desc(list(dims), element_type, list(strides))
    return offset_of_the_view(desc, offset) if offset else desc


def offset_of_the_view(desc: Any, offset: int) -> Any:
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
