"""dnnl.graph.patterns: the fused attention (SDPA, GQA) and MLP builders against NumPy,
their cache, and their checks of inputs. Attention runs at 16 to 160 keys,
the sizes people use included (32, 64, 128: rows where oneDNN 3.13.1's
softmax needs the sub-groups of 16 the emulation asks for,
docs/known-problems.md)."""

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from helpers import download, g, goi, lt, upload, usm

pat = g.patterns


@pytest.fixture(scope="module")
def pool():
    return g.allocators.caching_pool()


@pytest.fixture(scope="module")
def graph_engine(cl_device, cl_context, pool):
    yield goi.make_engine_with_allocator(cl_device, cl_context, pool.allocator)
    pat.clear_cache()  # the cache holds the engine


@pytest.fixture
def graph_stream(graph_engine, cl_queue):
    return dnnl.ocl_interop.make_stream(graph_engine, cl_queue)


@pytest.fixture
def device_arrays(cl_context, cl_device, cl_queue):
    """Uploads NumPy arrays to new USM device allocations; returns pointers."""
    held = []

    def put(array, dtype=None):
        array = np.ascontiguousarray(array, dtype=dtype)
        block = usm.allocation(cl_context, max(array.nbytes, 1), "device", cl_device)
        held.append(block)
        upload(cl_queue, block.ptr, array)
        return block.ptr

    yield put
    cl_queue.finish()
    for block in held:
        block.free()


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sdpa_reference(q, k, v, scale, mask=None):
    scores = (q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)) * scale
    if mask is not None:
        scores = scores + mask
    return softmax(scores) @ v.astype(np.float64)


def causal_mask(seq_q, seq_kv):
    """Bottom-right: query i sees keys j <= i + seq_kv - seq_q."""
    i, j = np.arange(seq_q)[:, None], np.arange(seq_kv)[None, :]
    return np.where(j <= i + seq_kv - seq_q, 0.0, -np.inf)


@pytest.mark.parametrize("mask", [None, "additive", "causal"])
@pytest.mark.parametrize("dtype, tol", [("f32", 1e-4), ("f16", 2e-2)])
@pytest.mark.parametrize("seq_q, seq_kv", [(8, 16), (16, 16), (16, 32), (32, 64), (16, 128)])
def test_sdpa(graph_engine, graph_stream, cl_queue, device_arrays, mask, dtype, tol,
              seq_q, seq_kv):
    batch, heads, size = 2, 2, 8
    np_dtype = np.float32 if dtype == "f32" else np.float16
    p = pat.sdpa(graph_engine, batch, heads, seq_q, seq_kv, size, dtype=dtype, mask=mask)
    assert p.fused and p.partitions == 1, p.implementation
    rng = np.random.default_rng(seq_q + seq_kv)
    q = rng.uniform(-1, 1, (batch, heads, seq_q, size)).astype(np_dtype)
    k, v = (rng.uniform(-1, 1, (batch, heads, seq_kv, size)).astype(np_dtype) for _ in "kv")
    args = [device_arrays(a) for a in (q, k, v)]
    m = None
    if mask == "additive":
        m = rng.uniform(-2, 2, (batch, 1, seq_q, seq_kv)).astype(np_dtype)
        m[..., seq_kv // 2:] = -np.inf  # as the example: padding keys masked out
        args.append(device_arrays(m))
    elif mask == "causal":
        m = causal_mask(seq_q, seq_kv)
    out, event = p(graph_stream, *args)
    if event is not None:
        event.wait()
    graph_stream.wait()
    result = download(cl_queue, out.get_data_handle(), (batch, heads, seq_q, size), np_dtype)
    expected = sdpa_reference(q, k, v, 1 / np.sqrt(size), m)
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=tol, atol=tol)


def to_bf16_bits(array):
    """bf16 bit patterns (uint16) of `array`, rounded to nearest even."""
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("mask", [None, "causal"])
def test_sdpa_bf16(graph_engine, graph_stream, cl_queue, device_arrays, mask):
    batch, heads, seq_q, seq_kv, size = 1, 2, 8, 16, 8
    p = pat.sdpa(graph_engine, batch, heads, seq_q, seq_kv, size, dtype="bf16", mask=mask)
    rng = np.random.default_rng(17)
    q = to_bf16_bits(rng.uniform(-1, 1, (batch, heads, seq_q, size)))
    k, v = (to_bf16_bits(rng.uniform(-1, 1, (batch, heads, seq_kv, size))) for _ in "kv")
    out, _ = p(graph_stream, *(device_arrays(a) for a in (q, k, v)))
    graph_stream.wait()
    result = from_bf16_bits(download(cl_queue, out.get_data_handle(),
                                     (batch, heads, seq_q, size), np.uint16))
    expected = sdpa_reference(*(from_bf16_bits(a) for a in (q, k, v)), 1 / np.sqrt(size),
                              None if mask is None else causal_mask(seq_q, seq_kv))
    np.testing.assert_allclose(result, expected, rtol=3e-2, atol=3e-2)


def test_sdpa_long_rows(graph_engine, graph_stream, cl_queue, device_arrays):
    """160 keys a row: beyond 128, oneDNN's softmax reduces a work-group."""
    q_shape, kv_shape = (1, 1, 4, 16), (1, 1, 160, 16)
    p = pat.sdpa(graph_engine, 1, 1, 4, 160, 16, mask="causal")
    rng = np.random.default_rng(19)
    q = rng.uniform(-1, 1, q_shape).astype(np.float32)
    k, v = (rng.uniform(-1, 1, kv_shape).astype(np.float32) for _ in "kv")
    out, _ = p(graph_stream, *(device_arrays(a) for a in (q, k, v)))
    graph_stream.wait()
    np.testing.assert_allclose(download(cl_queue, out.get_data_handle(), q_shape),
                               sdpa_reference(q, k, v, 0.25, causal_mask(4, 160)),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mask", [None, "additive", "causal"])
@pytest.mark.parametrize("q_heads, kv_heads, seq_kv", [(4, 2, 16), (4, 1, 16), (4, 2, 32), (4, 2, 64),
                                                      (4, 2, 128), (4, 1, 128)])
def test_gqa(graph_engine, graph_stream, cl_queue, device_arrays, mask, q_heads, kv_heads, seq_kv):
    batch, seq_q, size = 2, 8, 8
    rep = q_heads // kv_heads
    p = pat.gqa(graph_engine, batch, q_heads, kv_heads, seq_q, seq_kv, size, mask=mask)
    assert p.fused, p.implementation
    assert p.input_shapes[:3] == [[batch, kv_heads, rep, seq_q, size],
                                  [batch, kv_heads, 1, seq_kv, size],
                                  [batch, kv_heads, 1, seq_kv, size]]
    rng = np.random.default_rng(23)
    q = rng.uniform(-1, 1, (batch, q_heads, seq_q, size)).astype(np.float32)
    k, v = (rng.uniform(-1, 1, (batch, kv_heads, seq_kv, size)).astype(np.float32) for _ in "kv")
    args = [device_arrays(a) for a in (q, k, v)]
    m = None
    if mask == "additive":
        m = rng.uniform(-2, 2, (batch, 1, 1, seq_q, seq_kv)).astype(np.float32)
        args.append(device_arrays(m))
        m = m[:, 0]  # [batch, 1, seq_q, seq_kv] for the 4-D reference
    elif mask == "causal":
        m = causal_mask(seq_q, seq_kv)
    out, _ = p(graph_stream, *args)
    graph_stream.wait()
    result = download(cl_queue, out.get_data_handle(), q.shape)
    expected = sdpa_reference(q, np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1),
                              1 / np.sqrt(size), m)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="multiple"):
        pat.gqa(graph_engine, batch, 3, 2, seq_q, seq_kv, size)


def test_sdpa_scale_and_given_output(graph_engine, graph_stream, cl_queue, device_arrays):
    shape = (1, 1, 4, 16)
    p = pat.sdpa(graph_engine, 1, 1, 4, 16, 16, scale=0.5)
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, shape).astype(np.float32)
    k, v = (rng.uniform(-1, 1, (1, 1, 16, 16)).astype(np.float32) for _ in range(2))
    out_ptr = device_arrays(np.zeros(shape, np.float32))
    out, _ = p(graph_stream, *(device_arrays(a) for a in (q, k, v)), output=out_ptr)
    graph_stream.wait()
    assert out.get_data_handle() == out_ptr
    np.testing.assert_allclose(download(cl_queue, out_ptr, shape), sdpa_reference(q, k, v, 0.5),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype, tol", [("f32", 1e-4), ("f16", 3e-2)])
def test_gated_mlp(graph_engine, graph_stream, cl_queue, device_arrays, dtype, tol):
    tokens, hidden, inter = 4, 16, 32
    np_dtype = np.float32 if dtype == "f32" else np.float16
    p = pat.gated_mlp(graph_engine, tokens, hidden, inter, dtype)
    assert p.fused, p.implementation
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (tokens, hidden)).astype(np_dtype)
    wg, wu = (rng.uniform(-0.5, 0.5, (hidden, inter)).astype(np_dtype) for _ in range(2))
    wd = rng.uniform(-0.5, 0.5, (inter, hidden)).astype(np_dtype)
    out, _ = p(graph_stream, *(device_arrays(a) for a in (x, wg, wu, wd)))
    graph_stream.wait()
    gate, up = x.astype(np.float64) @ wg, x.astype(np.float64) @ wu
    expected = (gate / (1 + np.exp(-gate)) * up) @ wd
    result = download(cl_queue, out.get_data_handle(), (tokens, hidden), np_dtype)
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("activation", ["relu", "sigmoid"])
def test_mlp(graph_engine, graph_stream, cl_queue, device_arrays, activation):
    tokens, hidden, inter = 4, 16, 32
    p = pat.mlp(graph_engine, tokens, hidden, inter, activation=activation)
    assert p.partitions >= 1 and p.implementation
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (tokens, hidden)).astype(np.float32)
    w1 = rng.uniform(-1, 1, (hidden, inter)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (inter, hidden)).astype(np.float32)
    out, _ = p(graph_stream, *(device_arrays(a) for a in (x, w1, w2)))
    graph_stream.wait()
    h = x.astype(np.float64) @ w1
    h = np.maximum(h, 0) if activation == "relu" else 1 / (1 + np.exp(-h))
    np.testing.assert_allclose(download(cl_queue, out.get_data_handle(), (tokens, hidden)),
                               h @ w2, rtol=1e-4, atol=1e-4)


def test_deps_event_and_allocator(graph_engine, graph_stream, pool, cl_queue, device_arrays):
    """The call runs after `deps`, returns the partition's event (or None),
    and takes a missing output from the engine's allocator."""
    import pyopencl as cl

    p = pat.sdpa(graph_engine, 1, 1, 4, 16, 8)
    rng = np.random.default_rng(29)
    arrays = [rng.uniform(-1, 1, s).astype(np.float32)
              for s in ((1, 1, 4, 8), (1, 1, 16, 8), (1, 1, 16, 8))]
    args = [device_arrays(a) for a in arrays]
    before = pool.stats.allocations + pool.hits
    marker = cl.enqueue_marker(cl_queue)
    out, event = p(graph_stream, *args, deps=[marker])
    assert event is None or isinstance(event, cl.Event)
    if event is not None:
        event.wait()
    graph_stream.wait()
    assert pool.stats.allocations + pool.hits > before
    np.testing.assert_allclose(download(cl_queue, out.get_data_handle(), (1, 1, 4, 8)),
                               sdpa_reference(*arrays, 1 / np.sqrt(8)), rtol=1e-4, atol=1e-4)
    assert p.scratchpad_bytes[0] > 0  # and so the pattern passed its own scratchpad


def test_inputs_as_tensors_and_memory(graph_engine, graph_stream, cl_queue, cl_context,
                                      cl_device, device_arrays):
    p = pat.mlp(graph_engine, 2, 16, 16)
    rng = np.random.default_rng(13)
    x, w1, w2 = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((2, 16), (16, 16), (16, 16)))
    x_tensor = g.tensor(lt(0, lt.data_type.f32, [2, 16], lt.layout_type.strided), graph_engine,
                        device_arrays(x))
    desc = dnnl.memory.desc([16, 16], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
    w1_mem = dnnl.ocl_interop.make_memory(desc, graph_engine, dnnl.ocl_interop.memory_kind.usm,
                                          device_arrays(w1))
    out, _ = p(graph_stream, x_tensor, w1_mem, device_arrays(w2))
    graph_stream.wait()
    np.testing.assert_allclose(download(cl_queue, out.get_data_handle(), (2, 16)),
                               np.maximum(x @ w1, 0) @ w2, rtol=1e-4, atol=1e-4)


def test_inputs_as_usm_allocations(graph_engine, graph_stream, cl_queue, cl_context, cl_device):
    """dnnl.usm.allocation objects (typed pointers) are taken as they are,
    as every memory handle parameter takes them (they were refused, with
    advice to use dnnl.usm)."""
    p = pat.mlp(graph_engine, 2, 16, 16)
    rng = np.random.default_rng(14)
    host = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((2, 16), (16, 16), (16, 16))]
    blocks = [usm.allocation(cl_context, a.nbytes, "device", cl_device) for a in host]
    for block, a in zip(blocks, host):
        upload(cl_queue, block.ptr, a)
    out, _ = p(graph_stream, *blocks)
    graph_stream.wait()
    x, w1, w2 = host
    np.testing.assert_allclose(download(cl_queue, out.get_data_handle(), (2, 16)),
                               np.maximum(x @ w1, 0) @ w2, rtol=1e-4, atol=1e-4)


def test_dispatched(graph_engine, graph_stream, device_arrays):
    p = pat.sdpa(graph_engine, 1, 1, 4, 16, 8, mask="causal")
    args = [device_arrays(np.zeros(s, np.float32)) for s in ((1, 1, 4, 8), (1, 1, 16, 8),
                                                            (1, 1, 16, 8))]
    (info,) = p.dispatched(graph_stream, *args)
    assert info["partition_kind"] == "sdp"
    assert info["ops"][0] == "bmm1" and info["ops"][-1] == "bmm2" and "softmax" in info["ops"]
    assert info["implementation"] and info["backend"] and info["time_ms"] >= 0
    assert isinstance(info["separate_kernels"], list)
    m = pat.mlp(graph_engine, 2, 16, 16)
    args = [device_arrays(np.zeros(s, np.float32)) for s in ((2, 16), (16, 16), (16, 16))]
    assert len(m.dispatched(graph_stream, *args)) == m.partitions


def test_dispatched_refuses_a_profiling_queue(graph_engine, cl_context, cl_device, device_arrays):
    # oneDNN prints the lines there from the runtime's thread when the
    # kernels complete, possibly after the wait: dispatched() could miss them
    # (and return [] as if nothing ran)
    import pyopencl as cl
    queue = cl.CommandQueue(cl_context, cl_device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    stream = dnnl.ocl_interop.make_stream(graph_engine, queue)
    m = pat.mlp(graph_engine, 2, 16, 16)
    args = [device_arrays(np.zeros(s, np.float32)) for s in ((2, 16), (16, 16), (16, 16))]
    with pytest.raises(dnnl.invalid_arguments, match="no profiling enabled"):
        m.dispatched(stream, *args)


def test_cache(graph_engine):
    """Same arguments: the same compiled object, counted as a hit; any other
    shape, mask or scale: a new one. Shapes here are used by no other test."""
    first = pat.sdpa(graph_engine, 1, 1, 4, 16, 24, mask="causal")
    before = pat.cache_info()
    assert pat.sdpa(graph_engine, 1, 1, 4, 16, 24, mask="causal") is first
    assert pat.sdpa(graph_engine, 1, 1, 4, 16, 24, mask="causal") is first
    after = pat.cache_info()
    assert after["hits"] == before["hits"] + 2 and after["misses"] == before["misses"]
    assert after["size"] == before["size"]
    others = [pat.sdpa(graph_engine, 1, 1, 4, 16, 24, mask=None),
              pat.sdpa(graph_engine, 1, 1, 4, 16, 24, scale=0.25, mask="causal"),
              pat.sdpa(graph_engine, 1, 1, 4, 16, 24, dtype="f16", mask="causal"),
              pat.gqa(graph_engine, 1, 1, 1, 4, 16, 24, mask="causal")]
    assert all(o is not first for o in others) and len({id(o) for o in others}) == 4
    assert pat.cache_info()["misses"] == after["misses"] + 4
    nan = pat.sdpa(graph_engine, 1, 1, 4, 16, 24, scale=float("nan"))
    assert pat.sdpa(graph_engine, 1, 1, 4, 16, 24, scale=float("nan")) is nan


def test_sdpa_on_an_out_of_order_stream_is_refused(graph_engine, cl_context, cl_device, cl_queue,
                                                   device_arrays):
    """Its scale is a host scalar (known problem graph-host-scalar-null-event):
    refused before oneDNN is called, and the stream still works after."""
    import pyopencl as cl

    queue = cl.CommandQueue(cl_context, cl_device,
                            properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    stream = dnnl.ocl_interop.make_stream(graph_engine, queue)
    attention = pat.sdpa(graph_engine, 1, 1, 4, 16, 8)
    args = [device_arrays(np.zeros((1, 1, 4 if i == 0 else 16, 8), np.float32)) for i in range(3)]
    with pytest.raises(dnnl.unimplemented, match="graph-host-scalar-null-event.*in-order stream"):
        attention(stream, *args)
    m = pat.mlp(graph_engine, 2, 16, 16)
    x, w1, w2 = (np.full(s, 0.5, np.float32) for s in ((2, 16), (16, 16), (16, 16)))
    out, _ = m(stream, *(device_arrays(a) for a in (x, w1, w2)))
    stream.wait()
    np.testing.assert_allclose(download(cl_queue, out.get_data_handle(), (2, 16)),
                               np.maximum(x @ w1, 0) @ w2, rtol=1e-5)


def test_bad_arguments(graph_engine, graph_stream, cl_context, cl_device, device_arrays):
    import pyopencl.array as cl_array
    import pyopencl as cl

    for builder, args in ((pat.sdpa, (1, 1, 4, 16, 8)), (pat.mlp, (2, 16, 16))):
        with pytest.raises(TypeError, match="^engine must be a dnnl.engine .* not NoneType"):
            builder(None, *args)

    with pytest.raises(ValueError, match="dtype"):
        pat.sdpa(graph_engine, 1, 1, 4, 16, 8, dtype="f64")
    with pytest.raises(ValueError, match="mask"):
        pat.sdpa(graph_engine, 1, 1, 4, 16, 8, mask="upper")
    with pytest.raises(ValueError, match="seq_q"):
        pat.sdpa(graph_engine, 1, 1, 0, 16, 8)
    for bad, shown in ((True, "True"), (2.0, "2.0"), ("2", "'2'"), (np.int64(-1), "-1")):
        with pytest.raises(ValueError, match=f"^batch must be a positive int, not .*{shown}"):
            pat.sdpa(graph_engine, bad, 1, 4, 16, 8)
    # sizes from NumPy shapes are ints too: the same pattern as Python's ints
    assert pat.mlp(graph_engine, np.int64(2), np.int32(16), 16) is pat.mlp(graph_engine, 2, 16, 16)
    with pytest.raises(ValueError, match="activation"):
        pat.mlp(graph_engine, 2, 16, 16, activation="swish")

    p = pat.mlp(graph_engine, 2, 16, 16)
    good = [device_arrays(np.zeros(s, np.float32)) for s in ((2, 16), (16, 16), (16, 16))]
    with pytest.raises(TypeError, match="takes 3 inputs"):
        p(graph_stream, *good[:2])
    f32, strided = lt.data_type.f32, lt.layout_type.strided
    wrong_shape = g.tensor(lt(0, f32, [2, 15], strided), graph_engine, good[0])
    with pytest.raises(ValueError, match=r"src must have dims \[2, 16\]"):
        p(graph_stream, wrong_shape, *good[1:])
    wrong_dtype = g.tensor(lt(0, lt.data_type.f16, [2, 16], strided), graph_engine, good[0])
    with pytest.raises(TypeError, match="src must be f32"):
        p(graph_stream, wrong_dtype, *good[1:])
    desc = dnnl.memory.desc([16, 8], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
    small = dnnl.ocl_interop.make_memory(desc, graph_engine, dnnl.ocl_interop.memory_kind.usm,
                                         good[1])
    with pytest.raises(ValueError, match="w1 must have dims"):
        p(graph_stream, good[0], small, good[2])
    buffer_mem = dnnl.ocl_interop.make_memory(
        dnnl.memory.desc([16, 16], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab),
        graph_engine, dnnl.ocl_interop.memory_kind.buffer)
    with pytest.raises(TypeError, match="USM"):
        p(graph_stream, good[0], buffer_mem, good[2])
    queue = cl.CommandQueue(cl_context, cl_device)
    array = cl_array.zeros(queue, (16, 16), np.float32)
    with pytest.raises(TypeError, match="pyopencl arrays"):
        p(graph_stream, good[0], array, good[2])
    with pytest.raises(TypeError, match="USM"):
        p(graph_stream, good[0], np.zeros((16, 16), np.float32), good[2])
    with pytest.raises(dnnl.error):  # a pointer that is not USM memory of the context
        p(graph_stream, good[0], 4096, good[2])


def test_the_scratchpad_lives_with_the_cached_pattern_until_clear_cache(cl_device, cl_context):
    """A pattern allocates its partitions' scratchpad once, from the engine's
    allocator, and the module's cache holds the pattern: the memory comes
    back (the allocator's free) at clear_cache(), not when the caller drops
    the pattern (docs/patterns.md)."""
    import gc

    statistics = g.allocators.statistics_allocator()
    engine = goi.make_engine_with_allocator(cl_device, cl_context, statistics.allocator)
    stats = statistics.stats
    p = pat.sdpa(engine, 1, 1, 4, 16, 8)
    needed = p.scratchpad_bytes[0]
    assert needed > 0 and stats.live_bytes >= needed, (needed, stats.live_bytes)
    del p
    gc.collect()
    assert stats.live_bytes >= needed  # the cache still holds the pattern and its scratchpad
    pat.clear_cache()
    gc.collect()
    assert stats.live_bytes == 0 and stats.allocations == stats.frees, (stats.live_bytes, stats.sizes)
