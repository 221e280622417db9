"""oneDNN with OpenCL interoperability, from Python.

``import dnnl_ocl_interop as dnnl`` gives oneDNN's core objects (``engine``,
``stream``, ``memory``, ``error``, the primitives) and the submodules
``ocl_interop`` (mirrors ``dnnl::ocl_interop``), ``graph`` (mirrors
``dnnl::graph``), ``usm`` (Intel unified shared memory), ``arrays`` (NumPy
data in and out of memory, pyopencl arrays shared with it), ``cache`` (engine
and primitive cache blobs kept on disk across processes, for one object or
the whole process), ``ops`` (oneDNN operations on pyopencl arrays, one call
each), ``profiling`` (a timeline of the executes on profiling queues) and
``emulation`` (an emulated Intel GPU for machines without one),
``known_problems`` (the oneDNN problems the binding acts on, where, and their
switches); ``verbose``
scopes oneDNN's verbose output to a region, and a failed creation's
``dnnl.error`` carries oneDNN's reasons (``.reasons``) where oneDNN prints
them (docs/api.md, Verbose output).

OpenCL objects go in as pyopencl objects or int handles and come out as
pyopencl objects holding their own reference. ``python -m dnnl_ocl_interop``
prints the configuration a bug report needs.
"""

from typing import IO, Optional

from . import _core
from ._core import *  # noqa: F401,F403  (the compiled core: engine, memory, primitives, ARG_*, ...)
from ._core import __all__ as _core_names
from . import arrays, cache, emulation, graph, known_problems, ocl_interop, ops, profiling, usm
from ._verbose import verbose

__version__: str = _core.__version__  # from pyproject.toml, at build time

__all__ = list(_core_names) + ["arrays", "cache", "emulation", "graph", "known_problems", "ocl_interop", "ops",
                               "profiling", "usm", "show_config", "verbose"]


def show_config(file: Optional[IO[str]] = None) -> None:
    """Print what a bug report needs: the package and oneDNN versions, where
    libdnnl was loaded from (bundled or system), the OpenCL platforms and
    devices, and whether the emulated device is on."""
    from ._config import show_config as _show
    _show(file)
