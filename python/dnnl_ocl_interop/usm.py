"""Intel unified shared memory (``cl_intel_unified_shared_memory``).

Allocation, free, copies and pointer queries through the extension functions
of the context's OpenCL platform. Pointers are plain ints. A platform without
the extension raises ``dnnl.error`` naming the missing function.
"""

from . import _core
from ._reexport import public_names

__all__ = public_names(_core.usm)
globals().update({name: getattr(_core.usm, name) for name in __all__})
