"""oneDNN's caches and introspection: primitive cache blobs (a round trip
through a fresh process, refusal of bad blobs), the primitive cache
capacity, verbose output, the default fpmath mode, the jit dump, and
profiling on a stream (one time per primitive execution).

oneDNN's verbose lines (printed by libdnnl itself, flushed per line) tell
which primitives came from a cache: ``create:cache_hit`` (primitive cache),
``create:cache_miss`` (compiled), ``create:persistent_cache_hit`` (cache
blob).
"""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import emulation
from helpers import CHILD_ENGINE, CHILD_STREAM, oi, plain_desc
from shared_primitives import SHARED_PRIMITIVES
from shared_primitives import load as load_shared_primitives

ALG = dnnl.algorithm
TIME = dnnl.profiling_data_kind.time


def _rng_array(shape, seed):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ------------------------------------------- primitives shared with the child
#
# The parent and the fresh process build their descriptors from one source
# (shared_primitives.py), so the descriptors are equal by construction. Each
# is named after its primitive class.

_shared = load_shared_primitives()
descriptors, make_inputs, run_primitive = _shared["descriptors"], _shared["inputs"], _shared["run"]


_CHILD = SHARED_PRIMITIVES + CHILD_STREAM + textwrap.dedent("""
    import sys

    folder = sys.argv[1]
    dnnl.set_verbose(2)  # creation lines say where each primitive came from
    for name, (pd, arg_descs) in descriptors(dnnl, engine).items():
        family = getattr(dnnl, name)
        with open(f"{folder}/{name}.id", "rb") as f:
            assert pd.get_cache_blob_id() == f.read(), f"{name}: another cache blob id"
        with open(f"{folder}/{name}.blob", "rb") as f:
            primitive = family(pd, f.read())
        inputs = {int(k): v for k, v in np.load(f"{folder}/{name}.npz").items()}
        np.save(f"{folder}/{name}.out.npy", run(dnnl, primitive, stream, engine, arg_descs, inputs))
    print("child done", flush=True)
""")


def _create_lines(output, kind):
    """oneDNN's verbose lines for the creation of `kind` primitives (not the
    nested ones)."""
    return [line for line in output.splitlines()
            if ",create:" in line and f",gpu,{kind}," in line]


# ---------------------------------------------------------------- cache blobs

def test_cache_blob_round_trip_in_a_fresh_process(engine, stream, tmp_path):
    expected, kinds = {}, {}
    for name, (pd, arg_descs) in descriptors(dnnl, engine).items():
        kinds[name] = pd.get_kind().name  # as verbose lines name it
        primitive = getattr(dnnl, name)(pd)
        inputs = make_inputs(dnnl, arg_descs, len(name))
        expected[name] = run_primitive(dnnl, primitive, stream, engine, arg_descs, inputs)
        (tmp_path / f"{name}.id").write_bytes(pd.get_cache_blob_id())
        (tmp_path / f"{name}.blob").write_bytes(primitive.get_cache_blob())
        np.savez(tmp_path / f"{name}.npz", **{str(k): v for k, v in inputs.items()})

    child = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0 and "child done" in child.stdout, (
        f"exit {child.returncode}: {child.stderr[-3000:]}")
    for name, result in expected.items():
        # the kernels came from the blob, not from a compiler or a cache
        lines = _create_lines(child.stdout, kinds[name])
        assert len(lines) == 1 and ":persistent_cache_hit," in lines[0], (
            f"{name}: {lines or child.stdout[-3000:]}")
        loaded = np.load(tmp_path / f"{name}.out.npy")
        assert loaded.tobytes() == result.tobytes(), f"{name}: results differ"
        assert np.any(result != 0), f"{name}: a result of zeros proves nothing"


def test_cache_blob_ids_identify_descriptors(engine):
    def matmul_pd(m):
        return dnnl.matmul.primitive_desc(
            engine, plain_desc([m, 4]), plain_desc([4, 3]), plain_desc([m, 3]))

    first, same, other = matmul_pd(2), matmul_pd(2), matmul_pd(5)
    assert isinstance(first.get_cache_blob_id(), bytes) and first.get_cache_blob_id()
    assert first.get_cache_blob_id() == same.get_cache_blob_id()
    assert first.get_cache_blob_id() != other.get_cache_blob_id()


def test_cache_blob_is_loaded_in_process_too(engine, stream):
    """A blob also works in its own process, from bytes or a bytearray; with
    None the primitive is compiled."""
    pd, arg_descs = descriptors(dnnl, engine)["matmul"]
    inputs = make_inputs(dnnl, arg_descs, 3)
    blob = dnnl.matmul(pd).get_cache_blob()
    expected = run_primitive(dnnl, dnnl.matmul(pd), stream, engine, arg_descs, inputs)
    for given in (blob, bytearray(blob), None):
        primitive = dnnl.matmul(pd, given)
        assert isinstance(primitive, dnnl.matmul)
        result = run_primitive(dnnl, primitive, stream, engine, arg_descs, inputs)
        assert result.tobytes() == expected.tobytes()


def test_cache_blob_of_a_primitive_without_kernels(engine, stream):
    """A plain copy needs no kernel (oneDNN's blob of it is empty): its blob
    still makes the primitive."""
    desc = plain_desc([3, 5])
    pd = dnnl.reorder.primitive_desc(engine, desc, engine, desc)
    primitive = dnnl.reorder(pd, dnnl.reorder(pd).get_cache_blob())
    src, dst = dnnl.memory(desc, engine), dnnl.memory(desc, engine)
    x = _rng_array([3, 5], 9)
    dnnl.arrays.write(src, x)
    primitive.execute(stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    stream.wait()
    np.testing.assert_array_equal(dnnl.arrays.read(dst), x)


def _matmul(engine, m=6):
    pd = dnnl.matmul.primitive_desc(engine, plain_desc([m, 8]), plain_desc([8, 4]),
                                    plain_desc([m, 4]))
    return pd, dnnl.matmul(pd).get_cache_blob()


@pytest.mark.parametrize("value", ["text", 7, [1, 2], memoryview(b"abc")])
def test_cache_blob_of_another_type_is_a_type_error(engine, value):
    pd, _ = _matmul(engine)
    with pytest.raises(TypeError, match="cache_blob"):
        dnnl.matmul(pd, value)


def _refused(call, match):
    with pytest.raises(dnnl.error, match=match) as info:
        call()
    assert info.value.status == dnnl.status.invalid_arguments


def test_empty_and_foreign_cache_blobs_are_refused(engine):
    pd, blob = _matmul(engine)
    _refused(lambda: dnnl.matmul(pd, b""), "not a primitive cache blob")
    _refused(lambda: dnnl.matmul(pd, bytes(range(256)) * 4), "not a primitive cache blob")
    engine_blob = oi.get_engine_cache_blob(engine)
    _refused(lambda: dnnl.matmul(pd, engine_blob), "not a primitive cache blob")


def test_cache_blob_of_another_descriptor_is_refused(engine):
    pd, blob = _matmul(engine, m=6)
    other_pd, other_blob = _matmul(engine, m=7)  # same kernel names, other sizes
    _refused(lambda: dnnl.matmul(pd, other_blob), "another primitive descriptor")
    _refused(lambda: dnnl.matmul(other_pd, blob), "another primitive descriptor")
    relu_pd = dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, ALG.eltwise_relu,
        plain_desc([6, 4]), plain_desc([6, 4]))
    _refused(lambda: dnnl.eltwise_forward(relu_pd, blob), "another primitive descriptor")


# A child, so that a blob the checks let through to oneDNN shows as a failed
# test rather than a crashed session.
_DAMAGE_CHILD = CHILD_ENGINE + textwrap.dedent("""
    desc = lambda dims: dnnl.memory.desc(dims, dnnl.memory.data_type.f32,
                                         dnnl.memory.format_tag.ab)
    pd = dnnl.matmul.primitive_desc(engine, desc([6, 8]), desc([8, 4]), desc([6, 4]))
    blob = dnnl.matmul(pd).get_cache_blob()
    id_size = len(pd.get_cache_blob_id())
    header = 8 + 8 + id_size + 8
    assert len(blob) > header + 16, len(blob)
    cuts = sorted({1, 7, 8, 12, 16, 16 + id_size // 2, 16 + id_size, header - 1, header,
                   header + 8, (header + len(blob)) // 2, len(blob) - 1})
    flips = sorted({0, 9, 20, 16 + id_size - 1, header - 3, header, header + 5,
                    (header + len(blob)) // 2, len(blob) - 1})
    damaged = [("cut", n, blob[:n]) for n in cuts]
    damaged += [("flip", i, blob[:i] + bytes([blob[i] ^ 0x5A]) + blob[i + 1:]) for i in flips]
    damaged += [("append", 1, blob + b"\\0")]
    for how, where, bad in damaged:
        print(how, where, flush=True)
        try:
            dnnl.matmul(pd, bad)
        except dnnl.error as e:
            assert e.status == dnnl.status.invalid_arguments, (how, where, e)
            continue
        raise AssertionError(f"{how} at {where}: accepted")
    print("refused", len(damaged), flush=True)
""")


def test_damaged_cache_blobs_are_refused_before_onednn_reads_them():
    child = subprocess.run([sys.executable, "-c", _DAMAGE_CHILD], capture_output=True,
                           text=True, timeout=300)
    last = (child.stdout.strip().splitlines() or ["(no output)"])[-1]
    assert child.returncode == 0, f"exit {child.returncode} after {last}: {child.stderr[-3000:]}"
    assert last.startswith("refused "), child.stdout[-2000:]


# ------------------------------------------------------------ primitive cache

@pytest.fixture
def verbose():
    """oneDNN's verbose output at level 2 for the test (0 again after)."""
    dnnl.set_verbose(2)
    yield
    dnnl.set_verbose(0)


@pytest.fixture
def restore_capacity():
    capacity = dnnl.get_primitive_cache_capacity()
    yield
    dnnl.set_primitive_cache_capacity(capacity)


def test_primitive_cache_capacity_round_trip(restore_capacity):
    for capacity in (7, 0, 300):
        dnnl.set_primitive_cache_capacity(capacity)
        assert dnnl.get_primitive_cache_capacity() == capacity
    with pytest.raises(dnnl.error) as info:
        dnnl.set_primitive_cache_capacity(-1)
    assert info.value.status == dnnl.status.invalid_arguments
    assert dnnl.get_primitive_cache_capacity() == 300


def test_primitive_cache_capacity_decides_cache_hits(engine, restore_capacity, verbose, capfd):
    def create_twice():
        capfd.readouterr()
        for _ in range(2):  # a shape no other test uses
            dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
                engine, dnnl.prop_kind.forward_inference, ALG.eltwise_tanh,
                plain_desc([7, 13, 3]), plain_desc([7, 13, 3])))
        return [line.split(",")[3] for line in _create_lines(capfd.readouterr().out, "eltwise")]

    dnnl.set_primitive_cache_capacity(0)  # also empties the cache
    assert create_twice() == ["create:cache_miss", "create:cache_miss"]
    dnnl.set_primitive_cache_capacity(16)
    assert create_twice() == ["create:cache_miss", "create:cache_hit"]


# -------------------------------------------------------------------- verbose

def test_set_verbose_levels(engine, stream, capfd):
    desc = plain_desc([3, 11])
    pd = dnnl.eltwise_forward.primitive_desc(engine, dnnl.prop_kind.forward_inference,
                                             ALG.eltwise_abs, desc, desc)
    src, dst = dnnl.memory(desc, engine), dnnl.memory(desc, engine)
    dnnl.arrays.write(src, _rng_array([3, 11], 4))
    try:
        for level in (0, 1, 2):
            dnnl.set_verbose(level)
            capfd.readouterr()
            dnnl.eltwise_forward(pd).execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
            stream.wait()
            out = capfd.readouterr().out
            creates = _create_lines(out, "eltwise")
            executes = [line for line in out.splitlines()
                        if ",exec," in line and ",gpu,eltwise," in line]
            assert (len(creates), len(executes)) == [(0, 0), (0, 1), (1, 1)][level], out
    finally:
        dnnl.set_verbose(0)
    for level in (-1, 3):
        with pytest.raises(dnnl.error) as info:
            dnnl.set_verbose(level)
        assert info.value.status == dnnl.status.invalid_arguments


# ---------------------------------------------------------- default fpmath mode

def test_default_fpmath_mode_round_trip():
    original = dnnl.get_default_fpmath_mode()
    assert original == dnnl.fpmath_mode.strict  # unless ONEDNN_DEFAULT_FPMATH_MODE says otherwise
    earlier = dnnl.primitive_attr()
    try:
        for mode in (dnnl.fpmath_mode.bf16, dnnl.fpmath_mode.tf32, dnnl.fpmath_mode.any):
            dnnl.set_default_fpmath_mode(mode)
            assert dnnl.get_default_fpmath_mode() == mode
            # attributes made from now on take it; those made before keep theirs
            assert dnnl.primitive_attr().get_fpmath_mode() == mode
            assert earlier.get_fpmath_mode() == original
    finally:
        dnnl.set_default_fpmath_mode(original)
    assert dnnl.get_default_fpmath_mode() == original
    assert dnnl.primitive_attr().get_fpmath_mode() == original


def test_default_fpmath_mode_reaches_the_descriptor(engine, verbose, capfd):
    """The verbose line of a primitive made without `attr` (a fresh attribute
    per call, as C++'s default one) shows the default mode in force then."""
    src, wei, dst = plain_desc([3, 17]), plain_desc([17, 2]), plain_desc([3, 2])
    try:
        for mode, shown in ((dnnl.fpmath_mode.bf16, "attr-fpmath:bf16"),
                            (dnnl.fpmath_mode.strict, None)):
            dnnl.set_default_fpmath_mode(mode)
            capfd.readouterr()
            dnnl.matmul(dnnl.matmul.primitive_desc(engine, src, wei, dst))
            (line,) = _create_lines(capfd.readouterr().out, "matmul")
            assert (shown in line) if shown else ("attr-fpmath" not in line), line
    finally:
        dnnl.set_default_fpmath_mode(dnnl.fpmath_mode.strict)


# ------------------------------------------------------------------- jit dump

def test_set_jit_dump(engine, restore_capacity, tmp_path, monkeypatch):
    """With the dump on, oneDNN writes each GPU kernel it builds to a file in
    the current directory. It reads the binary back with the Intel-only
    CL_KERNEL_BINARY_PROGRAM_INTEL, which the emulated device does not answer:
    there, creating a primitive fails (invalid_arguments) while the dump is on."""
    monkeypatch.chdir(tmp_path)
    dnnl.set_primitive_cache_capacity(0)  # compile, whatever earlier tests made
    desc = plain_desc([5, 19])

    def create():
        pd = dnnl.eltwise_forward.primitive_desc(engine, dnnl.prop_kind.forward_inference,
                                                 ALG.eltwise_square, desc, desc)
        return dnnl.eltwise_forward(pd)

    try:
        dnnl.set_jit_dump(1)
        if emulation.is_enabled():
            with pytest.raises(dnnl.error) as info:
                create()
            assert info.value.status == dnnl.status.invalid_arguments
        else:
            create()
            assert any(p.name.startswith("dnnl_dump_gpu_") for p in tmp_path.iterdir())
    finally:
        dnnl.set_jit_dump(0)
    before = set(os.listdir(tmp_path))
    create()
    assert set(os.listdir(tmp_path)) == before


# ------------------------------------------------------------------ profiling

def _relu_and_matmul(engine):
    """Two primitives with their arguments."""
    a, w, d = plain_desc([16, 32]), plain_desc([32, 8]), plain_desc([16, 8])
    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, ALG.eltwise_relu, a, a))
    matmul = dnnl.matmul(dnnl.matmul.primitive_desc(engine, a, w, d))
    src, act, wei, dst = (dnnl.memory(x, engine) for x in (a, a, w, d))
    dnnl.arrays.write(src, _rng_array([16, 32], 1))
    dnnl.arrays.write(wei, _rng_array([32, 8], 2))
    return ((relu, {dnnl.ARG_SRC: src, dnnl.ARG_DST: act}),
            (matmul, {dnnl.ARG_SRC: act, dnnl.ARG_WEIGHTS: wei, dnnl.ARG_DST: dst}))


@pytest.fixture
def profiling_stream(engine):
    return dnnl.stream(engine, dnnl.stream.flags.profiling)


def test_profiling_gives_one_positive_time_per_execution(engine, profiling_stream):
    relu, matmul = _relu_and_matmul(engine)
    assert dnnl.get_profiling_data(profiling_stream, TIME) == []
    started = time.perf_counter_ns()
    executions = [relu, matmul, relu, matmul, matmul]
    for primitive, args in executions:
        primitive.execute(profiling_stream, args)
    # ocl_interop.execute on the stream's queue is profiled as well
    assert oi.execute(relu[0], profiling_stream, relu[1]) is None  # in-order queue
    times = dnnl.get_profiling_data(profiling_stream, TIME)  # waits for the stream
    elapsed = time.perf_counter_ns() - started
    assert len(times) == len(executions) + 1, times
    assert all(isinstance(t, int) and t > 0 for t in times), times
    # device durations of in-order work fit in the host's wall time around it
    assert sum(times) <= elapsed, (times, elapsed)

    dnnl.reset_profiling(profiling_stream)
    assert dnnl.get_profiling_data(profiling_stream, TIME) == []
    matmul[0].execute(profiling_stream, matmul[1])
    assert len(dnnl.get_profiling_data(profiling_stream, TIME)) == 1


def test_profiling_stream_queue_is_usable_by_the_user(engine, profiling_stream):
    """The profiling stream's queue (oneDNN made it, with profiling enabled)
    is the user's to enqueue on, and oneDNN's work on it is profiled."""
    queue = oi.get_command_queue(profiling_stream)
    assert queue.properties & cl.command_queue_properties.PROFILING_ENABLE
    relu, _ = _relu_and_matmul(engine)
    marker = cl.enqueue_marker(queue)
    event = oi.execute(relu[0], profiling_stream, relu[1], deps=[marker])
    assert event is None
    (t,) = dnnl.get_profiling_data(profiling_stream, TIME)
    assert t > 0


def test_profiling_needs_a_profiling_stream(engine, stream):
    relu, _ = _relu_and_matmul(engine)
    relu[0].execute(stream, relu[1])
    for call in (lambda: dnnl.reset_profiling(stream),
                 lambda: dnnl.get_profiling_data(stream, TIME)):
        _refused(call, "stream.flags.profiling")


def test_profiling_on_a_user_queue_with_profiling_enabled(engine, cl_context, cl_device):
    """oneDNN gives a stream on a user's queue profiling from the queue's
    CL_QUEUE_PROFILING_ENABLE only when it was built with
    ONEDNN_EXPERIMENTAL_PROFILING; otherwise the refusal says so."""
    queue = cl.CommandQueue(cl_context, cl_device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    stream = oi.make_stream(engine, queue)
    relu, _ = _relu_and_matmul(engine)
    relu[0].execute(stream, relu[1])
    try:
        times = dnnl.get_profiling_data(stream, TIME)
    except dnnl.error as e:
        assert e.status == dnnl.status.invalid_arguments
        assert "ONEDNN_EXPERIMENTAL_PROFILING" in str(e) and "get_command_queue" in str(e)
    else:
        assert len(times) == 1 and times[0] > 0, times


def test_profiling_refuses_out_of_order_queues_and_undefined_kinds(engine, profiling_stream):
    with pytest.raises(dnnl.error) as info:
        dnnl.stream(engine, dnnl.stream.flags.profiling | dnnl.stream.flags.out_of_order)
    assert info.value.status == dnnl.status.invalid_arguments
    _refused(lambda: dnnl.get_profiling_data(profiling_stream, dnnl.profiling_data_kind.undef),
             "profiling_data_kind.time")
    with pytest.raises(TypeError):
        dnnl.get_profiling_data(profiling_stream, 1)


def test_streams_without_an_order_flag_are_in_order(engine):
    """oneDNN makes them in order but would not mark them so, and its
    ocl_interop execute would crash on them (known-problems.md)."""
    relu, _ = _relu_and_matmul(engine)
    for flags in (dnnl.stream.flags.profiling, dnnl.stream.flags(0)):
        stream = dnnl.stream(engine, flags)
        assert oi.execute(relu[0], stream, relu[1]) is None  # in-order: no event
        stream.wait()
    ooo = dnnl.stream(engine, dnnl.stream.flags.out_of_order)
    event = oi.execute(relu[0], ooo, relu[1])
    assert isinstance(event, cl.Event)
    event.wait()
