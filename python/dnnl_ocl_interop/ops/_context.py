"""Engines and streams of ``dnnl.ops``: one stream per pyopencl queue, one
engine per (OpenCL context, device), made on first use and reused.

What is kept, and for how long:

- a stream per ``pyopencl.CommandQueue`` *object*, for as long as that object
  lives (a weak reference to it; the stream retains the ``cl_command_queue``
  through oneDNN, not the Python object). Two Python objects wrapping one
  queue get a stream each.
- an engine per (context, device) handle pair, for as long as something uses
  it: the streams above and the primitives in the ops cache
  (``ops.clear_cache()`` lets those go). The engine retains the context, so a
  handle cannot be reused by another context while its engine is cached.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Dict, Tuple

from .. import _core

_oi = _core.ocl_interop
_lock = threading.Lock()
_by_queue: Dict[int, Tuple[Any, "context"]] = {}  # id(queue) -> (weakref to it, context)
_engines: "weakref.WeakValueDictionary[Tuple[int, int], Any]" = weakref.WeakValueDictionary()


class context:
    """The oneDNN objects for one pyopencl queue."""

    __slots__ = ("engine", "stream", "in_order", "queue_ref", "__weakref__")

    def __init__(self, engine: Any, stream: Any, in_order: bool, queue_ref: Any) -> None:
        self.engine = engine      #: dnnl.engine on the queue's context and device
        self.stream = stream      #: dnnl.stream on the queue
        self.in_order = in_order  #: whether execute returns no event (an in-order queue)
        self.queue_ref = queue_ref


def of_queue(queue: Any) -> context:
    """The context of a pyopencl queue, made on first use."""
    entry = _by_queue.get(id(queue))
    if entry is not None and entry[0]() is queue:
        return entry[1]
    return _make(queue)


def _make(queue: Any) -> context:
    import pyopencl as cl

    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")
    cl_context, device = queue.context, queue.device
    key = (cl_context.int_ptr, device.int_ptr)
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _oi.make_engine(device, cl_context)
            _engines[key] = engine
    stream = _oi.make_stream(engine, queue)
    out_of_order = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    ident = id(queue)

    def forget(ref: Any) -> None:  # the queue object is gone: drop its stream
        current = _by_queue.get(ident)
        if current is not None and current[0] is ref:
            _by_queue.pop(ident, None)

    ref = weakref.ref(queue, forget)
    made = context(engine, stream, not (queue.properties & out_of_order), ref)
    with _lock:
        current = _by_queue.get(ident)
        if current is not None and current[0]() is queue:
            return current[1]  # another thread made it first
        _by_queue[ident] = (ref, made)
    return made


def stream_count() -> int:
    """How many queues have a cached stream (for tests)."""
    return len(_by_queue)
