"""Fused patterns that oneDNN documents for its graph API, built, partitioned
and compiled for one engine, ready to call.

- :func:`sdpa`: scaled dot-product attention, as oneDNN's
  ``examples/graph/sdpa.cpp`` (and ``sdpa_bottom_right_causal_mask.cpp``
  for the causal mask) builds it;
- :func:`gqa`: grouped-query attention, as ``examples/graph/gqa.cpp``;
- :func:`gated_mlp`: MatMul (gate) -> Swish -> Multiply by MatMul (up) ->
  MatMul (down), as ``examples/graph/gated_mlp.cpp``;
- :func:`mlp`: MatMul -> activation -> MatMul (oneDNN's
  ``doc/graph/fusion_patterns/gated_mlp.md`` names it as the plain form).

Each builder returns a :class:`pattern`. Calling it,
``pattern(stream, *inputs, output=None, deps=())``, executes the compiled
partition(s) and returns ``(output, event_or_None)``. Inputs and the output
are ``dnnl.graph.tensor`` objects, USM-based ``dnnl.memory`` objects (their
data handle is used) or ``int`` USM pointers of the engine's context. Graph
tensors on OpenCL engines are USM pointers, so pyopencl arrays (OpenCL
buffers) cannot be passed: a ``TypeError`` says so; make the data USM
memory (``dnnl.usm``, or ``dnnl.ocl_interop.make_memory(...,
memory_kind.usm, ...)``) instead. Without ``output`` one is allocated with
the engine's allocator (``dnnl.graph.tensor(..., MEMORY_ALLOCATE)``).

Builders cache their patterns in one module-level cache keyed by the
engine, the builder, the shapes, the data type and the options: the same
call returns the same object. The cache keeps its engines, compiled
partitions and their scratchpads (allocated once per pattern from the
engine's allocator) alive until :func:`clear_cache`; :func:`cache_info`
counts hits and misses.
"""

from __future__ import annotations

import math
import operator
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import _core
from .._errors import invalid_argument
from .._core import graph as _g
from . import ocl_interop as _goi

__all__ = ["cache_info", "clear_cache", "gated_mlp", "gqa", "mlp", "pattern", "sdpa"]

_lt = _g.logical_tensor
_STRIDED = _lt.layout_type.strided
_HOST_SCALAR = _lt.property_type.host_scalar
_DTYPES = {"f32": _lt.data_type.f32, "f16": _lt.data_type.f16, "bf16": _lt.data_type.bf16}
_ACTIVATIONS = {"relu": _g.op.kind.ReLU, "gelu": _g.op.kind.GELU,
                "sigmoid": _g.op.kind.Sigmoid, "tanh": _g.op.kind.Tanh}


def _is_pointer(value: Any) -> bool:
    """An int, or an object that converts to one (``__index__``: a typed
    pointer such as dnnl.usm.allocation), as memory handles are taken."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _dense_strides(dims: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= max(d, 1)
    return strides[::-1]


def _unique(ports: Sequence[Any]) -> list[Any]:
    """`ports` without repeated logical tensor ids, in order."""
    first: dict[int, Any] = {}
    for port in ports:
        first.setdefault(port.get_id(), port)
    return list(first.values())


@dataclass
class _port:
    """One input or output of a pattern: its logical tensor and its name."""

    name: str
    logical: Any  # dnnl.graph.logical_tensor


class pattern:
    """A compiled pattern on one engine; see the module docstring.

    Attributes: ``name``, ``engine``, ``inputs`` (names of the inputs in
    call order), ``input_shapes``, ``output_shape``, ``dtype``,
    ``partitions`` (how many partitions oneDNN made of the graph),
    ``fused`` (``True`` when the whole pattern is one partition),
    ``implementation`` (a description of the partitioning),
    ``scratchpad_bytes`` (per partition).
    """

    def __init__(self, name: str, engine: Any, ops: Sequence[Any], inputs: Sequence[_port],
                 output: _port, scalars: dict[int, Any], dtype: str) -> None:
        self.name = name
        self.engine = engine
        self.dtype = dtype
        self._inputs = list(inputs)
        self._output = output
        graph = _g.graph(_core.engine.kind.gpu)
        for op in ops:
            graph.add_op(op)
        graph.finalize()
        parts = graph.get_partitions()
        unsupported = [p.get_ops() for p in parts if not p.is_supported()]
        if unsupported:
            raise RuntimeError(f"{name}: oneDNN does not support the partitions with ops "
                               f"{unsupported}")
        self._partitions = parts
        self._ops_per_partition = [p.get_ops_num() for p in parts]
        self._compiled = [p.compile(_unique(p.get_input_ports()), p.get_output_ports(), engine)
                          for p in parts]
        for i, (compiled, ops_count) in enumerate(zip(self._compiled, self._ops_per_partition)):
            # What a dnnl.profiling recorder calls its executes.
            compiled._label = (f"{name} ({ops_count} ops)" if len(parts) == 1 else
                               f"{name} partition {i + 1}/{len(parts)} ({ops_count} ops)")
        # host scalars (scale, causal-mask constants) made once, by logical tensor id
        self._scalars = {tid: _g.tensor.make_scalar_tensor(lt, value)
                         for tid, (lt, value) in scalars.items()}
        # a user scratchpad for the partitions that need one
        self._scratchpads = []
        for compiled in self._compiled:
            scratch = compiled.get_scratchpad_logical_tensor()
            self._scratchpads.append(_g.tensor(scratch, engine)
                                     if scratch.get_mem_size() > 0 else None)
        self._lock = threading.Lock()

    # ---------------------------------------------------------- description

    @property
    def inputs(self) -> list[str]:
        """Names of the inputs, in the order ``__call__`` takes them."""
        return [p.name for p in self._inputs]

    @property
    def input_shapes(self) -> list[list[int]]:
        """Dims of the inputs, in call order."""
        return [p.logical.get_dims() for p in self._inputs]

    @property
    def output_shape(self) -> list[int]:
        """Dims of the output."""
        return self._output.logical.get_dims()

    @property
    def partitions(self) -> int:
        """How many partitions oneDNN made of the pattern's graph."""
        return len(self._partitions)

    @property
    def fused(self) -> bool:
        """Whether oneDNN took the whole pattern as one partition."""
        return len(self._partitions) == 1

    @property
    def scratchpad_bytes(self) -> list[int]:
        """The scratchpad size of each compiled partition (0: none needed)."""
        return [c.get_scratchpad_logical_tensor().get_mem_size() for c in self._compiled]

    @property
    def implementation(self) -> str:
        """How oneDNN split the pattern, as far as the graph API tells: the
        number of partitions and of ops in each. oneDNN 3.13 has no
        implementation query on a compiled partition; :meth:`dispatched`
        (or ``ONEDNN_VERBOSE=profile_exec``) reports the kernel of each
        execution."""
        if self.fused:
            return f"one fused partition of {self._ops_per_partition[0]} ops"
        return (f"{len(self._partitions)} partitions of "
                f"{', '.join(map(str, self._ops_per_partition))} ops")

    def dispatched(self, stream: Any, *inputs: Any, output: Any = None) -> list[dict[str, Any]]:
        """Runs the pattern once (as ``__call__``, then waits on `stream`)
        with oneDNN's execution lines on and returns what oneDNN reported for
        each partition it executed: ``{"partition_kind", "ops",
        "implementation", "backend", "time_ms"}`` (for instance ``"sdp"``,
        ``["bmm1", ...]``, ``"larger_partition_kernel_t"``,
        ``"dnnl_backend"``; ``separate_kernels``: internal ops oneDNN logged
        as kernels of their own before the partition, such as the causal
        mask's ``"_gen_index"``). oneDNN 3.13 has no query for this; its
        verbose lines are the only source: they are collected from standard
        output by a ``dnnl.verbose("profile_exec", collect=True)`` region
        (other output goes on; execution lines other threads print
        meanwhile are collected too). Unless ``ONEDNN_VERBOSE`` asked for
        ``profile_exec``, the region sets oneDNN's verbose level for the
        call (docs/api.md, Verbose output). On a queue with profiling
        enabled oneDNN prints these lines from the OpenCL runtime's thread
        when the kernels complete, which may be after the wait returns:
        such a stream is refused (``dnnl.invalid_arguments``). For
        diagnosis, not for hot paths."""
        import pyopencl as cl

        from .._verbose import verbose

        queue = _core.ocl_interop.get_command_queue(stream)
        if queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
            raise invalid_argument(
                "dispatched() needs a stream whose queue has no profiling enabled: on such a "
                "queue oneDNN prints its execution lines from the OpenCL runtime's thread when "
                "the kernels complete, possibly after the wait (use dnnl.profiling for its times)")
        with verbose("profile_exec", collect=True) as region:
            self(stream, *inputs, output=output)
            stream.wait()
        found: list[dict[str, Any]] = []
        internal: list[str] = []
        for line in region.lines:
            fields = line.split(",")
            if len(fields) < 8 or fields[2:4] != ["graph", "exec"]:
                continue
            if not fields[5].isdigit():
                # an op oneDNN runs as its own kernel inside the next partition
                # (the causal mask's GenIndex): "_gen_index(_gen_index)"
                internal.append(fields[5].split("(")[0])
                continue
            found.append({"partition_kind": fields[6], "ops": fields[7].split(";"),
                          "implementation": fields[-3], "backend": fields[-2],
                          "time_ms": float(fields[-1]), "separate_kernels": internal})
            internal = []
        return found

    def __repr__(self) -> str:
        return (f"<dnnl.graph.patterns.pattern {self.name} {self.dtype} "
                f"inputs={dict(zip(self.inputs, self.input_shapes))} "
                f"output={self.output_shape}: {self.implementation}>")

    # ------------------------------------------------------------- calling

    def _tensor(self, port: _port, value: Any) -> Any:
        lt = port.logical
        dims, dtype = lt.get_dims(), lt.get_data_type()
        if isinstance(value, _g.tensor):
            got = value.get_logical_tensor()
            if got.get_data_type() != dtype:
                raise TypeError(f"{self.name}: {port.name} must be {dtype.name}, "
                                f"got a tensor of {got.get_data_type().name}")
            if got.get_dims() != dims:
                raise invalid_argument(f"{self.name}: {port.name} must have dims {dims}, "
                                 f"got a tensor of {got.get_dims()}")
            if got.get_layout_type() == _STRIDED and got.get_strides() != _dense_strides(dims):
                raise invalid_argument(f"{self.name}: {port.name} must be dense (strides "
                                 f"{_dense_strides(dims)}), got {got.get_strides()}")
            handle = value.get_data_handle()
        elif isinstance(value, _core.memory):
            if _core.ocl_interop.get_memory_kind(value) != _core.ocl_interop.memory_kind.usm:
                raise TypeError(f"{self.name}: {port.name} is a buffer-based dnnl.memory; "
                                "graph tensors need USM memory (memory_kind.usm)")
            desc = value.get_desc()
            if desc.get_data_type().name != dtype.name:
                raise TypeError(f"{self.name}: {port.name} must be {dtype.name}, "
                                f"got a memory of {desc.get_data_type().name}")
            if list(desc.get_dims()) != dims:
                raise invalid_argument(f"{self.name}: {port.name} must have dims {dims}, "
                                 f"got a memory of {list(desc.get_dims())}")
            if list(desc.get_strides()) != _dense_strides(dims):
                raise invalid_argument(f"{self.name}: {port.name} must be a dense memory "
                                 f"(strides {_dense_strides(dims)})")
            handle = value.get_data_handle()
        elif _is_pointer(value):
            handle = value  # an int, or a typed pointer (dnnl.usm.allocation)
        else:
            hint = (" pyopencl arrays are OpenCL buffers, which graph tensors cannot use;"
                    if type(value).__module__.startswith("pyopencl") else "")
            raise TypeError(f"{self.name}: {port.name} must be a dnnl.graph.tensor, a USM "
                            f"dnnl.memory, or a USM pointer (an int or a dnnl.usm.allocation), "
                            f"not {type(value).__name__}.{hint} allocate USM memory (dnnl.usm) instead")
        return _g.tensor(lt, self.engine, handle)  # checks the pointer and its size

    def __call__(self, stream: Any, *inputs: Any, output: Any = None,
                 deps: Sequence[Any] = ()) -> tuple[Any, Any]:
        """Executes the pattern on `stream` after the events `deps`.
        Returns ``(output, event)``: the output as a ``dnnl.graph.tensor``
        (the given one, a tensor on the given memory or pointer, or a new
        one from the engine's allocator) and the last partition's
        ``cl.Event`` (``None`` when oneDNN returns none; wait on the
        stream then). Calls of one pattern share its scratchpad: run them
        on one in-order queue, or wait between them."""
        if len(inputs) != len(self._inputs):
            raise TypeError(f"{self.name} takes {len(self._inputs)} inputs "
                            f"({', '.join(self.inputs)}), got {len(inputs)}")
        tensors = {p.logical.get_id(): self._tensor(p, v) for p, v in zip(self._inputs, inputs)}
        out_id = self._output.logical.get_id()
        if output is None:
            result = _g.tensor(self._output.logical, self.engine)
        else:
            result = self._tensor(self._output, output)
        tensors[out_id] = result
        tensors.update(self._scalars)
        event = None
        with self._lock:
            for part, compiled, scratch in zip(self._partitions, self._compiled,
                                               self._scratchpads):
                for port in part.get_output_ports():  # intermediates of several partitions
                    if port.get_id() not in tensors:
                        tensors[port.get_id()] = _g.tensor(port, self.engine)
                # a tensor used by two ops (src of both gated-MLP MatMuls) is one port twice
                ins = [tensors[i] for i in dict.fromkeys(p.get_id() for p in part.get_input_ports())]
                outs = [tensors[p.get_id()] for p in part.get_output_ports()]
                event = _goi.execute(compiled, stream, ins, outs,
                                     deps=list(deps) if event is None else [event],
                                     scratchpad=scratch)
        return result, event


# ------------------------------------------------------------------ cache

_cache: dict[tuple, pattern] = {}
_cache_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0}


def cache_info() -> dict[str, int]:
    """``{"hits", "misses", "size"}`` of the module-level pattern cache."""
    with _cache_lock:
        return {**_stats, "size": len(_cache)}


def clear_cache() -> None:
    """Drops every cached pattern (and so its engine and compiled partitions,
    once nothing else holds them) and zeroes the counters."""
    with _cache_lock:
        _cache.clear()
        _stats.update(hits=0, misses=0)


def _cached(engine: Any, key: tuple, build: Callable[[], pattern]) -> pattern:
    if not isinstance(engine, _core.engine):
        raise TypeError(f"engine must be a dnnl.engine (dnnl.graph.ocl_interop."
                        f"make_engine_with_allocator), not {type(engine).__name__}")
    full = (engine, *key)
    with _cache_lock:
        found = _cache.get(full)
        if found is not None:
            _stats["hits"] += 1
            return found
    made = build()  # compiling is slow: not under the lock
    with _cache_lock:
        found = _cache.setdefault(full, made)
        _stats["misses" if found is made else "hits"] += 1
        return found


def _check_dtype(dtype: str) -> Any:
    if dtype not in _DTYPES:
        raise invalid_argument(f"dtype must be one of {sorted(_DTYPES)}, not {dtype!r}")
    return _DTYPES[dtype]


def _check_sizes(**sizes: Any) -> tuple[int, ...]:
    """The sizes as ints, in the order given: any integer (a NumPy one from
    a shape too) above 0; bools and other types are refused by name."""
    checked = []
    for name, value in sizes.items():
        try:
            size = operator.index(value)
        except TypeError:
            size = 0
        if isinstance(value, bool) or size <= 0:
            raise invalid_argument(f"{name} must be a positive int, not {value!r}")
        checked.append(size)
    return tuple(checked)


class _ids:
    """Consecutive ids for logical tensors and ops."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


# ------------------------------------------------------------------- SDPA

def _attention(name: str, engine: Any, q_dims: list[int], kv_dims: list[int],
               mask_dims: list[int], dt: Any, dtype: str, scale: float,
               mask: str | None) -> pattern:
    """The SDPA graph of :func:`sdpa` and :func:`gqa` on the given dims."""
    f32, s32 = _lt.data_type.f32, _lt.data_type.s32
    ids = _ids()
    score_dims = q_dims[:-1] + kv_dims[-2:-1]
    seq_q, seq_kv = q_dims[-2], kv_dims[-2]
    query, key = _lt(ids(), dt, q_dims, _STRIDED), _lt(ids(), dt, kv_dims, _STRIDED)
    score = _lt(ids(), f32, score_dims, _STRIDED)
    bmm1 = _g.op(ids(), _g.op.kind.MatMul, [query, key], [score], "bmm1")
    bmm1.set_attr(_g.op.attr.transpose_b, True)
    scale_lt = _lt(ids(), f32, 0, _STRIDED, _HOST_SCALAR)
    scaled = _lt(ids(), f32, score_dims, _STRIDED)
    ops = [bmm1, _g.op(ids(), _g.op.kind.Multiply, [score, scale_lt], [scaled], "scale_mul")]
    scalars: dict[int, Any] = {scale_lt.get_id(): (scale_lt, scale)}
    inputs = [_port("query", query), _port("key", key)]
    masked = scaled
    if mask == "additive":
        mask_lt = _lt(ids(), dt, mask_dims, _STRIDED)
        masked = _lt(ids(), f32, score_dims, _STRIDED)
        ops.append(_g.op(ids(), _g.op.kind.Add, [scaled, mask_lt], [masked], "mask_add"))
    elif mask == "causal":
        row = _lt(ids(), s32, score_dims, _STRIDED)
        gen_row = _g.op(ids(), _g.op.kind.GenIndex, [scaled], [row], "gen_index_row")
        gen_row.set_attr(_g.op.attr.axis, -2)
        kv_len = _lt(ids(), s32, 0, _STRIDED, _HOST_SCALAR)
        shifted = _lt(ids(), s32, score_dims, _STRIDED)
        q_len = _lt(ids(), s32, 0, _STRIDED, _HOST_SCALAR)
        limit = _lt(ids(), s32, score_dims, _STRIDED)
        col = _lt(ids(), s32, score_dims, _STRIDED)
        gen_col = _g.op(ids(), _g.op.kind.GenIndex, [scaled], [col], "gen_index_col")
        gen_col.set_attr(_g.op.attr.axis, -1)
        keep = _lt(ids(), _lt.data_type.boolean, score_dims, _STRIDED)
        neg_inf = _lt(ids(), f32, 0, _STRIDED, _HOST_SCALAR)
        masked = _lt(ids(), f32, score_dims, _STRIDED)
        ops += [gen_row,
                _g.op(ids(), _g.op.kind.Add, [row, kv_len], [shifted], "mask_add"),
                _g.op(ids(), _g.op.kind.Subtract, [shifted, q_len], [limit], "mask_sub"),
                gen_col,
                _g.op(ids(), _g.op.kind.GreaterEqual, [limit, col], [keep], "mask_ge"),
                _g.op(ids(), _g.op.kind.Select, [keep, scaled, neg_inf], [masked],
                      "mask_select")]
        scalars.update({kv_len.get_id(): (kv_len, seq_kv), q_len.get_id(): (q_len, seq_q),
                        neg_inf.get_id(): (neg_inf, -math.inf)})
    probs = _lt(ids(), dt, score_dims, _STRIDED)
    softmax = _g.op(ids(), _g.op.kind.SoftMax, [masked], [probs], "softmax")
    softmax.set_attr(_g.op.attr.axis, -1)
    softmax.set_attr(_g.op.attr.mode, "inf_as_zero")
    value = _lt(ids(), dt, kv_dims, _STRIDED)
    output = _lt(ids(), dt, q_dims, _STRIDED)
    ops += [softmax, _g.op(ids(), _g.op.kind.MatMul, [probs, value], [output], "bmm2")]
    inputs.append(_port("value", value))
    if mask == "additive":
        inputs.append(_port("mask", mask_lt))
    return pattern(name, engine, ops, inputs, _port("output", output), scalars, dtype)


def sdpa(engine: Any, batch: int, heads: int, seq_q: int, seq_kv: int, head_size: int,
         dtype: str = "f32", scale: float | None = None, mask: str | None = None) -> pattern:
    """Scaled dot-product attention on `engine` (a graph engine, for instance
    from ``dnnl.graph.ocl_interop.make_engine_with_allocator``)::

        softmax(Q @ K^T * scale [+ mask | causal]) @ V

    Q is ``[batch, heads, seq_q, head_size]``, K and V ``[batch, heads,
    seq_kv, head_size]``, the output as Q; all of `dtype` (``"f32"``,
    ``"f16"`` or ``"bf16"``), the scores in f32 as upstream. `scale`
    defaults to ``1 / sqrt(head_size)``; it is a host scalar (Multiply).
    `mask`: ``None``; ``"additive"`` (a fourth input ``[batch, 1, seq_q,
    seq_kv]`` of `dtype`, added to the scores, as ``examples/graph/sdpa.cpp``);
    ``"causal"`` (bottom-right aligned, as
    ``examples/graph/sdpa_bottom_right_causal_mask.cpp``: query row ``i``
    sees keys ``j <= i + seq_kv - seq_q``, built with GenIndex, Add,
    Subtract, GreaterEqual and Select; the top-left mask when ``seq_q ==
    seq_kv``). Softmax uses ``inf_as_zero``: a fully masked row gives zeros.

    Call the result as ``p(stream, q, k, v[, mask], output=None)``.
    """
    batch, heads, seq_q, seq_kv, head_size = _check_sizes(
        batch=batch, heads=heads, seq_q=seq_q, seq_kv=seq_kv, head_size=head_size)
    dt = _check_dtype(dtype)
    if mask not in (None, "causal", "additive"):
        raise invalid_argument(f"mask must be None, 'causal' or 'additive', not {mask!r}")
    if scale is None:
        scale = 1.0 / math.sqrt(head_size)
    scale = float(scale)

    def build() -> pattern:
        return _attention("sdpa", engine, [batch, heads, seq_q, head_size],
                          [batch, heads, seq_kv, head_size], [batch, 1, seq_q, seq_kv],
                          dt, dtype, scale, mask)

    # scale by its bits: a NaN key never equals itself, and would add an entry per call
    return _cached(engine, ("sdpa", batch, heads, seq_q, seq_kv, head_size, dtype, scale.hex(), mask),
                   build)


def gqa(engine: Any, batch: int, q_heads: int, kv_heads: int, seq_q: int, seq_kv: int,
        head_size: int, dtype: str = "f32", scale: float | None = None,
        mask: str | None = None) -> pattern:
    """Grouped-query attention: `q_heads` query heads share `kv_heads` key and
    value heads (`q_heads` a multiple of `kv_heads`; ``kv_heads == 1`` is
    multi-query attention). Built as oneDNN 3.13's ``examples/graph/gqa.cpp``
    builds it, with 5-dimensional tensors whose MatMuls broadcast K and V
    over the heads of a group: Q and the output are ``[batch, kv_heads,
    q_heads // kv_heads, seq_q, head_size]`` (the memory of ``[batch,
    q_heads, seq_q, head_size]``: query head ``h`` uses K/V head ``h //
    (q_heads // kv_heads)``), K and V ``[batch, kv_heads, 1, seq_kv,
    head_size]`` (the memory of ``[batch, kv_heads, seq_kv, head_size]``).
    `dtype`, `scale` and `mask` as :func:`sdpa`; the additive mask is
    ``[batch, 1, 1, seq_q, seq_kv]``. Call as ``p(stream, q, k, v[, mask])``.
    """
    batch, q_heads, kv_heads, seq_q, seq_kv, head_size = _check_sizes(
        batch=batch, q_heads=q_heads, kv_heads=kv_heads, seq_q=seq_q, seq_kv=seq_kv,
        head_size=head_size)
    dt = _check_dtype(dtype)
    if q_heads % kv_heads:
        raise invalid_argument(f"q_heads ({q_heads}) must be a multiple of kv_heads ({kv_heads})")
    if mask not in (None, "causal", "additive"):
        raise invalid_argument(f"mask must be None, 'causal' or 'additive', not {mask!r}")
    scale = float(1.0 / math.sqrt(head_size) if scale is None else scale)
    rep = q_heads // kv_heads

    def build() -> pattern:
        return _attention("gqa", engine, [batch, kv_heads, rep, seq_q, head_size],
                          [batch, kv_heads, 1, seq_kv, head_size],
                          [batch, 1, 1, seq_q, seq_kv], dt, dtype, scale, mask)

    return _cached(engine, ("gqa", batch, q_heads, kv_heads, seq_q, seq_kv, head_size, dtype,
                            scale.hex(), mask), build)


# -------------------------------------------------------------------- MLPs

def gated_mlp(engine: Any, tokens: int, hidden: int, intermediate: int,
              dtype: str = "f32") -> pattern:
    """Gated MLP with a Swish gate, as ``examples/graph/gated_mlp.cpp``::

        (swish(src @ w_gate) * (src @ w_up)) @ w_down,  swish(x) = x * sigmoid(x)

    src ``[tokens, hidden]``, w_gate and w_up ``[hidden, intermediate]``,
    w_down ``[intermediate, hidden]``, the output ``[tokens, hidden]``; all
    of `dtype`. Call as ``p(stream, src, w_gate, w_up, w_down, output=None)``.
    """
    tokens, hidden, intermediate = _check_sizes(tokens=tokens, hidden=hidden,
                                                intermediate=intermediate)
    dt = _check_dtype(dtype)

    def build() -> pattern:
        ids = _ids()
        src = _lt(ids(), dt, [tokens, hidden], _STRIDED)
        w_gate, w_up = (_lt(ids(), dt, [hidden, intermediate], _STRIDED) for _ in range(2))
        gate, up, sig, swish, gated = (_lt(ids(), dt, [tokens, intermediate], _STRIDED)
                                       for _ in range(5))
        w_down = _lt(ids(), dt, [intermediate, hidden], _STRIDED)
        dst = _lt(ids(), dt, [tokens, hidden], _STRIDED)
        ops = [_g.op(ids(), _g.op.kind.MatMul, [src, w_gate], [gate], "fc_gate"),
               _g.op(ids(), _g.op.kind.MatMul, [src, w_up], [up], "fc_up"),
               _g.op(ids(), _g.op.kind.Sigmoid, [gate], [sig], "swish/sigmoid"),
               _g.op(ids(), _g.op.kind.Multiply, [gate, sig], [swish], "swish/multiply"),
               _g.op(ids(), _g.op.kind.Multiply, [swish, up], [gated], "mul"),
               _g.op(ids(), _g.op.kind.MatMul, [gated, w_down], [dst], "fc_down")]
        inputs = [_port("src", src), _port("w_gate", w_gate), _port("w_up", w_up),
                  _port("w_down", w_down)]
        return pattern("gated_mlp", engine, ops, inputs, _port("output", dst), {}, dtype)

    return _cached(engine, ("gated_mlp", tokens, hidden, intermediate, dtype), build)


def mlp(engine: Any, tokens: int, hidden: int, intermediate: int, dtype: str = "f32",
        activation: str = "relu") -> pattern:
    """Plain MLP: ``activation(src @ w1) @ w2`` (oneDNN's
    ``doc/graph/fusion_patterns/gated_mlp.md`` describes it as MatMul,
    ReLU or another activation, MatMul). src ``[tokens, hidden]``, w1
    ``[hidden, intermediate]``, w2 ``[intermediate, hidden]``; `activation`
    ``"relu"``, ``"gelu"`` (erf), ``"sigmoid"`` or ``"tanh"``. oneDNN may
    split it into several partitions (see ``pattern.implementation``); the
    pattern runs them in order with intermediates from the engine's
    allocator. Call as ``p(stream, src, w1, w2, output=None)``.
    """
    tokens, hidden, intermediate = _check_sizes(tokens=tokens, hidden=hidden,
                                                intermediate=intermediate)
    dt = _check_dtype(dtype)
    if activation not in _ACTIVATIONS:
        raise invalid_argument(f"activation must be one of {sorted(_ACTIVATIONS)}, "
                         f"not {activation!r}")

    def build() -> pattern:
        ids = _ids()
        src = _lt(ids(), dt, [tokens, hidden], _STRIDED)
        w1 = _lt(ids(), dt, [hidden, intermediate], _STRIDED)
        h, a = (_lt(ids(), dt, [tokens, intermediate], _STRIDED) for _ in range(2))
        w2 = _lt(ids(), dt, [intermediate, hidden], _STRIDED)
        dst = _lt(ids(), dt, [tokens, hidden], _STRIDED)
        ops = [_g.op(ids(), _g.op.kind.MatMul, [src, w1], [h], "fc1"),
               _g.op(ids(), _ACTIVATIONS[activation], [h], [a], activation),
               _g.op(ids(), _g.op.kind.MatMul, [a, w2], [dst], "fc2")]
        inputs = [_port("src", src), _port("w1", w1), _port("w2", w2)]
        return pattern("mlp", engine, ops, inputs, _port("output", dst), {}, dtype)

    return _cached(engine, ("mlp", tokens, hidden, intermediate, dtype, activation), build)
