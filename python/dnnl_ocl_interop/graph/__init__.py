"""Mirrors ``dnnl::graph``: logical tensors, ops, graphs, partitions,
compiled partitions and tensors. ``dnnl.graph.ocl_interop`` makes graph
engines whose memory comes from Python allocators; ``dnnl.graph.allocators``
has ready-made ones; ``dnnl.graph.patterns`` builds fused patterns (attention,
MLPs) ready to call."""

from .._core.graph import *  # noqa: F401,F403
from .._core.graph import __all__ as _core_names
from . import allocators, ocl_interop, patterns

__all__ = list(_core_names) + ["allocators", "ocl_interop", "patterns"]
