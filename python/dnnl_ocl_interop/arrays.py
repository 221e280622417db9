"""NumPy in and out of oneDNN memory, checked against the memory descriptor.

Works for buffer- and USM-based memory alike (through ``memory.map_data``).
Element types map as in ``map_data``: f16 is ``float16``, bf16 is raw
``uint16`` bits, f8 types raw ``uint8`` bits (see :func:`bf16_from_float32` and :func:`float32_from_bf16`).
"""

import numpy as np

from . import _core

__all__ = ["bf16_from_float32", "float32_from_bf16", "numpy_dtype", "read", "write"]

def numpy_dtype(data_type: "_core.memory.data_type") -> np.dtype:
    """The NumPy dtype that holds one element of a oneDNN data type (the
    table ``map_data`` uses: ``memory.numpy_dtype``); ValueError for
    sub-byte types."""
    dtype = _core.memory.numpy_dtype(data_type)
    if dtype is None:
        raise ValueError(f"no NumPy dtype holds {data_type} elements")
    return dtype


def _plain_dims(memory) -> list:
    desc = memory.get_desc()
    if desc.get_format_kind() != _core.memory.format_kind.blocked or desc.get_inner_nblks():
        raise ValueError("the memory has a blocked layout: reorder it to a plain "
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
        raise ValueError(f"array has shape {tuple(array.shape)}, the memory has dims {tuple(dims)}")
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
    NaNs stay NaN (quieted, sign kept), as in oneDNN's conversion."""
    values = np.asarray(array, dtype=np.float32)
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    quiet_nan = (bits >> 16) | 0x40
    return np.where(np.isnan(values), quiet_nan, rounded).astype(np.uint16)


def float32_from_bf16(bits) -> np.ndarray:
    """float32 values of bf16 bit patterns (uint16)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
