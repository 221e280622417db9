"""Each known problem's rule acts for the implementations and devices its
row names, and nowhere else: the scope view (a test hook) makes the
registry see another implementation name, or another device, than this
machine's, so that the suite shows what a GPU that runs generated kernels
(`jit:*`) would get.

Each case is one the binding refuses on the emulated device; under the view
it is refused where the view shows a named implementation and taken where it
shows one the row does not name.
"""

import contextlib

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import known_problems, probe

pytestmark = pytest.mark.test_hooks

DT, TAG, ALG = dnnl.memory.data_type, dnnl.memory.format_tag, dnnl.algorithm
INF = dnnl.prop_kind.forward_inference
md = dnnl.memory.desc
GENERATED = ("jit:ir", "jit:gemm:any", "ocl:gen9:any")  # names no row gives


@contextlib.contextmanager
def scope_view(implementation="", **device):
    dnnl._core._set_known_problem_scope_view(implementation, **device)
    try:
        yield
    finally:
        dnnl._core._set_known_problem_scope_view("")


def _view(dims, kind):
    return probe.view(dims, kind)[0]


def _attr(**kinds):
    attr = dnnl.primitive_attr()
    if "zero_points" in kinds:
        attr.set_zero_points_mask(dnnl.ARG_DST, 2)
    if "post_add" in kinds:
        po = dnnl.post_ops()
        po.append_binary(ALG.binary_add, kinds["post_add"])
        attr.set_post_ops(po)
    return attr


# problem: make(engine) -> primitive descriptor, for a case the rule refuses
# on the emulated device.
CASES = {
    "sum-many-inputs-scales": lambda e: dnnl.sum.primitive_desc(
        e, md([3, 5], DT.f32, TAG.ab), [1.0, -0.5, 2.0], [md([3, 5], DT.f32, TAG.ab)] * 3),
    "reorder-ref-dst-zero-points": lambda e: dnnl.reorder.primitive_desc(
        e, md([2, 3], DT.f32, TAG.ab), e, md([2, 3], DT.s32, TAG.ab), _attr(zero_points=True)),
    "reorder-custom-innermost-stride": lambda e: dnnl.reorder.primitive_desc(
        e, _view([8, 16], "inner2"), e, _view([8, 16], "plain")),
    "concat-simple-strided-dst": lambda e: dnnl.concat.primitive_desc(
        e, _view([8, 8], "gaps"), 0, [_view([4, 8], "plain")] * 2),
    "inner-product-dst-strides": lambda e: dnnl.inner_product_forward.primitive_desc(
        e, INF, _view([4, 16], "plain"), _view([8, 16], "plain"), _view([4, 8], "transposed")),
    "eltwise-strides": lambda e: dnnl.eltwise_forward.primitive_desc(
        e, INF, ALG.eltwise_relu, _view([4, 8], "inner2"), _view([4, 8], "inner2"), 0.0, 0.0),
    "submemory-offsets": lambda e: dnnl.binary.primitive_desc(
        e, ALG.binary_add, _view([2, 4, 4, 8], "offset"), _view([2, 4, 4, 8], "offset"),
        _view([2, 4, 4, 8], "offset")),
    "sum-many-inputs-dense": lambda e: dnnl.sum.primitive_desc(
        e, _view([2, 4, 4, 8], "gaps"), [1.0, 1.0], [_view([2, 4, 4, 8], "gaps")] * 2),
    "group-normalization-layouts": lambda e: dnnl.group_normalization_forward.primitive_desc(
        e, INF, _view([2, 4, 4, 8], "plain"), _view([2, 4, 4, 8], "channels_last"), 2, 1e-3,
        dnnl.normalization_flags.none),
    "batch-normalization-stats-strides": lambda e: dnnl.batch_normalization_forward.primitive_desc(
        e, INF, _view([2, 4, 4, 8], "gaps"), _view([2, 4, 4, 8], "gaps"), 1e-3,
        dnnl.normalization_flags.none),
    "reduction-combined-strides": lambda e: dnnl.reduction.primitive_desc(
        e, ALG.reduction_sum, _view([1, 4, 4, 8], "gaps"), _view([1, 4, 4, 1], "plain"), 0.0, 0.0),
    "softmax-layouts": lambda e: dnnl.softmax_forward.primitive_desc(
        e, INF, ALG.softmax_accurate, _view([2, 8], "inner2"), _view([2, 8], "plain"), 1),
    "dense-bias-post-op-inputs": lambda e: dnnl.matmul.primitive_desc(
        e, _view([4, 16], "plain"), _view([16, 8], "plain"), _view([4, 8], "plain"),
        _attr(post_add=_view([4, 8], "inner2"))),
    "group-normalization-strides": lambda e: dnnl.group_normalization_forward.primitive_desc(
        e, INF, _view([2, 4, 4, 8], "offset"), _view([2, 4, 4, 8], "offset"), 2, 1e-3,
        dnnl.normalization_flags.none),
    "rnn-offsets": lambda e: dnnl.lstm_forward.primitive_desc(
        e, INF, dnnl.rnn_direction.unidirectional_left2right,
        md([3, 2, 14], DT.f32, TAG.tnc).submemory_desc([3, 2, 7], [0, 0, 7]), md(), md(),
        md([1, 1, 7, 4, 7], DT.f32, TAG.ldigo), md([1, 1, 7, 4, 7], DT.f32, TAG.ldigo),
        md([1, 1, 4, 7], DT.f32, TAG.ldgo), md([3, 2, 7], DT.f32, TAG.tnc), md(), md()),
}


def _named(problem):
    return known_problems.get(problem).implementations


def test_every_rule_keyed_to_implementations_has_a_case_here():
    keyed = {p.id for p in known_problems.problems() if p.implementations}
    # reorder-direct-copy-memory-kinds acts at execute, softmax-reusable-sub-group
    # by the device too: both have tests of their own below
    assert keyed - set(CASES) == {"reorder-direct-copy-memory-kinds", "softmax-reusable-sub-group"}


def _acts(problem, make, first):
    """Whether the binding acts on make()'s case: refuses it naming
    `problem`, or steps from oneDNN's first choice `first` to another
    implementation (as the rules do where one is left)."""
    try:
        taken = make().impl_info_str()
    except dnnl.unimplemented as refused:
        assert refused.known_problem == problem, refused
        return True
    return taken != first


@pytest.mark.parametrize("problem", sorted(CASES))
def test_a_rule_acts_on_the_implementations_it_names_and_no_other(engine, problem):
    def make():
        return CASES[problem](engine)

    with known_problems.disabled():
        chosen = make()
    first = chosen.impl_info_str()
    if not known_problems.names(problem, chosen.get_kind(), first):
        pytest.skip(f"oneDNN chose {first} here, which {problem} does not name")
    assert _acts(problem, make, first)
    for impl in GENERATED:
        with scope_view(impl):
            assert make(), f"{problem} acted on {impl}"
    for named in _named(problem):
        if named.kind != chosen.get_kind().name:
            continue
        with scope_view(named.name + ":any"):  # every implementation seen as a named one
            with pytest.raises(dnnl.unimplemented, match=problem):
                make()


def test_the_direct_copy_rule_acts_on_gpu_direct_copy_only(engine, cl_context, cl_device, stream):
    oi, usm = dnnl.ocl_interop, dnnl.usm
    desc = md([64], DT.f32, TAG.a)
    x = np.arange(64, dtype=np.float32)
    ptr = usm.device_alloc(cl_context, cl_device, desc.get_size())
    try:
        dst = oi.make_memory(desc, engine, oi.memory_kind.usm, ptr)
        src = dnnl.memory(desc, engine)
        dnnl.arrays.write(src, x)

        def run():  # (a primitive's execute checks are made with it: one per view)
            prim = dnnl.reorder(dnnl.reorder.primitive_desc(engine, desc, engine, desc))
            prim.execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
            stream.wait()

        with scope_view("gpu:direct_copy"):
            with pytest.raises(dnnl.unimplemented, match="reorder-direct-copy-memory-kinds"):
                run()
        with scope_view("ocl:ref:any"):  # (gpu:direct_copy still runs: only the rule's view changes)
            run()
        dst = src = None  # (before the pointer is freed)
    finally:
        usm.free(cl_context, ptr)


XE_LP, XE_HPG, XE_HPC = 12 << 22, (12 << 22) | (55 << 14), (12 << 22) | (60 << 14)


def _softmax(engine, axis_size, rows=4):
    desc = md([rows, axis_size], DT.f32, TAG.ab)
    return dnnl.softmax_forward.primitive_desc(engine, INF, ALG.softmax_accurate, desc, desc, 1)


@pytest.mark.parametrize("device, axis, acts", [
    (dict(ip_version=XE_LP, sub_group_sizes=[8, 16, 32]), 32, True),
    (dict(ip_version=XE_LP, sub_group_sizes=[8, 16, 32]), 128, True),
    (dict(ip_version=XE_LP, sub_group_sizes=[8, 16, 32]), 16, False),   # the small form
    (dict(ip_version=XE_LP, sub_group_sizes=[8, 16, 32]), 129, False),  # one reduction per work-group
    (dict(ip_version=XE_HPG, sub_group_sizes=[8, 16, 32]), 12, True),   # no small form on Xe-HPG
    (dict(ip_version=XE_HPG, sub_group_sizes=[8, 16, 32]), 8, False),   # one sub-group holds the axis
    (dict(ip_version=XE_HPC, sub_group_sizes=[16, 32]), 32, False),     # no sub-group below 16
    (dict(ip_version=XE_LP, sub_group_sizes=[8, 16, 32], emulated_softmax_sub_groups=True), 32, False),
])
def test_the_softmax_sub_group_rule_acts_where_a_smaller_sub_group_may_be_picked(engine, device, axis, acts):
    """Seen as a device that may pick sub-groups of 8, softmax steps from
    ocl:reusable to the next implementation (never refused); where the
    reusable kernel's form or the device cannot split the reduction,
    ocl:reusable is taken."""
    with known_problems.disabled():
        first = _softmax(engine, axis).impl_info_str()
    if first != "ocl:reusable":
        pytest.skip(f"oneDNN chose {first} for this softmax here, not ocl:reusable")
    with scope_view(**device):
        taken = _softmax(engine, axis).impl_info_str()
    assert (taken != "ocl:reusable") == acts, taken


def test_softmax_stepped_away_from_the_reusable_kernel_is_right(engine, stream):
    x = np.random.default_rng(4).uniform(-1, 1, (4, 32)).astype(np.float32)
    with scope_view(ip_version=XE_LP, sub_group_sizes=[8, 16, 32]):
        pd = _softmax(engine, 32)
    assert pd.impl_info_str() != "ocl:reusable"
    src, dst = dnnl.memory(pd.src_desc(), engine), dnnl.memory(pd.dst_desc(), engine)
    dnnl.arrays.write(src, x)
    dnnl.softmax_forward(pd).execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
    stream.wait()
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(dnnl.arrays.read(dst), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("problem", [p.id for p in known_problems.problems() if not p.implementations])
def test_rules_not_keyed_to_implementations_say_which_devices_they_cover(problem):
    p = known_problems.get(problem)
    assert "every device" in p.devices, p.devices  # oneDNN's runtime code, not a kernel
    with scope_view("jit:ir"):
        assert known_problems.get(problem).applies


def test_a_graph_port_rule_follows_the_implementation_the_primitive_api_picks(engine):
    """A ReLU partition reading rows with gaps: refused while the primitive
    API's eltwise for that layout is one eltwise-strides names, compiled
    where it is not."""
    g = dnnl.graph
    lt = g.logical_tensor
    src = lt(0, lt.data_type.f32, [4, 16], [20, 1])
    dst = lt(1, lt.data_type.f32, [4, 16], lt.layout_type.strided)
    graph = g.graph(dnnl.engine.kind.gpu)
    graph.add_op(g.op(0, g.op.kind.ReLU, [src], [dst]))
    graph.finalize()
    (partition,) = graph.get_partitions()
    graph_engine = g.ocl_interop.make_engine_with_allocator(
        dnnl.ocl_interop.get_device(engine), dnnl.ocl_interop.get_context(engine), g.allocator())
    with pytest.raises(dnnl.unimplemented, match="eltwise-strides") as refused:
        partition.compile([src], [dst], graph_engine)
    assert refused.value.known_problem == "eltwise-strides"
    with scope_view("jit:ir"):
        assert partition.compile([src], [dst], graph_engine)
