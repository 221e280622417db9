"""The operands of ``dnnl.ops`` calls: pyopencl arrays as oneDNN sees them
(dims, strides in elements, data type; reinterpreted for transposes,
broadcasts and grouped weights) and their data types, and errors that name
the argument. Plan data: nothing here runs."""

from __future__ import annotations

import numbers
from typing import Any, Dict, Sequence, Tuple, Union

import numpy as np

from .. import _array_memory, _core, arrays
from .._errors import invalid_argument

_dt = _core.memory.data_type
#: What a ``dtype=`` argument takes: a NumPy dtype (or what ``numpy.dtype``
#: takes), a name ("f32", "bf16", ...) or a ``dnnl.memory.data_type``
DType = Union[str, "np.dtype[Any]", type, _core.memory.data_type]
INT64_MAX = 2 ** 63 - 1  # oneDNN's dims, strides and sizes are int64
_desc = _core.memory.desc
element_offset = _array_memory.element_offset  # a view's sub-memory offset, in elements

# Loaded on first use: importing dnnl_ocl_interop must not touch OpenCL
# (the emulated device is enabled before the process's first OpenCL call).
_Array: Any = None
_empty: Any = None


def _load_pyopencl() -> None:
    global _Array, _empty
    import pyopencl.array as cla

    _Array, _empty = cla.Array, cla.empty


# -- data types -----------------------------------------------------------------

# The data types dnnl.ops takes (docs/ops.md's table; the one place ops says
# which): arrays.data_type maps more dtypes (int64 as s64), which oneDNN's GPU
# primitives do not take as ops uses them (an OpenCL build failure, not a
# refusal). Values: how messages name them (the dtype arrays.numpy_dtype gives).
OPS_TYPES = {t: "bf16 (uint16 bits)" if t == _dt.bf16 else arrays.numpy_dtype(t).name
             for t in (_dt.f32, _dt.f16, _dt.bf16, _dt.f64, _dt.s8, _dt.u8, _dt.s32)}
_types_of_dtypes: Dict[Any, Any] = {}  # a memo of ops_type(dtype) for dtypes it took


def ops_type(dtype: Any, name: str) -> Any:
    """The oneDNN data type of a NumPy dtype or ``dtype=`` value as dnnl.ops
    takes it (``arrays.data_type(dtype, bf16_bits=True)``: uint16 is bf16),
    else TypeError naming the argument."""
    try:
        found = arrays.data_type(dtype, bf16_bits=True)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    if found not in OPS_TYPES:
        what = f"dtype {dtype} ({found.name})" if isinstance(dtype, np.dtype) else found.name
        raise TypeError(f"{name}: {what} is not a data type dnnl.ops takes "
                        f"({', '.join(OPS_TYPES.values())})")
    return found


def data_type_of(array: Any, name: str) -> Any:
    """The oneDNN data type of an array's elements (uint16: bf16 bits)."""
    dtype = array.dtype
    found = _types_of_dtypes.get(dtype)
    if found is None:
        found = _types_of_dtypes[dtype] = ops_type(dtype, name)
    return found


def resolve_type(dtype: Any, name: str = "dtype") -> Any:
    """A ``dtype=`` argument as a oneDNN data type (uint16 and "bf16": bf16)."""
    return ops_type(dtype, name)


def result_type(default: Any, dtype: Any, out: Any) -> Any:
    """The destination's data type: ``out``'s, else ``dtype``, else `default`;
    ``dtype`` and ``out`` must agree."""
    if out is not None:
        found = data_type_of(check_array(out, "out"), "out")  # plan() checks its shape
        if dtype is not None and resolve_type(dtype) != found:
            raise TypeError(f"out has dtype {out.dtype} ({found.name}), but dtype= asks for "
                            f"{resolve_type(dtype).name}")
        return found
    if dtype is not None:
        return resolve_type(dtype)
    return default


FLOATS = (_dt.f32, _dt.f16, _dt.bf16, _dt.f64)
INTEGERS_8 = (_dt.s8, _dt.u8)


def accumulating_type(src_type: Any) -> Any:
    """The default result type of matmul and convolutions: the source's for
    floating-point sources, f32 for int8 ones (dequantized)."""
    return _dt.f32 if src_type in INTEGERS_8 or src_type == _dt.s32 else src_type


# -- operands ---------------------------------------------------------------------

_dense: Dict[Tuple[int, ...], Tuple[int, ...]] = {}  # a memo of dense_strides


def row_major_ones(dims: Sequence[int], strides: Tuple[int, ...]) -> Tuple[int, ...]:
    """`strides` with the row-major stride for each dimension of one element.
    Such a dimension is never stepped along, so its stride means nothing;
    oneDNN compares descriptors so too (its primitive cache takes one for the
    other), yet some of its implementations misread an odd one (a ref:any
    concat)."""
    if 1 not in dims:
        return strides
    return tuple(d if n == 1 else s for n, s, d in zip(dims, strides, dense_strides(dims)))


def dense_strides(dims: Sequence[int]) -> Tuple[int, ...]:
    """Row-major strides (elements) of `dims`."""
    dims = tuple(dims)
    found = _dense.get(dims)
    if found is None:
        strides, step = [], 1
        for d in reversed(dims):
            strides.append(step)
            step *= max(d, 1)
        if len(_dense) > 4096:  # bounded: shapes may vary without end
            _dense.clear()
        found = _dense[dims] = tuple(reversed(strides))
    return found


class operand:
    """An array as one argument of a primitive: the dims and strides
    (elements) oneDNN sees, which may reinterpret the array's own (a
    transpose, a broadcast, grouped weights), or a fixed descriptor
    (prepared weights)."""

    __slots__ = ("name", "arg", "array", "dims", "strides", "data_type", "desc", "key",
                 "dense", "offset")

    def __init__(self, name: str, arg: int, array: Any, dims: Tuple[int, ...],
                 strides: Tuple[int, ...], data_type: Any, desc: Any = None,
                 key: Any = None, offset: int = 0) -> None:
        self.name = name
        self.arg = arg
        self.array = array
        self.dims = dims
        self.strides = strides
        self.data_type = data_type
        self.desc = desc
        # Elements from the aligned byte the array's memory starts at to its
        # first element (element_offset): a sub-memory offset
        self.offset = offset
        # Keys hold enum members by name: Enum.__hash__ is Python code
        self.key = key if key is not None else (dims, strides, data_type._name_, offset)
        # oneDNN's API takes this argument only dense, without a descriptor of
        # its own (per-channel normalization vectors and scales): a strided
        # array is copied first. (Copies for oneDNN's known problems are the
        # registry's decision: _plan._remedy.)
        self.dense = False

    def rekey(self) -> None:
        """The key after dims, strides or offset changed."""
        self.key = (self.dims, self.strides, self.data_type._name_, self.offset)

    def make_desc(self) -> Any:
        if self.desc is not None:
            return self.desc
        with naming(self.name):
            if self.offset:
                return _array_memory.at_element_offset(self.dims, self.data_type, self.strides,
                                                        self.offset)
            return _desc(list(self.dims), self.data_type, list(self.strides))


def check_array(array: Any, name: str) -> Any:
    """`array` if it is a pyopencl array with a queue, else TypeError/ValueError."""
    if _Array is None:
        _load_pyopencl()
    if not isinstance(array, _Array):
        raise TypeError(f"{name} must be a pyopencl.array.Array, not {type(array).__name__}")
    return array


_element_strides: Dict[Tuple[Tuple[int, ...], int], Tuple[int, ...]] = {}  # a memo


def element_strides(array: Any) -> Tuple[int, ...]:
    """A pyopencl array's strides in elements (pyopencl counts bytes)."""
    item = array.dtype.itemsize
    key = (array.strides, item)
    strides = _element_strides.get(key)
    if strides is None:
        if len(_element_strides) > 4096:  # bounded: layouts may vary without end
            _element_strides.clear()
        strides = _element_strides[key] = tuple(s // item for s in array.strides)
    return strides


def array_operand(name: str, arg: int, array: Any) -> operand:
    """`array` as oneDNN sees it without reinterpretation: its shape and
    strides. Every array operand is made here: a 0-dimensional array is
    refused here, with as_memory's message (oneDNN descriptors have at
    least one dimension)."""
    check_array(array, name)
    shape = array.shape
    if not shape:
        raise invalid_argument(f"{name}: array is 0-dimensional: reshape it to (1,) first")
    return operand(name, arg, array, shape, row_major_ones(shape, element_strides(array)),
                   data_type_of(array, name), offset=element_offset(array) if array.offset else 0)


def prepend(op: operand, count: int) -> None:
    """Give `op` `count` leading dimensions of 1 (NumPy's broadcast of a
    lower-rank operand)."""
    outer = op.dims[0] * op.strides[0] if op.dims else 1
    op.dims = (1,) * count + tuple(op.dims)
    op.strides = (max(outer, 1),) * count + tuple(op.strides)
    op.rekey()


def broadcast_to(op: operand, dims: Sequence[int], what: str = "the result") -> operand:
    """`op` with 1s prepended up to len(dims); each dim must equal dims' or be 1
    (oneDNN's broadcast), else ValueError naming the operand."""
    extra = len(dims) - len(op.dims)
    if extra < 0:
        raise invalid_argument(f"{op.name} has {len(op.dims)} dimensions, more than {what} "
                         f"({len(dims)})")
    if extra:
        prepend(op, extra)
    for mine, theirs in zip(op.dims, dims):
        if mine != theirs and mine != 1:
            raise invalid_argument(f"{op.name} of shape {tuple(op.array.shape)} does not broadcast "
                             f"to {what}'s shape {tuple(dims)}")
    return op


class naming:
    """Prefixes the message of a TypeError or ValueError (dnnl.error
    subclasses included) raised inside with the argument's name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        if isinstance(error, (TypeError, ValueError)):
            prefix(error, f"{self.name}: ")


def prefix(error: BaseException, text: str) -> None:
    """Put `text` in front of an exception's message (its class, and a
    dnnl.error's status, stay)."""
    if error.args and isinstance(error.args[0], str) and not error.args[0].startswith(text):
        error.args = (text + error.args[0],) + error.args[1:]


def number(value: Any, name: str) -> float:
    """`value` as a float; TypeError naming it unless it is a real number."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return float(value)
