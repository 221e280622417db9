"""An attention-like graph on a graph engine whose memory comes from Python.

MatMul(Q, K^T) -> SoftMax -> MatMul(., V) is fused by oneDNN into one
partition. The engine is made on pyopencl's device and context with
dnnl.graph.allocators.statistics_allocator, which oneDNN calls for the
partition's temporary memory. Prints the allocator's statistics and checks
the result against NumPy.
"""

import dnnl_ocl_interop as dnnl

print(f"device:     {dnnl.emulation.ensure_device()}")

import gc  # noqa: E402

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

g = dnnl.graph
lt = g.logical_tensor
BATCH, SEQ, HEAD = 2, 64, 16

device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
              for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)

statistics = g.allocators.statistics_allocator()
engine = g.ocl_interop.make_engine_with_allocator(device, context, statistics.allocator)
stream = dnnl.ocl_interop.make_stream(engine, queue)

f32, strided = lt.data_type.f32, lt.layout_type.strided
query, key, value = (lt(i, f32, [BATCH, SEQ, HEAD], strided) for i in range(3))
scores = lt(3, f32, [BATCH, SEQ, SEQ], strided)
probabilities = lt(4, f32, [BATCH, SEQ, SEQ], strided)
output = lt(5, f32, [BATCH, SEQ, HEAD], strided)

qk = g.op(0, g.op.kind.MatMul, [query, key], [scores], "qk")
qk.set_attr(g.op.attr.transpose_b, True)
softmax = g.op(1, g.op.kind.SoftMax, [scores], [probabilities], "softmax")
softmax.set_attr(g.op.attr.axis, -1)
pv = g.op(2, g.op.kind.MatMul, [probabilities, value], [output], "pv")

graph = g.graph(dnnl.engine.kind.gpu)
for op in (qk, softmax, pv):
    graph.add_op(op)
graph.finalize()
partitions = graph.get_partitions()
assert len(partitions) == 1 and partitions[0].is_supported(), "expected one fused partition"
partition = partitions[0]
compiled = partition.compile(partition.get_input_ports(), partition.get_output_ports(), engine)
print(f"partition:  {partition.get_ops_num()} ops fused into one compiled partition")

rng = np.random.default_rng(3)
inputs = {i: rng.standard_normal((BATCH, SEQ, HEAD)).astype(np.float32) for i in range(3)}
buffers: list = []  # USM allocations owned here, freed when the script ends


def tensor(engine, logical, data=None):
    buffer = dnnl.usm.allocation(context, logical.get_mem_size(), "device", device)
    buffers.append(buffer)
    if data is not None:
        dnnl.usm.memcpy(queue, buffer.ptr, data, data.nbytes)
    return g.tensor(logical, engine, buffer.ptr)


input_tensors = [tensor(engine, port, inputs[port.get_id()]) for port in partition.get_input_ports()]
output_tensor = tensor(engine, compiled.query_logical_tensor(output.get_id()))
for _ in range(3):
    compiled.execute(stream, input_tensors, [output_tensor])
stream.wait()

result = np.empty((BATCH, SEQ, HEAD), np.float32)
dnnl.usm.memcpy(queue, result, output_tensor.get_data_handle(), result.nbytes)
logits = inputs[0] @ inputs[1].transpose(0, 2, 1)
weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
expected = weights / weights.sum(axis=-1, keepdims=True) @ inputs[2]
error = float(np.abs(result - expected).max())

stats = statistics.stats
print(f"allocator:  {stats.allocations} allocations, {stats.frees} frees, "
      f"peak {stats.peak_bytes} bytes, {stats.live_bytes} bytes live after 3 executions")
print(f"result:     max abs error against NumPy {error:.2e}")
assert stats.allocations > 0, "the partition did not call the allocator"
assert error < 1e-5

del compiled, partition, partitions, graph, input_tensors, output_tensor, stream, engine
gc.collect()
print(f"released:   {stats.allocations} allocations, {stats.frees} frees, "
      f"{stats.live_bytes} bytes live once the engine is gone")
assert stats.allocations == stats.frees and stats.live_bytes == 0
print("graph_allocator: OK")
