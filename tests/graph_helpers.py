"""Graphs several test files build: one place for their construction."""

import numpy as np

import dnnl_ocl_interop as dnnl

g = dnnl.graph
lt = g.logical_tensor


def attention_partition(batch, seq, head):
    """The single fused partition of MatMul(Q, K^T) -> SoftMax -> MatMul(., V),
    f32, strided; logical tensor ids 0, 1, 2 (Q, K, V) in and 5 out."""
    f32, strided = lt.data_type.f32, lt.layout_type.strided
    query, key, value = (lt(i, f32, [batch, seq, head], strided) for i in range(3))
    scores = lt(3, f32, [batch, seq, seq], strided)
    probabilities = lt(4, f32, [batch, seq, seq], strided)
    output = lt(5, f32, [batch, seq, head], strided)
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
    assert len(partitions) == 1 and partitions[0].is_supported()
    return partitions[0]


def attention_reference(q, k, v):
    """NumPy attention: softmax(q @ k^T) @ v over the last axes."""
    logits = q @ np.swapaxes(k, -1, -2)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v
