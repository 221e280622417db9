"""A small CNN trained with SGD on pyopencl's queue, checked against NumPy.

The spirit of oneDNN's examples/cnn_training_f32.cpp, made to run in seconds:

    conv 3x3 (+bias) -> ReLU -> max pool 2x2 -> inner product (+bias) -> MSE loss

Forward, backward and the weight update (w -= lr * dw, a `binary` add) are
all oneDNN primitives on one in-order pyopencl queue; the host only writes the
data once and reads results to report them. The first step's gradients are
compared with a float64 NumPy model of the same network, and the loss must
fall at every step. Runs on a real Intel GPU when there is one and on the
emulated one otherwise.
"""

from __future__ import annotations

import sys
import time

import dnnl_ocl_interop as dnnl

print(f"device:       {dnnl.emulation.ensure_device()}")

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

oi = dnnl.ocl_interop
f32 = dnnl.memory.data_type.f32
tag = dnnl.memory.format_tag
TRAINING = dnnl.prop_kind.forward_training

# Batch, input channels and size, conv output channels, classes, SGD steps.
N, IC, H, W, OC, K, STEPS = 4, 3, 12, 12, 8, 10, 8
LR = 0.1
CONV_STRIDES, CONV_PAD = [1, 1], [1, 1]          # 3x3, "same" output size
POOL_KERNEL, POOL_STRIDES = [2, 2], [2, 2]
PH, PW = H // 2, W // 2

rng = np.random.default_rng(2016)
images = rng.uniform(-1, 1, (N, IC, H, W)).astype(np.float32)
target = rng.uniform(-1, 1, (N, K)).astype(np.float32)
init = {
    "conv_weights": (rng.standard_normal((OC, IC, 3, 3)) / np.sqrt(IC * 9)).astype(np.float32),
    "conv_bias": (rng.standard_normal(OC) * 0.1).astype(np.float32),
    "fc_weights": (rng.standard_normal((K, OC, PH, PW)) / np.sqrt(OC * PH * PW)).astype(np.float32),
    "fc_bias": (rng.standard_normal(K) * 0.1).astype(np.float32),
}

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)   # in order: it orders the whole step
engine = oi.make_engine(device, context)
stream = oi.make_stream(engine, queue)


def md(dims: list[int], format_tag: dnnl.memory.format_tag) -> dnnl.memory.desc:
    return dnnl.memory.desc(dims, f32, format_tag)


# Plain layouts everywhere, so dnnl.arrays reads and writes every tensor
# directly (cnn_training_f32.cpp lets primitives pick layouts and reorders;
# at these sizes that only adds steps).
src_md = md([N, IC, H, W], tag.nchw)
conv_w_md, conv_b_md = md([OC, IC, 3, 3], tag.oihw), md([OC], tag.x)
conv_dst_md = md([N, OC, H, W], tag.nchw)
pool_dst_md = md([N, OC, PH, PW], tag.nchw)
fc_w_md, fc_b_md = md([K, OC, PH, PW], tag.oihw), md([K], tag.x)
fc_dst_md = md([N, K], tag.nc)


def new(desc: dnnl.memory.desc) -> dnnl.memory:
    return dnnl.memory(desc, engine)


# ---------------------------------------------------------------- forward
conv_pd = dnnl.convolution_forward.primitive_desc(
    engine, TRAINING, dnnl.algorithm.convolution_direct, src_md, conv_w_md, conv_b_md, conv_dst_md,
    CONV_STRIDES, CONV_PAD, CONV_PAD)
relu_pd = dnnl.eltwise_forward.primitive_desc(
    engine, TRAINING, dnnl.algorithm.eltwise_relu, conv_dst_md, conv_dst_md, 0.0)
pool_pd = dnnl.pooling_forward.primitive_desc(
    engine, TRAINING, dnnl.algorithm.pooling_max, conv_dst_md, pool_dst_md,
    POOL_STRIDES, POOL_KERNEL, [0, 0], [0, 0], [0, 0])
fc_pd = dnnl.inner_product_forward.primitive_desc(engine, TRAINING, pool_dst_md, fc_w_md, fc_b_md, fc_dst_md)

params = {name: new(desc) for name, desc in
          [("conv_weights", conv_w_md), ("conv_bias", conv_b_md), ("fc_weights", fc_w_md), ("fc_bias", fc_b_md)]}
grads = {name: new(memory.get_desc()) for name, memory in params.items()}
src, target_mem = new(src_md), new(fc_dst_md)
conv_dst, relu_dst, pool_dst, fc_dst = new(conv_dst_md), new(conv_dst_md), new(pool_dst_md), new(fc_dst_md)
pool_workspace = new(pool_pd.workspace_desc())   # where each max came from, for backward
for name, value in init.items():
    dnnl.arrays.write(params[name], value)
dnnl.arrays.write(src, images)
dnnl.arrays.write(target_mem, target)

net_fwd: list[tuple[dnnl.primitive, dict[int, dnnl.memory]]] = [
    (dnnl.convolution_forward(conv_pd), {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: params["conv_weights"],
                                         dnnl.ARG_BIAS: params["conv_bias"], dnnl.ARG_DST: conv_dst}),
    (dnnl.eltwise_forward(relu_pd), {dnnl.ARG_SRC: conv_dst, dnnl.ARG_DST: relu_dst}),
    (dnnl.pooling_forward(pool_pd), {dnnl.ARG_SRC: relu_dst, dnnl.ARG_DST: pool_dst,
                                     dnnl.ARG_WORKSPACE: pool_workspace}),
    (dnnl.inner_product_forward(fc_pd), {dnnl.ARG_SRC: pool_dst, dnnl.ARG_WEIGHTS: params["fc_weights"],
                                         dnnl.ARG_BIAS: params["fc_bias"], dnnl.ARG_DST: fc_dst}),
]

# ------------------------------------------------------------------- loss
# loss = mean((y - t)^2), so diff_dst = (2 / (N*K)) * (y - t): a binary
# subtraction with a linear post-op, on the device like the rest.
loss_ops = dnnl.post_ops()
loss_ops.append_eltwise(dnnl.algorithm.eltwise_linear, 2.0 / (N * K), 0.0)
loss_attr = dnnl.primitive_attr()
loss_attr.set_post_ops(loss_ops)
loss_grad_pd = dnnl.binary.primitive_desc(engine, dnnl.algorithm.binary_sub, fc_dst_md, fc_dst_md, fc_dst_md,
                                          loss_attr)
fc_diff_dst = new(fc_dst_md)

# --------------------------------------------------------------- backward
# Each backward descriptor takes its forward one as the hint, as in C++.
fc_bwd_data_pd = dnnl.inner_product_backward_data.primitive_desc(engine, pool_dst_md, fc_w_md, fc_dst_md, fc_pd)
fc_bwd_weights_pd = dnnl.inner_product_backward_weights.primitive_desc(
    engine, pool_dst_md, fc_w_md, fc_b_md, fc_dst_md, fc_pd)
pool_bwd_pd = dnnl.pooling_backward.primitive_desc(
    engine, dnnl.algorithm.pooling_max, conv_dst_md, pool_dst_md,
    POOL_STRIDES, POOL_KERNEL, [0, 0], [0, 0], [0, 0], pool_pd)
relu_bwd_pd = dnnl.eltwise_backward.primitive_desc(
    engine, dnnl.algorithm.eltwise_relu, conv_dst_md, conv_dst_md, conv_dst_md, 0.0, relu_pd)
conv_bwd_weights_pd = dnnl.convolution_backward_weights.primitive_desc(
    engine, dnnl.algorithm.convolution_direct, src_md, conv_w_md, conv_b_md, conv_dst_md,
    CONV_STRIDES, CONV_PAD, CONV_PAD, conv_pd)
# The convolution is the first layer: no gradient of the images is needed,
# so there is no convolution_backward_data.
pool_diff_dst, relu_diff_dst, conv_diff_dst = new(pool_dst_md), new(conv_dst_md), new(conv_dst_md)

net_bwd: list[tuple[dnnl.primitive, dict[int, dnnl.memory]]] = [
    (dnnl.binary(loss_grad_pd), {dnnl.ARG_SRC_0: fc_dst, dnnl.ARG_SRC_1: target_mem, dnnl.ARG_DST: fc_diff_dst}),
    (dnnl.inner_product_backward_data(fc_bwd_data_pd),
     {dnnl.ARG_DIFF_DST: fc_diff_dst, dnnl.ARG_WEIGHTS: params["fc_weights"], dnnl.ARG_DIFF_SRC: pool_diff_dst}),
    (dnnl.inner_product_backward_weights(fc_bwd_weights_pd),
     {dnnl.ARG_SRC: pool_dst, dnnl.ARG_DIFF_DST: fc_diff_dst,
      dnnl.ARG_DIFF_WEIGHTS: grads["fc_weights"], dnnl.ARG_DIFF_BIAS: grads["fc_bias"]}),
    (dnnl.pooling_backward(pool_bwd_pd),
     {dnnl.ARG_DIFF_DST: pool_diff_dst, dnnl.ARG_WORKSPACE: pool_workspace, dnnl.ARG_DIFF_SRC: relu_diff_dst}),
    (dnnl.eltwise_backward(relu_bwd_pd),
     {dnnl.ARG_SRC: conv_dst, dnnl.ARG_DIFF_DST: relu_diff_dst, dnnl.ARG_DIFF_SRC: conv_diff_dst}),
    (dnnl.convolution_backward_weights(conv_bwd_weights_pd),
     {dnnl.ARG_SRC: src, dnnl.ARG_DIFF_DST: conv_diff_dst,
      dnnl.ARG_DIFF_WEIGHTS: grads["conv_weights"], dnnl.ARG_DIFF_BIAS: grads["conv_bias"]}),
]

# ----------------------------------------------------------------- update
# w = w + (-lr) * dw: a binary add whose second input is scaled by -lr, in
# place (dst is src 0, which binary allows). The natural `sum` with scales
# [1, -lr] is refused here: oneDNN 3.13 picks ocl:many_inputs for it, which
# applies the scales to the wrong sources (docs/known-problems.md).
# The fc weights' update follows both fc backward primitives, which read them.
update_attr = dnnl.primitive_attr()
update_attr.set_scales_mask(dnnl.ARG_SRC_1, 0)         # one scale for the whole tensor
minus_lr = new(md([1], tag.x))
dnnl.arrays.write(minus_lr, np.array([-LR], np.float32))
net_update: list[tuple[dnnl.primitive, dict[int, dnnl.memory]]] = []
for name, weights in params.items():
    desc = weights.get_desc()
    update_pd = dnnl.binary.primitive_desc(engine, dnnl.algorithm.binary_add, desc, desc, desc, update_attr)
    net_update.append((dnnl.binary(update_pd), {dnnl.ARG_SRC_0: weights, dnnl.ARG_SRC_1: grads[name],
                                                dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC_1: minus_lr,
                                                dnnl.ARG_DST: weights}))


def forward_and_backward_reference(p: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
    """The same network in float64 NumPy: the loss and its gradients, by hand."""
    x = images.astype(np.float64)
    cw, cb, fw, fb = p["conv_weights"], p["conv_bias"], p["fc_weights"], p["fc_bias"]
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    # N,IC,H,W,3,3; NumPy 2.2's stubs (the last for Python 3.10) take one axis only
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # type: ignore[call-overload, unused-ignore]
    conv = np.einsum("nchwij,ocij->nohw", windows, cw) + cb[None, :, None, None]
    relu = np.maximum(conv, 0)
    blocks = relu.reshape(N, OC, PH, 2, PW, 2)
    pool = blocks.max(axis=(3, 5))
    y = pool.reshape(N, -1) @ fw.reshape(K, -1).T + fb
    loss = float(np.mean((y - target) ** 2))

    dy = 2 * (y - target) / y.size
    d_fw = (dy.T @ pool.reshape(N, -1)).reshape(fw.shape)
    d_fb = dy.sum(axis=0)
    d_pool = (dy @ fw.reshape(K, -1)).reshape(pool.shape)
    # Max pooling routes each gradient to the first maximum of its window
    # (random data has no ties but ReLU's zeros, whose gradient ReLU drops).
    flat = blocks.transpose(0, 1, 2, 4, 3, 5).reshape(N, OC, PH, PW, 4)
    first_max = np.eye(4)[flat.argmax(axis=-1)]                        # one-hot, N,OC,PH,PW,4
    d_relu = (first_max * d_pool[..., None]).reshape(N, OC, PH, PW, 2, 2)
    d_relu = d_relu.transpose(0, 1, 2, 4, 3, 5).reshape(relu.shape)
    d_conv = d_relu * (conv > 0)
    d_cw = np.einsum("nchwij,nohw->ocij", windows, d_conv)
    d_cb = d_conv.sum(axis=(0, 2, 3))
    return loss, {"conv_weights": d_cw, "conv_bias": d_cb, "fc_weights": d_fw, "fc_bias": d_fb}


failures: list[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)
        print(f"FAILED: {what}")


start = time.perf_counter()
losses: list[float] = []
for step in range(STEPS):
    for primitive, args in net_fwd + net_bwd + net_update:
        primitive.execute(stream, args)
    stream.wait()
    # fc_dst still holds this step's output: the update changed only weights.
    loss = float(np.mean((dnnl.arrays.read(fc_dst).astype(np.float64) - target) ** 2))
    losses.append(loss)
    print(f"step {step}:       loss {loss:.6f}")

    if step == 0:
        # (a) The first step's gradients against the float64 reference.
        ref_loss, ref_grads = forward_and_backward_reference(
            {name: value.astype(np.float64) for name, value in init.items()})
        check(abs(loss - ref_loss) <= 1e-5 * ref_loss, f"loss {loss} differs from NumPy's {ref_loss}")
        worst = 0.0
        for name, ref in ref_grads.items():
            got = dnnl.arrays.read(grads[name]).astype(np.float64)
            rel = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
            worst = max(worst, rel)
            print(f"  d{name:<13} {'x'.join(map(str, ref.shape)):>9}, "
                  f"largest relative difference from NumPy {rel:.2e}")
            check(rel < 1e-4, f"gradient of {name} differs from NumPy by {rel:.2e}")
            # The update on the device is w - lr * dw.
            updated = dnnl.arrays.read(params[name]).astype(np.float64)
            expected = init[name].astype(np.float64) - LR * got
            upd = float(np.max(np.abs(updated - expected)))
            check(upd < 1e-6, f"update of {name} is off by {upd:.2e}")
        print(f"  gradients:    largest relative difference from NumPy {worst:.2e}")
elapsed = time.perf_counter() - start

# (b) The loss falls at every step.
check(all(b < a for a, b in zip(losses, losses[1:])), f"loss did not fall at every step: {losses}")
print(f"loss:         {losses[0]:.6f} -> {losses[-1]:.6f} in {STEPS} steps ({elapsed:.2f} s)")

if failures:
    print(f"cnn_training: {len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("cnn_training: OK")
