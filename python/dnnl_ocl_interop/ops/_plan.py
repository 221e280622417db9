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
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple

from .. import _core, arrays
from .._errors import invalid_argument
from . import _cache, _context, _operands
from ._operands import (check_array, dense_strides, element_strides, memory_of, naming,
                        new_array, operand, prefix)
from ._post_ops import parse_post_ops, post_ops_attr, scale_operand, scales_attr, scalar_memory

_desc = _core.memory.desc
_execute = _core.ocl_interop.execute
_as_memory = arrays._as_memory  # as_memory with the descriptor's checks done once

# -- a call ------------------------------------------------------------------------

class plan:
    """One call of an ops function, before it runs (see the module docstring).

    ``make_pd(engine, descs, dst_desc, attr)`` makes the primitive descriptor
    from the descriptors of ``operands[:n]`` (in order; post-op and scale
    operands follow, and are in `attr`) and the destination's.
    """

    __slots__ = ("op", "family", "params", "operands", "dst_dims", "dst_type", "dst_arg",
                 "out", "post_ops", "scales", "scalar_scales", "make_pd", "queue_array",
                 "dst_desc", "dense_only", "out_strides")

    def __init__(self, op: str, family: Any, params: Any, operands: List[operand],
                 dst_dims: Tuple[int, ...], dst_type: Any, out: Any,
                 make_pd: Callable[..., Any], post_ops: Any = None,
                 dst_arg: int = _core.ARG_DST) -> None:
        self.op = op
        self.family = family
        self.params = params
        self.operands = operands
        self.dst_dims = tuple(dst_dims)
        self.dst_type = dst_type
        self.dst_arg = dst_arg
        self.out = out
        self.make_pd = make_pd
        self.scales: List[Any] = []      # keys of scale_operand
        self.scalar_scales: List[Tuple[int, float]] = []  # (ARG_ATTR_SCALES | arg, number)
        self.post_ops: Tuple[Any, ...] = ()
        self.dst_desc: Any = None  # a fixed destination descriptor (prepared weights)
        # Primitives that mishandle strided operands in oneDNN 3.13 get dense
        # copies, and write a strided out= through a dense result.
        self.dense_only = False
        self.queue_array: Any = operands[0].array  # the result lives on its queue
        # out's strides in elements; None for a new result or a dense out
        self.out_strides: Optional[Tuple[int, ...]] = None
        if out is not None:
            check_array(out, "out")
            if tuple(out.shape) != self.dst_dims:
                raise invalid_argument(f"out has shape {tuple(out.shape)}, the result of {op} has "
                                 f"shape {self.dst_dims}")
            strides = element_strides(out)
            if not is_dense(self.dst_dims, strides):
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

    __slots__ = ("engine", "primitive", "pd", "facts", "dst_facts", "dst_dtype")

    def __init__(self, engine: Any, primitive: Any, pd: Any, descs: List[Any], dst_desc: Any,
                 dst_dtype: Any) -> None:
        self.engine = engine
        self.primitive = primitive
        self.pd = pd
        self.facts = [arrays._desc_facts(d) for d in descs]  # as_memory's checks, once
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
    return _entry(ctx.engine, primitive, pd, descs, dst_desc, arrays.numpy_dtype(p.dst_type))


def primitive_desc_of(p: plan, engine: Any) -> Tuple[Any, List[Any], Any]:
    """(primitive descriptor, operand descriptors, destination descriptor)
    of a plan: no primitive, no cache (ops.prepare_weights asks only which
    layout oneDNN chose)."""
    descs = [op.make_desc() for op in p.operands]
    dst_desc = p.dst_desc
    if dst_desc is None:
        with naming("out"):
            dst_desc = _desc(list(p.dst_dims), p.dst_type, list(_dst_strides(p)))
    attr = post_ops_attr(p.post_ops, [d for op, d in zip(p.operands, descs)
                                      if op.name.startswith("post_ops[")])
    scales_attr(attr, p.scales)
    try:
        return p.make_pd(engine, descs, dst_desc, attr), descs, dst_desc
    except _core.error as e:
        prefix(e, f"ops.{p.op} ({describe(p)}): ")
        raise


def cache_key(p: plan, ctx: Any) -> Any:
    """Everything that selects the primitive of a plan. A dense ``out``
    shares its key with a new (dense) result."""
    return (p.op, id(ctx.engine), p.params, tuple([op.key for op in p.operands]),
            p.dst_dims, p.dst_type._name_, p.out_strides, p.post_ops, tuple(p.scales))


def queue_of(p: plan) -> Any:
    """The queue the call runs on: ``out``'s, else the first operand's."""
    holder = p.out if p.out is not None else p.queue_array
    if holder.queue is None:
        name = "out" if p.out is not None else p.operands[0].name
        raise invalid_argument(f"{name} has no queue: give it one (array.with_queue(queue))")
    return holder.queue


def cached_entry(p: plan, queue: Any) -> Tuple[_entry, Any]:
    """The cache entry of a plan (made on a miss) and the queue's context."""
    ctx = _context.of_queue(queue)
    key = cache_key(p, ctx)
    entry = _cache.lookup(key)
    if entry is None:
        entry = _cache.insert(key, _build(p, ctx, key))
    return entry, ctx


def _copy(array: Any, out: Any = None) -> Any:
    """ops.copy (a module that imports this one)."""
    from ._movement import copy

    return copy(array, out=out)


def is_dense(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether strides (elements) are row-major for dims (size-1 dims aside)."""
    dense = dense_strides(dims)
    return strides == dense or all(n == 1 or s == d for n, s, d in zip(dims, strides, dense))


def _densify(p: plan) -> Any:
    """Dense copies of the strided operands oneDNN would misread (those of a
    dense_only plan, and operands marked dense), in place in the plan; for a
    dense_only plan with a strided ``out``, that ``out`` (the plan then makes
    a new dense result on its queue, to be copied into it), else None.
    Operands marked dense are only ever reinterpreted with leading 1s, so
    the copy's row-major layout is theirs."""
    for op in p.operands:
        if (op.dense or p.dense_only) and not is_dense(op.dims, op.strides):
            op.array = _copy(op.array)
            op.strides = dense_strides(op.dims)
            op.rekey()
    target = p.out
    if not p.dense_only or target is None or p.out_strides is None:
        return None
    p.out, p.queue_array, p.out_strides = None, target, None
    return target


def run(p: plan) -> Any:
    """Execute a plan; returns the result array (``out`` or a new one)."""
    if _operands._enqueue_marker is None:
        _operands._load_pyopencl()
    target = _densify(p)
    if target is not None:
        return _copy(run(p), out=target)
    out = p.out
    queue = queue_of(p)
    entry, ctx = cached_entry(p, queue)
    engine = ctx.engine
    args = {}
    deps: List[Any] = []
    for op, facts in zip(p.operands, entry.facts):
        memory, events = memory_of(op.array, op.name, engine, facts)
        args[op.arg] = memory
        if events:
            deps += events
    if out is None:
        first = p.queue_array
        out = new_array(queue, ctx.cl_context, p.dst_dims, entry.dst_dtype, first.allocator)
        memory, _ = _as_memory(out, engine, entry.dst_facts)
    else:
        memory, events = memory_of(out, "out", engine, entry.dst_facts)
        if events:
            deps += events
    args[p.dst_arg] = memory
    for arg, value in p.scalar_scales:
        args[arg] = scalar_memory(engine, value)
    if ctx.in_order and deps:
        # The queue orders events of its own (ops' markers): only the others
        # need the wait the binding adds for them on in-order streams (known
        # problem inorder-execute-drops-deps).
        deps = ctx.foreign(deps)
    event = _execute(entry.primitive, ctx.stream, args, deps)
    if event is None:  # in-order queue: a marker stands for the primitive
        event = _operands._enqueue_marker(queue)
        ctx.add_marker(event)
    # The primitive waited for out's events: they are done when it is. (A new
    # array has none.) One event, so pyopencl's add_event never needs to wait.
    out.events[:] = (event,)
    return out


if TYPE_CHECKING:
    from typing import ParamSpec

    P = ParamSpec("P")


def operation(planner: "Callable[P, plan]") -> "Callable[P, Any]":
    """The public function of a planner: makes its plan and runs it. The
    planner stays reachable through :func:`planner_of` (for
    ops.prepare_weights and functions built on others)."""

    @functools.wraps(planner)
    def call(*args: Any, **kwargs: Any) -> Any:
        return run(planner(*args, **kwargs))

    call.plan = planner  # type: ignore[attr-defined]
    return call


def planner_of(function: Any) -> Optional[Callable[..., plan]]:
    """The planner behind a function made by :func:`operation` (or None)."""
    return getattr(function, "plan", None)
