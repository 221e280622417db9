"""How one ``dnnl.ops`` call runs: the plan, the cache lookup, events.

Each public function describes its call as a :class:`plan` (operands with the
dims and strides oneDNN sees them with, the destination, parameters, a
function making the primitive descriptor) and hands it to :func:`run`, which

1. finds the stream of the queue the result lives on (``out``'s, else the
   first operand's);
2. looks the primitive up in the cache by everything that selects it, and on
   a miss makes the descriptors, the primitive descriptor and the primitive;
3. shares every array with oneDNN as memory (``dnnl.arrays.as_memory``, with
   the descriptor the primitive was made for), allocates the result (on the
   first operand's queue, with its allocator) unless ``out`` is given;
4. executes after every operand's and ``out``'s pending events, and gives the
   result the primitive's event (a marker's on an in-order queue, where
   oneDNN returns none), so that later work waits on the device, not the host.

A call whose arguments have the signature of an earlier call (:func:`call`)
skips steps 1-2: it is bound to that call's cache entry.
"""

from __future__ import annotations

import enum
import functools
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _core, arrays
from .._errors import arguments_of, invalid_argument, known_problem_of
from . import _cache, _context, _operands
from ._operands import (_STORAGE, check_array, dense_strides, element_strides, memory_of,
                        naming, new_array, operand, prefix, storage_of)
from ._post_ops import parse_post_ops, post_ops_attr, scale_operand, scales_attr, scalar_memory

_desc = _core.memory.desc
_execute = _core.ocl_interop.execute
_memory = arrays._memory  # as_memory's memory, with the descriptor's checks done once
_memory_on_new = arrays._memory_on_new  # as_memory on a result ops made
_view_extent = arrays._view_extent  # bytes from a view's first element to the end of its last
_same_context = arrays._same_context
_element_offset = arrays._element_offset

# -- a call ------------------------------------------------------------------------

class plan:
    """One call of an ops function, before it runs (see the module docstring).

    ``make_pd(engine, descs, dst_desc, attr)`` makes the primitive descriptor
    from the descriptors of ``operands[:n]`` (in order; post-op and scale
    operands follow, and are in `attr`) and the destination's.
    """

    __slots__ = ("op", "family", "params", "operands", "dst_dims", "dst_type", "dst_arg",
                 "out", "post_ops", "scales", "scalar_scales", "make_pd", "queue_array",
                 "dst_desc", "out_strides", "out_offset", "in_place", "fallback", "copy_remedies")

    def __init__(self, op: str, family: Any, params: Any, operands: List[operand],
                 dst_dims: Tuple[int, ...], dst_type: Any, out: Any,
                 make_pd: Callable[..., Any], post_ops: Any = None,
                 dst_arg: int = _core.ARG_DST, sized_by: str = "") -> None:
        self.op = op
        self.family = family
        self.params = params
        self.operands = operands
        self.dst_dims = tuple(dst_dims)
        self.dst_type = dst_type
        count = 1
        for n in self.dst_dims:
            count *= n
        if count * _core.memory.data_type_size(dst_type) > _operands.INT64_MAX:
            # (pybind would refuse the descriptor with a TypeError)
            raise invalid_argument(f"{sized_by or 'the result of ops.' + op}: the result would "
                                   f"have shape {self.dst_dims}, more than the 2**63 - 1 bytes "
                                   "oneDNN can address")
        self.dst_arg = dst_arg
        self.out = out
        self.make_pd = make_pd
        self.scales: List[Any] = []      # keys of scale_operand
        self.scalar_scales: List[Tuple[int, float]] = []  # (ARG_ATTR_SCALES | arg, number)
        self.post_ops: Tuple[Any, ...] = ()
        self.dst_desc: Any = None  # a fixed destination descriptor (prepared weights)
        self.queue_array: Any = operands[0].array  # the result lives on its queue
        # The arguments (ARG_SRC, ...) whose operand out= may be, the same view
        # (see _overlap): those oneDNN computes in place
        self.in_place: Tuple[int, ...] = ()
        # out's strides in elements; None for a new result or a dense out
        self.out_strides: Optional[Tuple[int, ...]] = None
        # out's sub-memory offset (arrays._element_offset): a view at an
        # element OpenCL starts no sub-buffer at
        self.out_offset = 0
        # (known problem id, a function giving another plan for the call or
        # None): run where the binding refuses oneDNN's descriptor for that
        # problem, instead of copying the arguments it names (see _remedy)
        self.fallback: Optional[Tuple[str, Callable[[], Optional["plan"]]]] = None
        # Whether a refusal may be met by copying operands or the destination
        # (not for reorders: a copy is a reorder, refused alike)
        self.copy_remedies = True
        if out is not None:
            check_array(out, "out")
            if tuple(out.shape) != self.dst_dims:
                raise invalid_argument(f"out has shape {tuple(out.shape)}, the result of {op} has "
                                 f"shape {self.dst_dims}")
            strides = _operands.row_major_ones(self.dst_dims, element_strides(out))
            self.out_offset = arrays._element_offset(out) if out.offset else 0
            if self.out_offset or not is_dense(self.dst_dims, strides):
                self.out_strides = strides
        if post_ops:
            self.post_ops, extra = parse_post_ops(post_ops, self.dst_dims, out is not None)
            self.operands = operands + extra

    def add_scale(self, value: Any, name: str, target_arg: int, mask: int = 0,
                  channels: int = 1) -> None:
        """Scale argument `target_arg` by a number or per-channel array."""
        if value is None:
            return
        key, op, number_value = scale_operand(value, name, target_arg, mask, channels)
        self.scales.append(key)
        if op is not None:
            self.operands.append(op)
        elif number_value is not None:
            self.scalar_scales.append((_core.ARG_ATTR_SCALES | target_arg, number_value))


class _entry:
    """A cached primitive and what a call needs to run it. It holds the
    engine's Python object too: keys name the engine by id(), and a
    primitive keeps only oneDNN's engine, not that object."""

    __slots__ = ("engine", "primitive", "pd", "facts", "memory_keys", "dst_facts", "dst_dtype",
                 "key", "in_place")

    def __init__(self, engine: Any, primitive: Any, pd: Any, descs: List[Any], dst_desc: Any,
                 dst_dtype: Any, key: Any, in_place: Tuple[int, ...] = ()) -> None:
        self.key = key  # its key in the cache (key[0]: the operation)
        self.in_place = in_place  # plan.in_place (the key's operation decides it)
        self.engine = engine
        self.primitive = primitive
        self.pd = pd
        self.facts = [arrays._desc_facts(d) for d in descs]  # as_memory's checks, once
        # the keys of the operands' memories kept on their arrays
        self.memory_keys = [arrays._memory_key(engine, f) for f in self.facts]
        self.dst_facts = arrays._desc_facts(dst_desc)
        self.dst_dtype = dst_dtype


def describe(p: plan) -> str:
    """The call's operands, for messages: ``a: f32[2, 3], b: f32[3, 4] -> f32[2, 4]``."""
    parts = [f"{op.name}: {op.data_type.name}{list(op.dims)}" for op in p.operands]
    return f"{', '.join(parts)} -> {p.dst_type.name}{list(p.dst_dims)}"


def _dst_strides(p: plan) -> Tuple[int, ...]:
    if p.out is None or p.out_strides is None:
        return dense_strides(p.dst_dims)
    return p.out_strides


def _build(p: plan, ctx: Any, key: Any) -> "_entry":
    """Descriptors, primitive descriptor and primitive of a plan (a miss)."""
    pd, descs, dst_desc = primitive_desc_of(p, ctx.engine)
    primitive = _cache.create(p.family, pd)
    return _entry(ctx.engine, primitive, pd, descs, dst_desc, arrays.numpy_dtype(p.dst_type), key,
                  p.in_place)


def primitive_desc_of(p: plan, engine: Any) -> Tuple[Any, List[Any], Any]:
    """(primitive descriptor, operand descriptors, destination descriptor)
    of a plan: no primitive, no cache (ops.prepare_weights asks only which
    layout oneDNN chose)."""
    descs = [op.make_desc() for op in p.operands]
    dst_desc = p.dst_desc
    if dst_desc is None:
        with naming("out"):
            if p.out is not None and p.out_offset:
                dst_desc = arrays._at_element_offset(p.dst_dims, p.dst_type, _dst_strides(p),
                                                     p.out_offset)
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

    __slots__ = ("status", "message", "known_problem", "arguments")

    def __init__(self, error: Any) -> None:
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
    """ops.copy (a module that imports this one)."""
    from ._movement import copy

    return copy(array, out=out)


def _dense_copy(op: operand) -> Any:
    """A new dense array of ``op.dims`` holding what the primitive would
    read through `op` (its dims and strides over its array: a transposed or
    broadcast view is copied as the primitive sees it); None while that
    array is being copied already (a copy's own remedy asking again)."""
    from ._movement import copy_as_seen

    return copy_as_seen(op)


def is_dense(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether strides (elements) are row-major for dims (size-1 dims aside)."""
    dense = dense_strides(dims)
    return strides == dense or all(n == 1 or s == d for n, s, d in zip(dims, strides, dense))


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


def run(p: plan, signed: Optional[Tuple[Any, List[Any]]] = None) -> Any:
    """Execute a plan; returns the result array (``out`` or a new one).
    `signed` is the call's (signature, arrays) from :func:`call`: the call
    is bound to its entry for the next calls of that signature."""
    if _operands._enqueue_marker is None:
        _operands._load_pyopencl()
    _check_out_context(p)
    queue = queue_of(p)
    try:
        entry, ctx = cached_entry(p, queue)
    except _core.unimplemented as refused:
        remedied = _remedy(p, refused)
        if remedied is None:
            raise
        return remedied()
    operands = [(op.arg, i, op.name, facts, key)
                for i, (op, facts, key) in enumerate(zip(p.operands, entry.facts, entry.memory_keys))]
    result = _launch(entry, ctx, queue, operands, [op.array for op in p.operands], p.out,
                     p.queue_array, p.dst_arg, p.dst_dims, p.scalar_scales)
    if signed is not None:
        binding = _bind(p, entry, signed[1])
        if binding is not None:
            _cache.bind(signed[0], binding)
    return result


def _launch(entry: _entry, ctx: Any, queue: Any, operands: Sequence[Tuple[int, int, str, Any, Any]],
            arrays: Sequence[Any], out: Any, first: Any, dst_arg: int,
            dst_dims: Tuple[int, ...], scalar_scales: Sequence[Tuple[int, float]]) -> Any:
    """Steps 3-4 of a call with its entry found: `operands` are (argument,
    index in `arrays`, name, descriptor facts, the key of its memory on
    its array); a new result (``out`` None) is made on `queue` with
    `first`'s allocator."""
    engine = ctx.engine
    args = {}
    deps: List[Any] = []
    # out= sharing a cl_mem with an operand: found by comparing roots
    # (storage_of, kept on each array and read inline here: every call with
    # out= pays two dict lookups per operand), checked by _overlap
    root = None if out is None else (out.__dict__.get(_STORAGE) or storage_of(out))[1]
    shared = None
    for arg, index, name, facts, key in operands:
        array = arrays[index]
        try:
            args[arg] = _memory(array, engine, facts, key)
            events = array.events
            if events:
                deps += events
        except (TypeError, ValueError) as e:  # as memory_of, inline: this runs every call
            prefix(e, f"{name}: ")
            raise
        if root is not None and (array.__dict__.get(_STORAGE) or storage_of(array))[1] == root:
            shared = [] if shared is None else shared
            shared.append((arg, name, array))
    if out is None:
        out = new_array(queue, ctx.cl_context, dst_dims, entry.dst_dtype, first.allocator)
        memory = _memory_on_new(out, engine, entry.dst_facts)
    else:
        memory, events = memory_of(out, "out", engine, entry.dst_facts)
        if events:
            deps += events
        if shared is not None:
            for arg, name, array in shared:
                _overlap(entry, arg, name, array, out)
    args[dst_arg] = memory
    for arg, value in scalar_scales:
        args[arg] = scalar_memory(engine, value)
    if ctx.in_order and deps:
        # The queue orders events of its own (ops' markers): only the others
        # need the wait the binding adds for them on in-order streams (known
        # problem inorder-execute-drops-deps).
        deps = ctx.foreign(deps)
    event = _execute(entry.primitive, ctx.stream, args, deps)
    if event is None:  # in-order queue: a marker stands for the primitive
        event = _operands._enqueue_marker(queue, None)
        ctx.add_marker(event)
    # The primitive waited for out's events: they are done when it is. (A new
    # array has none.) One event, so pyopencl's add_event never needs to wait.
    out.events[:] = (event,)
    return out


def _overlap(entry: _entry, arg: int, name: str, array: Any, out: Any) -> None:
    """Refuse ``out`` sharing bytes with operand `array` (both of one root
    cl_mem) unless it is that operand exactly and the operation computes
    in place for that argument: oneDNN would write out while it still reads
    the operand. Bytes from the first element to the end of the last one
    (interleaved views of one buffer count as overlapping)."""
    _, root, origin = storage_of(array)
    _, out_root, out_origin = storage_of(out)
    if root != out_root:  # (found by a root kept before the array's base_data changed)
        return
    start, out_start = origin + array.offset, out_origin + out.offset
    end = start + _view_extent(array.shape, array.strides, array.dtype.itemsize)
    out_end = out_start + _view_extent(out.shape, out.strides, out.dtype.itemsize)
    if start >= out_end or out_start >= end:
        return
    op = entry.key[0]
    if arg in entry.in_place:
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


# -- repeated calls ----------------------------------------------------------------
#
# What a planner does (checks, reinterpretations, descriptors, the cache key)
# depends only on its arguments' values and, of arrays, on their shapes,
# strides, dtypes and queues, and on which arguments are the same array: the
# call's signature. A call with the signature of an earlier one is bound to
# that call's cache entry and skips planning (about 4 µs of a small call);
# what depends on the arrays themselves (memory on their storage, offsets,
# events) is done every call. Arguments of other kinds (prepared weights,
# array subclasses, objects of users' types) make calls that are planned
# every time.

_SCALARS = frozenset({int, float, bool, str, type(None), type})
_NAMED: set = set()  # enum types met, keyed by member name (Enum.__hash__ is Python code)


class _binding:
    """What a bound call needs: the entry, which of the call's arrays is
    which operand, ``out``'s and the queue holder's index among them."""

    __slots__ = ("entry", "operands", "out", "holder", "dst_arg", "dst_dims", "scalar_scales")

    def __init__(self, entry: _entry, operands: List[Tuple[int, int, str, Any, Any]],
                 out: Optional[int], holder: int, p: plan) -> None:
        self.entry = entry
        self.operands = operands
        self.out = out        # index of out=, or None: a new result
        self.holder = holder  # index of the array whose queue runs the call
        self.dst_arg = p.dst_arg
        self.dst_dims = p.dst_dims
        self.scalar_scales = p.scalar_scales


def signature(planner: Any, args: Sequence[Any],
              kwargs: Dict[str, Any]) -> Optional[Tuple[Any, List[Any]]]:
    """(signature, the arrays in it) of a call, or None if it has none.

    Each value adds its part: an array its (shape, strides, dtype, sub-memory
    offset (arrays._element_offset), queue
    handle), or the index of the earlier argument that is the same array; a
    number, string, None or type its type and value (1, 1.0 and True
    differ); an enum member its type and name; a list or tuple its type and
    length, then its items. Other values have none."""
    key: List[Any] = [planner]
    arrays: List[Any] = []
    if kwargs:
        key.append(tuple(kwargs))
        args = tuple(args) + tuple(kwargs.values())
    if not _sign(args, key, arrays, {}):
        return None
    return tuple(key), arrays


def _sign(values: Sequence[Any], key: List[Any], arrays: List[Any], seen: Dict[int, int]) -> bool:
    """Append the parts of `values` to `key` (and their arrays to `arrays`,
    `seen` mapping their ids to their indexes); False if one has none.
    (Flat: a part's first item tells its kind.)"""
    array_type = _operands._Array
    append = key.append
    for value in values:
        kind = type(value)
        if kind is array_type:
            index = seen.get(id(value))  # ids of arrays alive for the whole call
            if index is not None:
                append(index)
            else:
                seen[id(value)] = len(arrays)
                arrays.append(value)
                queue = value.queue
                # (a view's offset matters only as its sub-memory offset:
                # 0 unless it starts between two aligned bytes)
                append((value.shape, value.strides, value.dtype,
                        value.offset and _element_offset(value),
                        None if queue is None else queue.int_ptr))
        elif kind in _SCALARS:
            append(kind)
            append(value)
        elif kind in _NAMED:
            append(kind)
            append(value._name_)
        elif kind is tuple or kind is list:
            append((kind, len(value)))
            if not _sign(value, key, arrays, seen):
                return False
        elif isinstance(value, enum.Enum):
            _NAMED.add(kind)
            append(kind)
            append(value._name_)
        elif isinstance(value, (np.dtype, np.generic)):
            append(kind)
            append(value)
        else:
            return False
    return True


def _bind(p: plan, entry: _entry, call_arrays: List[Any]) -> Optional[_binding]:
    """A plan's binding to its call's arrays, or None when an operand is not
    one of them (a copy made for the call)."""
    def index(array: Any) -> Optional[int]:
        for i, given in enumerate(call_arrays):
            if given is array:
                return i
        return None

    operands = []
    for op, facts, key in zip(p.operands, entry.facts, entry.memory_keys):
        i = index(op.array)
        if i is None:
            return None
        operands.append((op.arg, i, op.name, facts, key))
    out = None if p.out is None else index(p.out)
    holder = index(p.out if p.out is not None else p.queue_array)
    if holder is None or (p.out is not None and out is None):
        return None
    return _binding(entry, operands, out, holder, p)


def call(planner: Callable[..., plan], *args: Any, **kwargs: Any) -> Any:
    """Plan and run ``planner(*args, **kwargs)``, or run the binding of an
    earlier call of the same signature."""
    if _operands._Array is None:
        _operands._load_pyopencl()
    signed = signature(planner, args, kwargs)
    if signed is not None:
        binding = _cache.bound.get(signed[0])
        if binding is not None:
            arrays = signed[1]
            holder = arrays[binding.holder]
            queue = holder.queue
            ctx = _context.of_queue(queue)
            entry = binding.entry
            # (a stream remade for the queue is on the same engine while the
            # entry holds it; touch fails if the entry left the cache)
            if ctx.engine is entry.engine and _cache.touch(entry.key):
                return _launch(entry, ctx, queue, binding.operands, arrays,
                               None if binding.out is None else arrays[binding.out], holder,
                               binding.dst_arg, binding.dst_dims, binding.scalar_scales)
    return run(planner(*args, **kwargs), signed)


if TYPE_CHECKING:
    from typing import ParamSpec

    P = ParamSpec("P")


def operation(planner: "Callable[P, plan]") -> "Callable[P, Any]":
    """The public function of a planner: makes its plan and runs it. The
    planner stays reachable through :func:`planner_of` (for
    ops.prepare_weights and functions built on others)."""

    @functools.wraps(planner)
    def function(*args: Any, **kwargs: Any) -> Any:
        return call(planner, *args, **kwargs)

    function.plan = planner  # type: ignore[attr-defined]
    return function


def planner_of(function: Any) -> Optional[Callable[..., plan]]:
    """The planner behind a function made by :func:`operation` (or None)."""
    return getattr(function, "plan", None)
