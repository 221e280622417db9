"""Engines and streams of ``dnnl.ops``: one stream per OpenCL queue, one
engine per (OpenCL context, device), made on first use and reused.

pyopencl's queues cannot be referenced weakly, so streams are kept by queue
handle, and a stream retains its queue (through oneDNN). What is kept, and
for how long:

- a stream per ``cl_command_queue``, until nothing but the cache holds that
  queue: whenever a stream is made for a new queue, the cache drops the
  streams whose queue's OpenCL reference count has fallen to the cache's own
  references (every pyopencl object of it, the arrays on it and the events
  of its work are gone). At most :data:`MAX_STREAMS` are kept (the oldest
  goes first); ``ops.clear_cache()`` drops them all.
- an engine per (context, device) handle pair, for as long as something uses
  it: the streams above and the primitives in the ops cache (the engine
  retains the context, so a handle is not reused while its engine is
  cached).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Dict, List, Tuple

from .. import _core

MAX_STREAMS = 64

_oi = _core.ocl_interop
_lock = threading.Lock()
_streams: Dict[int, "context"] = {}  # cl_command_queue handle -> context, oldest first
_engines: "weakref.WeakValueDictionary[Tuple[int, int], Any]" = weakref.WeakValueDictionary()


KNOWN_MARKERS = 64
KNOWN_EVENTS = 256


class context:
    """The oneDNN objects for one OpenCL queue, and on an in-order queue the
    events last seen to need no barrier there: ops' own markers, and events
    found to be of work on that queue (the queue's order already waits for
    them) or complete. The two are kept apart, so that the markers of a
    busy loop do not push out the events of its inputs."""

    __slots__ = ("engine", "stream", "in_order", "queue", "own_references", "markers",
                 "known", "cl_context", "handle", "ones")

    def __init__(self, engine: Any, stream: Any, in_order: bool, queue: Any,
                 own_references: int, cl_context: Any) -> None:
        self.cl_context = cl_context  #: the queue's pyopencl.Context
        self.engine = engine      #: dnnl.engine on the queue's context and device
        self.stream = stream      #: dnnl.stream on the queue
        self.in_order = in_order  #: whether execute returns no event (an in-order queue)
        self.queue = queue        #: a pyopencl.CommandQueue of the cache's own
        self.handle = queue.int_ptr  #: the cl_command_queue
        self.ones = None  #: a float32 array holding 1, made by ones_like_queue
        self.own_references = own_references  #: the queue's references the cache holds
        # id(event) -> event: held, so that an id is not reused meanwhile
        self.markers: "OrderedDict[int, Any]" = OrderedDict()
        self.known: "OrderedDict[int, Any]" = OrderedDict()

    def add_marker(self, event: Any) -> None:
        """Remember a marker ops enqueued on this (in-order) queue."""
        self.markers[id(event)] = event
        if len(self.markers) > KNOWN_MARKERS:
            self.markers.popitem(last=False)

    def foreign(self, events: List[Any]) -> List[Any]:
        """The events a primitive on this in-order queue must still wait for.
        Each other event is asked once whether it is of this queue or
        complete (then it is remembered)."""
        markers, known, waiting = self.markers, self.known, []
        for event in events:
            ident = id(event)
            if markers.get(ident) is event or known.get(ident) is event:
                continue
            import pyopencl as cl  # here: every call passes the line above, few get here

            queue = event.get_info(cl.event_info.COMMAND_QUEUE)
            if (queue is not None and queue.int_ptr == self.handle) or \
                    event.command_execution_status == cl.command_execution_status.COMPLETE:
                known[ident] = event
                if len(known) > KNOWN_EVENTS:
                    known.popitem(last=False)
            else:
                waiting.append(event)
        return waiting


def of_queue(queue: Any) -> context:
    """The context of a pyopencl queue, made on first use."""
    found = _streams.get(queue.int_ptr)
    if found is not None:
        return found
    return _make(queue)


def ones_like_queue(queue: Any) -> Any:
    """A float32 array of one element holding 1, on `queue`'s context (the
    other operand of a copy made as a binary multiply by 1). Made once per
    queue, written through a queue of its own, so that it waits for none of
    the user's work and holds no event (an event would retain the queue)."""
    record = of_queue(queue)
    if record.ones is None:
        import numpy as np
        import pyopencl as cl
        import pyopencl.array as cla

        writer = cl.CommandQueue(record.cl_context, record.queue.device)
        ones = cla.to_device(writer, np.ones(1, np.float32)).with_queue(record.queue)
        del ones.events[:]  # the blocking write is done; its event names the writer
        record.ones = ones
    return record.ones


def _references(queue: Any) -> int:
    import pyopencl as cl

    return queue.get_info(cl.command_queue_info.REFERENCE_COUNT)


def _make(queue: Any) -> context:
    import pyopencl as cl

    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")
    handle = queue.int_ptr
    with _lock:
        found = _streams.get(handle)
        if found is not None:
            return found
        _sweep()
        cl_context, device = queue.context, queue.device
        key = (cl_context.int_ptr, device.int_ptr)
        engine = _engines.get(key)
        if engine is None:
            engine = _oi.make_engine(device, cl_context)
            _engines[key] = engine
        before = _references(queue)
        stream = _oi.make_stream(engine, queue)
        own = cl.CommandQueue.from_int_ptr(handle, retain=True)
        out_of_order = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        made = context(engine, stream, not (queue.properties & out_of_order), own,
                       _references(queue) - before, cl_context)
        while len(_streams) >= MAX_STREAMS:
            del _streams[next(iter(_streams))]
        _streams[handle] = made
        return made


def _sweep() -> None:
    """Drop the streams of queues only the cache still holds (lock held)."""
    for handle, found in list(_streams.items()):
        found.markers.clear()  # events may hold their queue
        found.known.clear()
        if _references(found.queue) <= found.own_references:
            del _streams[handle]


def sweep() -> int:
    """Drop the streams of queues nothing else holds; how many are left."""
    with _lock:
        _sweep()
        return len(_streams)


def clear() -> None:
    """Drop every stream (and so, once the primitive cache is empty too,
    every engine and the OpenCL objects they retain)."""
    with _lock:
        _streams.clear()
