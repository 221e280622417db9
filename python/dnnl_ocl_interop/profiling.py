"""A timeline of what ran: primitive and partition executes on profiling
queues, with their device times, as a summary table and a Chrome/Perfetto
trace.

::

    with dnnl.profiling.recorder() as rec:
        with dnnl.profiling.region("attention"):   # optional: your own labels
            ...                                   # executes on profiling queues
    rec.print_summary()
    rec.write_trace("trace.json")             # open in https://ui.perfetto.dev

A queue is a *profiling queue* when it was made with
``CL_QUEUE_PROFILING_ENABLE`` (``pyopencl.CommandQueue(context, device,
properties=cl.command_queue_properties.PROFILING_ENABLE)``, then
``dnnl.ocl_interop.make_stream``), or is the queue of
``dnnl.stream(engine, dnnl.stream.flags.profiling)``. oneDNN accepts only
in-order ones. While a recorder is active, every ``primitive.execute``,
``ocl_interop.execute``, ``compiled_partition.execute`` and
``graph.ocl_interop.execute`` on such a queue, from any thread, is recorded
(executes on other queues are counted in :attr:`recorder.unprofiled`).

How the times are known: the binding enqueues a marker before and after each
recorded execute on its queue, and reads oneDNN's per-kernel durations
(oneDNN's experimental profiling, which the bundled oneDNN has) of the
kernels the execute enqueued. The queue is in order, so the execute's kernels
ran after the first marker and before the second: the execute ends at the
second marker's start (to within the queue's latency between two commands)
and began its kernels' busy time earlier (exact when they ran back to back).
Details and costs: docs/profiling.md.
"""

from __future__ import annotations

import bisect
import json
import os
import statistics
import sys
import threading
import time
import weakref
from typing import IO, Any, NamedTuple, Optional, Union

from . import _core
from ._errors import invalid_argument

__all__ = ["execution", "recorder", "region"]


class execution(NamedTuple):
    """One recorded execute. Times are in nanoseconds: host times on the
    host's monotonic clock (``time.monotonic_ns()``), device times on the
    device's profiling clock (OpenCL's ``CL_PROFILING_COMMAND_*``)."""

    kind: str                       #: "primitive" or "partition"
    name: str                       #: the primitive kind ("matmul", ...) or the partition's label
    implementation: str             #: oneDNN's implementation ("" for partitions: no query)
    shapes: str                     #: "src f32 2x3, weights f32 3x4, dst f32 2x4", ...
    queue: int                      #: the OpenCL queue (cl_command_queue as an int)
    device: str                     #: the device's name
    thread: int                     #: the host thread (``threading.get_ident()``)
    host_start_ns: int              #: when the execute call began submitting
    host_end_ns: int                #: when it returned
    device_start_ns: Optional[int]  #: see the module docstring; None if unknown
    device_end_ns: Optional[int]    #: the second marker's start; None if unknown
    kernel_ns: Optional[tuple[int, ...]]  #: oneDNN's per-kernel durations; None if unknown
    device_handle: int = 0          #: the OpenCL device (cl_device_id as an int)
    region: str = ""                #: the innermost :class:`region` the execute was submitted in ("outer/inner")

    @property
    def device_ns(self) -> Optional[int]:
        """The execute's device time: the sum of its kernels' durations (or,
        without them, the span between the markers)."""
        if self.kernel_ns is not None:
            return sum(self.kernel_ns)
        if self.device_start_ns is None or self.device_end_ns is None:
            return None
        return self.device_end_ns - self.device_start_ns


def _execution(raw: tuple) -> execution:
    kind, name, impl, shapes, (queue, device, device_name), thread, h0, h1, window, kernels = raw
    start = end = None
    if window is not None:
        first_marker_end, last_marker_start = window
        end = last_marker_start
        start = first_marker_end
        if kernels is not None:
            start = max(first_marker_end, last_marker_start - sum(kernels))
    return execution(kind, name, impl, shapes, queue, device_name, thread, h0, h1, start, end,
                     None if kernels is None else tuple(kernels), device)


def _abandoned() -> None:
    """A recorder dropped while recording: stop oneDNN's recording (see
    :class:`recorder`) and forget it as the active one."""
    global _active
    with _regions_lock:
        if _active is not None and _active() is None:
            _active = None
    _core._profiling_abandon()


# The regions open now, in every thread: {id(region): (thread, path, start ns)}.
_open_regions: dict[int, tuple[int, str, int]] = {}
_regions_lock = threading.Lock()
_thread_paths = threading.local()  # .stack: the paths of the thread's open regions
# The recorder recording, if any (weakly: a recorder dropped while recording
# must be collected, which stops its recording).
_active: Optional["weakref.ref[recorder]"] = None


class region:
    """A named region of the program, as PyTorch's ``record_function``: the
    executes a thread submits inside ``with dnnl.profiling.region(name):``
    carry the name in :attr:`execution.region` (regions nest: an execute in
    ``region("block")`` inside ``region("layer 3")`` is in ``"layer 3/block"``),
    the summary groups its rows by region and the trace shows it. A region
    labels the executes of the thread that entered it only. Outside a
    recording it costs a lock and a clock read, and keeps nothing."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if not name or "/" in name:
            raise invalid_argument(f"a region's name must be non-empty and without '/' (which joins "
                                   f"nested regions), not {name!r}")
        self.name = name
        self._path = ""

    def __enter__(self) -> "region":
        stack = getattr(_thread_paths, "stack", None)
        if stack is None:
            stack = _thread_paths.stack = []
        self._path = f"{stack[-1]}/{self.name}" if stack else self.name
        stack.append(self._path)
        with _regions_lock:
            _open_regions[id(self)] = (threading.get_ident(), self._path, time.monotonic_ns())
        return self

    def __exit__(self, *exc_info: Any) -> None:
        end = time.monotonic_ns()
        _thread_paths.stack.pop()
        with _regions_lock:
            thread, path, start = _open_regions.pop(id(self))
            active = _active() if _active is not None else None
            if active is not None:
                active._regions.append((thread, path, start, end))


def _labelled(executions: list["execution"], regions: list[tuple[int, str, int, int]]) -> list["execution"]:
    """`executions` with each one's innermost region: the latest-starting
    region of its thread whose span holds the execute's submission (regions
    of one thread nest, so that is the innermost)."""
    by_thread: dict[int, list[tuple[int, int, str]]] = {}
    for thread, path, start, end in regions:
        by_thread.setdefault(thread, []).append((start, end, path))
    for spans in by_thread.values():
        spans.sort()
    labelled = []
    for e in executions:
        spans = by_thread.get(e.thread, [])
        i = bisect.bisect_right(spans, (e.host_start_ns, float("inf"), "")) - 1
        while i >= 0 and spans[i][1] < e.host_start_ns:  # ended before: an enclosing one may not have
            i -= 1
        label = spans[i][2] if i >= 0 else ""
        labelled.append(e._replace(region=label) if label else e)
    return labelled


class recorder:
    """Records the executes on profiling queues between :meth:`start` and
    :meth:`stop` (or in a ``with`` block), from every thread. One recorder
    records at a time in a process (another's :meth:`start` raises
    ``dnnl.invalid_arguments``).

    At most `max_executes` executes are kept per recording (the rest are
    counted in :attr:`dropped`), each a few hundred bytes and, until
    :meth:`stop`, two OpenCL marker events. :meth:`stop` waits for the
    recorded queues, reads the device times and fills :attr:`executions`.

    When no recorder is active an execute pays one test of a flag.

    A recorder dropped while recording (garbage-collected without
    :meth:`stop`, say after an exception, or still recording at interpreter
    exit) stops the recording and discards its records, so that the process
    does not stay recording and the next recorder can start.
    """

    def __init__(self, max_executes: int = 100_000) -> None:
        if isinstance(max_executes, bool) or not isinstance(max_executes, int):
            raise TypeError(f"max_executes must be an int, not {type(max_executes).__name__}")
        if not 0 < max_executes <= sys.maxsize:
            raise invalid_argument(f"max_executes must be positive and at most sys.maxsize, "
                                   f"not {max_executes}")
        self.max_executes = max_executes
        #: The recorded executes, in the order they were submitted (per queue).
        self.executions: list[execution] = []
        #: Executes on profiling queues not kept (beyond `max_executes`).
        self.dropped = 0
        #: Executes on queues without profiling (or out of order): not timed.
        self.unprofiled = 0
        self._recording = False
        # The regions closed while recording: (thread, path, start ns, end ns).
        self._regions: list[tuple[int, str, int, int]] = []
        # While recording: stops the recording if this recorder is dropped
        # without stop() (without waiting for executes in flight: the
        # collector may run it inside one).
        self._abandon: Optional[weakref.finalize] = None

    # ------------------------------------------------------------ recording

    def start(self) -> "recorder":
        """Starts recording (forgetting a previous recording's executes)."""
        global _active
        _core._profiling_start(self.max_executes)
        self._recording = True
        self._abandon = weakref.finalize(self, _abandoned)
        self.executions, self.dropped, self.unprofiled = [], 0, 0
        self._regions = []
        with _regions_lock:
            _active = weakref.ref(self)
        return self

    def stop(self) -> "recorder":
        """Stops recording: waits for the recorded queues (GIL released) and
        reads the times."""
        if not self._recording:
            raise invalid_argument("this recorder is not recording")
        self._recording = False
        if self._abandon is not None:
            self._abandon.detach()  # a later drop must not stop another recorder's recording
            self._abandon = None
        global _active
        raw, self.dropped, self.unprofiled = _core._profiling_stop()
        now = time.monotonic_ns()
        with _regions_lock:
            if _active is not None and _active() is self:
                _active = None
            regions = self._regions + [(t, path, start, now) for t, path, start in _open_regions.values()]
        self.executions = _labelled([_execution(r) for r in raw], regions)
        return self

    @property
    def recording(self) -> bool:
        """Whether this recorder is recording."""
        return self._recording

    def __enter__(self) -> "recorder":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        if self._recording:
            self.stop()

    # -------------------------------------------------------------- summary

    def summary(self) -> str:
        """A table of the recorded executes grouped by what ran (region, if
        any execute was in one, kind, name, implementation, shapes), the most
        device time first: calls, total, median, mean, min and max device
        time in µs, and the share of the total. The median is the row's
        typical execute (one slow execute moves the total, the mean and the
        share, not the median)."""
        groups: dict[tuple[str, str, str, str, str], list[int]] = {}
        untimed = 0
        for e in self.executions:
            t = e.device_ns
            if t is None:
                untimed += 1
                continue
            groups.setdefault((e.region, e.kind, e.name, e.implementation, e.shapes), []).append(t)
        total = sum(sum(v) for v in groups.values())
        queues = {e.queue for e in self.executions}
        with_regions = any(key[0] for key in groups)
        rows = [(("region",) if with_regions else ()) + (
            "what", "implementation", "shapes", "calls", "total µs", "median µs", "mean µs", "min µs",
            "max µs", "share")]
        for (label, _kind, name, impl, shapes), times in sorted(
                groups.items(), key=lambda item: (-sum(item[1]), item[0])):
            rows.append(((label or "-",) if with_regions else ()) + (
                name, impl or "-", shapes, str(len(times)), f"{sum(times) / 1e3:.1f}",
                f"{statistics.median(times) / 1e3:.1f}", f"{sum(times) / len(times) / 1e3:.1f}",
                f"{min(times) / 1e3:.1f}", f"{max(times) / 1e3:.1f}",
                f"{100.0 * sum(times) / total:.1f} %" if total else "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        numeric = range(len(widths) - 7, len(widths))
        lines = [f"dnnl.profiling: {len(self.executions)} executes on {len(queues)} "
                 f"queue{'s' if len(queues) != 1 else ''}, {total / 1e3:.1f} µs of device time"]
        for i, row in enumerate(rows):
            lines.append("  ".join(cell.rjust(widths[j]) if j in numeric else cell.ljust(widths[j])
                                   for j, cell in enumerate(row)).rstrip())
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        notes = []
        if untimed:
            notes.append(f"{untimed} executes without device times")
        if self.dropped:
            notes.append(f"{self.dropped} executes beyond max_executes={self.max_executes} "
                         "not recorded")
        if self.unprofiled:
            notes.append(f"{self.unprofiled} executes on queues without profiling not timed")
        if notes:
            lines.append("(" + "; ".join(notes) + ")")
        return "\n".join(lines)

    def print_summary(self, file: Optional[IO[str]] = None) -> None:
        """Prints :meth:`summary` (to `file`, or standard output)."""
        print(self.summary(), file=file or sys.stdout)

    # ---------------------------------------------------------------- trace

    def trace(self) -> dict[str, Any]:
        """The recording as a Chrome trace (the Trace Event Format, which
        Perfetto's UI and ``chrome://tracing`` open): one process per device
        (two devices of one name are told apart by their handles), one
        thread per queue, one complete (``"X"``) event per timed execute,
        ``ts`` and ``dur`` in µs from the device's first recorded time."""
        devices: dict[int, int] = {}
        queues: dict[tuple[int, int], int] = {}
        events: list[dict[str, Any]] = []
        origin: dict[int, int] = {}
        names: dict[str, set[int]] = {}
        for e in self.executions:
            names.setdefault(e.device, set()).add(e.device_handle)
            if e.device_start_ns is not None:
                origin[e.device_handle] = min(origin.get(e.device_handle, e.device_start_ns),
                                              e.device_start_ns)
        for e in self.executions:
            if e.device_handle not in devices:
                pid = devices[e.device_handle] = len(devices) + 1
                label = (e.device if len(names[e.device]) == 1
                         else f"{e.device} 0x{e.device_handle:x}")
                events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                               "args": {"name": f"{label} (device clock)"}})
            pid = devices[e.device_handle]
            if (pid, e.queue) not in queues:
                tid = queues[(pid, e.queue)] = sum(1 for p, _ in queues if p == pid) + 1
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                               "args": {"name": f"queue 0x{e.queue:x}"}})
            if e.device_start_ns is None or e.device_end_ns is None:
                continue
            args: dict[str, Any] = {"kind": e.kind, "implementation": e.implementation,
                                    "shapes": e.shapes, "host_thread": e.thread,
                                    "host_submit_us": (e.host_end_ns - e.host_start_ns) / 1e3}
            if e.region:
                args["region"] = e.region
            if e.kernel_ns is not None:
                args["kernels_us"] = [k / 1e3 for k in e.kernel_ns]
            events.append({"ph": "X", "name": e.name if not e.implementation
                           else f"{e.name} {e.implementation}",
                           "cat": e.kind, "pid": pid, "tid": queues[(pid, e.queue)],
                           "ts": (e.device_start_ns - origin[e.device_handle]) / 1e3,
                           "dur": (e.device_end_ns - e.device_start_ns) / 1e3, "args": args})
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"producer": f"dnnl_ocl_interop {_core.__version__} dnnl.profiling",
                              "executes": len(self.executions), "dropped": self.dropped,
                              "unprofiled": self.unprofiled}}

    def write_trace(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes :meth:`trace` as JSON to `path`."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            json.dump(self.trace(), f)

    def __repr__(self) -> str:
        state = "recording" if self._recording else f"{len(self.executions)} executes"
        return f"<dnnl.profiling.recorder: {state}>"
