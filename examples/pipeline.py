"""A mixed pipeline on one out-of-order OpenCL queue, ordered only by events:

    pyopencl kernel (normalize) -> oneDNN convolution + ReLU -> oneDNN matmul
    -> pyopencl kernel (row sums)

Every step reads the previous step's output in place (no copies between
pyopencl and oneDNN: both work on the same cl.Buffer objects), and waits for
the previous step's event. The result is checked against NumPy.
"""

import dnnl_ocl_interop as dnnl

print(f"device:   {dnnl.emulation.ensure_device()}")

import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

# The CPU runtime's compiler reports informational output on every build.
warnings.filterwarnings("ignore", category=cl.CompilerWarning)

oi = dnnl.ocl_interop
f32 = dnnl.memory.data_type.f32
tag = dnnl.memory.format_tag

C_IN, C_OUT, H, W, N_OUT = 3, 8, 16, 16, 12
rng = np.random.default_rng(7)
image = rng.uniform(0, 255, (1, C_IN, H, W)).astype(np.float32)
weights = rng.standard_normal((C_OUT, C_IN, 3, 3)).astype(np.float32) / 9
projection = rng.standard_normal((H * W, N_OUT)).astype(np.float32) / 16

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device,
                        properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
engine = oi.make_engine(device, context)
stream = oi.make_stream(engine, queue)

program = cl.Program(context, """
__kernel void normalize(__global const float *src, __global float *dst, float scale, float shift) {
    size_t i = get_global_id(0);
    dst[i] = src[i] * scale + shift;
}
__kernel void row_sums(__global const float *src, __global float *dst, int columns) {
    size_t row = get_global_id(0);
    float total = 0.0f;
    for (int c = 0; c < columns; ++c) total += src[row * columns + c];
    dst[row] = total;
}
""").build()

mf = cl.mem_flags
image_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=image)
normalized_buf = cl.Buffer(context, mf.READ_WRITE, image.nbytes)
features_buf = cl.Buffer(context, mf.READ_WRITE, C_OUT * H * W * 4)
projected_buf = cl.Buffer(context, mf.READ_WRITE, C_OUT * N_OUT * 4)
sums_buf = cl.Buffer(context, mf.WRITE_ONLY, C_OUT * 4)

# oneDNN memory on the same buffers. The convolution's output, C_OUT x (H*W)
# floats, is the matmul's input under a second descriptor: same cl_mem.
src_md = dnnl.memory.desc([1, C_IN, H, W], f32, tag.nchw)
features_md = dnnl.memory.desc([1, C_OUT, H, W], f32, tag.nchw)
src_mem = oi.make_memory(src_md, engine, normalized_buf)
features_mem = oi.make_memory(features_md, engine, features_buf)
features_as_matrix = oi.make_memory(dnnl.memory.desc([C_OUT, H * W], f32, tag.ab), engine, features_buf)
projected_mem = oi.make_memory(dnnl.memory.desc([C_OUT, N_OUT], f32, tag.ab), engine, projected_buf)
weights_mem = dnnl.memory(dnnl.memory.desc([C_OUT, C_IN, 3, 3], f32, tag.oihw), engine)
projection_mem = dnnl.memory(dnnl.memory.desc([H * W, N_OUT], f32, tag.ab), engine)
dnnl.arrays.write(weights_mem, weights)
dnnl.arrays.write(projection_mem, projection)

relu = dnnl.post_ops()
relu.append_eltwise(dnnl.algorithm.eltwise_relu)
conv_attr = dnnl.primitive_attr()
conv_attr.set_post_ops(relu)
conv = dnnl.convolution_forward(dnnl.convolution_forward.primitive_desc(
    engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.convolution_direct,
    src_md, weights_mem.get_desc(), features_md, [1, 1], [1, 1], [1, 1], conv_attr))
matmul = dnnl.matmul(dnnl.matmul.primitive_desc(
    engine, features_as_matrix.get_desc(), projection_mem.get_desc(), projected_mem.get_desc()))

scale, shift = np.float32(1 / 255), np.float32(-0.5)
normalized = program.normalize(queue, (image.size,), None, image_buf, normalized_buf, scale, shift)
convolved = oi.execute(conv, stream, {dnnl.ARG_SRC: src_mem, dnnl.ARG_WEIGHTS: weights_mem,
                                      dnnl.ARG_DST: features_mem}, deps=[normalized])
projected = oi.execute(matmul, stream, {dnnl.ARG_SRC: features_as_matrix,
                                        dnnl.ARG_WEIGHTS: projection_mem,
                                        dnnl.ARG_DST: projected_mem}, deps=[convolved])
summed = program.row_sums(queue, (C_OUT,), None, projected_buf, sums_buf, np.int32(N_OUT),
                          wait_for=[projected])
result = np.empty(C_OUT, np.float32)
cl.enqueue_copy(queue, result, sums_buf, wait_for=[summed]).wait()

# NumPy reference of the same pipeline.
x = image[0] * scale + shift
padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
# C_IN,H,W,3,3; NumPy 2.2's stubs (the last for Python 3.10) take one axis only
windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))  # type: ignore[call-overload, unused-ignore]
features = np.maximum(np.einsum("chwij,ocij->ohw", windows, weights), 0)
expected = (features.reshape(C_OUT, H * W) @ projection).sum(axis=1)

error = float(np.max(np.abs(result - expected) / (np.abs(expected) + 1)))
print(f"pipeline: normalize -> conv+relu ({conv.get_kind().name}) -> matmul -> row sums, "
      f"{C_OUT} results, max relative error {error:.2e}")
print(f"result:   {np.array2string(result, precision=3)}")
assert error < 1e-4, f"pipeline result differs from NumPy by {error}"
print("pipeline: OK")
