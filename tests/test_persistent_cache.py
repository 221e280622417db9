"""dnnl.cache.persistent: engine and primitive cache blobs kept on disk and
reused by a new process.

Fresh processes (``sys.executable`` with a small script) make an engine and
primitives through the cache: the first one, in an empty directory, compiles
and stores; the next one loads everything (oneDNN's verbose lines say
``create:persistent_cache_hit``); damaged, truncated, empty and foreign files
are refused and rebuilt; results are checked against NumPy every time. Two
processes (multiprocessing, ``spawn``: OpenCL runtimes are not fork-safe)
rewrite the same keys while a third loads them and never sees a partial
file. A directory that cannot be written is a clear error at construction,
and a counted, warned fallback after.

This module imports neither pyopencl nor helpers at the top: the spawned
processes import it, and must choose the OpenCL device first.
"""

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import dnnl_ocl_interop as dnnl
from shared_primitives import SHARED_PRIMITIVES
from shared_primitives import load as load_shared_primitives

# ------------------------------------------- what every process builds
#
# The test process, the script children and the spawned workers build their
# descriptors from one source (shared_primitives.py), so their cache blob ids
# are equal.

_shared = load_shared_primitives()
gpu_device, descriptors, make_inputs, run = (
    _shared["gpu_device"], _shared["descriptors"], _shared["inputs"], _shared["run"])

NAMES = ["matmul", "convolution_forward", "softmax_forward"]
SEEDS = {name: 10 * i for i, name in enumerate(NAMES)}

# A fresh process: engine and primitives through the cache in argv[1], the
# inputs and results saved to argv[2], the counters on the last line.
_CHILD_START = SHARED_PRIMITIVES + textwrap.dedent("""
    import json, sys
    import dnnl_ocl_interop as dnnl
    dnnl.emulation.ensure_device()
    import pyopencl as cl

    directory, out, seeds = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    device = gpu_device(cl)
    context = cl.Context([device])
""")
_CHILD = _CHILD_START + textwrap.dedent("""
    cache = dnnl.cache.persistent(directory)
    engine = cache.engine(device, context)
    stream = dnnl.ocl_interop.make_stream(engine, cl.CommandQueue(context, device))
    dnnl.set_verbose(2)  # creation lines say where each primitive came from
    saved = {}
    for name, (pd, arg_descs) in descriptors(dnnl, engine).items():
        primitive = cache.primitive(pd)
        assert type(primitive) is getattr(dnnl, name), type(primitive)
        values = inputs(dnnl, arg_descs, seeds[name])
        saved[name] = run(dnnl, primitive, stream, engine, arg_descs, values)
        saved.update({f"{name}.{arg}": v for arg, v in values.items()})
    dnnl.set_verbose(0)
    np.savez(out, **saved)
    print("COUNTS " + json.dumps(cache.counts()), flush=True)
""")


# A fresh process with the cache installed for the whole process: the engine
# made without it, each primitive by its family's constructor as any code
# makes it, twice (the second left to oneDNN's in-memory cache), and a graph
# pattern (not served: no cache blob for compiled partitions).
_INSTALLED = _CHILD_START + textwrap.dedent("""
    from dnnl_ocl_interop.graph import patterns
    cache = dnnl.cache.install(directory)
    assert dnnl.cache.installed() is cache
    engine = dnnl.ocl_interop.make_engine(device, context)
    stream = dnnl.ocl_interop.make_stream(engine, cl.CommandQueue(context, device))
    dnnl.set_verbose(2)  # creation lines say where each primitive came from
    saved = {}
    for name, (pd, arg_descs) in descriptors(dnnl, engine).items():
        family = getattr(dnnl, name)
        primitive = family(pd)
        assert type(primitive) is family, type(primitive)
        assert type(family(pd)) is family  # a repeat
        values = inputs(dnnl, arg_descs, seeds[name])
        saved[name] = run(dnnl, primitive, stream, engine, arg_descs, values)
        saved.update({f"{name}.{arg}": v for arg, v in values.items()})
    dnnl.set_verbose(0)
    before = cache.counts()
    gengine = dnnl.graph.ocl_interop.make_engine_with_allocator(device, context,
                                                                dnnl.graph.allocator())
    patterns.mlp(gengine, 4, 8, 16)
    assert cache.counts() == before, (before, cache.counts())
    np.savez(out, **saved)
    print("COUNTS " + json.dumps(cache.counts()), flush=True)
""")


def _reference(name, values):
    """NumPy's result of primitive `name` on `values` ({ARG_*: array})."""
    src = values[dnnl.ARG_SRC].astype(np.float64)
    if name == "matmul":
        out = src @ values[dnnl.ARG_WEIGHTS] + values[dnnl.ARG_BIAS]
        return np.maximum(out, 0.0)
    if name == "convolution_forward":
        windows = sliding_window_view(np.pad(src, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
        return np.einsum("nchwkl,ockl->nohw", windows, values[dnnl.ARG_WEIGHTS])
    if name == "softmax_forward":
        e = np.exp(src - src.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    raise AssertionError(name)


def _run_child(directory, tmp_path, tag, script=_CHILD):
    """Runs `script` (_CHILD or _INSTALLED) on `directory`; (counters,
    stdout). Checks every result against NumPy."""
    out = tmp_path / f"{tag}.npz"
    child = subprocess.run([sys.executable, "-c", script, str(directory), str(out), json.dumps(SEEDS)],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, f"exit {child.returncode}: {child.stderr[-3000:]}"
    counts_lines = [line for line in child.stdout.splitlines() if line.startswith("COUNTS ")]
    assert len(counts_lines) == 1, child.stdout[-3000:]
    saved = np.load(out)
    for name in NAMES:
        values = {int(key.split(".")[1]): saved[key] for key in saved.files
                  if key.startswith(f"{name}.")}
        result, expected = saved[name], _reference(name, values)
        assert result.shape == expected.shape, name
        np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5, err_msg=name)
        assert np.any(result != 0), f"{name}: a result of zeros proves nothing"
    return json.loads(counts_lines[0][len("COUNTS "):]), child.stdout


def _counts(hits=0, misses=0, rejected=0, stored=0, store_errors=0, repeats=0):
    return {"hits": hits, "misses": misses, "rejected": rejected, "stored": stored,
            "store_errors": store_errors, "repeats": repeats}


def _persistent_hit_kinds(stdout):
    """Primitive kinds oneDNN's verbose lines report as loaded from a blob."""
    fields = [line.split(",") for line in stdout.splitlines()
              if ",create:persistent_cache_hit," in line and ",gpu," in line]
    return sorted(f[f.index("gpu") + 1] for f in fields)


ALL = 1 + len(NAMES)  # the engine and each primitive


def _expected_files(directory, cl_device, engine):
    cache = dnnl.cache.persistent(directory)
    return sorted([os.path.basename(cache.engine_path(cl_device))]
                  + [os.path.basename(cache.primitive_path(pd))
                     for pd, _ in descriptors(dnnl, engine).values()])


# ------------------------------------------- store, then load in a new process

@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A directory filled by a first fresh process, and its counters."""
    tmp = tmp_path_factory.mktemp("stored")
    directory = tmp / "cache"
    counts, _ = _run_child(directory, tmp, "first")
    return directory, counts


def _copy(stored, tmp_path):
    directory = tmp_path / "cache"
    shutil.copytree(stored[0], directory)
    return directory


@pytest.mark.timeout(900)
def test_first_process_compiles_and_stores_everything(stored, cl_device, engine):
    directory, counts = stored
    assert counts == _counts(misses=ALL, stored=ALL)
    assert sorted(os.listdir(directory)) == _expected_files(directory, cl_device, engine)


@pytest.mark.timeout(900)
def test_next_process_loads_everything(stored, tmp_path, cl_device, engine):
    directory = _copy(stored, tmp_path)
    before = {name: (directory / name).read_bytes() for name in os.listdir(directory)}
    counts, stdout = _run_child(directory, tmp_path, "second")
    assert counts == _counts(hits=ALL)
    # oneDNN itself says the kernels came from the blobs
    kinds = sorted(pd.get_kind().name for pd, _ in descriptors(dnnl, engine).values())
    assert _persistent_hit_kinds(stdout) == kinds
    after = {name: (directory / name).read_bytes() for name in os.listdir(directory)}
    assert after == before, "a hit rewrote a file"


# ------------------------------------------- installed for the whole process

def _primitive_files(directory, engine):
    cache = dnnl.cache.persistent(directory)
    return sorted(os.path.basename(cache.primitive_path(pd))
                  for pd, _ in descriptors(dnnl, engine).values())


@pytest.mark.timeout(900)
def test_installed_cache_serves_a_fresh_process(tmp_path, engine):
    directory = tmp_path / "cache"
    n = len(NAMES)
    counts, _ = _run_child(directory, tmp_path, "first", _INSTALLED)
    assert counts == _counts(misses=n, stored=n, repeats=n)
    assert sorted(os.listdir(directory)) == _primitive_files(directory, engine)  # no engine file

    counts, stdout = _run_child(directory, tmp_path, "second", _INSTALLED)
    assert counts == _counts(hits=n, repeats=n)
    kinds = sorted(pd.get_kind().name for pd, _ in descriptors(dnnl, engine).values())
    assert _persistent_hit_kinds(stdout) == kinds  # oneDNN loaded each from its blob

    for name in os.listdir(directory):  # damaged: refused, rebuilt, stored again
        path = directory / name
        path.write_bytes(_flip(path.read_bytes(), len(path.read_bytes()) // 2))
    counts, stdout = _run_child(directory, tmp_path, "third", _INSTALLED)
    assert counts == _counts(rejected=n, stored=n, repeats=n)
    assert _persistent_hit_kinds(stdout) == []


@pytest.fixture
def installed(tmp_path):
    cache = dnnl.cache.install(tmp_path / "installed")
    yield cache
    dnnl.cache.uninstall()
    assert dnnl.cache.installed() is None


def test_install_uninstall_and_the_object_api(tmp_path, engine):
    assert dnnl.cache.installed() is None
    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    with dnnl.cache.install(tmp_path / "a") as cache:
        assert dnnl.cache.installed() is cache
        dnnl.softmax_forward(pd)
        replaced = dnnl.cache.persistent(tmp_path / "b").install()
        assert dnnl.cache.installed() is replaced
        cache.uninstall()  # not the installed one: nothing happens
        assert dnnl.cache.installed() is replaced
        dnnl.softmax_forward(pd)
        replaced.uninstall()
    assert dnnl.cache.installed() is None
    dnnl.softmax_forward(pd)  # nobody counts it
    first = cache.counts()
    assert first["misses"] + first["hits"] == 1 and first["repeats"] == 0
    assert replaced.counts()["hits"] + replaced.counts()["misses"] == 1
    # the object API is unchanged, installed or not
    assert isinstance(cache.primitive(pd), dnnl.softmax_forward)


def test_installed_cache_from_threads(installed, engine, cl_context, cl_device):
    pds = {name: pd for name, (pd, _) in descriptors(dnnl, engine).items()}
    from helpers import run_in_threads

    made = []
    barrier = threading.Barrier(4)

    def work():
        barrier.wait()
        for _ in range(3):
            for name, pd in pds.items():
                primitive = getattr(dnnl, name)(pd)
                assert type(primitive) is getattr(dnnl, name)
                made.append(name)

    run_in_threads(work, [()] * 4)
    counts = installed.counts()
    # each creation counted once; racing first creations may both compile
    assert counts["hits"] + counts["misses"] + counts["repeats"] == len(made) == 36
    assert counts["misses"] >= len(pds) and counts["stored"] == counts["misses"]
    assert counts["rejected"] == counts["store_errors"] == 0
    assert sorted(os.listdir(installed.directory)) == _primitive_files(installed.directory, engine)
    # the primitives work
    import pyopencl as cl
    pd, arg_descs = descriptors(dnnl, engine)["matmul"]
    stream = dnnl.ocl_interop.make_stream(engine, cl.CommandQueue(cl_context, cl_device))
    values = make_inputs(dnnl, arg_descs, 9)
    result = run(dnnl, dnnl.matmul(pd), stream, engine, arg_descs, values)
    np.testing.assert_allclose(result, _reference("matmul", values), rtol=1e-4, atol=1e-5)


def test_a_failing_installed_cache_raises_from_the_creation(tmp_path, engine):
    class broken(dnnl.cache.persistent):
        def _serve(self, pd):
            raise KeyError("the cache's own failure")

    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    with broken(tmp_path).install():
        with pytest.raises(KeyError, match="the cache's own failure"):
            dnnl.softmax_forward(pd)
    assert isinstance(dnnl.softmax_forward(pd), dnnl.softmax_forward)


def test_the_hook_must_be_callable_and_give_a_primitive(engine):
    with pytest.raises(TypeError, match="hook must be a callable or None"):
        dnnl._core._set_primitive_creation_hook(42)
    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    dnnl._core._set_primitive_creation_hook(lambda pd: 42)
    try:
        with pytest.raises(TypeError, match="must be a dnnl.primitive, not int"):
            dnnl.softmax_forward(pd)
    finally:
        dnnl._core._set_primitive_creation_hook(None)
    assert isinstance(dnnl.softmax_forward(pd), dnnl.softmax_forward)


# ------------------------------------------------------------- bad files

# Bytes before an engine blob's id: magic, id size (cpp/common/cache_blobs.hpp).
ENGINE_HEADER = 16


def _flip(data, index):
    return data[:index] + bytes([data[index] ^ 0x5A]) + data[index + 1:]


DAMAGES = {
    "flipped first byte": lambda data, other: _flip(data, 0),
    "flipped middle byte": lambda data, other: _flip(data, len(data) // 2),
    "flipped last byte": lambda data, other: _flip(data, len(data) - 1),
    "truncated": lambda data, other: data[:len(data) // 2],
    "empty": lambda data, other: b"",
    "random bytes": lambda data, other: np.random.default_rng(len(data)).bytes(len(data)),
    "foreign (another key's file)": lambda data, other: other,
}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_bad_files_are_rejected_and_rebuilt(stored, tmp_path, damage, cl_device, cl_context, engine):
    """Every file damaged the same way: a fresh process refuses them all,
    builds everything, gets right results and replaces the files, which the
    next user loads."""
    directory = _copy(stored, tmp_path)
    names = sorted(os.listdir(directory))
    originals = [(directory / name).read_bytes() for name in names]
    for i, name in enumerate(names):  # the engine's gets a primitive's, and so on
        bad = DAMAGES[damage](originals[i], originals[(i + 1) % len(names)])
        assert bad != originals[i]
        (directory / name).write_bytes(bad)

    counts, stdout = _run_child(directory, tmp_path, "rebuild")
    assert counts == _counts(rejected=ALL, stored=ALL)
    assert _persistent_hit_kinds(stdout) == []
    assert sorted(os.listdir(directory)) == names  # no temporary file left

    # the rebuilt files are whole again: this process loads them all
    cache = dnnl.cache.persistent(directory)
    again = cache.engine(cl_device, cl_context)
    for pd, _ in descriptors(dnnl, again).values():
        cache.primitive(pd)
    assert cache.counts() == _counts(hits=ALL)


def _in_a_thread(call, seconds):
    """`call()` on a thread; (finished, result or exception)."""
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(_outcome(call)), daemon=True)
    thread.start()
    thread.join(seconds)
    return (not thread.is_alive()), (outcome[0] if outcome else None)


def _outcome(call):
    try:
        return call()
    except BaseException as e:  # noqa: B036 - handed to the test thread
        return e


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("in_the_way", ["FIFO", "directory"])
def test_a_blob_path_that_is_no_regular_file_is_rejected_without_blocking(
        tmp_path, engine, cl_device, cl_context, in_the_way):
    """A FIFO at a blob path would block a plain open() until a writer
    comes: it is refused like a damaged file (and replaced by the blob); a
    directory is refused too (and cannot be replaced: a store error)."""
    cache = dnnl.cache.persistent(tmp_path / "cache")
    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    paths = [cache.primitive_path(pd), cache.engine_path(cl_device)]
    for path in paths:
        os.mkfifo(path) if in_the_way == "FIFO" else os.mkdir(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the directories cannot be replaced
        for call in (lambda: cache.primitive(pd), lambda: cache.engine(cl_device, cl_context)):
            finished, result = _in_a_thread(call, 60)
            if not finished:  # a writer releases the blocked open(), then the test fails
                for path in paths:
                    try:
                        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                    except OSError:
                        pass
                pytest.fail(f"{in_the_way} at a blob path: the cache blocked")
            assert not isinstance(result, BaseException), result
    if in_the_way == "FIFO":
        assert cache.counts() == _counts(rejected=2, stored=2)
        assert all(os.path.isfile(path) for path in paths)
        again = dnnl.cache.persistent(cache.directory)  # the stored blobs load
        again.primitive(pd)
        again.engine(cl_device, cl_context)
        assert again.counts() == _counts(hits=2)
    else:
        assert cache.counts() == _counts(rejected=2, store_errors=2)


def test_engine_blob_of_another_device_id_is_rejected(tmp_path, cl_device, cl_context, engine, cl_queue):
    """A whole, undamaged engine file whose header names another device (a
    hash collision, or a file renamed by hand) never reaches oneDNN."""
    cache = dnnl.cache.persistent(tmp_path)
    blob = dnnl.ocl_interop.get_engine_cache_blob(engine)
    path = cache.engine_path(cl_device)
    with open(path, "wb") as f:  # the id's last byte changed: the checksum still holds
        f.write(_flip(blob, ENGINE_HEADER + len(dnnl.ocl_interop.get_engine_cache_blob_id(cl_device)) - 1))
    made = cache.engine(cl_device, cl_context)
    assert cache.counts() == _counts(rejected=1, stored=1)
    pd, arg_descs = descriptors(dnnl, made)["softmax_forward"]
    values = make_inputs(dnnl, arg_descs, 3)
    stream = dnnl.ocl_interop.make_stream(made, cl_queue)
    result = run(dnnl, dnnl.softmax_forward(pd), stream, made, arg_descs, values)
    np.testing.assert_allclose(result, _reference("softmax_forward", values), rtol=1e-4, atol=1e-6)
    dnnl.cache.persistent(tmp_path).engine(cl_device, cl_context)  # the rewritten file loads
    assert os.path.getsize(path) > 0


def test_engine_blob_checks(cl_device, cl_context, engine):
    """What make_engine refuses of an engine blob before oneDNN reads it:
    every cut, every flipped byte of the header and id, a flipped byte of
    oneDNN's part (the checksum), an appended byte, and a primitive's blob."""
    oi = dnnl.ocl_interop
    good = oi.get_engine_cache_blob(engine)
    id_end = ENGINE_HEADER + len(oi.get_engine_cache_blob_id(cl_device))
    assert len(good) > id_end + 8
    bad = [good[:cut] for cut in range(id_end + 9)] + [good[:-1], good + b"\0"]
    bad += [_flip(good, index) for index in range(id_end + 8)]
    bad += [_flip(good, len(good) // 2 + id_end // 2), _flip(good, len(good) - 1)]
    pd = dnnl.softmax_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.softmax_accurate,
        dnnl.memory.desc([2, 8], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab),
        dnnl.memory.desc([2, 8], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab), 1)
    bad.append(dnnl.softmax_forward(pd).get_cache_blob())
    for blob in bad:
        with pytest.raises(dnnl.invalid_arguments, match="cache_blob"):
            oi.make_engine(cl_device, cl_context, blob)
    oi.make_engine(cl_device, cl_context, good)  # and the whole one loads


# --------------------------------------------------- processes sharing a directory

def _worker(role, directory, seconds, barrier, results):
    """A spawned process: a 'writer' rewrites every key's file for `seconds`
    (what processes starting cold at once do, compressed in time); a
    'reader' loads engine and primitives through the cache meanwhile."""
    dnnl.emulation.ensure_device()
    import pyopencl as cl
    try:
        device = gpu_device(cl)
        context = cl.Context([device])
        cache = dnnl.cache.persistent(directory)
        engine = cache.engine(device, context)
        pds = [pd for pd, _ in descriptors(dnnl, engine).values()]
        files = [(cache.engine_path(device), dnnl.ocl_interop.get_engine_cache_blob(engine))]
        files += [(cache.primitive_path(pd), cache.primitive(pd).get_cache_blob()) for pd in pds]
        start = cache.counts()
        barrier.wait(timeout=300)
        deadline, loops = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            if role == "writer":
                for path, data in files:
                    cache._write(path, data)
            else:
                cache.engine(device, context)
                for pd in pds:
                    cache.primitive(pd)
            loops += 1
        end = cache.counts()
        results.put((role, loops, {k: end[k] - start[k] for k in end}, None))
    except BaseException as e:  # reported to the test, not lost in the child
        results.put((role, 0, {}, f"{type(e).__name__}: {e}"))


@pytest.mark.timeout(900)
def test_two_writers_and_a_reader_at_once(stored, tmp_path, cl_device, cl_context):
    directory = _copy(stored, tmp_path)
    names = sorted(os.listdir(directory))
    spawn = multiprocessing.get_context("spawn")
    barrier, results = spawn.Barrier(3), spawn.Queue()
    roles = ["writer", "writer", "reader"]
    processes = [spawn.Process(target=_worker, args=(role, str(directory), 8.0, barrier, results))
                 for role in roles]
    for p in processes:
        p.start()
    try:
        reports = [results.get(timeout=600) for _ in roles]
    finally:
        for p in processes:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
    errors = [r for r in reports if r[3]]
    assert not errors, errors
    for role, loops, delta, _ in reports:
        if role == "writer":
            assert loops > 10 and delta["stored"] == loops * ALL and delta["store_errors"] == 0, (role, loops, delta)
        else:
            # every load found a whole file: no partial write was ever visible
            assert loops > 1 and delta == _counts(hits=loops * ALL), (role, loops, delta)
    assert [p.exitcode for p in processes] == [0, 0, 0]
    assert sorted(os.listdir(directory)) == names  # no temporary file left
    cache = dnnl.cache.persistent(directory)
    for pd, _ in descriptors(dnnl, cache.engine(cl_device, cl_context)).values():
        cache.primitive(pd)
    assert cache.counts() == _counts(hits=ALL)


# ------------------------------------------------------ unwritable directories

def test_install_blocks_nest(tmp_path, engine):
    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    with dnnl.cache.install(tmp_path / "outer") as outer:
        with dnnl.cache.install(tmp_path / "inner") as inner:
            assert dnnl.cache.installed() is inner
            dnnl.softmax_forward(pd)
        assert dnnl.cache.installed() is outer  # the replaced one again
        dnnl.softmax_forward(pd)
    assert dnnl.cache.installed() is None
    assert inner.counts()["misses"] == 1 and outer.counts()["misses"] == 1


def test_a_descriptor_served_on_one_context_is_served_on_another(tmp_path, engine, cl_device):
    # oneDNN's in-memory cache tells engines apart by context: the same
    # descriptor on an engine of another context is loaded from the
    # directory, not counted as a repeat and compiled by oneDNN.
    import pyopencl as cl
    other = dnnl.ocl_interop.make_engine(cl_device, cl.Context([cl_device]))
    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    other_pd, _ = descriptors(dnnl, other)["softmax_forward"]
    assert other_pd.get_cache_blob_id() == pd.get_cache_blob_id()
    with dnnl.cache.install(tmp_path) as cache:
        dnnl.softmax_forward(pd)
        dnnl.softmax_forward(pd)
        dnnl.softmax_forward(other_pd)
    assert cache.counts()["repeats"] == 1
    assert cache.counts()["misses"] == 1 and cache.counts()["hits"] == 1


def test_directory_arguments(tmp_path, monkeypatch):
    as_bytes = dnnl.cache.persistent(os.fsencode(tmp_path / "b"))
    assert as_bytes.directory == str(tmp_path / "b") and (tmp_path / "b").is_dir()
    with pytest.raises(ValueError, match="directory must not be empty"):
        dnnl.cache.persistent("")
    with pytest.raises(ValueError, match="directory must not be empty"):
        dnnl.cache.persistent(b"")
    with pytest.raises(TypeError):
        dnnl.cache.persistent(None)


def test_blob_paths_too_long_for_the_system_are_misses(tmp_path, engine):
    # Blob paths beyond PATH_MAX (ENAMETOOLONG) hold no file: a miss and a
    # store error, not a file "rejected".
    cache = dnnl.cache.persistent(tmp_path)
    cache.directory = "/" + "/".join(["d" * 200] * (os.pathconf("/", "PC_PATH_MAX") // 200 + 1))
    pd, _ = descriptors(dnnl, engine)["softmax_forward"]
    with pytest.warns(RuntimeWarning, match="cannot write"):
        cache.primitive(pd)
    counts = cache.counts()
    assert counts["misses"] == 1 and counts["rejected"] == 0 and counts["store_errors"] == 1


def test_a_path_that_cannot_be_a_directory_is_a_clear_error(tmp_path):
    in_the_way = tmp_path / "file"
    in_the_way.write_bytes(b"not a directory")
    with pytest.raises(FileExistsError):
        dnnl.cache.persistent(in_the_way)
    with pytest.raises(NotADirectoryError):
        dnnl.cache.persistent(in_the_way / "below")


def test_unwritable_directory_builds_warns_once_and_counts(tmp_path, cl_device, cl_context, cl_queue):
    directory = tmp_path / "cache"
    cache = dnnl.cache.persistent(directory)
    directory.rmdir()
    directory.write_bytes(b"")  # nothing can be written below it any more
    with pytest.warns(RuntimeWarning, match="cannot write"):
        engine = cache.engine(cl_device, cl_context)
    pd, arg_descs = descriptors(dnnl, engine)["matmul"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per object, not per store
        primitive = cache.primitive(pd)
    assert isinstance(primitive, dnnl.matmul)
    assert cache.counts() == _counts(misses=2, store_errors=2)
    values = make_inputs(dnnl, arg_descs, 5)
    stream = dnnl.ocl_interop.make_stream(engine, cl_queue)
    result = run(dnnl, primitive, stream, engine, arg_descs, values)
    np.testing.assert_allclose(result, _reference("matmul", values), rtol=1e-4, atol=1e-5)


def test_read_only_directory_still_loads(stored, tmp_path, cl_device, cl_context, monkeypatch):
    """A directory filled elsewhere and made read-only is used as it is.
    Root (CAP_DAC_OVERRIDE) writes into read-only directories anyway: there
    the cache's writes are made to fail as they would (PermissionError)."""
    directory = _copy(stored, tmp_path)
    os.chmod(directory, 0o555)
    try:
        try:
            (directory / "probe").write_bytes(b"")
        except PermissionError:
            pass
        else:
            (directory / "probe").unlink()

            def refused(*args, **kwargs):
                raise PermissionError(13, "Permission denied (read-only directory)")
            monkeypatch.setattr(dnnl.cache.os, "replace", refused)
        cache = dnnl.cache.persistent(directory)
        for pd, _ in descriptors(dnnl, cache.engine(cl_device, cl_context)).values():
            cache.primitive(pd)
        assert cache.counts() == _counts(hits=ALL)
    finally:
        os.chmod(directory, 0o755)


# ---------------------------------------------------------------- arguments

def test_primitive_needs_a_family_descriptor(tmp_path, engine):
    cache = dnnl.cache.persistent(tmp_path)
    for value in (object(), engine, "matmul"):
        with pytest.raises(TypeError, match="primitive_desc"):
            cache.primitive(value)
    assert cache.counts() == _counts()


def test_counters_and_repr(tmp_path):
    cache = dnnl.cache.persistent(str(tmp_path / "new" / "dir"))
    assert os.path.isdir(cache.directory) and os.path.isabs(cache.directory)
    assert cache.counts() == _counts()
    assert "hits=0" in repr(cache) and cache.directory in repr(cache)
