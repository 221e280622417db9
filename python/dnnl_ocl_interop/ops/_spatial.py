"""Spatial parameters of convolutions and pooling, spelled as in PyTorch:
an int for every spatial dimension or one per dimension; padding also as
(left, right) pairs, "valid" or "same"; dilation 1 means none (oneDNN counts
from 0)."""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

from ._operands import INT64_MAX, operand
from .._errors import invalid_argument



def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value > INT64_MAX:
        raise invalid_argument(f"{name} values must be at most 2**63 - 1 (oneDNN's dims are "
                               f"int64), not {value}")
    return value


def per_dim(value: Any, count: int, name: str, minimum: int) -> Tuple[int, ...]:
    """An int or `count` ints, each at least `minimum` (and an int64)."""
    if type(value) is int and minimum <= value <= INT64_MAX:  # the common case, quickly
        return (value,) * count
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise invalid_argument(f"{name} has {len(value)} values for {count} spatial dimensions")
        values = tuple(_int(v, name) for v in value)
    else:
        values = (_int(value, name),) * count
    if any(v < minimum for v in values):
        raise invalid_argument(f"{name} values must be at least {minimum}, not {values}")
    return values


def paddings(padding: Any, count: int, extents: Sequence[int], strides: Sequence[int]
             ) -> Tuple[List[int], List[int]]:
    """(left, right) padding of each spatial dimension; `extents` are the
    dilated kernel sizes ("same" pads them to keep the size at stride 1)."""
    if type(padding) is int and 0 <= padding <= INT64_MAX:  # the common case, quickly
        return [padding] * count, [padding] * count
    if padding == "valid":
        return [0] * count, [0] * count
    if padding == "same":
        if any(s != 1 for s in strides):
            raise invalid_argument("padding='same' needs stride 1")
        left = [(e - 1) // 2 for e in extents]
        return left, [e - 1 - lo for e, lo in zip(extents, left)]
    if isinstance(padding, (list, tuple)):
        if len(padding) != count:
            raise invalid_argument(f"padding has {len(padding)} values for {count} spatial dimensions")
        left, right = [], []
        for p in padding:
            if isinstance(p, (list, tuple)):
                if len(p) != 2:
                    raise invalid_argument(f"padding pairs are (left, right), not {p!r}")
                left.append(_int(p[0], "padding"))
                right.append(_int(p[1], "padding"))
            else:
                left.append(_int(p, "padding"))
                right.append(left[-1])
    else:
        left = [_int(padding, "padding")] * count
        right = list(left)
    if any(v < 0 for v in left + right):
        raise invalid_argument(f"padding must not be negative: {left}, {right}")
    return left, right


def spatial_count(x: operand, minimum: int = 1, maximum: int = 3) -> int:
    """How many spatial dimensions an N, C, spatial... operand has."""
    count = len(x.dims) - 2
    if not minimum <= count <= maximum:
        raise invalid_argument(f"{x.name} must have the shape (N, C, spatial...) with {minimum} to "
                         f"{maximum} spatial dimensions, not {tuple(x.array.shape)}")
    return count


def output_sizes(x: operand, extents: Sequence[int], strides: Sequence[int],
                 left: Sequence[int], right: Sequence[int]) -> List[int]:
    """Spatial output sizes of a convolution or pooling window."""
    sizes = [(i + lo + hi - e) // s + 1
             for i, e, s, lo, hi in zip(x.dims[2:], extents, strides, left, right)]
    if any(o < 1 for o in sizes):
        raise invalid_argument(f"{x.name} of spatial size {list(x.dims[2:])} is smaller than the "
                         f"window ({list(extents)}, padding {list(left)}/{list(right)})")
    return sizes
