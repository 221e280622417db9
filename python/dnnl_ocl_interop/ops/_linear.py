"""Planners of the operations with weights: matmul, inner_product,
convolution, deconvolution; and weights prepared once in the layout oneDNN
prefers (the data: ``_weights`` prepares them). Each public planner has its
ops function's parameters and docstring (``ops/__init__.py`` makes the
function)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, Union

from .. import _core
from .._errors import invalid_argument
from ._operands import (DType, accumulating_type, array_operand, broadcast_to, dense_strides,
                        operand, prepend, result_type)
from ._plans import plan
from ._post_ops import PostOps
from ._spatial import output_sizes, paddings, per_dim, spatial_count

if TYPE_CHECKING:
    from pyopencl.array import Array

#: A spatial argument: an int for every spatial dimension, or one per dimension
Spatial = Union[int, Sequence[int]]
#: Padding: as Spatial, (left, right) pairs per dimension, "valid" or "same"
Padding = Union[int, str, Sequence[Union[int, Tuple[int, int]]]]
#: A scale: a number, or a float32 array of per-channel factors
Scale = Union[float, "Array"]

_FI = _core.prop_kind.forward_inference
_A = _core


class prepared_weights:
    """Weights reordered once into the layout oneDNN prefers for one kind of
    call; made by :func:`prepare_weights`, accepted in place of the weights
    array by that function (same options, same weights shape).

    Attributes: ``function`` (the ops function's name), ``shape`` and
    ``dtype`` (of the weights array it was made from), ``options`` (the
    options it depends on, e.g. ``{"transpose_b": True}``), ``desc`` (the
    ``dnnl.memory.desc`` chosen by oneDNN), ``array`` (a flat pyopencl array
    holding the reordered weights; its ``events`` are the reorder's).
    """

    def __init__(self, function: str, shape: Tuple[int, ...], dtype: Any, options: dict,
                 dims: Tuple[int, ...], data_type: Any, desc: Any, array: Any) -> None:
        self.function = function
        self.shape = tuple(shape)
        self.dtype = dtype
        self.options = dict(options)
        self.desc = desc
        self.array = array
        self._dims = tuple(dims)
        self._data_type = data_type
        self._key = ("prepared", desc.get_blob())

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return (f"<dnnl.ops.prepared_weights for {self.function}({opts}): {self.dtype}"
                f"{list(self.shape)} as {self.desc!r}>")


def _weights(name: str, arg: int, weights: Any, function: str, options: dict) -> operand:
    """The weights operand: an array as it is, or prepared weights standing
    for an array of their original shape (finished by _finish_weights)."""
    if isinstance(weights, prepared_weights):
        if weights.function != function or weights.options != options:
            raise invalid_argument(f"{name} was prepared for {weights.function} with {weights.options}, "
                             f"not for {function} with {options}")
        shape = weights.shape
        return operand(name, arg, weights, shape, dense_strides(shape),
                       weights._data_type)
    return array_operand(name, arg, weights)


def _finish_weights(op: operand) -> None:
    """Prepared weights: the prepared descriptor and array in place of the
    geometry worked out from their original shape."""
    weights = op.array
    if isinstance(weights, prepared_weights):
        if tuple(op.dims) != weights._dims:
            raise invalid_argument(f"{op.name} was prepared for weights of dims {list(weights._dims)} "
                             f"as oneDNN sees them, this call needs {list(op.dims)}")
        op.array, op.desc, op.key = weights.array, weights.desc, weights._key


def _swap_last(op: operand) -> None:
    op.dims = op.dims[:-2] + (op.dims[-1], op.dims[-2])
    op.strides = op.strides[:-2] + (op.strides[-1], op.strides[-2])
    op.rekey()


def _bias(bias: Any, channels: int, dims: Tuple[int, ...], axis: int) -> operand:
    """A 1-D bias of `channels` values along `axis` of the destination."""
    op = array_operand("bias", _A.ARG_BIAS, bias)
    if tuple(op.dims) != (channels,):
        raise invalid_argument(f"bias has shape {tuple(op.dims)}, expected ({channels},)")
    if axis == len(dims) - 1:
        return broadcast_to(op, dims)
    op.dims = tuple(channels if i == axis else 1 for i in range(len(dims)))
    op.strides = (op.strides[0],) * len(dims)
    op.rekey()
    return op


def matmul(a: Array, b: Union[Array, prepared_weights], bias: Optional[Array] = None, *,
           transpose_a: bool = False, transpose_b: bool = False, post_ops: PostOps = (),
           out: Optional[Array] = None, dtype: Optional[DType] = None,
           a_scale: Optional[Scale] = None, b_scale: Optional[Scale] = None,
           out_scale: Optional[Scale] = None) -> plan:
    """``a @ b (+ bias)``, then ``post_ops``, as NumPy's matmul: batched
    over leading dimensions that broadcast (equal or 1; a lower-rank operand
    gets leading 1s). ``a`` is ``[..., M, K]`` (``[..., K, M]`` with
    ``transpose_a``), ``b`` ``[..., K, N]`` (``[..., N, K]`` with
    ``transpose_b``: a transposed view costs no copy), ``bias`` broadcasts
    to the result ``[..., M, N]`` (e.g. ``[N]``). ``b`` may be
    :class:`prepared_weights`.

    dtypes: f32, f16, bf16 (uint16 arrays); int8 ``a`` (s8/u8) with s8
    ``b``. The result has ``a``'s dtype (f32 for int8), or ``dtype``, or
    ``out``'s. int8 scales: ``a_scale``, ``out_scale`` numbers; ``b_scale`` a
    number or a float32 array of N factors (per output column); the result is
    ``(a*a_scale) @ (b*b_scale) / out_scale``, where oneDNN divides by
    ``out_scale`` after the post-ops (with ``post_ops=[("add", p)]``:
    ``(acc + p) / out_scale``).
    """
    A = array_operand("a", _A.ARG_SRC, a)
    B = _weights("b", _A.ARG_WEIGHTS, b, "matmul", {"transpose_b": bool(transpose_b)})
    for op in (A, B):
        if len(op.dims) < 2:
            raise invalid_argument(f"{op.name} must have at least 2 dimensions, not shape "
                             f"{tuple(op.dims)}")
    if transpose_a:
        _swap_last(A)
    if transpose_b:
        _swap_last(B)
    rank = max(len(A.dims), len(B.dims))
    for op in (A, B):
        if len(op.dims) < rank:
            prepend(op, rank - len(op.dims))
    _finish_weights(B)
    if A.dims[-1] != B.dims[-2]:
        raise invalid_argument(f"b has {B.dims[-2]} rows (K) where a has {A.dims[-1]} columns")
    batch = []
    for x, y in zip(A.dims[:-2], B.dims[:-2]):
        if x != y and 1 not in (x, y):
            raise invalid_argument(f"the batch dimensions of a {tuple(A.dims[:-2])} and b "
                             f"{tuple(B.dims[:-2])} do not broadcast")
        batch.append(max(x, y))
    dst = tuple(batch) + (A.dims[-2], B.dims[-1])
    operands = [A, B]
    if bias is not None:
        bias_operand = broadcast_to(array_operand("bias", _A.ARG_BIAS, bias), dst)
        operands.append(bias_operand)
    has_bias = bias is not None

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        if has_bias:
            return _A.matmul.primitive_desc(engine, d[0], d[1], d[2], dst_desc, attr)
        return _A.matmul.primitive_desc(engine, d[0], d[1], dst_desc, attr)

    p = plan("matmul", _A.matmul, None, operands, dst,
             result_type(accumulating_type(A.data_type), dtype, out), out, make_pd, post_ops)
    p.add_scale(a_scale, "a_scale", _A.ARG_SRC)
    p.add_scale(b_scale, "b_scale", _A.ARG_WEIGHTS, 1 << (rank - 1), dst[-1])
    p.add_scale(out_scale, "out_scale", _A.ARG_DST)
    return p


def inner_product(x: Array, weights: Union[Array, prepared_weights], bias: Optional[Array] = None,
                  *, post_ops: PostOps = (), out: Optional[Array] = None,
                  dtype: Optional[DType] = None) -> plan:
    """oneDNN's inner product (a fully connected layer): ``x`` ``[N, C,
    spatial...]`` (or ``[N, C]``) times ``weights`` ``[OC, C, spatial...]``
    summed over all but N, plus ``bias`` ``[OC]``: the result is ``[N,
    OC]``. For 2-D ``x`` it is ``x @ weights.T + bias`` (PyTorch's
    ``linear``). ``weights`` may be :class:`prepared_weights`. dtypes as
    :func:`matmul`.
    """
    X = array_operand("x", _A.ARG_SRC, x)
    W = _weights("weights", _A.ARG_WEIGHTS, weights, "inner_product", {})
    if not 2 <= len(X.dims) <= 5:
        raise invalid_argument(f"x must have 2 to 5 dimensions, not shape {tuple(X.dims)}")
    if len(W.dims) != len(X.dims) or tuple(W.dims[1:]) != tuple(X.dims[1:]):
        raise invalid_argument(f"weights of shape {tuple(W.dims)} do not match x of shape "
                         f"{tuple(X.dims)}: expected (OC, {', '.join(map(str, X.dims[1:]))})")
    _finish_weights(W)
    dst = (X.dims[0], W.dims[0])
    operands = [X, W]
    if bias is not None:
        operands.append(_bias(bias, W.dims[0], (W.dims[0],), 0))
    has_bias = bias is not None

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        if has_bias:
            return _A.inner_product_forward.primitive_desc(engine, _FI, d[0], d[1], d[2],
                                                           dst_desc, attr)
        return _A.inner_product_forward.primitive_desc(engine, _FI, d[0], d[1], dst_desc, attr)

    p = plan("inner_product", _A.inner_product_forward, None, operands, dst,
             result_type(accumulating_type(X.data_type), dtype, out), out, make_pd, post_ops)
    return p


def _grouped(W: operand, groups: int) -> None:
    """Weights [OC, ...] split into `groups` along dim 0: oneDNN's grouped
    weights [G, OC / G, ...]."""
    if groups == 1:
        return
    per = W.dims[0] // groups
    W.dims = (groups, per) + tuple(W.dims[1:])
    W.strides = (W.strides[0] * per,) + tuple(W.strides)
    W.rekey()


def _window_plan(op: str, family: Any, alg: Any, X: operand, W: operand, bias: Any,
                 dst: Tuple[int, ...], geometry: Any, post_ops: Any, out: Any,
                 dtype: Any, sized_by: str) -> plan:
    """The plan of a convolution or deconvolution whose weights are in
    oneDNN's (grouped) layout; geometry: strides, dilations (PyTorch's),
    left and right padding; `sized_by`: the arguments that can make the
    result too large."""
    strides, dilations, left, right = geometry
    _finish_weights(W)
    operands = [X, W]
    if bias is not None:
        operands.append(_bias(bias, dst[1], (dst[1],), 0))
    has_bias, dilates = bias is not None, [d - 1 for d in dilations]

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        if has_bias:
            return family.primitive_desc(engine, _FI, alg, d[0], d[1], d[2], dst_desc,
                                         list(strides), dilates, list(left), list(right), attr)
        return family.primitive_desc(engine, _FI, alg, d[0], d[1], dst_desc, list(strides),
                                     dilates, list(left), list(right), attr)

    return plan(op, family, (strides, tuple(dilates), tuple(left), tuple(right)), operands,
                dst, result_type(accumulating_type(X.data_type), dtype, out), out, make_pd,
                post_ops, sized_by=sized_by)


def _window_operands(function: str, x: Any, weights: Any, groups: Any, stride: Any,
                     dilation: Any, layout: str) -> Tuple[int, operand, operand, int, Any, Any]:
    """(groups, x, weights, spatial dimensions, strides, dilations) of a
    convolution or deconvolution call, checked; `layout` begins the weights'
    shape as the message spells it."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise invalid_argument(f"groups must be a positive int, not {groups!r}")
    X = array_operand("x", _A.ARG_SRC, x)
    W = _weights("weights", _A.ARG_WEIGHTS, weights, function, {"groups": groups})
    n = spatial_count(X)
    if len(W.dims) != n + 2:
        raise invalid_argument(f"weights must have the shape {layout}, {n} kernel sizes), "
                         f"not {tuple(W.dims)}")
    return (groups, X, W, n, per_dim(stride, n, "stride", 1),
            per_dim(dilation, n, "dilation", 1))


def convolution(x: Array, weights: Union[Array, prepared_weights], bias: Optional[Array] = None,
                *, stride: Spatial = 1, padding: Padding = 0, dilation: Spatial = 1,
                groups: int = 1, post_ops: PostOps = (), out: Optional[Array] = None,
                dtype: Optional[DType] = None) -> plan:
    """Convolution of ``x`` ``[N, C, (D,) (H,) W]`` (1 to 3 spatial
    dimensions) with ``weights`` ``[OC, C / groups, k...]`` plus ``bias``
    ``[OC]``, as PyTorch's ``conv1d/2d/3d``: ``stride``, ``padding`` (int,
    one per dimension, (left, right) pairs, "valid" or "same"),
    ``dilation`` (1: none) and ``groups``; then ``post_ops``. ``weights``
    may be :class:`prepared_weights`. dtypes as :func:`matmul` (int8:
    s8/u8 ``x``, s8 weights).
    """
    groups, X, W, n, strides, dilations = _window_operands(
        "convolution", x, weights, groups, stride, dilation, "(OC, C / groups")
    oc, channels = W.dims[0], X.dims[1]
    if channels != W.dims[1] * groups or oc % groups:
        raise invalid_argument(f"weights of shape {tuple(W.dims)} do not fit x's {channels} channels "
                         f"in {groups} group(s)")
    extents = [(k - 1) * d + 1 for k, d in zip(W.dims[2:], dilations)]
    left, right = paddings(padding, n, extents, strides)
    dst = (X.dims[0], oc) + tuple(output_sizes(X, extents, strides, left, right))
    _grouped(W, groups)
    return _window_plan("convolution", _A.convolution_forward, _A.algorithm.convolution_direct,
                        X, W, bias, dst, (strides, dilations, left, right), post_ops, out, dtype,
                        "padding")


def deconvolution(x: Array, weights: Union[Array, prepared_weights],
                  bias: Optional[Array] = None, *, stride: Spatial = 1, padding: Padding = 0,
                  output_padding: Spatial = 0, dilation: Spatial = 1, groups: int = 1,
                  post_ops: PostOps = (), out: Optional[Array] = None,
                  dtype: Optional[DType] = None) -> plan:
    """Transposed convolution (oneDNN's deconvolution; PyTorch's
    ``conv_transpose1d/2d/3d``) of ``x`` ``[N, C, spatial...]`` with
    ``weights`` ``[C, OC / groups, k...]`` (PyTorch's layout) plus ``bias``
    ``[OC]``. The output size is ``(I - 1) * stride - left - right +
    dilation * (k - 1) + output_padding + 1``; ``padding`` as in
    :func:`convolution` (no "same"). ``output_padding`` must be smaller
    than the stride plus the right padding (PyTorch allows up to the
    dilation too; oneDNN makes at most stride - 1 outputs past the last one
    an input reaches). ``weights`` may be :class:`prepared_weights`.
    """
    groups, X, W, n, strides, dilations = _window_operands(
        "deconvolution", x, weights, groups, stride, dilation, "(C, OC / groups")
    channels, per_group_oc = X.dims[1], W.dims[1]
    if W.dims[0] != channels or channels % groups:
        raise invalid_argument(f"weights of shape {tuple(W.dims)} do not fit x's {channels} channels "
                         f"in {groups} group(s)")
    oc = per_group_oc * groups
    extra = per_dim(output_padding, n, "output_padding", 0)
    if padding == "same":
        raise invalid_argument("padding='same' is not defined for deconvolution")
    extents = [(k - 1) * d + 1 for k, d in zip(W.dims[2:], dilations)]
    left, right = paddings(padding, n, extents, strides)
    sizes = [(i - 1) * s - lo - hi + e + o for i, s, lo, hi, e, o
             in zip(X.dims[2:], strides, left, right, extents, extra)]
    if any(o < 1 for o in sizes):
        raise invalid_argument(f"the output would have spatial size {sizes}")
    if any(o >= max(s, d) for o, s, d in zip(extra, strides, dilations)):
        raise invalid_argument(f"output_padding {extra} must be smaller than the stride or the dilation")
    if any(o - r >= s for o, r, s in zip(extra, right, strides)):
        # oneDNN keeps right padding above -stride: no more than stride - 1
        # outputs past the last one an input reaches (PyTorch allows up to dilation - 1)
        raise invalid_argument(f"output_padding {tuple(extra)} must be smaller than the stride "
                               f"{tuple(strides)} plus the right padding {tuple(right)} in "
                               "oneDNN's deconvolution")
    right = [r - o for r, o in zip(right, extra)]
    dst = (X.dims[0], oc) + tuple(sizes)
    # PyTorch's [C, OC/G, k...] as oneDNN's [OC, C, k...] or [G, OC/G, C/G, k...]
    s_in, s_out = W.strides[0], W.strides[1]
    if groups == 1:
        W.dims = (per_group_oc, channels) + tuple(W.dims[2:])
        W.strides = (s_out, s_in) + tuple(W.strides[2:])
    else:
        per_group_c = channels // groups
        W.dims = (groups, per_group_oc, per_group_c) + tuple(W.dims[2:])
        W.strides = (per_group_c * s_in, s_out, s_in) + tuple(W.strides[2:])
    W.rekey()
    return _window_plan("deconvolution", _A.deconvolution_forward,
                        _A.algorithm.deconvolution_direct, X, W, bias, dst,
                        (strides, dilations, left, right), post_ops, out, dtype,
                        "stride or dilation")


def reorder_into(source: operand, flat: Any, desc: Any) -> plan:
    """A reorder of `source` into `flat` (a 1-D array) laid out as `desc`."""
    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.reorder.primitive_desc(engine, d[0], engine, dst_desc, attr)

    p = plan("reorder", _A.reorder, ("into", desc.get_blob()), [source], flat.shape,
             source.data_type, flat, make_pd, dst_arg=_A.ARG_TO)
    p.dst_desc = desc
    return p
