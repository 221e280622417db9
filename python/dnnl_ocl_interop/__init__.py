"""oneDNN with OpenCL interoperability, from Python.

``import dnnl_ocl_interop as dnnl`` gives oneDNN's core objects (``engine``,
``stream``, ``memory``, ``error``) and the submodules ``ocl_interop``
(mirrors ``dnnl::ocl_interop``), ``usm`` (Intel unified shared memory) and
``emulation`` (an emulated Intel GPU for machines without one).

OpenCL objects go in as pyopencl objects or int handles and come out as
pyopencl objects holding their own reference.
"""

from . import _core
from ._core import *  # noqa: F401,F403  (the compiled core: engine, memory, primitives, ARG_*, ...)
from ._reexport import public_names
from . import emulation, ocl_interop, usm  # Python modules over _core's submodules

__version__ = "0.1.0"

__all__ = public_names(_core) + ["emulation"]
