"""A timeline of what ran: primitive and partition executes on profiling
queues, with their device times, as a summary table and a Chrome/Perfetto
trace.

::

    with dnnl.profiling.recorder() as rec:
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

import json
import os
import sys
import weakref
from typing import IO, Any, NamedTuple, Optional, Union

from . import _core
from ._errors import invalid_argument

__all__ = ["execution", "recorder"]


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
        # While recording: stops the recording if this recorder is dropped
        # without stop() (without waiting for executes in flight: the
        # collector may run it inside one).
        self._abandon: Optional[weakref.finalize] = None

    # ------------------------------------------------------------ recording

    def start(self) -> "recorder":
        """Starts recording (forgetting a previous recording's executes)."""
        _core._profiling_start(self.max_executes)
        self._recording = True
        self._abandon = weakref.finalize(self, _core._profiling_abandon)
        self.executions, self.dropped, self.unprofiled = [], 0, 0
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
        raw, self.dropped, self.unprofiled = _core._profiling_stop()
        self.executions = [_execution(r) for r in raw]
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
        """A table of the recorded executes grouped by what ran (kind, name,
        implementation, shapes), the most device time first: calls, total,
        mean, min and max device time in µs, and the share of the total."""
        groups: dict[tuple[str, str, str, str], list[int]] = {}
        untimed = 0
        for e in self.executions:
            t = e.device_ns
            if t is None:
                untimed += 1
                continue
            groups.setdefault((e.kind, e.name, e.implementation, e.shapes), []).append(t)
        total = sum(sum(v) for v in groups.values())
        queues = {e.queue for e in self.executions}
        rows = [("what", "implementation", "shapes", "calls", "total µs", "mean µs", "min µs",
                 "max µs", "share")]
        for (_kind, name, impl, shapes), times in sorted(
                groups.items(), key=lambda item: (-sum(item[1]), item[0])):
            rows.append((name, impl or "-", shapes, str(len(times)), f"{sum(times) / 1e3:.1f}",
                         f"{sum(times) / len(times) / 1e3:.1f}", f"{min(times) / 1e3:.1f}",
                         f"{max(times) / 1e3:.1f}",
                         f"{100.0 * sum(times) / total:.1f} %" if total else "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        numeric = range(3, len(widths))
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
