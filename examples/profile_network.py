"""A timeline of a small network: dnnl.profiling records its executes on a
profiling queue, prints a summary table and writes a trace that
https://ui.perfetto.dev opens.

Convolution (with a ReLU post-op), max pooling and an inner product, run a
few times on a pyopencl queue made with profiling enabled; the result is
checked against NumPy. docs/profiling.md walks through it.

    python examples/profile_network.py [TRACE.json]
"""

import os
import sys
import tempfile

import numpy as np

import dnnl_ocl_interop as dnnl

dnnl.emulation.ensure_device()  # a real Intel GPU, or the emulated one

import pyopencl as cl  # noqa: E402

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
# Profiling enabled on the queue: oneDNN times every kernel it enqueues there.
queue = cl.CommandQueue(context, device,
                        properties=cl.command_queue_properties.PROFILING_ENABLE)
engine = dnnl.ocl_interop.make_engine(device, context)
stream = dnnl.ocl_interop.make_stream(engine, queue)

DT, TAG = dnnl.memory.data_type, dnnl.memory.format_tag
INFERENCE = dnnl.prop_kind.forward_inference


def desc(dims, tag):
    return dnnl.memory.desc(dims, DT.f32, tag)


# conv 3x3 (+ReLU) -> max pool 2x2 -> inner product, batch 2
x_d, w_d, c_d = desc([2, 3, 16, 16], TAG.nchw), desc([8, 3, 3, 3], TAG.oihw), desc([2, 8, 16, 16], TAG.nchw)
p_d, fw_d, y_d = desc([2, 8, 8, 8], TAG.nchw), desc([10, 8, 8, 8], TAG.oihw), desc([2, 10], TAG.nc)
relu = dnnl.post_ops()
relu.append_eltwise(dnnl.algorithm.eltwise_relu, 0.0, 0.0)
attr = dnnl.primitive_attr()
attr.set_post_ops(relu)
conv = dnnl.convolution_forward(dnnl.convolution_forward.primitive_desc(
    engine, INFERENCE, dnnl.algorithm.convolution_direct, x_d, w_d, c_d, [1, 1], [1, 1], [1, 1],
    attr))
pool = dnnl.pooling_forward(dnnl.pooling_forward.primitive_desc(
    engine, INFERENCE, dnnl.algorithm.pooling_max, c_d, p_d, [2, 2], [2, 2], [0, 0], [0, 0], [0, 0]))
fc = dnnl.inner_product_forward(dnnl.inner_product_forward.primitive_desc(
    engine, INFERENCE, p_d, fw_d, y_d))

rng = np.random.default_rng(0)
x, w, fw = (rng.standard_normal(d.get_dims()).astype(np.float32) for d in (x_d, w_d, fw_d))
mem = {name: dnnl.memory(d, engine) for name, d in
       [("x", x_d), ("w", w_d), ("c", c_d), ("p", p_d), ("fw", fw_d), ("y", y_d)]}
for name, value in (("x", x), ("w", w), ("fw", fw)):
    dnnl.arrays.write(mem[name], value)


def network():
    conv.execute(stream, {dnnl.ARG_SRC: mem["x"], dnnl.ARG_WEIGHTS: mem["w"], dnnl.ARG_DST: mem["c"]})
    pool.execute(stream, {dnnl.ARG_SRC: mem["c"], dnnl.ARG_DST: mem["p"]})
    fc.execute(stream, {dnnl.ARG_SRC: mem["p"], dnnl.ARG_WEIGHTS: mem["fw"], dnnl.ARG_DST: mem["y"]})


network()  # the first run outside the recording (one-time work)
stream.wait()

with dnnl.profiling.recorder() as recorder:
    for _ in range(5):
        network()
# stop() (the end of the with block) waited for the queue and read the times

recorder.print_summary()
trace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(),
                                                            "profile_network.json")
recorder.write_trace(trace)
print(f"trace: {trace} ({len(recorder.executions)} executes; open it in https://ui.perfetto.dev)")

# The result, against NumPy.
padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
# NumPy 2.2's stubs (the last for Python 3.10) take one axis only
windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # type: ignore[call-overload, unused-ignore]
c = np.maximum(np.einsum("nchwkl,ockl->nohw", windows, w), 0)
p = c.reshape(2, 8, 8, 2, 8, 2).max(axis=(3, 5))
expected = p.reshape(2, -1) @ fw.reshape(10, -1).T
error = float(np.abs(dnnl.arrays.read(mem["y"]) - expected).max())
print(f"largest difference from NumPy: {error:.2e}")
assert error < 1e-3 * max(1.0, float(np.abs(expected).max()))
assert len(recorder.executions) == 15
print("profile_network: OK")
