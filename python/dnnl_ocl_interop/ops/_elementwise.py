"""Planners of element-by-element calls: eltwise (every oneDNN algorithm,
and named shortcuts), binary (with NumPy broadcasting as oneDNN allows it),
softmax. Each public planner has its ops function's parameters and
docstring (``ops/__init__.py`` makes the function)."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Optional, Union

from .. import _core
from .._errors import invalid_argument
from ._operands import DType, array_operand, broadcast_to, number, result_type
from ._plans import plan
from ._post_ops import (ELTWISE_DEFAULTS, SCALAR_BINARY, PostOps, binary_algorithm,
                        check_eltwise_params, eltwise_algorithm, scalar_linear)

if TYPE_CHECKING:
    from pyopencl.array import Array

_FI = _core.prop_kind.forward_inference
_A = _core
_ALG = _core.algorithm


def _eltwise_plan(x: Array, algorithm: Any, alpha: Optional[float], beta: Optional[float],
                  out: Optional[Array]) -> plan:
    alg = eltwise_algorithm(algorithm)
    default_alpha, default_beta = ELTWISE_DEFAULTS.get(alg._name_, (0.0, 0.0))
    alpha = default_alpha if alpha is None else number(alpha, "alpha")
    beta = default_beta if beta is None else number(beta, "beta")
    check_eltwise_params(alg, alpha, beta, "alpha, beta")
    X = array_operand("x", _A.ARG_SRC, x)

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.eltwise_forward.primitive_desc(engine, _FI, alg, d[0], dst_desc, alpha, beta,
                                                 attr)

    p = plan("eltwise", _A.eltwise_forward, (alg._name_, alpha, beta), [X], X.dims,
             result_type(X.data_type, None, out), out, make_pd)
    p.in_place = (_A.ARG_SRC,)  # oneDNN's eltwise computes in place
    return p


def eltwise(x: Array, algorithm: Union[str, _core.algorithm], alpha: Optional[float] = None,
            beta: Optional[float] = None, *, out: Optional[Array] = None) -> plan:
    """oneDNN's elementwise ``algorithm`` on ``x``: its name without
    ``eltwise_`` (``"relu"``, ``"gelu_tanh"``, ``"clip_v2"``, ... every
    ``dnnl.algorithm.eltwise_*``; aliases ``"sigmoid"``, ``"silu"``,
    ``"softplus"``, ``"gelu"`` (erf)) or a ``dnnl.algorithm`` member, with
    oneDNN's ``alpha`` and ``beta`` (defaults: the usual function, e.g.
    swish and elu 1, hardswish 1/6 and 1/2, otherwise 0). The result has
    ``x``'s dtype (f32, f16, bf16, s8/u8 for some algorithms).
    """
    return _eltwise_plan(x, algorithm, alpha, beta, out)


def relu(x: Array, negative_slope: float = 0.0, *, out: Optional[Array] = None) -> plan:
    """max(x, 0), or x * negative_slope below 0 (leaky ReLU)."""
    return _eltwise_plan(x, _ALG.eltwise_relu, number(negative_slope, "negative_slope"), 0.0, out)


def gelu(x: Array, approximate: str = "none", *, out: Optional[Array] = None) -> plan:
    """GELU: exact (erf) or ``approximate="tanh"``, as PyTorch spells it."""
    if approximate not in ("none", "tanh"):
        raise invalid_argument(f"approximate must be 'none' or 'tanh', not {approximate!r}")
    alg = _ALG.eltwise_gelu_tanh if approximate == "tanh" else _ALG.eltwise_gelu_erf
    return _eltwise_plan(x, alg, None, None, out)


def sigmoid(x: Array, *, out: Optional[Array] = None) -> plan:
    """1 / (1 + exp(-x)) (oneDNN's logistic)."""
    return _eltwise_plan(x, _ALG.eltwise_logistic, None, None, out)


def tanh(x: Array, *, out: Optional[Array] = None) -> plan:
    """tanh(x)."""
    return _eltwise_plan(x, _ALG.eltwise_tanh, None, None, out)


def silu(x: Array, *, out: Optional[Array] = None) -> plan:
    """x * sigmoid(x) (oneDNN's swish with alpha 1)."""
    return _eltwise_plan(x, _ALG.eltwise_swish, 1.0, None, out)


def exp(x: Array, *, out: Optional[Array] = None) -> plan:
    """e ** x."""
    return _eltwise_plan(x, _ALG.eltwise_exp, None, None, out)


def log(x: Array, *, out: Optional[Array] = None) -> plan:
    """Natural logarithm."""
    return _eltwise_plan(x, _ALG.eltwise_log, None, None, out)


def sqrt(x: Array, *, out: Optional[Array] = None) -> plan:
    """Square root."""
    return _eltwise_plan(x, _ALG.eltwise_sqrt, None, None, out)


def clip(x: Array, lower: float, upper: float, *, out: Optional[Array] = None) -> plan:
    """min(max(x, lower), upper)."""
    lower, upper = number(lower, "lower"), number(upper, "upper")
    if not lower <= upper:
        raise invalid_argument(f"lower, upper: lower {lower} must not exceed upper {upper}")
    return _eltwise_plan(x, _ALG.eltwise_clip_v2, lower, upper, out)


def _binary_plan(a: Any, b: Any, alg: Any, post_ops: Any, out: Any, dtype: Any) -> plan:
    return binary_operands_plan(array_operand("a", _A.ARG_SRC_0, a),
                                array_operand("b", _A.ARG_SRC_1, b), alg, post_ops, out, dtype)


def binary_operands_plan(A: Any, B: Any, alg: Any, post_ops: Any, out: Any, dtype: Any) -> plan:
    """The plan of a binary on two operands (their args ARG_SRC_0 and ARG_SRC_1)."""
    shape = _broadcast_shape(A.dims, B.dims)
    broadcast_to(A, shape)
    broadcast_to(B, shape)

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.binary.primitive_desc(engine, alg, d[0], d[1], dst_desc, attr)

    p = plan("binary", _A.binary, alg._name_, [A, B], shape,
             result_type(A.data_type, dtype, out), out, make_pd, post_ops)
    p.in_place = (_A.ARG_SRC_0,)  # oneDNN's binary computes in place into src0 (only)
    return p


def _broadcast_shape(x: Any, y: Any) -> tuple:
    rank = max(len(x), len(y))
    x = (1,) * (rank - len(x)) + tuple(x)
    y = (1,) * (rank - len(y)) + tuple(y)
    shape = []
    for i, j in zip(x, y):
        if i != j and 1 not in (i, j):
            raise invalid_argument(f"b of shape {y} does not broadcast with a of shape {x}")
        shape.append(max(i, j))
    return tuple(shape)


def binary(a: Array, b: Union[Array, float], algorithm: Union[str, _core.algorithm], *,
           post_ops: PostOps = (), out: Optional[Array] = None,
           dtype: Optional[DType] = None) -> plan:
    """oneDNN's binary ``algorithm`` (``"add"``, ``"sub"``, ``"mul"``,
    ``"div"``, ``"max"``/``"maximum"``, ``"min"``/``"minimum"``, and the
    comparisons ``"ge"``, ``"gt"``, ``"le"``, ``"lt"``, ``"eq"``, ``"ne"``,
    which give 1 or 0; or a ``dnnl.algorithm.binary_*`` member) of ``a`` and
    ``b``, broadcast as NumPy does (lower rank gets leading 1s; dims equal
    or 1), then ``post_ops``. ``b`` may be a number for add, sub, mul and
    div (an eltwise linear on ``a``). The result has ``a``'s dtype, or
    ``dtype``, or ``out``'s.
    """
    return _binary(a, b, binary_algorithm(algorithm), post_ops, out, dtype)


def _binary(a: Any, b: Any, alg: Any, post_ops: Any, out: Any, dtype: Any) -> plan:
    """The plan of :func:`binary` for a resolved algorithm."""
    if isinstance(b, numbers.Real) and not isinstance(b, bool):
        if alg not in SCALAR_BINARY:
            raise TypeError(f"b: a number works with add, sub, mul and div, not {alg.name}")
        if post_ops or dtype is not None:
            raise TypeError("b: with a number, post_ops and dtype are not taken (an eltwise)")
        alpha, beta = scalar_linear(alg, b, "b")
        return _eltwise_plan(a, _ALG.eltwise_linear, alpha, beta, out)
    return _binary_plan(a, b, alg, post_ops, out, dtype)


def add(a: Array, b: Union[Array, float], *, post_ops: PostOps = (),
        out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """a + b (see :func:`binary`)."""
    return _binary(a, b, _ALG.binary_add, post_ops, out, dtype)


def sub(a: Array, b: Union[Array, float], *, post_ops: PostOps = (),
        out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """a - b (see :func:`binary`)."""
    return _binary(a, b, _ALG.binary_sub, post_ops, out, dtype)


def mul(a: Array, b: Union[Array, float], *, post_ops: PostOps = (),
        out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """a * b (see :func:`binary`)."""
    return _binary(a, b, _ALG.binary_mul, post_ops, out, dtype)


def div(a: Array, b: Union[Array, float], *, post_ops: PostOps = (),
        out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """a / b (see :func:`binary`)."""
    return _binary(a, b, _ALG.binary_div, post_ops, out, dtype)


def maximum(a: Array, b: Union[Array, float], *, post_ops: PostOps = (),
            out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """The larger of a and b, element by element (see :func:`binary`)."""
    return _binary(a, b, _ALG.binary_max, post_ops, out, dtype)


def minimum(a: Array, b: Union[Array, float], *, post_ops: PostOps = (),
            out: Optional[Array] = None, dtype: Optional[DType] = None) -> plan:
    """The smaller of a and b, element by element (see :func:`binary`)."""
    return _binary(a, b, _ALG.binary_min, post_ops, out, dtype)


def _softmax_plan(x: Any, axis: int, alg: Any, out: Any, dtype: Any) -> plan:
    X = array_operand("x", _A.ARG_SRC, x)
    if isinstance(axis, bool) or not isinstance(axis, int) \
            or not -len(X.dims) <= axis < len(X.dims):
        raise invalid_argument(f"axis {axis!r} is not an axis of x, of shape {tuple(X.dims)}")
    axis %= len(X.dims)

    def make_pd(engine: Any, d: Any, dst_desc: Any, attr: Any) -> Any:
        return _A.softmax_forward.primitive_desc(engine, _FI, alg, d[0], dst_desc, axis, attr)

    p = plan("softmax", _A.softmax_forward, (alg._name_, axis), [X], X.dims,
             result_type(X.data_type, dtype, out), out, make_pd)
    p.in_place = (_A.ARG_SRC,)  # oneDNN's softmax computes in place
    return p


def softmax(x: Array, axis: int = -1, *, out: Optional[Array] = None,
            dtype: Optional[DType] = None) -> plan:
    """exp(x) / sum(exp(x)) along ``axis`` (oneDNN's softmax_accurate)."""
    return _softmax_plan(x, axis, _ALG.softmax_accurate, out, dtype)


def log_softmax(x: Array, axis: int = -1, *, out: Optional[Array] = None,
                dtype: Optional[DType] = None) -> plan:
    """x - log(sum(exp(x))) along ``axis`` (oneDNN's softmax_log)."""
    return _softmax_plan(x, axis, _ALG.softmax_log, out, dtype)
