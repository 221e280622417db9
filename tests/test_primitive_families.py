"""The rest of dnnl.hpp's primitive families, forward and backward, against NumPy.

Forward results are compared with float64 NumPy references of oneDNN's
documented formulas. Gradients are compared with central differences of the
same references (float64), contracted with a random diff_dst: the test knows
nothing of oneDNN's backward formulas, only of its forward definitions.

Every backward primitive descriptor is created as in C++: with the forward
training descriptor as its hint, and with the forward workspace where the
forward has one (max pooling, LRN). Each family also runs in f16 and bf16
(data in the low type; statistics, scales, bias and weight gradients in f32,
as mixed-precision training keeps them) against references computed from the
rounded inputs. RNN families are in test_rnn.py.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from helpers import ALG, DT, TAG, plain_tag, read_values, write_values

TRAINING = dnnl.prop_kind.forward_training
BACKWARD = dnnl.prop_kind.backward
BACKWARD_DATA = dnnl.prop_kind.backward_data
NF = dnnl.normalization_flags
RTOL = 1e-4  # f32 results against float64 references and central differences

Reference = Callable[[np.ndarray], np.ndarray]

# What oneDNN answers "could not create a primitive descriptor" with status
# unimplemented for on this device; asserted, so the test fails if it changes.
UNSUPPORTED = {
    "group_normalization_backward":
        "oneDNN 3.13 switches its GPU reference off (src/gpu/intel/gnorm/ref.cpp: "
        "\"The implementation doesn't return the correct result\"); there is no other",
}


def assert_unsupported(key, create):
    assert key in UNSUPPORTED
    with pytest.raises(dnnl.error, match="could not create a primitive descriptor") as info:
        create()
    assert info.value.status == dnnl.status.unimplemented


# --------------------------------------------------------------------------
# helpers


# Lower-precision runs: the data (sources, weights, destinations and their
# diffs) in f16 or bf16, statistics, scales and weight gradients in f32 as in
# mixed-precision training; references from the rounded inputs in float64.
LOW = ["f16", "bf16"]
TOL = {"f32": RTOL, "f16": 1e-2, "bf16": 4e-2}


def desc(shape, tag=None, dt="f32"):
    return dnnl.memory.desc(list(shape), getattr(DT, dt), tag if tag is not None else plain_tag(len(shape)))


def rounded(x, dt="f32"):
    """`x` as data type `dt` holds it, in float64."""
    x = np.asarray(x, dtype=np.float32)
    if dt == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dt == "bf16":
        return dnnl.arrays.float32_from_bf16(dnnl.arrays.bf16_from_float32(x)).astype(np.float64)
    return x.astype(np.float64)


def f32(x):
    """`x` rounded to f32 and back: what the device holds, in float64."""
    return rounded(x)


def put(engine, x, md=None, dt="f32"):
    mem = dnnl.memory(md if md is not None else desc(np.shape(x), dt=dt), engine)
    write_values(mem, x)
    return mem


def empty(engine, md):
    return dnnl.memory(md, engine)


get = read_values


def run(prim, stream, args):
    prim.execute(stream, args)
    stream.wait()


def random(rng, shape, lo=-2.0, hi=2.0, away_from_zero=0.0, dt="f32"):
    x = rng.uniform(lo, hi, size=shape)
    if away_from_zero:
        x = np.sign(x) * np.maximum(np.abs(x), away_from_zero)
    return rounded(x, dt)


def numeric_grad(f: Reference, x, dy, h=1e-4):
    """d(sum(f(x) * dy))/dx by central differences (float64)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp = x.copy()
        xm = x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = np.sum((f(xp) - f(xm)) * dy) / (2 * h)
    return grad


def assert_close(out, ref, rtol=RTOL, dt="f32"):
    rtol = max(rtol, TOL[dt])
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape
    scale = max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol * scale)


# --------------------------------------------------------------------------
# NumPy references (NCHW, float64)


def out_size(size, k, s, pl, pr, d):
    return (size + pl + pr - ((k - 1) * (d + 1) + 1)) // s + 1


def conv2d(x, w, b, s, pl, pr, d):
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = out_size(h, kh, s[0], pl[0], pr[0], d[0]), out_size(wd, kw, s[1], pl[1], pr[1], d[1])
    xp = np.pad(x, ((0, 0), (0, 0), (pl[0], pr[0]), (pl[1], pr[1])))
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            r, c = i * (d[0] + 1), j * (d[1] + 1)
            patch = xp[:, :, r:r + s[0] * (oh - 1) + 1:s[0], c:c + s[1] * (ow - 1) + 1:s[1]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + (0 if b is None else b[None, :, None, None])


def deconv2d(x, w, b, s, pl, pr, d):
    """Transposed convolution: weights (OC, IC, KH, KW), the adjoint of conv2d."""
    n, _, ih, iw = x.shape
    o, _, kh, kw = w.shape
    oh = (ih - 1) * s[0] - pl[0] - pr[0] + (kh - 1) * (d[0] + 1) + 1
    ow = (iw - 1) * s[1] - pl[1] - pr[1] + (kw - 1) * (d[1] + 1) + 1
    full = np.zeros((n, o, oh + pl[0] + pr[0], ow + pl[1] + pr[1]))
    for i in range(kh):
        for j in range(kw):
            r, c = i * (d[0] + 1), j * (d[1] + 1)
            full[:, :, r:r + s[0] * (ih - 1) + 1:s[0], c:c + s[1] * (iw - 1) + 1:s[1]] += \
                np.einsum("nchw,oc->nohw", x, w[:, :, i, j])
    out = full[:, :, pl[0]:pl[0] + oh, pl[1]:pl[1] + ow]
    return out + (0 if b is None else b[None, :, None, None])


def pool2d(x, alg, k, s, pl, pr):
    n, c, h, w = x.shape
    oh, ow = out_size(h, k[0], s[0], pl[0], pr[0], 0), out_size(w, k[1], s[1], pl[1], pr[1], 0)
    pad = ((0, 0), (0, 0), (pl[0], pr[0]), (pl[1], pr[1]))
    fill = -np.inf if alg == ALG.pooling_max else 0.0
    xp = np.pad(x, pad, constant_values=fill)
    ones = np.pad(np.ones((h, w)), pad[2:])
    windows = [xp[:, :, i:i + s[0] * (oh - 1) + 1:s[0], j:j + s[1] * (ow - 1) + 1:s[1]]
               for i in range(k[0]) for j in range(k[1])]
    if alg == ALG.pooling_max:
        return np.max(windows, axis=0)
    total = np.sum(windows, axis=0)
    if alg == ALG.pooling_avg_include_padding:
        return total / (k[0] * k[1])
    counts = sum(ones[i:i + s[0] * (oh - 1) + 1:s[0], j:j + s[1] * (ow - 1) + 1:s[1]]
                 for i in range(k[0]) for j in range(k[1]))
    return total / counts


def normalize(x, axes, eps, scale, shift):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + shift, mean, var


def group_norm(x, groups, eps, scale, shift):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + eps)).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    return y * scale.reshape(bshape) + shift.reshape(bshape), mean[:, :, 0], var[:, :, 0]


def lrn(x, alg, size, alpha, beta, k):
    half_lo, half_hi = (size - 1) // 2, (size + 1) // 2 - 1
    sq = x * x
    if alg == ALG.lrn_across_channels:
        p = np.pad(sq, ((0, 0), (half_lo, half_hi), (0, 0), (0, 0)))
        total = sum(p[:, i:i + x.shape[1]] for i in range(size))
        n_l = size
    else:
        p = np.pad(sq, ((0, 0), (0, 0), (half_lo, half_hi), (half_lo, half_hi)))
        total = sum(p[:, :, i:i + x.shape[2], j:j + x.shape[3]]
                    for i in range(size) for j in range(size))
        n_l = size * size
    return x * (k + alpha / n_l * total) ** -beta


def resample2d(x, alg, oh, ow):
    h, w = x.shape[2:]

    def coords(o, i):
        return (np.arange(o) + 0.5) * i / o - 0.5

    if alg == ALG.resampling_nearest:
        ih = np.clip(np.round(coords(oh, h)), 0, h - 1).astype(int)
        iw = np.clip(np.round(coords(ow, w)), 0, w - 1).astype(int)
        return x[:, :, ih][:, :, :, iw]
    ch, cw = coords(oh, h), coords(ow, w)
    h0, w0 = np.floor(ch), np.floor(cw)
    wh, ww = ch - h0, cw - w0
    h0i, h1i = np.clip(h0, 0, h - 1).astype(int), np.clip(np.ceil(ch), 0, h - 1).astype(int)
    w0i, w1i = np.clip(w0, 0, w - 1).astype(int), np.clip(np.ceil(cw), 0, w - 1).astype(int)
    top = x[:, :, h0i] * (1 - wh)[:, None] + x[:, :, h1i] * wh[:, None]
    return top[:, :, :, w0i] * (1 - ww) + top[:, :, :, w1i] * ww


def shuffle(x, axis, group):
    c = x.shape[axis]
    shape = x.shape[:axis] + (c // group, group) + x.shape[axis + 1:]
    return np.swapaxes(x.reshape(shape), axis, axis + 1).reshape(x.shape)


def softmax(x, axis, log):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)
    return np.log(y) if log else y


# --------------------------------------------------------------------------
# convolution-like


CONV_CASES = [  # src (N, C, H, W), OC, kernel, strides, padding_l, padding_r, dilates
    ((2, 3, 6, 5), 4, (3, 3), (1, 1), (1, 1), (1, 1), (0, 0)),
    ((1, 2, 7, 7), 3, (3, 2), (2, 1), (1, 0), (0, 1), (1, 0)),
]


@pytest.mark.parametrize("family,case,dt", [
    pytest.param(f, c, "f32", id=f"{f}-{name}") for f in ("convolution", "deconvolution")
    for c, name in zip(CONV_CASES, ["3x3-pad1", "strided-dilated"])] + [
    pytest.param(f, CONV_CASES[0], dt, id=f"{f}-3x3-pad1-{dt}") for f in ("convolution", "deconvolution")
    for dt in LOW])
def test_convolution_like_forward_and_backward(engine, stream, family, case, dt):
    src_shape, oc, k, s, pl, pr, d = case
    rng = np.random.default_rng(7)
    n, ic, h, w = src_shape
    if family == "convolution":
        oh, ow = out_size(h, k[0], s[0], pl[0], pr[0], d[0]), out_size(w, k[1], s[1], pl[1], pr[1], d[1])
        ref = conv2d
        fwd_cls, bwd_data_cls, bwd_weights_cls = (dnnl.convolution_forward, dnnl.convolution_backward_data,
                                                  dnnl.convolution_backward_weights)
        alg = ALG.convolution_direct
    else:
        oh = (h - 1) * s[0] - pl[0] - pr[0] + (k[0] - 1) * (d[0] + 1) + 1
        ow = (w - 1) * s[1] - pl[1] - pr[1] + (k[1] - 1) * (d[1] + 1) + 1
        ref = deconv2d
        fwd_cls, bwd_data_cls, bwd_weights_cls = (dnnl.deconvolution_forward, dnnl.deconvolution_backward_data,
                                                  dnnl.deconvolution_backward_weights)
        alg = ALG.deconvolution_direct
    x = random(rng, src_shape, dt=dt)
    wt = random(rng, (oc, ic) + k, dt=dt)
    b = random(rng, (oc,))
    dy = random(rng, (n, oc, oh, ow), dt=dt)
    src_md, w_md, b_md, dst_md = desc(x.shape, dt=dt), desc(wt.shape, dt=dt), desc(b.shape), desc(dy.shape, dt=dt)
    # weight gradients in f32 (mixed-precision training)
    dw_md = desc(wt.shape)
    fwd_pd = fwd_cls.primitive_desc(engine, TRAINING, alg, src_md, w_md, b_md, dst_md, list(s), list(d),
                                    list(pl), list(pr))
    assert fwd_pd.get_prop_kind() == TRAINING and fwd_pd.get_algorithm() == alg
    assert fwd_pd.get_strides() == list(s) and fwd_pd.get_dilations() == list(d)
    assert fwd_pd.get_padding_l() == list(pl) and fwd_pd.get_padding_r() == list(pr)
    assert fwd_pd.bias_desc() == b_md
    x_mem, w_mem, b_mem, y_mem = put(engine, x, src_md), put(engine, wt, w_md), put(engine, b), empty(engine, dst_md)
    run(fwd_cls(fwd_pd), stream, {dnnl.ARG_SRC: x_mem, dnnl.ARG_WEIGHTS: w_mem, dnnl.ARG_BIAS: b_mem,
                                  dnnl.ARG_DST: y_mem})
    assert_close(get(y_mem), ref(x, wt, b, s, pl, pr, d), dt=dt)

    dy_mem, dx_mem = put(engine, dy, dst_md), empty(engine, src_md)
    bwd_data_pd = bwd_data_cls.primitive_desc(engine, alg, src_md, w_md, dst_md, list(s), list(d), list(pl),
                                              list(pr), fwd_pd)
    assert bwd_data_pd.diff_src_desc() == src_md and bwd_data_pd.diff_dst_desc() == dst_md
    run(bwd_data_cls(bwd_data_pd), stream, {dnnl.ARG_DIFF_DST: dy_mem, dnnl.ARG_WEIGHTS: w_mem,
                                            dnnl.ARG_DIFF_SRC: dx_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: ref(v, wt, b, s, pl, pr, d), x, dy), dt=dt)

    dw_mem, db_mem = empty(engine, dw_md), empty(engine, b_md)
    bwd_w_pd = bwd_weights_cls.primitive_desc(engine, alg, src_md, dw_md, b_md, dst_md, list(s), list(d),
                                              list(pl), list(pr), fwd_pd)
    assert bwd_w_pd.diff_weights_desc() == dw_md and bwd_w_pd.diff_bias_desc() == b_md
    run(bwd_weights_cls(bwd_w_pd), stream, {dnnl.ARG_SRC: x_mem, dnnl.ARG_DIFF_DST: dy_mem,
                                            dnnl.ARG_DIFF_WEIGHTS: dw_mem, dnnl.ARG_DIFF_BIAS: db_mem})
    assert_close(get(dw_mem), numeric_grad(lambda v: ref(x, v, b, s, pl, pr, d), wt, dy), dt=dt)
    assert_close(get(db_mem), dy.sum(axis=(0, 2, 3)), dt=dt)


def test_convolution_backward_without_dilation_and_bias(engine, stream):
    """The C++ overloads without dilates and without bias."""
    rng = np.random.default_rng(8)
    x, wt, dy = random(rng, (1, 2, 5, 5)), random(rng, (3, 2, 3, 3)), random(rng, (1, 3, 3, 3))
    s, p, d = [1, 1], [0, 0], [0, 0]
    src_md, w_md, dst_md = desc(x.shape), desc(wt.shape), desc(dy.shape)
    fwd_pd = dnnl.convolution_forward.primitive_desc(engine, TRAINING, ALG.convolution_direct, src_md, w_md,
                                                     dst_md, s, p, p)
    assert fwd_pd.bias_desc().is_zero()
    bwd_pd = dnnl.convolution_backward_weights.primitive_desc(engine, ALG.convolution_direct, src_md, w_md,
                                                              dst_md, s, p, p, fwd_pd)
    dw = empty(engine, w_md)
    run(dnnl.convolution_backward_weights(bwd_pd), stream,
        {dnnl.ARG_SRC: put(engine, x), dnnl.ARG_DIFF_DST: put(engine, dy), dnnl.ARG_DIFF_WEIGHTS: dw})
    assert_close(get(dw), numeric_grad(lambda v: conv2d(x, v, None, s, p, p, d), wt, dy))


@pytest.mark.parametrize("dt", ["f32"] + LOW)
def test_inner_product_forward_and_backward(engine, stream, dt):
    rng = np.random.default_rng(9)
    x, wt, b = random(rng, (3, 2, 2, 2), dt=dt), random(rng, (5, 2, 2, 2), dt=dt), random(rng, (5,))
    dy = random(rng, (3, 5), dt=dt)

    def ref(xv, wv):
        return xv.reshape(3, -1) @ wv.reshape(5, -1).T + b

    src_md, w_md, b_md, dst_md = desc(x.shape, dt=dt), desc(wt.shape, dt=dt), desc(b.shape), desc(dy.shape, dt=dt)
    dw_md = desc(wt.shape)  # weight gradients in f32 (mixed-precision training)
    fwd_pd = dnnl.inner_product_forward.primitive_desc(engine, TRAINING, src_md, w_md, b_md, dst_md)
    x_mem, w_mem, y_mem = put(engine, x, src_md), put(engine, wt, w_md), empty(engine, dst_md)
    run(dnnl.inner_product_forward(fwd_pd), stream,
        {dnnl.ARG_SRC: x_mem, dnnl.ARG_WEIGHTS: w_mem, dnnl.ARG_BIAS: put(engine, b), dnnl.ARG_DST: y_mem})
    assert_close(get(y_mem), ref(x, wt), dt=dt)

    dy_mem, dx_mem = put(engine, dy, dst_md), empty(engine, src_md)
    pd = dnnl.inner_product_backward_data.primitive_desc(engine, src_md, w_md, dst_md, fwd_pd)
    run(dnnl.inner_product_backward_data(pd), stream,
        {dnnl.ARG_DIFF_DST: dy_mem, dnnl.ARG_WEIGHTS: w_mem, dnnl.ARG_DIFF_SRC: dx_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: ref(v, wt), x, dy), dt=dt)

    dw_mem, db_mem = empty(engine, dw_md), empty(engine, b_md)
    pd_w = dnnl.inner_product_backward_weights.primitive_desc(engine, src_md, dw_md, b_md, dst_md, fwd_pd)
    run(dnnl.inner_product_backward_weights(pd_w), stream,
        {dnnl.ARG_SRC: x_mem, dnnl.ARG_DIFF_DST: dy_mem, dnnl.ARG_DIFF_WEIGHTS: dw_mem,
         dnnl.ARG_DIFF_BIAS: db_mem})
    assert_close(get(dw_mem), numeric_grad(lambda v: ref(x, v), wt, dy), dt=dt)
    assert_close(get(db_mem), dy.sum(axis=0), dt=dt)


def test_backward_needs_a_forward_hint_of_its_own_family(engine):
    md = desc((1, 2, 4, 4))
    eltwise_pd = dnnl.eltwise_forward.primitive_desc(engine, TRAINING, ALG.eltwise_relu, md, md)
    with pytest.raises(TypeError, match="hint_fwd_pd"):
        dnnl.pooling_backward.primitive_desc(engine, ALG.pooling_max, md, md, [1, 1], [1, 1], [0, 0], [0, 0],
                                             [0, 0], eltwise_pd)  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# elementwise-like


def _elu(x, a):
    return np.where(x > 0, x, a * (np.exp(x) - 1))


def _soft_relu(x, a):
    return np.log1p(np.exp(a * x)) / a


ELTWISE = {  # algorithm name: (alpha, beta, reference, input range)
    "eltwise_relu": (0.1, 0.0, lambda x, a, b: np.where(x > 0, x, a * x), (-2, 2)),
    "eltwise_tanh": (0.0, 0.0, lambda x, a, b: np.tanh(x), (-2, 2)),
    "eltwise_elu": (0.5, 0.0, lambda x, a, b: _elu(x, a), (-2, 2)),
    "eltwise_square": (0.0, 0.0, lambda x, a, b: x * x, (-2, 2)),
    "eltwise_abs": (0.0, 0.0, lambda x, a, b: np.abs(x), (-2, 2)),
    "eltwise_sqrt": (0.0, 0.0, lambda x, a, b: np.sqrt(x), (0.2, 3)),
    "eltwise_linear": (2.0, 0.5, lambda x, a, b: a * x + b, (-2, 2)),
    "eltwise_soft_relu": (1.0, 0.0, lambda x, a, b: _soft_relu(x, a), (-2, 2)),
    "eltwise_logistic": (0.0, 0.0, lambda x, a, b: 1 / (1 + np.exp(-x)), (-2, 2)),
    "eltwise_exp": (0.0, 0.0, lambda x, a, b: np.exp(x), (-2, 2)),
    "eltwise_gelu_tanh": (0.0, 0.0, lambda x, a, b: 0.5 * x * (1 + np.tanh(
        math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), (-2, 2)),
    "eltwise_gelu_erf": (0.0, 0.0, lambda x, a, b: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
                         (-2, 2)),
    "eltwise_swish": (1.0, 0.0, lambda x, a, b: x / (1 + np.exp(-a * x)), (-2, 2)),
    "eltwise_log": (0.0, 0.0, lambda x, a, b: np.log(x), (0.2, 3)),
    "eltwise_clip": (-0.5, 0.7, lambda x, a, b: np.clip(x, a, b), (-2, 2)),
    "eltwise_pow": (1.5, 2.5, lambda x, a, b: a * x ** b, (0.2, 2)),
    "eltwise_mish": (0.0, 0.0, lambda x, a, b: x * np.tanh(np.log1p(np.exp(x))), (-2, 2)),
    "eltwise_hardswish": (1 / 6, 0.5, lambda x, a, b: x * np.clip(a * x + b, 0, 1), (-2, 2)),
    "eltwise_hardsigmoid": (1 / 6, 0.5, lambda x, a, b: np.clip(a * x + b, 0, 1), (-2, 2)),
    "eltwise_relu_use_dst_for_bwd": (0.1, 0.0, lambda x, a, b: np.where(x > 0, x, a * x), (-2, 2)),
    "eltwise_tanh_use_dst_for_bwd": (0.0, 0.0, lambda x, a, b: np.tanh(x), (-2, 2)),
    "eltwise_elu_use_dst_for_bwd": (0.5, 0.0, lambda x, a, b: _elu(x, a), (-2, 2)),
    "eltwise_sqrt_use_dst_for_bwd": (0.0, 0.0, lambda x, a, b: np.sqrt(x), (0.2, 3)),
    "eltwise_logistic_use_dst_for_bwd": (0.0, 0.0, lambda x, a, b: 1 / (1 + np.exp(-x)), (-2, 2)),
    "eltwise_exp_use_dst_for_bwd": (0.0, 0.0, lambda x, a, b: np.exp(x), (-2, 2)),
    "eltwise_clip_v2_use_dst_for_bwd": (-0.5, 0.7, lambda x, a, b: np.clip(x, a, b), (-2, 2)),
}


ELTWISE_LOW = ["eltwise_relu", "eltwise_tanh", "eltwise_gelu_erf", "eltwise_logistic_use_dst_for_bwd"]


@pytest.mark.parametrize("name,dt", [(n, "f32") for n in sorted(ELTWISE)]
                         + [(n, dt) for n in ELTWISE_LOW for dt in LOW])
def test_eltwise_forward_and_backward(engine, stream, name, dt):
    alpha, beta, f, (lo, hi) = ELTWISE[name]
    alg = getattr(ALG, name)
    rng = np.random.default_rng(10)
    x = random(rng, (2, 3, 4), lo, hi, away_from_zero=0.05)
    if "clip" in name:  # keep away from the kinks, where differences are meaningless
        x = np.where(np.abs(x - alpha) < 0.05, x + 0.1, x)
        x = np.where(np.abs(x - beta) < 0.05, x + 0.1, x)
    if "hard" in name:
        x = np.where(np.abs(np.abs(x) - 3) < 0.05, x + 0.1, x)
    x = rounded(x, dt)
    dy = random(rng, x.shape, dt=dt)
    md = desc(x.shape, dt=dt)
    fwd_pd = dnnl.eltwise_forward.primitive_desc(engine, TRAINING, alg, md, md, alpha, beta)
    assert fwd_pd.get_alpha() == pytest.approx(alpha) and fwd_pd.get_beta() == pytest.approx(beta)
    x_mem, y_mem = put(engine, x, md), empty(engine, md)
    run(dnnl.eltwise_forward(fwd_pd), stream, {dnnl.ARG_SRC: x_mem, dnnl.ARG_DST: y_mem})
    y = get(y_mem)
    assert_close(y, f(x, alpha, beta), dt=dt)

    use_dst = name.endswith("use_dst_for_bwd")
    bwd_pd = dnnl.eltwise_backward.primitive_desc(engine, alg, md, md, md, alpha, beta, fwd_pd)
    dx_mem = empty(engine, md)
    data = {dnnl.ARG_DST: y_mem} if use_dst else {dnnl.ARG_SRC: x_mem}
    run(dnnl.eltwise_backward(bwd_pd), stream, {**data, dnnl.ARG_DIFF_DST: put(engine, dy, md),
                                                dnnl.ARG_DIFF_SRC: dx_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: f(v, alpha, beta), x, dy, h=1e-5), rtol=5e-4, dt=dt)


def test_eltwise_backward_refuses_the_unused_data_argument(engine, stream):
    """A *_use_dst_for_bwd backward reads ARG_DST, not ARG_SRC (oneDNN's arg_usage)."""
    md = desc((4,))
    alg = ALG.eltwise_relu_use_dst_for_bwd
    fwd_pd = dnnl.eltwise_forward.primitive_desc(engine, TRAINING, alg, md, md)
    bwd = dnnl.eltwise_backward(dnnl.eltwise_backward.primitive_desc(engine, alg, md, md, md, fwd_pd))
    mems = {arg: empty(engine, md) for arg in (dnnl.ARG_SRC, dnnl.ARG_DIFF_DST, dnnl.ARG_DIFF_SRC)}
    with pytest.raises(dnnl.error, match="missing argument ARG_DST"):
        bwd.execute(stream, mems)


@pytest.mark.parametrize("log,dt", [(False, "f32"), (True, "f32")] + [(False, dt) for dt in LOW],
                         ids=["accurate", "log"] + [f"accurate-{dt}" for dt in LOW])
def test_softmax_backward(engine, stream, log, dt):
    rng = np.random.default_rng(11)
    x, dy = random(rng, (3, 8), dt=dt), random(rng, (3, 8), dt=dt)
    alg = ALG.softmax_log if log else ALG.softmax_accurate
    md = desc(x.shape, dt=dt)
    fwd_pd = dnnl.softmax_forward.primitive_desc(engine, TRAINING, alg, md, md, 1)
    y_mem = empty(engine, md)
    run(dnnl.softmax_forward(fwd_pd), stream, {dnnl.ARG_SRC: put(engine, x, md), dnnl.ARG_DST: y_mem})
    assert_close(get(y_mem), softmax(x, 1, log), dt=dt)
    bwd_pd = dnnl.softmax_backward.primitive_desc(engine, alg, md, md, md, 1, fwd_pd)
    assert bwd_pd.get_axis() == 1
    dx_mem = empty(engine, md)
    run(dnnl.softmax_backward(bwd_pd), stream,
        {dnnl.ARG_DST: y_mem, dnnl.ARG_DIFF_DST: put(engine, dy, md), dnnl.ARG_DIFF_SRC: dx_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: softmax(v, 1, log), x, dy, h=1e-5), dt=dt)


@pytest.mark.parametrize("dt", ["f32"] + LOW)
def test_prelu_forward_and_backward(engine, stream, dt):
    rng = np.random.default_rng(12)
    x, wt = random(rng, (2, 3, 2, 2), away_from_zero=0.05, dt=dt), random(rng, (1, 3, 1, 1), dt=dt)
    dy = random(rng, x.shape, dt=dt)

    def ref(xv, wv):
        return np.where(xv > 0, xv, wv * xv)

    x_md, w_md = desc(x.shape, dt=dt), desc(wt.shape, dt=dt)
    fwd_pd = dnnl.prelu_forward.primitive_desc(engine, TRAINING, x_md, w_md, x_md)
    x_mem, w_mem, y_mem = put(engine, x, x_md), put(engine, wt, w_md), empty(engine, x_md)
    run(dnnl.prelu_forward(fwd_pd), stream, {dnnl.ARG_SRC: x_mem, dnnl.ARG_WEIGHTS: w_mem, dnnl.ARG_DST: y_mem})
    assert_close(get(y_mem), ref(x, wt), dt=dt)
    bwd_pd = dnnl.prelu_backward.primitive_desc(engine, x_md, w_md, x_md, w_md, x_md, fwd_pd)
    dx_mem, dw_mem = empty(engine, x_md), empty(engine, w_md)
    run(dnnl.prelu_backward(bwd_pd), stream,
        {dnnl.ARG_SRC: x_mem, dnnl.ARG_WEIGHTS: w_mem, dnnl.ARG_DIFF_DST: put(engine, dy, x_md),
         dnnl.ARG_DIFF_SRC: dx_mem, dnnl.ARG_DIFF_WEIGHTS: dw_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: ref(v, wt), x, dy), dt=dt)
    assert_close(get(dw_mem), numeric_grad(lambda v: ref(x, v), wt, dy), dt=dt)


@pytest.mark.parametrize("axis,group,dt", [(1, 2, "f32"), (1, 3, "f32"), (2, 2, "f32")]
                         + [(1, 3, dt) for dt in LOW])
def test_shuffle_forward_and_backward(engine, stream, axis, group, dt):
    rng = np.random.default_rng(13)
    x = random(rng, (2, 6, 4), dt=dt)
    dy = random(rng, x.shape, dt=dt)
    md = desc(x.shape, dt=dt)
    fwd_pd = dnnl.shuffle_forward.primitive_desc(engine, TRAINING, md, md, axis, group)
    assert fwd_pd.get_axis() == axis and fwd_pd.get_group_size() == group
    y_mem = empty(engine, md)
    run(dnnl.shuffle_forward(fwd_pd), stream, {dnnl.ARG_SRC: put(engine, x, md), dnnl.ARG_DST: y_mem})
    np.testing.assert_array_equal(get(y_mem), shuffle(x, axis, group))
    bwd_pd = dnnl.shuffle_backward.primitive_desc(engine, md, md, axis, group, fwd_pd)
    dx_mem = empty(engine, md)
    run(dnnl.shuffle_backward(bwd_pd), stream, {dnnl.ARG_DIFF_DST: put(engine, dy, md), dnnl.ARG_DIFF_SRC: dx_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: shuffle(v, axis, group), x, dy))


# --------------------------------------------------------------------------
# pooling, resampling, reduction


POOLING = ["pooling_max", "pooling_avg_include_padding", "pooling_avg_exclude_padding"]


@pytest.mark.parametrize("name,dt", [(n, "f32") for n in POOLING]
                         + [(n, dt) for n in ("pooling_max", "pooling_avg_exclude_padding") for dt in LOW])
def test_pooling_backward(engine, stream, name, dt):
    alg = getattr(ALG, name)
    rng = np.random.default_rng(14)
    x = random(rng, (2, 2, 5, 5), dt=dt)
    k, s, pl, pr = (3, 3), (2, 2), (1, 1), (1, 1)
    dy = random(rng, (2, 2, 3, 3), dt=dt)
    src_md, dst_md = desc(x.shape, dt=dt), desc(dy.shape, dt=dt)
    fwd_pd = dnnl.pooling_forward.primitive_desc(engine, TRAINING, alg, src_md, dst_md, list(s), list(k),
                                                 [0, 0], list(pl), list(pr))
    assert fwd_pd.get_kernel() == list(k)
    y_mem = empty(engine, dst_md)
    args = {dnnl.ARG_SRC: put(engine, x, src_md), dnnl.ARG_DST: y_mem}
    ws_md = fwd_pd.workspace_desc()
    assert ws_md.is_zero() == (alg != ALG.pooling_max)
    if not ws_md.is_zero():
        args[dnnl.ARG_WORKSPACE] = empty(engine, ws_md)
    run(dnnl.pooling_forward(fwd_pd), stream, args)
    assert_close(get(y_mem), pool2d(x, alg, k, s, pl, pr), dt=dt)
    bwd_pd = dnnl.pooling_backward.primitive_desc(engine, alg, src_md, dst_md, list(s), list(k), [0, 0],
                                                  list(pl), list(pr), fwd_pd)
    assert bwd_pd.workspace_desc() == ws_md
    dx_mem = empty(engine, src_md)
    bwd_args = {dnnl.ARG_DIFF_DST: put(engine, dy, dst_md), dnnl.ARG_DIFF_SRC: dx_mem}
    if not ws_md.is_zero():
        bwd_args[dnnl.ARG_WORKSPACE] = args[dnnl.ARG_WORKSPACE]
    run(dnnl.pooling_backward(bwd_pd), stream, bwd_args)
    assert_close(get(dx_mem), numeric_grad(lambda v: pool2d(v, alg, k, s, pl, pr), x, dy), dt=dt)


@pytest.mark.parametrize("name,out_hw,dt", [
    pytest.param(n, hw, "f32", id=f"{n}-{hw_id}") for n in ("resampling_nearest", "resampling_linear")
    for hw, hw_id in (((8, 6), "up"), ((3, 2), "down"))] + [
    pytest.param("resampling_linear", (8, 6), dt, id=f"resampling_linear-up-{dt}") for dt in LOW])
def test_resampling_forward_and_backward(engine, stream, name, out_hw, dt):
    alg = getattr(ALG, name)
    rng = np.random.default_rng(15)
    x = random(rng, (1, 2, 4, 3), dt=dt)
    dst_shape = (1, 2) + out_hw
    dy = random(rng, dst_shape, dt=dt)
    src_md, dst_md = desc(x.shape, dt=dt), desc(dst_shape, dt=dt)
    fwd_pd = dnnl.resampling_forward.primitive_desc(engine, TRAINING, alg, src_md, dst_md)
    assert fwd_pd.get_factors() == pytest.approx([out_hw[0] / 4, out_hw[1] / 3])
    y_mem = empty(engine, dst_md)
    run(dnnl.resampling_forward(fwd_pd), stream, {dnnl.ARG_SRC: put(engine, x, src_md), dnnl.ARG_DST: y_mem})
    assert_close(get(y_mem), resample2d(x, alg, *out_hw), dt=dt)
    bwd_pd = dnnl.resampling_backward.primitive_desc(engine, alg, src_md, dst_md, fwd_pd)
    dx_mem = empty(engine, src_md)
    run(dnnl.resampling_backward(bwd_pd), stream,
        {dnnl.ARG_DIFF_DST: put(engine, dy, dst_md), dnnl.ARG_DIFF_SRC: dx_mem})
    assert_close(get(dx_mem), numeric_grad(lambda v: resample2d(v, alg, *out_hw), x, dy), dt=dt)


def test_resampling_by_factors(engine, stream):
    x = f32(np.arange(12.0).reshape(1, 1, 3, 4))
    pd = dnnl.resampling_forward.primitive_desc(engine, TRAINING, ALG.resampling_nearest, [2.0, 2.0],
                                                desc(x.shape))
    assert pd.dst_desc().get_dims() == [1, 1, 6, 8]
    y_mem = empty(engine, pd.dst_desc())
    run(dnnl.resampling_forward(pd), stream, {dnnl.ARG_SRC: put(engine, x), dnnl.ARG_DST: y_mem})
    np.testing.assert_array_equal(get(y_mem), x.repeat(2, axis=2).repeat(2, axis=3))


REDUCTIONS = {  # algorithm name: reference over `axes` with p, eps
    "reduction_sum": lambda x, ax, p, e: x.sum(axis=ax, keepdims=True),
    "reduction_mean": lambda x, ax, p, e: x.mean(axis=ax, keepdims=True),
    "reduction_max": lambda x, ax, p, e: x.max(axis=ax, keepdims=True),
    "reduction_min": lambda x, ax, p, e: x.min(axis=ax, keepdims=True),
    "reduction_mul": lambda x, ax, p, e: x.prod(axis=ax, keepdims=True),
    "reduction_norm_lp_sum": lambda x, ax, p, e: (
        (np.abs(x) ** p).sum(axis=ax, keepdims=True) + e) ** (1 / p),
    "reduction_norm_lp_max": lambda x, ax, p, e: np.maximum(
        (np.abs(x) ** p).sum(axis=ax, keepdims=True), e) ** (1 / p),
    "reduction_norm_lp_power_p_sum": lambda x, ax, p, e: (np.abs(x) ** p).sum(axis=ax, keepdims=True) + e,
    "reduction_norm_lp_power_p_max": lambda x, ax, p, e: np.maximum(
        (np.abs(x) ** p).sum(axis=ax, keepdims=True), e),
}


@pytest.mark.parametrize("name,dt", [(n, "f32") for n in sorted(REDUCTIONS)]
                         + [(n, dt) for n in ("reduction_sum", "reduction_max") for dt in LOW])
def test_reduction(engine, stream, name, dt):
    rng = np.random.default_rng(16)
    x = random(rng, (2, 3, 4), 0.5, 1.5, dt=dt) * np.where(rng.random((2, 3, 4)) < 0.5, -1, 1)
    p, eps = 2.0, 0.25
    src_md = desc(x.shape, dt=dt)
    pd = dnnl.reduction.primitive_desc(engine, getattr(ALG, name), src_md, desc((2, 1, 1), dt=dt), p, eps)
    assert pd.get_p() == p and pd.get_epsilon() == eps
    y_mem = empty(engine, pd.dst_desc())
    run(dnnl.reduction(pd), stream, {dnnl.ARG_SRC: put(engine, x, src_md), dnnl.ARG_DST: y_mem})
    assert_close(get(y_mem), REDUCTIONS[name](x, (1, 2), p, eps), dt=dt)


# --------------------------------------------------------------------------
# normalizations


NORM_FLAGS = {
    "plain": NF.none,
    "scale_shift": NF.use_scale | NF.use_shift,
    "scale": NF.use_scale,
}


def _norm_case(kind, rng, dt):
    """Shapes, a float64 forward reference f(x, scale, shift), and the
    statistics shape, for one normalization family."""
    if kind == "batch":
        x = random(rng, (3, 2, 2, 2), dt=dt)

        def f(xv, sc, sh):
            return normalize(xv, (0, 2, 3), 1e-3, sc.reshape(1, -1, 1, 1), sh.reshape(1, -1, 1, 1))
        return x, (2,), (2,), f
    if kind == "layer":
        x = random(rng, (2, 3, 5), dt=dt)

        def f(xv, sc, sh):
            return normalize(xv, (2,), 1e-3, sc, sh)
        return x, (5,), (2, 3), f
    x = random(rng, (2, 4, 3), dt=dt)

    def f(xv, sc, sh):
        return group_norm(xv, 2, 1e-3, sc, sh)
    return x, (4,), (2, 2), f


@pytest.mark.parametrize("kind,flags_name,dt", [
    (k, f, "f32") for k in ("batch", "layer", "group") for f in sorted(NORM_FLAGS)] + [
    (k, "scale_shift", dt) for k in ("batch", "layer", "group") for dt in LOW])
def test_normalization_forward_and_backward(engine, stream, kind, flags_name, dt):
    flags = NORM_FLAGS[flags_name]
    rng = np.random.default_rng(17)
    x, ss_shape, stat_shape, f = _norm_case(kind, rng, dt)
    use_scale, use_shift = bool(flags & NF.use_scale), bool(flags & NF.use_shift)
    scale = random(rng, ss_shape, 0.5, 1.5) if use_scale else np.ones(ss_shape)
    shift = random(rng, ss_shape) if use_shift else np.zeros(ss_shape)
    dy = random(rng, x.shape, dt=dt)
    md = desc(x.shape, dt=dt)
    eps = 1e-3
    if kind == "batch":
        fwd_cls, bwd_cls = dnnl.batch_normalization_forward, dnnl.batch_normalization_backward
        fwd_pd = fwd_cls.primitive_desc(engine, TRAINING, md, md, eps, flags)
        bwd_pd = bwd_cls.primitive_desc(engine, BACKWARD, md, md, md, eps, flags, fwd_pd)
    elif kind == "layer":
        fwd_cls, bwd_cls = dnnl.layer_normalization_forward, dnnl.layer_normalization_backward
        stat_md = desc(stat_shape)
        fwd_pd = fwd_cls.primitive_desc(engine, TRAINING, md, md, stat_md, eps, flags)
        bwd_pd = bwd_cls.primitive_desc(engine, BACKWARD, md, md, md, stat_md, eps, flags, fwd_pd)
    else:
        fwd_cls, bwd_cls = dnnl.group_normalization_forward, dnnl.group_normalization_backward
        fwd_pd = fwd_cls.primitive_desc(engine, TRAINING, md, md, 2, eps, flags)
        assert_unsupported("group_normalization_backward", lambda: bwd_cls.primitive_desc(
            engine, BACKWARD, md, md, md, 2, eps, flags, fwd_pd))
        bwd_pd = None
        assert fwd_pd.get_group_size() == 2
    assert fwd_pd.get_flags() == flags and fwd_pd.get_epsilon() == pytest.approx(eps)
    assert list(fwd_pd.mean_desc().get_dims()) == list(stat_shape)

    x_mem, y_mem = put(engine, x, md), empty(engine, md)
    mean_mem, var_mem = empty(engine, fwd_pd.mean_desc()), empty(engine, fwd_pd.variance_desc())
    args = {dnnl.ARG_SRC: x_mem, dnnl.ARG_DST: y_mem, dnnl.ARG_MEAN: mean_mem, dnnl.ARG_VARIANCE: var_mem}
    ss_md = desc(ss_shape)
    if use_scale:
        args[dnnl.ARG_SCALE] = put(engine, scale, ss_md)
    if use_shift:
        args[dnnl.ARG_SHIFT] = put(engine, shift, ss_md)
    run(fwd_cls(fwd_pd), stream, args)
    y_ref, mean_ref, var_ref = f(x, scale, shift)
    assert_close(get(y_mem), y_ref, dt=dt)
    assert_close(get(mean_mem), mean_ref.reshape(stat_shape), dt=dt)
    assert_close(get(var_mem), var_ref.reshape(stat_shape), dt=dt)

    if bwd_pd is None:
        return
    dx_mem = empty(engine, md)
    bwd_args = {dnnl.ARG_SRC: x_mem, dnnl.ARG_MEAN: mean_mem, dnnl.ARG_VARIANCE: var_mem,
                dnnl.ARG_DIFF_DST: put(engine, dy, md), dnnl.ARG_DIFF_SRC: dx_mem}
    if use_scale:
        bwd_args[dnnl.ARG_SCALE] = args[dnnl.ARG_SCALE]
        bwd_args[dnnl.ARG_DIFF_SCALE] = empty(engine, ss_md)
    if use_shift:
        bwd_args[dnnl.ARG_DIFF_SHIFT] = empty(engine, ss_md)
    run(bwd_cls(bwd_pd), stream, bwd_args)
    assert_close(get(dx_mem), numeric_grad(lambda v: f(v, scale, shift)[0], x, dy), rtol=1e-3, dt=dt)
    if use_scale:
        assert_close(get(bwd_args[dnnl.ARG_DIFF_SCALE]),
                     numeric_grad(lambda v: f(x, v, shift)[0], scale, dy), rtol=1e-3, dt=dt)
    if use_shift:
        assert_close(get(bwd_args[dnnl.ARG_DIFF_SHIFT]),
                     numeric_grad(lambda v: f(x, scale, v)[0], shift, dy), rtol=1e-3, dt=dt)


def test_batch_normalization_backward_data(engine, stream):
    """prop_kind.backward_data: diff_src only. oneDNN's argument usage still
    lists ARG_DIFF_SHIFT under use_shift, so it is passed as in C++."""
    rng = np.random.default_rng(18)
    x, dy = random(rng, (4, 2, 1, 1)), random(rng, (4, 2, 1, 1))
    md = desc(x.shape)
    flags = NF.use_shift
    fwd_pd = dnnl.batch_normalization_forward.primitive_desc(engine, TRAINING, md, md, 1e-3, flags)
    bwd_pd = dnnl.batch_normalization_backward.primitive_desc(engine, BACKWARD_DATA, md, md, md, 1e-3, flags,
                                                              fwd_pd)
    mean, var = empty(engine, fwd_pd.mean_desc()), empty(engine, fwd_pd.variance_desc())
    x_mem = put(engine, x)
    run(dnnl.batch_normalization_forward(fwd_pd), stream,
        {dnnl.ARG_SRC: x_mem, dnnl.ARG_DST: empty(engine, md), dnnl.ARG_MEAN: mean, dnnl.ARG_VARIANCE: var,
         dnnl.ARG_SHIFT: put(engine, np.zeros(2))})
    dx = empty(engine, md)
    run(dnnl.batch_normalization_backward(bwd_pd), stream,
        {dnnl.ARG_SRC: x_mem, dnnl.ARG_MEAN: mean, dnnl.ARG_VARIANCE: var, dnnl.ARG_DIFF_DST: put(engine, dy),
         dnnl.ARG_DIFF_SRC: dx, dnnl.ARG_DIFF_SHIFT: empty(engine, desc((2,)))})

    def f(v):
        return normalize(v, (0, 2, 3), 1e-3, 1.0, 0.0)[0]
    assert_close(get(dx), numeric_grad(f, x, dy), rtol=1e-3)


@pytest.mark.parametrize("name,dt", [("lrn_across_channels", "f32"), ("lrn_within_channel", "f32")]
                         + [("lrn_across_channels", dt) for dt in LOW])
def test_lrn_forward_and_backward(engine, stream, name, dt):
    alg = getattr(ALG, name)
    rng = np.random.default_rng(19)
    x, dy = random(rng, (2, 5, 4, 4), dt=dt), random(rng, (2, 5, 4, 4), dt=dt)
    size, alpha, beta, k = 3, 0.5, 0.75, 1.5
    md = desc(x.shape, dt=dt)
    fwd_pd = dnnl.lrn_forward.primitive_desc(engine, TRAINING, alg, md, md, size, alpha, beta, k)
    assert (fwd_pd.get_local_size(), fwd_pd.get_k()) == (size, pytest.approx(k))
    y_mem, x_mem = empty(engine, md), put(engine, x, md)
    args = {dnnl.ARG_SRC: x_mem, dnnl.ARG_DST: y_mem}
    ws_md = fwd_pd.workspace_desc()
    if not ws_md.is_zero():
        args[dnnl.ARG_WORKSPACE] = empty(engine, ws_md)
    run(dnnl.lrn_forward(fwd_pd), stream, args)
    assert_close(get(y_mem), lrn(x, alg, size, alpha, beta, k), dt=dt)
    bwd_pd = dnnl.lrn_backward.primitive_desc(engine, alg, md, md, md, size, alpha, beta, k, fwd_pd)
    dx_mem = empty(engine, md)
    bwd_args = {dnnl.ARG_SRC: x_mem, dnnl.ARG_DIFF_DST: put(engine, dy, md), dnnl.ARG_DIFF_SRC: dx_mem}
    if not ws_md.is_zero():
        bwd_args[dnnl.ARG_WORKSPACE] = args[dnnl.ARG_WORKSPACE]
    run(dnnl.lrn_backward(bwd_pd), stream, bwd_args)
    assert_close(get(dx_mem), numeric_grad(lambda v: lrn(v, alg, size, alpha, beta, k), x, dy), rtol=1e-3, dt=dt)


# --------------------------------------------------------------------------
# descriptor queries and implementations


def test_next_impl_walks_the_implementation_list(engine):
    md = desc((2, 16, 8, 8))
    pd = dnnl.eltwise_forward.primitive_desc(engine, TRAINING, ALG.eltwise_relu, md, md)
    names = [pd.impl_info_str()]
    while pd.next_impl():
        names.append(pd.impl_info_str())
    assert len(names) == len(set(names)), names
    assert pd.next_impl() is False
    assert pd.impl_info_str() == names[-1]


def test_typed_queries_answer_zero_where_a_family_has_none(engine):
    md = desc((2, 3))
    pd = dnnl.eltwise_forward.primitive_desc(engine, TRAINING, ALG.eltwise_relu, md, md)
    assert pd.get_kind() == dnnl.primitive_kind.eltwise
    assert pd.get_strides() == [] and pd.get_kernel() == []
    assert pd.get_direction() == dnnl.rnn_direction.undef
    assert pd.diff_src_desc().is_zero() and pd.mean_desc().is_zero()
    assert pd.get_primitive_attr().get_scratchpad_mode() == dnnl.scratchpad_mode.library
    assert pd.scratchpad_engine().get_kind() == engine.get_kind()


def test_concat_and_binary_keep_working_with_tags(engine, stream):
    """Family groups moved files: a smoke test of the data-movement group with blocked layouts."""
    rng = np.random.default_rng(20)
    a, b = random(rng, (1, 8, 2, 2)), random(rng, (1, 8, 2, 2))
    blocked = desc(a.shape, TAG.nChw8c)
    pd = dnnl.concat.primitive_desc(engine, 1, [blocked, desc(b.shape)])
    srcs = {dnnl.ARG_MULTIPLE_SRC: dnnl.memory(blocked, engine), dnnl.ARG_MULTIPLE_SRC + 1: put(engine, b)}
    reorder_pd = dnnl.reorder.primitive_desc(engine, desc(a.shape), engine, blocked)
    run(dnnl.reorder(reorder_pd), stream, {dnnl.ARG_FROM: put(engine, a), dnnl.ARG_TO: srcs[dnnl.ARG_MULTIPLE_SRC]})
    out = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.concat(pd), stream, {**srcs, dnnl.ARG_DST: out})
    plain = empty(engine, desc((1, 16, 2, 2)))
    run(dnnl.reorder(dnnl.reorder.primitive_desc(engine, pd.dst_desc(), engine, plain.get_desc())), stream,
        {dnnl.ARG_FROM: out, dnnl.ARG_TO: plain})
    np.testing.assert_array_equal(get(plain), np.concatenate([a, b], axis=1))


def test_allow_empty_gives_an_empty_descriptor_instead_of_an_error(engine):
    """As C++'s allow_empty: no implementation gives a descriptor that is
    false, whose queries raise instead of crashing."""
    md = desc((4, 2, 3))
    with pytest.raises(dnnl.unimplemented):
        dnnl.group_normalization_backward.primitive_desc(
            engine, BACKWARD, md, md, md, 2, 1e-3, NF.none,
            dnnl.group_normalization_forward.primitive_desc(engine, TRAINING, md, md, 2, 1e-3, NF.none))
    fwd = dnnl.group_normalization_forward.primitive_desc(engine, TRAINING, md, md, 2, 1e-3, NF.none)
    empty_pd = dnnl.group_normalization_backward.primitive_desc(
        engine, BACKWARD, md, md, md, 2, 1e-3, NF.none, fwd, allow_empty=True)
    assert not empty_pd and fwd
    with pytest.raises(dnnl.error):
        empty_pd.impl_info_str()
    with pytest.raises(dnnl.error):
        dnnl.group_normalization_backward(empty_pd)


def test_cpp_names_of_the_base_classes(engine, stream):
    md = desc((8,))
    pd = dnnl.eltwise_forward.primitive_desc(engine, TRAINING, ALG.eltwise_relu, md, md)
    assert dnnl.primitive_desc_base is dnnl.primitive_desc and isinstance(pd, dnnl.primitive_desc_base)
    assert dnnl.primitive.kind is dnnl.primitive_kind and pd.get_kind() == dnnl.primitive.kind.eltwise
    generic = dnnl.primitive(pd)  # C++'s primitive(const primitive_desc &)
    assert generic.get_kind() == dnnl.primitive.kind.eltwise
    x = np.array([-1.0, 2.0, -3.0, 4.0, 0.5, -0.5, 6.0, -7.0])
    y = empty(engine, md)
    run(generic, stream, {dnnl.ARG_SRC: put(engine, x), dnnl.ARG_DST: y})
    np.testing.assert_array_equal(get(y), np.maximum(x, 0))
    assert dnnl.query.exec_arg_md in list(dnnl.query) and len(dnnl.query) >= 50
    copy = dnnl.memory.desc(md)
    assert copy == md and copy is not md
    assert dnnl.memory.data_type_size(DT.f32) == 4 and dnnl.memory.data_type_size(DT.bf16) == 2


def test_binary_names_its_sources(engine):
    a, b = desc((2, 3)), desc((1, 3))
    pd = dnnl.binary.primitive_desc(engine, ALG.binary_add, a, b, a)
    assert pd.src0_desc() == a and pd.src1_desc() == b and pd.src2_desc().is_zero()


def test_reorder_convenience_forms(engine, stream):
    """C++'s reorder(src, dst[, attr]) and reorder.execute(stream, src, dst)."""
    x = np.arange(16.0).reshape(1, 16, 1, 1)
    src, blocked = put(engine, x), dnnl.memory(desc(x.shape, TAG.nChw8c), engine)
    back = empty(engine, desc(x.shape))
    dnnl.reorder(src, blocked).execute(stream, src, blocked)
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_SRC, 0)
    scaled = dnnl.reorder(blocked, back, attr)
    scaled.execute(stream, {dnnl.ARG_FROM: blocked, dnnl.ARG_TO: back,
                            dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: put(engine, np.array([2.0]))})
    stream.wait()
    np.testing.assert_array_equal(get(back), 2 * x)
    with pytest.raises(dnnl.invalid_arguments, match="missing argument ARG_ATTR_SCALES"):
        scaled.execute(stream, blocked, back)


def test_graph_namespace_has_the_cpp_aliases():
    g = dnnl.graph
    assert (g.engine, g.stream, g.fpmath_mode, g.status) == (dnnl.engine, dnnl.stream, dnnl.fpmath_mode,
                                                            dnnl.status)
    assert dnnl.rnn_flags.diff_weights_overwrite != dnnl.rnn_flags.undef
