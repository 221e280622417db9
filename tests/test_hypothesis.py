"""Property-based tests (hypothesis): random input never crashes the binding.

- memory descriptors from random dims (0, negative, huge), data types,
  format tags and strides: either a consistent descriptor (sizes as oneDNN
  and NumPy define them, and a map_data view inside the memory) or a Python
  exception;
- reorders between random plain layouts and data types (f32, f16, bf16, s8)
  of random small shapes: the values NumPy computes, rounded and saturated
  as oneDNN converts, in the destination's physical layout;
- graphs of random small chains of ops (MatMul, ReLU, Add, Multiply,
  SoftMax), some with mismatched shapes: either dnnl.error or partitions
  that compile and compute what NumPy computes;
- every entry point with random wrong-typed arguments, random ints as USM
  pointers, freed USM pointers, memory whose buffer was replaced, huge or
  negative sizes, and mismatched engines: a Python exception (TypeError,
  ValueError, OverflowError or dnnl.error), never a crash or another type.

Random ints are never passed as OpenCL handles (cl_mem, cl_context, ...) in
this process: such an int is dereferenced by the OpenCL loader, as in
pyopencl (documented). Engine cache blobs of random bytes are tried in a
child process.
"""

import collections
import itertools
import math
import subprocess
import sys
import textwrap
import types

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

import dnnl_ocl_interop as dnnl
from helpers import (ALG, DT, ENTRY_POINTS, F32, INFERENCE, MF, STRIDED, TAG, USM_POINTER_USES,
                     compile_partition, g, goi, lt, oi, usm)

# BufferError: a read-only buffer where a writable one is needed (as in
# test_bad_input.py's read-only memcpy destination)
REFUSALS = (TypeError, ValueError, OverflowError, BufferError, dnnl.error)


def _settings(max_examples):
    return settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow,
                                           HealthCheck.filter_too_much])


RUNTIME_DIM = -2**63  # DNNL_RUNTIME_DIM_VAL
# bytes per element; sub-byte types (s4, u4, f4_*) are left out of exact sizes
ITEMSIZE = {DT.f32: 4, DT.f16: 2, DT.bf16: 2, DT.f64: 8, DT.s64: 8, DT.s32: 4, DT.s8: 1, DT.u8: 1,
            DT.f8_e5m2: 1, DT.f8_e4m3: 1, DT.e8m0: 1}
NUMPY = {DT.f32: np.float32, DT.f16: np.float16, DT.bf16: np.uint16, DT.f64: np.float64,
         DT.s64: np.int64, DT.s32: np.int32, DT.s8: np.int8, DT.u8: np.uint8}


def _dense_strides(dims, order):
    """Strides of dims laid out in `order` (outermost axis first)."""
    strides = [0] * len(dims)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= dims[axis]
    return strides


def _tag_order(tag, ndims):
    """The axis order of a plain format tag ('acb' -> [0, 2, 1]), or None."""
    name = tag.name
    letters = "abcdefghijkl"[:ndims]
    if len(name) != ndims or sorted(name) != list(letters):
        return None
    return [letters.index(c) for c in name]


def _plain_tag(order):
    return getattr(TAG, "".join("abcdefghijkl"[i] for i in order))


# The plain (permutation) format tags oneDNN names, by number of dims.
PLAIN_TAGS: dict[int, list] = {}
for _tag in TAG:
    if _tag_order(_tag, len(_tag.name)) is not None:
        PLAIN_TAGS.setdefault(len(_tag.name), []).append(_tag)


# ------------------------------------------------------------ memory descriptors

WEIRD_DIM = st.one_of(st.just(0), st.integers(-3, -1),
                      st.sampled_from([2**31, 2**40, 2**62, 2**63 - 1, 2**63, 2**64,
                                       RUNTIME_DIM, -2**62]))
WEIRD_STRIDE = st.one_of(st.just(0), st.integers(-2, -1),
                         st.sampled_from([2**40, 2**62, 2**63 - 1, 2**63]))


@st.composite
def _numbers(draw, small, weird, min_size=0, max_size=5):
    """A list of small numbers, where one in three lists has a weird one."""
    values = draw(st.lists(small, min_size=min_size, max_size=max_size))
    if values and draw(st.integers(0, 2)) == 0:
        values[draw(st.integers(0, len(values) - 1))] = draw(weird)
    return values


@st.composite
def desc_args(draw):
    dims = draw(st.one_of(_numbers(st.integers(1, 8), WEIRD_DIM, 1, 5),
                          _numbers(st.integers(1, 3), WEIRD_DIM, 0, 13)))
    data_type = draw(st.one_of(st.sampled_from([DT.f32, DT.f16, DT.bf16, DT.s8, DT.u8, DT.s32]),
                               st.sampled_from(list(DT))))
    choice = draw(st.sampled_from(["plain tag", "any tag", "dense strides", "strides",
                                   "any strides"]))
    ndims = len(dims)
    if choice == "plain tag" and ndims in PLAIN_TAGS:
        layout = draw(st.sampled_from(PLAIN_TAGS[ndims]))
    elif choice in ("plain tag", "any tag"):
        layout = draw(st.sampled_from(list(TAG)))
    elif choice == "dense strides" and all(0 < d < 2**20 for d in dims):
        layout = _dense_strides(dims, draw(st.permutations(range(ndims))))
    elif choice in ("dense strides", "strides"):
        layout = draw(_numbers(st.integers(0, 70), WEIRD_STRIDE, ndims, ndims))
    else:
        layout = draw(_numbers(st.integers(0, 70), WEIRD_STRIDE, 0, 13))
    return dims, data_type, layout


def _surely_valid_desc(dims, data_type, layout):
    """Arguments oneDNN documents as a valid descriptor: 1 to 12 dims
    (DNNL_MAX_NDIMS) of moderate size, a common data type, and a plain
    format tag of that rank or the dense strides of a dimension order."""
    if not (1 <= len(dims) <= 12 and all(1 <= d < 2**20 for d in dims)):
        return False
    if data_type not in (DT.f32, DT.f16, DT.bf16, DT.s8, DT.u8, DT.s32):
        return False
    if isinstance(layout, list):  # dense: the strides of the order they sort the axes in
        outer_first = sorted(range(len(dims)), key=lambda axis: -layout[axis]) if len(layout) == len(dims) else []
        return len(layout) == len(dims) and layout == _dense_strides(dims, outer_first)
    return layout in PLAIN_TAGS.get(len(dims), [])


@_settings(200)
@given(args=desc_args())
@example(args=([2, 3], DT.f32, [1, 2, 3]))  # more strides than dims
@example(args=([2, 3], DT.f32, [1]))
@example(args=([RUNTIME_DIM, 3], DT.f32, TAG.ab))
@example(args=([2**62, 4], DT.f32, TAG.ab))
@example(args=([2**63 - 1], DT.s8, TAG.a))
def test_memory_desc_is_consistent_or_refused(engine, args):
    dims, data_type, layout = args
    try:
        desc = dnnl.memory.desc(dims, data_type, layout)
    except REFUSALS as refusal:
        assert not _surely_valid_desc(dims, data_type, layout), f"refused {args}: {refusal!r}"
        _assert_documented_refusal(refusal)
        return
    ndims = len(dims)
    size = desc.get_size()
    assert isinstance(size, int) and size >= 0
    if ndims == 0 or layout == TAG.undef:
        # oneDNN's zero descriptor (C API: ndims 0 or format_tag undef)
        assert desc.is_zero() and size == 0
        return
    assert desc.get_dims() == dims
    assert desc.get_ndims() == ndims
    assert desc.get_data_type() == data_type
    if isinstance(layout, list):
        assert len(layout) in (0, ndims), \
            f"strides {layout} for {ndims} dims were accepted (as {desc.get_strides()})"
    if RUNTIME_DIM in dims:
        with pytest.raises(dnnl.error):  # no memory of unknown size
            dnnl.memory(desc, engine)
        return
    assert all(d >= 0 for d in dims), f"negative dims accepted: {dims}"
    if layout == TAG.any:
        with pytest.raises(dnnl.error):
            dnnl.memory(desc, engine)
        return
    itemsize = ITEMSIZE.get(data_type)
    nelems = math.prod(dims)
    strides = desc.get_strides()
    order = _tag_order(layout, ndims) if isinstance(layout, TAG) else None
    if desc.get_inner_nblks() == 0:
        # (along a dimension of one element nothing is stepped over: any stride)
        assert all(s >= 0 or d == 1 for d, s in zip(dims, strides)), f"negative strides accepted: {strides}"
    if isinstance(layout, list) and layout:
        assert strides == layout
    elif isinstance(layout, list) or order is not None:
        assert strides == _dense_strides(dims, order or list(range(ndims))) or nelems == 0
    if itemsize is not None and desc.get_inner_nblks() == 0 and nelems > 0:
        # oneDNN's size of a strided layout: the largest dim * stride (the
        # stride of a dim of 1 counting as 1)
        assert size == max(d * (1 if d == 1 else s) for d, s in zip(dims, strides)) * itemsize
        outer_first = sorted(range(ndims), key=lambda axis: -strides[axis])
        if strides == _dense_strides(dims, outer_first):
            assert size == nelems * itemsize  # dense: NumPy's nbytes
    if nelems == 0:
        assert size == 0
    if order is not None or (isinstance(layout, list) and len(layout) == ndims):
        assert desc == dnnl.memory.desc(dims, data_type, strides) or nelems == 0

    if 0 < size <= 1 << 16:
        memory = dnnl.memory(desc, engine)
        view = memory.map_data()
        try:
            if data_type in NUMPY and desc.get_inner_nblks() == 0:
                assert view.dtype == NUMPY[data_type]
                assert view.shape == tuple(dims)
                assert list(view.strides) == [s * itemsize for s in strides]
                # the view stays inside the memory
                last = sum((d - 1) * s for d, s in zip(dims, strides))
                assert (last + 1) * itemsize <= size
            elif itemsize is None or desc.get_inner_nblks():
                assert view.dtype == np.uint8 and view.size == size
        finally:
            memory.unmap_data(view)
    elif size >= 1 << 44:
        with pytest.raises(dnnl.error):
            dnnl.memory(desc, engine)


# --------------------------------------------------------------------- reorders

REORDER_TYPES = {"f32": DT.f32, "f16": DT.f16, "bf16": DT.bf16, "s8": DT.s8}


def _representable(x, name):
    """float32 values of x converted to the data type, as oneDNN converts:
    round to nearest even, s8 saturated."""
    x = np.asarray(x, dtype=np.float32)
    if name == "f32":
        return x
    if name == "f16":
        return x.astype(np.float16).astype(np.float32)
    if name == "bf16":
        return dnnl.arrays.float32_from_bf16(dnnl.arrays.bf16_from_float32(x))
    return np.clip(np.rint(x), -128, 127).astype(np.float32)


def _storage(values, name):
    if name == "bf16":
        return dnnl.arrays.bf16_from_float32(values)
    return values.astype(NUMPY[REORDER_TYPES[name]])


def _as_float32(array, name):
    if name == "bf16":
        return dnnl.arrays.float32_from_bf16(array)
    return np.asarray(array).astype(np.float32)


@st.composite
def reorder_cases(draw, mixed_kinds=False):
    ndims = draw(st.integers(1, 4))
    dims = draw(st.lists(st.sampled_from([1, 2, 3, 4, 5, 8, 16]), min_size=ndims,
                         max_size=ndims).filter(lambda d: math.prod(d) <= 4096))
    src_order = _tag_order(draw(st.sampled_from(PLAIN_TAGS[ndims])), ndims)
    dst_order = _tag_order(draw(st.sampled_from(PLAIN_TAGS[ndims])), ndims)
    src_type = draw(st.sampled_from(list(REORDER_TYPES)))
    dst_type = draw(st.sampled_from(list(REORDER_TYPES)))
    if mixed_kinds:
        kinds = draw(st.sampled_from([("buffer", "usm"), ("usm", "buffer")]))
    else:
        kinds = (draw(st.sampled_from(["buffer", "usm"])),) * 2
    seed = draw(st.integers(0, 2**32 - 1))
    return dims, src_order, dst_order, src_type, dst_type, kinds, seed


def _new_memory(engine, desc, kind):
    if kind == "buffer":
        return dnnl.memory(desc, engine)
    return oi.make_memory(desc, engine, oi.memory_kind.usm)


def _physical(engine, memory, dims, order, data_type):
    """Plain memory with permuted dims over the same storage: the bytes of
    `memory` as laid out."""
    desc = dnnl.memory.desc([dims[i] for i in order], data_type,
                            _plain_tag(list(range(len(dims)))))
    if oi.get_memory_kind(memory) == oi.memory_kind.usm:
        return oi.make_memory(desc, engine, oi.memory_kind.usm, memory.get_data_handle())
    return oi.make_memory(desc, engine, oi.get_mem_object(memory))


SUBGROUP_TRANSPOSE = "ocl:custom:any"


def _check_reorder(engine, stream, case):
    """Runs one reorder case; returns its outcome: "checked" or "direct copy
    refused"."""
    dims, src_order, dst_order, src_type, dst_type, kinds, seed = case
    rng = np.random.default_rng(seed)
    raw = rng.uniform(-200, 200, size=dims)
    ties = rng.random(size=dims) < 0.3  # halves: rounding ties for s8
    values = np.where(ties, np.round(raw * 2) / 2, raw).astype(np.float32)
    x = _representable(values, src_type)  # what the source holds
    expected = _representable(x, dst_type)

    src_desc = dnnl.memory.desc(dims, REORDER_TYPES[src_type], _plain_tag(src_order))
    dst_desc = dnnl.memory.desc(dims, REORDER_TYPES[dst_type], _plain_tag(dst_order))
    src = _new_memory(engine, src_desc, kinds[0])
    dst = _new_memory(engine, dst_desc, kinds[1])
    dnnl.arrays.write(src, _storage(x, src_type))
    pd = dnnl.reorder.primitive_desc(engine, src_desc, engine, dst_desc)
    reorder = dnnl.reorder(pd)
    if pd.impl_info_str() == "gpu:direct_copy" and kinds[0] != kinds[1]:
        # oneDNN 3.13's direct copy copies nothing between buffer and USM
        # memory: the binding refuses it instead of returning garbage.
        with pytest.raises(dnnl.error, match="direct_copy") as refused:
            reorder.execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
        assert refused.value.status == dnnl.status.unimplemented
        return "direct copy refused"
    reorder.execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    stream.wait()

    out = _as_float32(dnnl.arrays.read(dst), dst_type)
    np.testing.assert_array_equal(
        out, expected, err_msg=f"{dims} {_plain_tag(src_order).name}:{src_type}:{kinds[0]} -> "
                               f"{_plain_tag(dst_order).name}:{dst_type}:{kinds[1]} "
                               f"({pd.impl_info_str()})")
    raw_dst = _physical(engine, dst, dims, dst_order, REORDER_TYPES[dst_type])
    np.testing.assert_array_equal(_as_float32(dnnl.arrays.read(raw_dst), dst_type),
                                  np.transpose(expected, dst_order))
    return "checked"


def _run_reorder_property(engine, stream, strategy, examples, explicit):
    """Runs the property over `examples` drawn cases and the `explicit` ones;
    returns the outcomes counted (shown as hypothesis events)."""
    outcomes = collections.Counter()

    @_settings(examples)
    @given(case=strategy)
    def check(case):
        outcome = _check_reorder(engine, stream, case)
        event(outcome)
        outcomes[outcome] += 1

    for case in explicit:
        check = example(case=case)(check)
    check()
    return outcomes


def test_reorder_matches_numpy(engine, stream):
    outcomes = _run_reorder_property(
        engine, stream, reorder_cases(), 40,
        [([3, 5], [0, 1], [1, 0], "f32", "s8", ("buffer", "buffer"), 3)])
    assert set(outcomes) == {"checked"}, outcomes


SUBGROUP_TRANSPOSES = [([8, 8], [0, 1], [1, 0], "f32", "f32", ("buffer", "buffer"), 1),
                       ([2, 16, 16], [0, 1, 2], [0, 2, 1], "f16", "f32", ("usm", "usm"), 2)]


@pytest.mark.parametrize("case", SUBGROUP_TRANSPOSES)
def test_subgroup_transpose_reorder(engine, stream, case):
    """Dims of multiples of 8 swapping the last two axes: oneDNN's ocl:custom
    transpose kernel (sub-groups of 8 or 16, in work-groups of (1, 16, 1)).
    Right on the emulated device once its sub-groups are formed as a GPU's
    (docs/emulation.md; test_emulation_device.py watches the runtime's own
    way)."""
    dims, src_order, dst_order, src_type, dst_type, _, _ = case
    pd = dnnl.reorder.primitive_desc(
        engine, dnnl.memory.desc(dims, REORDER_TYPES[src_type], _plain_tag(src_order)),
        engine, dnnl.memory.desc(dims, REORDER_TYPES[dst_type], _plain_tag(dst_order)))
    assert pd.impl_info_str() == SUBGROUP_TRANSPOSE  # the kernel this test is about
    assert _check_reorder(engine, stream, case) == "checked"


def test_reorder_between_buffer_and_usm_memory_matches_numpy(engine, stream):
    outcomes = _run_reorder_property(
        engine, stream, reorder_cases(mixed_kinds=True), 20,
        # same layout and type: oneDNN's gpu:direct_copy, a stream copy
        [([1], [0], [0], "f32", "f32", ("buffer", "usm"), 0),
         ([3, 5], [0, 1], [1, 0], "f32", "f16", ("usm", "buffer"), 4)])
    # 22 cases: about half are plain copies (direct copy, refused between kinds)
    assert outcomes["checked"] >= 8, outcomes
    assert outcomes["direct copy refused"] >= 1, outcomes


# ------------------------------------------------------------------------ graphs

UNARY = ("ReLU", "SoftMax")
BINARY = ("Add", "Multiply")


@st.composite
def graph_chains(draw):
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(UNARY + BINARY + ("MatMul",)))
        if kind == "MatMul":
            param = draw(st.integers(1, 6))  # columns of the weights
        elif kind in BINARY:
            param = draw(st.sampled_from(["same", "row", "col", "scalar"]))
        else:
            param = None
        corrupt = draw(st.sampled_from([None] * 6 + ["out", "in", "rank"]))
        steps.append((kind, param, corrupt))
    return (m, n), steps, draw(st.integers(0, 2**32 - 1))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _build_chain(shape, steps, rng):
    """ops, graph inputs {id: array}, references {id: array} and whether a
    shape was made inconsistent on purpose (no references from there on)."""
    ids = itertools.count()
    current_id = next(ids)
    current = rng.standard_normal(shape).astype(np.float32)
    declared = list(shape)  # the dims the graph states for the current tensor
    inputs = {current_id: current}
    reference = {current_id: current}
    ops, invalid = [], False
    for op_id, (kind, param, corrupt) in enumerate(steps):
        m, n = declared[-2:]
        if corrupt == "in" and kind in UNARY:
            corrupt = "out"  # a unary op has no second input to spoil
        extra = None
        if kind == "MatMul":
            k = n + 1 if corrupt == "in" else n  # weights of the wrong height
            extra = rng.standard_normal((k, param)).astype(np.float32)
            out_dims = [m, param]
        elif kind in BINARY:
            rows, cols = {"same": (m, n), "row": (1, n), "col": (m, 1), "scalar": (1, 1)}[param]
            if corrupt == "in":
                cols = n + 1  # n + 1 columns do not broadcast to the stated n
            extra = rng.standard_normal((rows, cols)).astype(np.float32)
            out_dims = [m, n]
        else:
            out_dims = [m, n]
        if corrupt == "out":
            out_dims = [out_dims[0], out_dims[1] + 1]
        elif corrupt == "rank":
            out_dims = [1] + out_dims
        invalid = invalid or corrupt is not None

        op_inputs = [lt(current_id, F32, list(declared), STRIDED)]
        if extra is not None:
            extra_id = next(ids)
            op_inputs.append(lt(extra_id, F32, list(extra.shape), STRIDED))
            inputs[extra_id] = reference[extra_id] = extra
        out_id = next(ids)
        op = g.op(op_id, getattr(g.op.kind, kind), op_inputs,
                  [lt(out_id, F32, out_dims, STRIDED)], f"{kind.lower()}{op_id}")
        if kind == "SoftMax":
            op.set_attr(g.op.attr.axis, -1)
        ops.append(op)

        if not invalid:
            if kind == "MatMul":
                current = current @ extra
            elif kind == "Add":
                current = current + extra
            elif kind == "Multiply":
                current = current * extra
            elif kind == "ReLU":
                current = np.maximum(current, 0)
            else:
                current = _softmax(current)
            reference[out_id] = current.astype(np.float32)
        current_id, declared = out_id, out_dims
    return ops, inputs, reference, invalid


GRAPH_EXAMPLES = 40


def test_random_graph_chain_computes_numpy_or_raises(engine, cl_context, cl_device, cl_queue, stream):
    """Every example ends in one of these outcomes, counted: a graph with
    inconsistent shapes refused (dnnl.error), or a consistent graph whose
    partitions all compile and compute what NumPy computes. A consistent
    graph refused, or with a partition oneDNN does not support, fails the
    test at the end, with the graphs named (none is known on this oneDNN)."""
    outcomes = collections.Counter()
    unrun = []

    @_settings(GRAPH_EXAMPLES)
    @given(chain=graph_chains())
    def check(chain):
        outcome = _check_graph_chain(engine, cl_context, cl_device, cl_queue, stream, chain)
        event(outcome)
        outcomes[outcome] += 1
        if outcome not in ("compared", "inconsistent, refused"):
            unrun.append((outcome, chain))

    check()
    assert sum(outcomes.values()) >= GRAPH_EXAMPLES, outcomes
    assert not unrun, f"consistent graphs not run ({dict(outcomes)}): {unrun}"
    # Both kinds of graphs were drawn, the consistent ones compared.
    assert outcomes["compared"] >= GRAPH_EXAMPLES // 4, outcomes
    assert outcomes["inconsistent, refused"] >= GRAPH_EXAMPLES // 8, outcomes


def _check_graph_chain(engine, cl_context, cl_device, cl_queue, stream, chain):
    """Builds, compiles and runs one chain; returns its outcome."""
    shape, steps, seed = chain
    rng = np.random.default_rng(seed)
    ops, inputs, reference, invalid = _build_chain(shape, steps, rng)
    try:
        graph = g.graph(dnnl.engine.kind.gpu)
        for op in ops:
            graph.add_op(op)
        graph.finalize()
        partitions = graph.get_partitions()
        compiled = []
        for partition in partitions:
            if not partition.is_supported():
                continue
            compiled.append((partition, compile_partition(partition, engine)))
    except dnnl.error as error:
        assert error.status != dnnl.status.success
        return "inconsistent, refused" if invalid else f"consistent, refused: {error}"
    assert not invalid, "a graph with inconsistent shapes compiled: " + \
        "; ".join(f"{k}({p}, {c})" for k, p, c in steps)
    if len(compiled) < len(partitions):
        return "consistent, a partition unsupported"

    blocks, values = {}, dict(inputs)
    try:
        pending = list(compiled)
        while pending:
            ready = [(p, c) for p, c in pending
                     if all(port.get_id() in values for port in p.get_input_ports())]
            assert ready, "no partition can run: their inputs are never produced"
            for partition, cp in ready:
                pending.remove((partition, cp))
                tensors = {}
                for port in partition.get_input_ports() + partition.get_output_ports():
                    queried = cp.query_logical_tensor(port.get_id())
                    block = usm.allocation(cl_context, max(queried.get_mem_size(), 4),
                                           "device", cl_device)
                    blocks[port.get_id(), len(blocks)] = block
                    tensors[port.get_id()] = g.tensor(queried, engine, block.ptr)
                for port in partition.get_input_ports():
                    data = np.ascontiguousarray(values[port.get_id()], np.float32)
                    usm.memcpy(cl_queue, tensors[port.get_id()].get_data_handle(), data,
                               data.nbytes).wait()
                cp.execute(stream, [tensors[p.get_id()] for p in partition.get_input_ports()],
                           [tensors[p.get_id()] for p in partition.get_output_ports()])
                stream.wait()
                for port in partition.get_output_ports():
                    out = np.empty(port.get_dims(), np.float32)
                    usm.memcpy(cl_queue, out, tensors[port.get_id()].get_data_handle(),
                               out.nbytes).wait()
                    values[port.get_id()] = out
                    ref = reference[port.get_id()]
                    scale = max(1.0, float(np.abs(ref).max(initial=0)))
                    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * scale,
                                               err_msg=f"tensor {port.get_id()} of {steps}")
    finally:
        cl_queue.finish()
        for block in blocks.values():
            block.free()
    return "compared"


# ------------------------------------------------- wrong types in every entry point

JUNK = st.one_of(st.none(), st.floats(), st.text(max_size=6), st.lists(st.integers(), max_size=3),
                 st.binary(max_size=6))
ANY = st.one_of(JUNK, st.integers())
# Where an OpenCL handle is expected, ints in [1, 2**64) are handles the loader
# dereferences: only NULL and out-of-range ints are tried.
CL_HANDLE = st.one_of(st.none(), st.floats(), st.text(max_size=6), st.binary(max_size=6),
                      st.lists(st.none(), max_size=2), st.booleans(), st.just(0),
                      st.integers(max_value=-1), st.integers(min_value=2**64))
# A list of events: None entries are skipped by design, int entries are cl_events.
DEPS = st.one_of(st.none(), st.floats(), st.text(max_size=6), st.binary(max_size=6),
                 st.integers(), st.lists(st.one_of(st.floats(), st.text(max_size=4),
                                                   st.binary(max_size=4),
                                                   st.integers(max_value=-1),
                                                   st.integers(min_value=2**64)),
                                         min_size=1, max_size=3))
SIZE = st.one_of(JUNK, st.integers(max_value=1 << 12), st.integers(min_value=1 << 40))
TENSOR_LISTS = st.one_of(ANY, st.lists(ANY, min_size=1, max_size=3))


def _never(value, result):
    return False


def _null_ok(value, result):
    return value == 0 and not isinstance(value, bool)


def _small_size_ok(value, result):
    return isinstance(value, int) and 0 < value <= 1 << 12


def _power_of_two_ok(value, result):
    return isinstance(value, int) and value >= 0 and value & (value - 1) == 0


def _none_ok(value, result):
    return value is None


def _numbers_ok(value, result):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _copy_size_ok(value, result):  # o.ptr and o.host hold 256 bytes
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 256


class _Valid(types.SimpleNamespace):
    def __repr__(self):  # keeps hypothesis' falsifying examples readable
        return "<valid arguments>"


@pytest.fixture
def o(engine, cl_device, cl_context, cl_queue):
    """Valid arguments of every entry point, so that each case spoils one."""
    ns = _Valid(engine=engine, device=cl_device, context=cl_context, queue=cl_queue)
    ns.desc = dnnl.memory.desc([4, 4], DT.f32, TAG.ab)
    ns.mem = dnnl.memory(ns.desc, engine)
    ns.out = dnnl.memory(ns.desc, engine)
    ns.stream = oi.make_stream(engine, cl_queue)
    ns.buffer = cl.Buffer(cl_context, MF.READ_WRITE, ns.desc.get_size())
    ns.ptr = usm.device_alloc(cl_context, cl_device, 256)
    ns.usm_mem = oi.make_memory(ns.desc, engine, oi.memory_kind.usm, ns.ptr)
    ns.host = np.zeros(256, dtype=np.uint8)
    ns.prim = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, INFERENCE, ALG.eltwise_relu, ns.desc, ns.desc))
    ns.args = {dnnl.ARG_SRC: ns.mem, dnnl.ARG_DST: ns.out}
    a = lt(0, F32, [4, 4], STRIDED)
    b = lt(1, F32, [4, 4], STRIDED)
    c = lt(2, F32, [4, 4], STRIDED)
    ns.op = g.op(0, g.op.kind.MatMul, [a, b], [c], "matmul")
    graph = g.graph(dnnl.engine.kind.gpu)
    graph.add_op(ns.op)
    graph.finalize()
    ns.partition = graph.get_partitions()[0]
    ns.lts = (a, b, c)
    ns.compiled = ns.partition.compile([a, b], [c], engine)
    ns.tensor_blocks = [usm.allocation(cl_context, 64, "device", cl_device) for _ in range(3)]
    ns.tensors = [g.tensor(t, engine, blk.ptr) for t, blk in zip(ns.lts, ns.tensor_blocks)]
    ns.allocator = goi.make_allocator(lambda *args: 0, lambda *args: None)
    ns.made = []  # what successful calls returned, released after the test
    yield ns
    cl_queue.finish()
    for ptr in [ns.ptr] + [r for r in ns.made if isinstance(r, int) and r]:
        usm.free(cl_context, ptr)
    for block in ns.tensor_blocks:
        block.free()


# The cache blob parameter: bytes, or None for none.
CACHE_BLOB = st.one_of(st.none(), st.floats(), st.text(max_size=6), st.integers(),
                       st.lists(st.integers(), max_size=3))
ARGS = st.one_of(ANY, st.dictionaries(st.integers(), ANY, max_size=3))


def _no_events_ok(value, result):  # None entries of deps are skipped, by design
    return isinstance(value, list) and all(x is None for x in value)


def _null_or_all_ones_ok(value, result):  # as a USM pointer: DNNL_MEMORY_NONE, MEMORY_ALLOCATE
    return value in (0, 2**64 - 1) and not isinstance(value, bool)


# (entry point, strategy, may_succeed(value, result)); the entry points are
# helpers.ENTRY_POINTS, their keys the test ids.
WRONG_ARGUMENTS = [
    # dnnl.ocl_interop
    ("make_engine.device", CL_HANDLE, _never),
    ("make_engine.context", CL_HANDLE, _never),
    ("make_engine.cache_blob", CACHE_BLOB, _none_ok),
    ("get_context", ANY, _never),
    ("get_device", ANY, _never),
    ("get_engine_cache_blob", ANY, _never),
    ("get_engine_cache_blob_id", CL_HANDLE, _never),
    ("make_stream.engine", ANY, _never),
    ("make_stream.queue", CL_HANDLE, _never),
    ("get_command_queue", ANY, _never),
    ("make_memory.desc", ANY, _never),
    ("make_memory.engine", ANY, _never),
    # an int third argument is a cl_mem (the other overload)
    ("make_memory.kind", CL_HANDLE, _never),
    ("make_memory.usm_handle", ANY, _null_or_all_ones_ok),
    ("make_memory.buffer_handle", CL_HANDLE, _null_ok),
    ("get_mem_object", ANY, _never),
    ("get_memory_kind", ANY, _never),
    ("set_mem_object.memory", ANY, _never),
    ("set_mem_object.mem_object", CL_HANDLE, _never),
    ("execute.primitive", ANY, _never),
    ("execute.stream", ANY, _never),
    ("execute.args", ARGS, _never),
    ("execute.deps", DEPS, _no_events_ok),
    # dnnl.usm
    ("device_alloc.context", CL_HANDLE, _never),
    ("device_alloc.device", CL_HANDLE, _never),
    ("device_alloc.size", SIZE, _small_size_ok),
    ("device_alloc.alignment", ANY, _power_of_two_ok),
    ("shared_alloc.size", SIZE, _small_size_ok),
    ("shared_alloc.device", CL_HANDLE, _never),
    ("host_alloc.context", CL_HANDLE, _never),
    ("host_alloc.size", SIZE, _small_size_ok),
    ("host_alloc.alignment", ANY, _power_of_two_ok),
    ("free.context", CL_HANDLE, _never),
    ("free.ptr", ANY, _null_ok),
    ("pointer_type.context", CL_HANDLE, _never),
    ("pointer_type.ptr", ANY, lambda v, r: isinstance(v, int) and r == "unknown"),
    ("memcpy.queue", CL_HANDLE, _never),
    ("memcpy.dst", ANY, _never),
    # bytes are a readable buffer: a valid source
    ("memcpy.src", ANY, lambda v, r: isinstance(v, bytes) and len(v) >= 8),
    ("memcpy.size", SIZE, _copy_size_ok),
    ("memcpy.deps", DEPS, _no_events_ok),
    ("fill.queue", CL_HANDLE, _never),
    ("fill.ptr", ANY, _never),
    ("fill.pattern", ANY, lambda v, r: isinstance(v, bytes) and len(v) in (1, 2, 4, 8)),
    ("fill.size", SIZE, _copy_size_ok),
    ("allocation.size", SIZE, _small_size_ok),
    ("allocation.kind", ANY, lambda v, r: v in ("device", "shared", "host")),
    ("allocation.context", CL_HANDLE, _never),
    # core
    ("memory.desc", ANY, _never),
    ("memory.engine", ANY, _never),
    ("memory.handle", CL_HANDLE, _null_ok),
    ("memory.set_data_handle", CL_HANDLE, _null_ok),
    ("usm_memory.set_data_handle", ANY, _null_ok),
    ("memory.unmap_data", ANY, _never),
    ("stream.engine", ANY, _never),
    ("stream.flags", ANY, _never),
    ("desc.dims", ANY, lambda v, r: isinstance(v, list)),
    ("desc.data_type", ANY, _never),
    ("desc.layout", ANY, lambda v, r: isinstance(v, list)),
    ("primitive.execute.stream", ANY, _never),
    ("primitive.execute.args", ARGS, _never),
    ("matmul.primitive_desc.engine", ANY, _never),
    ("matmul.primitive_desc.weights", ANY, _never),
    ("eltwise.primitive_desc.alpha", ANY, _numbers_ok),
    ("reorder.primitive_desc.dst", ANY, _never),
    # dnnl.graph
    ("make_allocator.malloc", ANY, _never),
    ("make_allocator.free", ANY, _never),
    ("make_engine_with_allocator.device", CL_HANDLE, _never),
    ("make_engine_with_allocator.context", CL_HANDLE, _never),
    ("make_engine_with_allocator.allocator", ANY, _never),
    ("make_engine_with_allocator.cache_blob", CACHE_BLOB, _none_ok),
    ("tensor.logical_tensor", ANY, _never),
    ("tensor.engine", ANY, _never),
    ("tensor.handle", ANY, _null_or_all_ones_ok),
    ("tensor.set_data_handle", ANY, _null_ok),
    ("compiled.execute.stream", ANY, _never),
    ("compiled.execute.inputs", TENSOR_LISTS, _never),
    ("compiled.execute.outputs", TENSOR_LISTS, _never),
    ("graph.execute.deps", DEPS, _no_events_ok),
    ("graph.execute.scratchpad", ANY, _none_ok),
    ("logical_tensor.dims", ANY, lambda v, r: isinstance(v, (list, int))),
    ("logical_tensor.data_type", ANY, _never),
    ("op.kind", ANY, _never),
    ("op.set_attr.value", ANY,
     lambda v, r: isinstance(v, (bool, int, float, str)) or (
         isinstance(v, list) and all(isinstance(x, int) for x in v))),
    ("op.set_attr.attr", ANY, _never),
    ("graph.add_op", ANY, _never),
    ("graph.engine_kind", ANY, _never),
    ("partition.compile.inputs", TENSOR_LISTS, _never),
    ("partition.compile.engine", ANY, _never),
]


def _valid_pointer(value, result):
    return type(value) is int and 0 <= value < 2**64


def _exactly_null(value, result):  # an int: 0.0 or False are not handles
    return type(value) is int and value == 0


def _exactly_null_or_all_ones(value, result):
    return type(value) is int and value in (0, 2**64 - 1)


def _exactly_small_size(value, result):
    return type(value) is int and 0 < value <= 1 << 12


def _allocation_kind(value, result):
    return value in ("device", "shared", "host")


# Values the binding documents as valid, which must therefore be accepted:
# a refusal of one fails the test. (Entries not named here, and values
# outside these, may be refused: the driver or oneDNN decide, e.g. a huge
# power-of-two alignment, a list of dims oneDNN rejects.)
MUST_SUCCEED = {
    "make_engine.cache_blob": _none_ok,
    "make_engine_with_allocator.cache_blob": _none_ok,
    "make_memory.usm_handle": _exactly_null_or_all_ones,
    "make_memory.buffer_handle": _exactly_null,
    "tensor.handle": _exactly_null_or_all_ones,
    "memory.handle": _exactly_null,
    "memory.set_data_handle": _exactly_null,
    "usm_memory.set_data_handle": _exactly_null,
    "tensor.set_data_handle": _exactly_null,
    "execute.deps": _no_events_ok,
    "memcpy.deps": _no_events_ok,
    "graph.execute.deps": _no_events_ok,
    "graph.execute.scratchpad": _none_ok,
    "device_alloc.size": _exactly_small_size,
    "shared_alloc.size": _exactly_small_size,
    "host_alloc.size": _exactly_small_size,
    "allocation.size": _exactly_small_size,
    "allocation.kind": _allocation_kind,
    "free.ptr": _exactly_null,
    "pointer_type.ptr": _valid_pointer,
    "memcpy.size": _copy_size_ok,
    "fill.size": _copy_size_ok,
}
# How the binding documents refusals (docs/api.md, Errors): TypeError for a
# wrong type, ValueError or OverflowError for a value out of range,
# BufferError for a read-only buffer, dnnl.error with one of these statuses.
DOCUMENTED_STATUSES = {"invalid_arguments", "out_of_memory"}


def _assert_documented_refusal(refusal):
    if isinstance(refusal, dnnl.error):
        assert refusal.status.name in DOCUMENTED_STATUSES, f"undocumented refusal: {refusal!r}"
    assert str(refusal), f"a refusal without a message: {refusal!r}"


@pytest.mark.parametrize("key, call, strategy, may_succeed", [
    pytest.param(key, ENTRY_POINTS[key].call, strategy, may_succeed, id=key)
    for key, strategy, may_succeed in WRONG_ARGUMENTS])
@_settings(30)
@given(data=st.data())
def test_wrong_arguments_raise_python_exceptions(o, key, call, strategy, may_succeed, data):
    value = data.draw(strategy, label="value")
    try:
        result = call(o, value)
    except REFUSALS as refusal:
        assert not MUST_SUCCEED.get(key, _never)(value, None), f"refused the valid {value!r}: {refusal!r}"
        _assert_documented_refusal(refusal)
        return
    if isinstance(result, usm.allocation):
        result.free()
    elif isinstance(result, int) and not isinstance(result, bool) and \
            usm.pointer_type(o.context, result) != "unknown":
        o.made.append(result)  # an allocation: freed by the fixture
    assert may_succeed(value, result), f"accepted {value!r} (returned {result!r})"


@pytest.mark.parametrize("via", ["primitive.execute", "ocl_interop.execute"])
@_settings(40)
@given(key=st.integers(), keep_src=st.booleans())
@example(key=2**32 + dnnl.ARG_SRC, keep_src=False)  # ARG_SRC modulo 2**32
@example(key=2**63, keep_src=True)  # beyond a C long
@example(key=-2**70, keep_src=True)
def test_execute_args_key_is_an_arg_or_refused(o, via, key, keep_src):
    """An args key outside the 32-bit ARG_* range is refused, and none is read
    as another one (e.g. modulo 2**32); one in range that the primitive does
    not use is ignored, as oneDNN ignores it: the ReLU then computes its
    destination from its source as without the key."""
    args = {key: o.mem, dnnl.ARG_DST: o.out}
    if keep_src:
        args[dnnl.ARG_SRC] = o.mem
    valid = dnnl.ARG_SRC in args and all(-2**31 <= k < 2**31 for k in args)
    call = o.prim.execute if via == "primitive.execute" else \
        (lambda stream, args: oi.execute(o.prim, stream, args))
    if valid:
        x = np.arange(-8, 8, dtype=np.float32).reshape(4, 4)
        dnnl.arrays.write(o.mem, x)
        dnnl.arrays.write(o.out, np.full((4, 4), -7777.0, np.float32))  # what a skipped execute leaves
        call(o.stream, args)
        o.stream.wait()
        np.testing.assert_array_equal(dnnl.arrays.read(o.out), np.maximum(x, 0), err_msg=f"key {key}")
        return
    with pytest.raises(REFUSALS):
        call(o.stream, args)


INT64 = range(-2**63, 2**63)


def _attr_value_storable(value):
    """What op.set_attr can store: bool, int64, float, str, or a list of int64
    ints or of numbers."""
    if isinstance(value, (bool, float, str)):
        return True
    if isinstance(value, int):
        return value in INT64
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            return all(x in INT64 for x in value)
        return all(isinstance(x, float) or (isinstance(x, int) and not isinstance(x, bool))
                   for x in value)
    return False


@_settings(40)
@given(attr=st.sampled_from(["transpose_a", "axis", "axes", "epsilon", "scales", "data_format"]),
       value=st.one_of(ANY, st.booleans(),
                       st.lists(st.one_of(st.integers(), st.floats()), max_size=3)))
@example(attr="transpose_a", value=2**63)
@example(attr="epsilon", value=-2**63 - 1)
@example(attr="axes", value=[1, 2**63])
def test_op_set_attr_stores_or_refuses(attr, value):
    op = g.op(5, g.op.kind.MatMul)
    try:
        assert op.set_attr(getattr(g.op.attr, attr), value) is op
    except REFUSALS as refusal:
        # oneDNN refuses a value of another kind than the attribute's
        assert not _attr_value_of_its_kind(attr, value), f"refused {attr}={value!r}: {refusal!r}"
        _assert_documented_refusal(refusal)
        return
    assert _attr_value_storable(value), f"set_attr stored {value!r}"


# The kind of value each attribute the test sets holds in oneDNN's graph API.
ATTR_KINDS = {"transpose_a": bool, "axis": int, "axes": "ints", "epsilon": float, "scales": "floats",
              "data_format": str}


def _attr_value_of_its_kind(attr, value):
    """A value oneDNN's graph API documents for the attribute, which must be
    stored: its kind exactly, an int64 for ints, a non-empty list for lists."""
    kind = ATTR_KINDS[attr]
    if kind == "ints":
        return (isinstance(value, list) and bool(value)
                and all(type(x) is int and x in INT64 for x in value))
    if kind == "floats":
        return isinstance(value, list) and bool(value) and all(type(x) is float for x in value)
    return type(value) is kind and (kind is not int or value in INT64)


# ------------------------------------------- ints as USM pointers, freed pointers

@pytest.mark.parametrize("use", list(USM_POINTER_USES))
@_settings(40)
@given(ptr=st.integers().filter(lambda p: p not in (0, 2**64 - 1)))
@example(ptr=-1)
@example(ptr=2**64)
@example(ptr=-2**70)
@example(ptr=1)
def test_random_int_is_not_a_usm_pointer(o, use, ptr):
    assume(usm.pointer_type(o.context, ptr) == "unknown" if 0 <= ptr < 2**64 else True)
    with pytest.raises(REFUSALS):
        USM_POINTER_USES[use](o, ptr)
    assert o.usm_mem.get_data_handle() == o.ptr
    assert o.tensors[0].get_data_handle() == o.tensor_blocks[0].ptr


@pytest.mark.parametrize("use", list(USM_POINTER_USES))
@_settings(15)
@given(size=st.integers(64, 1 << 14), kind=st.sampled_from(["device", "shared", "host"]),
       offset=st.integers(0, 63))
def test_freed_usm_pointer_is_refused(o, use, size, kind, offset):
    if kind == "host":
        ptr = usm.host_alloc(o.context, size)
    else:
        ptr = getattr(usm, f"{kind}_alloc")(o.context, o.device, size)
    usm.free(o.context, ptr)
    assert usm.pointer_type(o.context, ptr + offset) == "unknown"
    with pytest.raises(dnnl.error):
        USM_POINTER_USES[use](o, ptr + offset)
    assert o.usm_mem.get_data_handle() == o.ptr


@_settings(30)
@given(size=st.integers(1, 512), offset=st.integers(0, 600), need=st.integers(1, 32),
       kind=st.sampled_from(["device", "shared", "host"]))
def test_interior_usm_pointer_needs_room_for_the_memory(o, size, offset, need, kind):
    """make_memory / graph.tensor / memcpy accept ptr+offset exactly when the
    allocation has room there for what they use."""
    if kind == "host":
        ptr = usm.host_alloc(o.context, size)
    else:
        ptr = getattr(usm, f"{kind}_alloc")(o.context, o.device, size)
    try:
        fits = offset + 4 * need <= size
        desc = dnnl.memory.desc([need], DT.f32, TAG.a)
        tensor_lt = lt(3, F32, [need], STRIDED)
        host = np.arange(need, dtype=np.float32)
        for use in [lambda p: oi.make_memory(desc, o.engine, oi.memory_kind.usm, p),
                    lambda p: g.tensor(tensor_lt, o.engine, p),
                    lambda p: usm.memcpy(o.queue, p, host, host.nbytes).wait()]:
            if fits:
                use(ptr + offset)
            else:
                with pytest.raises(dnnl.error):
                    use(ptr + offset)
        if fits:
            back = np.empty(need, np.float32)
            usm.memcpy(o.queue, back, ptr + offset, back.nbytes).wait()
            np.testing.assert_array_equal(back, host)
    finally:
        o.queue.finish()
        usm.free(o.context, ptr)


# ----------------------------------------------------- huge or negative sizes

HUGE_OR_NEGATIVE = st.one_of(st.integers(max_value=0), st.integers(min_value=1 << 40),
                             st.sampled_from([-1, 0, 2**63, 2**64, 2**64 - 1, 1 << 62]))


@_settings(40)
@given(size=HUGE_OR_NEGATIVE, kind=st.sampled_from(["device", "shared", "host", "allocation"]))
def test_huge_or_negative_allocation_is_refused(o, size, kind):
    with pytest.raises(REFUSALS):
        if kind == "host":
            o.made.append(usm.host_alloc(o.context, size))
        elif kind == "allocation":
            o.made.append(usm.allocation(o.context, size, "device", o.device).ptr)
        else:
            o.made.append(getattr(usm, f"{kind}_alloc")(o.context, o.device, size))


@_settings(40)
@given(size=st.one_of(st.integers(max_value=-1), st.integers(min_value=257)),
       direction=st.sampled_from(["to_device", "from_device", "device_to_device", "fill"]))
@example(size=-1, direction="to_device")
@example(size=2**64, direction="from_device")
@example(size=2**63, direction="device_to_device")
def test_copy_larger_than_the_memory_or_negative_is_refused(o, size, direction):
    other = usm.device_alloc(o.context, o.device, 256)
    before = np.array(o.host)
    try:
        with pytest.raises(REFUSALS):
            if direction == "to_device":
                usm.memcpy(o.queue, o.ptr, o.host, size)
            elif direction == "from_device":
                usm.memcpy(o.queue, o.host, o.ptr, size)
            elif direction == "device_to_device":
                usm.memcpy(o.queue, other, o.ptr, size)
            else:
                usm.fill(o.queue, o.ptr, b"\0", size)
        o.queue.finish()
        np.testing.assert_array_equal(o.host, before)
    finally:
        usm.free(o.context, other)


# ------------------------------------------------------------ mismatched engines

@pytest.fixture
def other_engine(cl_device):
    """An engine on its own context: its memory is foreign to `engine`."""
    context = cl.Context([cl_device])
    return oi.make_engine(cl_device, context), context


@_settings(30)
@given(foreign=st.sets(st.sampled_from(["src", "weights", "dst", "stream", "primitive"]),
                       min_size=1),
       same_context=st.booleans(), via_interop=st.booleans())
def test_primitive_with_objects_of_another_engine_is_refused(engine, cl_device, cl_context,
                                                             cl_queue, other_engine, foreign,
                                                             same_context, via_interop):
    if same_context:  # another engine object on the very same device and context
        other = oi.make_engine(cl_device, cl_context)
        other_queue = cl.CommandQueue(cl_context, cl_device)
    else:
        other, context = other_engine
        other_queue = cl.CommandQueue(context, cl_device)
    desc = dnnl.memory.desc([3, 4], DT.f32, TAG.ab)
    wdesc = dnnl.memory.desc([4, 2], DT.f32, TAG.ab)
    ddesc = dnnl.memory.desc([3, 2], DT.f32, TAG.ab)

    def on(name):
        return other if name in foreign else engine

    prim = dnnl.matmul(dnnl.matmul.primitive_desc(on("primitive"), desc, wdesc, ddesc))
    stream = oi.make_stream(on("stream"), other_queue if "stream" in foreign else cl_queue)
    args = {dnnl.ARG_SRC: dnnl.memory(desc, on("src")),
            dnnl.ARG_WEIGHTS: dnnl.memory(wdesc, on("weights")),
            dnnl.ARG_DST: dnnl.memory(ddesc, on("dst"))}
    for mem in args.values():
        dnnl.arrays.write(mem, np.ones(mem.get_desc().get_dims(), np.float32))
    all_on_other = foreign >= {"src", "weights", "dst", "stream", "primitive"}
    if all_on_other:
        prim.execute(stream, args)  # consistent: all on the other engine
        stream.wait()
        np.testing.assert_array_equal(dnnl.arrays.read(args[dnnl.ARG_DST]),
                                      np.full((3, 2), 4.0, np.float32))
        return
    with pytest.raises(dnnl.error) as info:
        if via_interop:
            oi.execute(prim, stream, args)
        else:
            prim.execute(stream, args)
    assert info.value.status == dnnl.status.invalid_arguments


@_settings(20)
@given(foreign=st.sets(st.sampled_from(["input", "output", "stream", "compiled"]), min_size=1),
       same_context=st.booleans())
def test_graph_with_objects_of_another_engine_is_refused(engine, cl_device, cl_context, cl_queue,
                                                         other_engine, foreign, same_context):
    if same_context:
        other, other_context = oi.make_engine(cl_device, cl_context), cl_context
    else:
        other, other_context = other_engine
    a, b, c = (lt(i, F32, [2, 2], STRIDED) for i in range(3))
    graph = g.graph(dnnl.engine.kind.gpu)
    graph.add_op(g.op(0, g.op.kind.Add, [a, b], [c], "add"))
    graph.finalize()
    partition = graph.get_partitions()[0]

    def on(name):
        return other if name in foreign else engine

    def context_of(name):
        return other_context if name in foreign else cl_context

    compiled = partition.compile([a, b], [c], on("compiled"))
    queue = cl.CommandQueue(context_of("stream"), cl_device)
    stream = oi.make_stream(on("stream"), queue)
    blocks = [usm.allocation(context_of(n), 16, "device", cl_device)
              for n in ("input", "input", "output")]
    try:
        ins = [g.tensor(a, on("input"), blocks[0].ptr), g.tensor(b, on("input"), blocks[1].ptr)]
        outs = [g.tensor(c, on("output"), blocks[2].ptr)]
        if foreign >= {"input", "output", "stream", "compiled"}:
            compiled.execute(stream, ins, outs)
            stream.wait()
            return
        with pytest.raises(dnnl.error) as info:
            compiled.execute(stream, ins, outs)
        assert info.value.status == dnnl.status.invalid_arguments
        with pytest.raises(dnnl.error):
            goi.execute(compiled, stream, ins, outs)
    finally:
        queue.finish()
        for block in blocks:
            block.free()


@_settings(20)
@given(same_context=st.booleans())
def test_usm_pointer_of_another_context_is_refused_by_tensor(engine, cl_device, cl_context,
                                                             other_engine, same_context):
    other, other_context = other_engine
    ptr = usm.device_alloc(other_context, cl_device, 64)
    try:
        with pytest.raises(dnnl.error):
            g.tensor(lt(0, F32, [4], STRIDED), engine, ptr)
        with pytest.raises(dnnl.error):
            oi.make_memory(dnnl.memory.desc([4], DT.f32, TAG.a), engine, oi.memory_kind.usm, ptr)
        # on its own engine the same pointer is fine
        g.tensor(lt(0, F32, [4], STRIDED), other, ptr)
    finally:
        usm.free(other_context, ptr)


# --------------------------------------------------- memory whose buffer was replaced

@_settings(25)
@given(n=st.integers(1, 64), replacement_bytes=st.integers(1, 320),
       how=st.sampled_from(["set_mem_object", "set_data_handle"]), seed=st.integers(0, 2**16))
def test_memory_whose_buffer_was_replaced(engine, stream, cl_context, n, replacement_bytes, how,
                                          seed):
    """A replaced buffer is used (and kept alive) by the memory; one too small
    is refused without changing the memory."""
    desc = dnnl.memory.desc([n], DT.f32, TAG.a)
    mem = dnnl.memory(desc, engine)
    original = oi.get_mem_object(mem)
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    dnnl.arrays.write(mem, x)
    replacement = cl.Buffer(cl_context, MF.READ_WRITE, replacement_bytes)
    if replacement_bytes < desc.get_size():
        with pytest.raises(dnnl.error):
            if how == "set_mem_object":
                oi.set_mem_object(mem, replacement)
            else:
                mem.set_data_handle(replacement)
        assert oi.get_mem_object(mem).int_ptr == original.int_ptr
        np.testing.assert_array_equal(dnnl.arrays.read(mem), x)
        return
    if how == "set_mem_object":
        oi.set_mem_object(mem, replacement)
    else:
        mem.set_data_handle(replacement.int_ptr)
    handle = replacement.int_ptr
    del replacement, original  # the memory keeps the new buffer alive
    assert oi.get_mem_object(mem).int_ptr == handle
    dnnl.arrays.write(mem, x)
    # a reorder out of the replaced buffer sees what was written there
    out = dnnl.memory(desc, engine)
    dnnl.reorder(dnnl.reorder.primitive_desc(engine, desc, engine, desc)).execute(
        stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: out})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(out), x)


# ------------------------------------- engine cache blobs of random bytes (child)

_BLOB_CHILD = textwrap.dedent("""
    import sys
    import dnnl_ocl_interop as dnnl
    from dnnl_ocl_interop import emulation
    emulation.ensure_device()
    import numpy as np
    import pyopencl as cl
    from hypothesis import HealthCheck, example, given, settings, strategies as st

    oi, goi = dnnl.ocl_interop, dnnl.graph.ocl_interop
    device = [d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices() if d.type & cl.device_type.GPU][0]
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    real = oi.get_engine_cache_blob(oi.make_engine(device, context))
    allocator = goi.make_allocator(lambda *a: 0, lambda *a: None)

    @st.composite
    def blobs(draw):
        if draw(st.booleans()):
            return draw(st.binary(max_size=300))
        blob = bytearray(real[:draw(st.integers(1, len(real) + 8))])
        for _ in range(draw(st.integers(0, 6))):
            if blob:
                blob[draw(st.integers(0, len(blob) - 1))] = draw(st.integers(0, 255))
        return bytes(blob)

    outcomes = {"accepted": 0, "refused": 0}

    # The blob's checksum covers every byte after its header, and the header
    # names the device's blob id: the real blob is taken, any other is refused.
    @settings(max_examples=30, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(blob=blobs(), with_allocator=st.booleans())
    @example(blob=real, with_allocator=False)
    @example(blob=real, with_allocator=True)
    @example(blob=real[:-1], with_allocator=False)
    @example(blob=real[:8] + bytes([real[8] ^ 1]) + real[9:], with_allocator=True)
    @example(blob=real[:-1] + bytes([real[-1] ^ 0x80]), with_allocator=False)
    def run(blob, with_allocator):
        print("blob", blob.hex(), with_allocator, flush=True)
        try:
            if with_allocator:
                engine = goi.make_engine_with_allocator(device, context, allocator, blob)
            else:
                engine = oi.make_engine(device, context, blob)
        except (dnnl.error, TypeError, ValueError) as e:
            assert blob != real, f"the unmodified blob was refused: {e!r}"
            assert isinstance(e, dnnl.invalid_arguments), f"refused as {e!r}"
            outcomes["refused"] += 1
            return
        assert blob == real, "a blob that is not the engine's was taken"
        outcomes["accepted"] += 1
        # an engine made from the blob still computes correctly
        stream = oi.make_stream(engine, queue)
        desc = dnnl.memory.desc([5], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
        relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
            engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, desc, desc))
        src, dst = dnnl.memory(desc, engine), dnnl.memory(desc, engine)
        x = np.array([-2, -1, 0, 1, 2], np.float32)
        dnnl.arrays.write(src, x)
        relu.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
        stream.wait()
        assert (dnnl.arrays.read(dst) == np.maximum(x, 0)).all()

    run()
    assert outcomes["accepted"] >= 2 and outcomes["refused"] >= 3, outcomes
    print("done", outcomes, flush=True)
""")


@pytest.mark.timeout(600)
def test_random_cache_blobs_never_crash():
    run = subprocess.run([sys.executable, "-c", _BLOB_CHILD], capture_output=True, text=True,
                         timeout=500)
    last = run.stdout.strip().splitlines()[-1:] or ["(no output)"]
    assert run.returncode == 0, (
        f"the child died (exit {run.returncode}) after {last[0]}: {run.stderr[-2000:]}")
    assert "done" in run.stdout, run.stdout[-1000:]
