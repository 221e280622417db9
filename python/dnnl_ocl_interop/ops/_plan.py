"""How one ``dnnl.ops`` call runs: operands, post-ops, the cache, events.

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
import numbers
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _core, arrays
from . import _cache, _context

_dt = _core.memory.data_type
_desc = _core.memory.desc
_execute = _core.ocl_interop.execute
_as_memory = arrays._as_memory  # as_memory with the descriptor's checks done once
_ALG = _core.algorithm

# Loaded on first use: importing dnnl_ocl_interop must not touch OpenCL
# (the emulated device is enabled before the process's first OpenCL call).
_Array: Any = None
_enqueue_marker: Any = None
_enqueue_barrier: Any = None
_empty: Any = None


def _load_pyopencl() -> None:
    global _Array, _enqueue_marker, _enqueue_barrier, _empty
    import pyopencl as cl
    import pyopencl.array as cla

    _Array, _empty = cla.Array, cla.empty
    _enqueue_marker, _enqueue_barrier = cl.enqueue_marker, cl.enqueue_barrier


_fast_arrays = True  # pyopencl's internal fast constructor works (see new_array)


def new_array(queue: Any, cl_context: Any, shape: Tuple[int, ...], dtype: Any,
              allocator: Any) -> Any:
    """A new dense (C-order) pyopencl array: the result of a call.

    pyopencl's public constructor (``cla.empty``) spends ~12 µs in Python
    per array on the emulated device; the fast path pyopencl itself uses for
    views (``_fast=True``) ~1.3 µs. That path is pyopencl's private
    signature: if it is refused, ``cla.empty`` is used from then on.
    """
    global _fast_arrays
    if _empty is None:
        _load_pyopencl()
    if _fast_arrays:
        size = 1
        for n in shape:
            size *= n
        item = dtype.itemsize
        try:
            return _Array(None, shape, dtype, allocator=allocator,
                          strides=tuple(s * item for s in dense_strides(shape)), _fast=True,
                          _size=size, _context=cl_context, _queue=queue)
        except TypeError:
            _fast_arrays = False
    return _empty(queue, shape, dtype, allocator=allocator)


# -- data types -----------------------------------------------------------------

_types_of_dtypes: Dict[Any, Any] = {}  # a memo of arrays.data_type(dtype, bf16_bits=True)


def data_type_of(array: Any, name: str) -> Any:
    """The oneDNN data type of an array's elements (uint16: bf16 bits)."""
    dtype = array.dtype
    found = _types_of_dtypes.get(dtype)
    if found is None:
        try:
            found = arrays.data_type(dtype, bf16_bits=True)
        except TypeError as e:
            raise TypeError(f"{name}: {e}") from None
        _types_of_dtypes[dtype] = found
    return found


def resolve_type(dtype: Any, name: str = "dtype") -> Any:
    """A ``dtype=`` argument as a oneDNN data type (uint16 and "bf16": bf16)."""
    try:
        return arrays.data_type(dtype, bf16_bits=True)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None


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
                 "dense")

    def __init__(self, name: str, arg: int, array: Any, dims: Tuple[int, ...],
                 strides: Tuple[int, ...], data_type: Any, desc: Any = None,
                 key: Any = None) -> None:
        self.name = name
        self.arg = arg
        self.array = array
        self.dims = dims
        self.strides = strides
        self.data_type = data_type
        self.desc = desc
        # Keys hold enum members by name: Enum.__hash__ is Python code
        self.key = key if key is not None else (dims, strides, data_type._name_)
        # oneDNN 3.13 reads this argument as dense whatever its strides (bias,
        # binary post-op inputs): a strided array is copied first
        self.dense = False

    def rekey(self) -> None:
        """The key after dims or strides changed."""
        self.key = (self.dims, self.strides, self.data_type._name_)

    def make_desc(self) -> Any:
        if self.desc is not None:
            return self.desc
        with naming(self.name):
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
    """`array` as oneDNN sees it without reinterpretation: its shape and strides."""
    check_array(array, name)
    return operand(name, arg, array, array.shape, element_strides(array),
                   data_type_of(array, name))


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
        raise ValueError(f"{op.name} has {len(op.dims)} dimensions, more than {what} "
                         f"({len(dims)})")
    if extra:
        prepend(op, extra)
    for mine, theirs in zip(op.dims, dims):
        if mine != theirs and mine != 1:
            raise ValueError(f"{op.name} of shape {tuple(op.array.shape)} does not broadcast "
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


def memory_of(array: Any, name: str, engine: Any, facts: Any) -> Any:
    """(memory, events) of an array: dnnl.arrays.as_memory with a
    descriptor whose facts it found once, errors named."""
    try:
        return _as_memory(array, engine, facts)
    except (TypeError, ValueError) as e:
        prefix(e, f"{name}: ")
        raise


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
            raise ValueError(f"{name}: {algorithm} is not one of the {kind} algorithms ops takes")
        return algorithm
    found = table.get(algorithm) if isinstance(algorithm, str) else None
    if found is None:
        raise ValueError(f"{name}: unknown {kind} algorithm {algorithm!r} (one of "
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


def number(value: Any, name: str) -> float:
    """`value` as a float; TypeError naming it unless it is a real number."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return float(value)


def _eltwise_post_op(alg: Any, params: Sequence[Any], name: str) -> Tuple[Any, ...]:
    if len(params) > 2:
        raise ValueError(f"{name}: an eltwise post-op takes at most alpha and beta")
    alpha, beta = ELTWISE_DEFAULTS.get(alg._name_, (0.0, 0.0))
    if len(params) > 0:
        alpha = number(params[0], f"{name} alpha")
    if len(params) > 1:
        beta = number(params[1], f"{name} beta")
    return ("eltwise", alg._name_, alpha, beta)


# A binary post-op with a number is an eltwise linear: x*alpha + beta.
SCALAR_BINARY = {_ALG.binary_add: lambda v: (1.0, v), _ALG.binary_sub: lambda v: (1.0, -v),
                  _ALG.binary_mul: lambda v: (v, 0.0), _ALG.binary_div: lambda v: (1.0 / v, 0.0)}


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
                raise ValueError(f"{name}: ('sum', scale) takes one scale")
            if not has_out:
                raise ValueError(f"{name}: a 'sum' post-op adds to out=, which is not given")
            key.append(("sum", number(rest[0], f"{name} scale") if rest else 1.0))
        elif kind == "eltwise":
            if not rest:
                raise ValueError(f"{name}: ('eltwise', name[, alpha[, beta]]) needs a name")
            key.append(_eltwise_post_op(eltwise_algorithm(rest[0], name), rest[1:], name))
        elif kind == "binary" or kind in BINARY:
            if kind == "binary":
                if not rest:
                    raise ValueError(f"{name}: ('binary', name, array) needs a name")
                kind, rest = rest[0], rest[1:]
            alg = binary_algorithm(kind, name)
            if len(rest) != 1:
                raise ValueError(f"{name}: a binary post-op takes one operand: ({kind!r}, array)")
            other = rest[0]
            if isinstance(other, numbers.Real) and not isinstance(other, bool) \
                    and alg in SCALAR_BINARY:
                alpha, beta = SCALAR_BINARY[alg](float(other))
                key.append(("eltwise", "eltwise_linear", alpha, beta))
                continue
            arg = _core.ARG_ATTR_MULTIPLE_POST_OP(i) | _core.ARG_SRC_1
            op = broadcast_to(array_operand(name, arg, other), dst_dims)
            op.dense = True  # read as dense by matmul's and convolution's kernels
            operands.append(op)
            key.append(("binary", alg._name_, op.key))
        elif kind in ELTWISE:
            key.append(_eltwise_post_op(ELTWISE[kind], rest, name))
        else:
            raise ValueError(f"{name}: unknown post-op {kind!r} (an eltwise or binary "
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
    op.dense = True
    if op.data_type != _dt.f32 or len(op.dims) != 1 or op.dims[0] != channels:
        raise ValueError(f"{name}: per-channel scales are a 1-D float32 array of {channels} "
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


# -- a call ------------------------------------------------------------------------

class plan:
    """One call of an ops function, before it runs (see the module docstring).

    ``make_pd(engine, descs, dst_desc, attr)`` makes the primitive descriptor
    from the descriptors of ``operands[:n]`` (in order; post-op and scale
    operands follow, and are in `attr`) and the destination's.
    """

    __slots__ = ("op", "family", "params", "operands", "dst_dims", "dst_type", "dst_arg",
                 "out", "post_ops", "scales", "scalar_scales", "make_pd", "queue_array",
                 "dst_desc", "dense_only")

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
        if out is not None:
            check_array(out, "out")
            if tuple(out.shape) != self.dst_dims:
                raise ValueError(f"out has shape {tuple(out.shape)}, the result of {op} has "
                                 f"shape {self.dst_dims}")
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
    if p.out is None:
        return dense_strides(p.dst_dims)
    return element_strides(p.out)


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
    dst_strides = None
    if p.out is not None:
        dst_strides = _dst_strides(p)
        if dst_strides == dense_strides(p.dst_dims):
            dst_strides = None
    return (p.op, id(ctx.engine), p.params, tuple([op.key for op in p.operands]),
            p.dst_dims, p.dst_type._name_, dst_strides, p.post_ops, tuple(p.scales))


def queue_of(p: plan) -> Any:
    """The queue the call runs on: ``out``'s, else the first operand's."""
    holder = p.out if p.out is not None else p.queue_array
    if holder.queue is None:
        name = "out" if p.out is not None else p.operands[0].name
        raise ValueError(f"{name} has no queue: give it one (array.with_queue(queue))")
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
    if not p.dense_only or target is None or is_dense(p.dst_dims, _dst_strides(p)):
        return None
    p.out, p.queue_array = None, target
    return target


def run(p: plan) -> Any:
    """Execute a plan; returns the result array (``out`` or a new one)."""
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
        # oneDNN 3.13 ignores deps on in-order streams: a barrier waits
        # instead, unless every event is a marker of this queue's own.
        deps = ctx.foreign(deps)
        if deps:
            _enqueue_barrier(queue, wait_for=deps)
            deps = []
    event = _execute(entry.primitive, ctx.stream, args, deps)
    if event is None:  # in-order queue: a marker stands for the primitive
        event = _enqueue_marker(queue)
        ctx.add_marker(event)
    if out is p.out:
        # The primitive waited for out's events: they are done when it is.
        del out.events[:]
    out.add_event(event)
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
