"""Mirrors ``dnnl::ocl_interop``: oneDNN engines, streams and memory on the
user's OpenCL device, context, queue, ``cl_mem`` buffers and USM pointers.

Handles go in as pyopencl objects or ints; returned OpenCL objects are new
pyopencl objects that hold their own reference. oneDNN retains what it is
given: an engine keeps its device and context alive, a stream its queue, a
buffer-based memory its ``cl_mem``.
"""

from ._core.ocl_interop import *  # noqa: F401,F403
from ._core.ocl_interop import __all__  # noqa: F401
