"""oneDNN with OpenCL interoperability, from Python.

``import dnnl_ocl_interop as dnnl`` gives oneDNN's core objects (``engine``,
``stream``, ``memory``, ``error``) and the submodules ``ocl_interop``
(mirrors ``dnnl::ocl_interop``), ``usm`` (Intel unified shared memory) and
``emulation`` (an emulated Intel GPU for machines without one).

OpenCL objects go in as pyopencl objects or int handles and come out as
pyopencl objects holding their own reference.
"""

from . import _core
from ._core import (
    MEMORY_ALLOCATE,
    MEMORY_NONE,
    engine,
    error,
    memory,
    status,
    stream,
)
from . import emulation, ocl_interop, usm

__version__ = "0.1.0"

__all__ = [
    "MEMORY_ALLOCATE",
    "MEMORY_NONE",
    "emulation",
    "engine",
    "error",
    "memory",
    "ocl_interop",
    "status",
    "stream",
    "usm",
]
