"""oneDNN on pyopencl's device, context and queue, sharing memory with zero copies.

Creates a oneDNN engine and stream from pyopencl objects, wraps a cl.Buffer
and an Intel USM allocation as oneDNN memory, moves data through each side,
and prints what it did. Runs on a real Intel GPU when there is one and on
the emulated one otherwise.
"""

import dnnl_ocl_interop as dnnl

# Before the first OpenCL call: a real Intel GPU, or the emulated one.
print(f"device:  {dnnl.emulation.ensure_device()}")

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

oi = dnnl.ocl_interop

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)

engine = oi.make_engine(device, context)
stream = oi.make_stream(engine, queue)
print(f"engine:  {engine} on {oi.get_device(engine).name!r}; oneDNN holds the "
      f"context (reference count {context.reference_count}) and the queue "
      f"({queue.reference_count})")

# A pyopencl buffer, written by pyopencl and read by oneDNN.
desc = dnnl.memory.desc([2, 3], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
values = np.arange(6, dtype=np.float32).reshape(2, 3)
buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, desc.get_size())
cl.enqueue_copy(queue, buffer, values).wait()
buffer_memory = oi.make_memory(desc, engine, buffer)
wrapped = oi.get_mem_object(buffer_memory)
same_cl_mem = wrapped is not None and wrapped.int_ptr == buffer.int_ptr
view = buffer_memory.map_data()
print(f"buffer:  cl.Buffer of {buffer.size} bytes wrapped as {oi.get_memory_kind(buffer_memory)} "
      f"memory (same cl_mem: {same_cl_mem}); oneDNN reads {view.tolist()}")
assert same_cl_mem and np.array_equal(view, values)
buffer_memory.unmap_data(view)

# A USM allocation, written through oneDNN and read back by a USM copy.
pointer = dnnl.usm.device_alloc(context, device, desc.get_size())
try:
    usm_memory = oi.make_memory(desc, engine, oi.memory_kind.usm, pointer)
    view = usm_memory.map_data()
    view[...] = 2 * values
    usm_memory.unmap_data(view)
    back = np.empty_like(values)
    dnnl.usm.memcpy(queue, back, pointer, desc.get_size())
    print(f"usm:     {dnnl.usm.pointer_type(context, pointer)} USM pointer {pointer:#x} wrapped as "
          f"{oi.get_memory_kind(usm_memory)} memory (data handle matches: "
          f"{usm_memory.get_data_handle() == pointer}); written by oneDNN, copied back {back.tolist()}")
    assert np.array_equal(back, 2 * values)
    del usm_memory
finally:
    dnnl.usm.free(context, pointer)

stream.wait()
print("demo:    OK")
