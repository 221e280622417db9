"""Planners of normalization for inference (layer, RMS, batch, group) and
pooling. Each public planner has its ops function's parameters and
docstring (``ops/__init__.py`` makes the function)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from .. import _core
from .._errors import invalid_argument
from ._linear import Padding, Spatial
from ._operands import DType, array_operand, number, operand, result_type
from ._plans import plan
from ._spatial import output_sizes, paddings, per_dim, spatial_count

if TYPE_CHECKING:
    from pyopencl.array import Array

_FI = _core.prop_kind.forward_inference
_A = _core
_F = _core.normalization_flags


def _per_channel(name: str, arg: int, array: Any, channels: int) -> operand:
    op = array_operand(name, arg, array)
    op.dense = True  # oneDNN takes per-channel vectors dense only (no descriptor of their own)
    if tuple(op.dims) != (channels,):
        raise invalid_argument(f"{name} has shape {tuple(op.dims)}, expected ({channels},)")
    return op


def _scale_shift(operands: List[operand], weight: Any, bias: Any, channels: int) -> Any:
    """Add ``weight``/``bias`` operands; the flags they ask for."""
    flags = _F.none
    if weight is not None:
        operands.append(_per_channel("weight", _A.ARG_SCALE, weight, channels))
        flags |= _F.use_scale
    if bias is not None:
        operands.append(_per_channel("bias", _A.ARG_SHIFT, bias, channels))
        flags |= _F.use_shift
    return flags


def _layer_plan(x: Any, weight: Any, bias: Any, eps: Any, out: Any, dtype: Any,
                rms: bool) -> plan:
    X = array_operand("x", _A.ARG_SRC, x)
    eps = number(eps, "eps")
    operands = [X]
    flags = _scale_shift(operands, weight, bias, X.dims[-1])
    if rms:
        flags |= _F.rms_norm
    # scale and shift in the weight's (or bias's) type: f32, f16 or bf16;
    # oneDNN takes one type for both (it would read the other's bits as it)
    scale_type = operands[1].data_type if len(operands) > 1 else _core.memory.data_type.f32
    if len(operands) == 3 and operands[2].data_type != scale_type:
        raise TypeError(f"weight and bias must have one dtype (oneDNN takes one type for both), "
                        f"not {weight.dtype} and {bias.dtype}")

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.layer_normalization_forward.primitive_desc(
            engine, _FI, d[0], dst_desc, scale_type, eps, flags, attr)

    p = plan("layer_norm", _A.layer_normalization_forward,
             (eps, int(flags), scale_type._name_),
             operands, X.dims, result_type(X.data_type, dtype, out), out, make_pd)
    p.in_place = (_A.ARG_SRC,)  # oneDNN's normalizations compute in place
    return p


def layer_norm(x: Array, weight: Optional[Array] = None, bias: Optional[Array] = None,
               eps: float = 1e-5, *, out: Optional[Array] = None,
               dtype: Optional[DType] = None) -> plan:
    """Normalize ``x`` over its last axis (mean 0, variance 1, with ``eps``
    added to the variance), then ``* weight + bias`` (each of the last
    axis's size, optional; f32, f16 or bf16, both of one dtype)."""
    return _layer_plan(x, weight, bias, eps, out, dtype, rms=False)


def rms_norm(x: Array, weight: Optional[Array] = None, eps: float = 1e-6, *,
             out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """``x / sqrt(mean(x**2) + eps)`` over the last axis, ``* weight``
    (optional): oneDNN's layer normalization with the rms_norm flag."""
    return _layer_plan(x, weight, None, eps, out, dtype, rms=True)


def batch_norm(x: Array, mean: Array, var: Array, weight: Optional[Array] = None,
               bias: Optional[Array] = None, eps: float = 1e-5, *, out: Optional[Array] = None,
               dtype: Optional[DType] = None) -> plan:
    """Batch normalization for inference over the channels (axis 1) of ``x``
    ``[N, C, ...]``, with the running ``mean`` and ``var`` (float32 ``[C]``),
    then ``* weight + bias`` (float32 ``[C]``, optional)."""
    X = array_operand("x", _A.ARG_SRC, x)
    if len(X.dims) < 2:
        raise invalid_argument(f"x must have the shape (N, C, ...), not {tuple(X.dims)}")
    eps = number(eps, "eps")
    channels = X.dims[1]
    operands = [X, _per_channel("mean", _A.ARG_MEAN, mean, channels),
                _per_channel("var", _A.ARG_VARIANCE, var, channels)]
    flags = _scale_shift(operands, weight, bias, channels) | _F.use_global_stats

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.batch_normalization_forward.primitive_desc(engine, _FI, d[0], dst_desc, eps,
                                                             flags, attr)

    p = plan("batch_norm", _A.batch_normalization_forward, (eps, int(flags)), operands, X.dims,
             result_type(X.data_type, dtype, out), out, make_pd)
    p.in_place = (_A.ARG_SRC,)
    return p


def group_norm(x: Array, groups: int, weight: Optional[Array] = None,
               bias: Optional[Array] = None, eps: float = 1e-5, *,
               out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """Group normalization for inference: the channels (axis 1) of ``x``
    ``[N, C, ...]`` in ``groups`` groups, each normalized over its channels
    and the spatial axes, then ``* weight + bias`` (float32 ``[C]``,
    optional)."""
    X = array_operand("x", _A.ARG_SRC, x)
    if len(X.dims) < 2:
        raise invalid_argument(f"x must have the shape (N, C, ...), not {tuple(X.dims)}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 \
            or X.dims[1] % groups:
        raise invalid_argument(f"groups must be a positive int dividing x's {X.dims[1]} channels, "
                         f"not {groups!r}")
    eps = number(eps, "eps")
    operands = [X]
    flags = _scale_shift(operands, weight, bias, X.dims[1])

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.group_normalization_forward.primitive_desc(engine, _FI, d[0], dst_desc,
                                                             groups, eps, flags, attr)

    p = plan("group_norm", _A.group_normalization_forward, (groups, eps, int(flags)), operands,
             X.dims, result_type(X.data_type, dtype, out), out, make_pd)
    p.in_place = (_A.ARG_SRC,)
    return p


def _pool_plan(x: Any, algorithm: Any, kernel_size: Any, stride: Any, padding: Any,
               dilation: Any, out: Any) -> plan:
    X = array_operand("x", _A.ARG_SRC, x)
    n = spatial_count(X)
    kernel = per_dim(kernel_size, n, "kernel_size", 1)
    strides = kernel if stride is None else per_dim(stride, n, "stride", 1)
    dilations = per_dim(dilation, n, "dilation", 1)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    left, right = paddings(padding, n, extents, strides)
    dst = tuple(X.dims[:2]) + tuple(output_sizes(X, extents, strides, left, right))
    dilates = [d - 1 for d in dilations]
    geometry = (algorithm._name_, kernel, strides, tuple(dilates), tuple(left), tuple(right))

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.pooling_forward.primitive_desc(engine, _FI, algorithm, d[0], dst_desc,
                                                 list(strides), list(kernel), dilates, left,
                                                 right, attr)

    return plan("pooling", _A.pooling_forward, geometry, [X], dst,
                result_type(X.data_type, None, out), out, make_pd, sized_by="padding")


def max_pool(x: Array, kernel_size: Spatial, stride: Optional[Spatial] = None,
             padding: Padding = 0, dilation: Spatial = 1, *,
             out: Optional[Array] = None) -> plan:
    """Max pooling over the spatial axes of ``x`` ``[N, C, spatial...]`` (1
    to 3), as PyTorch's ``max_pool1d/2d/3d``: ``stride`` defaults to the
    kernel size; padding as in :func:`convolution`; output sizes rounded
    down. Padding may exceed half the window (PyTorch refuses it; oneDNN
    takes it): a window wholly in the padding gives the data type's lowest
    value."""
    return _pool_plan(x, _A.algorithm.pooling_max, kernel_size, stride, padding, dilation, out)


def avg_pool(x: Array, kernel_size: Spatial, stride: Optional[Spatial] = None,
             padding: Padding = 0, count_include_pad: bool = True, *,
             out: Optional[Array] = None) -> plan:
    """Average pooling, as PyTorch's ``avg_pool1d/2d/3d``: the padding counts
    in the divisor with ``count_include_pad`` (oneDNN's
    pooling_avg_include_padding), else not (pooling_avg_exclude_padding)."""
    alg = _A.algorithm.pooling_avg_include_padding if count_include_pad else \
        _A.algorithm.pooling_avg_exclude_padding
    return _pool_plan(x, alg, kernel_size, stride, padding, 1, out)
