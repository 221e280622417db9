"""Every primitive family of the binding, run for real and checked against NumPy.

f32 is checked with tight tolerances (exactly where the result is exact);
f16, bf16 and s8 run where oneDNN implements them, with references computed
from the values the device actually received (inputs rounded to the data
type first), so only the device's own rounding is tolerated. Post-ops
(eltwise relu, binary add with a broadcast input, sum), quantization
(scales, zero points), USM and buffer memory in one primitive, and the
user scratchpad mode are covered too.

Combinations oneDNN itself does not implement on this device are listed in
UNSUPPORTED and asserted to fail with ``dnnl.status.unimplemented``: the
test fails if that changes, in either direction.
"""

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import probe
from helpers import (ALG, DT, ELTWISE, INFERENCE, TAG, ProblemShown, assert_right,
                     implementation_here, oi, plain_tag, read_values, ref_softmax, refused_here, usm,
                     watch, workarounds_off, write_values)

NF = dnnl.normalization_flags
TRAINING = dnnl.prop_kind.forward_training

DTYPES = {"f32": DT.f32, "f16": DT.f16, "bf16": DT.bf16, "s8": DT.s8, "u8": DT.u8, "s32": DT.s32}
NAMES = {v: k for k, v in DTYPES.items()}
INT_RANGES = {"s8": (-128, 127), "u8": (0, 255), "s32": (-2**31, 2**31 - 1)}
FLOATS = ["f32", "f16", "bf16"]
ALL = FLOATS + ["s8"]

# Relative/absolute tolerances by the data type of the result (absolute
# ones are scaled by the reference's largest magnitude, at least 1).
TOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2, "s8": 0, "u8": 0, "s32": 0}

# What oneDNN answers "could not create a primitive descriptor ...
# (status: unimplemented)" for on this device. Keys name the primitive and the
# data-type configuration as the tests below spell them.
UNSUPPORTED = {
    ("batch_normalization", "s8", "statistics computed"):
        "int8 batch normalization is implemented only with use_global_stats",
    ("batch_normalization", "s8", "forward_training"):
        "int8 batch normalization has no forward_training implementation",
    ("pooling", "s8", "forward_training"):
        "int8 pooling has no forward_training implementation",
    ("inner_product", "s8", "s32 bias"):
        "int8 inner product takes f32/bf16/s8 bias but not s32 (matmul and "
        "convolution take s32)",
    # eltwise takes binary post-ops only (oneDNN's own check: "unsupported
    # post-ops", src/common/eltwise.cpp)
    ("eltwise post-op", "relu"): "eltwise accepts only binary post-ops",
    ("eltwise post-op", "sum"): "eltwise accepts only binary post-ops",
    ("eltwise post-op", "sum_binary_relu"): "eltwise accepts only binary post-ops",
}


# --------------------------------------------------------------------------
# helpers


def md(dims, dt, tag=None):
    return dnnl.memory.desc(list(dims), DTYPES[dt], tag if tag is not None else plain_tag(len(dims)))


def representable(x, dt):
    """The values `x` becomes in data type `dt`, as float64."""
    x = np.asarray(x, dtype=np.float64)
    if dt == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dt == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dt == "bf16":
        return dnnl.arrays.float32_from_bf16(dnnl.arrays.bf16_from_float32(x)).astype(np.float64)
    lo, hi = INT_RANGES[dt]
    return np.clip(np.rint(x), lo, hi)


def storage(x, dt):
    """`x` as the bits data type `dt` stores (for comparing raw contents)."""
    x = representable(x, dt)
    if dt == "bf16":
        return dnnl.arrays.bf16_from_float32(x)
    return x.astype(dnnl.arrays.numpy_dtype(DTYPES[dt]))


def rand(rng, shape, dt, lo=-2.0, hi=2.0):
    """Random values representable in `dt` (small integers for integer types)."""
    if dt in INT_RANGES:
        ilo, ihi = INT_RANGES[dt]
        return rng.integers(max(int(lo), ilo), min(int(hi), ihi) + 1, size=shape).astype(np.float64)
    return representable(rng.uniform(lo, hi, size=shape), dt)


def new_memory(engine, desc, kind="buffer"):
    if kind == "buffer":
        return dnnl.memory(desc, engine)
    return oi.make_memory(desc, engine, oi.memory_kind.usm)


def put(engine, x, dt, tag=None, kind="buffer"):
    """Memory holding `x` (already representable in dt) in a plain layout."""
    mem = new_memory(engine, md(np.shape(x), dt, tag), kind)
    write_values(mem, representable(x, dt))
    return mem


get = read_values


def run(prim, stream, args):
    prim.execute(stream, args)
    stream.wait()


def reorder_to(engine, stream, mem, desc):
    """`mem` reordered into `desc` (the same memory when the descriptors match)."""
    if mem.get_desc() == desc:
        return mem
    out = dnnl.memory(desc, engine)
    pd = dnnl.reorder.primitive_desc(engine, mem.get_desc(), engine, desc)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: mem, dnnl.ARG_TO: out})
    return out


def read_plain(engine, stream, mem):
    """Contents of memory of any layout, via a reorder to the plain one."""
    desc = mem.get_desc()
    plain = dnnl.memory.desc(desc.get_dims(), desc.get_data_type(), plain_tag(desc.get_ndims()))
    return get(reorder_to(engine, stream, mem, plain))


def assert_close(out, ref, dt):
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape
    if dt in INT_RANGES:
        np.testing.assert_array_equal(out, ref)
        return
    tol = TOL[dt]
    scale = max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)


def saturate(x, dt):
    """Result of converting float values to `dt` as oneDNN does (round, saturate)."""
    return representable(x, dt)


def make_pd(key, factory):
    """The primitive descriptor, or None after checking a listed unsupported
    combination is refused with status unimplemented."""
    if key in UNSUPPORTED:
        with pytest.raises(dnnl.error, match="could not create a (primitive )?descriptor") as info:
            factory()
        assert info.value.status == dnnl.status.unimplemented
        return None
    return factory()


def scalar_memory(engine, values, dt="f32"):
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    mem = dnnl.memory(md(values.shape, dt, TAG.a), engine)
    write_values(mem, representable(values, dt))
    return mem


# --------------------------------------------------------------------------
# post-ops shared by several primitives


POST_OPS = ["none", "relu", "binary_add", "sum", "sum_binary_relu"]


def build_post_ops(kind, rng, dst_shape, bcast_shape, dst_dt):
    """(attr, extra args builder, reference function, prefill of dst or None)."""
    attr = dnnl.primitive_attr()
    po = dnnl.post_ops()
    src1 = rand(rng, bcast_shape, "f32")
    prefill = None
    steps = []
    if kind in ("sum", "sum_binary_relu"):
        po.append_sum(0.5)
        prefill = rand(rng, dst_shape, dst_dt)
        steps.append(lambda acc: acc + 0.5 * prefill)
    if kind in ("binary_add", "sum_binary_relu"):
        index = po.len()
        po.append_binary(ALG.binary_add, md(bcast_shape, "f32"))
        steps.append(lambda acc: acc + src1)
        binary_index = index
    if kind in ("relu", "sum_binary_relu"):
        po.append_eltwise(ALG.eltwise_relu, 0.0, 0.0)
        steps.append(lambda acc: np.maximum(acc, 0.0))
    if kind != "none":
        attr.set_post_ops(po)
        assert attr.get_post_ops().len() == len(steps)

    def extra_args(engine):
        if "binary" not in kind:
            return {}
        return {dnnl.ARG_ATTR_MULTIPLE_POST_OP(binary_index) | dnnl.ARG_SRC_1: put(engine, src1, "f32")}

    def reference(acc):
        for step in steps:
            acc = step(acc)
        return acc

    return attr, extra_args, reference, prefill


# --------------------------------------------------------------------------
# matmul


def ref_matmul(src, wei, bias=None):
    out = np.matmul(src, wei)
    if bias is not None:
        out = out + bias
    return out


MATMUL_SHAPES = {
    "2d": ([5, 16], [16, 7]),
    "batched": ([2, 5, 16], [2, 16, 7]),
    "broadcast_weights": ([3, 4, 8], [1, 8, 6]),
}


@pytest.mark.parametrize("shape", list(MATMUL_SHAPES))
@pytest.mark.parametrize("with_bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("dt", ALL)
def test_matmul(engine, stream, dt, with_bias, shape):
    rng = np.random.default_rng(1)
    src_shape, wei_shape = MATMUL_SHAPES[shape]
    dst_shape = list(np.broadcast_shapes(tuple(src_shape[:-2]), tuple(wei_shape[:-2]))) + [src_shape[-2], wei_shape[-1]]
    dst_dt = "s32" if dt == "s8" else dt
    bias_dt = "s32" if dt == "s8" else dt
    src = rand(rng, src_shape, dt)
    wei = rand(rng, wei_shape, dt)
    bias_shape = [1] * (len(dst_shape) - 1) + [dst_shape[-1]]
    bias = rand(rng, bias_shape, bias_dt, -4, 4) if with_bias else None
    if with_bias:
        pd = dnnl.matmul.primitive_desc(engine, md(src_shape, dt), md(wei_shape, dt),
                                        md(bias_shape, bias_dt), md(dst_shape, dst_dt))
    else:
        pd = dnnl.matmul.primitive_desc(engine, md(src_shape, dt), md(wei_shape, dt), md(dst_shape, dst_dt))
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, src, dt), dnnl.ARG_WEIGHTS: put(engine, wei, dt), dnnl.ARG_DST: dst}
    if with_bias:
        assert pd.bias_desc() == md(bias_shape, bias_dt)
        args[dnnl.ARG_BIAS] = put(engine, bias, bias_dt)
    else:
        assert pd.bias_desc().is_zero()
    run(dnnl.matmul(pd), stream, args)
    assert_close(get(dst), saturate(ref_matmul(src, wei, bias), dst_dt), dst_dt)


@pytest.mark.parametrize("post", POST_OPS)
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_matmul_post_ops(engine, stream, dt, post):
    rng = np.random.default_rng(2)
    M, K, N = 6, 12, 5
    src, wei = rand(rng, [M, K], dt), rand(rng, [K, N], dt)
    attr, extra, reference, prefill = build_post_ops(post, rng, [M, N], [1, N], dt)
    pd = dnnl.matmul.primitive_desc(engine, md([M, K], dt), md([K, N], dt), md([M, N], dt), attr)
    dst = put(engine, prefill, dt) if prefill is not None else dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, src, dt), dnnl.ARG_WEIGHTS: put(engine, wei, dt), dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.matmul(pd), stream, args)
    assert_close(get(dst), reference(src @ wei), dt)


@pytest.mark.parametrize("dst_dt", ["f32", "s8"])
def test_matmul_s8_scales(engine, stream, dst_dt):
    """dst = (src_scale * wei_scale[n] * (src @ wei)) / dst_scale, per-column
    weight scales (mask 1 << 1)."""
    rng = np.random.default_rng(3)
    M, K, N = 4, 16, 6
    src, wei = rand(rng, [M, K], "s8", -20, 20), rand(rng, [K, N], "s8", -20, 20)
    src_scale = 0.5
    wei_scales = 2.0 ** rng.integers(-3, 2, size=N)
    dst_scale = 4.0
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_SRC, 0)
    attr.set_scales_mask(dnnl.ARG_WEIGHTS, 1 << 1)
    if dst_dt == "s8":
        attr.set_scales_mask(dnnl.ARG_DST, 0)
    pd = dnnl.matmul.primitive_desc(engine, md([M, K], "s8"), md([K, N], "s8"), md([M, N], dst_dt), attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {
        dnnl.ARG_SRC: put(engine, src, "s8"),
        dnnl.ARG_WEIGHTS: put(engine, wei, "s8"),
        dnnl.ARG_DST: dst,
        dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: scalar_memory(engine, src_scale),
        dnnl.ARG_ATTR_SCALES | dnnl.ARG_WEIGHTS: scalar_memory(engine, wei_scales),
    }
    ref = src_scale * wei_scales * (src @ wei)
    if dst_dt == "s8":
        args[dnnl.ARG_ATTR_SCALES | dnnl.ARG_DST] = scalar_memory(engine, dst_scale)
        ref = saturate(ref / dst_scale, "s8")
    run(dnnl.matmul(pd), stream, args)
    out = get(dst)
    if dst_dt == "f32":
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=0)
    else:
        np.testing.assert_array_equal(out, ref)
    assert not np.all(out == 0)


def test_matmul_u8_zero_point(engine, stream):
    """dst = (src - zp) @ wei with a u8 source and a common s32 zero point."""
    rng = np.random.default_rng(4)
    M, K, N = 3, 8, 5
    src, wei = rand(rng, [M, K], "u8", 0, 30), rand(rng, [K, N], "s8", -10, 10)
    zp = 7
    attr = dnnl.primitive_attr()
    attr.set_zero_points_mask(dnnl.ARG_SRC, 0)
    pd = dnnl.matmul.primitive_desc(engine, md([M, K], "u8"), md([K, N], "s8"), md([M, N], "s32"), attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.matmul(pd), stream, {
        dnnl.ARG_SRC: put(engine, src, "u8"),
        dnnl.ARG_WEIGHTS: put(engine, wei, "s8"),
        dnnl.ARG_DST: dst,
        dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_SRC: scalar_memory(engine, zp, "s32"),
    })
    np.testing.assert_array_equal(get(dst), (src - zp) @ wei)


def test_matmul_fpmath_bf16(engine, stream):
    """f32 matmul allowed to compute in bf16: within bf16 accuracy of f32."""
    rng = np.random.default_rng(5)
    src, wei = rand(rng, [8, 32], "f32"), rand(rng, [32, 8], "f32")
    attr = dnnl.primitive_attr()
    attr.set_fpmath_mode(dnnl.fpmath_mode.bf16)
    assert attr.get_fpmath_mode() == dnnl.fpmath_mode.bf16
    pd = dnnl.matmul.primitive_desc(engine, md([8, 32], "f32"), md([32, 8], "f32"), md([8, 8], "f32"), attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.matmul(pd), stream, {dnnl.ARG_SRC: put(engine, src, "f32"),
                                  dnnl.ARG_WEIGHTS: put(engine, wei, "f32"), dnnl.ARG_DST: dst})
    ref = src @ wei
    np.testing.assert_allclose(get(dst), ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


@pytest.mark.parametrize("src_kind", ["device", "shared", "host", "allocate"])
def test_matmul_usm_and_buffer_memory(engine, stream, cl_context, cl_device, src_kind):
    """src in USM (user allocation of each kind, or oneDNN's), weights in a
    buffer, bias in oneDNN-allocated USM, dst in a user shared allocation."""
    rng = np.random.default_rng(6)
    M, K, N = 4, 10, 6
    src, wei, bias = rand(rng, [M, K], "f32"), rand(rng, [K, N], "f32"), rand(rng, [1, N], "f32")
    src_desc, wei_desc, bias_desc, dst_desc = md([M, K], "f32"), md([K, N], "f32"), md([1, N], "f32"), md([M, N], "f32")
    allocations = []
    if src_kind == "allocate":
        src_mem = oi.make_memory(src_desc, engine, oi.memory_kind.usm)
    else:
        alloc = usm.allocation(cl_context, src_desc.get_size(), kind=src_kind, device=cl_device)
        allocations.append(alloc)
        src_mem = oi.make_memory(src_desc, engine, oi.memory_kind.usm, alloc.ptr)
        assert src_mem.get_data_handle() == alloc.ptr
    dnnl.arrays.write(src_mem, src.astype(np.float32))
    wei_mem = oi.make_memory(wei_desc, engine, oi.memory_kind.buffer)
    dnnl.arrays.write(wei_mem, wei.astype(np.float32))
    bias_mem = oi.make_memory(bias_desc, engine, oi.memory_kind.usm)
    dnnl.arrays.write(bias_mem, bias.astype(np.float32))
    dst_alloc = usm.allocation(cl_context, dst_desc.get_size(), kind="shared", device=cl_device)
    allocations.append(dst_alloc)
    dst_mem = oi.make_memory(dst_desc, engine, oi.memory_kind.usm, dst_alloc.ptr)
    assert oi.get_memory_kind(src_mem) == oi.memory_kind.usm
    assert oi.get_memory_kind(wei_mem) == oi.memory_kind.buffer
    assert oi.get_memory_kind(dst_mem) == oi.memory_kind.usm

    pd = dnnl.matmul.primitive_desc(engine, src_desc, wei_desc, bias_desc, dst_desc)
    run(dnnl.matmul(pd), stream, {dnnl.ARG_SRC: src_mem, dnnl.ARG_WEIGHTS: wei_mem,
                                  dnnl.ARG_BIAS: bias_mem, dnnl.ARG_DST: dst_mem})
    ref = src @ wei + bias
    assert_close(get(dst_mem), ref, "f32")
    # The user's shared allocation holds the result itself.
    assert_close(dst_alloc.as_array(np.float32, (M, N)).astype(np.float64), ref, "f32")


# --------------------------------------------------------------------------
# convolution


def conv_out(size, k, s, d, pl, pr):
    return (size + pl + pr - ((k - 1) * (d + 1) + 1)) // s + 1


def ref_conv(x, w, bias, strides, dilates, pad_l, pad_r):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad_l[0], pad_r[0]), (pad_l[1], pad_r[1])))
    oh = conv_out(h, kh, strides[0], dilates[0], pad_l[0], pad_r[0])
    ow = conv_out(wd, kw, strides[1], dilates[1], pad_l[1], pad_r[1])
    out = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * (dilates[0] + 1), j * (dilates[1] + 1)
            patch = xp[:, :, y0:y0 + strides[0] * (oh - 1) + 1:strides[0], x0:x0 + strides[1] * (ow - 1) + 1:strides[1]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    if bias is not None:
        out += bias.reshape(1, oc, 1, 1)
    return out


CONV_GEOMETRY = {
    "unit": ([1, 1], [0, 0], [0, 0], [0, 0]),
    "strided_padded": ([2, 2], [0, 0], [1, 1], [1, 0]),
    "dilated": ([1, 1], [1, 1], [1, 1], [1, 1]),
}


def conv_pd(engine, dt, src_shape, wei_shape, dst_shape, bias_dt, geometry, attr=None, dst_dt=None):
    strides, dilates, pad_l, pad_r = CONV_GEOMETRY[geometry]
    attr = attr or dnnl.primitive_attr()
    dst_dt = dst_dt or dt
    src_d, wei_d, dst_d = md(src_shape, dt, TAG.nchw), md(wei_shape, dt, TAG.any), md(dst_shape, dst_dt, TAG.any)
    tail = (strides, dilates, pad_l, pad_r) if geometry == "dilated" else (strides, pad_l, pad_r)
    if bias_dt is not None:
        return dnnl.convolution_forward.primitive_desc(
            engine, INFERENCE, ALG.convolution_direct, src_d, wei_d, md([wei_shape[0]], bias_dt, TAG.a), dst_d,
            *tail, attr)
    return dnnl.convolution_forward.primitive_desc(
        engine, INFERENCE, ALG.convolution_direct, src_d, wei_d, dst_d, *tail, attr)


def conv_shapes(geometry, n=2, c=3, hw=7, oc=4, k=3):
    strides, dilates, pad_l, pad_r = CONV_GEOMETRY[geometry]
    oh = conv_out(hw, k, strides[0], dilates[0], pad_l[0], pad_r[0])
    ow = conv_out(hw, k, strides[1], dilates[1], pad_l[1], pad_r[1])
    return [n, c, hw, hw], [oc, c, k, k], [n, oc, oh, ow]


@pytest.mark.parametrize("geometry", list(CONV_GEOMETRY))
@pytest.mark.parametrize("with_bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("dt", ALL)
def test_convolution(engine, stream, dt, with_bias, geometry):
    rng = np.random.default_rng(10)
    src_shape, wei_shape, dst_shape = conv_shapes(geometry)
    dst_dt = "s32" if dt == "s8" else dt
    bias_dt = ("s32" if dt == "s8" else dt) if with_bias else None
    x, w = rand(rng, src_shape, dt, -4, 4), rand(rng, wei_shape, dt, -4, 4)
    b = rand(rng, [wei_shape[0]], bias_dt, -4, 4) if with_bias else None
    pd = conv_pd(engine, dt, src_shape, wei_shape, dst_shape, bias_dt, geometry, dst_dt=dst_dt)
    assert pd.src_desc() == md(src_shape, dt, TAG.nchw)
    assert pd.dst_desc().get_dims() == dst_shape
    w_mem = reorder_to(engine, stream, put(engine, w, dt, TAG.oihw), pd.weights_desc())
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, dt, TAG.nchw), dnnl.ARG_WEIGHTS: w_mem, dnnl.ARG_DST: dst}
    if with_bias:
        args[dnnl.ARG_BIAS] = put(engine, b, bias_dt)
    run(dnnl.convolution_forward(pd), stream, args)
    ref = ref_conv(x, w, b, *CONV_GEOMETRY[geometry])
    assert_close(read_plain(engine, stream, dst), saturate(ref, dst_dt), dst_dt)


@pytest.mark.parametrize("post", POST_OPS)
def test_convolution_post_ops(engine, stream, post):
    rng = np.random.default_rng(11)
    src_shape, wei_shape, dst_shape = conv_shapes("strided_padded")
    x, w, b = rand(rng, src_shape, "f32"), rand(rng, wei_shape, "f32"), rand(rng, [wei_shape[0]], "f32")
    attr, extra, reference, prefill = build_post_ops(post, rng, dst_shape, [1, dst_shape[1], 1, 1], "f32")
    strides, dilates, pad_l, pad_r = CONV_GEOMETRY["strided_padded"]
    # Plain destination so that the sum post-op's prefill can be written directly.
    pd = dnnl.convolution_forward.primitive_desc(
        engine, INFERENCE, ALG.convolution_direct, md(src_shape, "f32"), md(wei_shape, "f32", TAG.any),
        md([wei_shape[0]], "f32"), md(dst_shape, "f32", TAG.nchw), strides, pad_l, pad_r, attr)
    dst = put(engine, prefill, "f32", TAG.nchw) if prefill is not None else dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, "f32"),
            dnnl.ARG_WEIGHTS: reorder_to(engine, stream, put(engine, w, "f32"), pd.weights_desc()),
            dnnl.ARG_BIAS: put(engine, b, "f32"), dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.convolution_forward(pd), stream, args)
    assert_close(get(dst), reference(ref_conv(x, w, b, strides, dilates, pad_l, pad_r)), "f32")


# --------------------------------------------------------------------------
# inner product


IP_SHAPES = {"2d": ([4, 12], [5, 12]), "4d": ([2, 3, 2, 2], [5, 3, 2, 2])}


def ip_pd(engine, src_shape, wei_shape, dt, bias_dt, dst_dt, attr=None):
    attr = attr or dnnl.primitive_attr()
    oc = wei_shape[0]
    src_d, wei_d = md(src_shape, dt), md(wei_shape, dt, TAG.any)
    dst_d = md([src_shape[0], oc], dst_dt, TAG.any)
    if bias_dt is None:
        return dnnl.inner_product_forward.primitive_desc(engine, INFERENCE, src_d, wei_d, dst_d, attr)
    return dnnl.inner_product_forward.primitive_desc(engine, INFERENCE, src_d, wei_d, md([oc], bias_dt), dst_d, attr)


def run_ip(engine, stream, dt, bias_dt, dst_dt, shape, key):
    rng = np.random.default_rng(20)
    src_shape, wei_shape = IP_SHAPES[shape]
    x, w = rand(rng, src_shape, dt, -4, 4), rand(rng, wei_shape, dt, -4, 4)
    b = rand(rng, [wei_shape[0]], bias_dt, -4, 4) if bias_dt else None
    pd = make_pd(key, lambda: ip_pd(engine, src_shape, wei_shape, dt, bias_dt, dst_dt))
    if pd is None:
        return
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, dt),
            dnnl.ARG_WEIGHTS: reorder_to(engine, stream, put(engine, w, dt), pd.weights_desc()),
            dnnl.ARG_DST: dst}
    if bias_dt:
        args[dnnl.ARG_BIAS] = put(engine, b, bias_dt)
    run(dnnl.inner_product_forward(pd), stream, args)
    ref = x.reshape(x.shape[0], -1) @ w.reshape(w.shape[0], -1).T
    if b is not None:
        ref = ref + b
    assert_close(read_plain(engine, stream, dst), saturate(ref, dst_dt), dst_dt)


@pytest.mark.parametrize("shape", list(IP_SHAPES))
@pytest.mark.parametrize("with_bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("dt", ALL)
def test_inner_product(engine, stream, dt, with_bias, shape):
    dst_dt = "s32" if dt == "s8" else dt
    bias_dt = ("f32" if dt == "s8" else dt) if with_bias else None
    run_ip(engine, stream, dt, bias_dt, dst_dt, shape, ("inner_product", dt))


@pytest.mark.parametrize("bias_dt", ["s32", "f32", "s8"])
def test_inner_product_s8_bias_types(engine, stream, bias_dt):
    run_ip(engine, stream, "s8", bias_dt, "s32", "2d", ("inner_product", "s8", f"{bias_dt} bias"))


@pytest.mark.parametrize("post", POST_OPS)
def test_inner_product_post_ops(engine, stream, post):
    rng = np.random.default_rng(21)
    N, IC, OC = 4, 12, 5
    x, w = rand(rng, [N, IC], "f32"), rand(rng, [OC, IC], "f32")
    attr, extra, reference, prefill = build_post_ops(post, rng, [N, OC], [1, OC], "f32")
    pd = dnnl.inner_product_forward.primitive_desc(engine, INFERENCE, md([N, IC], "f32"), md([OC, IC], "f32", TAG.any),
                                                   md([N, OC], "f32"), attr)
    dst = put(engine, prefill, "f32") if prefill is not None else dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, "f32"),
            dnnl.ARG_WEIGHTS: reorder_to(engine, stream, put(engine, w, "f32"), pd.weights_desc()),
            dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.inner_product_forward(pd), stream, args)
    assert_close(get(dst), reference(x @ w.T), "f32")


# --------------------------------------------------------------------------
# eltwise


ELTWISE_INT = ["relu", "linear"]  # oneDNN refuses other algorithms for integers


@pytest.mark.parametrize("dt,name", [(dt, name) for dt in FLOATS for name in ELTWISE]
                         + [("s8", name) for name in ELTWISE_INT])
def test_eltwise(engine, stream, dt, name):
    algorithm, alpha, beta, reference, (lo, hi) = ELTWISE[name]
    rng = np.random.default_rng(30)
    if dt == "s8":
        lo, hi = -100, 100  # linear saturates at both ends
    shape = [2, 3, 4, 5]
    x = rand(rng, shape, dt, lo, hi)
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, algorithm, md(shape, dt), md(shape, dt), alpha, beta)
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.eltwise_forward(pd), stream, {dnnl.ARG_SRC: put(engine, x, dt), dnnl.ARG_DST: dst})
    assert_close(get(dst), saturate(reference(x), dt), dt)


def test_eltwise_in_place(engine, stream):
    rng = np.random.default_rng(31)
    x = rand(rng, [4, 8], "f32")
    pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_tanh, md([4, 8], "f32"), md([4, 8], "f32"))
    mem = put(engine, x, "f32")
    run(dnnl.eltwise_forward(pd), stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})
    assert_close(get(mem), np.tanh(x), "f32")


@pytest.mark.parametrize("post", ["relu", "binary_add", "sum", "sum_binary_relu"])
def test_eltwise_post_ops(engine, stream, post):
    rng = np.random.default_rng(32)
    shape = [2, 3, 4, 4]
    x = rand(rng, shape, "f32")
    attr, extra, reference, prefill = build_post_ops(post, rng, shape, [1, 3, 1, 1], "f32")
    key = ("eltwise post-op", post)
    pd = make_pd(key, lambda: dnnl.eltwise_forward.primitive_desc(
        engine, INFERENCE, ALG.eltwise_linear, md(shape, "f32"), md(shape, "f32"), 2.0, -1.0, attr))
    if pd is None:
        return
    dst = put(engine, prefill, "f32") if prefill is not None else dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.eltwise_forward(pd), stream, args)
    assert_close(get(dst), reference(2.0 * x - 1.0), "f32")


# --------------------------------------------------------------------------
# binary

BINARY = {
    "add": (ALG.binary_add, np.add),
    "sub": (ALG.binary_sub, np.subtract),
    "mul": (ALG.binary_mul, np.multiply),
    "div": (ALG.binary_div, np.divide),
    "max": (ALG.binary_max, np.maximum),
    "min": (ALG.binary_min, np.minimum),
    "ge": (ALG.binary_ge, lambda a, b: (a >= b).astype(np.float64)),
    "lt": (ALG.binary_lt, lambda a, b: (a < b).astype(np.float64)),
}
BROADCASTS = {"same": [2, 3, 4, 4], "channel": [1, 3, 1, 1], "scalar": [1, 1, 1, 1], "spatial": [2, 1, 4, 4]}


@pytest.mark.parametrize("bcast", list(BROADCASTS))
@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dt", ALL)
def test_binary(engine, stream, dt, name, bcast):
    algorithm, reference = BINARY[name]
    rng = np.random.default_rng(40)
    shape, shape1 = [2, 3, 4, 4], BROADCASTS[bcast]
    lo, hi = (-60, 60) if dt == "s8" else (-2, 2)  # s8 add/sub/mul saturate
    a = rand(rng, shape, dt, lo, hi)
    b = rand(rng, shape1, dt, lo, hi)
    if name == "div":
        b = np.where(np.abs(b) < 0.25, 1.0, b) if dt != "s8" else np.where(b == 0, 3.0, b)
        b = representable(b, dt)
    if name in ("ge", "lt"):
        b.flat[0] = a.flat[0]  # one tie
    pd = dnnl.binary.primitive_desc(engine, algorithm, md(shape, dt), md(shape1, dt), md(shape, dt))
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.binary(pd), stream, {dnnl.ARG_SRC_0: put(engine, a, dt), dnnl.ARG_SRC_1: put(engine, b, dt),
                                  dnnl.ARG_DST: dst})
    assert_close(get(dst), saturate(reference(a, b), dt), dt)


def test_binary_mixed_layouts_and_types(engine, stream):
    """nchw f32 + nhwc bf16 -> nhwc f32."""
    rng = np.random.default_rng(41)
    shape = [2, 3, 4, 4]
    a, b = rand(rng, shape, "f32"), rand(rng, shape, "bf16")
    pd = dnnl.binary.primitive_desc(engine, ALG.binary_add, md(shape, "f32", TAG.nchw), md(shape, "bf16", TAG.nhwc),
                                    md(shape, "f32", TAG.nhwc))
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.binary(pd), stream, {dnnl.ARG_SRC_0: put(engine, a, "f32", TAG.nchw),
                                  dnnl.ARG_SRC_1: put(engine, b, "bf16", TAG.nhwc), dnnl.ARG_DST: dst})
    assert_close(get(dst), a + b, "f32")


def test_binary_select(engine, stream):
    rng = np.random.default_rng(42)
    shape = [3, 8]
    a, b = rand(rng, shape, "f32"), rand(rng, shape, "f32")
    cond = rng.integers(0, 2, size=shape).astype(np.int8)
    pd = dnnl.binary.primitive_desc(engine, ALG.binary_select, md(shape, "f32"), md(shape, "f32"),
                                    md(shape, "s8"), md(shape, "f32"))
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.binary(pd), stream, {dnnl.ARG_SRC_0: put(engine, a, "f32"), dnnl.ARG_SRC_1: put(engine, b, "f32"),
                                  dnnl.ARG_SRC_2: put(engine, cond, "s8"), dnnl.ARG_DST: dst})
    assert_close(get(dst), np.where(cond != 0, a, b), "f32")


@pytest.mark.parametrize("post", POST_OPS)
def test_binary_post_ops(engine, stream, post):
    rng = np.random.default_rng(43)
    shape = [2, 3, 4, 4]
    a, b = rand(rng, shape, "f32"), rand(rng, shape, "f32")
    attr, extra, reference, prefill = build_post_ops(post, rng, shape, [1, 3, 1, 1], "f32")
    pd = dnnl.binary.primitive_desc(engine, ALG.binary_mul, md(shape, "f32"), md(shape, "f32"), md(shape, "f32"), attr)
    dst = put(engine, prefill, "f32") if prefill is not None else dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC_0: put(engine, a, "f32"), dnnl.ARG_SRC_1: put(engine, b, "f32"), dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.binary(pd), stream, args)
    assert_close(get(dst), reference(a * b), "f32")


# --------------------------------------------------------------------------
# reorder

LAYOUTS = {
    "nchw_to_nhwc": ([2, 3, 4, 5], TAG.nchw, TAG.nhwc, (0, 2, 3, 1)),
    "nhwc_to_nchw": ([2, 3, 4, 5], TAG.nhwc, TAG.nchw, (0, 1, 2, 3)),
    "ab_to_ba": ([6, 7], TAG.ab, TAG.ba, (1, 0)),
    "ba_to_ab": ([6, 7], TAG.ba, TAG.ab, (0, 1)),
}


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_reorder_layout(engine, stream, layout, dt):
    """Logical values are kept and the destination's bytes are in its layout:
    read back through plain memory over the same cl_mem with permuted dims."""
    dims, src_tag, dst_tag, physical_order = LAYOUTS[layout]
    rng = np.random.default_rng(50)
    x = rand(rng, dims, dt, -50, 50)
    src = put(engine, x, dt, src_tag)
    dst = dnnl.memory(md(dims, dt, dst_tag), engine)
    pd = dnnl.reorder.primitive_desc(engine, src.get_desc(), engine, dst.get_desc())
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    np.testing.assert_array_equal(get(dst), x)
    physical_dims = [dims[i] for i in physical_order]
    raw = oi.make_memory(md(physical_dims, dt), engine, oi.get_mem_object(dst))
    np.testing.assert_array_equal(get(raw), np.transpose(x, physical_order))


def _reorder_of_strided_innermost(engine, stream, dims, src_strides, dst_strides):
    """A float32 reorder between views of `dims` with these strides
    (elements), each on a buffer of its own filled beforehand (the source
    with 1, 2, ..., the destination with -7): the destination buffer after
    it, and what it should hold."""
    import pyopencl as cl
    context = oi.get_mem_object(dnnl.memory(md([1], "f32"), engine)).context
    queue = cl.CommandQueue(context)
    extent = [1 + sum((n - 1) * s for n, s in zip(dims, st)) for st in (src_strides, dst_strides)]
    flat = np.arange(1, extent[0] + 1, dtype=np.float32)
    source = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flat)
    target = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * extent[1])
    cl.enqueue_fill_buffer(queue, target, np.float32(-7), 0, 4 * extent[1]).wait()
    src_desc = dnnl.memory.desc(dims, DT.f32, src_strides)
    dst_desc = dnnl.memory.desc(dims, DT.f32, dst_strides)
    pd = dnnl.reorder.primitive_desc(engine, src_desc, engine, dst_desc)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: oi.make_memory(src_desc, engine, source),
                                   dnnl.ARG_TO: oi.make_memory(dst_desc, engine, target)})
    got = np.empty(extent[1], np.float32)
    cl.enqueue_copy(queue, got, target).wait()
    expected = np.full(extent[1], -7, np.float32)
    view = np.lib.stride_tricks.as_strided
    view(expected, dims, [4 * s for s in dst_strides])[...] = view(flat, dims, [4 * s for s in src_strides])
    return got, expected


# (dims, source strides, destination strides): the innermost dimension of
# 16 elements with a stride of 2 (x[:, ::2] of a row of 32), where oneDNN
# picks ocl:custom.
_STRIDED_INNERMOST = [([8, 16], [32, 2], [16, 1]), ([1, 16], [32, 2], [16, 1]),
                      ([3, 16], [16, 1], [32, 2]),
                      # x.T of a 4 x 16 array into rows of 7: an innermost
                      # dimension of 4 and the next one not contiguous with it
                      ([16, 4], [1, 16], [7, 1])]


@pytest.mark.parametrize("dims,src_strides,dst_strides", _STRIDED_INNERMOST)
def test_reorder_custom_with_a_strided_innermost_dimension_is_refused(engine, dims, src_strides,
                                                                       dst_strides):
    """oneDNN's ocl:custom reorder reads and writes the innermost dimension
    as if its stride were 1 (its xb_to_xab_xba kernel indexes by the lane
    alone): refused naming the problem and the way around it."""
    refusal = refused_here("reorder-custom-innermost-stride", lambda: dnnl.reorder.primitive_desc(
        engine, dnnl.memory.desc(dims, DT.f32, src_strides), engine,
        dnnl.memory.desc(dims, DT.f32, dst_strides)))
    assert "binary" in str(refusal)


def test_reorder_with_a_strided_innermost_dimension_oneDNN_computes_right_is_taken(engine, stream):
    """Where oneDNN picks another implementation for a strided innermost
    dimension (ocl:ref for rows of 8 or 32), the reorder is made and right."""
    for dims, src_strides in (([8, 8], [16, 2]), ([8, 32], [64, 2])):
        got, expected = _reorder_of_strided_innermost(engine, stream, dims, src_strides,
                                                      [dims[1], 1])
        np.testing.assert_array_equal(got, expected)


def test_reorder_of_column_slices_is_taken(engine, stream):
    """Rows with gaps (x[:, :8] of rows of 16) in and out, which oneDNN's
    ocl:custom copies right (its pad_innermost kernel, through the rows'
    strides): taken, not refused as the transposes into such rows are."""
    for src_strides, dst_strides in (([8, 1], [16, 1]), ([16, 1], [8, 1])):
        got, expected = _reorder_of_strided_innermost(engine, stream, [4, 8], src_strides,
                                                      dst_strides)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dims,src_strides,dst_strides", _STRIDED_INNERMOST)
@watch("reorder-custom-innermost-stride", "ocl:custom reorder reads and writes the innermost "
       "dimension as if its stride were 1")
def test_reorder_custom_with_a_strided_innermost_dimension_raw_onednn(engine, stream, dims,
                                                                       src_strides, dst_strides):
    implementation_here("reorder-custom-innermost-stride", lambda: dnnl.reorder.primitive_desc(
        engine, dnnl.memory.desc(dims, DT.f32, src_strides), engine,
        dnnl.memory.desc(dims, DT.f32, dst_strides)))
    with workarounds_off("reorder-custom-innermost-stride"):
        got, expected = _reorder_of_strided_innermost(engine, stream, dims, src_strides, dst_strides)
    assert_right(got, expected, rtol=0, atol=0)


def _reduction_of_strided_source(engine, stream, src_strides, algorithm):
    """A float32 reduction over the last axis of a [1, 4, 4, 8] view with
    these strides (elements) on a buffer of its own (the gaps hold -12345):
    the implementation, the result and what it should be."""
    import pyopencl as cl
    context = oi.get_mem_object(dnnl.memory(md([1], "f32"), engine)).context
    dims = [1, 4, 4, 8]
    x = np.random.default_rng(17).uniform(-2, 2, dims).astype(np.float32)
    flat = np.full(1 + sum((n - 1) * s for n, s in zip(dims, src_strides)), -12345, np.float32)
    np.lib.stride_tricks.as_strided(flat, dims, [4 * s for s in src_strides])[...] = x
    source = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flat)
    src_desc = dnnl.memory.desc(dims, DT.f32, src_strides)
    dst_desc = dnnl.memory.desc([1, 4, 4, 1], DT.f32, dnnl.memory.format_tag.abcd)
    pd = dnnl.reduction.primitive_desc(engine, getattr(dnnl.algorithm, algorithm), src_desc,
                                       dst_desc, 0.0, 0.0)
    dst = dnnl.memory(dst_desc, engine)
    run(dnnl.reduction(pd), stream, {dnnl.ARG_SRC: oi.make_memory(src_desc, engine, source),
                                     dnnl.ARG_DST: dst})
    reduce = np.sum if algorithm == "reduction_sum" else np.max
    expected = reduce(x, axis=-1, keepdims=True)
    return pd.impl_info_str(), dnnl.arrays.read(dst).reshape(1, 4, 4, 1), expected


# Rows of 8 with gaps after each (rows of 16, or of 9): oneDNN 3.13 picks
# ocl:combined, which reads the source as if it were dense.
_GAPPED_REDUCTION_SOURCES = [[256, 64, 16, 1], [144, 36, 9, 1]]


@pytest.mark.parametrize("src_strides", _GAPPED_REDUCTION_SOURCES)
@pytest.mark.parametrize("algorithm", ["reduction_sum", "reduction_max"])
def test_reduction_of_a_gapped_source_takes_an_implementation_that_reads_it(engine, stream,
                                                                            src_strides, algorithm):
    """Known problem reduction-combined-strides: the binding steps past
    ocl:combined to an implementation that honours the strides."""
    impl, got, expected = _reduction_of_strided_source(engine, stream, src_strides, algorithm)
    assert not impl.startswith("ocl:combined"), impl
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("src_strides", _GAPPED_REDUCTION_SOURCES)
@watch("reduction-combined-strides", "ocl:combined reduction reads a source with gaps as if it were "
       "dense")
def test_reduction_of_a_gapped_source_raw_onednn(engine, stream, src_strides):
    with workarounds_off("reduction-combined-strides"):
        impl, got, expected = _reduction_of_strided_source(engine, stream, src_strides,
                                                           "reduction_sum")
    if not dnnl.known_problems.names("reduction-combined-strides", dnnl.primitive.kind.reduction, impl):
        pytest.skip(f"oneDNN picks {impl} here, which reduction-combined-strides does not name")
    assert_right(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("algorithm", ["reduction_sum", "reduction_max"])
@pytest.mark.xfail(dnnl.emulation.is_enabled(), strict=True, raises=dnnl.runtime_error,
                   reason="the emulated device cannot run oneDNN's ocl:atomic reduction: the "
                          "CPU runtime reports cl_ext_float_atomics but its compiler defines "
                          "none of the __opencl_c_ext_fp32_* features, so the kernel fails to "
                          "build (docs/emulation.md)")
def test_reduction_over_a_middle_axis(engine, stream, algorithm):
    dims = [2, 4, 4, 8]
    x = np.random.default_rng(5).uniform(-2, 2, dims).astype(np.float32)
    src_desc = dnnl.memory.desc(dims, DT.f32, TAG.abcd)
    dst_desc = dnnl.memory.desc([2, 1, 4, 8], DT.f32, TAG.abcd)
    pd = dnnl.reduction.primitive_desc(engine, getattr(dnnl.algorithm, algorithm), src_desc,
                                       dst_desc, 0.0, 0.0)
    src, dst = dnnl.memory(src_desc, engine), dnnl.memory(dst_desc, engine)
    dnnl.arrays.write(src, x)
    run(dnnl.reduction(pd), stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
    reduce = np.sum if algorithm == "reduction_sum" else np.max
    np.testing.assert_allclose(dnnl.arrays.read(dst).reshape(2, 1, 4, 8),
                               reduce(x, axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def _concat_into(engine, stream, sources, axis, dst_strides):
    """Float32 concat of views (dims, strides) along `axis` into a
    destination of `dst_strides` (its buffer filled with -7 first): the
    destination buffer after it, and what it should hold."""
    import pyopencl as cl
    context = oi.get_mem_object(dnnl.memory(md([1], "f32"), engine)).context
    queue = cl.CommandQueue(context)
    view = np.lib.stride_tricks.as_strided
    descs, mems, values = [], [], []
    for k, (dims, strides) in enumerate(sources):
        flat = np.arange(1 + sum((n - 1) * s for n, s in zip(dims, strides)), dtype=np.float32) + 100 * k
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flat)
        descs.append(dnnl.memory.desc(dims, DT.f32, strides))
        mems.append(oi.make_memory(descs[-1], engine, buffer))
        values.append(view(flat, dims, [4 * s for s in strides]).copy())
    whole = np.concatenate(values, axis)
    extent = 1 + sum((n - 1) * s for n, s in zip(whole.shape, dst_strides))
    target = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * extent)
    cl.enqueue_fill_buffer(queue, target, np.float32(-7), 0, 4 * extent).wait()
    dst_desc = dnnl.memory.desc(list(whole.shape), DT.f32, dst_strides)
    pd = dnnl.concat.primitive_desc(engine, dst_desc, axis, descs)
    args = {dnnl.ARG_DST: oi.make_memory(dst_desc, engine, target)}
    args.update({dnnl.ARG_MULTIPLE_SRC + i: m for i, m in enumerate(mems)})
    run(dnnl.concat(pd), stream, args)
    got = np.empty(extent, np.float32)
    cl.enqueue_copy(queue, got, target).wait()
    expected = np.full(extent, -7, np.float32)
    view(expected, whole.shape, [4 * s for s in dst_strides])[...] = whole
    return got, expected


# (sources, axis, destination strides) oneDNN 3.13.1 computes wrong: into a
# destination of innermost stride 2 (ocl:simple), transposed views into a
# dense destination and (16, 1) views of stride 16 along their dimension of
# one (ref:any, whose reorders into place are ocl:custom of rows of 7 and 2)
_WRONG_CONCATS = [([([4, 5], [5, 1]), ([4, 5], [5, 1])], 1, [20, 2]),
                  ([([16, 4], [1, 16]), ([16, 3], [1, 16])], 1, [7, 1]),
                  ([([16, 1], [1, 16]), ([16, 1], [1, 16])], 1, [2, 1])]


@pytest.mark.parametrize("sources,axis,dst_strides", _WRONG_CONCATS)
def test_concat_oneDNN_computes_wrong_is_refused(engine, sources, axis, dst_strides):
    dims = list(sources[0][0])
    dims[axis] = sum(d[axis] for d, _ in sources)
    # oneDNN's cache takes the (16, 1) sources of stride 16 along their
    # dimension of one for dense ones: a dense concat made earlier in the
    # process (ocl:simple, right for both) would serve this one
    capacity = dnnl.get_primitive_cache_capacity()
    dnnl.set_primitive_cache_capacity(0)
    dnnl.set_primitive_cache_capacity(capacity)
    def make():
        return dnnl.concat.primitive_desc(engine, dnnl.memory.desc(dims, DT.f32, dst_strides), axis,
                                          [dnnl.memory.desc(d, DT.f32, s) for d, s in sources])
    with dnnl.known_problems.disabled():
        impl = make().impl_info_str()
    problem = {"ocl:simple:reusable": "concat-simple-strided-dst",
               "ref:any": "reorder-custom-innermost-stride"}.get(impl)
    if problem is None:
        pytest.skip(f"oneDNN picks {impl} for this concat here")
    refused_here(problem, make)


def test_concat_of_strided_views_oneDNN_computes_right_is_taken(engine, stream):
    """Strided sources (ref:any, reordering them into a dense destination
    with ocl:ref) and a destination with gaps between rows (ocl:simple)."""
    for sources, axis, dst_strides in (([([4, 5], [10, 2]), ([4, 5], [5, 1])], 1, [10, 1]),
                                       ([([4, 5], [5, 1]), ([4, 5], [5, 1])], 1, [12, 1])):
        got, expected = _concat_into(engine, stream, sources, axis, dst_strides)
        np.testing.assert_array_equal(got, expected)


def test_concat_into_a_blocked_destination_through_a_temporary(engine, stream):
    """Channels of 8 and 8 into aBcd16b: the destination takes no piece at
    channel 8 (inside a block), so oneDNN's ref:any concatenates into a
    dense temporary destination and reorders it into place; the binding
    checks those reorders and takes it; the result is right."""
    rng = np.random.default_rng(57)
    parts = [rng.standard_normal((1, 8, 2, 2)).astype(np.float32) for _ in range(2)]
    dst_desc = dnnl.memory.desc([1, 16, 2, 2], DT.f32, TAG.aBcd16b)
    pd = dnnl.concat.primitive_desc(engine, dst_desc, 1, [md([1, 8, 2, 2], "f32")] * 2)
    dst = dnnl.memory(dst_desc, engine)
    run(dnnl.concat(pd), stream, {dnnl.ARG_DST: dst, dnnl.ARG_MULTIPLE_SRC: put(engine, parts[0], "f32"),
                                  dnnl.ARG_MULTIPLE_SRC + 1: put(engine, parts[1], "f32")})
    plain = dnnl.memory(md([1, 16, 2, 2], "f32"), engine)
    run(dnnl.reorder(dst, plain), stream, {dnnl.ARG_FROM: dst, dnnl.ARG_TO: plain})
    np.testing.assert_array_equal(get(plain), np.concatenate(parts, 1))


@pytest.mark.parametrize("sources,axis,dst_strides", _WRONG_CONCATS)
@watch("concat-simple-strided-dst and reorder-custom-innermost-stride", "ocl:simple concat writes a "
       "strided innermost destination as dense, and its ref:any reorders sources into place with "
       "ocl:custom kernels that misaddress them")
def test_concat_oneDNN_computes_wrong_raw_onednn(engine, stream, sources, axis, dst_strides):
    capacity = dnnl.get_primitive_cache_capacity()
    try:
        with workarounds_off("concat-simple-strided-dst", "reorder-custom-innermost-stride"):
            got, expected = _concat_into(engine, stream, sources, axis, dst_strides)
    finally:
        # oneDNN's cache takes a concat of (16, 1) sources of stride 16 along
        # their dimension of one for the dense one: its ref:any primitive
        # would serve later dense concats in this process
        dnnl.set_primitive_cache_capacity(0)
        dnnl.set_primitive_cache_capacity(capacity)
    assert_right(got, expected, rtol=0, atol=0)


def _inner_product_into(engine, stream, dst_strides):
    """A 4 x 10 by 6 x 10 float32 inner product into a destination of
    `dst_strides` (its buffer filled with -7): the buffer after it, and
    what it should hold."""
    import pyopencl as cl
    rng = np.random.default_rng(56)
    x = rng.standard_normal((4, 10)).astype(np.float32)
    w = rng.standard_normal((6, 10)).astype(np.float32)
    dst_desc = dnnl.memory.desc([4, 6], DT.f32, dst_strides)
    pd = dnnl.inner_product_forward.primitive_desc(engine, INFERENCE, md([4, 10], "f32"),
                                                   md([6, 10], "f32"), dst_desc)
    context = oi.get_mem_object(dnnl.memory(md([1], "f32"), engine)).context
    queue = cl.CommandQueue(context)
    extent = 1 + 3 * dst_strides[0] + 5 * dst_strides[1]
    target = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * extent)
    cl.enqueue_fill_buffer(queue, target, np.float32(-7), 0, 4 * extent).wait()
    run(dnnl.inner_product_forward(pd), stream,
        {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_WEIGHTS: put(engine, w, "f32"),
         dnnl.ARG_DST: oi.make_memory(dst_desc, engine, target)})
    got = np.empty(extent, np.float32)
    cl.enqueue_copy(queue, got, target).wait()
    expected = np.full(extent, -7, np.float32)
    np.lib.stride_tricks.as_strided(expected, (4, 6), [4 * s for s in dst_strides])[...] = x @ w.T
    return got, expected


@pytest.mark.parametrize("dst_strides", [[1, 4], [12, 2], [9, 1]])
def test_inner_product_into_a_strided_destination_is_refused(engine, dst_strides):
    refusal = refused_here("inner-product-dst-strides", lambda: dnnl.inner_product_forward.primitive_desc(
        engine, INFERENCE, md([4, 10], "f32"), md([6, 10], "f32"),
        dnnl.memory.desc([4, 6], DT.f32, dst_strides)))
    assert refusal.arguments == (dnnl.ARG_DST,)


@pytest.mark.parametrize("tag", ["AB16b16a", "Ab8a", "BA16a16b"])
def test_inner_product_into_a_blocked_destination_is_refused(engine, tag):
    """ocl:ref writes dst[mb * OC + oc] whatever the layout: blocked ones too."""
    refused_here("inner-product-dst-strides", lambda: dnnl.inner_product_forward.primitive_desc(
        engine, INFERENCE, md([4, 10], "f32"), md([6, 10], "f32"),
        dnnl.memory.desc([4, 6], DT.f32, getattr(TAG, tag))))


def test_inner_product_into_a_dense_destination(engine, stream):
    got, expected = _inner_product_into(engine, stream, [6, 1])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dst_strides", [[1, 4], [12, 2], [9, 1]])
@watch("inner-product-dst-strides", "ocl:ref inner product writes a strided destination as dense")
def test_inner_product_into_a_strided_destination_raw_onednn(engine, stream, dst_strides):
    implementation_here("inner-product-dst-strides", lambda: dnnl.inner_product_forward.primitive_desc(
        engine, INFERENCE, md([4, 10], "f32"), md([6, 10], "f32"),
        dnnl.memory.desc([4, 6], DT.f32, dst_strides)))
    with workarounds_off("inner-product-dst-strides"):
        got, expected = _inner_product_into(engine, stream, dst_strides)
    assert_right(got, expected, rtol=1e-5, atol=1e-5)


def test_reorder_from_memory_objects(engine, stream):
    rng = np.random.default_rng(51)
    x = rand(rng, [3, 5], "f32")
    src = put(engine, x, "f32", TAG.ab)
    dst = oi.make_memory(md([3, 5], "f32", TAG.ba), engine, oi.memory_kind.usm)
    pd = dnnl.reorder.primitive_desc(src, dst)
    assert pd.src_desc() == src.get_desc() and pd.dst_desc() == dst.get_desc()
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    np.testing.assert_array_equal(get(dst), x)


@pytest.mark.parametrize("src_dt,dst_dt", [("f32", "f16"), ("f16", "f32"), ("f32", "bf16"), ("bf16", "f32"),
                                           ("f16", "bf16"), ("s8", "f32"), ("u8", "s8"), ("s32", "f32")])
def test_reorder_data_type(engine, stream, src_dt, dst_dt):
    rng = np.random.default_rng(52)
    dims = [4, 6]
    raw = rng.uniform(-1000, 1000, size=dims) if src_dt == "f32" else rng.uniform(-3, 3, size=dims)
    if src_dt in INT_RANGES:
        raw = rng.integers(*INT_RANGES[src_dt] if src_dt != "s32" else (-10**6, 10**6), size=dims)
    x = representable(raw, src_dt)
    src = put(engine, x, src_dt)
    dst = dnnl.memory(md(dims, dst_dt), engine)
    run(dnnl.reorder(dnnl.reorder.primitive_desc(src, dst)), stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    out = dnnl.arrays.read(dst)
    # Conversions are exact (round to nearest even, saturating): compare bits.
    np.testing.assert_array_equal(out, storage(x, dst_dt))


@pytest.mark.parametrize("mask", [0, 1 << 1], ids=["common", "per_column"])
def test_reorder_f32_to_s8_with_scales(engine, stream, mask):
    """Quantization: dst = saturate(rne(src / dst_scale))."""
    rng = np.random.default_rng(53)
    dims = [4, 6]
    x = representable(rng.uniform(-80, 80, size=dims), "f32")
    scales = np.array([0.5]) if mask == 0 else 2.0 ** rng.integers(-2, 2, size=dims[1])
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_DST, mask)
    src, dst = put(engine, x, "f32"), dnnl.memory(md(dims, "s8"), engine)
    pd = dnnl.reorder.primitive_desc(engine, src.get_desc(), engine, dst.get_desc(), attr)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst,
                                   dnnl.ARG_ATTR_SCALES | dnnl.ARG_DST: scalar_memory(engine, scales)})
    ref = saturate(x / scales, "s8")
    assert ref.max() == 127 and ref.min() == -128  # saturation is exercised
    np.testing.assert_array_equal(get(dst), ref)


def test_reorder_s8_to_f32_with_scales(engine, stream):
    """Dequantization: dst = src * src_scale."""
    rng = np.random.default_rng(54)
    x = rand(rng, [5, 4], "s8", -128, 127)
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_SRC, 0)
    src, dst = put(engine, x, "s8"), dnnl.memory(md([5, 4], "f32"), engine)
    pd = dnnl.reorder.primitive_desc(src, dst, attr)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst,
                                   dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: scalar_memory(engine, 0.125)})
    np.testing.assert_array_equal(get(dst), x * 0.125)


def test_reorder_f32_to_u8_with_scale_and_zero_point(engine, stream):
    """dst = saturate(rne(src / scale) + zero_point)."""
    rng = np.random.default_rng(55)
    x = representable(rng.uniform(-40, 100, size=[3, 8]), "f32")
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_DST, 0)
    attr.set_zero_points_mask(dnnl.ARG_DST, 0)
    src, dst = put(engine, x, "f32"), dnnl.memory(md([3, 8], "u8"), engine)
    pd = dnnl.reorder.primitive_desc(src, dst, attr)
    run(dnnl.reorder(pd), stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst,
                                   dnnl.ARG_ATTR_SCALES | dnnl.ARG_DST: scalar_memory(engine, 0.5),
                                   dnnl.ARG_ATTR_ZERO_POINTS | dnnl.ARG_DST: scalar_memory(engine, 10, "s32")})
    np.testing.assert_array_equal(get(dst), saturate(np.rint(x / 0.5) + 10, "u8"))


# --------------------------------------------------------------------------
# softmax


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("log", [False, True], ids=["accurate", "log"])
@pytest.mark.parametrize("dt", ALL)
def test_softmax(engine, stream, dt, log, axis):
    """s8: s8 source with a source scale, f32 destination. oneDNN applies the
    source scale to the result (dst = softmax(src) * src_scale / dst_scale,
    as its reference implementation does), not to the input."""
    rng = np.random.default_rng(60)
    shape = [3, 4, 5]
    algorithm = ALG.softmax_log if log else ALG.softmax_accurate
    dst_dt = "f32" if dt == "s8" else dt
    x = rand(rng, shape, dt, -12, 12) if dt == "s8" else rand(rng, shape, dt, -3, 3)
    attr = dnnl.primitive_attr()
    args = {}
    out_scale = 1.0
    if dt == "s8":
        attr.set_scales_mask(dnnl.ARG_SRC, 0)
        args[dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC] = scalar_memory(engine, 0.25)
        out_scale = 0.25
    pd = dnnl.softmax_forward.primitive_desc(engine, INFERENCE, algorithm, md(shape, dt), md(shape, dst_dt), axis, attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    args.update({dnnl.ARG_SRC: put(engine, x, dt), dnnl.ARG_DST: dst})
    run(dnnl.softmax_forward(pd), stream, args)
    assert_close(get(dst), ref_softmax(x, axis, log) * out_scale, dst_dt)


@pytest.mark.parametrize("log", [False, True], ids=["accurate", "log"])
@pytest.mark.parametrize("n", [8, 16, 17, 24, 32, 48, 64, 100, 127, 128, 129, 256])
def test_softmax_axis_sizes(engine, stream, n, log):
    """Softmax over an innermost axis of `n` against NumPy. oneDNN 3.13.1's
    ocl:reusable kernel for axes of 17..128 relies on a sub-group spanning its
    work-group of 16 without asking for it; on the emulated device,
    emulation.enable() asks the CPU runtime for it (docs/known-problems.md;
    tests/test_emulation_device.py runs these sizes as on a host whose
    runtime would pick 8)."""
    rng = np.random.default_rng(n)
    x = rand(rng, [4, n], "f32", -3, 3)
    algorithm = ALG.softmax_log if log else ALG.softmax_accurate
    pd = dnnl.softmax_forward.primitive_desc(engine, INFERENCE, algorithm, md([4, n], "f32"),
                                             md([4, n], "f32"), 1)
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.softmax_forward(pd), stream, {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst})
    assert_close(get(dst), ref_softmax(x, 1, log), "f32")


def test_softmax_f32_to_u8_with_dst_scale(engine, stream):
    """Quantized probabilities: dst = rne(p / (1/128)); allowed off by one
    where p*128 lies within rounding error of a .5 boundary."""
    rng = np.random.default_rng(61)
    x = rand(rng, [4, 10], "f32", -3, 3)
    attr = dnnl.primitive_attr()
    attr.set_scales_mask(dnnl.ARG_DST, 0)
    pd = dnnl.softmax_forward.primitive_desc(engine, INFERENCE, ALG.softmax_accurate, md([4, 10], "f32"),
                                             md([4, 10], "u8"), 1, attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.softmax_forward(pd), stream, {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst,
                                           dnnl.ARG_ATTR_SCALES | dnnl.ARG_DST: scalar_memory(engine, 1 / 128)})
    exact = ref_softmax(x, 1, False) * 128
    out = get(dst)
    near_tie = np.abs(exact - np.floor(exact) - 0.5) < 1e-4
    np.testing.assert_array_equal(out[~near_tie], np.rint(exact)[~near_tie])
    assert np.all(np.abs(out - exact) <= 1)


def test_softmax_training_with_post_op(engine, stream):
    rng = np.random.default_rng(62)
    x = rand(rng, [3, 6], "f32")
    attr, extra, reference, _ = build_post_ops("binary_add", rng, [3, 6], [1, 6], "f32")
    pd = dnnl.softmax_forward.primitive_desc(engine, TRAINING, ALG.softmax_accurate, md([3, 6], "f32"),
                                             md([3, 6], "f32"), 1, attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.softmax_forward(pd), stream, args)
    assert_close(get(dst), reference(ref_softmax(x, 1, False)), "f32")


# --------------------------------------------------------------------------
# pooling


def ref_pool(x, kind, kernel, strides, dilation, pad_l, pad_r):
    n, c, h, w = x.shape
    oh = conv_out(h, kernel[0], strides[0], dilation[0], pad_l[0], pad_r[0])
    ow = conv_out(w, kernel[1], strides[1], dilation[1], pad_l[1], pad_r[1])
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            vals = []
            for ki in range(kernel[0]):
                for kj in range(kernel[1]):
                    y = i * strides[0] - pad_l[0] + ki * (dilation[0] + 1)
                    z = j * strides[1] - pad_l[1] + kj * (dilation[1] + 1)
                    if 0 <= y < h and 0 <= z < w:
                        vals.append(x[:, :, y, z])
            stacked = np.stack(vals)
            if kind == "max":
                out[:, :, i, j] = stacked.max(axis=0)
            elif kind == "avg_include_padding":
                out[:, :, i, j] = stacked.sum(axis=0) / (kernel[0] * kernel[1])
            else:
                out[:, :, i, j] = stacked.sum(axis=0) / len(vals)
    return out


POOLING = {"max": ALG.pooling_max, "avg_include_padding": ALG.pooling_avg_include_padding,
           "avg_exclude_padding": ALG.pooling_avg_exclude_padding}
POOL_GEOMETRY = {
    # kernel, strides, dilation, padding_l, padding_r
    "k2s2": ([2, 2], [2, 2], [0, 0], [0, 0], [0, 0]),
    "k3s2_padded": ([3, 3], [2, 2], [0, 0], [1, 1], [1, 1]),
    "k2s1_dilated": ([2, 2], [1, 1], [1, 1], [1, 0], [0, 1]),
}


@pytest.mark.parametrize("prop", ["forward_inference", "forward_training"])
@pytest.mark.parametrize("geometry", list(POOL_GEOMETRY))
@pytest.mark.parametrize("kind", list(POOLING))
@pytest.mark.parametrize("dt", ALL)
def test_pooling(engine, stream, dt, kind, geometry, prop):
    kernel, strides, dilation, pad_l, pad_r = POOL_GEOMETRY[geometry]
    rng = np.random.default_rng(70)
    shape = [2, 3, 6, 6]
    x = rand(rng, shape, dt, -50, 50) if dt == "s8" else rand(rng, shape, dt)
    ref = ref_pool(x, kind, kernel, strides, dilation, pad_l, pad_r)
    key = ("pooling", dt, prop)
    pd = make_pd(key, lambda: dnnl.pooling_forward.primitive_desc(
        engine, getattr(dnnl.prop_kind, prop), POOLING[kind], md(shape, dt), md(ref.shape, dt),
        strides, kernel, dilation, pad_l, pad_r))
    if pd is None:
        return
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, dt), dnnl.ARG_DST: dst}
    workspace = pd.workspace_desc()
    if prop == "forward_training" and kind == "max":
        assert workspace.get_size() > 0
    if workspace.get_size():
        assert pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_WORKSPACE) == workspace
        args[dnnl.ARG_WORKSPACE] = dnnl.memory(workspace, engine)
    run(dnnl.pooling_forward(pd), stream, args)
    assert_close(get(dst), saturate(ref, dt), dt)


@pytest.mark.parametrize("post", ["relu", "binary_add"])
def test_pooling_post_ops(engine, stream, post):
    rng = np.random.default_rng(71)
    x = rand(rng, [2, 3, 4, 4], "f32")
    attr, extra, reference, _ = build_post_ops(post, rng, [2, 3, 2, 2], [1, 3, 1, 1], "f32")
    pd = dnnl.pooling_forward.primitive_desc(engine, INFERENCE, ALG.pooling_avg_exclude_padding,
                                             md([2, 3, 4, 4], "f32"), md([2, 3, 2, 2], "f32"),
                                             [2, 2], [2, 2], [0, 0], [0, 0], [0, 0], attr)
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst}
    args.update(extra(engine))
    run(dnnl.pooling_forward(pd), stream, args)
    ref = ref_pool(x, "avg_exclude_padding", [2, 2], [2, 2], [0, 0], [0, 0], [0, 0])
    assert_close(get(dst), reference(ref), "f32")


# --------------------------------------------------------------------------
# layer normalization

LNORM_FLAGS = {
    "none": NF.none,
    "scale_shift": NF.use_scale | NF.use_shift,
    "scale": NF.use_scale,
    "shift": NF.use_shift,
    "global_stats": NF.use_global_stats | NF.use_scale | NF.use_shift,
    "rms_norm": NF.rms_norm,
    "rms_norm_scale": NF.rms_norm | NF.use_scale,
    "rms_norm_scale_shift": NF.rms_norm | NF.use_scale | NF.use_shift,
}


@pytest.mark.parametrize("prop", ["forward_inference", "forward_training"])
@pytest.mark.parametrize("flags", list(LNORM_FLAGS))
@pytest.mark.parametrize("dt", ALL)
def test_layer_normalization(engine, stream, dt, flags, prop):
    """s8: s8 source, f32 destination."""
    rng = np.random.default_rng(80)
    shape, eps = [2, 3, 16], 1e-3
    flag = LNORM_FLAGS[flags]
    dst_dt = "f32" if dt == "s8" else dt
    x = rand(rng, shape, dt, -20, 20) if dt == "s8" else rand(rng, shape, dt)
    stat_d = md(shape[:-1], "f32")
    pd = dnnl.layer_normalization_forward.primitive_desc(engine, getattr(dnnl.prop_kind, prop), md(shape, dt),
                                                         md(shape, dst_dt), stat_d, eps, flag)
    global_stats = bool(flag & NF.use_global_stats)
    rms = bool(flag & NF.rms_norm)
    if global_stats:
        mean = rng.uniform(-0.5, 0.5, size=shape[:-1]).astype(np.float32).astype(np.float64)
        var = rng.uniform(0.5, 2.0, size=shape[:-1]).astype(np.float32).astype(np.float64)
    else:
        mean = np.zeros(shape[:-1]) if rms else x.mean(axis=-1)
        var = (x ** 2).mean(axis=-1) if rms else x.var(axis=-1)
    scale = representable(rng.uniform(0.5, 1.5, size=shape[-1]), "f32")
    shift = representable(rng.uniform(-1, 1, size=shape[-1]), "f32")
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, dt), dnnl.ARG_DST: dst}
    if flag & NF.use_scale:
        assert pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_SCALE).get_dims() == [shape[-1]]
        args[dnnl.ARG_SCALE] = put(engine, scale, "f32")
    if flag & NF.use_shift:
        args[dnnl.ARG_SHIFT] = put(engine, shift, "f32")
    stats_out = prop == "forward_training" and not global_stats
    mean_mem = var_mem = None
    if global_stats:
        args[dnnl.ARG_MEAN] = put(engine, mean, "f32")
        args[dnnl.ARG_VARIANCE] = put(engine, var, "f32")
    elif stats_out:
        if not rms:
            mean_mem = dnnl.memory(pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_MEAN), engine)
            args[dnnl.ARG_MEAN] = mean_mem
        var_mem = dnnl.memory(pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_VARIANCE), engine)
        args[dnnl.ARG_VARIANCE] = var_mem
    else:
        assert pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_MEAN).is_zero()
    run(dnnl.layer_normalization_forward(pd), stream, args)
    ref = (x - mean[..., None]) / np.sqrt(var[..., None] + eps)
    if flag & NF.use_scale:
        ref = ref * scale
    if flag & NF.use_shift:
        ref = ref + shift
    assert_close(get(dst), ref, dst_dt)
    stat_tol = 1e-5 if dt == "f32" or dt == "s8" else TOL[dt]
    if mean_mem is not None:
        np.testing.assert_allclose(get(mean_mem), mean, rtol=stat_tol, atol=stat_tol)
    if var_mem is not None:
        np.testing.assert_allclose(get(var_mem), var, rtol=stat_tol, atol=stat_tol)


def test_layer_normalization_without_stat_desc(engine, stream):
    rng = np.random.default_rng(81)
    x = rand(rng, [4, 8], "f32")
    pd = dnnl.layer_normalization_forward.primitive_desc(engine, INFERENCE, md([4, 8], "f32"), md([4, 8], "f32"),
                                                         1e-5, NF.none)
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.layer_normalization_forward(pd), stream, {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst})
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    assert_close(get(dst), ref, "f32")


# --------------------------------------------------------------------------
# batch normalization

BNORM_FLAGS = {
    "none": NF.none,
    "scale_shift": NF.use_scale | NF.use_shift,
    "scale": NF.use_scale,
    "shift": NF.use_shift,
    "global_stats": NF.use_global_stats | NF.use_scale | NF.use_shift,
    "global_stats_relu": NF.use_global_stats | NF.fuse_norm_relu,
}


@pytest.mark.parametrize("prop", ["forward_inference", "forward_training"])
@pytest.mark.parametrize("flags", list(BNORM_FLAGS))
@pytest.mark.parametrize("dt", ALL)
def test_batch_normalization(engine, stream, dt, flags, prop):
    rng = np.random.default_rng(90)
    shape, eps = [2, 3, 4, 4], 1e-3
    flag = BNORM_FLAGS[flags]
    global_stats = bool(flag & NF.use_global_stats)
    x = rand(rng, shape, dt, -40, 40) if dt == "s8" else rand(rng, shape, dt)
    key = ("batch_normalization", dt, "forward_training") if prop == "forward_training" and dt == "s8" else \
        ("batch_normalization", dt, "statistics computed" if not global_stats else "global stats")
    pd = make_pd(key, lambda: dnnl.batch_normalization_forward.primitive_desc(
        engine, getattr(dnnl.prop_kind, prop), md(shape, dt), md(shape, dt), eps, flag))
    if pd is None:
        return
    for arg in (dnnl.ARG_MEAN, dnnl.ARG_VARIANCE):
        stat = pd.query_md(dnnl.query.exec_arg_md, arg)
        wanted = global_stats or prop == "forward_training"
        assert stat.is_zero() != wanted
        if wanted:
            assert stat.get_dims() == [shape[1]] and stat.get_data_type() == DT.f32
    if global_stats:
        mean = representable(rng.uniform(-5, 5, size=shape[1]), "f32")
        var = representable(rng.uniform(0.5, 4.0, size=shape[1]), "f32")
    else:
        mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    scale = representable(rng.uniform(0.5, 1.5, size=shape[1]), "f32")
    shift = representable(rng.uniform(-1, 1, size=shape[1]), "f32")
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_SRC: put(engine, x, dt), dnnl.ARG_DST: dst}
    if flag & NF.use_scale:
        args[dnnl.ARG_SCALE] = put(engine, scale, "f32")
    if flag & NF.use_shift:
        args[dnnl.ARG_SHIFT] = put(engine, shift, "f32")
    stat_mems = {}
    if global_stats:
        args[dnnl.ARG_MEAN], args[dnnl.ARG_VARIANCE] = put(engine, mean, "f32"), put(engine, var, "f32")
    elif prop == "forward_training":
        for arg in (dnnl.ARG_MEAN, dnnl.ARG_VARIANCE):
            stat_mems[arg] = args[arg] = dnnl.memory(pd.query_md(dnnl.query.exec_arg_md, arg), engine)
    if pd.workspace_desc().get_size():
        args[dnnl.ARG_WORKSPACE] = dnnl.memory(pd.workspace_desc(), engine)
    run(dnnl.batch_normalization_forward(pd), stream, args)
    c = (1, shape[1], 1, 1)
    ref = (x - mean.reshape(c)) / np.sqrt(var.reshape(c) + eps)
    if flag & NF.use_scale:
        ref = ref * scale.reshape(c)
    if flag & NF.use_shift:
        ref = ref + shift.reshape(c)
    if flag & NF.fuse_norm_relu:
        ref = np.maximum(ref, 0)
    out = get(dst)
    if dt == "s8":
        # Float math rounded to s8: off by one only where the exact value is
        # within rounding error of a .5 boundary.
        near_tie = np.abs(np.abs(ref - np.floor(ref)) - 0.5) < 1e-4
        np.testing.assert_array_equal(out[~near_tie], saturate(ref, "s8")[~near_tie])
        assert np.all(np.abs(out - saturate(ref, "s8")) <= 1)
    else:
        assert_close(out, ref, dt)
    stat_tol = 1e-5 if dt == "f32" else TOL[dt]
    if stat_mems:
        np.testing.assert_allclose(get(stat_mems[dnnl.ARG_MEAN]), mean, rtol=stat_tol, atol=stat_tol)
        np.testing.assert_allclose(get(stat_mems[dnnl.ARG_VARIANCE]), var, rtol=stat_tol, atol=stat_tol)


# --------------------------------------------------------------------------
# concat and sum


@pytest.mark.parametrize("explicit_dst", [False, True], ids=["dst_any", "dst_given"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dt", ALL)
def test_concat(engine, stream, dt, axis, explicit_dst):
    rng = np.random.default_rng(100)
    base = [2, 3, 4, 4]
    sizes = [1, 3, 2]
    shapes = [base[:axis] + [s] + base[axis + 1:] for s in sizes]
    tags = [TAG.nchw, TAG.nhwc, TAG.nchw]  # mixed source layouts
    xs = [rand(rng, s, dt, -100, 100) for s in shapes]
    ref = np.concatenate(xs, axis=axis)
    src_descs = [md(s, dt, t) for s, t in zip(shapes, tags)]
    if explicit_dst:
        pd = dnnl.concat.primitive_desc(engine, md(ref.shape, dt, TAG.nchw), axis, src_descs)
        assert pd.dst_desc() == md(ref.shape, dt, TAG.nchw)
    else:
        pd = dnnl.concat.primitive_desc(engine, axis, src_descs)
        assert pd.dst_desc().get_dims() == list(ref.shape)
    for i, d in enumerate(src_descs):
        assert pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_MULTIPLE_SRC + i) == d
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_MULTIPLE_SRC + i: put(engine, x, dt, t) for i, (x, t) in enumerate(zip(xs, tags))}
    args[dnnl.ARG_DST] = dst
    run(dnnl.concat(pd), stream, args)
    np.testing.assert_array_equal(read_plain(engine, stream, dst), ref)


SUM_SCALES = {"ones": [1.0, 1.0, 1.0], "first_one": [1.0, -0.5, 2.0], "first_not_one": [2.0, -0.5, 1.0]}


@pytest.mark.parametrize("scales", list(SUM_SCALES))
@pytest.mark.parametrize("explicit_dst", [False, True], ids=["dst_any", "dst_given"])
@pytest.mark.parametrize("dt", ALL)
def test_sum(engine, stream, dt, explicit_dst, scales):
    rng = np.random.default_rng(110)
    shape = [2, 3, 4]
    scales = SUM_SCALES[scales]
    lo, hi = (-60, 60) if dt == "s8" else (-2, 2)  # s8 saturates
    xs = [rand(rng, shape, dt, lo, hi) for _ in scales]
    srcs = [md(shape, dt) for _ in scales]

    def make_pd():
        if explicit_dst:
            return dnnl.sum.primitive_desc(engine, md(shape, dt), scales, srcs)
        return dnnl.sum.primitive_desc(engine, scales, srcs)

    if scales == SUM_SCALES["first_one"]:
        # oneDNN 3.13.1 picks "ocl:many_inputs" here, which scales source i by
        # scales[i-1] (x0 + x1 - 0.5*x2): the binding refuses it.
        with pytest.raises(dnnl.error, match="ocl:many_inputs") as refused:
            make_pd()
        assert refused.value.status == dnnl.status.unimplemented
        return
    pd = make_pd()
    dst = dnnl.memory(pd.dst_desc(), engine)
    args = {dnnl.ARG_MULTIPLE_SRC + i: put(engine, x, dt) for i, x in enumerate(xs)}
    args[dnnl.ARG_DST] = dst
    run(dnnl.sum(pd), stream, args)
    ref = sum(s * x for s, x in zip(scales, xs))
    assert_close(read_plain(engine, stream, dst), saturate(ref, dt), dt)


def test_sum_to_f32_from_mixed_layouts(engine, stream):
    rng = np.random.default_rng(111)
    shape = [3, 5]
    a, b = rand(rng, shape, "bf16"), rand(rng, shape, "f16")
    pd = dnnl.sum.primitive_desc(engine, md(shape, "f32"), [2.0, 0.25], [md(shape, "bf16", TAG.ab),
                                                                        md(shape, "f16", TAG.ba)])
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.sum(pd), stream, {dnnl.ARG_MULTIPLE_SRC: put(engine, a, "bf16", TAG.ab),
                               dnnl.ARG_MULTIPLE_SRC + 1: put(engine, b, "f16", TAG.ba), dnnl.ARG_DST: dst})
    assert_close(get(dst), 2.0 * a + 0.25 * b, "f32")


# --------------------------------------------------------------------------
# several primitives in order, user scratchpad


@pytest.mark.parametrize("kind", ["buffer", "usm"])
def test_in_order_chain_without_intermediate_waits(engine, stream, kind):
    """eltwise -> binary -> matmul -> softmax, each reading the previous
    output, submitted back to back; a single wait at the end."""
    rng = np.random.default_rng(120)
    M, K, N = 4, 8, 6
    x, y, w = rand(rng, [M, K], "f32"), rand(rng, [M, K], "f32"), rand(rng, [K, N], "f32")
    d_mk, d_kn, d_mn = md([M, K], "f32"), md([K, N], "f32"), md([M, N], "f32")
    xm, ym, wm = put(engine, x, "f32", kind=kind), put(engine, y, "f32", kind=kind), put(engine, w, "f32", kind=kind)
    t1, t2, t3, out = (new_memory(engine, d, kind) for d in (d_mk, d_mk, d_mn, d_mn))
    elt = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_tanh, d_mk, d_mk))
    add = dnnl.binary(dnnl.binary.primitive_desc(engine, ALG.binary_mul, d_mk, d_mk, d_mk))
    mm = dnnl.matmul(dnnl.matmul.primitive_desc(engine, d_mk, d_kn, d_mn))
    sm = dnnl.softmax_forward(dnnl.softmax_forward.primitive_desc(engine, INFERENCE, ALG.softmax_accurate,
                                                                  d_mn, d_mn, 1))
    for _ in range(3):
        elt.execute(stream, {dnnl.ARG_SRC: xm, dnnl.ARG_DST: t1})
        add.execute(stream, {dnnl.ARG_SRC_0: t1, dnnl.ARG_SRC_1: ym, dnnl.ARG_DST: t2})
        mm.execute(stream, {dnnl.ARG_SRC: t2, dnnl.ARG_WEIGHTS: wm, dnnl.ARG_DST: t3})
        sm.execute(stream, {dnnl.ARG_SRC: t3, dnnl.ARG_DST: out})
        # Feed the result back so that every round depends on the previous one.
        pad = dnnl.concat(dnnl.concat.primitive_desc(engine, md([M, K], "f32"), 1, [d_mn, md([M, K - N], "f32")]))
        pad.execute(stream, {dnnl.ARG_MULTIPLE_SRC: out, dnnl.ARG_MULTIPLE_SRC + 1: put(engine, x[:, N:], "f32"),
                             dnnl.ARG_DST: xm})
        ref = ref_softmax((np.tanh(x) * y) @ w, 1, False)
        x = np.concatenate([ref, x[:, N:]], axis=1)
    stream.wait()
    assert_close(get(out), ref, "f32")
    assert_close(get(xm), x, "f32")


USER_SCRATCHPAD = {
    # primitives that need a scratchpad on this device
    "batch_normalization_training": "bnorm",
    "sum_mixed_layouts": "sum",
}


@pytest.mark.parametrize("case", list(USER_SCRATCHPAD))
@pytest.mark.parametrize("kind", ["buffer", "usm"])
def test_user_scratchpad(engine, stream, case, kind):
    rng = np.random.default_rng(130)
    attr = dnnl.primitive_attr()
    attr.set_scratchpad_mode(dnnl.scratchpad_mode.user)
    assert attr.get_scratchpad_mode() == dnnl.scratchpad_mode.user
    if case == "batch_normalization_training":
        shape = [2, 3, 4, 4]
        x = rand(rng, shape, "f32")
        pd = dnnl.batch_normalization_forward.primitive_desc(engine, TRAINING, md(shape, "f32"), md(shape, "f32"),
                                                             1e-3, NF.none, attr)
        prim = dnnl.batch_normalization_forward(pd)
        dst = dnnl.memory(pd.dst_desc(), engine)
        mean = dnnl.memory(pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_MEAN), engine)
        var = dnnl.memory(pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_VARIANCE), engine)
        args = {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst, dnnl.ARG_MEAN: mean, dnnl.ARG_VARIANCE: var}
        m, v = x.mean(axis=(0, 2, 3)).reshape(1, 3, 1, 1), x.var(axis=(0, 2, 3)).reshape(1, 3, 1, 1)
        ref = (x - m) / np.sqrt(v + 1e-3)
    else:
        shape = [3, 5]
        a, b = rand(rng, shape, "f32"), rand(rng, shape, "f32")
        pd = dnnl.sum.primitive_desc(engine, md(shape, "f32"), [1.0, 3.0], [md(shape, "f32", TAG.ab),
                                                                           md(shape, "f32", TAG.ba)], attr)
        prim = dnnl.sum(pd)
        dst = dnnl.memory(pd.dst_desc(), engine)
        args = {dnnl.ARG_MULTIPLE_SRC: put(engine, a, "f32", TAG.ab),
                dnnl.ARG_MULTIPLE_SRC + 1: put(engine, b, "f32", TAG.ba), dnnl.ARG_DST: dst}
        ref = a + 3.0 * b
    assert pd.get_scratchpad_mode() == dnnl.scratchpad_mode.user
    scratch_desc = pd.scratchpad_desc()
    assert scratch_desc.get_size() > 0, "this case was chosen because it needs a scratchpad"
    assert pd.query_md(dnnl.query.exec_arg_md, dnnl.ARG_SCRATCHPAD) == scratch_desc
    # Without the scratchpad the call is refused before reaching oneDNN.
    with pytest.raises(dnnl.error, match="ARG_SCRATCHPAD") as info:
        prim.execute(stream, args)
    assert info.value.status == dnnl.status.invalid_arguments
    args[dnnl.ARG_SCRATCHPAD] = new_memory(engine, scratch_desc, kind)
    run(prim, stream, args)
    assert_close(get(dst), ref, "f32")


def test_library_scratchpad_is_not_an_argument(engine, stream):
    """In the default (library) mode the descriptor reports no scratchpad."""
    shape = [2, 3, 4, 4]
    pd = dnnl.batch_normalization_forward.primitive_desc(engine, INFERENCE, md(shape, "f32"), md(shape, "f32"),
                                                         1e-3, NF.none)
    assert pd.get_scratchpad_mode() == dnnl.scratchpad_mode.library
    assert pd.scratchpad_desc().get_size() == 0
    x = rand(np.random.default_rng(131), shape, "f32")
    dst = dnnl.memory(pd.dst_desc(), engine)
    run(dnnl.batch_normalization_forward(pd), stream, {dnnl.ARG_SRC: put(engine, x, "f32"), dnnl.ARG_DST: dst})
    ref = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(x.var(axis=(0, 2, 3), keepdims=True) + 1e-3)
    assert_close(get(dst), ref, "f32")


@pytest.mark.parametrize("prefix", [[], ["relu"], ["sum"], ["relu", "relu"]], ids=["first", "after_relu",
                                                                                  "after_sum", "third"])
def test_binary_post_op_takes_only_src1(engine, stream, prefix):
    """A binary_add post-op has one input (ARG_SRC_1 of its index); the
    primitive runs with exactly that, however many times it is built."""
    rng = np.random.default_rng(140)
    M, K, N = 3, 4, 5
    src, wei, src1 = rand(rng, [M, K], "f32"), rand(rng, [K, N], "f32"), rand(rng, [1, N], "f32")
    for _ in range(20):
        po = dnnl.post_ops()
        for op in prefix:
            if op == "relu":
                po.append_eltwise(ALG.eltwise_relu, 0.0, 0.0)
            else:
                po.append_sum(1.0)
        index = po.len()
        po.append_binary(ALG.binary_add, md([1, N], "f32"))
        attr = dnnl.primitive_attr()
        attr.set_post_ops(po)
        pd = dnnl.matmul.primitive_desc(engine, md([M, K], "f32"), md([K, N], "f32"), md([M, N], "f32"), attr)
        dst = put(engine, np.zeros((M, N)), "f32")
        run(dnnl.matmul(pd), stream, {
            dnnl.ARG_SRC: put(engine, src, "f32"), dnnl.ARG_WEIGHTS: put(engine, wei, "f32"), dnnl.ARG_DST: dst,
            dnnl.ARG_ATTR_MULTIPLE_POST_OP(index) | dnnl.ARG_SRC_1: put(engine, src1, "f32")})
        ref = src @ wei
        if "relu" in prefix:
            ref = np.maximum(ref, 0)
        assert_close(get(dst), ref + src1, "f32")


# ------------------------------------------- views oneDNN gets wrong (probe 2026-11-27)


def _view(dims, kind):
    """(descriptor, strides, element offset, elements of the buffer) of a
    float32 view: dnnl_ocl_interop.probe.view (the probe's own views)."""
    return probe.view(dims, kind)


def _run_views(engine, stream, make_pd, sources, dst):
    """probe.run_views on this engine and stream: (implementation, the
    destination view's values, how many elements outside it changed)."""
    return probe.run_views(probe.harness.on(engine, stream), make_pd, sources, dst)


_RNG = np.random.default_rng(43)
_X4 = _RNG.uniform(-2, 2, (2, 4, 4, 8)).astype(np.float32)
_Y4 = _RNG.uniform(-2, 2, (2, 4, 4, 8)).astype(np.float32)
_A, _B = _RNG.uniform(-1, 1, (4, 16)).astype(np.float32), _RNG.uniform(-1, 1, (16, 8)).astype(np.float32)
_MS = dnnl.ARG_MULTIPLE_SRC


def _softmax_reference(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _grouped(x, groups, eps):
    g = x.reshape(x.shape[0], groups, -1).astype(np.float64)
    return ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)


def _batch_normalized(x, eps):
    m, v = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    return (x - m) / np.sqrt(v + eps)


# name: (known problem, make_pd(engine, descs), sources, dst, expected)
_WRONG_VIEWS = {
    "binary_at_offset": ("submemory-offsets",
        lambda e, d: dnnl.binary.primitive_desc(e, ALG.binary_add, d[dnnl.ARG_SRC_0],
                                                d[dnnl.ARG_SRC_1], d[dnnl.ARG_DST]),
        {dnnl.ARG_SRC_0: (_X4, _X4.shape, "offset"), dnnl.ARG_SRC_1: (_Y4, _Y4.shape, "offset")},
        (dnnl.ARG_DST, _X4.shape, "offset"), _X4 + _Y4),
    "softmax_at_offset": ("submemory-offsets",
        lambda e, d: dnnl.softmax_forward.primitive_desc(e, INFERENCE, ALG.softmax_accurate,
                                                         d[dnnl.ARG_SRC], d[dnnl.ARG_DST], 3),
        {dnnl.ARG_SRC: (_X4, _X4.shape, "offset")}, (dnnl.ARG_DST, _X4.shape, "offset"),
        _softmax_reference(_X4)),
    "matmul_into_an_offset": ("submemory-offsets",
        lambda e, d: dnnl.matmul.primitive_desc(e, d[dnnl.ARG_SRC], d[dnnl.ARG_WEIGHTS],
                                                d[dnnl.ARG_DST]),
        {dnnl.ARG_SRC: (_A, _A.shape, "plain"), dnnl.ARG_WEIGHTS: (_B, _B.shape, "plain")},
        (dnnl.ARG_DST, (4, 8), "offset"), _A @ _B),
    "max_pooling_into_an_offset": ("submemory-offsets",
        lambda e, d: dnnl.pooling_forward.primitive_desc(
            e, INFERENCE, ALG.pooling_max, d[dnnl.ARG_SRC], d[dnnl.ARG_DST], [2, 2], [2, 2],
            [0, 0], [0, 0], [0, 0]),
        {dnnl.ARG_SRC: (_X4, _X4.shape, "plain")}, (dnnl.ARG_DST, (2, 4, 2, 4), "offset"),
        _X4.reshape(2, 4, 2, 2, 4, 2).max((3, 5))),
    "sum_of_rows_with_gaps": ("sum-many-inputs-dense",
        lambda e, d: dnnl.sum.primitive_desc(e, d[dnnl.ARG_DST], [1.0, 1.0], [d[_MS], d[_MS + 1]]),
        {_MS: (_X4, _X4.shape, "gaps"), _MS + 1: (_Y4, _Y4.shape, "gaps")},
        (dnnl.ARG_DST, _X4.shape, "gaps"), _X4 + _Y4),
    "concat_along_rows_into_rows_with_gaps": ("concat-simple-strided-dst",
        lambda e, d: dnnl.concat.primitive_desc(e, d[dnnl.ARG_DST], 0, [d[_MS], d[_MS + 1]]),
        {_MS: (_A[:, :8], (4, 8), "plain"), _MS + 1: (_B[:4], (4, 8), "plain")},
        (dnnl.ARG_DST, (8, 8), "gaps"), np.concatenate([_A[:, :8], _B[:4]], 0)),
    "group_normalization_into_another_layout": ("group-normalization-layouts",
        lambda e, d: dnnl.group_normalization_forward.primitive_desc(
            e, INFERENCE, d[dnnl.ARG_SRC], d[dnnl.ARG_DST], 2, 1e-3,
            dnnl.normalization_flags.none),
        {dnnl.ARG_SRC: (_X4, _X4.shape, "plain")}, (dnnl.ARG_DST, _X4.shape, "channels_last"),
        _grouped(_X4, 2, 1e-3)),
}

# The same families on views they compute right: taken, and right. (Some
# by stepping past an implementation a rule names: batch normalization's
# statistics to ocl:ref, binary into a destination at an offset to
# reorder+postops.)
_RIGHT_VIEWS = {
    "batch_normalization_statistics_of_rows_with_gaps": (
        lambda e, d: dnnl.batch_normalization_forward.primitive_desc(
            e, INFERENCE, d[dnnl.ARG_SRC], d[dnnl.ARG_DST], 1e-3, dnnl.normalization_flags.none),
        {dnnl.ARG_SRC: (_X4, _X4.shape, "gaps")}, (dnnl.ARG_DST, _X4.shape, "gaps"),
        _batch_normalized(_X4, 1e-3)),
    "binary_into_an_offset": (
        lambda e, d: dnnl.binary.primitive_desc(e, ALG.binary_add, d[dnnl.ARG_SRC_0],
                                                d[dnnl.ARG_SRC_1], d[dnnl.ARG_DST]),
        {dnnl.ARG_SRC_0: (_X4, _X4.shape, "plain"), dnnl.ARG_SRC_1: (_Y4, _Y4.shape, "plain")},
        (dnnl.ARG_DST, _X4.shape, "offset"), _X4 + _Y4),
    "concat_into_an_offset": (
        lambda e, d: dnnl.concat.primitive_desc(e, d[dnnl.ARG_DST], 0, [d[_MS], d[_MS + 1]]),
        {_MS: (_X4[:1], (1, 4, 4, 8), "plain"), _MS + 1: (_Y4[:1], (1, 4, 4, 8), "plain")},
        (dnnl.ARG_DST, (2, 4, 4, 8), "offset"), np.concatenate([_X4[:1], _Y4[:1]])),
    "reorder_from_and_into_offsets": (
        lambda e, d: dnnl.reorder.primitive_desc(e, d[dnnl.ARG_FROM], e, d[dnnl.ARG_TO]),
        {dnnl.ARG_FROM: (_X4, _X4.shape, "offset")}, (dnnl.ARG_TO, _X4.shape, "offset"), _X4),
    "convolution_source_and_destination_at_offsets": (
        lambda e, d: dnnl.convolution_forward.primitive_desc(
            e, INFERENCE, ALG.convolution_direct, d[dnnl.ARG_SRC], d[dnnl.ARG_WEIGHTS],
            d[dnnl.ARG_DST], [1, 1], [0, 0], [0, 0]),
        {dnnl.ARG_SRC: (_X4, _X4.shape, "offset"),
         dnnl.ARG_WEIGHTS: (_B[:4, :4].reshape(4, 4, 1, 1), (4, 4, 1, 1), "plain")},
        (dnnl.ARG_DST, _X4.shape, "offset"), np.einsum("oc,nchw->nohw", _B[:4, :4], _X4)),
    "concat_along_the_innermost_dimension_into_rows_with_gaps": (
        lambda e, d: dnnl.concat.primitive_desc(e, d[dnnl.ARG_DST], 1, [d[_MS], d[_MS + 1]]),
        {_MS: (_A[:, :5], (4, 5), "plain"), _MS + 1: (_B[:4, :5], (4, 5), "plain")},
        (dnnl.ARG_DST, (4, 10), "gaps"), np.concatenate([_A[:, :5], _B[:4, :5]], 1)),
    "group_normalization_in_one_layout": (
        lambda e, d: dnnl.group_normalization_forward.primitive_desc(
            e, INFERENCE, d[dnnl.ARG_SRC], d[dnnl.ARG_DST], 2, 1e-3,
            dnnl.normalization_flags.none),
        {dnnl.ARG_SRC: (_X4, _X4.shape, "channels_last")},
        (dnnl.ARG_DST, _X4.shape, "channels_last"), _grouped(_X4, 2, 1e-3)),
    "sum_of_rows_with_gaps_into_a_dense_destination": (
        lambda e, d: dnnl.sum.primitive_desc(e, d[dnnl.ARG_DST], [1.0, 1.0], [d[_MS], d[_MS + 1]]),
        {_MS: (_X4, _X4.shape, "gaps"), _MS + 1: (_Y4, _Y4.shape, "gaps")},
        (dnnl.ARG_DST, _X4.shape, "plain"), _X4 + _Y4),
}


def _descs_of(sources, dst):
    descs = {arg: _view(dims, kind)[0] for arg, (_, dims, kind) in sources.items()}
    descs[dst[0]] = _view(dst[1], dst[2])[0]
    return descs


@pytest.mark.parametrize("name", list(_WRONG_VIEWS))
def test_views_onednn_gets_wrong_are_refused(engine, stream, name):
    problem, make_pd, sources, dst, _ = _WRONG_VIEWS[name]
    refused_here(problem, lambda: make_pd(engine, _descs_of(sources, dst)))


@pytest.mark.parametrize("name", list(_RIGHT_VIEWS))
def test_views_onednn_computes_right_are_taken(engine, stream, name):
    make_pd, sources, dst, expected = _RIGHT_VIEWS[name]
    _, got, outside = _run_views(engine, stream, lambda d: make_pd(engine, d), sources, dst)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert outside == 0


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=watch(case[0], "the view is read or written wrong"))
    for name, case in _WRONG_VIEWS.items()])
def test_views_onednn_gets_wrong_raw_onednn(engine, stream, name):
    problem, make_pd, sources, dst, expected = _WRONG_VIEWS[name]
    implementation_here(problem, lambda: make_pd(engine, _descs_of(sources, dst)))
    with workarounds_off(problem):
        _, got, outside = _run_views(engine, stream, lambda d: make_pd(engine, d), sources, dst)
    if outside:
        raise ProblemShown(f"{outside} elements written outside the destination")
    assert_right(got, expected)
