"""Mirrors ``dnnl::graph::ocl_interop``: allocators that call Python, graph
engines on the user's OpenCL device and context, and execution ordered by
OpenCL events."""

from .. import _core
from .._reexport import public_names as _public_names

__all__ = _public_names(_core.graph.ocl_interop)
globals().update({name: getattr(_core.graph.ocl_interop, name) for name in __all__})
