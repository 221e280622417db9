"""Mirrors ``dnnl::graph``: logical tensors, ops, graphs, partitions,
compiled partitions and tensors. ``dnnl.graph.ocl_interop`` makes graph
engines whose memory comes from Python allocators; ``dnnl.graph.allocators``
has ready-made ones."""

from importlib import import_module as _import_module

from .. import _core
from .._reexport import public_names as _public_names

__all__ = _public_names(_core.graph) + ["allocators"]
globals().update({name: getattr(_core.graph, name) for name in _public_names(_core.graph)})

ocl_interop = _import_module(".ocl_interop", __name__)
allocators = _import_module(".allocators", __name__)
