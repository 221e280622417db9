"""Mirrors ``dnnl::graph::ocl_interop``: allocators that call Python, graph
engines on the user's OpenCL device and context, and execution ordered by
OpenCL events."""

from .._core.graph.ocl_interop import *  # noqa: F401,F403
from .._core.graph.ocl_interop import __all__  # noqa: F401
