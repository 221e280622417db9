"""The primitive cache of ``dnnl.ops``, and the one place it creates primitives.

A bounded LRU keyed by everything that selects a primitive: the engine, the
operation, its parameters, each operand's dims, strides and data type, the
destination's, the post-ops' kinds, values and operand layouts. A value is
the primitive with what a call needs to run it again (its step: the
descriptors the operands are taken as, the destination's shape). Each entry
has a ``use`` (``_core._arrays.use``): the stamp of its last use on one
process-wide clock, which lookups here and bound calls in the compiled part
both set, and the least recently used entry (the oldest stamp) is evicted.
Thread-safe: lookups and insertions hold one lock; primitives are created
outside it, so two threads missing on one key create it twice and keep the
first.

Beside the entries, the cache keeps the calls that found them
(:data:`bound`: a call's signature to its bound call, which runs it again
without planning, see ``_call``). They hold entries, so they are forgotten
whenever an entry leaves the cache (evicted, cleared, the capacity
changed), and an evicted entry's ``use`` says so to a bound call found
just before: a bound call never serves a primitive the cache no longer
holds.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Hashable

from .. import _core
from . import _context
from .._errors import invalid_argument

__all__ = ["cache_info", "clear_cache", "get_cache_capacity", "set_cache_capacity"]

DEFAULT_CAPACITY = 1024  # as oneDNN's own primitive cache

_lock = threading.Lock()
_entries: Dict[Hashable, Any] = {}  # key -> entry (each with .use)
_arrays = _core._arrays
_capacity = DEFAULT_CAPACITY
_hits = _misses = _evictions = 0

# A call's signature -> the bound call that runs it again (see the module
# docstring). Read without the lock (a dict lookup is atomic: the compiled
# part reads it on every call); changed under it.
bound: Dict[Hashable, Any] = {}
MAX_BOUND = 4096  # bounded: signatures may vary without end (the oldest goes)


def lookup(key: Hashable) -> Any:
    """The entry cached under `key` (made most recent), or None; counted."""
    global _hits, _misses
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            _misses += 1
            return None
        entry.use.touch()
        _hits += 1
        return entry


def insert(key: Hashable, entry: Any) -> Any:
    """Cache `entry` under `key` and return what is cached there now (an
    entry another thread inserted first wins), evicting the least recently
    used entries beyond the capacity."""
    with _lock:
        first = _entries.get(key)
        if first is not None:
            return first
        if _capacity == 0:
            return entry
        entry.use.touch()
        _entries[key] = entry
        _evict_beyond(_capacity)
        return entry


def _evict_beyond(capacity: int) -> None:
    """Evict the least recently used entries (the oldest stamps) beyond
    `capacity`, lock held. A scan of the stamps per eviction (about 40 µs
    for 1,024 entries), which only a miss in a full cache pays, on top of
    creating its primitive."""
    global _evictions
    while len(_entries) > capacity:
        oldest = min(_entries, key=lambda k: _entries[k].use.stamp)
        _entries.pop(oldest).use.evict()
        _evictions += 1
        bound.clear()


def bind(signature: Hashable, binding: Any) -> None:
    """Keep `binding` for calls of `signature` (while its entry is cached:
    with a capacity of 0 nothing is kept)."""
    with _lock:
        if _capacity == 0:
            return
        if len(bound) >= MAX_BOUND:
            del bound[next(iter(bound))]
        bound[signature] = binding


def create(family: Callable[[Any], Any], pd: Any) -> Any:
    """The primitive of `pd` (a ``dnnl.<family>.primitive_desc``).

    Every primitive ``dnnl.ops`` uses is created here and nowhere else, so
    that one change can serve them from elsewhere (a persistent cache).
    """
    return family(pd)


def cache_info() -> Dict[str, int]:
    """Statistics of the ops primitive cache, one consistent snapshot:
    ``{"hits", "misses", "evictions", "size", "capacity"}``. Counted since
    the process started or :func:`clear_cache`; a call that finds its
    primitive is a hit, one that creates it a miss."""
    with _lock:
        return {"hits": _hits + _arrays.bound_hits(), "misses": _misses,
                "evictions": _evictions, "size": len(_entries), "capacity": _capacity}


def clear_cache() -> None:
    """Drop every cached primitive and every cached stream, and zero the
    statistics. Until then, the cache holds its primitives' engines (and
    through them their OpenCL contexts) and a stream per queue it has run on
    (released by itself once nothing else holds the queue)."""
    global _hits, _misses, _evictions
    with _lock:
        for entry in _entries.values():
            entry.use.evict()
        _entries.clear()
        bound.clear()
        _hits = _misses = _evictions = 0
        _arrays.reset_bound_hits()
    _context.clear()


def get_cache_capacity() -> int:
    """How many primitives the ops cache keeps (default 1024)."""
    return _capacity


def set_cache_capacity(capacity: int) -> None:
    """Keep at most `capacity` primitives, evicting the least recently used
    beyond it now (counted as evictions); 0 keeps none (every call creates
    its primitive, which oneDNN's own primitive cache may still serve).
    A negative or non-integer capacity raises ``ValueError``/``TypeError``."""
    global _capacity
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"capacity must be an int, not {type(capacity).__name__}")
    if capacity < 0:
        raise invalid_argument(f"capacity must be 0 or more, not {capacity}")
    with _lock:
        _capacity = capacity
        bound.clear()
        _evict_beyond(_capacity)

