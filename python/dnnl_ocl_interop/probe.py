"""``python -m dnnl_ocl_interop probe``: what this device computes for each
known problem, and a short correctness sweep of the primitive families.

For each problem of :mod:`dnnl_ocl_interop.known_problems` the probe runs
its case twice: with the problem's rule on, to see whether the binding acts
(refuses it, steps to another implementation, or routes around it), and
with the rule off, to see what oneDNN computes on this device (against
NumPy, with sentinels around every view), and which implementation ran.
Where the two agree (the binding acts exactly where the result is wrong)
the registry is right about this device; where they do not, the report
says so, which is what a bug report about the registry needs. The sweep
then runs a small case of each family against NumPy.

Cases that may crash the process (the problem's own effect) run in a
child process. The report names the device, its driver, oneDNN, the
package and every implementation that ran: paste it into an issue.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from . import _core, arrays, emulation, known_problems
from ._errors import known_problem_of

__all__ = ["observation", "harness", "CASES", "run_views", "view", "main"]

DT = _core.memory.data_type
ALG = _core.algorithm
INFERENCE = _core.prop_kind.forward_inference
SENTINEL = -12345.0


class observation(NamedTuple):
    """One run of a problem's case."""

    problem: str
    case: str  #: which case of the problem (a problem may have several)
    kind: str  #: the primitive kind that ran ("" where the case is not one primitive's)
    implementation: str  #: impl_info_str() of what ran with the rule off ("" if none applies)
    acts: bool  #: whether the binding, with the rule on, acts on the case
    wrong: Optional[bool]  #: with the rule off: True wrong (as the problem says), False right, None not run
    detail: str

    @property
    def agrees(self) -> bool:
        """Whether the binding acts exactly where oneDNN computes wrong."""
        return self.wrong is not None and self.acts == self.wrong


class harness:
    """The device the probe runs on: an OpenCL context and in-order queue,
    an out-of-order queue, and oneDNN engines and streams on them."""

    def __init__(self) -> None:
        import pyopencl as cl

        self.cl = cl
        device = _first_intel_gpu(cl)
        if device is None:
            raise RuntimeError("no Intel GPU is visible to OpenCL (and the emulated device is "
                               "not in use): nothing to probe")
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device)
        self.ooo_queue = cl.CommandQueue(
            self.context, device, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
        oi = _core.ocl_interop
        self.engine = oi.make_engine(device, self.context)
        self.stream = oi.make_stream(self.engine, self.queue)
        self.ooo_stream = oi.make_stream(self.engine, self.ooo_queue)

    @classmethod
    def on(cls, engine: Any, stream: Any) -> "harness":
        """The harness of an existing engine and (in-order) stream: their
        device, context and queue (no out-of-order queue)."""
        import pyopencl as cl

        h = cls.__new__(cls)
        oi = _core.ocl_interop
        h.cl, h.engine, h.stream = cl, engine, stream
        h.device, h.context = oi.get_device(engine), oi.get_context(engine)
        h.queue = oi.get_command_queue(stream)
        h.ooo_queue = h.ooo_stream = None  # type: ignore[assignment]  # (none on a given stream)
        return h

    def buffer(self, values: np.ndarray) -> Any:
        flags = self.cl.mem_flags
        return self.cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                              hostbuf=np.ascontiguousarray(values))

    def read(self, buffer: Any, count: int, dtype: Any = np.float32) -> np.ndarray:
        out = np.empty(count, dtype)
        self.cl.enqueue_copy(self.queue, out, buffer).wait()
        return out

    def memory(self, desc: Any, values: np.ndarray) -> Any:
        memory = _core.memory(desc, self.engine)
        arrays.write(memory, values)
        return memory


def _first_intel_gpu(cl: Any) -> Any:
    from ._config import _intel_gpus

    found = _intel_gpus(cl)
    return found[0] if found else None


# -- views with sentinels ---------------------------------------------------------

def _dense(dims: Sequence[int]) -> List[int]:
    strides: List[int] = []
    step = 1
    for n in reversed(dims):
        strides.insert(0, step)
        step *= n
    return strides


def view(dims: Sequence[int], kind: str) -> Tuple[Any, List[int], int, int]:
    """(descriptor, strides, element offset, elements of the buffer) of a
    float32 view of `dims`: "plain"; "offset" (``x[1:1+n]`` of a dense
    parent, made with ``submemory_desc``); "gaps" (rows of n in rows of
    n + 3); "inner2" (every other element); "channels_last" (4-D, dense);
    "transposed" (2-D, column-major)."""
    dims = list(dims)
    if kind == "offset":
        parent = [dims[0] + 2] + dims[1:]
        strides = _dense(parent)
        desc = _core.memory.desc(parent, DT.f32, strides).submemory_desc(
            dims, [1] + [0] * (len(dims) - 1))
        return desc, strides, strides[0], int(np.prod(parent))
    if kind == "gaps":
        strides = _dense(dims[:-1] + [dims[-1] + 3])
    elif kind == "inner2":
        strides = [2 * s for s in _dense(dims)]
    elif kind == "channels_last":
        n, c, h, w = dims
        strides = [h * w * c, 1, w * c, c]
    elif kind == "transposed":
        strides = [1, dims[0]]
    else:
        strides = _dense(dims)
    extent = 1 + sum((n - 1) * s for n, s in zip(dims, strides))
    return _core.memory.desc(dims, DT.f32, strides), strides, 0, extent


_PRIMITIVES = {
    "binary": "binary", "softmax": "softmax_forward", "matmul": "matmul",
    "pooling": "pooling_forward", "concat": "concat", "sum": "sum", "reorder": "reorder",
    "convolution": "convolution_forward", "deconvolution": "deconvolution_forward",
    "group_normalization": "group_normalization_forward",
    "batch_normalization": "batch_normalization_forward",
    "layer_normalization": "layer_normalization_forward", "lrn": "lrn_forward",
    "resampling": "resampling_forward", "reduction": "reduction", "prelu": "prelu_forward",
    "inner_product": "inner_product_forward", "eltwise": "eltwise_forward",
    "shuffle": "shuffle_forward",
}


def primitive_of(pd: Any) -> Any:
    """The primitive of a descriptor of any family."""
    return getattr(_core, _PRIMITIVES[pd.get_kind().name])(pd)


def run_views(h: harness, make_pd: Callable[[Dict[int, Any]], Any],
              sources: Mapping[int, Tuple[Any, Sequence[int], str]],
              dst: Tuple[int, Sequence[int], str]) -> Tuple[str, np.ndarray, int]:
    """Run the primitive ``make_pd({arg: desc})`` makes on OpenCL buffers:
    `sources` {arg: (values, dims, view kind)}, `dst` (arg, dims, view
    kind); each buffer holds sentinels around its view (16 more after its
    end). Returns (implementation, the destination view's values, how many
    elements outside it changed)."""
    oi = _core.ocl_interop
    views = {arg: (values,) + view(dims, kind) for arg, (values, dims, kind) in sources.items()}
    dst_arg, dst_dims, dst_kind = dst
    views[dst_arg] = (None,) + view(dst_dims, dst_kind)
    pd = make_pd({arg: v[1] for arg, v in views.items()})
    args, flats = {}, {}
    for arg, (values, desc, strides, offset, extent) in views.items():
        flat = np.full(extent + 16, SENTINEL, np.float32)
        if values is not None:
            np.lib.stride_tricks.as_strided(flat[offset:], values.shape,
                                            [4 * s for s in strides])[...] = values
        flats[arg] = flat
        args[arg] = oi.make_memory(desc, h.engine, h.buffer(flat))
    primitive_of(pd).execute(h.stream, args)
    h.stream.wait()
    got = h.read(oi.get_mem_object(args[dst_arg]), flats[dst_arg].size)
    _, _, strides, offset, _ = views[dst_arg]
    inside = np.zeros(got.size, bool)
    index = np.lib.stride_tricks.as_strided(np.arange(got.size)[offset:], dst_dims,
                                            [8 * s for s in strides])
    inside[index.ravel()] = True
    values = np.lib.stride_tricks.as_strided(got[offset:], dst_dims, [4 * s for s in strides])
    return pd.impl_info_str(), values.copy(), int(np.sum(got[~inside] != SENTINEL))


# -- how a case is judged ---------------------------------------------------------

def _refused_for(problem: str, make: Callable[[], Any]) -> Tuple[bool, str]:
    """(whether the binding acts with the rule on: refuses `make()` naming
    `problem`, or steps away from the implementation oneDNN would pick,
    the implementation it would pick)."""
    with known_problems.disabled(problem):
        try:
            first = make().impl_info_str()
        except _core.error:
            first = ""
    try:
        taken = make().impl_info_str()
    except _core.unimplemented as e:
        return known_problem_of(e) == problem, first
    return taken != first, first


def _beyond(error: float, tolerance: float) -> bool:
    """Whether a largest error shows a wrong result: a NaN does (a kernel
    that read a gap's sentinel can give one, and NaN > tolerance is false)."""
    return not error <= tolerance


def _values_case(h: harness, problem: str, case: str, make_pd: Callable[[Dict[int, Any]], Any],
                 sources: Mapping[int, Tuple[Any, Sequence[int], str]],
                 dst: Tuple[int, Sequence[int], str], expected: Any,
                 tolerance: float = 1e-4) -> observation:
    """A case computed on views: acts (rule on), then the values (rule off)."""
    def make() -> Any:
        descs = {arg: view(dims, kind)[0] for arg, (_, dims, kind) in sources.items()}
        descs[dst[0]] = view(dst[1], dst[2])[0]
        return make_pd(descs)

    acts, _ = _refused_for(problem, make)
    with known_problems.disabled(problem):
        kind = make().get_kind().name
        impl, got, outside = run_views(h, make_pd, sources, dst)
    error = float(np.max(np.abs(got - expected))) if got.size else 0.0
    wrong = _beyond(error, tolerance) or outside > 0
    detail = f"largest error {error:.3g}, {outside} elements written outside the view"
    return observation(problem, case, kind, impl, acts, wrong, detail)


# -- the cases, one function per problem (several cases each where useful) --------

_RNG = np.random.default_rng(43)
_X4 = _RNG.uniform(-2, 2, (2, 4, 4, 8)).astype(np.float32)
_Y4 = _RNG.uniform(-2, 2, (2, 4, 4, 8)).astype(np.float32)
_A = _RNG.uniform(-1, 1, (4, 16)).astype(np.float32)
_B = _RNG.uniform(-1, 1, (16, 8)).astype(np.float32)
_ADD = _RNG.uniform(-1, 1, (4, 8)).astype(np.float32)
_MS = _core.ARG_MULTIPLE_SRC
S, D, W = _core.ARG_SRC, _core.ARG_DST, _core.ARG_WEIGHTS
md = _core.memory.desc


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _grouped(x: np.ndarray, groups: int, eps: float) -> np.ndarray:
    g = x.reshape(x.shape[0], groups, -1).astype(np.float64)
    return ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)


def _batch_normalized(x: np.ndarray, eps: float) -> np.ndarray:
    m, v = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def _attr_post_add(desc: Any) -> Any:
    po = _core.post_ops()
    po.append_binary(ALG.binary_add, desc)
    attr = _core.primitive_attr()
    attr.set_post_ops(po)
    return attr


def _sum_scales(h: harness) -> Iterator[observation]:
    xs = [_RNG.uniform(-1, 1, (3, 5)).astype(np.float32) for _ in range(3)]
    scales = [1.0, -0.5, 2.0]
    yield _values_case(
        h, "sum-many-inputs-scales", "scales [1, -0.5, 2]",
        lambda d: _core.sum.primitive_desc(h.engine, d[D], scales, [d[_MS], d[_MS + 1], d[_MS + 2]]),
        {_MS + i: (x, x.shape, "plain") for i, x in enumerate(xs)}, (D, (3, 5), "plain"),
        sum(s * x for s, x in zip(scales, xs)))


def _reorder_dst_zero_points(h: harness) -> Iterator[observation]:
    src = md([2, 3], DT.f32, _core.memory.format_tag.ab)
    dst = md([2, 3], DT.s32, _core.memory.format_tag.ab)
    zero_points = np.array([1, -2, 3], np.int32)

    def make() -> Any:
        attr = _core.primitive_attr()
        attr.set_zero_points_mask(_core.ARG_DST, 1 << 1)
        return _core.reorder.primitive_desc(h.engine, src, h.engine, dst, attr)

    acts, _ = _refused_for("reorder-ref-dst-zero-points", make)
    with known_problems.disabled("reorder-ref-dst-zero-points"):
        pd = make()
        out = _core.memory(dst, h.engine)
        zp = h.memory(md([3], DT.s32, _core.memory.format_tag.a), zero_points)
        _core.reorder(pd).execute(h.stream, {
            _core.ARG_FROM: h.memory(src, np.zeros((2, 3), np.float32)), _core.ARG_TO: out,
            _core.ARG_ATTR_ZERO_POINTS | _core.ARG_DST: zp})
        h.stream.wait()
        got = arrays.read(out)
    wrong = not np.array_equal(got, np.broadcast_to(zero_points, (2, 3)))
    yield observation("reorder-ref-dst-zero-points", "zeros, zero points [1, -2, 3] per column",
                      "reorder", pd.impl_info_str(), acts, wrong, f"got {got.tolist()}")


def _reorder_custom(h: harness) -> Iterator[observation]:
    x = _RNG.uniform(-1, 1, (8, 16)).astype(np.float32)
    yield _values_case(
        h, "reorder-custom-innermost-stride", "every other column into a dense array",
        lambda d: _core.reorder.primitive_desc(h.engine, d[_core.ARG_FROM], h.engine, d[_core.ARG_TO]),
        {_core.ARG_FROM: (x, x.shape, "inner2")}, (_core.ARG_TO, x.shape, "plain"), x)


def _concat_simple(h: harness) -> Iterator[observation]:
    a, b = _A[:, :8], _B[:4]
    yield _values_case(
        h, "concat-simple-strided-dst", "along rows into rows with gaps",
        lambda d: _core.concat.primitive_desc(h.engine, d[D], 0, [d[_MS], d[_MS + 1]]),
        {_MS: (a, (4, 8), "plain"), _MS + 1: (b, (4, 8), "plain")}, (D, (8, 8), "gaps"),
        np.concatenate([a, b], 0))


def _inner_product_dst(h: harness) -> Iterator[observation]:
    weights = _B.T.copy()
    yield _values_case(
        h, "inner-product-dst-strides", "into a transposed destination",
        lambda d: _core.inner_product_forward.primitive_desc(h.engine, INFERENCE, d[S], d[W], d[D]),
        {S: (_A, _A.shape, "plain"), W: (weights, weights.shape, "plain")}, (D, (4, 8), "transposed"),
        _A @ _B)


def _direct_copy(h: harness) -> Iterator[observation]:
    oi, usm = _core.ocl_interop, _core.usm
    desc = md([64], DT.f32, _core.memory.format_tag.a)
    x = _RNG.uniform(-1, 1, 64).astype(np.float32)
    pd = _core.reorder.primitive_desc(h.engine, desc, h.engine, desc)
    prim = _core.reorder(pd)
    src = oi.make_memory(desc, h.engine, h.buffer(x))
    ptr = usm.device_alloc(h.context, h.device, desc.get_size())
    try:
        dst = oi.make_memory(desc, h.engine, oi.memory_kind.usm, ptr)
        arrays.write(dst, np.zeros(64, np.float32))
        try:
            prim.execute(h.stream, {_core.ARG_FROM: src, _core.ARG_TO: dst})
            h.stream.wait()
            acts = False
        except _core.unimplemented as e:
            acts = known_problem_of(e) == "reorder-direct-copy-memory-kinds"
        with known_problems.disabled("reorder-direct-copy-memory-kinds"):
            # (a primitive's execute checks are its own: made with the rule off)
            _core.reorder(_core.reorder.primitive_desc(h.engine, desc, h.engine, desc)).execute(
                h.stream, {_core.ARG_FROM: src, _core.ARG_TO: dst})
            h.stream.wait()
        got = arrays.read(dst)
        del dst
    finally:
        usm.free(h.context, ptr)
    yield observation("reorder-direct-copy-memory-kinds", "buffer into USM", "reorder",
                      pd.impl_info_str(), acts, not np.array_equal(got, x), f"{int(np.sum(got != x))} of 64 not copied")


def _eltwise(h: harness) -> Iterator[observation]:
    x = _RNG.uniform(-1, 1, (4, 8)).astype(np.float32)
    for kind in ("inner2", "offset"):
        yield _values_case(
            h, "eltwise-strides", f"relu of a view ({kind})",
            lambda d: _core.eltwise_forward.primitive_desc(h.engine, INFERENCE, ALG.eltwise_relu,
                                                           d[S], d[D], 0.0, 0.0),
            {S: (x, x.shape, kind)}, (D, x.shape, kind), np.maximum(x, 0))


def _submemory_offsets(h: harness) -> Iterator[observation]:
    cases = {
        "binary": (lambda d: _core.binary.primitive_desc(h.engine, ALG.binary_add, d[_core.ARG_SRC_0],
                                                         d[_core.ARG_SRC_1], d[D]),
                   {_core.ARG_SRC_0: (_X4, _X4.shape, "offset"), _core.ARG_SRC_1: (_Y4, _Y4.shape, "offset")},
                   (D, _X4.shape, "offset"), _X4 + _Y4),
        "softmax": (lambda d: _core.softmax_forward.primitive_desc(h.engine, INFERENCE, ALG.softmax_accurate,
                                                                   d[S], d[D], 3),
                    {S: (_X4, _X4.shape, "offset")}, (D, _X4.shape, "offset"), _softmax(_X4)),
        "matmul": (lambda d: _core.matmul.primitive_desc(h.engine, d[S], d[W], d[D]),
                   {S: (_A, _A.shape, "plain"), W: (_B, _B.shape, "plain")}, (D, (4, 8), "offset"),
                   _A @ _B),
        "pooling": (lambda d: _core.pooling_forward.primitive_desc(
                        h.engine, INFERENCE, ALG.pooling_max, d[S], d[D], [2, 2], [2, 2], [0, 0], [0, 0],
                        [0, 0]),
                    {S: (_X4, _X4.shape, "plain")}, (D, (2, 4, 2, 4), "offset"),
                    _X4.reshape(2, 4, 2, 2, 4, 2).max((3, 5))),
    }
    for name, (make_pd, sources, dst, expected) in cases.items():
        yield _values_case(h, "submemory-offsets", f"{name} at an offset", make_pd, sources, dst,
                           expected)


def _sum_dense(h: harness) -> Iterator[observation]:
    yield _values_case(
        h, "sum-many-inputs-dense", "rows with gaps",
        lambda d: _core.sum.primitive_desc(h.engine, d[D], [1.0, 1.0], [d[_MS], d[_MS + 1]]),
        {_MS: (_X4, _X4.shape, "gaps"), _MS + 1: (_Y4, _Y4.shape, "gaps")}, (D, _X4.shape, "gaps"),
        _X4 + _Y4)


def _group_normalization_layouts(h: harness) -> Iterator[observation]:
    yield _values_case(
        h, "group-normalization-layouts", "plain into channels-last",
        lambda d: _core.group_normalization_forward.primitive_desc(
            h.engine, INFERENCE, d[S], d[D], 2, 1e-3, _core.normalization_flags.none),
        {S: (_X4, _X4.shape, "plain")}, (D, _X4.shape, "channels_last"), _grouped(_X4, 2, 1e-3),
        tolerance=1e-3)


def _group_normalization_offsets(h: harness) -> Iterator[observation]:
    yield _values_case(
        h, "group-normalization-strides", "source and destination at an offset",
        lambda d: _core.group_normalization_forward.primitive_desc(
            h.engine, INFERENCE, d[S], d[D], 2, 1e-3, _core.normalization_flags.none),
        {S: (_X4, _X4.shape, "offset")}, (D, _X4.shape, "offset"), _grouped(_X4, 2, 1e-3),
        tolerance=1e-3)


def _batch_normalization(h: harness) -> Iterator[observation]:
    yield _values_case(
        h, "batch-normalization-stats-strides", "statistics of rows with gaps",
        lambda d: _core.batch_normalization_forward.primitive_desc(
            h.engine, INFERENCE, d[S], d[D], 1e-3, _core.normalization_flags.none),
        {S: (_X4, _X4.shape, "gaps")}, (D, _X4.shape, "gaps"), _batch_normalized(_X4, 1e-3),
        tolerance=1e-3)


def _reduction(h: harness) -> Iterator[observation]:
    x = _X4[:1]
    yield _values_case(
        h, "reduction-combined-strides", "sums of rows with gaps",
        lambda d: _core.reduction.primitive_desc(h.engine, ALG.reduction_sum, d[S], d[D], 0.0, 0.0),
        {S: (x, x.shape, "gaps")}, (D, (1, 4, 4, 1), "plain"), x.sum(-1, keepdims=True))


def _softmax_layouts(h: harness) -> Iterator[observation]:
    x = _RNG.uniform(-1, 1, (2, 8)).astype(np.float32)
    yield _values_case(
        h, "softmax-layouts", "every other element into a dense destination",
        lambda d: _core.softmax_forward.primitive_desc(h.engine, INFERENCE, ALG.softmax_accurate,
                                                       d[S], d[D], 1),
        {S: (x, x.shape, "inner2")}, (D, x.shape, "plain"), _softmax(x))


def _dense_operands(h: harness) -> Iterator[observation]:
    p1 = _core.ARG_ATTR_MULTIPLE_POST_OP(0) | _core.ARG_SRC_1
    for kind in ("inner2", "offset"):
        yield _values_case(
            h, "dense-bias-post-op-inputs", f"matmul's binary post-op input ({kind})",
            lambda d: _core.matmul.primitive_desc(h.engine, d[S], d[W], d[D], _attr_post_add(d[p1])),
            {S: (_A, _A.shape, "plain"), W: (_B, _B.shape, "plain"), p1: (_ADD, _ADD.shape, kind)},
            (D, (4, 8), "plain"), _A @ _B + _ADD)


def _post_op_inputs(h: harness) -> Iterator[observation]:
    post_op = _core.ARG_ATTR_MULTIPLE_POST_OP
    src, wei, dst = md([2, 4], DT.f32, [4, 1]), md([3, 4], DT.f32, [4, 1]), md([2, 3], DT.f32, [3, 1])

    def asked() -> List[int]:
        po = _core.post_ops()
        po.append_sum(1.0)
        po.append_binary(ALG.binary_add, md([1, 3], DT.f32, [3, 1]))
        po.append_eltwise(ALG.eltwise_relu, 0.0, 0.0)
        attr = _core.primitive_attr()
        attr.set_post_ops(po)
        pd = _core.inner_product_forward.primitive_desc(h.engine, INFERENCE, src, wei, dst, attr)
        return [pd.query_md(_core.query.exec_arg_md, arg).get_ndims()
                for arg in (post_op(0) | _core.ARG_SRC_1, post_op(1) | _core.ARG_SRC_2,
                            post_op(2) | _core.ARG_SRC_1)]

    acts = known_problems.get("post-op-inputs-uninitialized").applies
    with known_problems.disabled("post-op-inputs-uninitialized"):
        answers = [asked() for _ in range(50)]
    wrong = sum(a != [0, 0, 0] for a in answers)
    yield observation("post-op-inputs-uninitialized", "50 queries of missing inputs", "", "", acts,
                      wrong > 0, f"{wrong} of 50 answered a descriptor that is not the zero one")


def _inorder_deps(h: harness) -> Iterator[observation]:
    cl = h.cl
    desc = md([256], DT.f32, _core.memory.format_tag.a)
    x = _RNG.uniform(-1, 1, 256).astype(np.float32)
    prim = _core.eltwise_forward(_core.eltwise_forward.primitive_desc(
        h.engine, INFERENCE, ALG.eltwise_abs, desc, desc, 0.0, 0.0))
    results = {}
    for off in (False, True):
        src, dst = h.buffer(x), h.buffer(np.full(256, SENTINEL, np.float32))
        gate = cl.UserEvent(h.context)
        try:
            with known_problems.disabled("inorder-execute-drops-deps") if off else _nothing():
                _core.ocl_interop.execute(prim, h.stream, {
                    S: _core.ocl_interop.make_memory(desc, h.engine, src),
                    D: _core.ocl_interop.make_memory(desc, h.engine, dst)}, deps=[gate])
            after = cl.enqueue_marker(h.queue)
            time.sleep(0.2)
            results[off] = after.command_execution_status == cl.command_execution_status.COMPLETE
        finally:
            gate.set_status(cl.command_execution_status.COMPLETE)
        h.stream.wait()
    yield observation("inorder-execute-drops-deps", "a user event as the dependency", "", "",
                      not results[False], results[True],
                      "with the rule off, the execute ran before its dependency" if results[True]
                      else "with the rule off, the execute waited for its dependency")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# The attention partition of the graph cases, executed on an out-of-order
# stream without dependencies: softmax(q @ k^T * 0.5) @ v with SCALED (the
# 0.5 a host-scalar port), softmax(q @ k^T) @ v otherwise; q, k, v
# [1, 16, 8] in USM blocks 0-2, the output in block 3; PROBLEM's rule off
# (None: every rule on). Prints RIGHT or WRONG against NumPy, or "raised"
# and the dnnl.error; or dies. tests/test_graph.py runs it too.
ATTENTION = """
import numpy as np
g, goi, usm = dnnl.graph, dnnl.graph.ocl_interop, dnnl.usm
lt = g.logical_tensor
F32, STRIDED = lt.data_type.f32, lt.layout_type.strided
q, k, v = (lt(i, F32, [1, 16, 8], STRIDED) for i in range(3))
score, scaled, probs = (lt(i, F32, [1, 16, 16], STRIDED) for i in (3, 4, 5))
half, out = lt(6, F32, 0, STRIDED, lt.property_type.host_scalar), lt(7, F32, [1, 16, 8], STRIDED)
bmm1 = g.op(0, g.op.kind.MatMul, [q, k], [score])
bmm1.set_attr(g.op.attr.transpose_b, True)
softmax = g.op(2, g.op.kind.SoftMax, [scaled if SCALED else score], [probs])
softmax.set_attr(g.op.attr.axis, -1)
graph = g.graph(dnnl.engine.kind.gpu)
ops = [bmm1, softmax, g.op(3, g.op.kind.MatMul, [probs, v], [out])]
if SCALED:
    ops.append(g.op(1, g.op.kind.Multiply, [score, half], [scaled]))
for op in ops:
    graph.add_op(op)
graph.finalize()
(partition,) = graph.get_partitions()
engine = goi.make_engine_with_allocator(device, context, g.allocator())
queue = cl.CommandQueue(context, device)
ooo = cl.CommandQueue(context, device, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
compiled = partition.compile(partition.get_input_ports(), partition.get_output_ports(), engine)
rng = np.random.default_rng(5)
data = [rng.uniform(-1, 1, (1, 16, 8)).astype(np.float32) for _ in range(3)]
blocks = [usm.allocation(context, 16 * 8 * 4, "device", device) for _ in range(4)]
for block, array in zip(blocks, data):
    usm.memcpy(queue, block.ptr, array, array.nbytes).wait()
tensors = {t.get_id(): g.tensor(t, engine, block.ptr) for t, block in zip((q, k, v), blocks)}
tensors[6] = g.tensor.make_scalar_tensor(half, 0.5)
stream = dnnl.ocl_interop.make_stream(engine, ooo)
if PROBLEM:
    dnnl.known_problems.disable(PROBLEM)
try:
    goi.execute(compiled, stream, [tensors[p.get_id()] for p in partition.get_input_ports()],
                [g.tensor(out, engine, blocks[3].ptr)])
except dnnl.error as e:
    print("raised", type(e).__name__, e)
    raise SystemExit(0)
stream.wait()
got = np.empty((1, 16, 8), np.float32)
usm.memcpy(queue, got, blocks[3].ptr, got.nbytes).wait()
s = data[0] @ data[1].transpose(0, 2, 1) * (0.5 if SCALED else 1.0)
p = np.exp(s - s.max(-1, keepdims=True))
print("RIGHT" if np.abs(got - (p / p.sum(-1, keepdims=True)) @ data[2]).max() < 1e-5 else "WRONG")
"""

_CHILD_CASES = {
    "graph-noop-null-event": "PROBLEM, SCALED = 'graph-noop-null-event', False" + ATTENTION,
    "graph-host-scalar-null-event": "PROBLEM, SCALED = 'graph-host-scalar-null-event', True" + ATTENTION,
    "stream-profiling-without-order": """
oi = dnnl.ocl_interop
import numpy as np
desc = dnnl.memory.desc([16], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
prim = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(engine, dnnl.prop_kind.forward_inference,
    dnnl.algorithm.eltwise_abs, desc, desc, 0.0, 0.0))
dnnl.known_problems.disable("stream-profiling-without-order")
stream = dnnl.stream(engine, dnnl.stream.flags.profiling)
src, dst = dnnl.memory(desc, engine), dnnl.memory(desc, engine)
oi.execute(prim, stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
stream.wait()
print("RIGHT")
""",
}

CHILD_START = """
import dnnl_ocl_interop as dnnl
dnnl.emulation.ensure_device()
import pyopencl as cl
from dnnl_ocl_interop._config import _intel_gpus
device = _intel_gpus(cl)[0]
context = cl.Context([device])
engine = dnnl.ocl_interop.make_engine(device, context)
"""


def _child_case(problem: str, case: str) -> Callable[[harness], Iterator[observation]]:
    def run(h: harness) -> Iterator[observation]:
        acts = known_problems.get(problem).applies
        try:
            done = subprocess.run([sys.executable, "-c", CHILD_START + _CHILD_CASES[problem]],
                                  capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            yield observation(problem, case, "", "", acts, True, "the child hung (300 s)")
            return
        said = done.stdout.strip().splitlines()[-1:] or [""]
        if done.returncode == 0 and said == ["RIGHT"]:
            wrong, detail = False, "computed right"
        elif done.returncode < 0:
            wrong, detail = True, f"the child died of signal {-done.returncode}"
        else:
            last = (done.stderr.strip().splitlines() or [said[0]])[-1]
            wrong, detail = True, f"exit {done.returncode}: {last[:160]}"
        yield observation(problem, case, "", "", acts, wrong, detail)

    return run


def _softmax_sub_group(h: harness) -> Iterator[observation]:
    x = _RNG.uniform(-1, 1, (4, 32)).astype(np.float32)
    yield _values_case(
        h, "softmax-reusable-sub-group", "rows of 32 elements",
        lambda d: _core.softmax_forward.primitive_desc(h.engine, INFERENCE, ALG.softmax_accurate,
                                                       d[S], d[D], 1),
        {S: (x, x.shape, "plain")}, (D, x.shape, "plain"), _softmax(x), tolerance=1e-5)


def _rnn_offsets(h: harness) -> Iterator[observation]:
    """An LSTM (inference, T=3, N=2) over channels [7, 14) of a [3, 2, 14]
    source given as a sub-memory: right only if the offset is read."""
    T, N, C = 3, 2, 7
    tag = _core.memory.format_tag
    parent = md([T, N, 2 * C], DT.f32, tag.tnc)
    src_layer = parent.submemory_desc([T, N, C], [0, 0, C])
    rng = np.random.default_rng(3)
    values = rng.uniform(-1, 1, (T, N, 2 * C)).astype(np.float32)
    w_layer = rng.uniform(-0.5, 0.5, (1, 1, C, 4, C)).astype(np.float32)
    w_iter = rng.uniform(-0.5, 0.5, (1, 1, C, 4, C)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, (1, 1, 4, C)).astype(np.float32)
    descs = dict(w_layer=md([1, 1, C, 4, C], DT.f32, tag.ldigo), w_iter=md([1, 1, C, 4, C], DT.f32, tag.ldigo),
                 bias=md([1, 1, 4, C], DT.f32, tag.ldgo), dst=md([T, N, C], DT.f32, tag.tnc))

    def make() -> Any:
        return _core.lstm_forward.primitive_desc(
            h.engine, INFERENCE, _core.rnn_direction.unidirectional_left2right, src_layer, md(),
            md(), descs["w_layer"], descs["w_iter"], descs["bias"], descs["dst"], md(), md())

    acts, _ = _refused_for("rnn-offsets", make)
    with known_problems.disabled("rnn-offsets"):
        pd = make()
        dst = _core.memory(descs["dst"], h.engine)
        source = _core.memory(parent, h.engine)
        arrays.write(source, values)
        args = {_core.ARG_SRC_LAYER: _core.ocl_interop.make_memory(
                    src_layer, h.engine, _core.ocl_interop.get_mem_object(source)),  # type: ignore[arg-type]
                _core.ARG_WEIGHTS_LAYER: h.memory(descs["w_layer"], w_layer),
                _core.ARG_WEIGHTS_ITER: h.memory(descs["w_iter"], w_iter),
                _core.ARG_BIAS: h.memory(descs["bias"], bias), _core.ARG_DST_LAYER: dst}
        scratch = pd.scratchpad_desc()
        if scratch.get_size():
            args[_core.ARG_SCRATCHPAD] = _core.memory(scratch, h.engine)
        workspace = pd.workspace_desc()
        if workspace.get_size():
            args[_core.ARG_WORKSPACE] = _core.memory(workspace, h.engine)
        _core.lstm_forward(pd).execute(h.stream, args)
        h.stream.wait()
        got = arrays.read(dst)
    expected = _lstm(values[:, :, C:], w_layer[0, 0], w_iter[0, 0], bias[0, 0])
    error = float(np.max(np.abs(got - expected)))
    yield observation("rnn-offsets", "an LSTM over channels [7, 14)", "rnn", pd.impl_info_str(), acts,
                      _beyond(error, 1e-4), f"largest error {error:.3g}")


def _lstm(x: np.ndarray, w_layer: np.ndarray, w_iter: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """oneDNN's LSTM (gates i, f, c~, o; ldigo weights), zero initial state."""
    T, N, C = x.shape
    h, c = np.zeros((N, C)), np.zeros((N, C))
    out = np.empty((T, N, C))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(T):
        gates = x[t] @ w_layer.reshape(C, 4 * C) + h @ w_iter.reshape(C, 4 * C) + bias.reshape(4 * C)
        i, f, g, o = (gates[:, k * C:(k + 1) * C] for k in range(4))
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out[t] = h
    return out


CASES: Dict[str, Callable[[harness], Iterator[observation]]] = {
    "sum-many-inputs-scales": _sum_scales,
    "reorder-ref-dst-zero-points": _reorder_dst_zero_points,
    "reorder-custom-innermost-stride": _reorder_custom,
    "concat-simple-strided-dst": _concat_simple,
    "inner-product-dst-strides": _inner_product_dst,
    "reorder-direct-copy-memory-kinds": _direct_copy,
    "eltwise-strides": _eltwise,
    "rnn-offsets": _rnn_offsets,
    "submemory-offsets": _submemory_offsets,
    "sum-many-inputs-dense": _sum_dense,
    "group-normalization-layouts": _group_normalization_layouts,
    "batch-normalization-stats-strides": _batch_normalization,
    "reduction-combined-strides": _reduction,
    "softmax-layouts": _softmax_layouts,
    "dense-bias-post-op-inputs": _dense_operands,
    "post-op-inputs-uninitialized": _post_op_inputs,
    "group-normalization-strides": _group_normalization_offsets,
    "inorder-execute-drops-deps": _inorder_deps,
    "graph-noop-null-event": _child_case("graph-noop-null-event",
                                         "attention, out of order, no dependencies"),
    "graph-host-scalar-null-event": _child_case("graph-host-scalar-null-event",
                                                "attention with a host-scalar scale, out of order"),
    "stream-profiling-without-order": _child_case("stream-profiling-without-order",
                                                  "ocl_interop.execute on a profiling stream"),
    "softmax-reusable-sub-group": _softmax_sub_group,
}


def observe(problem: str, h: harness) -> List[observation]:
    """Every case of `problem` on this device (an error running a case is an
    observation too, whose ``wrong`` is None)."""
    try:
        return list(CASES[problem](h))
    except Exception as e:  # a report must finish: the failure is what it says
        return [observation(problem, "(case failed to run)", "", "", False, None,
                            f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")]


# -- the sweep ----------------------------------------------------------------------

def sweep(h: harness) -> List[Tuple[str, str, bool, str]]:
    """A small case of each family on plain layouts against NumPy:
    (family, implementation, right, detail)."""
    x = _X4
    rows = []
    cases = {
        "eltwise": (lambda d: _core.eltwise_forward.primitive_desc(h.engine, INFERENCE, ALG.eltwise_tanh,
                                                                   d[S], d[D], 0.0, 0.0),
                    {S: (x, x.shape, "plain")}, (D, x.shape, "plain"), np.tanh(x)),
        "binary": (lambda d: _core.binary.primitive_desc(h.engine, ALG.binary_mul, d[_core.ARG_SRC_0],
                                                         d[_core.ARG_SRC_1], d[D]),
                   {_core.ARG_SRC_0: (x, x.shape, "plain"), _core.ARG_SRC_1: (_Y4, _Y4.shape, "plain")},
                   (D, x.shape, "plain"), x * _Y4),
        "softmax": (lambda d: _core.softmax_forward.primitive_desc(h.engine, INFERENCE, ALG.softmax_accurate,
                                                                   d[S], d[D], 3),
                    {S: (x, x.shape, "plain")}, (D, x.shape, "plain"), _softmax(x)),
        "matmul": (lambda d: _core.matmul.primitive_desc(h.engine, d[S], d[W], d[D]),
                   {S: (_A, _A.shape, "plain"), W: (_B, _B.shape, "plain")}, (D, (4, 8), "plain"),
                   _A @ _B),
        "inner_product": (lambda d: _core.inner_product_forward.primitive_desc(h.engine, INFERENCE, d[S],
                                                                               d[W], d[D]),
                          {S: (_A, _A.shape, "plain"), W: (_B.T.copy(), (8, 16), "plain")},
                          (D, (4, 8), "plain"), _A @ _B),
        "convolution": (lambda d: _core.convolution_forward.primitive_desc(
                            h.engine, INFERENCE, ALG.convolution_direct, d[S], d[W], d[D], [1, 1],
                            [0, 0], [0, 0]),
                        {S: (x, x.shape, "plain"),
                         W: (_B[:4, :4].reshape(4, 4, 1, 1), (4, 4, 1, 1), "plain")},
                        (D, x.shape, "plain"), np.einsum("oc,nchw->nohw", _B[:4, :4], x)),
        "pooling": (lambda d: _core.pooling_forward.primitive_desc(
                        h.engine, INFERENCE, ALG.pooling_max, d[S], d[D], [2, 2], [2, 2], [0, 0],
                        [0, 0], [0, 0]),
                    {S: (x, x.shape, "plain")}, (D, (2, 4, 2, 4), "plain"),
                    x.reshape(2, 4, 2, 2, 4, 2).max((3, 5))),
        "batch_normalization": (lambda d: _core.batch_normalization_forward.primitive_desc(
                                    h.engine, INFERENCE, d[S], d[D], 1e-3, _core.normalization_flags.none),
                                {S: (x, x.shape, "plain")}, (D, x.shape, "plain"),
                                _batch_normalized(x, 1e-3)),
        "group_normalization": (lambda d: _core.group_normalization_forward.primitive_desc(
                                    h.engine, INFERENCE, d[S], d[D], 2, 1e-3, _core.normalization_flags.none),
                                {S: (x, x.shape, "plain")}, (D, x.shape, "plain"), _grouped(x, 2, 1e-3)),
        "reduction": (lambda d: _core.reduction.primitive_desc(h.engine, ALG.reduction_sum, d[S], d[D],
                                                               0.0, 0.0),
                      {S: (x, x.shape, "plain")}, (D, (2, 4, 4, 1), "plain"), x.sum(-1, keepdims=True)),
        "concat": (lambda d: _core.concat.primitive_desc(h.engine, d[D], 0, [d[_MS], d[_MS + 1]]),
                   {_MS: (x, x.shape, "plain"), _MS + 1: (_Y4, _Y4.shape, "plain")},
                   (D, (4, 4, 4, 8), "plain"), np.concatenate([x, _Y4])),
        "reorder": (lambda d: _core.reorder.primitive_desc(h.engine, d[_core.ARG_FROM], h.engine,
                                                           d[_core.ARG_TO]),
                    {_core.ARG_FROM: (x, x.shape, "plain")}, (_core.ARG_TO, x.shape, "channels_last"), x),
    }
    for family, (make_pd, sources, dst, expected) in cases.items():
        try:
            impl, got, outside = run_views(h, make_pd, sources, dst)
            error = float(np.max(np.abs(got - expected)))
            rows.append((family, impl, error < 1e-3 and outside == 0,
                         f"largest error {error:.3g}, {outside} outside"))
        except Exception as e:
            rows.append((family, "", False, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"))
    return rows


# -- the report ---------------------------------------------------------------------

def report(h: harness, problems: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """The probe's findings as a dict (what ``--json`` prints)."""
    from . import __version__

    version = _core.version()
    ids = list(problems) if problems else [p.id for p in known_problems.problems()]
    unknown = [i for i in ids if i not in CASES]
    if unknown:
        raise ValueError(f"no probe case for {unknown[0]!r} (known: {', '.join(CASES)})")
    observed = [o for i in ids for o in observe(i, h)]
    return {
        "device": h.device.name, "driver": h.device.driver_version,
        "platform": h.device.platform.name, "emulated": emulation.is_enabled(),
        "onednn": f"{version.major}.{version.minor}.{version.patch} ({version.hash})",
        "package": __version__,
        "observations": [o._asdict() | {"agrees": o.agrees} for o in observed],
        "sweep": [dict(zip(("family", "implementation", "right", "detail"), r)) for r in sweep(h)]
                 if problems is None else [],
    }


def format_report(found: Dict[str, Any]) -> str:
    lines = [f"dnnl_ocl_interop {found['package']} probe",
             f"device: {found['device']} (driver {found['driver']}, {found['platform']}"
             + (", emulated" if found["emulated"] else "") + ")",
             f"oneDNN: {found['onednn']}", "", "known problems (rule on: does the binding act? "
             "rule off: what this device computes):"]
    for o in found["observations"]:
        verdict = ("?" if o["wrong"] is None else "wrong" if o["wrong"] else "right")
        agrees = "agrees" if o["agrees"] else "DISAGREES with the registry"
        lines.append(f"  {o['problem']}: {o['case']}: {o['implementation'] or '-'}: "
                     f"{'acts' if o['acts'] else 'does not act'}, {verdict}: {agrees} ({o['detail']})")
    if found["sweep"]:
        lines += ["", "families on plain layouts:"]
        for r in found["sweep"]:
            lines.append(f"  {r['family']}: {r['implementation'] or '-'}: "
                         f"{'right' if r['right'] else 'WRONG'} ({r['detail']})")
    disagreeing = sum(not o["agrees"] for o in found["observations"])
    wrong_families = sum(not r["right"] for r in found["sweep"])
    lines += ["", f"{len(found['observations']) - disagreeing} of {len(found['observations'])} "
              "observations agree with the registry"
              + (f"; {wrong_families} families computed wrong" if wrong_families else "")]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dnnl_ocl_interop probe",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="*", help="known problem ids (default: every one, "
                        "and the sweep of the families)")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    args = parser.parse_args(argv)
    emulation.ensure_device()
    h = harness()
    found = report(h, args.problems or None)
    print(json.dumps(found, indent=2) if args.json else format_report(found))
    agree = all(o["agrees"] for o in found["observations"]) and all(r["right"] for r in found["sweep"])
    return 0 if agree else 1


if __name__ == "__main__":
    os.environ.setdefault("PYOPENCL_COMPILER_OUTPUT", "0")
    sys.exit(main())
