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
from ._reexport import public_names as _public_names
from importlib import import_module as _import_module

# The Python modules over _core's submodules. (`from . import usm` would
# return the star-imported _core.usm instead of importing usm.py.)
ocl_interop = _import_module(".ocl_interop", __name__)
usm = _import_module(".usm", __name__)
graph = _import_module(".graph", __name__)
from . import arrays, emulation  # noqa: E402

__version__ = "0.1.0"

__all__ = _public_names(_core) + ["arrays", "emulation"]
