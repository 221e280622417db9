"""Bad input to primitive execution, through both entry points.

``primitive.execute(stream, args)`` and
``dnnl.ocl_interop.execute(primitive, stream, args, deps)`` check their
arguments before oneDNN sees them: a missing argument, memory too small for
the descriptor the primitive addresses in it (memory of another descriptor
that holds it is taken, as oneDNN takes it, and so is an argument the
primitive does not use), memory or a stream of another engine, memory
without storage, ``args`` that is not a dict or holds something other than
memory. Each raises ``dnnl.error`` with status
``invalid_arguments`` (or ``TypeError``) naming the argument, and nothing
runs: the destination keeps its contents. ``deps`` must be a list of events
of the engine's context.
"""

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, DT, INFERENCE, TAG, oi, plain_tag
M, K, N = 3, 4, 5
SENTINEL = -7.0
# Distinct small integers: every product and sum is exact in f32, and a
# result computed from the wrong elements (or the wrong argument) differs.
SRC = (np.arange(M * K, dtype=np.float32).reshape(M, K) % 7) - 3
WEIGHTS = (np.arange(K * N, dtype=np.float32).reshape(K, N) % 5) - 2


def md(dims, dt=DT.f32, tag=None):
    return dnnl.memory.desc(dims, dt, tag or plain_tag(len(dims)))


def filled(engine, desc, value):
    mem = dnnl.memory(desc, engine)
    view = mem.map_data()
    view[...] = value
    mem.unmap_data(view)
    return mem


def read(mem):
    return dnnl.arrays.read(mem)


@pytest.fixture
def ooo_stream(engine, cl_ooo_queue):
    return oi.make_stream(engine, cl_ooo_queue)


@pytest.fixture(params=["primitive.execute", "ocl_interop.execute"])
def execute(request):
    """Both ways of executing; each waits for the work it submits."""
    if request.param == "primitive.execute":
        def run(prim, stream, args):
            prim.execute(stream, args)
            stream.wait()
    else:
        def run(prim, stream, args):
            event = oi.execute(prim, stream, args)
            if event is not None:
                event.wait()
            stream.wait()
    return run


@pytest.fixture
def matmul(engine):
    pd = dnnl.matmul.primitive_desc(engine, md([M, K]), md([K, N]), md([M, N]))
    return dnnl.matmul(pd)


@pytest.fixture
def mm_args(engine):
    """Valid matmul arguments (SRC, WEIGHTS); dst holds SENTINEL."""
    return {
        dnnl.ARG_SRC: filled(engine, md([M, K]), SRC),
        dnnl.ARG_WEIGHTS: filled(engine, md([K, N]), WEIGHTS),
        dnnl.ARG_DST: filled(engine, md([M, N]), SENTINEL),
    }


@pytest.fixture(scope="module")
def other_context(cl_device):
    return cl.Context([cl_device])


@pytest.fixture(scope="module")
def other_engine(cl_device, other_context):
    return oi.make_engine(cl_device, other_context)


def assert_refused(call, stream, dst, *names, error=dnnl.error):
    """`call` raises `error` mentioning every name, and `dst` (memory holding
    SENTINEL, or None) is untouched."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for name in names:
        assert name in message, message
    if error is dnnl.error:
        assert info.value.status == dnnl.status.invalid_arguments
    stream.wait()
    if dst is not None:
        np.testing.assert_array_equal(read(dst), SENTINEL)
    return message


def test_valid_arguments_run(engine, stream, matmul, mm_args, execute):
    execute(matmul, stream, mm_args)
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), SRC @ WEIGHTS)


@pytest.mark.parametrize("missing,name", [(dnnl.ARG_SRC, "ARG_SRC"), (dnnl.ARG_WEIGHTS, "ARG_WEIGHTS"),
                                          (dnnl.ARG_DST, "ARG_DST")])
def test_missing_argument(stream, matmul, mm_args, execute, missing, name):
    args = dict(mm_args)
    dst = args[dnnl.ARG_DST]
    del args[missing]
    message = assert_refused(lambda: execute(matmul, stream, args), stream, dst, "missing", name)
    # Names the missing argument exactly ("ARG_SRC", not a prefix of another).
    assert f"missing argument {name}" in message


def test_empty_args(stream, matmul, execute):
    assert_refused(lambda: execute(matmul, stream, {}), stream, None, "missing argument")


@pytest.mark.parametrize("extra", [dnnl.ARG_BIAS, dnnl.ARG_SRC_1, dnnl.ARG_SCRATCHPAD,
                                   dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC, 999],
                         ids=["ARG_BIAS", "ARG_SRC_1", "ARG_SCRATCHPAD", "scales", "999"])
def test_argument_not_used_by_the_primitive_is_ignored(engine, stream, matmul, mm_args, execute, extra):
    """As oneDNN does: an argument the primitive does not use is neither
    refused nor checked (here memory of another shape), nor read or written:
    the result is the matmul's alone (a bias of 1000 would show), and the
    extra memory keeps its contents."""
    args = dict(mm_args)
    args[extra] = filled(engine, md([1, N]), 1000.0)
    execute(matmul, stream, args)
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), SRC @ WEIGHTS)
    np.testing.assert_array_equal(read(args[extra]), np.full((1, N), 1000.0))


def test_memory_descriptor_other_than_the_primitives_is_taken(engine, stream, matmul, mm_args, execute):
    """oneDNN executes on memory of another descriptor, addressing the
    primitive's descriptor within the memory's storage: so does the binding
    when the storage holds what the primitive addresses. Each case checks
    that the primitive read (or wrote) the storage through its own
    descriptor, not the memory's."""
    # src as [M, K] in `ba` order: the primitive reads those bytes as `ab`.
    src_ba = filled(engine, md([M, K], tag=TAG.ba), SRC)
    src_as_ab = SRC.T.ravel().reshape(M, K)
    execute(matmul, stream, {**mm_args, dnnl.ARG_SRC: src_ba})
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), src_as_ab @ WEIGHTS)
    # weights of K + 1 rows: the primitive reads the first K.
    taller = np.concatenate([WEIGHTS, np.full((1, N), 1000.0, np.float32)])
    execute(matmul, stream, {**mm_args, dnnl.ARG_WEIGHTS: filled(engine, md([K + 1, N]), taller)})
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), SRC @ WEIGHTS)
    # dst of M * N elements in one dimension: written as [M, N] rows.
    flat = filled(engine, md([M * N]), SENTINEL)
    execute(matmul, stream, {**mm_args, dnnl.ARG_DST: flat})
    np.testing.assert_array_equal(read(flat), (SRC @ WEIGHTS).ravel())


@pytest.mark.parametrize("arg,name,desc", [
    (dnnl.ARG_WEIGHTS, "ARG_WEIGHTS", md([K, N], DT.f16)),   # half the bytes
    (dnnl.ARG_SRC, "ARG_SRC", md([M, K - 1])),               # one column short
    (dnnl.ARG_DST, "ARG_DST", md([M * N - 1])),              # one element short
])
def test_memory_too_small_for_the_primitives_descriptor(engine, stream, matmul, mm_args, execute, arg, name,
                                                         desc):
    args = dict(mm_args)
    args[arg] = dnnl.memory(desc, engine)
    message = assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], name,
                             "descriptor")
    assert "bytes where the primitive addresses" in message


def test_runtime_dimensions_take_the_memorys_descriptor(engine, stream, execute):
    """A matmul made with RUNTIME_DIM_VAL rows runs on memory of concrete rows."""
    rt = dnnl.RUNTIME_DIM_VAL
    pd = dnnl.matmul.primitive_desc(engine, md([rt, K]), md([K, N]), md([rt, N]))
    prim = dnnl.matmul(pd)
    for rows in (1, 3):
        out = filled(engine, md([rows, N]), SENTINEL)
        execute(prim, stream, {dnnl.ARG_SRC: filled(engine, md([rows, K]), 1.0),
                               dnnl.ARG_WEIGHTS: filled(engine, md([K, N]), 2.0), dnnl.ARG_DST: out})
        stream.wait()
        np.testing.assert_array_equal(read(out), np.full((rows, N), 2.0 * K))
    wrong = {dnnl.ARG_SRC: filled(engine, md([2, K + 1]), 1.0),
             dnnl.ARG_WEIGHTS: filled(engine, md([K, N]), 2.0), dnnl.ARG_DST: filled(engine, md([2, N]), 0.0)}
    assert_refused(lambda: execute(prim, stream, wrong), stream, None, "ARG_SRC", "runtime dimensions")


@pytest.mark.parametrize("src,weights,dst,bias,weights_fixed,why", [
    ((2, K), (K, N), (16, N), None, False, "src and dst differ in M"),  # dst's rows read past src
    ((2, K), (K, N), (16, N), None, True, "src and dst differ in M"),  # the same, only M at execution
    ((M, K), (K + 2, N), (M, N), None, False, "src and weights differ in K"),
    ((M, K), (K, N), (M, N + 3), None, False, "weights and dst differ in N"),
    ((2, M, K), (3, K, N), (2, M, N), None, False, "batch dimension 0"),
    ((M, K), (K, N), (M, N), (M + 1, N), False, "ARG_BIAS [4, 5] does not broadcast to dst [3, 5]"),
])
def test_runtime_dimensions_must_agree_across_arguments(engine, stream, execute, src, weights, dst, bias,
                                                        weights_fixed, why):
    """oneDNN takes M and N from dst and K from src: memories that disagree
    would be read past their storage (each fits the primitive's descriptor by
    itself). Agreeing memories, broadcasts included, run."""
    R = dnnl.RUNTIME_DIM_VAL
    rank = len(dst)
    runtime = md([R] * rank)
    pd = dnnl.matmul.primitive_desc(engine, runtime, runtime, *([runtime] if bias else []), runtime)
    if weights_fixed:  # only M at execution: weights are the primitive's own
        pd = dnnl.matmul.primitive_desc(engine, md([R, K]), md([K, N]), md([R, N]))
    prim = dnnl.matmul(pd)

    def args(src, weights, dst, bias):
        given = {dnnl.ARG_SRC: filled(engine, md(list(src)), 1.0),
                 dnnl.ARG_WEIGHTS: filled(engine, md(list(weights)), 2.0),
                 dnnl.ARG_DST: filled(engine, md(list(dst)), SENTINEL)}
        if bias:
            given[dnnl.ARG_BIAS] = filled(engine, md(list(bias)), 0.5)
        return given

    wrong = args(src, weights, dst, bias)
    assert_refused(lambda: execute(prim, stream, wrong), stream, wrong[dnnl.ARG_DST],
                   "runtime dimensions", why)
    batch = (1,) * (rank - 2)  # src broadcast over dst's batch
    right = args(batch + (M, K), (*dst[:-2], K, N), (*dst[:-2], M, N), bias and (1, N))
    execute(prim, stream, right)
    stream.wait()
    expected = np.full((*dst[:-2], M, N), 2.0 * K + (0.5 if bias else 0.0))
    np.testing.assert_array_equal(read(right[dnnl.ARG_DST]), expected)


@pytest.mark.parametrize("arg,name", [(dnnl.ARG_SRC, "ARG_SRC"), (dnnl.ARG_WEIGHTS, "ARG_WEIGHTS"),
                                      (dnnl.ARG_DST, "ARG_DST")])
def test_memory_of_another_engine(other_engine, stream, matmul, mm_args, execute, arg, name):
    args = dict(mm_args)
    dst = args[dnnl.ARG_DST]
    args[arg] = dnnl.memory(mm_args[arg].get_desc(), other_engine)
    assert args[arg].get_engine() != stream.get_engine()
    assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], name, "another engine")
    np.testing.assert_array_equal(read(dst), SENTINEL)


def test_usm_memory_of_another_engine(other_engine, stream, matmul, mm_args, execute):
    args = dict(mm_args)
    args[dnnl.ARG_WEIGHTS] = oi.make_memory(md([K, N]), other_engine, oi.memory_kind.usm)
    assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], "ARG_WEIGHTS",
                   "another engine")


def test_stream_of_another_engine(other_engine, stream, matmul, mm_args, execute):
    other_stream = dnnl.stream(other_engine)
    assert_refused(lambda: execute(matmul, other_stream, mm_args), stream, mm_args[dnnl.ARG_DST], "stream",
                   "another engine")


@pytest.mark.parametrize("arg,name", [(dnnl.ARG_SRC, "ARG_SRC"), (dnnl.ARG_DST, "ARG_DST")])
@pytest.mark.parametrize("kind", ["default", "buffer", "usm"])
def test_memory_without_storage(engine, stream, matmul, mm_args, execute, arg, name, kind):
    args = dict(mm_args)
    dst = mm_args[dnnl.ARG_DST]
    desc = mm_args[arg].get_desc()
    if kind == "default":
        args[arg] = dnnl.memory(desc, engine, dnnl.MEMORY_NONE)
    else:
        args[arg] = oi.make_memory(desc, engine, getattr(oi.memory_kind, kind), dnnl.MEMORY_NONE)
    assert args[arg].get_data_handle() == 0
    assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], name, "MEMORY_NONE")
    np.testing.assert_array_equal(read(dst), SENTINEL)


@pytest.mark.parametrize("args", [None, [], (), "args", 1, [(dnnl.ARG_SRC, None)]],
                         ids=["None", "list", "tuple", "str", "int", "pairs"])
def test_args_not_a_dict(stream, matmul, execute, args):
    assert_refused(lambda: execute(matmul, stream, args), stream, None, "args", "dict", error=TypeError)


def test_args_pairs_of_memory_not_a_dict(stream, matmul, mm_args, execute):
    pairs = list(mm_args.items())
    assert_refused(lambda: execute(matmul, stream, pairs), stream, mm_args[dnnl.ARG_DST], "dict", error=TypeError)


@pytest.mark.parametrize("value", [None, 0, "memory", np.zeros((M, K), np.float32)],
                         ids=["None", "int", "str", "ndarray"])
@pytest.mark.parametrize("arg,name", [(dnnl.ARG_SRC, "ARG_SRC"), (dnnl.ARG_WEIGHTS, "ARG_WEIGHTS")])
def test_non_memory_values(stream, matmul, mm_args, execute, arg, name, value):
    args = dict(mm_args)
    args[arg] = value
    assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], name, "dnnl.memory",
                   error=TypeError)


def test_memory_desc_instead_of_memory(stream, matmul, mm_args, execute):
    args = dict(mm_args)
    args[dnnl.ARG_WEIGHTS] = mm_args[dnnl.ARG_WEIGHTS].get_desc()
    assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], "ARG_WEIGHTS", error=TypeError)


@pytest.mark.parametrize("key", ["src", 1.0, None], ids=["str", "float", "None"])
def test_non_int_keys(stream, matmul, mm_args, execute, key):
    args = dict(mm_args)
    args[key] = args.pop(dnnl.ARG_SRC)
    assert_refused(lambda: execute(matmul, stream, args), stream, mm_args[dnnl.ARG_DST], "keys", error=TypeError)


def test_not_a_stream_or_primitive(engine, stream, matmul, mm_args):
    with pytest.raises(TypeError):
        matmul.execute(engine, mm_args)
    with pytest.raises(TypeError):
        oi.execute(mm_args, stream, mm_args)
    with pytest.raises(TypeError):
        oi.execute(matmul, None, mm_args)


# -- arguments that attributes add -------------------------------------------


def test_missing_scales(engine, stream, execute):
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_SRC, 0)
    src, dst = filled(engine, md([M, N]), 1.0), filled(engine, md([M, N], DT.s8), SENTINEL)
    prim = dnnl.reorder(dnnl.reorder.primitive_desc(src, dst, attr))
    args = {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst}
    assert_refused(lambda: execute(prim, stream, args), stream, dst, "missing", "ARG_ATTR_SCALES | ARG_SRC")
    scale = filled(engine, md([1]), 4.0)
    execute(prim, stream, {**args, dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: scale})
    np.testing.assert_array_equal(read(dst), 4)


def test_checks_hold_when_the_descriptor_is_gone_before_the_first_execute(engine, stream, execute):
    # A primitive works out its checks at its first execute, from its own
    # descriptor: the Python descriptor and attributes may be gone by then.
    import gc
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_SRC, 0)
    src, dst = filled(engine, md([M, N]), 1.0), filled(engine, md([M, N], DT.s8), SENTINEL)
    prim = dnnl.reorder(dnnl.reorder.primitive_desc(src, dst, attr))
    del attr
    gc.collect()
    args = {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst}
    assert_refused(lambda: execute(prim, stream, args), stream, dst, "missing", "ARG_ATTR_SCALES | ARG_SRC")
    small = filled(engine, md([M, N - 1]), 1.0)
    assert_refused(lambda: execute(prim, stream, {**args, dnnl.ARG_FROM: small,
                                                  dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: filled(engine, md([1]), 4.0)}),
                   stream, dst, "ARG_SRC", "60")  # ARG_FROM is ARG_SRC
    execute(prim, stream, {**args, dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: filled(engine, md([1]), 4.0)})
    np.testing.assert_array_equal(read(dst), 4)


def test_missing_zero_points(engine, stream, execute):
    attr = dnnl.primitive_attr()
    attr.set_zero_points_mask(dnnl.ARG_DST, 0)
    src, dst = filled(engine, md([M, N]), 1.0), filled(engine, md([M, N], DT.u8), 0)
    prim = dnnl.reorder(dnnl.reorder.primitive_desc(src, dst, attr))
    args = {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst}
    assert_refused(lambda: execute(prim, stream, args), stream, None, "missing",
                   "ARG_ATTR_ZERO_POINTS | ARG_DST")


def test_missing_binary_post_op_input(engine, stream, mm_args, execute):
    po = dnnl.post_ops()
    po.append_eltwise(ALG.eltwise_relu, 0.0, 0.0)
    po.append_binary(ALG.binary_add, md([1, N]))
    attr = dnnl.primitive_attr()
    attr.set_post_ops(po)
    prim = dnnl.matmul(dnnl.matmul.primitive_desc(engine, md([M, K]), md([K, N]), md([M, N]), attr))
    assert_refused(lambda: execute(prim, stream, mm_args), stream, mm_args[dnnl.ARG_DST], "missing",
                   "ARG_ATTR_MULTIPLE_POST_OP(1) | ARG_SRC_1")
    # The input under the wrong post-op index is not used: the right one is still missing.
    wrong = {**mm_args, dnnl.ARG_ATTR_MULTIPLE_POST_OP(0) | dnnl.ARG_SRC_1: filled(engine, md([1, N]), 1.0)}
    assert_refused(lambda: execute(prim, stream, wrong), stream, mm_args[dnnl.ARG_DST], "missing",
                   "ARG_ATTR_MULTIPLE_POST_OP(1) | ARG_SRC_1")
    row = np.arange(N, dtype=np.float32).reshape(1, N)
    right = {**mm_args, dnnl.ARG_ATTR_MULTIPLE_POST_OP(1) | dnnl.ARG_SRC_1: filled(engine, md([1, N]), row)}
    execute(prim, stream, right)
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), np.maximum(SRC @ WEIGHTS, 0) + row)


def test_binary_post_op_input_with_wrong_descriptor(engine, stream, mm_args, execute):
    po = dnnl.post_ops()
    po.append_binary(ALG.binary_add, md([1, N]))
    attr = dnnl.primitive_attr()
    attr.set_post_ops(po)
    prim = dnnl.matmul(dnnl.matmul.primitive_desc(engine, md([M, K]), md([K, N]), md([M, N]), attr))
    post_op_input = dnnl.ARG_ATTR_MULTIPLE_POST_OP(0) | dnnl.ARG_SRC_1
    short = {**mm_args, post_op_input: filled(engine, md([1, N - 1]), 1.0)}
    assert_refused(lambda: execute(prim, stream, short), stream, mm_args[dnnl.ARG_DST],
                   "ARG_ATTR_MULTIPLE_POST_OP(0) | ARG_SRC_1", "descriptor")
    # Larger memory is taken, as oneDNN takes it: the [1, N] broadcast reads its first row.
    rows = np.full((M, N), 1000.0, np.float32)
    rows[0] = np.arange(N)
    execute(prim, stream, {**mm_args, post_op_input: filled(engine, md([M, N]), rows)})
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), SRC @ WEIGHTS + rows[:1])


def test_missing_multiple_source(engine, stream, execute):
    srcs = [md([2, 3]), md([2, 4])]
    prim = dnnl.concat(dnnl.concat.primitive_desc(engine, 1, srcs))
    args = {dnnl.ARG_MULTIPLE_SRC: filled(engine, srcs[0], 1.0), dnnl.ARG_DST: filled(engine, md([2, 7]), SENTINEL)}
    assert_refused(lambda: execute(prim, stream, args), stream, args[dnnl.ARG_DST], "missing", "ARG_MULTIPLE_SRC + 1")
    # A third source is not used (and ignored, as oneDNN does): the second is still missing.
    args[dnnl.ARG_MULTIPLE_SRC + 2] = filled(engine, srcs[1], 2.0)
    assert_refused(lambda: execute(prim, stream, args), stream, args[dnnl.ARG_DST], "missing", "ARG_MULTIPLE_SRC + 1")


def test_missing_user_scratchpad(engine, stream, execute):
    attr = dnnl.primitive_attr()
    attr.set_scratchpad_mode(dnnl.scratchpad_mode.user)
    shape = [2, 3, 4, 4]
    pd = dnnl.batch_normalization_forward.primitive_desc(
        engine, INFERENCE, md(shape), md(shape), 1e-3, dnnl.normalization_flags.none, attr)
    assert pd.scratchpad_desc().get_size() > 0
    prim = dnnl.batch_normalization_forward(pd)
    args = {dnnl.ARG_SRC: filled(engine, md(shape), 1.0), dnnl.ARG_DST: filled(engine, md(shape), SENTINEL)}
    assert_refused(lambda: execute(prim, stream, args), stream, args[dnnl.ARG_DST], "missing argument ARG_SCRATCHPAD")
    small = dnnl.memory(md([1], DT.u8), engine)
    bad = {**args, dnnl.ARG_SCRATCHPAD: small}
    assert_refused(lambda: execute(prim, stream, bad), stream, args[dnnl.ARG_DST], "ARG_SCRATCHPAD", "descriptor")
    # A larger scratchpad than the primitive needs is taken, as oneDNN takes it.
    large = dnnl.memory(md([pd.scratchpad_desc().get_size() + 64], DT.u8), engine)
    execute(prim, stream, {**args, dnnl.ARG_SCRATCHPAD: large})
    stream.wait()


def test_missing_workspace(engine, stream, execute):
    pd = dnnl.pooling_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_training, ALG.pooling_max, md([1, 2, 4, 4]), md([1, 2, 2, 2]),
        [2, 2], [2, 2], [0, 0], [0, 0], [0, 0])
    assert pd.workspace_desc().get_size() > 0
    prim = dnnl.pooling_forward(pd)
    args = {dnnl.ARG_SRC: filled(engine, md([1, 2, 4, 4]), 1.0),
            dnnl.ARG_DST: filled(engine, md([1, 2, 2, 2]), SENTINEL)}
    assert_refused(lambda: execute(prim, stream, args), stream, args[dnnl.ARG_DST], "missing argument ARG_WORKSPACE")


# -- deps of dnnl.ocl_interop.execute ------------------------------------------


def test_deps_of_another_context(other_context, ooo_stream, matmul, mm_args):
    foreign = cl.UserEvent(other_context)
    # Completed, so that a dependency that slipped through could not hang.
    foreign.set_status(cl.command_execution_status.COMPLETE)
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=[foreign]), ooo_stream, mm_args[dnnl.ARG_DST],
                   "deps[0]", "another OpenCL context")
    marker = cl.enqueue_marker(cl.CommandQueue(other_context))
    marker.wait()
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=[marker.int_ptr]), ooo_stream,
                   mm_args[dnnl.ARG_DST],
                   "deps[0]", "another OpenCL context")


def test_deps_of_another_context_after_a_good_one(other_context, cl_context, ooo_stream, matmul, mm_args):
    good = cl.UserEvent(cl_context)
    good.set_status(cl.command_execution_status.COMPLETE)
    foreign = cl.UserEvent(other_context)
    foreign.set_status(cl.command_execution_status.COMPLETE)
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=[good, foreign]), ooo_stream,
                   mm_args[dnnl.ARG_DST],
                   "deps[1]")


@pytest.mark.parametrize("bad", ["event", 1.5, object(), [None]], ids=["str", "float", "object", "list"])
@pytest.mark.parametrize("position", [0, 1])
def test_non_event_deps(cl_context, ooo_stream, matmul, mm_args, bad, position):
    good = cl.UserEvent(cl_context)
    good.set_status(cl.command_execution_status.COMPLETE)
    deps = [good, bad] if position == 1 else [bad, good]
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=deps), ooo_stream, mm_args[dnnl.ARG_DST],
                   f"deps[{position}]", error=TypeError)


def test_none_deps_are_skipped(ooo_stream, matmul, mm_args):
    """None (what execute returns on in-order streams) may be passed on as a dep."""
    event = oi.execute(matmul, ooo_stream, mm_args, deps=[None, None])
    assert isinstance(event, cl.Event)
    event.wait()
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), SRC @ WEIGHTS)


def test_queue_or_buffer_as_dep(cl_queue, engine, ooo_stream, matmul, mm_args):
    for bad in (cl_queue, oi.get_mem_object(mm_args[dnnl.ARG_SRC])):
        assert_refused(lambda bad=bad: oi.execute(matmul, ooo_stream, mm_args, deps=[bad]), ooo_stream,
                       mm_args[dnnl.ARG_DST], "deps[0]", "Event", error=TypeError)


def test_null_event_handle_dep(ooo_stream, matmul, mm_args):
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=[0]), ooo_stream, mm_args[dnnl.ARG_DST],
                   "deps[0]", "NULL", error=ValueError)


@pytest.mark.parametrize("deps", ["deps", 5, {}, None], ids=["str", "int", "dict", "None"])
def test_deps_not_a_sequence(ooo_stream, matmul, mm_args, deps):
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=deps), ooo_stream, mm_args[dnnl.ARG_DST],
                   "deps", error=TypeError)


def test_single_event_instead_of_list(cl_context, ooo_stream, matmul, mm_args):
    event = cl.UserEvent(cl_context)
    event.set_status(cl.command_execution_status.COMPLETE)
    assert_refused(lambda: oi.execute(matmul, ooo_stream, mm_args, deps=event), ooo_stream, mm_args[dnnl.ARG_DST],
                   "deps", error=TypeError)


def test_argument_errors_come_before_deps_errors(ooo_stream, matmul, mm_args):
    """Both wrong: the args problem is reported (arguments are checked first)."""
    args = dict(mm_args)
    del args[dnnl.ARG_WEIGHTS]
    assert_refused(lambda: oi.execute(matmul, ooo_stream, args, deps=["bad"]), ooo_stream, mm_args[dnnl.ARG_DST],
                   "ARG_WEIGHTS")


def test_good_call_after_refused_ones(cl_context, ooo_stream, matmul, mm_args):
    """Refusals leave nothing behind: the next valid call runs and returns its event."""
    for bad in ({}, {dnnl.ARG_SRC: None}):
        with pytest.raises((dnnl.error, TypeError)):
            oi.execute(matmul, ooo_stream, bad)
    dep = cl.UserEvent(cl_context)
    dep.set_status(cl.command_execution_status.COMPLETE)
    event = oi.execute(matmul, ooo_stream, mm_args, deps=[dep, dep.int_ptr])
    assert isinstance(event, cl.Event)
    event.wait()
    np.testing.assert_array_equal(read(mm_args[dnnl.ARG_DST]), SRC @ WEIGHTS)


@pytest.mark.parametrize("runtime", ["dims", "strides"])
def test_a_bias_with_a_runtime_layout_is_checked_when_executed(engine, stream, execute, runtime):
    """A matmul whose bias has runtime dimensions (or strides) is created:
    its layout is known only at execute, so the check that GPU
    implementations read a bias as dense from its handle on (known problem
    dense-bias-post-op-inputs) runs on the memory given there. Dense bias
    memory computes right; bias memory with gaps between rows is refused,
    the destination untouched."""
    R = dnnl.RUNTIME_DIM_VAL
    if runtime == "dims":
        pd = dnnl.matmul.primitive_desc(engine, md([R, K]), md([K, N]), md([R, N]), md([R, N]))
    else:
        pd = dnnl.matmul.primitive_desc(engine, md([M, K]), md([K, N]),
                                        dnnl.memory.desc([M, N], DT.f32, [R, R]), md([M, N]))
    prim = dnnl.matmul(pd)
    bias = (np.arange(M * N, dtype=np.float32).reshape(M, N) % 3) - 1
    args = {dnnl.ARG_SRC: filled(engine, md([M, K]), SRC),
            dnnl.ARG_WEIGHTS: filled(engine, md([K, N]), WEIGHTS),
            dnnl.ARG_BIAS: filled(engine, md([M, N]), bias),
            dnnl.ARG_DST: filled(engine, md([M, N]), SENTINEL)}
    execute(prim, stream, args)
    np.testing.assert_array_equal(read(args[dnnl.ARG_DST]), SRC @ WEIGHTS + bias)

    gapped = dnnl.memory.desc([M, N], DT.f32, [2 * N, 1])  # every other row of a buffer
    args[dnnl.ARG_BIAS] = dnnl.memory(gapped, engine)
    args[dnnl.ARG_DST] = filled(engine, md([M, N]), SENTINEL)
    assert_refused(lambda: execute(prim, stream, args), stream, args[dnnl.ARG_DST],
                   "ARG_BIAS", "dense-bias-post-op-inputs")
