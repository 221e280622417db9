"""Mirrors ``dnnl::ocl_interop``: oneDNN engines, streams and memory on the
user's OpenCL device, context, queue, ``cl_mem`` buffers and USM pointers.

Handles go in as pyopencl objects or ints; returned OpenCL objects are new
pyopencl objects that hold their own reference. oneDNN retains what it is
given: an engine keeps its device and context alive, a stream its queue, a
buffer-based memory its ``cl_mem``.
"""

from . import _core
from ._reexport import public_names as _public_names

__all__ = _public_names(_core.ocl_interop)
globals().update({name: getattr(_core.ocl_interop, name) for name in __all__})
