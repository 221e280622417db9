"""Mirrors ``dnnl::graph::ocl_interop``: allocators that call Python, graph
engines on the user's OpenCL device and context, and execution ordered by
OpenCL events."""

from .._core.graph.ocl_interop import *  # noqa: F401,F403
from .._core.graph.ocl_interop import __all__  # noqa: F401
# Not public: the engine of dnnl.graph.allocators.caching_pool, and for the
# tests (live allocators and allocations) and benchmarks/allocator_breakdown.py
# (stage timestamps).
from .._core.graph.ocl_interop import (  # noqa: F401,E402
    _caching_pool, _live_allocations, _live_allocators, _trace_allocators)
