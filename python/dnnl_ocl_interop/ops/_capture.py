"""Capture and replay of ``dnnl.ops`` calls: :func:`capture` runs a function
of arrays once, recording every primitive its ops calls launch, and returns
a :class:`program` that launches them all again, in order, in one call from
C++ (cpp/arrays/replays).

What a capture decides (here, once): which array each argument of each
launch is. An array the function was given is an *input* (a replay takes
new ones of the same shape, strides, dtype and sub-memory offset, on the
same OpenCL context); an array made by a launch inside the function is a
*result*; any other array a launch reads (weights, a bias, a table) is
*captured by reference*: the program holds it, and every replay reads what
it holds then (after its pending events). The planning, the cache lookups
and the remedies for known problems happen at the capture, as in an eager
call; what the function does besides ops calls (Python control flow,
pyopencl operations, host reads) runs once, at the capture, and is not
replayed.

The results are static, as CUDA Graphs' outputs are: on each queue a
program replays on it keeps one array per result (on the capture's queue,
the arrays the capture made; on another queue of the same context, new ones
made at its first replay there), and every replay on that queue writes them
and returns the same output arrays, with the last launch's event. Measured,
not chosen by taste: a new result array and its memory cost about 2 µs a
replay (docs/ops.md, "Capture and replay"), more than a whole replayed
network's budget over C++. So an output is valid until the next replay on
its queue; copy it (``ops.copy``) to keep it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _array_memory, _core
from .._errors import invalid_argument
from . import _context, _run
from ._operands import check_array, element_offset

__all__ = ["capture", "program"]

_arrays = _core._arrays


class program(_arrays.replay_program):
    """A sequence of ``dnnl.ops`` launches captured by :func:`capture`;
    ``program(*inputs)`` replays it on new inputs and returns the outputs
    (one array, or a tuple when the function returned a tuple or list).

    A replay runs on the first input's queue, checks every input against the
    capture's (shape, strides, dtype, sub-memory offset, OpenCL context:
    ``TypeError`` or ``ValueError`` naming the input otherwise), waits on the
    device for the inputs' and the captured arrays' pending events, launches
    every primitive in order, and gives the outputs the last one's event;
    the host does not wait. Any number of threads may replay one program at
    once, each on its own queue (each queue has its own results); replays
    on one queue write the same outputs.
    """

    def __init__(self, launches: List[Tuple[Any, List[int], int]], input_facts: List[Any],
                 slots: int, constants: List[int], outputs: List[int], single: bool,
                 captured: List[Any], queue: Any, engine: Any, only_here: Optional[str],
                 names: List[str]) -> None:
        super().__init__(launches, len(input_facts), input_facts, slots, constants, outputs,
                         single, _refuse, _prepare)
        self._input_facts = input_facts
        self._constants = constants
        self._captured = captured  # per slot on the capture's queue (None for inputs)
        self._queue_handle = queue.int_ptr
        self._engine = engine
        self._only_here = only_here  # why it replays on the capture's queue only, or None
        self._names = names
        self._steps = len(launches)

    @property
    def steps(self) -> int:
        """How many primitives a replay launches."""
        return self._steps

    @property
    def captured_by_reference(self) -> Tuple[Any, ...]:
        """The arrays the program reads as they are at each replay (neither
        inputs nor made by it); it holds them."""
        return tuple(self._captured[slot] for slot in self._constants)

    def queues(self) -> int:
        """How many queues the program keeps results on (one per queue it
        replayed on)."""
        return self._queues()

    def release(self) -> None:
        """Forget the results kept for every queue (the next replay on a
        queue makes them again; on the capture's queue, the capture's
        arrays are kept by the program until it is dropped)."""
        self._release()

    def __repr__(self) -> str:
        inputs = ", ".join(f"{name}: {facts[2]}{list(facts[0])}"
                           for name, facts in zip(self._names, self._input_facts))
        return f"<dnnl.ops.program ({inputs}): {self._steps} launches>"


def _name(p: program, index: int) -> str:
    return f"inputs[{index}] ({p._names[index]})" if index < len(p._names) else f"inputs[{index}]"


def _refuse(p: program, reason: str, index: int, array: Any) -> None:
    """Raise the error of a replay's input the compiled part refused."""
    if reason == "count":
        raise TypeError(f"this program takes {len(p._names)} inputs (as captured: "
                        f"{', '.join(p._names)}), not {index}")
    name = _name(p, index)
    if reason == "type":
        raise TypeError(f"{name} must be a pyopencl.array.Array, not {type(array).__name__}")
    if reason == "layout":
        shape, strides, dtype, offset = p._input_facts[index]
        given = (tuple(array.shape), tuple(array.strides), array.dtype,
                 element_offset(array) if array.offset else 0)
        what = [f"{label} {g} where the capture had {c}"
                for label, g, c in zip(("shape", "strides", "dtype", "sub-memory offset"), given,
                                       (shape, strides, dtype, offset)) if g != c]
        raise invalid_argument(f"{name}: {'; '.join(what)} (capture again for other layouts)")
    if reason == "queue":
        raise invalid_argument(f"{name} has no queue: give it one (array.with_queue(queue)); "
                               "the program replays on the first input's queue")
    if reason == "context":
        raise invalid_argument(f"{name} belongs to another OpenCL context than {_name(p, 0)} "
                               "(the program replays on the first input's queue)")
    if reason == "aliases_input":
        raise invalid_argument(f"{name} shares storage with an earlier input, and the program "
                               "writes into an input (out=): give inputs storage of their own")
    if reason == "aliases":
        raise invalid_argument(f"{name} shares storage with a result this program keeps on that "
                               "queue (an output of an earlier replay?): the replay would write it "
                               "while reading it; give a copy (ops.copy)")
    raise invalid_argument(f"{name}: {reason}")


def _prepare(p: program, queue: Any) -> Tuple[Any, List[Any]]:
    """(ops context, the arrays of every slot) for a queue the program has
    no results on yet: the capture's own on its queue, new results on
    another queue of its context and device."""
    ctx = _context.of_queue(queue)
    if ctx.engine is not p._engine:
        raise invalid_argument(f"{_name(p, 0)} is on a queue of another OpenCL context or device "
                               "than the capture's: capture again there")
    if queue.int_ptr == p._queue_handle:
        return ctx, list(p._captured)
    if p._only_here is not None:
        raise invalid_argument(f"this program replays only on the capture's queue: {p._only_here}")
    constants = set(p._constants)
    arrays: List[Any] = []
    for slot, array in enumerate(p._captured):
        if array is None or slot in constants:
            arrays.append(array)
        else:
            arrays.append(_run.new_array(queue, ctx.cl_context, tuple(array.shape), array.dtype,
                                         array.allocator))
    return ctx, arrays


def _input_names(function: Callable[..., Any], count: int) -> List[str]:
    """The function's parameter names for its inputs, where it has them."""
    try:
        parameters = [p.name for p in inspect.signature(function).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    return [parameters[i] if i < len(parameters) else f"#{i}" for i in range(count)]


def capture(function: Callable[..., Any], *inputs: Any) -> program:
    """Run ``function(*inputs)`` once and capture the ``dnnl.ops`` calls it
    makes into a :class:`program` that replays them on new inputs in one
    call (docs/ops.md, "Capture and replay").

    ``inputs`` are pyopencl arrays with queues, all different objects; the
    function returns an array or a tuple or list of arrays, each made by an
    ops call inside it. Arrays the calls read that are not inputs are
    captured by reference. A function that makes no ops call, returns an
    array no ops call made, or is called inside another capture is refused
    (``ValueError``; ``RuntimeError`` for the nesting).
    """
    if not callable(function):
        raise TypeError(f"function must be callable, not {type(function).__name__}")
    if not inputs:
        raise TypeError("capture needs the function's inputs: example arrays of the shapes, "
                        "strides and dtypes the replays will take")
    names = _input_names(function, len(inputs))
    for i, array in enumerate(inputs):
        check_array(array, f"inputs[{i}] ({names[i]})")
        if array.queue is None:
            raise invalid_argument(f"inputs[{i}] ({names[i]}) has no queue: give it one "
                                   "(array.with_queue(queue))")
        for j in range(i):
            if inputs[j] is array:
                raise invalid_argument(f"inputs[{i}] ({names[i]}) is the same array as inputs[{j}] "
                                       f"({names[j]}): give each input once")
    if _run.recording.recorder is not None:
        raise RuntimeError("ops.capture was called inside another capture")
    recorded: List[Tuple[Any, List[Any], Any]] = []

    def record(launch: Any, arrays: List[Any], result: Any) -> None:
        recorded.append((launch, list(arrays), result))

    try:
        _run.recording.recorder = record
        _arrays.set_capturing(True)
        returned = function(*inputs)
    finally:
        _arrays.set_capturing(False)
        _run.recording.recorder = None
    if not recorded:
        raise invalid_argument("the function made no dnnl.ops call: nothing to capture")
    single = not isinstance(returned, (tuple, list))
    returned_arrays = [returned] if single else list(returned)
    if not returned_arrays:
        raise invalid_argument("the function returned no array")
    return _program_of(recorded, inputs, names, returned_arrays, single)


def _program_of(recorded: Sequence[Tuple[Any, List[Any], Any]], inputs: Sequence[Any],
                names: List[str], returned: List[Any], single: bool) -> program:
    """The program of the launches a capture recorded: every array they
    name given its slot (inputs first, then captured ones and results in
    the order the launches met them)."""
    slots: Dict[int, int] = {id(a): i for i, a in enumerate(inputs)}
    captured: List[Any] = [None] * len(inputs)
    constants: List[int] = []
    results: List[int] = []
    launches: List[Tuple[Any, List[int], int]] = []
    only_here: Optional[str] = None

    def slot_of(array: Any) -> int:
        found = slots.get(id(array))
        if found is None:
            found = slots[id(array)] = len(captured)
            captured.append(array)
            constants.append(found)
        return found

    for k, (launch, arrays, result) in enumerate(recorded):
        call_slots = [slot_of(a) for a in arrays]
        if launch.out >= 0:
            dst = call_slots[launch.out]
            if dst in constants and only_here is None:
                only_here = (f"launch {k} writes into an array captured by reference (out=), which "
                             "queues replaying at once would share")
        else:
            dst = slots[id(result)] = len(captured)
            captured.append(result)
            results.append(dst)
        launches.append((launch, [call_slots[i] for i in launch.indexes], dst))
    input_roots = {_array_memory.storage_of(a)[0]: i for i, a in enumerate(inputs)}
    for slot in constants:
        index = input_roots.get(_array_memory.storage_of(captured[slot])[0])
        if index is not None:
            raise invalid_argument(f"a call reads a view of inputs[{index}] ({names[index]}) "
                                   "(a reshape, a slice, another queue's view): a replay would read "
                                   "the capture's input through it; make the view the input")
    result_roots = {_array_memory.storage_of(captured[s])[0] for s in results}
    for slot in constants:
        if _array_memory.storage_of(captured[slot])[0] in result_roots and only_here is None:
            only_here = ("a launch reads a view of a result made inside (a reshape or a slice), "
                         "which stays on the capture's results")
    outputs: List[int] = []
    for i, array in enumerate(returned):
        found = slots.get(id(array))
        if found is None or found < len(inputs) or (
                found in constants and _array_memory.storage_of(array)[0] not in result_roots):
            raise invalid_argument(f"the function's output {i} was not made by a dnnl.ops call "
                                   "inside it (an input, an array captured by reference, or "
                                   "another array): return ops.copy(it) to replay a copy")
        outputs.append(found)
    input_facts = [(tuple(a.shape), tuple(a.strides), a.dtype,
                    element_offset(a) if a.offset else 0) for a in inputs]
    engine = _context.of_queue(inputs[0].queue).engine
    for launch, _, _ in launches:
        if launch.step.engine is not engine:  # (another context's inputs refused the calls)
            raise invalid_argument("the captured launches ran on another OpenCL context or device "
                                   "than the first input's queue")
    return program(launches, input_facts, len(captured), constants, outputs, single, captured,
                   inputs[0].queue, engine, only_here, names)
