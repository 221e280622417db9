"""Primitive attributes beyond scales and post-op basics, against NumPy.

Each attribute kind changes a real primitive's result the way NumPy says:
PReLU and depthwise post-ops, dropout (with its mask), weight-only
quantization (int8 weights with grouped scales and zero points, fpmath mode
applied to integers), stochastic rounding, and the accumulation,
determinism and RNN quantization settings. Where oneDNN does not implement a
configuration on this device, UNSUPPORTED says so and the test asserts the
refusal (status unimplemented), failing if that changes. The depthwise
post-op is decided by the implementation that runs: computed and compared
with NumPy where oneDNN takes it (the nGEN convolutions of a real GPU), its
refusal asserted where that implementation refuses it, as oneDNN says.
"""

from __future__ import annotations


import re

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, DT, TAG, plain_tag, read_values, watch, write_values

INFERENCE = dnnl.prop_kind.forward_inference

UNSUPPORTED: dict[str, str] = {}
# Implementations known to refuse a depthwise post-op: oneDNN 3.13.1's
# OpenCL C reference convolution (the emulated device's) says "unsupported
# post-ops"; the ones that fuse it are nGEN JIT ones, which need a real GPU.
REFUSE_DEPTHWISE_POST_OPS = {"ocl:ref:any"}


def desc(shape, dt=DT.f32, tag=None):
    return dnnl.memory.desc(list(shape), dt, tag if tag is not None else plain_tag(len(shape)))


def put(engine, x, dt=DT.f32):
    mem = dnnl.memory(desc(np.shape(x), dt), engine)
    write_values(mem, x)
    return mem


get = read_values


def run(prim, stream, args):
    prim.execute(stream, args)
    stream.wait()


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def matmul(engine, m, k, n, attr, wdt=DT.f32):
    pd = dnnl.matmul.primitive_desc(engine, desc((m, k)), desc((k, n), wdt), desc((m, n)), attr)
    return pd, dnnl.matmul(pd)


def test_prelu_post_op(engine, stream):
    rng = np.random.default_rng(1)
    a, b = f32(rng.uniform(-1, 1, (4, 6))), f32(rng.uniform(-1, 1, (6, 5)))
    slopes = f32(rng.uniform(0.1, 0.9, (1, 5)))
    po = dnnl.post_ops()
    po.append_prelu(1 << 1)  # one slope per column of dst
    assert po.kind(0) == dnnl.primitive_kind.prelu and po.get_params_prelu(0) == 2
    attr = dnnl.primitive_attr()
    attr.set_post_ops(po)
    _, prim = matmul(engine, 4, 6, 5, attr)
    out = dnnl.memory(desc((4, 5)), engine)
    args = {dnnl.ARG_SRC: put(engine, a), dnnl.ARG_WEIGHTS: put(engine, b), dnnl.ARG_DST: out}
    with pytest.raises(dnnl.error, match=r"missing argument ARG_ATTR_MULTIPLE_POST_OP\(0\) \| ARG_WEIGHTS"):
        prim.execute(stream, args)
    args[dnnl.ARG_ATTR_MULTIPLE_POST_OP(0) | dnnl.ARG_WEIGHTS] = put(engine, slopes)
    run(prim, stream, args)
    ref = a @ b
    np.testing.assert_allclose(get(out), np.where(ref > 0, ref, slopes * ref), rtol=1e-5, atol=1e-6)


def test_depthwise_post_op(engine, stream):
    """A 1x1 convolution fused with a 3x3 depthwise one (stride 1, padding 1)."""
    rng = np.random.default_rng(2)
    n, ic, oc, h, w = 1, 4, 8, 6, 6
    x = f32(rng.uniform(-1, 1, (n, ic, h, w)))
    w1 = f32(rng.uniform(-1, 1, (oc, ic, 1, 1)))
    wdw = f32(rng.uniform(-1, 1, (oc, 1, 1, 3, 3)))
    bdw = f32(rng.uniform(-1, 1, (oc,)))
    po = dnnl.post_ops()
    po.append_dw(DT.f32, DT.f32, DT.f32, 3, 1, 1)
    assert po.get_params_dw(0) == (DT.f32, DT.f32, DT.f32, 3, 1, 1)
    attr = dnnl.primitive_attr()
    attr.set_post_ops(po)

    def create(attr=attr):
        return dnnl.convolution_forward.primitive_desc(
            engine, INFERENCE, ALG.convolution_direct, desc(x.shape), desc(w1.shape),
            dnnl.memory.desc([n, oc, h, w], DT.f32, TAG.any), [1, 1], [0, 0], [0, 0], attr)
    try:
        pd = create()
    except dnnl.unimplemented as refusal:
        # The implementation that runs this convolution without the post-op
        # is one known to refuse it, else the refusal is not this test's to
        # accept; and where oneDNN's reasons are captured (ONEDNN_VERBOSE=
        # check,dispatch or DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1: docs/api.md),
        # its dispatch line for that implementation says the post-ops.
        ran = create(dnnl.primitive_attr()).impl_info_str()
        assert ran in REFUSE_DEPTHWISE_POST_OPS, f"{ran} refused the depthwise post-op: {refusal}"
        if refusal.reasons:
            said = [line for line in refusal.reasons if f",{ran}," in line]
            assert said and all("unsupported post-ops" in line for line in said), (ran, refusal.reasons)
        return
    dw_w = pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_ATTR_POST_OP_DW | dnnl.ARG_WEIGHTS)
    assert dw_w.get_dims() == [oc, 1, 1, 3, 3]
    out = dnnl.memory(pd.dst_desc(), engine)
    wdw_mem = dnnl.memory(dw_w, engine)
    plain_dw = put(engine, wdw.reshape(oc, 1, 1, 3, 3))
    dnnl.reorder(plain_dw, wdw_mem).execute(stream, {dnnl.ARG_FROM: plain_dw, dnnl.ARG_TO: wdw_mem})
    run(dnnl.convolution_forward(pd), stream, {
        dnnl.ARG_SRC: put(engine, x), dnnl.ARG_WEIGHTS: put(engine, w1), dnnl.ARG_DST: out,
        dnnl.ARG_ATTR_POST_OP_DW | dnnl.ARG_WEIGHTS: wdw_mem,
        dnnl.ARG_ATTR_POST_OP_DW | dnnl.ARG_BIAS: put(engine, bdw)})
    plain = dnnl.memory(desc((n, oc, h, w)), engine)
    dnnl.reorder(out, plain).execute(stream, {dnnl.ARG_FROM: out, dnnl.ARG_TO: plain})
    stream.wait()
    y1 = np.einsum("nchw,oc->nohw", x, w1[:, :, 0, 0])
    yp = np.pad(y1, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = sum(yp[:, :, i:i + h, j:j + w] * wdw[:, 0, 0, i, j][None, :, None, None]
              for i in range(3) for j in range(3)) + bdw[None, :, None, None]
    np.testing.assert_allclose(get(plain), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_mask", [True, False], ids=["mask", "no-mask"])
def test_dropout(engine, stream, with_mask):
    rng = np.random.default_rng(3)
    m, k, n = 16, 8, 16
    a, b = f32(rng.uniform(0.5, 1, (m, k))), f32(rng.uniform(0.5, 1, (k, n)))
    attr = dnnl.primitive_attr()
    mask_md = desc((m, n), DT.u8) if with_mask else dnnl.memory.desc()
    attr.set_dropout(mask_md)
    assert attr.get_dropout() == mask_md
    _, prim = matmul(engine, m, k, n, attr)
    p = 0.25
    out = dnnl.memory(desc((m, n)), engine)
    args = {dnnl.ARG_SRC: put(engine, a), dnnl.ARG_WEIGHTS: put(engine, b), dnnl.ARG_DST: out,
            dnnl.ARG_ATTR_DROPOUT_PROBABILITY: put(engine, np.array([p])),
            dnnl.ARG_ATTR_DROPOUT_SEED: put(engine, np.array([1234]), DT.s32)}
    mask = dnnl.memory(mask_md, engine) if with_mask else None
    if mask is not None:
        args[dnnl.ARG_ATTR_DROPOUT_MASK] = mask
    run(prim, stream, args)
    ref = a @ b
    y = get(out)
    kept = y != 0
    np.testing.assert_allclose(y[kept], (ref / (1 - p))[kept], rtol=1e-5)
    assert 0.1 < 1 - kept.mean() < 0.4  # about p of 256 values dropped
    if mask is not None:
        np.testing.assert_array_equal(get(mask) != 0, kept)


@pytest.mark.parametrize("weights_dt", ["s8", "u8"])
def test_weight_only_quantized_matmul(engine, stream, weights_dt):
    """f32 activations, int8 weights with per-group scales and zero points,
    decompressed on the fly (fpmath mode applied to integers)."""
    rng = np.random.default_rng(4)
    m, k, n, group = 3, 64, 8, 16  # oneDNN: groups of K a multiple of 16
    dt = getattr(DT, weights_dt)
    lo, hi = (-8, 8) if weights_dt == "s8" else (0, 16)
    a = f32(rng.uniform(-1, 1, (m, k)))
    wq = rng.integers(lo, hi, (k, n))
    scales = f32(rng.uniform(0.01, 0.1, (k // group, n)))
    zps = rng.integers(lo, hi, (k // group, n))
    attr = dnnl.primitive_attr()
    attr.set_fpmath_mode(dnnl.fpmath_mode.f16, True)
    assert attr.get_fpmath_mode() == dnnl.fpmath_mode.f16 and attr.get_fpmath_mode_apply_to_int()
    mask = (1 << 0) | (1 << 1)
    attr.set_scales(dnnl.ARG_WEIGHTS, mask, [group, 1], DT.f32)
    attr.set_zero_points(dnnl.ARG_WEIGHTS, mask, [group, 1], dt)
    _, prim = matmul(engine, m, k, n, attr, dt)
    out = dnnl.memory(desc((m, n)), engine)
    run(prim, stream, {
        dnnl.ARG_SRC: put(engine, a), dnnl.ARG_WEIGHTS: put(engine, wq, dt), dnnl.ARG_DST: out,
        dnnl.ARG_ATTR_SCALES | dnnl.ARG_WEIGHTS: put(engine, scales),
        dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_WEIGHTS: put(engine, zps, dt)})
    dequantized = (wq - np.repeat(zps, group, axis=0)) * np.repeat(scales, group, axis=0)
    ref = a @ dequantized
    # f16 math: tolerance of f16 rounding of inputs and products
    np.testing.assert_allclose(get(out), ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    wrong = (wq - np.repeat(zps, group, axis=0)) * np.repeat(scales[:1], k, axis=0)
    assert not np.allclose(get(out), a @ wrong, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


def test_stochastic_rounding_needs_its_seed_and_stays_within_one_ulp(engine, stream):
    rng = np.random.default_rng(5)
    m, k, n = 8, 16, 8
    a, b = f32(rng.uniform(-1, 1, (m, k))), f32(rng.uniform(-1, 1, (k, n)))
    attr = dnnl.primitive_attr()
    attr.set_rounding_mode(dnnl.ARG_DST, dnnl.rounding_mode.stochastic)
    assert attr.get_rounding_mode(dnnl.ARG_DST) == dnnl.rounding_mode.stochastic
    assert attr.get_rounding_mode(dnnl.ARG_SRC) == dnnl.rounding_mode.environment

    def create():
        return dnnl.matmul.primitive_desc(engine, desc((m, k)), desc((k, n)), desc((m, n), DT.f16), attr)
    if "stochastic rounding" in UNSUPPORTED:
        with pytest.raises(dnnl.error) as info:
            create()
        assert info.value.status == dnnl.status.unimplemented
        return
    prim = dnnl.matmul(create())
    out = dnnl.memory(desc((m, n), DT.f16), engine)
    args = {dnnl.ARG_SRC: put(engine, a), dnnl.ARG_WEIGHTS: put(engine, b), dnnl.ARG_DST: out}
    with pytest.raises(dnnl.error, match="missing argument ARG_ATTR_ROUNDING_SEED"):
        prim.execute(stream, args)
    results = []
    for seed in (1, 2, 1):
        run(prim, stream, {**args, dnnl.ARG_ATTR_ROUNDING_SEED: put(engine, np.array([seed]), DT.s32)})
        results.append(get(out))
    ref = a @ b
    nearest = ref.astype(np.float16)
    lo = np.nextafter(nearest, np.float16(-np.inf)).astype(np.float64)
    hi = np.nextafter(nearest, np.float16(np.inf)).astype(np.float64)
    for y in results:
        assert np.all((y >= lo) & (y <= hi))
    # The seed decides the rounding: the same seed rounds the same way, two
    # seeds differ somewhere, and neither is round-to-nearest (64 results of
    # which none is exactly representable in f16).
    assert not np.any(ref == nearest.astype(np.float32))
    np.testing.assert_array_equal(results[0], results[2])
    assert not np.array_equal(results[0], results[1]), "seeds 1 and 2 rounded alike"
    for y in results[:2]:
        assert not np.array_equal(y, nearest), "stochastic rounding gave round-to-nearest"


def test_accumulation_and_determinism_settings(engine, stream):
    rng = np.random.default_rng(6)
    a, b = f32(rng.uniform(-1, 1, (4, 8))), f32(rng.uniform(-1, 1, (8, 4)))
    attr = dnnl.primitive_attr()
    assert attr.get_accumulation_mode() == dnnl.accumulation_mode.strict
    assert attr.get_deterministic() is False
    attr.set_accumulation_mode(dnnl.accumulation_mode.relaxed)
    attr.set_deterministic(True)
    assert attr.get_accumulation_mode() == dnnl.accumulation_mode.relaxed
    assert attr.get_deterministic() is True
    pd, prim = matmul(engine, 4, 8, 4, attr)
    kept = pd.get_primitive_attr()
    assert kept.get_accumulation_mode() == dnnl.accumulation_mode.relaxed and kept.get_deterministic()
    out = dnnl.memory(desc((4, 4)), engine)
    run(prim, stream, {dnnl.ARG_SRC: put(engine, a), dnnl.ARG_WEIGHTS: put(engine, b), dnnl.ARG_DST: out})
    np.testing.assert_allclose(get(out), a @ b, rtol=1e-5, atol=1e-6)


def test_rnn_quantization_parameters_round_trip():
    attr = dnnl.primitive_attr()
    attr.set_rnn_data_qparams(64.0, 128.0)
    assert attr.get_rnn_data_qparams() == (64.0, 128.0)
    attr.set_rnn_weights_qparams(0, [0.5])
    assert attr.get_rnn_weights_qparams() == (0, [0.5])
    attr.set_rnn_weights_projection_qparams(3, [0.25, 0.75])
    assert attr.get_rnn_weights_projection_qparams() == (3, [0.25, 0.75])


def test_precomputed_reductions(engine, stream):
    """Precomputed source reductions (with weights zero points, over a full
    source mask with groups along K), as matmul's checks ask for them: a
    required argument that oneDNN uses instead of summing the source itself."""
    rng = np.random.default_rng(7)
    m, k, n = 2, 32, 16
    a, b = rng.integers(-8, 8, (m, k)), rng.integers(-8, 8, (k, n))
    zp = 3
    attr = dnnl.primitive_attr()
    attr.set_zero_points(dnnl.ARG_WEIGHTS, 0, [], DT.s32)
    attr.set_precomputed_reductions(dnnl.ARG_SRC, (1 << 0) | (1 << 1), [1, k])
    pd = dnnl.matmul.primitive_desc(engine, desc((m, k), DT.s8), desc((k, n), DT.s8), desc((m, n)), attr)
    prim = dnnl.matmul(pd)
    out = dnnl.memory(desc((m, n)), engine)
    args = {dnnl.ARG_SRC: put(engine, a, DT.s8), dnnl.ARG_WEIGHTS: put(engine, b, DT.s8), dnnl.ARG_DST: out,
            dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_WEIGHTS: put(engine, np.array([zp]), DT.s32)}
    with pytest.raises(dnnl.invalid_arguments,
                       match=r"missing argument ARG_ATTR_PRECOMPUTED_REDUCTIONS \| ARG_SRC"):
        prim.execute(stream, args)
    reduction_arg = dnnl.ARG_ATTR_PRECOMPUTED_REDUCTIONS | dnnl.ARG_SRC
    for row_sums in (a.sum(axis=1, keepdims=True), a.sum(axis=1, keepdims=True) + 1):
        run(prim, stream, {**args, reduction_arg: put(engine, row_sums, DT.s32)})
        # dst = src @ (weights - zp) = src @ weights - zp * (the given row sums)
        np.testing.assert_array_equal(get(out), a @ b - zp * row_sums)


# Arguments oneDNN reads without a descriptor: their memory must hold what
# the attributes say it reads (oneDNN's C++ API takes any memory there and
# reads past a short one).

def _per_column_scales(attr):
    attr.set_scales_mask(dnnl.ARG_WEIGHTS, 1 << 1)
    return dnnl.ARG_ATTR_SCALES | dnnl.ARG_WEIGHTS, DT.f32, 8, "8 f32 values (32 bytes)", {}


def _grouped_scales(attr):  # weight-only quantization: s8 weights, groups of 16 along K = 32
    attr.set_fpmath_mode(dnnl.fpmath_mode.f16, True)
    attr.set_scales(dnnl.ARG_WEIGHTS, (1 << 0) | (1 << 1), [16, 1], DT.f32)
    return (dnnl.ARG_ATTR_SCALES | dnnl.ARG_WEIGHTS, DT.f32, 16, "16 f32 values (64 bytes)",
            dict(k=32, weights=DT.s8))


def _per_column_zero_points(attr):  # int8 matmul
    attr.set_zero_points_mask(dnnl.ARG_DST, 1 << 1)
    return (dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_DST, DT.s32, 8, "8 s32 values (32 bytes)",
            dict(src=DT.s8, weights=DT.s8, dst=DT.s32))


def _prelu(attr):
    po = dnnl.post_ops()
    po.append_prelu(1 << 1)
    attr.set_post_ops(po)
    return dnnl.ARG_ATTR_MULTIPLE_POST_OP(0) | dnnl.ARG_WEIGHTS, DT.f32, 8, "8 f32 values (32 bytes)", {}


def _dropout_seed(attr):
    attr.set_dropout(dnnl.memory.desc(), DT.s64, False)
    return dnnl.ARG_ATTR_DROPOUT_SEED, DT.s64, 1, "1 s64 value (8 bytes)", {}


@pytest.mark.parametrize("ask", [_per_column_scales, _grouped_scales, _per_column_zero_points, _prelu,
                                 _dropout_seed], ids=lambda f: f.__name__.strip("_"))
def test_short_memory_for_what_the_attributes_ask_is_refused(engine, stream, ask):
    """A 2 x K x 8 matmul: memory one byte short of what the attributes ask
    the primitive to read is refused, naming the argument and what it reads;
    as many values as it reads are taken."""
    attr = dnnl.primitive_attr()
    arg, dt, count, reads, matmul_types = ask(attr)
    m, k, n = 2, matmul_types.get("k", 4), 8
    src, weights, dst = (matmul_types.get(name, DT.f32) for name in ("src", "weights", "dst"))
    prim = dnnl.matmul(dnnl.matmul.primitive_desc(engine, desc((m, k), src), desc((k, n), weights),
                                                  desc((m, n), dst), attr))
    args = {dnnl.ARG_SRC: put(engine, np.ones((m, k)), src), dnnl.ARG_WEIGHTS: put(engine, np.ones((k, n)), weights),
            dnnl.ARG_DST: dnnl.memory(desc((m, n), dst), engine)}
    if arg == dnnl.ARG_ATTR_DROPOUT_SEED:
        args[dnnl.ARG_ATTR_DROPOUT_PROBABILITY] = put(engine, np.zeros(1))
    nbytes = count * dnnl.memory.data_type_size(dt)
    short = dnnl.memory(dnnl.memory.desc([nbytes - 1], DT.u8, TAG.a), engine)
    name = {dnnl.ARG_ATTR_SCALES | dnnl.ARG_WEIGHTS: "ARG_ATTR_SCALES | ARG_WEIGHTS",
            dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_DST: "ARG_ATTR_ZERO_POINTS | ARG_DST",
            dnnl.ARG_ATTR_MULTIPLE_POST_OP(0) | dnnl.ARG_WEIGHTS: "ARG_ATTR_MULTIPLE_POST_OP(0) | ARG_WEIGHTS",
            dnnl.ARG_ATTR_DROPOUT_SEED: "ARG_ATTR_DROPOUT_SEED"}[arg]
    with pytest.raises(dnnl.invalid_arguments, match=rf"^{re.escape(name)} holds {nbytes - 1} bytes, "
                                                     rf"where the primitive reads {re.escape(reads)}"):
        run(prim, stream, {**args, arg: short})
    run(prim, stream, {**args, arg: dnnl.memory(dnnl.memory.desc([count], dt, TAG.a), engine)})


def _reorder_with_dst_zero_points(engine, mask):
    attr = dnnl.primitive_attr()
    attr.set_zero_points_mask(dnnl.ARG_DST, mask)
    return dnnl.reorder.primitive_desc(engine, desc((1, 3, 2, 2)), engine, desc((1, 3, 2, 2), DT.s32), attr)


def test_reorder_per_channel_dst_zero_points_are_refused_where_applied_wrongly(engine, stream):
    """oneDNN's ocl:ref reorder reads one destination zero point for every
    element whatever the mask: per-channel zero points [1, -2, 3] gave 1
    everywhere. Refused naming the problem; one zero point (mask 0) is
    applied and taken."""
    from helpers import refused_here
    refused_here("reorder-ref-dst-zero-points", lambda: _reorder_with_dst_zero_points(engine, 1 << 1))
    pd = _reorder_with_dst_zero_points(engine, 0)
    out = dnnl.memory(desc((1, 3, 2, 2), DT.s32), engine)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: put(engine, np.zeros((1, 3, 2, 2))), dnnl.ARG_TO: out,
                                   dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_DST: put(engine, [-7], DT.s32)})
    np.testing.assert_array_equal(get(out), np.full((1, 3, 2, 2), -7))


@watch("reorder-ref-dst-zero-points", "ocl:ref reorder applies the first destination zero point "
       "everywhere")
def test_reorder_per_channel_dst_zero_points_raw_onednn(engine, stream):
    from helpers import assert_right, implementation_here, workarounds_off
    implementation_here("reorder-ref-dst-zero-points", lambda: _reorder_with_dst_zero_points(engine, 1 << 1))
    with workarounds_off("reorder-ref-dst-zero-points"):
        pd = _reorder_with_dst_zero_points(engine, 1 << 1)
    out = dnnl.memory(desc((1, 3, 2, 2), DT.s32), engine)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: put(engine, np.zeros((1, 3, 2, 2))), dnnl.ARG_TO: out,
                                   dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_DST: put(engine, [1, -2, 3], DT.s32)})
    assert_right(get(out)[0, :, 0, 0], [1, -2, 3], rtol=0, atol=0)
