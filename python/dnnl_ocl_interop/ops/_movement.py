"""Planners of data movement: reorder (layouts, type conversion, int8
scales), transpose, copy, concat and sum; and the copy of an operand as a
primitive sees it (``_run``'s remedies run it). Each public planner has its
ops function's parameters and docstring (``ops/__init__.py`` makes the
function)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .. import _core
from .._errors import invalid_argument
from ._context import ones_like_queue
from ._elementwise import binary_operands_plan
from ._linear import Scale
from ._operands import DType, array_operand, number, operand, result_type
from ._plans import plan

if TYPE_CHECKING:
    from pyopencl.array import Array

_A = _core

# Data types a binary multiply by 1 copies exactly (it computes in f32).
_COPIED_BY_BINARY = frozenset(("f32", "f16", "bf16", "s8", "u8"))


def _binary_copy(X: operand, dtype: Any, out: Any) -> Optional[plan]:
    """A plain copy (or conversion) of `X` as a binary multiply by 1, for a
    reorder the binding refused (known problem
    reorder-custom-innermost-stride: the layouts are its to judge), when the
    data types are copied exactly; else None."""
    result = result_type(X.data_type, dtype, out)
    if X.data_type._name_ not in _COPIED_BY_BINARY or result._name_ not in _COPIED_BY_BINARY:
        return None
    queue = (out if out is not None else X.array).queue
    if queue is None:
        return None  # (the reorder's plan says which array has no queue)
    X.arg = _A.ARG_SRC_0
    one = array_operand("1", _A.ARG_SRC_1, ones_like_queue(queue))
    return binary_operands_plan(X, one, _A.algorithm.binary_mul, (), out, dtype)


def _reorder_plan(dims: Any, X: operand, dtype: Any, src_scale: Any, dst_scale: Any,
                  axis: Optional[int], out: Any) -> plan:
    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.reorder.primitive_desc(engine, d[0], engine, dst_desc, attr)

    p = plan("reorder", _A.reorder, None, [X], dims, result_type(X.data_type, dtype, out), out,
             make_pd, dst_arg=_A.ARG_TO)
    p.copy_remedies = False
    mask, channels = 0, 1
    if axis is not None:
        if isinstance(axis, bool) or not isinstance(axis, int) \
                or not -len(dims) <= axis < len(dims):
            raise invalid_argument(f"axis {axis!r} is not an axis of x, of shape {tuple(dims)}")
        axis %= len(dims)
        mask, channels = 1 << axis, dims[axis]
    p.add_scale(src_scale, "src_scale", _A.ARG_FROM, mask, channels)
    p.add_scale(dst_scale, "dst_scale", _A.ARG_TO, mask, channels)
    if src_scale is None and dst_scale is None:
        # layouts the binding refuses for oneDNN's ocl:custom (a strided
        # innermost dimension, a transpose into rows with gaps)
        p.fallback = ("reorder-custom-innermost-stride", lambda: _binary_copy(X, dtype, out))
    return p


def reorder(x: Array, dtype: Optional[DType] = None, *, src_scale: Optional[Scale] = None,
            dst_scale: Optional[Scale] = None, axis: Optional[int] = None,
            out: Optional[Array] = None) -> plan:
    """A copy of ``x`` (any strides) into a new dense array, or into ``out``
    (any strides), converted to ``dtype`` (``"f32"``, ``"f16"``, ``"bf16"``
    (uint16), ``"s8"``, ``"u8"``, ``"s32"`` or a NumPy dtype), as oneDNN's
    reorder: ``out = x * src_scale / dst_scale``, rounded and saturated for
    integers. Scales are numbers, or float32 arrays of one factor per
    element along ``axis``.
    """
    X = array_operand("x", _A.ARG_FROM, x)
    return _reorder_plan(X.dims, X, dtype, src_scale, dst_scale, axis, out)


def astype(x: Array, dtype: DType, *, out: Optional[Array] = None) -> plan:
    """``x`` converted to ``dtype`` (see :func:`reorder`)."""
    return reorder(x, dtype, out=out)


def copy(x: Array, *, out: Optional[Array] = None) -> plan:
    """A dense copy of ``x`` (for instance of a strided view)."""
    return reorder(x, out=out)


def quantize(x: Array, scale: Scale, dtype: DType = "s8", *, axis: Optional[int] = None,
             out: Optional[Array] = None) -> plan:
    """``round(x / scale)`` saturated to ``dtype`` (s8 or u8); ``scale`` a
    number or a float32 array of factors along ``axis``."""
    return reorder(x, dtype, dst_scale=scale, axis=axis, out=out)


def dequantize(x: Array, scale: Scale, dtype: DType = "f32", *, axis: Optional[int] = None,
               out: Optional[Array] = None) -> plan:
    """``x * scale`` as ``dtype`` (f32, f16 or bf16); ``scale`` a number or
    a float32 array of factors along ``axis``."""
    return reorder(x, dtype, src_scale=scale, axis=axis, out=out)


def transpose(x: Array, axes: Optional[Sequence[int]] = None, *, dtype: Optional[DType] = None,
              out: Optional[Array] = None) -> plan:
    """NumPy's ``x.transpose(axes)`` (reversed axes by default) as a new dense
    array (a reorder: the data moves), converted to ``dtype`` if given."""
    X = array_operand("x", _A.ARG_FROM, x)
    rank = len(X.dims)
    order = tuple(reversed(range(rank))) if axes is None else tuple(axes)
    if sorted(order) != list(range(rank)) or any(isinstance(a, bool) for a in order):
        raise invalid_argument(f"axes {axes!r} is not a permutation of x's {rank} axes")
    X.dims = tuple(X.dims[a] for a in order)
    X.strides = tuple(X.strides[a] for a in order)
    X.rekey()
    return _reorder_plan(X.dims, X, dtype, None, None, None, out)


def concat(arrays: Sequence[Array], axis: int = 0, *, out: Optional[Array] = None) -> plan:
    """The arrays joined along ``axis`` (same dtype, same shape elsewhere)."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError("arrays must be a non-empty list or tuple of pyopencl arrays")
    operands = [array_operand(f"arrays[{i}]", _A.ARG_MULTIPLE_SRC + i, a)
                for i, a in enumerate(arrays)]
    first = operands[0]
    rank = len(first.dims)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise invalid_argument(f"axis {axis!r} is not an axis of arrays[0], of shape {first.dims}")
    axis %= rank
    for op in operands[1:]:
        if len(op.dims) != rank or any(a != b for i, (a, b) in enumerate(zip(op.dims, first.dims))
                                       if i != axis):
            raise invalid_argument(f"{op.name} of shape {op.dims} does not join arrays[0] of shape "
                             f"{first.dims} along axis {axis}")
    dst = list(first.dims)
    dst[axis] = builtins.sum(op.dims[axis] for op in operands)

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.concat.primitive_desc(engine, dst_desc, axis, list(d[:len(operands)]), attr)

    return plan("concat", _A.concat, (axis, len(operands)), operands, tuple(dst),
                result_type(first.data_type, None, out), out, make_pd)


def sum(arrays: Sequence[Array], scales: Optional[Sequence[float]] = None, *,
        out: Optional[Array] = None) -> plan:
    """``scales[0] * arrays[0] + scales[1] * arrays[1] + ...`` (scales default
    to 1) of arrays of one shape, as oneDNN's sum primitive.

    Where the binding refuses oneDNN's sum for the scales (known problem
    sum-many-inputs-scales: its ``ocl:many_inputs`` mis-scales when the
    first scale is 1 and the others differ), the sources are passed in
    another order (a source whose scale is not 1 first), which gives the
    same sum.
    """
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError("arrays must be a non-empty list or tuple of pyopencl arrays")
    if scales is None:
        scales = [1.0] * len(arrays)
    if not isinstance(scales, (list, tuple)) or len(scales) != len(arrays):
        raise invalid_argument(f"scales must be a list of {len(arrays)} numbers, one per array")
    values = [number(s, f"scales[{i}]") for i, s in enumerate(scales)]
    p = _sum_plan(arrays, values, list(range(len(arrays))), out)
    if values[0] == 1.0 and len(set(values)) > 1:
        first = next(i for i, v in enumerate(values) if v != 1.0)
        order = [first] + [i for i in range(len(arrays)) if i != first]
        p.fallback = ("sum-many-inputs-scales", lambda: _sum_plan(arrays, values, order, out))
    return p


def _sum_plan(arrays: Sequence[Any], values: Sequence[float], order: Sequence[int],
              out: Any) -> plan:
    """The sum of `arrays` scaled by `values`, passed to oneDNN in `order`."""
    operands = [array_operand(f"arrays[{i}]", _A.ARG_MULTIPLE_SRC + k, arrays[i])
                for k, i in enumerate(order)]
    shape = operands[0].dims
    for op in operands:
        if op.dims != shape:
            raise invalid_argument(f"{op.name} has shape {op.dims}, arrays[0] {tuple(arrays[0].shape)}")
    ordered = [values[i] for i in order]

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.sum.primitive_desc(engine, dst_desc, ordered, list(d[:len(operands)]), attr)

    # arrays[0]'s type, whichever source the order puts first
    dst_type = result_type(operands[list(order).index(0)].data_type, None, out)
    p = plan("sum", _A.sum, tuple(ordered), operands, shape, dst_type, out, make_pd)
    p.queue_array = arrays[0]  # the result lives on the first array's queue, whatever the order
    return p


def copy_as_seen(op: operand) -> plan:
    """The plan of a new dense array of ``op.dims`` holding what a primitive
    reads through `op` (its dims and strides over its array), for a plan
    whose descriptor the binding refused for a known problem naming that
    operand (``_run._remedy`` runs it)."""
    X = operand(op.name, _A.ARG_FROM, op.array, op.dims, op.strides, op.data_type,
                offset=op.offset)
    return _reorder_plan(op.dims, X, None, None, None, None, None)
