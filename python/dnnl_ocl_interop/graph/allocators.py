"""Ready-made graph allocators, and examples of the allocator protocol.

An allocator is two callables given to ``dnnl.graph.ocl_interop.make_allocator``::

    malloc(size, alignment, device, context) -> int   # a USM pointer of context
    free(ptr, device, context, event) -> None         # once event (if any) completed

Both classes here hand out USM device memory and keep statistics. Their
callables hold only the statistics, not the object that owns the allocator,
so dropping the object (and the engines using its allocator) frees
everything.
"""

import threading
from dataclasses import dataclass, field

from .. import usm
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


class _block_cache:
    """Freed blocks by size class, oldest first, each with the event it waits
    for (None once known complete, or when none was given). Frees what it
    still holds when its last user (the pool or the allocator's callables,
    which engines keep) is gone."""

    def __init__(self, lock):
        self.blocks = {}  # size class -> [[ptr, event, context]]
        self.lock = lock

    def release(self) -> None:
        with self.lock:
            entries = [entry for blocks in self.blocks.values() for entry in blocks]
            self.blocks.clear()
        for ptr, event, context in entries:
            _wait(event)
            usm.free(context, ptr)

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: nothing to report to
            pass


def _done(entry) -> bool:
    """Whether a cached block's event has completed (forgetting the event
    once it has: it is not asked again). A negative status, a command that
    failed, is done too: nothing runs on the block any more."""
    event = entry[1]
    if event is None:
        return True
    if event.command_execution_status > 0:  # queued, submitted or running
        return False
    entry[1] = None
    return True


class caching_pool:
    """USM device memory reused by size once its last user has finished.

    ``free`` returns at once and never calls the driver: the block joins the
    cache with the event oneDNN passed, and ``malloc`` reuses the oldest
    block of the same (rounded) size and context whose event has completed
    (a status query, no wait). So a warm pool makes no device allocation and
    no blocking wait inside an execute.

    oneDNN passes no event on an in-order stream. With
    ``reuse_without_event`` (the default) such a block is reused at once:
    correct when every stream on the engine is one in-order queue, whose
    order protects the memory. Without it, the pool asks the binding for an
    event there (``make_allocator(..., in_order_events=True)``: a marker
    enqueued on the stream's queue after the execute's work), so memory is
    reused on any queue only once that work is done; memory freed without an
    event outside an execute (a dropped tensor) is freed with a blocking
    USM free.

    ``release()`` frees the cached blocks now; they are freed anyway once the
    pool and the engines using it are gone. ``stats`` counts memory handed
    out; ``hits``/``misses`` count reuse.

    ``limit_bytes`` bounds the device memory the pool holds (handed out plus
    cached): a malloc beyond it first frees cached blocks that are ready,
    and when that is not enough raises ``MemoryError`` — the pool has run
    dry — which the compile or execute that asked for the memory raises as
    ``dnnl.out_of_memory`` (its ``__cause__`` is the ``MemoryError``). The
    engine and pool stay usable: memory freed later serves later calls.
    """

    def __init__(self, granularity: int = 256, reuse_without_event: bool = True,
                 limit_bytes: "int | None" = None):
        stats = self.stats = allocation_statistics()
        # One lock for the cache and the statistics: malloc and free take it
        # once each, and update the statistics themselves (they run on every
        # execute).
        lock = stats.lock
        acquire, release = lock.acquire, lock.release  # cheaper than `with` here
        cache = self._cache = _block_cache(lock)
        blocks_by_size, sizes = cache.blocks, stats.sizes
        counters = self._counters = {"hits": 0, "misses": 0}
        limit: "list[int | None]" = [None]  # read at each malloc: the setter changes it
        self._limit = limit
        self.limit_bytes = limit_bytes
        growing = threading.Lock()

        def make_room(size_class):
            """Frees ready cached blocks until `size_class` more bytes fit
            under the limit; MemoryError when they cannot."""
            limit_bytes = limit[0]
            with lock:
                held = stats.live_bytes + sum(size * len(blocks) for size, blocks in blocks_by_size.items())
                for block_size, blocks in blocks_by_size.items():
                    for entry in [e for e in blocks if _done(e)]:
                        if held + size_class <= limit_bytes:
                            break
                        blocks.remove(entry)
                        usm.free(entry[2], entry[0])
                        held -= block_size
            if held + size_class > limit_bytes:
                raise MemoryError(f"caching_pool ran dry: {size_class} bytes asked for, "
                                  f"{stats.live_bytes} in use and {held - stats.live_bytes} cached "
                                  f"of limit_bytes={limit_bytes}")

        def malloc(size, alignment, device, context):
            size_class = -(-size // granularity) * granularity
            acquire()
            try:
                # The oldest ready block of the size class for this context
                # and alignment.
                blocks = blocks_by_size.get(size_class)
                for i, entry in enumerate(blocks or ()):
                    ptr, event, block_context = entry
                    if ((block_context is context or block_context == context)
                            and (alignment <= 1 or ptr % alignment == 0)
                            and (event is None or _done(entry))):
                        del blocks[i]
                        counters["hits"] += 1
                        sizes[ptr] = size_class
                        stats.allocations += 1
                        live = stats.live_bytes = stats.live_bytes + size_class
                        if live > stats.peak_bytes:
                            stats.peak_bytes = live
                        return ptr
                counters["misses"] += 1
            finally:
                release()
            with growing:  # one thread at a time checks the limit and grows
                if limit[0] is not None:
                    make_room(size_class)
                ptr = usm.device_alloc(context, device, size_class, alignment)
            stats.allocated(ptr, size_class)
            return ptr

        def free(ptr, device, context, event):
            acquire()
            try:
                size_class = sizes.pop(ptr)
                stats.frees += 1
                stats.live_bytes -= size_class
                if event is not None or reuse_without_event:
                    blocks = blocks_by_size.get(size_class)
                    if blocks is None:
                        blocks = blocks_by_size[size_class] = []
                    blocks.append([ptr, event, context])
                    return
            finally:
                release()
            usm.free(context, ptr)  # not an execute's memory: see the class

        self.allocator = ocl_interop.make_allocator(malloc, free,
                                                    in_order_events=not reuse_without_event)

    @property
    def limit_bytes(self) -> "int | None":
        """The bound on device memory the pool holds (None: no bound); may be changed."""
        return self._limit[0]

    @limit_bytes.setter
    def limit_bytes(self, value: "int | None") -> None:
        if value is not None and value < 0:
            raise ValueError(f"limit_bytes must not be negative, not {value}")
        self._limit[0] = value

    @property
    def hits(self) -> int:
        """Allocations served from the cache."""
        return self._counters["hits"]

    @property
    def misses(self) -> int:
        """Allocations that went to the device."""
        return self._counters["misses"]

    @property
    def cached_bytes(self) -> int:
        """Bytes held in the cache, free for reuse."""
        with self._cache.lock:
            return sum(size * len(blocks) for size, blocks in self._cache.blocks.items())

    def release(self) -> None:
        """Free every cached block now (waiting for their events)."""
        self._cache.release()
