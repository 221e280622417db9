"""Ready-made graph allocators, and examples of the allocator protocol.

An allocator is two callables given to ``dnnl.graph.ocl_interop.make_allocator``::

    malloc(size, alignment, device, context) -> int   # a USM pointer of context
    free(ptr, device, context, event) -> None         # once event (if any) completed

Both classes here hand out USM device memory and keep statistics.
``statistics_allocator`` is two such Python callables, which hold only the
statistics, not the object that owns the allocator; ``caching_pool`` runs
its policy in the binding's C++, without Python on oneDNN's calls. Dropping
the object (and the engines using its allocator) frees everything.
"""

import threading
from dataclasses import dataclass, field

from .. import usm
from .._errors import invalid_argument
from . import ocl_interop

__all__ = ["allocation_statistics", "caching_pool", "statistics_allocator"]


@dataclass
class allocation_statistics:
    """Counters of one allocator: bytes in use now and at most, and calls."""

    live_bytes: int = 0
    peak_bytes: int = 0
    allocations: int = 0
    frees: int = 0
    sizes: dict = field(default_factory=dict, repr=False)  # live pointer -> size
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def allocated(self, ptr: int, size: int) -> None:
        """Record that `ptr` now holds `size` bytes."""
        with self.lock:
            self.sizes[ptr] = size
            self.allocations += 1
            self.live_bytes += size
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def freed(self, ptr: int) -> int:
        """Records a free; returns the size. KeyError for an unknown pointer."""
        with self.lock:
            size = self.sizes.pop(ptr)
            self.frees += 1
            self.live_bytes -= size
            return size


def _wait(event) -> None:
    if event is not None:
        event.wait()


class statistics_allocator:
    """USM device memory straight from the driver, counted.

    ``free`` waits for the event oneDNN passes (if any) and then frees with a
    blocking USM free, which also waits for in-order work still using the
    memory. ``stats`` is an :class:`allocation_statistics`; ``allocator`` is
    what ``make_engine_with_allocator`` takes.
    """

    def __init__(self):
        stats = self.stats = allocation_statistics()

        def malloc(size, alignment, device, context):
            ptr = usm.device_alloc(context, device, size, alignment)
            stats.allocated(ptr, size)
            return ptr

        def free(ptr, device, context, event):
            stats.freed(ptr)
            _wait(event)
            usm.free(context, ptr)

        self.allocator = ocl_interop.make_allocator(malloc, free)


class _pool_statistics:
    """A caching pool's counters (read live from the pool): bytes handed out
    now and at most, blocks handed out and given back, and the pointers
    handed out with their rounded sizes."""

    def __init__(self, pool):
        self._pool = pool

    live_bytes = property(lambda self: self._pool.live_bytes, doc="Bytes handed out now.")
    peak_bytes = property(lambda self: self._pool.peak_bytes, doc="Most bytes handed out at once.")
    allocations = property(lambda self: self._pool.allocations, doc="Blocks handed out.")
    frees = property(lambda self: self._pool.frees, doc="Blocks given back.")
    sizes = property(lambda self: self._pool.sizes, doc="{pointer: rounded size} handed out now.")

    def __repr__(self):
        return (f"caching_pool statistics(live_bytes={self.live_bytes}, peak_bytes={self.peak_bytes}, "
                f"allocations={self.allocations}, frees={self.frees})")


# The pool rounds sizes up to a multiple of its granularity in 64 bits: with
# a granularity up to 2**63 every size up to 2**63 rounds without overflowing.
_MAX_GRANULARITY = 2**63
# limit_bytes is kept as a 64-bit size.
_MAX_LIMIT = 2**64 - 1


def _count(name: str, value: object, low: int, high: int, high_text: str,
           none_ok: bool = False) -> None:
    """Refuses `value` for the parameter `name` unless it is an int (not a
    bool) from `low` to `high` (or None, when `none_ok`): TypeError, or
    ``dnnl.invalid_arguments`` (a ValueError)."""
    if none_ok and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int{' or None' if none_ok else ''}, "
                        f"not {type(value).__name__}")
    if value < low:
        raise invalid_argument(f"{name} must be positive, not {value}" if low == 1
                               else f"{name} must not be negative, not {value}")
    if value > high:
        raise invalid_argument(f"{name} must be at most {high_text}, not {value}")


class caching_pool:
    """USM device memory reused by size once its last user has finished.

    ``free`` returns at once and never calls the driver: the block joins the
    cache with the event oneDNN passed, and ``malloc`` reuses the oldest
    block of the same (rounded) size and context whose event has completed
    (a status query, no wait). So a warm pool makes no device allocation and
    no blocking wait inside an execute. The policy runs in the binding's C++
    (the same policy as a C allocator would have): oneDNN's calls to the
    pool take neither the GIL nor any Python call.

    oneDNN passes no event on an in-order stream. With
    ``reuse_without_event`` (the default) such a block is reused at once by
    later executes on the same queue, whose order protects the memory;
    executes on other queues of the engine get blocks of their own. A block
    freed without an event outside an execute (a dropped tensor) is reused
    at once by any execute: right when the engine's work runs on one
    in-order queue, or the work that used the tensor is done. Without
    it, the pool's allocator asks for an event there (``in_order_events``: a
    marker enqueued on the stream's queue after the execute's work), so
    memory is reused on any queue only once that work is done; memory freed
    without an event outside an execute (a dropped tensor) is freed with a
    blocking USM free.

    ``release()`` frees the cached blocks now; they are freed anyway once the
    pool and the engines using it are gone. ``stats`` counts memory handed
    out (live: ``live_bytes``, ``peak_bytes``, ``allocations``, ``frees``,
    ``sizes``); ``hits``/``misses`` count reuse.

    ``limit_bytes`` bounds the device memory the pool holds (handed out plus
    cached): a malloc beyond it first frees cached blocks that are ready,
    and when that is not enough fails with a ``MemoryError`` — the pool has
    run dry — which the compile or execute that asked for the memory raises
    as ``dnnl.out_of_memory`` (its ``__cause__`` is the ``MemoryError``). The
    engine and pool stay usable: memory freed later serves later calls.

    ``granularity`` is an int from 1 to 2**63 (any, not only powers of two);
    ``limit_bytes`` an int from 0 to 2**64 - 1, or None. Other values raise
    ``TypeError`` (not an int) or ``dnnl.invalid_arguments`` (a
    ``ValueError``) naming the parameter.
    """

    def __init__(self, granularity: int = 256, reuse_without_event: bool = True,
                 limit_bytes: "int | None" = None):
        _count("granularity", granularity, 1, _MAX_GRANULARITY, "2**63")
        _count("limit_bytes", limit_bytes, 0, _MAX_LIMIT, "2**64 - 1", none_ok=True)
        self._pool = ocl_interop._caching_pool(granularity, reuse_without_event)
        self.allocator = self._pool.allocator
        self.stats = _pool_statistics(self._pool)
        self.limit_bytes = limit_bytes

    @property
    def limit_bytes(self) -> "int | None":
        """The bound on device memory the pool holds (None: no bound); may be changed."""
        return self._pool.limit_bytes

    @limit_bytes.setter
    def limit_bytes(self, value: "int | None") -> None:
        _count("limit_bytes", value, 0, _MAX_LIMIT, "2**64 - 1", none_ok=True)
        self._pool.limit_bytes = value

    @property
    def hits(self) -> int:
        """Allocations served from the cache."""
        return self._pool.hits

    @property
    def misses(self) -> int:
        """Allocations that went to the device."""
        return self._pool.misses

    @property
    def cached_bytes(self) -> int:
        """Bytes held in the cache, free for reuse."""
        return self._pool.cached_bytes

    def release(self) -> None:
        """Free every cached block now (waiting for their events)."""
        self._pool.release()
