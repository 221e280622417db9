"""The plan of one ``dnnl.ops`` call: what a planner decided, before it runs.

A planner (the functions of ``_elementwise``, ``_linear``, ``_normalization``
and ``_movement``) checks its arguments and describes its call as a
:class:`plan`: the operands with the dims and strides oneDNN sees them with
(``_operands.operand``), the destination, the parameters, the post-ops, and a
function making the primitive descriptor. ``_run`` runs plans, ``_call``
binds calls to them. This module is data: it runs nothing.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import _core
from .._errors import invalid_argument
from . import _operands
from ._operands import check_array, dense_strides, element_strides, operand, row_major_ones
from ._post_ops import parse_post_ops, scale_operand

_element_offset = _operands.element_offset


class plan:
    """One call of an ops function, before it runs: what its planner decided.

    ``make_pd(engine, descs, dst_desc, attr)`` makes the primitive descriptor
    from the descriptors of ``operands[:n]`` (in order; post-op and scale
    operands follow, and are in `attr`) and the destination's.
    """

    __slots__ = ("op", "family", "params", "operands", "dst_dims", "dst_type", "dst_arg",
                 "out", "post_ops", "scales", "scalar_scales", "make_pd", "queue_array",
                 "dst_desc", "out_strides", "out_offset", "in_place", "fallback", "copy_remedies",
                 "entry")

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
        # The cache entry it ran on (``_run.run`` sets it; None when it ran
        # through a remedy)
        self.entry: Any = None
        if out is not None:
            check_array(out, "out")
            if tuple(out.shape) != self.dst_dims:
                raise invalid_argument(f"out has shape {tuple(out.shape)}, the result of {op} has "
                                 f"shape {self.dst_dims}")
            strides = row_major_ones(self.dst_dims, element_strides(out))
            self.out_offset = _element_offset(out) if out.offset else 0
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


def describe(p: plan) -> str:
    """The call's operands, for messages: ``a: f32[2, 3], b: f32[3, 4] -> f32[2, 4]``."""
    parts = [f"{op.name}: {op.data_type.name}{list(op.dims)}" for op in p.operands]
    return f"{', '.join(parts)} -> {p.dst_type.name}{list(p.dst_dims)}"


def is_dense(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether strides (elements) are row-major for dims (size-1 dims aside)."""
    dense = dense_strides(dims)
    return strides == dense or all(n == 1 or s == d for n, s, d in zip(dims, strides, dense))
