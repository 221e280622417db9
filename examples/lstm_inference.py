"""LSTM inference on pyopencl's queue, checked against NumPy.

The spirit of oneDNN's examples/primitives/lstm.cpp: a stack of LSTM layers
over a sequence, the source and destination in pyopencl buffers shared with
oneDNN without copies, the weights given in the user's ldigo layout and
reordered into the layout the primitive prefers (format_tag.any), no initial
or final recurrent state (zero memory descriptors). Runs on a real Intel GPU
when there is one and on the emulated one otherwise.
"""

import dnnl_ocl_interop as dnnl

print(f"device:         {dnnl.emulation.ensure_device()}")

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

oi = dnnl.ocl_interop
f32 = dnnl.memory.data_type.f32
tag = dnnl.memory.format_tag

# Sequence length, batch, channels, gates (i, f, c~, o), layers, directions.
# (lstm.cpp has 12 channels; oneDNN 3.13.1 fuses such small problems into a
# kernel whose set-up divides by zero on devices with fewer than 16 compute
# units, the emulated device on a small host among them: 52 avoids it.)
T, N, C, G, L, D = 6, 26, 52, 4, 4, 1

i = np.arange(T * N * C)
src = np.cos(i / 10).reshape(T, N, C).astype(np.float32)
weights_layer = (np.sin(np.arange(L * D * C * G * C) * 2) / np.sqrt(C)).reshape(
    L, D, C, G, C).astype(np.float32)
weights_iter = (np.cos(np.arange(L * D * C * G * C) * 3) / np.sqrt(C)).reshape(
    L, D, C, G, C).astype(np.float32)
bias = np.tanh(np.arange(L * D * G * C)).reshape(L, D, G, C).astype(np.float32)

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)
engine = oi.make_engine(device, context)
stream = oi.make_stream(engine, queue)

# Source and destination: pyopencl buffers, wrapped as oneDNN memory.
src_desc = dnnl.memory.desc([T, N, C], f32, tag.tnc)
dst_desc = dnnl.memory.desc([T, N, C], f32, tag.tnc)
mf = cl.mem_flags
src_buffer = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src)
dst_buffer = cl.Buffer(context, mf.WRITE_ONLY, dst_desc.get_size())
src_memory = oi.make_memory(src_desc, engine, src_buffer)
dst_memory = oi.make_memory(dst_desc, engine, dst_buffer)

# Weights and bias in the user's layouts.
user_weights_layer = dnnl.memory(dnnl.memory.desc([L, D, C, G, C], f32, tag.ldigo), engine)
user_weights_iter = dnnl.memory(dnnl.memory.desc([L, D, C, G, C], f32, tag.ldigo), engine)
bias_memory = dnnl.memory(dnnl.memory.desc([L, D, G, C], f32, tag.ldgo), engine)
dnnl.arrays.write(user_weights_layer, weights_layer)
dnnl.arrays.write(user_weights_iter, weights_iter)
dnnl.arrays.write(bias_memory, bias)

# The primitive chooses the weights' layout; no recurrent state in or out.
no_state = dnnl.memory.desc()
lstm_pd = dnnl.lstm_forward.primitive_desc(
    engine, dnnl.prop_kind.forward_inference, dnnl.rnn_direction.unidirectional_left2right,
    src_desc, no_state, no_state,
    dnnl.memory.desc([L, D, C, G, C], f32, tag.any), dnnl.memory.desc([L, D, C, G, C], f32, tag.any),
    bias_memory.get_desc(), dst_desc, no_state, no_state)
print(f"implementation: {lstm_pd.impl_info_str()}")


def in_layout(user_memory, desc):
    """`user_memory` reordered into `desc` when the primitive wants another layout."""
    if user_memory.get_desc() == desc:
        return user_memory
    memory = dnnl.memory(desc, engine)
    reorder = dnnl.reorder(dnnl.reorder.primitive_desc(engine, user_memory.get_desc(), engine, desc))
    reorder.execute(stream, {dnnl.ARG_FROM: user_memory, dnnl.ARG_TO: memory})
    return memory


lstm_weights_layer = in_layout(user_weights_layer, lstm_pd.weights_layer_desc())
lstm_weights_iter = in_layout(user_weights_iter, lstm_pd.weights_iter_desc())

# The in-order queue orders the reorders before the LSTM: execute returns no event.
oi.execute(dnnl.lstm_forward(lstm_pd), stream, {
    dnnl.ARG_SRC_LAYER: src_memory,
    dnnl.ARG_WEIGHTS_LAYER: lstm_weights_layer,
    dnnl.ARG_WEIGHTS_ITER: lstm_weights_iter,
    dnnl.ARG_BIAS: bias_memory,
    dnnl.ARG_DST_LAYER: dst_memory,
})
dst = np.empty((T, N, C), np.float32)
cl.enqueue_copy(queue, dst, dst_buffer)  # blocking, after the LSTM on the same queue


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# NumPy: oneDNN's LSTM equations, layer by layer, left to right.
layer_in = src.astype(np.float64)
for layer in range(L):
    W, U, B = weights_layer[layer, 0], weights_iter[layer, 0], bias[layer, 0]
    h, c = np.zeros((N, C)), np.zeros((N, C))
    out = np.empty((T, N, C))
    for t in range(T):
        gates = np.einsum("ni,igo->ngo", layer_in[t], W) + np.einsum("ni,igo->ngo", h, U) + B
        c = sigmoid(gates[:, 1]) * c + sigmoid(gates[:, 0]) * np.tanh(gates[:, 2])
        h = sigmoid(gates[:, 3]) * np.tanh(c)
        out[t] = h
    layer_in = out

error = float(np.max(np.abs(dst - layer_in)))
print(f"dst_layer:      {T}x{N}x{C}, |max| {np.max(np.abs(dst)):.4f}, "
      f"largest difference from NumPy {error:.2e}")
assert error < 1e-4, error
print("lstm_inference: OK")
