"""How one ``dnnl.ops`` plan runs: the cache lookup, the remedies for
known problems, the launch.

A planner describes its call as a plan (``_plans.plan``); :func:`run`

1. finds the stream of the queue the result lives on (``out``'s, else the
   first operand's);
2. looks the primitive up in the cache by everything that selects it, and on
   a miss makes the descriptors, the primitive descriptor and the primitive
   (the entry's *step*: the primitive and how its arguments are taken from
   arrays, for the compiled part);
3. where the binding refuses the descriptor for a known problem, takes the
   remedy the registry's refusal names (:func:`_remedy`: copies, or the
   plan's fallback), cached with the entry;
4. launches the step (``_core._arrays``, cpp/arrays/launches): memory on
   every array (``_array_memory``, with the descriptor the primitive was
   made for), the result allocated (on the first operand's queue, with its
   allocator) unless ``out`` is given, the execute after every operand's and
   ``out``'s pending events, and the result given the primitive's event (a
   marker's on an in-order queue, where oneDNN returns none), so that later
   work waits on the device, not the host.

``_call`` binds a call of a known signature to its entry's step, so that the
next calls of that signature run in the compiled part alone.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import _array_memory, _core, arrays
from .._errors import arguments_of, invalid_argument, known_problem_of
from . import _cache, _context, _movement, _operands
from ._operands import dense_strides, naming, operand, prefix
from ._plans import describe, is_dense, plan
from ._post_ops import post_ops_attr, scalar_memory, scales_attr

_desc = _core.memory.desc
_arrays = _core._arrays
_view_extent = _array_memory.view_extent  # bytes from a view's first element to the end of its last
_same_context = _array_memory.same_context


class _entry:
    """A cached primitive and what a call needs to run it: its step (for
    the compiled part) and the facts of its descriptors. It holds the
    engine's Python object too: keys name the engine by id(), and a
    primitive keeps only oneDNN's engine, not that object."""

    __slots__ = ("engine", "primitive", "pd", "facts", "memory_keys", "dst_facts", "key",
                 "in_place", "step", "use")

    def __init__(self, engine: Any, primitive: Any, pd: Any, p: plan, descs: List[Any],
                 dst_desc: Any, key: Any) -> None:
        self.key = key  # its key in the cache (key[0]: the operation)
        self.in_place = p.in_place  # (the key's operation decides it)
        self.engine = engine
        self.primitive = primitive
        self.pd = pd
        self.facts = [_array_memory.desc_facts(d) for d in descs]  # as_memory's checks, once
        # the keys of the operands' memories kept on their arrays
        self.memory_keys = [_array_memory.memory_key(engine, f) for f in self.facts]
        self.dst_facts = _array_memory.desc_facts(dst_desc)
        self.use = _arrays.use()  # when it was last used, whether it left the cache
        dtype = arrays.numpy_dtype(p.dst_type)
        item = dtype.itemsize
        self.step = _arrays.step(
            primitive, engine,
            [(op.arg, op.name, token, facts)
             for op, token, facts in zip(p.operands, self.memory_keys, self.facts)],
            (p.dst_arg, _array_memory.memory_key(engine, self.dst_facts), self.dst_facts,
             p.dst_dims, tuple(s * item for s in dense_strides(p.dst_dims)), dtype),
            list(p.in_place), p.op, self.use)


def _dst_strides(p: plan) -> Tuple[int, ...]:
    if p.out is None or p.out_strides is None:
        return dense_strides(p.dst_dims)
    return p.out_strides


def _build(p: plan, ctx: Any, key: Any) -> "_entry":
    """Descriptors, primitive descriptor and primitive of a plan (a miss)."""
    pd, descs, dst_desc = primitive_desc_of(p, ctx.engine)
    primitive = _cache.create(p.family, pd)
    return _entry(ctx.engine, primitive, pd, p, descs, dst_desc, key)


def primitive_desc_of(p: plan, engine: Any) -> Tuple[Any, List[Any], Any]:
    """(primitive descriptor, operand descriptors, destination descriptor)
    of a plan: no primitive, no cache (ops.prepare_weights asks only which
    layout oneDNN chose)."""
    descs = [op.make_desc() for op in p.operands]
    dst_desc = p.dst_desc
    if dst_desc is None:
        with naming("out"):
            if p.out is not None and p.out_offset:
                dst_desc = _array_memory.at_element_offset(p.dst_dims, p.dst_type,
                                                           _dst_strides(p), p.out_offset)
            else:
                dst_desc = _desc(list(p.dst_dims), p.dst_type, list(_dst_strides(p)))
    attr = post_ops_attr(p.post_ops, [d for op, d in zip(p.operands, descs)
                                      if op.name.startswith("post_ops[")])
    scales_attr(attr, p.scales)
    try:
        return p.make_pd(engine, descs, dst_desc, attr), descs, dst_desc
    except _core.error as e:
        prefix(e, f"ops.{p.op} ({describe(p)}): {_mixed_float64(p)}")
        raise


def _mixed_float64(p: plan) -> str:
    """What to do about a refused call mixing float64 with other
    floating-point operands ("" for other calls): oneDNN takes f64 only with
    f64 (its descriptor checks refuse the mixture, as an f64 × f32 matmul's
    "invalid datatype for accumulation")."""
    floats = {op.data_type.name for op in p.operands} & {"f64", "f32", "f16", "bf16"}
    if "f64" not in floats or len(floats) == 1:
        return ""
    return (f"float64 mixed with other floating-point operands ({', '.join(sorted(floats))}), which "
            "oneDNN refuses: cast them to one type first (array.astype(numpy.float32), or "
            "numpy.float64 for all): ")


def cache_key(p: plan, ctx: Any) -> Any:
    """Everything that selects the primitive of a plan. A dense ``out``
    shares its key with a new (dense) result."""
    return (p.op, id(ctx.engine), p.params, tuple([op.key for op in p.operands]),
            p.dst_dims, p.dst_type._name_, p.out_strides, p.out_offset, p.post_ops, tuple(p.scales))


def queue_of(p: plan) -> Any:
    """The queue the call runs on: ``out``'s, else the first operand's."""
    holder = p.out if p.out is not None else p.queue_array
    if holder.queue is None:
        name = "out" if p.out is not None else p.operands[0].name
        raise invalid_argument(f"{name} has no queue: give it one (array.with_queue(queue))")
    return holder.queue


class _refused:
    """What the cache keeps for a plan whose descriptor the binding refused
    for a known problem: the refusal, raised again for later calls of the
    plan (which then take its remedy without asking oneDNN again)."""

    __slots__ = ("status", "message", "known_problem", "arguments", "use")

    def __init__(self, error: Any) -> None:
        self.use = _arrays.use()
        self.status = error.status
        self.message = error.args[0] if error.args else ""
        self.known_problem = known_problem_of(error)
        self.arguments = arguments_of(error)

    def error(self) -> Any:
        error: Any = _core._error(self.status, self.message.rsplit(" (status: ", 1)[0])
        error.known_problem, error.arguments = self.known_problem, self.arguments
        return error


def cached_entry(p: plan, queue: Any) -> Tuple[_entry, Any]:
    """The cache entry of a plan (made on a miss) and the queue's context.
    A plan the binding refused for a known problem raises that refusal again
    (it is cached too)."""
    ctx = _context.of_queue(queue)
    key = cache_key(p, ctx)
    entry = _cache.lookup(key)
    if entry is None:
        try:
            entry = _cache.insert(key, _build(p, ctx, key))
        except _core.unimplemented as refused:
            if known_problem_of(refused) is not None:
                _cache.insert(key, _refused(refused))
            raise
    if type(entry) is _refused:
        raise entry.error()
    return entry, ctx


def _copy(array: Any, out: Any = None) -> Any:
    """A dense copy of `array` (ops.copy's plan), or a copy into `out`."""
    return run(_movement.copy(array, out=out))


_copying = threading.local()  # the arrays _dense_copy is copying, per thread


def _dense_copy(op: operand) -> Any:
    """A new dense array of ``op.dims`` holding what the primitive would
    read through `op` (its dims and strides over its array: a transposed or
    broadcast view is copied as the primitive sees it); None while that
    array is being copied already (a copy's own remedy asking again)."""
    copying = _copying.__dict__.setdefault("arrays", set())
    if id(op.array) in copying:
        return None
    copying.add(id(op.array))
    try:
        return run(_movement.copy_as_seen(op))
    finally:
        copying.discard(id(op.array))


def _check_out_context(p: plan) -> None:
    """The call runs on out's context: an out on another context than the
    first operand's is refused naming out (the first operand's memory
    would be refused, naming it). Planned calls only: a bound call's
    signature holds every array's queue."""
    first, out = p.queue_array, p.out
    if out is None or out is first or _same_context(out.context, first.context):
        return
    name = next((op.name for op in p.operands if op.array is first), p.operands[0].name)
    raise invalid_argument(f"out belongs to another OpenCL context than {name} (the call runs "
                           "on out's queue)")


def _remedy(p: plan, refused: Any) -> Optional[Callable[[], Any]]:
    """How to run a plan whose descriptor the binding refused for a known
    problem (the registry's decision, cpp/common/known_problems.cpp: it
    refuses only where the problem applies to the implementation oneDNN
    chose): the plan's fallback for that problem; else a dense copy of the
    operand the refusal names, or, where it names the destination and
    ``out`` is strided, a dense result copied into ``out``. None when the
    refusal names nothing that a copy changes.

    Returns the call that runs the remedied plan (which may be refused
    again, for another argument, and remedied again)."""
    problem = known_problem_of(refused)
    if problem is None:
        # oneDNN offers no implementation for these layouts (GPU eltwise
        # takes one layout for source and destination, for one): dense
        # copies of every strided operand, and a dense result for a strided
        # out, as oneDNN's documentation advises (reorder the data)
        return _all_dense(p) if p.copy_remedies else None
    if p.fallback is not None and p.fallback[0] == problem:
        other = p.fallback[1]()
        return None if other is None else (lambda: run(other))
    if not p.copy_remedies:
        return None
    for arg in arguments_of(refused):
        if arg == p.dst_arg:
            if p.out is None or p.out_strides is None:
                continue  # a dense result already
            return _dense_result(p)
        for op in p.operands:
            if op.arg == arg and op.desc is None and (op.offset or not is_dense(op.dims, op.strides)):
                copied = _dense_copy(op)
                if copied is None:  # (asked again while copying it: no remedy)
                    return None
                op.array, op.offset = copied, 0
                op.strides = dense_strides(op.dims)
                op.rekey()
                return lambda: run(p)
    return None


def _all_dense(p: plan) -> Optional[Callable[[], Any]]:
    """The plan with dense copies of its strided operands and a dense result
    for a strided out (copied into it); None when all is dense already."""
    copied = False
    for op in p.operands:
        if op.desc is None and (op.offset or not is_dense(op.dims, op.strides)):
            array = _dense_copy(op)
            if array is None:
                return None
            op.array, op.strides, op.offset = array, dense_strides(op.dims), 0
            op.rekey()
            copied = True
    if p.out is not None and p.out_strides is not None:
        return _dense_result(p)
    return (lambda: run(p)) if copied else None


def _dense_result(p: plan) -> Callable[[], Any]:
    """The plan computing into a new dense result, then copied into its
    strided out (a sum post-op adding to a dense copy of what out holds)."""
    target = p.out
    p.out, p.queue_array, p.out_strides, p.out_offset = None, target, None, 0
    if any(item[0] == "sum" for item in p.post_ops):
        p.out = _copy(target)  # a sum post-op adds to what out holds
    return lambda: _copy(run(p), out=target)


def run(p: plan) -> Any:
    """Execute a plan; returns the result array (``out`` or a new one).
    Afterwards ``p.entry`` is the entry it ran on, or None when it ran
    through a remedy (other plans: copies, a fallback), which ``_call``
    does not bind."""
    p.entry = None
    _check_out_context(p)
    queue = queue_of(p)
    try:
        entry, ctx = cached_entry(p, queue)
    except _core.unimplemented as refused:
        remedied = _remedy(p, refused)
        if remedied is None:
            raise
        result = remedied()
        p.entry = None
        return result
    arrays_of_call = [op.array for op in p.operands]
    out = -1
    if p.out is not None:
        arrays_of_call.append(p.out)
        out = len(arrays_of_call) - 1
    holder = out
    if holder < 0:
        holder = next((i for i, a in enumerate(arrays_of_call) if a is p.queue_array), -1)
        if holder < 0:
            arrays_of_call.append(p.queue_array)
            holder = len(arrays_of_call) - 1
    launch = _arrays.bound_call(entry.step, range(len(p.operands)), out, holder,
                                scalars(entry, p))
    result = launch(arrays_of_call, ctx)
    p.entry = entry
    recorder = recording.recorder
    if recorder is not None:
        recorder(launch, arrays_of_call, result)
    return result


class _recording(threading.local):
    """Per thread: what records each launch :func:`run` makes (``_capture``),
    or None. Called as ``recorder(launch, arrays of the call, result)``."""

    recorder: Optional[Callable[[Any, List[Any], Any], None]] = None


recording = _recording()


def scalars(entry: _entry, p: plan) -> List[Tuple[int, Any]]:
    """The scale factors a plan gives as numbers, as (argument, memory)."""
    return [(arg, scalar_memory(entry.engine, value)) for arg, value in p.scalar_scales]


_fast_arrays = True  # pyopencl's internal fast constructor works (see new_array)


def new_array(queue: Any, cl_context: Any, shape: Tuple[int, ...], dtype: Any,
              allocator: Any) -> Any:
    """A new dense (C-order) pyopencl array: the result of a call.

    pyopencl's public constructor (``cla.empty``) spends ~12 µs in Python
    per array on the emulated device; the fast path pyopencl itself uses for
    views (``_fast=True``) ~1.3 µs. That path is pyopencl's private
    signature: if it is refused, ``cla.empty`` is used from then on.
    """
    global _fast_arrays
    if _operands._empty is None:
        _operands._load_pyopencl()
    if _fast_arrays:
        size = 1
        for n in shape:
            size *= n
        item = dtype.itemsize
        try:
            return _operands._Array(None, shape, dtype, allocator=allocator,
                                    strides=tuple(s * item for s in dense_strides(shape)),
                                    _fast=True, _size=size, _context=cl_context, _queue=queue)
        except TypeError:
            _fast_arrays = False
    return _operands._empty(queue, shape, dtype, allocator=allocator)


def memory_of(array: Any, name: str, engine: Any, facts: Any, token: int) -> Any:
    """The memory of an operand (kept on it, else made, with as_memory's
    checks), errors named: the launch asks for it on a miss."""
    try:
        return _array_memory.memory(array, engine, facts, token)
    except (TypeError, ValueError) as e:
        prefix(e, f"{name}: ")
        raise


def _overlap(op: str, in_place: Sequence[int], arg: int, name: str, array: Any, out: Any) -> None:
    """Refuse ``out`` sharing bytes with operand `array` (both of one root
    cl_mem, as the launch found) unless it is that operand exactly and the
    operation computes in place for that argument: oneDNN would write out
    while it still reads the operand. Bytes from the first element to the
    end of the last one (interleaved views of one buffer count as
    overlapping)."""
    root, origin = _array_memory.storage_of(array)
    out_root, out_origin = _array_memory.storage_of(out)
    if root != out_root:
        return
    start, out_start = origin + array.offset, out_origin + out.offset
    end = start + _view_extent(array.shape, array.strides, array.dtype.itemsize)
    out_end = out_start + _view_extent(out.shape, out.strides, out.dtype.itemsize)
    if start >= out_end or out_start >= end:
        return
    if arg in in_place:
        if (start == out_start and array.shape == out.shape and array.strides == out.strides
                and array.dtype == out.dtype):
            return
        hint = (f"ops.{op} writes in place only into {name} itself (the same view: offset, "
                "shape, strides and dtype)")
    else:
        hint = f"ops.{op} does not compute in place for {name}"
    raise invalid_argument(f"out overlaps {name}: out has bytes {out_start} to {out_end} of a "
                           f"buffer where {name} has bytes {start} to {end}, and {hint}: give "
                           "out storage of its own")


_arrays.set_helpers(memory_of, _overlap, new_array, _operands.element_offset,
                    _context._streams, _cache.bound)
