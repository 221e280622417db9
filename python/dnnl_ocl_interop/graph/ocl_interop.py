"""Mirrors ``dnnl::graph::ocl_interop``: allocators that call Python, graph
engines on the user's OpenCL device and context, and execution ordered by
OpenCL events."""

from .._core.graph import ocl_interop as _compiled
from .._core.graph.ocl_interop import *  # noqa: F401,F403
from .._core.graph.ocl_interop import __all__  # noqa: F401
# Not public: the engine of dnnl.graph.allocators.caching_pool.
from .._core.graph.ocl_interop import _caching_pool  # noqa: F401,E402

# Development builds only (DNNL_OCL_INTEROP_TEST_HOOKS): live allocators and
# allocations for the tests, stage timestamps for
# benchmarks/allocator_breakdown.py.
for _name in ("_live_allocations", "_live_allocators", "_trace_allocators"):
    if hasattr(_compiled, _name):
        globals()[_name] = getattr(_compiled, _name)
del _name
