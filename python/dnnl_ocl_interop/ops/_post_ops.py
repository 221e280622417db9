"""Post-ops and scales of ``dnnl.ops`` calls: the ``post_ops=[...]``
spelling (see docs/ops.md) parsed into a cache key, operands and a
``primitive_attr``; ``*_scale=`` arguments as scale masks with their
factors (numbers as one f32 in device memory, arrays per channel)."""

from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .. import _core, arrays
from .._errors import invalid_argument
from ._operands import array_operand, broadcast_to, number, operand

_dt = _core.memory.data_type
_desc = _core.memory.desc
_ALG = _core.algorithm
#: What ``post_ops=`` takes: a list of names ("relu") and tuples (("add",
#: array), ("eltwise", name, alpha), ("sum", scale), ...; docs/ops.md)
PostOps = Sequence[Union[str, Tuple[Any, ...]]]


# -- post-ops ---------------------------------------------------------------------

def _members(prefix: str) -> Dict[str, Any]:
    return {name[len(prefix):]: alg for name, alg in _ALG.__members__.items()
            if name.startswith(prefix)}


ELTWISE = _members("eltwise_")
ELTWISE.update({"sigmoid": _ALG.eltwise_logistic, "silu": _ALG.eltwise_swish,
                "softplus": _ALG.eltwise_soft_relu, "gelu": _ALG.eltwise_gelu_erf})
# alpha and beta of an algorithm named without them (the usual functions)
# (by member name: Enum.__hash__ is Python code)
ELTWISE_DEFAULTS = {"eltwise_swish": (1.0, 0.0), "eltwise_elu": (1.0, 0.0),
                    "eltwise_elu_use_dst_for_bwd": (1.0, 0.0),
                    "eltwise_linear": (1.0, 0.0), "eltwise_soft_relu": (1.0, 0.0),
                    "eltwise_pow": (1.0, 1.0), "eltwise_hardsigmoid": (1 / 6, 0.5),
                    "eltwise_hardswish": (1 / 6, 0.5)}
BINARY = {name: alg for name, alg in _members("binary_").items() if name != "select"}
BINARY.update({"maximum": _ALG.binary_max, "minimum": _ALG.binary_min})


_MEMBER_NAMES: Dict[int, frozenset] = {}  # id(table) -> names of its members


def _algorithm(kind: str, table: Dict[str, Any], algorithm: Any, name: str) -> Any:
    """`algorithm` (a name in `table` or one of its ``dnnl.algorithm``
    members), else ValueError naming the argument."""
    if type(algorithm) is _ALG:
        names = _MEMBER_NAMES.get(id(table))
        if names is None:
            names = _MEMBER_NAMES[id(table)] = frozenset(a._name_ for a in table.values())
        if algorithm._name_ not in names:
            raise invalid_argument(f"{name}: {algorithm} is not one of the {kind} algorithms ops takes")
        return algorithm
    found = table.get(algorithm) if isinstance(algorithm, str) else None
    if found is None:
        raise invalid_argument(f"{name}: unknown {kind} algorithm {algorithm!r} (one of "
                         f"{', '.join(sorted(table))})")
    return found


def eltwise_algorithm(algorithm: Any, name: str = "algorithm") -> Any:
    """A oneDNN eltwise algorithm from its name ("relu", "gelu_tanh", ...;
    aliases sigmoid, silu, softplus, gelu) or an ``algorithm`` member."""
    return _algorithm("eltwise", ELTWISE, algorithm, name)


def binary_algorithm(algorithm: Any, name: str = "algorithm") -> Any:
    """A oneDNN two-input binary algorithm from its name ("add", "max", "ge",
    ...) or an ``algorithm`` member."""
    return _algorithm("binary", BINARY, algorithm, name)


# Algorithms whose alpha and beta oneDNN restricts (math::is_eltwise_ok): the
# bounds of clip must be ordered, the slope of the use_dst_for_bwd variants of
# relu and elu must not be negative (NaN fails both).
_ORDERED = frozenset({"eltwise_clip", "eltwise_clip_v2", "eltwise_clip_v2_use_dst_for_bwd"})
_NON_NEGATIVE_ALPHA = frozenset({"eltwise_relu_use_dst_for_bwd", "eltwise_elu_use_dst_for_bwd"})


def check_eltwise_params(alg: Any, alpha: float, beta: float, name: str) -> None:
    """ValueError naming `name` for alpha and beta oneDNN refuses for `alg`
    (it says only "could not append an elementwise post-op")."""
    if alg._name_ in _ORDERED and not alpha <= beta:
        raise invalid_argument(f"{name}: {alg._name_[len('eltwise_'):]} takes alpha (the lower "
                               "bound) <= beta (the upper bound, 0 unless given), not alpha "
                               f"{alpha} and beta {beta}")
    if alg._name_ in _NON_NEGATIVE_ALPHA and not alpha >= 0:
        raise invalid_argument(f"{name}: {alg._name_[len('eltwise_'):]} takes an alpha of 0 or "
                               f"more, not {alpha}")


def _eltwise_post_op(alg: Any, params: Sequence[Any], name: str) -> Tuple[Any, ...]:
    if len(params) > 2:
        raise invalid_argument(f"{name}: an eltwise post-op takes at most alpha and beta")
    alpha, beta = ELTWISE_DEFAULTS.get(alg._name_, (0.0, 0.0))
    if len(params) > 0:
        alpha = number(params[0], f"{name} alpha")
    if len(params) > 1:
        beta = number(params[1], f"{name} beta")
    check_eltwise_params(alg, alpha, beta, name)
    return ("eltwise", alg._name_, alpha, beta)


# A binary post-op with a number is an eltwise linear: x*alpha + beta.
SCALAR_BINARY = {_ALG.binary_add: lambda v: (1.0, v), _ALG.binary_sub: lambda v: (1.0, -v),
                  _ALG.binary_mul: lambda v: (v, 0.0), _ALG.binary_div: lambda v: (1.0 / v, 0.0)}


def scalar_linear(alg: Any, value: Any, name: str) -> Tuple[float, float]:
    """(alpha, beta) of the eltwise linear standing for binary `alg` with a
    number; dividing by 0 is refused naming `name`."""
    value = float(value)
    if value == 0 and alg == _ALG.binary_div:
        raise invalid_argument(f"{name}: division by 0")
    return SCALAR_BINARY[alg](value)


def parse_post_ops(post_ops: Any, dst_dims: Tuple[int, ...], has_out: bool
                   ) -> Tuple[Tuple[Any, ...], List[operand]]:
    """(key, operands) of a ``post_ops=`` list; see docs/ops.md for the
    spelling. The key holds everything the primitive depends on (kinds,
    algorithms, alpha/beta, sum scales, binary operands' layouts)."""
    if not post_ops:
        return (), []
    if isinstance(post_ops, (str, tuple)) or not isinstance(post_ops, (list, tuple)):
        raise TypeError("post_ops must be a list of post-ops (e.g. [\"relu\", (\"add\", b)]), "
                        f"not {type(post_ops).__name__}")
    key: List[Any] = []
    operands: List[operand] = []
    for i, spec in enumerate(post_ops):
        name = f"post_ops[{i}]"
        if isinstance(spec, str):
            key.append(_eltwise_post_op(eltwise_algorithm(spec, name), (), name))
            continue
        if not isinstance(spec, tuple) or not spec or not isinstance(spec[0], str):
            raise TypeError(f"{name} must be a name (\"relu\") or a tuple starting with one "
                            f"((\"add\", array), (\"eltwise\", \"gelu_tanh\"), (\"sum\", 0.5)), "
                            f"not {spec!r}")
        kind, rest = spec[0], spec[1:]
        if kind == "sum":
            if len(rest) > 1:
                raise invalid_argument(f"{name}: ('sum', scale) takes one scale")
            if not has_out:
                raise invalid_argument(f"{name}: a 'sum' post-op adds to out=, which is not given")
            key.append(("sum", number(rest[0], f"{name} scale") if rest else 1.0))
        elif kind == "eltwise":
            if not rest:
                raise invalid_argument(f"{name}: ('eltwise', name[, alpha[, beta]]) needs a name")
            key.append(_eltwise_post_op(eltwise_algorithm(rest[0], name), rest[1:], name))
        elif kind == "binary" or kind in BINARY:
            if kind == "binary":
                if not rest:
                    raise invalid_argument(f"{name}: ('binary', name, array) needs a name")
                kind, rest = rest[0], rest[1:]
            alg = binary_algorithm(kind, name)
            if len(rest) != 1:
                raise invalid_argument(f"{name}: a binary post-op takes one operand: ({kind!r}, array)")
            other = rest[0]
            if isinstance(other, numbers.Real) and not isinstance(other, bool) \
                    and alg in SCALAR_BINARY:
                alpha, beta = scalar_linear(alg, other, name)
                key.append(("eltwise", "eltwise_linear", alpha, beta))
                continue
            arg = _core.ARG_ATTR_MULTIPLE_POST_OP(i) | _core.ARG_SRC_1
            op = broadcast_to(array_operand(name, arg, other), dst_dims)
            operands.append(op)
            key.append(("binary", alg._name_, op.key))
        elif kind in ELTWISE:
            key.append(_eltwise_post_op(ELTWISE[kind], rest, name))
        else:
            raise invalid_argument(f"{name}: unknown post-op {kind!r} (an eltwise or binary "
                             "algorithm name, 'eltwise', 'binary' or 'sum')")
    return tuple(key), operands


def post_ops_attr(key: Tuple[Any, ...], descs: Sequence[Any]) -> Any:
    """A primitive_attr with the post-ops of a parse_post_ops key; `descs`
    are the binary operands' descriptors, in order."""
    attr = _core.primitive_attr()
    if not key:
        return attr
    ops = _core.post_ops()
    binary = iter(descs)
    for item in key:
        if item[0] == "eltwise":
            ops.append_eltwise(getattr(_ALG, item[1]), item[2], item[3])
        elif item[0] == "sum":
            ops.append_sum(item[1])
        else:
            ops.append_binary(getattr(_ALG, item[1]), next(binary))
    attr.set_post_ops(ops)
    return attr


# -- scales ------------------------------------------------------------------------

def scale_operand(value: Any, name: str, target_arg: int, mask: int, channels: int
                  ) -> Tuple[Any, Optional[operand], Optional[float]]:
    """A ``*_scale=`` argument: (key, operand or None, number or None).

    A number is one factor (passed as one f32 in device memory: oneDNN 3.13's
    reorder takes host-scalar scales when it is made and refuses them when it
    runs); a pyopencl array of `channels` f32 factors varies along the
    dimensions of `mask`."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return (target_arg, 0), None, float(value)
    op = array_operand(name, _core.ARG_ATTR_SCALES | target_arg, value)
    op.dense = True  # oneDNN takes per-channel scales dense only (no descriptor of their own)
    if op.data_type != _dt.f32 or len(op.dims) != 1 or op.dims[0] != channels:
        raise invalid_argument(f"{name}: per-channel scales are a 1-D float32 array of {channels} "
                         f"factors, not {op.data_type.name} {tuple(op.dims)}")
    return (target_arg, mask, op.key), op, None


def scales_attr(attr: Any, scales: Sequence[Tuple[Any, ...]]) -> None:
    """Set the scales of `scales` (keys of scale_operand) on `attr`."""
    for key in scales:
        attr.set_scales_mask(key[0], key[1])


# (id(engine), value) -> (engine, memory holding the value); the engine object
# is kept so that its id is not reused while the entry exists
_scalars: Dict[Tuple[int, float], Tuple[Any, Any]] = {}
_ONE_F32 = None


def scalar_memory(engine: Any, value: float) -> Any:
    """One f32 in device memory on `engine`, written once and shared by
    every call scaling by `value` (at most 256 values are kept)."""
    global _ONE_F32
    key = (id(engine), value)
    found = _scalars.get(key)
    if found is None:
        import numpy as np

        if _ONE_F32 is None:
            _ONE_F32 = _desc([1], _dt.f32, [1])
        memory = _core.memory(_ONE_F32, engine)
        arrays.write(memory, np.array([value], np.float32))
        if len(_scalars) >= 256:
            _scalars.clear()
        found = _scalars[key] = (engine, memory)
    return found[1]
