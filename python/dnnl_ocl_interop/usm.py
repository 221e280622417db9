"""Intel unified shared memory (``cl_intel_unified_shared_memory``).

Allocation, free, copies, fills and pointer queries through the extension
functions of the context's OpenCL platform; pointers are plain ints. A
platform without the extension raises ``dnnl.error`` naming the missing
function. :class:`allocation` owns a pointer and frees it, and gives
zero-copy NumPy views of host and shared allocations.
"""

import math

import numpy as np

from . import _core
from ._errors import invalid_argument
from ._core.usm import *  # noqa: F401,F403
from ._core.usm import __all__ as _core_names

__all__ = list(_core_names) + ["allocation"]

_ALLOCATORS = {"device": _core.usm.device_alloc, "shared": _core.usm.shared_alloc}


class _ArrayInterface:
    """Exposes USM memory to NumPy and keeps its allocation alive."""

    def __init__(self, owner, shape, dtype):
        self.owner = owner
        self.__array_interface__ = {
            "shape": tuple(shape), "typestr": dtype.str,
            "data": (owner.ptr, False), "version": 3,
        }


class allocation:
    """A USM allocation of ``size`` bytes that frees itself.

    ``kind`` is ``"device"``, ``"shared"`` or ``"host"`` (``device`` is not
    needed for host memory). Freed by :meth:`free`, on leaving a ``with``
    block, or when garbage collected; freeing waits for work using it.
    ``int(allocation)`` is the pointer.
    """

    def __init__(self, context, size: int, kind: str = "device", device=None, alignment: int = 0):
        if kind == "host":
            self.ptr = _core.usm.host_alloc(context, size, alignment)
        elif kind in _ALLOCATORS:
            if device is None:
                raise TypeError(f"a {kind} allocation needs a device")
            self.ptr = _ALLOCATORS[kind](context, device, size, alignment)
        else:
            raise invalid_argument(f"kind must be 'device', 'shared' or 'host', not {kind!r}")
        self.context, self.size, self.kind = context, size, kind

    def __int__(self) -> int:
        return self.ptr

    def __index__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        state = f"{self.ptr:#x}" if self.ptr else "freed"
        return f"<dnnl.usm.allocation {self.kind} {self.size} bytes at {state}>"

    def free(self) -> None:
        """Free now (idempotent). Arrays viewing the memory must be gone."""
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            _core.usm.free(self.context, ptr)

    def __copy__(self):
        raise TypeError("a dnnl.usm.allocation cannot be copied: it frees its pointer, and a "
                        "copy would free it under the original (copy the bytes into a new "
                        "allocation with dnnl.usm.memcpy)")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce_ex__(self, protocol):
        raise TypeError("a dnnl.usm.allocation cannot be pickled: its pointer means nothing "
                        "in another process")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __del__(self):
        if getattr(self, "ptr", 0):
            try:
                self.free()
            except Exception:  # interpreter shutdown or a lost context: nothing to report to
                pass

    def as_array(self, dtype=np.uint8, shape=None) -> np.ndarray:
        """A zero-copy NumPy view of a host or shared allocation.

        The array keeps this allocation alive. ``shape`` defaults to as many
        elements of ``dtype`` as fit. A dtype holding Python objects is
        refused (TypeError): the bytes would be read as object pointers.
        """
        if self.kind == "device":
            raise invalid_argument("device USM is not host-accessible: copy it with usm.memcpy")
        if not self.ptr:
            raise invalid_argument("the allocation was freed")
        dtype = np.dtype(dtype)
        if dtype.hasobject or dtype.itemsize == 0:
            # An object array would read the bytes as PyObject pointers.
            raise TypeError(f"dtype {dtype} cannot view raw memory: it "
                            + ("holds Python objects" if dtype.hasobject else "has no size"))
        if shape is None:
            shape = (self.size // dtype.itemsize,)
        shape = tuple(int(n) for n in np.atleast_1d(shape))
        if any(n < 0 for n in shape):
            raise invalid_argument(f"shape {shape} has a negative dimension")
        # math.prod on Python ints: NumPy's product wraps around for huge shapes.
        if math.prod(shape) * dtype.itemsize > self.size:
            raise invalid_argument(f"shape {shape} of {dtype} needs more than the {self.size} bytes allocated")
        return np.asarray(_ArrayInterface(self, shape, dtype))
