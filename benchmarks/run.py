"""What the Python bridge costs over the same oneDNN calls in C++.

Runs each row's work through dnnl_ocl_interop and through the C++ baseline
(benchmarks/baseline.cpp, built here when missing), on the device the test
suite would use (the emulated Intel GPU when there is no real one), and
prints one Markdown table: median time per call in each language, the
difference and the ratio, and the goal each row is judged by.

    python benchmarks/run.py [--json PATH] [--plot PATH] [--iterations N] [--matmul-size N] [--rounds N]
                             [--only NAME] [--compare OLD.json [--from-json NEW.json]]

Each of --rounds rounds starts both sides at once, each in a fresh process
(the baseline program; this script with --python-side), and they take
turns segment by segment (benchmarks/turns.py): both sides of a row run
back to back while the other side waits, the first alternating by segment
and by round. The machine's speed changes for seconds at a time (threaded
work at times 2.5 times slower), and the same work in two processes at the
same moment can differ by half (benchmarks/process_turns.py): so each side
samples processes as it samples rounds, and a row's two sides are
measured seconds apart rather than a whole side apart. (--only NAME runs
its row's sides one after the other, each in a fresh process.) A side back
from its wait runs slower for its first tens of milliseconds, so rows timed
over a short span after a turn (the networks, the chain, the large matmul,
the graph rows, and the thread rows, each thread row its own turn) first
warm up for WARM_UP_SECONDS with their own work, on both sides. Each round measures a
row's median time per call (one median definition for both sides: the baseline
prints its samples, median_of takes the median of each side's); a row is
judged on the per-round differences (or ratios) of Python and C++: their
median, with a 95 % bootstrap confidence interval over rounds. It *meets*
its goal when the whole interval does, *misses* when none of it does, and
is *inconclusive* otherwise (run more --rounds). The JSON has every round,
the intervals and the machine.

Budgets in µs over C++ are counted in *units*: the time of the simplest
call from Python into C (UNIT_CALL, a function of CPython's own, not of
the package it judges) measured in the same round, so that they mean the
same on a faster or slower machine (PER_CALL_UNITS units per call: 1.5 µs
where the unit takes UNIT_REFERENCE_US). Rows of milliseconds, whose work
is the device's, are judged by their overhead too, within the larger of
their calls' budget and RELATIVE_BUDGET of their C++ time; their ratio is
information.

Every row checks what it made, once per round, on both sides, against
NumPy (the baseline prints a digest of each output): each destination is
filled with POISON before the row's timed work, so an execute that did
nothing leaves POISON behind and fails the check; the thread rows check
every thread's output; the creation rows run the last primitive they
made; make_memory and get_memory_kind report the memory they made or
asked about.

Rows with no C++ counterpart take another Python measurement as their
reference (in the C++ column): "execute beside a busy thread" against
execute alone, the persistent cache's warm primitive creation against the
cold one, each in a fresh process, and the dnnl.ops call against the same
call written by hand; "small network with ops" is judged against the C++
small network. --only NAME measures one row (ONLY_ROWS), both sides where
it has two.

--compare OLD.json compares the run (or, with --from-json NEW.json, an
earlier run's JSON) with OLD.json, row by row, and flags each row whose
overhead over its reference grew beyond its interval: the new interval
wholly above the old one, in units of each run's own unit (in µs when the
two runs timed different unit calls). benchmarks/reference.json is the
reference run kept in the repository.

Exits non-zero when a measurement or an output check failed, or when
--compare flags a row (not when a goal is missed).
"""

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

# NumPy's OpenBLAS threads spin on the cores the device shares here; the C++
# side has none. This program does no BLAS work while it measures.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dnnl_ocl_interop as dnnl  # noqa: E402

DEVICE = dnnl.emulation.ensure_device()  # before the first OpenCL call

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from turns import END, take_turns, turn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "benchmarks")
BASELINE = os.path.join(BUILD, "dnnl_ocl_interop_baseline")
BATCH = 100
# The unit of the per-call budgets: the simplest call from Python into C,
# timed in a loop in the same round. A function of CPython's own that reads
# a flag, not one of the package: the unit must not grow with the binding it
# judges, and must exist in a released build (the package's test hooks,
# where dnnl._core._empty() lived, do not).
UNIT_CALL, UNIT_CALL_NAME = gc.isenabled, "gc.isenabled()"
# Per-call budget, in units: 1.5 µs where the unit takes UNIT_REFERENCE_US,
# the issues' budgets in µs on the machine they were measured on. The
# budgets were first stated in units of dnnl._core._empty() (a pybind11 call
# that does nothing, a test hook), 38 per call where it took 0.04 µs; in
# run.py's loop, gc.isenabled() takes EMPTY_TO_UNIT times less (the fastest
# of 3,000 batches of 1,000 calls of each, in turns, three runs: 1.359 to
# 1.369, on the 2-core AMD EPYC of docs/benchmarks.md's table, Python 3.11,
# 2026-12-06), so the reference is 0.04 / EMPTY_TO_UNIT and each budget keeps
# its µs there.
EMPTY_TO_UNIT = 1.36
UNIT_REFERENCE_US = 0.04 / EMPTY_TO_UNIT
PER_CALL_UNITS = round(38 * EMPTY_TO_UNIT)  # 1.5 µs there
ALLOCATION_UNITS = round(75 * EMPTY_TO_UNIT)  # a Python allocator's malloc and free (3 µs there)
POOL_UNITS = round(75 * EMPTY_TO_UNIT)  # the caching pool's malloc and free, over the C pool (3 µs there)
# Rows whose time is the device's work (milliseconds: the large matmul, cold
# primitive creation in and out of process, the matmul throughput rows):
# the binding's per-call cost is judged by the per-call rows, and these rows
# judge that the binding does not slow the device's work: the overhead may
# be the larger of the calls' budget and this share of the C++ time. Their
# noise (±150 µs on the 37 ms matmul, ±2 ms on a 365 ms compile, ±3 µs on
# a 615 µs threaded matmul, 50 rounds) is 0.4 to 0.6 % of the time, so a
# budget of µs alone could never be decided (it left them inconclusive in
# every run), while 1 % can be, and a binding that slowed the device work
# by a percent or more is caught.
RELATIVE_BUDGET = 0.01
RELATIVE_ROWS = ("large matmul", "primitive creation (cold)", "primitive creation (cold, fresh process)",
                 "matmul throughput, 1 thread", "matmul throughput, 2 threads", "matmul throughput, 4 threads")
# What every destination holds before a row's timed work, on both sides
# (baseline.cpp's POISON): no row's correct output has it, so an execute
# that did nothing fails the output check.
POISON = -7777.0
BUSY_GOAL_RATIO = 2.0
# Warm creation (kernels loaded from stored blobs) against cold (compiled), in
# fresh processes: measured 0.06 (95 % CI 0.048 … 0.078) on the emulated
# device, five rounds; the goal is a tenth.
PERSISTENT_CACHE_GOAL_RATIO = 0.1
PERSISTENT_CACHE_ROW = "primitive creation (persistent cache, warm)"
FRESH_COLD_ROW = "primitive creation (cold, fresh process)"
BUSY_ROW = "execute beside a busy thread"
GRAPH_ROW = "graph execute with allocator"
POOL_ROW = "graph execute with caching pool"
# dnnl.ops: a cached call against the same work written by hand, and the
# small network written with ops against the C++ small network. An ops call
# may add OPS_CALL_UNITS over the call by hand (2 µs where the unit takes
# UNIT_REFERENCE_US).
OPS_CALL_ROW = "ops call (cached)"
OPS_NETWORK_ROW = "small network with ops"
OPS_CALL_UNITS = round(50 * EMPTY_TO_UNIT)
# dnnl.ops against C++'s execute of the same primitive (issue 45): a cached
# call with out= may add OPS_OUT_CPP_UNITS (75 of dnnl._core._empty()'s
# units, 3 µs where the unit takes UNIT_REFERENCE_US), one making its result
# array OPS_NEW_CPP_UNITS (125: 5 µs there); the small network replayed
# (ops.capture) one call's budget over C++'s network, and twenty small
# operations replayed within REPLAY_GOAL_RATIO of the same twenty in C++.
OPS_OUT_CPP_ROW = "ops call (cached, out=), against C++'s execute"
OPS_NEW_CPP_ROW = "ops call (cached, new result), against C++'s execute"
OPS_OUT_CPP_UNITS = round(75 * EMPTY_TO_UNIT)
OPS_NEW_CPP_UNITS = round(125 * EMPTY_TO_UNIT)
OPS_REPLAY_ROW = "small network replayed"
CHAIN_ROW = "20-op network"
CHAIN_OPS_ROW = "20-op network with ops"
CHAIN_REPLAY_ROW = "20-op network replayed"
REPLAY_GOAL_RATIO = 1.01
# Rows with no C++ counterpart: the note holding their reference's time, per round.
PYTHON_REFERENCES = {BUSY_ROW: "solo execute and wait",
                     PERSISTENT_CACHE_ROW: "primitive creation (persistent cache, cold)",
                     OPS_CALL_ROW: "the same call by hand"}
# Rows judged against another row's C++ time.
CPP_REFERENCES = {OPS_NETWORK_ROW: "small network", OPS_REPLAY_ROW: "small network",
                  CHAIN_OPS_ROW: CHAIN_ROW, CHAIN_REPLAY_ROW: CHAIN_ROW,
                  OPS_OUT_CPP_ROW: "execute(in-order)", OPS_NEW_CPP_ROW: "execute(in-order)"}
# Rows --only can measure alone.
ONLY_ROWS = [PERSISTENT_CACHE_ROW, FRESH_COLD_ROW, "large matmul", GRAPH_ROW, POOL_ROW,
             OPS_CALL_ROW, OPS_NETWORK_ROW, OPS_REPLAY_ROW, CHAIN_OPS_ROW, CHAIN_REPLAY_ROW]
# The attention partition of the graph rows: B x S x D. Softmax rows of S =
# 16 elements: right on the emulated device (docs/known-problems.md).
ATTENTION_SHAPE = (2, 16, 16)
GRAPH_BATCH = 20  # executes per wait in the graph rows


def median_of(samples):
    """The median of a side's samples (the mean of the two middle ones for
    an even count), for both sides."""
    return float(np.median(np.asarray(samples, dtype=float)))


# A side that has waited its turn comes back slower for its first tens of
# milliseconds: after 2 s idle, the graph row with its 21 warm-up executes
# measured +5.5 µs over the same row run straight after itself, and +0.1 µs
# with 0.3 s of warm-up executes instead (docs/benchmarks.md). Rows timed over a short span right
# after a turn warm up for this long first, on both sides (baseline.cpp's
# WARM_UP_SECONDS, checked equal by tests/test_benchmark_turns.py).
WARM_UP_SECONDS = 0.3


def warm_up(call, after_batch=lambda: None, batch=1, least=1):
    """Run `call` in batches of `batch` (each followed by after_batch) for
    WARM_UP_SECONDS, and at least `least` calls, before a row is timed."""
    start = time.perf_counter()
    calls = 0
    while calls < least or time.perf_counter() - start < WARM_UP_SECONDS:
        for _ in range(batch):
            call()
        after_batch()
        calls += batch


def median_us(repeats, batch, call, after_batch=lambda: None, last=None):
    """Median over `repeats` batches of the mean time of `batch` calls; the
    last call's result is appended to the list `last` when one is given
    (kept on every call, as the baseline keeps what its rows make)."""
    samples = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(batch):
            result = call()
        elapsed = time.perf_counter_ns() - start
        after_batch()
        samples.append(elapsed / 1e3 / batch)
    if last is not None:
        last.append(result)
    return median_of(samples)


def fastest_us(repeats, call, last=None):
    """The fastest of `repeats` calls (for work of a second or so); the
    last call's result is appended to `last` as median_us does."""
    samples = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter_ns()
        result = call()
        samples.append((time.perf_counter_ns() - start) / 1e3)
    if last is not None:
        last.append(result)
    return min(samples)


# ------------------------------------------------------------ output checks

def pattern(count):
    """The values every computing row's inputs hold, on both sides
    (baseline.cpp's pattern()): small, of both signs, in f32 arithmetic."""
    return (np.arange(count) % 7).astype(np.float32) * np.float32(0.1) - np.float32(0.3)


def attention_reference(batch, seq, head):
    """The attention partition's output for pattern() inputs (float64)."""
    q, k, v = (pattern(batch * seq * head).astype(np.float64).reshape(batch, seq, head) for _ in range(3))
    logits = q @ np.swapaxes(k, -1, -2)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


def matmul_reference(size):
    a = pattern(size * size).astype(np.float64).reshape(size, size)
    return a @ a


def network_reference():
    """Convolution (3x3, padding 1) with bias, ReLU, 2x2 max pooling and an
    inner product with bias, on pattern() tensors, as network_row runs them."""
    n, ic, oc, hw, classes = 8, 3, 16, 32, 10
    x = pattern(n * ic * hw * hw).astype(np.float64).reshape(n, ic, hw, hw)
    w = pattern(oc * ic * 9).astype(np.float64).reshape(oc, ic, 3, 3)
    b = pattern(oc).astype(np.float64)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # n ic h w 3 3
    y = np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]
    y = np.maximum(y, 0)
    pooled = y.reshape(n, oc, hw // 2, 2, hw // 2, 2).max(axis=(3, 5))
    fw = pattern(classes * oc * (hw // 2) ** 2).astype(np.float64).reshape(classes, -1)
    fb = pattern(classes).astype(np.float64)
    return pooled.reshape(n, -1) @ fw.T + fb


def chain_reference():
    """Ten times ``tanh(y + bias)`` on pattern() tensors ([16, 64], the bias a
    [1, 64] row), as chain_row and baseline.cpp's chain_network_us run them."""
    y = pattern(16 * 64).astype(np.float64).reshape(16, 64)
    bias = pattern(64).astype(np.float64).reshape(1, 64)
    for _ in range(10):
        y = np.tanh(y + bias)
    return y


# oneDNN's C values of ocl_interop::memory_kind (dnnl_ocl_types.h), as both
# sides report the kind of the memory a row made or asked about.
MEMORY_KIND_VALUES = {"usm": 0, "buffer": 1}
TINY = 64  # elements of the per-call rows' memory (f32)
# The persistent-cache child's check: its ReLU primitive on the
# convolution's output shape (8 x 16 x 32 x 32).
PERSISTENT_CACHE_RELU_ELEMENTS = 8 * 16 * 32 * 32


def memory_facts(kind, same_storage, size):
    """What the make_memory and get_memory_kind rows report of the memory
    they made or asked about, on both sides: [its kind's C value, 1 when its
    storage is the one given (else 0), its descriptor's size in bytes]."""
    return [float(MEMORY_KIND_VALUES[kind]), float(bool(same_storage)), float(size)]


def expected_outputs(matmul_size, kernel_enqueues):
    """{row (or a row's reference): the NumPy output its work must give}:
    every row of either side has one, and is checked against it."""
    relu = np.maximum(pattern(TINY), 0)
    attention = attention_reference(*ATTENTION_SHAPE)
    mid = matmul_reference(128)
    cache_relu = np.maximum(pattern(PERSISTENT_CACHE_RELU_ELEMENTS), 0)
    out = {"get_memory_kind": [float(MEMORY_KIND_VALUES["buffer"])],
           "make_memory(usm)": memory_facts("usm", True, 4 * TINY),
           "make_memory(cl_mem)": memory_facts("buffer", True, 4 * TINY),
           "make_memory(usm), unchecked": memory_facts("usm", True, 4 * TINY),
           "make_memory(cl_mem), unchecked": memory_facts("buffer", True, 4 * TINY),
           "execute(in-order)": relu, "execute(out-of-order)": relu, "chain of 100 executes": relu,
           "primitive creation (cached)": relu, "primitive creation (cold)": relu, FRESH_COLD_ROW: relu,
           BUSY_ROW: relu, "execute and wait": relu, PYTHON_REFERENCES[BUSY_ROW]: relu,
           PERSISTENT_CACHE_ROW: cache_relu, PYTHON_REFERENCES[PERSISTENT_CACHE_ROW]: cache_relu,
           "small network": network_reference(), "large matmul": matmul_reference(matmul_size),
           OPS_NETWORK_ROW: network_reference(), OPS_CALL_ROW: relu, PYTHON_REFERENCES[OPS_CALL_ROW]: relu,
           OPS_REPLAY_ROW: network_reference(), CHAIN_ROW: chain_reference(),
           CHAIN_OPS_ROW: chain_reference(), CHAIN_REPLAY_ROW: chain_reference(),
           OPS_OUT_CPP_ROW: relu, OPS_NEW_CPP_ROW: relu,
           GRAPH_ROW: attention, POOL_ROW: attention,
           "opencl kernel enqueue": np.full(TINY, float(kernel_enqueues))}
    for n in THREAD_COUNTS:  # every thread's output, one after the other
        out[thread_row("matmul throughput", n)] = np.tile(mid.ravel(), n)
        out[thread_row("graph throughput", n)] = np.tile(attention.ravel(), n)
    return out


def digest(values):
    """What the baseline prints of an output: count, sum, first 8 values."""
    values = np.asarray(values, dtype=np.float64).ravel()
    return {"n": int(values.size), "sum": float(values.sum()), "head": values[:8].tolist()}


def check_digest(side, row, got, expected):
    """Raises when the digest `got` of a row's output is not that of the
    NumPy output `expected` (f32 rounding allowed for)."""
    want = digest(expected)
    scale = float(np.abs(np.asarray(expected, dtype=np.float64)).sum()) + 1e-6
    ok = (got["n"] == want["n"] and abs(got["sum"] - want["sum"]) <= 1e-4 * scale
          and np.allclose(got["head"], want["head"], rtol=1e-4, atol=1e-5))
    if not ok:
        raise RuntimeError(f"{side} row {row!r}: output differs from NumPy's "
                           f"(got n={got['n']} sum={got['sum']:.6g} head={got['head'][:4]}, "
                           f"expected n={want['n']} sum={want['sum']:.6g} head={want['head'][:4]})")


def output_failures(side, digests, expected, rows=()):
    """Every failed check of one side's `digests`, as messages: a digest that
    differs from its NumPy output, a digest with no NumPy reference, and a
    measured row of `rows` with no digest (every row checks what it made)."""
    failures = []
    for row, got in digests.items():
        if row not in expected:
            failures.append(f"{side} row {row!r}: no NumPy reference to check its output against")
            continue
        try:
            check_digest(side, row, got, expected[row])
        except RuntimeError as e:
            failures.append(str(e))
    failures.extend(f"{side} row {row!r}: measured without an output check" for row in rows
                    if row not in digests)
    return failures


def check_outputs(sides, expected):
    """Checks the digests of every side, `sides` = [(side, digests, rows
    measured)], and raises one error listing every failure of both sides."""
    failures = [f for side, digests, rows in sides for f in output_failures(side, digests, expected, rows)]
    if failures:
        raise RuntimeError(f"{len(failures)} output check(s) failed:\n  " + "\n  ".join(failures))


# ------------------------------------------------------------ the baseline

def build_baseline():
    """Builds (or brings up to date: an incremental build) the C++ baseline."""
    import pybind11
    if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        print(f"configuring the C++ baseline in {BUILD} ...", file=sys.stderr)
        subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DDNNL_OCL_INTEROP_BUILD_BENCHMARKS=ON", f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", BUILD, "--target", "dnnl_ocl_interop_baseline"], check=True,
                   stdout=subprocess.DEVNULL)


def baseline_command(iterations, warmup, matmul_size, row=None):
    """The baseline program's command line (all rows, or `row` alone)."""
    return [BASELINE, str(iterations), str(warmup), str(matmul_size)] + ([row] if row else [])


def baseline_report(stdout):
    """(rows {name: median µs}, output digests {name: digest}) of the
    baseline's output."""
    report = json.loads(stdout.strip().splitlines()[-1])
    return {name: median_of(samples) for name, samples in report["rows"].items()}, report["checks"]


def run_baseline(iterations, warmup, matmul_size, row=None):
    """baseline_report of one baseline run (all rows, or `row` alone)."""
    out = subprocess.run(baseline_command(iterations, warmup, matmul_size, row),
                         capture_output=True, text=True, check=True, timeout=1800)
    return baseline_report(out.stdout)


# Cold creation again, each side in a fresh process doing nothing else:
# in run.py's long process the compile took 4 % longer than in C++'s (see
# docs/benchmarks.md), while the binding's share is microseconds.
FRESH_COLD_CREATIONS = 5
# What a child process (fresh cold creation, persistent cache) runs to check
# the primitive it made: the primitive on pattern() input into a POISON-filled
# destination, the output's digest printed with its time (run.py's pattern(),
# digest() and POISON, written out: the child does not import run.py).
_CHILD_CHECK = textwrap.dedent("""
    import numpy as np

    def checked(prim, engine, queue, desc):
        stream = dnnl.ocl_interop.make_stream(engine, queue)
        count = desc.get_size() // 4
        src, dst = dnnl.memory(desc, engine), dnnl.memory(desc, engine)
        values = (np.arange(count) % 7).astype(np.float32) * np.float32(0.1) - np.float32(0.3)
        dnnl.arrays.write(src, values.reshape(desc.get_dims()))
        dnnl.arrays.write(dst, np.full(desc.get_dims(), POISON, np.float32))
        prim.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
        stream.wait()
        out = dnnl.arrays.read(dst).astype(np.float64).ravel()
        return {"n": int(out.size), "sum": float(out.sum()), "head": out[:8].tolist()}
""").replace("POISON", repr(POISON))
_FRESH_COLD_CHILD = _CHILD_CHECK + textwrap.dedent("""
    import json, sys, time
    import dnnl_ocl_interop as dnnl
    dnnl.emulation.ensure_device()
    import pyopencl as cl

    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    context = cl.Context([device])
    engine = dnnl.ocl_interop.make_engine(device, context)
    tiny = dnnl.memory.desc([64], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
    dnnl.set_primitive_cache_capacity(0)
    best = made = None
    for _ in range(int(sys.argv[1])):
        start = time.perf_counter_ns()
        made = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
            engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, tiny, tiny))
        us = (time.perf_counter_ns() - start) / 1e3
        best = us if best is None else min(best, us)
    check = checked(made, engine, cl.CommandQueue(context, device), tiny)
    print(json.dumps({"us": best, "digest": check}))
""")


def fresh_cold_rows(python_first):
    """(Python µs, C++ µs, digests {side's row name: digest}): the fastest
    of FRESH_COLD_CREATIONS cold creations, each side in its own fresh
    process, which then runs the last primitive it made; `python_first` says
    which side runs first (run.py alternates it over rounds, so that neither
    side always finds the OS caches warm)."""
    def python():
        out = subprocess.run([sys.executable, "-c", _FRESH_COLD_CHILD, str(FRESH_COLD_CREATIONS)],
                             capture_output=True, text=True, timeout=1800)
        if out.returncode != 0:
            raise RuntimeError(f"fresh cold-creation process failed: {out.stderr[-2000:]}")
        report = json.loads(out.stdout.strip().splitlines()[-1])
        return report["us"], report["digest"]

    def cpp():
        rows, digests = run_baseline(FRESH_COLD_CREATIONS, 0, 0, FRESH_COLD_ROW)
        return rows[FRESH_COLD_ROW], digests.get(FRESH_COLD_ROW)

    if python_first:
        py = python()
        c = cpp()
    else:
        c = cpp()
        py = python()
    return py[0], c[0], {"Python": py[1], "C++": c[1]}


# ------------------------------------------------------------ Python rows

def intel_gpu_context():
    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    return device, cl.Context([device])


def filled_memory(desc, engine):
    mem = dnnl.memory(desc, engine)
    dnnl.arrays.write(mem, pattern(desc.get_size() // 4).reshape(desc.get_dims()))
    return mem


def poison(*memories):
    """Fills each memory with POISON (before a row's timed work)."""
    for mem in memories:
        dnnl.arrays.write(mem, np.full(mem.get_desc().get_dims(), POISON, np.float32))


def poison_usm(queue, *tensors):
    """Fills each graph tensor's USM storage with POISON."""
    for tensor in tensors:
        size = tensor.get_logical_tensor().get_mem_size()
        dnnl.usm.memcpy(queue, tensor.get_data_handle(), np.full(size // 4, POISON, np.float32), size).wait()


def python_rows(iterations, warmup, matmul_size):
    """The Python side: same rows, same work, same timing as baseline.cpp.
    Returns (rows {name: µs}, notes {name: value}, digests {row: digest})."""
    oi = dnnl.ocl_interop
    repeats = max(iterations // BATCH, 5)
    rows, notes, digests = {}, {}, {}
    device, context = intel_gpu_context()
    in_order = cl.CommandQueue(context, device)
    out_of_order = cl.CommandQueue(context, device,
                                   properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    engine = oi.make_engine(device, context)
    s_in, s_ooo = oi.make_stream(engine, in_order), oi.make_stream(engine, out_of_order)

    turn("per-call rows")  # segments: the baseline's, in the same order (turns.py)
    notes["unit"] = measure_unit(repeats, warmup)

    tiny = dnnl.memory.desc([TINY], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
    tiny_src, tiny_dst = filled_memory(tiny, engine), filled_memory(tiny, engine)
    kind_values = {oi.memory_kind.usm: MEMORY_KIND_VALUES["usm"], oi.memory_kind.buffer: MEMORY_KIND_VALUES["buffer"]}
    for _ in range(warmup):
        oi.get_memory_kind(tiny_src)
    kinds = []
    rows["get_memory_kind"] = median_us(repeats, BATCH, lambda: oi.get_memory_kind(tiny_src), last=kinds)
    digests["get_memory_kind"] = digest([kind_values[kinds[-1]]])

    usm = dnnl.usm.device_alloc(context, device, tiny.get_size())
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, tiny.get_size())
    usm_kind = oi.memory_kind.usm

    def make_usm():
        return oi.make_memory(tiny, engine, usm_kind, usm)

    def make_buffer():
        return oi.make_memory(tiny, engine, buffer)

    def facts(mem, storage_is_given):
        kind = oi.get_memory_kind(mem)
        return digest(memory_facts("usm" if kind == usm_kind else "buffer", storage_is_given,
                                   mem.get_desc().get_size()))

    for _ in range(warmup):
        make_usm()
        make_buffer()
    made = []
    rows["make_memory(usm)"] = median_us(repeats, BATCH, make_usm, last=made)
    digests["make_memory(usm)"] = facts(made[-1], made[-1].get_data_handle() == usm)
    rows["make_memory(cl_mem)"] = median_us(repeats, BATCH, make_buffer, last=made)
    wrapped = oi.get_mem_object(made[-1])
    digests["make_memory(cl_mem)"] = facts(made[-1], wrapped is not None and wrapped.int_ptr == buffer.int_ptr)
    del made[:], wrapped

    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, tiny, tiny))
    relu_args = {dnnl.ARG_SRC: tiny_src, dnnl.ARG_DST: tiny_dst}
    execute = oi.execute

    def relu_output():
        return digest(dnnl.arrays.read(tiny_dst))

    for _ in range(warmup):
        execute(relu, s_in, relu_args)
    s_in.wait()
    poison(tiny_dst)
    rows["execute(in-order)"] = median_us(repeats, BATCH, lambda: execute(relu, s_in, relu_args),
                                          s_in.wait)
    digests["execute(in-order)"] = relu_output()

    def execute_ooo():
        execute(relu, s_ooo, relu_args)  # the returned event is released when dropped

    for _ in range(warmup):
        execute_ooo()
    s_ooo.wait()
    poison(tiny_dst)
    rows["execute(out-of-order)"] = median_us(repeats, BATCH, execute_ooo, s_ooo.wait)
    digests["execute(out-of-order)"] = relu_output()

    def create_relu():
        return dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
            engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, tiny, tiny))

    def made_relu_output(prim):
        """What the last primitive a creation row made computes."""
        poison(tiny_dst)
        prim.execute(s_in, relu_args)
        s_in.wait()
        return relu_output()

    turn("primitive creation")
    for _ in range(warmup):
        create_relu()
    made = []
    rows["primitive creation (cached)"] = median_us(repeats, BATCH, create_relu, last=made)
    digests["primitive creation (cached)"] = made_relu_output(made.pop())
    capacity = dnnl.get_primitive_cache_capacity()
    dnnl.set_primitive_cache_capacity(0)
    # The fastest of 5: a compile's time has a long tail from whatever else
    # the 2 cores run (first measured as the median: ±15 % within a round).
    rows["primitive creation (cold)"] = fastest_us(5, create_relu, last=made)
    dnnl.set_primitive_cache_capacity(capacity)
    digests["primitive creation (cold)"] = made_relu_output(made.pop())

    turn("small network")  # and the same network with ops, judged against it
    rows["small network"], digests["small network"] = network_row(engine, s_in)
    rows[OPS_NETWORK_ROW], digests[OPS_NETWORK_ROW] = ops_network_row(in_order)
    rows[OPS_REPLAY_ROW], digests[OPS_REPLAY_ROW] = ops_network_row(in_order, replayed=True)
    turn("20-op network")  # CHAIN_ROW: twenty small operations with ops, eager and replayed, judged against C++'s
    rows[CHAIN_OPS_ROW], digests[CHAIN_OPS_ROW] = chain_row(in_order, replayed=False)
    rows[CHAIN_REPLAY_ROW], digests[CHAIN_REPLAY_ROW] = chain_row(in_order, replayed=True)
    turn("execute and wait")  # the baseline's reference for the busy-thread row; Python's own rows
    hand = PYTHON_REFERENCES[OPS_CALL_ROW]
    rows[OPS_CALL_ROW], notes[hand], digests[OPS_CALL_ROW], digests[hand], new_us, new_digest = \
        ops_call_row(device, context, in_order, repeats, warmup)
    # the same ops.relu(x, out=y) judged against C++'s execute; and ops.relu(x)
    rows[OPS_OUT_CPP_ROW], digests[OPS_OUT_CPP_ROW] = rows[OPS_CALL_ROW], digests[OPS_CALL_ROW]
    rows[OPS_NEW_CPP_ROW], digests[OPS_NEW_CPP_ROW] = new_us, new_digest

    # execute() and wait(), as a user calls them, beside a thread spinning in
    # pure Python, against the same alone: what the GIL policy of execute
    # and wait costs (goal: half the solo rate). wait() keeps the GIL for
    # work done within 25 µs (a marker polled) and releases it otherwise.
    def execute_and_wait():
        relu.execute(s_in, relu_args)
        s_in.wait()

    busy_batch = BATCH // 10
    solo = PYTHON_REFERENCES[BUSY_ROW]
    poison(tiny_dst)
    notes[solo] = median_us(repeats, busy_batch, execute_and_wait)
    digests[solo] = relu_output()
    spinning = threading.Event()

    def spin():
        while not spinning.is_set():
            pass

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        poison(tiny_dst)
        rows[BUSY_ROW] = median_us(repeats, busy_batch, execute_and_wait)
    finally:
        spinning.set()
        spinner.join()
    digests[BUSY_ROW] = relu_output()

    def chain():
        previous = execute(relu, s_ooo, relu_args)
        for _ in range(99):
            previous = execute(relu, s_ooo, relu_args, [previous])
        previous.wait()

    turn("chain of 100 executes")
    warm_up(chain, least=3)
    poison(tiny_dst)
    rows["chain of 100 executes"] = median_us(max(repeats, 15), 1, chain)
    digests["chain of 100 executes"] = relu_output()

    turn("large matmul")
    run_matmul, matmul_dst = large_matmul(engine, s_in, matmul_size)
    warm_up(run_matmul)
    poison(matmul_dst)
    rows["large matmul"] = median_us(9, 1, run_matmul)
    digests["large matmul"] = digest(dnnl.arrays.read(matmul_dst))

    graph_repeats = graph_repeats_of(iterations)
    turn(GRAPH_ROW)
    rows[GRAPH_ROW], notes["allocations per execute"], digests[GRAPH_ROW], graph_parts = graph_row(
        device, context, in_order, graph_repeats, warmup)
    turn(POOL_ROW)
    rows[POOL_ROW], digests[POOL_ROW] = pool_row(device, context, in_order, graph_repeats, warmup)
    thread_rows_, thread_digests = thread_rows(engine, context, device, graph_parts)
    rows.update(thread_rows_)
    digests.update(thread_digests)

    turn("opencl kernel enqueue")
    program = cl.Program(context, "__kernel void touch(__global float *a) "
                                  "{ a[get_global_id(0)] += 1.0f; }").build()
    kernel = program.touch
    cl.enqueue_fill_buffer(in_order, buffer, np.float32(0), 0, tiny.get_size())

    def enqueue():
        kernel.set_arg(0, buffer)
        cl.enqueue_nd_range_kernel(in_order, kernel, (TINY,), None)

    for _ in range(warmup):
        enqueue()
    in_order.finish()
    rows["opencl kernel enqueue"] = median_us(repeats, BATCH, enqueue, in_order.finish)
    touched = np.empty(TINY, np.float32)
    cl.enqueue_copy(in_order, touched, buffer)
    digests["opencl kernel enqueue"] = digest(touched)
    dnnl.usm.free(context, usm)
    return rows, notes, digests


def measure_unit(repeats, warmup):
    """The unit of this round's budgets: UNIT_CALL's time in a loop."""
    for _ in range(warmup):
        UNIT_CALL()
    return median_us(repeats, BATCH * 10, UNIT_CALL)


def kernel_enqueues(iterations, warmup):
    """How many times the "opencl kernel enqueue" row runs its kernel (each
    adds 1 to every element), on either side."""
    return warmup + max(iterations // BATCH, 5) * BATCH


def large_matmul(engine, stream, size):
    """The large-matmul row's work, as baseline.cpp does it: a size x size
    f32 matmul on pattern() memory; each call executes and waits. Returns
    (run, the destination memory)."""
    square = dnnl.memory.desc([size] * 2, dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
    mm_args = {arg: filled_memory(square, engine) for arg in (dnnl.ARG_SRC, dnnl.ARG_WEIGHTS, dnnl.ARG_DST)}
    matmul = dnnl.matmul(dnnl.matmul.primitive_desc(engine, square, square, square))

    def run_matmul():
        matmul.execute(stream, mm_args)
        stream.wait()

    return run_matmul, mm_args[dnnl.ARG_DST]


def network_steps(engine, memories):
    """The small network's four primitives on `engine` as (primitive,
    {argument: memory}) steps, with memories from `memories(descs)`, which
    gets {"x", "conv_w", "conv_b", "fc_w", "fc_b", "y1", "y2", "y3": desc}
    and returns {name: dnnl.memory} (the first five filled with pattern())."""
    f32, fi = dnnl.memory.data_type.f32, dnnl.prop_kind.forward_inference
    tags = {1: dnnl.memory.format_tag.a, 2: dnnl.memory.format_tag.nc, 4: dnnl.memory.format_tag.nchw}

    def plain(dims):
        return dnnl.memory.desc(dims, f32, tags[len(dims)])

    n, ic, oc, hw, classes = 8, 3, 16, 32, 10
    d = {"x": plain([n, ic, hw, hw]), "conv_w": plain([oc, ic, 3, 3]), "conv_b": plain([oc]),
         "fc_w": plain([classes, oc, hw // 2, hw // 2]), "fc_b": plain([classes]),
         "y1": plain([n, oc, hw, hw]), "y2": plain([n, oc, hw // 2, hw // 2]), "y3": plain([n, classes])}
    alg = dnnl.algorithm
    conv = dnnl.convolution_forward(dnnl.convolution_forward.primitive_desc(
        engine, fi, alg.convolution_direct, d["x"], d["conv_w"], d["conv_b"], d["y1"], [1, 1], [1, 1], [1, 1]))
    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(engine, fi, alg.eltwise_relu,
                                                                    d["y1"], d["y1"]))
    pool = dnnl.pooling_forward(dnnl.pooling_forward.primitive_desc(
        engine, fi, alg.pooling_max, d["y1"], d["y2"], [2, 2], [2, 2], [0, 0], [0, 0], [0, 0]))
    fc = dnnl.inner_product_forward(dnnl.inner_product_forward.primitive_desc(
        engine, fi, d["y2"], d["fc_w"], d["fc_b"], d["y3"]))
    m = memories(d)
    A = dnnl
    return [(conv, {A.ARG_SRC: m["x"], A.ARG_WEIGHTS: m["conv_w"], A.ARG_BIAS: m["conv_b"], A.ARG_DST: m["y1"]}),
            (relu, {A.ARG_SRC: m["y1"], A.ARG_DST: m["y1"]}), (pool, {A.ARG_SRC: m["y1"], A.ARG_DST: m["y2"]}),
            (fc, {A.ARG_SRC: m["y2"], A.ARG_WEIGHTS: m["fc_w"], A.ARG_BIAS: m["fc_b"], A.ARG_DST: m["y3"]})]


def network_memories(engine):
    """network_steps' memories allocated by oneDNN (as C++ allocates them)."""
    def memories(descs):
        return {name: filled_memory(desc, engine) if name[0] != "y" else dnnl.memory(desc, engine)
                for name, desc in descs.items()}
    return memories


def network_row(engine, stream):
    """Convolution, ReLU, max pooling and inner product, as baseline.cpp runs
    them, on pattern() inputs: (median µs, digest of the output)."""
    steps = network_steps(engine, network_memories(engine))

    def run_network():
        for prim, args in steps:
            prim.execute(stream, args)
        stream.wait()

    warm_up(run_network, least=3)
    poison(*(args[dnnl.ARG_DST] for _, args in steps))
    return median_us(15, 1, run_network), digest(dnnl.arrays.read(steps[-1][1][dnnl.ARG_DST]))


def ops_network_row(queue, replayed=False):
    """The small network of network_row written with dnnl.ops, as a user
    would: each call makes its result array and the host waits once at the
    end: (median µs, digest of the output). With `replayed`, the same calls
    captured once (ops.capture) and the program replayed, then a wait: its
    results are the capture's arrays, poisoned before the timed runs. The arrays come from a
    pyopencl.tools.MemoryPool, as C++'s network reuses its buffers: with
    pyopencl's default allocator every result is a new buffer, whose first
    touch costs the emulated device's host memory about 240 µs for the
    convolution's 512 KiB (page faults; the allocator's cost, not the
    calls'). After the warm-up the pool holds only blocks filled with
    POISON (enough for every result of a run and the one kept from the run
    before), and the timed runs may take no other block: the blocks they get
    were poisoned before the timed work, as the other rows' destinations."""
    import pyopencl.array as cla
    import pyopencl.tools as cltools

    n, ic, oc, hw, classes = 8, 3, 16, 32, 10
    shapes = dict(x=(n, ic, hw, hw), conv_w=(oc, ic, 3, 3), conv_b=(oc,),
                  fc_w=(classes, oc, hw // 2, hw // 2), fc_b=(classes,))
    pool = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
    x, cw, cb, fw, fb = (cla.to_device(queue, pattern(int(np.prod(shape))).reshape(shape),
                                       allocator=pool)
                         for shape in shapes.values())
    result = []
    if replayed:
        from dnnl_ocl_interop import ops

        program = ops.capture(lambda x: ops_network_calls(x, cw, cb, fw, fb), x)

        def run_network():
            result[:] = [program(x)]
            queue.finish()

        warm_up(run_network, least=3)
        # (the program's results, kept by it: its arrays on this queue)
        for made in program._captured[1:]:
            if all(made is not held for held in program.captured_by_reference):
                made.fill(POISON)
        queue.finish()
        us = median_us(15, 1, run_network)
        return us, digest(result[0].get())

    def run_network():
        result[:] = [ops_network(queue, x, cw, cb, fw, fb)]

    warm_up(run_network, least=3)
    result.clear()
    pool.free_held()
    results = [(n, oc, hw, hw), (n, oc, hw // 2, hw // 2), (n, classes)]
    poisoned = [cla.empty(queue, shape, np.float32, allocator=pool).fill(POISON)
                for shape in results for _ in range(2)]
    queue.finish()
    del poisoned  # back to the pool, held
    managed = pool.managed_bytes
    us = median_us(15, 1, run_network)
    if pool.managed_bytes != managed:
        raise RuntimeError(f"{OPS_NETWORK_ROW}: the timed runs took blocks that were not poisoned "
                           f"({pool.managed_bytes - managed} bytes more from the device)")
    return us, digest(result[0].get())


def ops_network(queue, x, cw, cb, fw, fb):
    """The small network written with dnnl.ops on pyopencl arrays, as a user
    would: each call makes its result (ReLU in place), one wait at the end;
    returns the output array."""
    out = ops_network_calls(x, cw, cb, fw, fb)
    queue.finish()
    return out


def ops_network_calls(x, cw, cb, fw, fb):
    """The small network's four dnnl.ops calls; the output array."""
    from dnnl_ocl_interop import ops

    y = ops.convolution(x, cw, cb, padding=1)
    y = ops.relu(y, out=y)
    y = ops.max_pool(y, 2)
    return ops.inner_product(y, fw, fb)


def chain_calls(y, bias):
    """CHAIN_ROW's twenty operations with dnnl.ops: ten times an add of the
    bias row and a tanh, each call making its result."""
    from dnnl_ocl_interop import ops

    for _ in range(10):
        y = ops.tanh(ops.add(y, bias))
    return y


def chain_row(queue, replayed):
    """The twenty operations of baseline.cpp's chain_network_us with
    dnnl.ops, then a wait: eager (each call makes its result, from a
    pyopencl.tools.MemoryPool holding only poisoned blocks, as
    ops_network_row), or captured once and replayed (its results poisoned
    before the timed runs): (median µs, digest of the output)."""
    import pyopencl.array as cla
    import pyopencl.tools as cltools
    from dnnl_ocl_interop import ops

    pool = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
    x = cla.to_device(queue, pattern(16 * 64).reshape(16, 64), allocator=pool)
    bias = cla.to_device(queue, pattern(64).reshape(1, 64), allocator=pool)
    result = []
    if replayed:
        program = ops.capture(lambda x: chain_calls(x, bias), x)

        def run_chain():
            result[:] = [program(x)]
            queue.finish()

        warm_up(run_chain, least=3)
        for made in program._captured[1:]:  # the results (the bias is captured by reference)
            if made is not bias:
                made.fill(POISON)
    else:
        def run_chain():
            result[:] = [chain_calls(x, bias)]
            queue.finish()

        warm_up(run_chain, least=3)
        result.clear()
        pool.free_held()
        poisoned = [cla.empty(queue, (16, 64), np.float32, allocator=pool).fill(POISON)
                    for _ in range(22)]
        queue.finish()
        del poisoned  # back to the pool, held
    queue.finish()
    managed = pool.managed_bytes
    us = median_us(15, 1, run_chain)
    if pool.managed_bytes != managed:
        raise RuntimeError(f"{CHAIN_OPS_ROW}: the timed runs took blocks that were not poisoned")
    return us, digest(result[0].get())


def ops_call_row(device, context, queue, repeats, warmup):
    """(ops µs, by hand µs, ops digest, by hand digest, new-result µs, its
    digest): ``ops.relu(x, out=y)`` on 64 floats, its
    primitive cached, against the work a user writes for the same call by
    hand with the same cached primitive: memory on both arrays
    (dnnl.arrays.as_memory), execute after their events, and the result's
    event attached (a marker's on this in-order queue, as ops does)."""
    import pyopencl.array as cla
    import pyopencl.tools
    from dnnl_ocl_interop import ops

    oi = dnnl.ocl_interop
    x = cla.to_device(queue, pattern(64))
    y = cla.empty_like(x)
    engine = oi.make_engine(device, context)
    stream = oi.make_stream(engine, queue)
    desc = dnnl.memory.desc([64], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, desc, desc))
    as_memory, execute = dnnl.arrays.as_memory, oi.execute
    # pyopencl's quickest marker call (the one ops made in Python before its
    # calls ran in C++, which enqueues the marker itself), so that the
    # reference is the same work as before.
    marker = getattr(cl._cl, "_enqueue_marker_with_wait_list", cl.enqueue_marker)
    arg_src, arg_dst = dnnl.ARG_SRC, dnnl.ARG_DST

    def by_hand():
        src, src_events = as_memory(x, engine)
        dst, dst_events = as_memory(y, engine)
        event = execute(relu, stream, {arg_src: src, arg_dst: dst}, src_events + dst_events)
        if event is None:
            event = marker(queue, None)
        del y.events[:]  # the primitive waited for them
        y.add_event(event)

    def with_ops():
        ops.relu(x, out=y)

    for _ in range(warmup):
        by_hand()
        with_ops()
    queue.finish()
    y.fill(POISON)
    hand = median_us(repeats, BATCH, by_hand, queue.finish)
    hand_digest = digest(y.get())
    y.fill(POISON)
    with_ops_us = median_us(repeats, BATCH, with_ops, queue.finish)
    with_ops_digest = digest(y.get())

    # ops.relu(x) making its result: x's allocator, a pyopencl MemoryPool
    # holding only poisoned blocks (each call's result goes back to it when
    # the next replaces it)
    pool = pyopencl.tools.MemoryPool(pyopencl.tools.ImmediateAllocator(queue))
    x_pooled = cla.to_device(queue, pattern(64), allocator=pool)
    made = []

    def new_result():
        made[:] = [ops.relu(x_pooled)]

    for _ in range(warmup):
        new_result()
    queue.finish()
    made.clear()
    pool.free_held()
    poisoned = [cla.empty(queue, (64,), np.float32, allocator=pool).fill(POISON) for _ in range(2)]
    queue.finish()
    del poisoned
    managed = pool.managed_bytes
    new_us = median_us(repeats, BATCH, new_result, queue.finish)
    if pool.managed_bytes != managed:
        raise RuntimeError(f"{OPS_NEW_CPP_ROW}: the timed calls took blocks that were not poisoned")
    return with_ops_us, hand, with_ops_digest, hand_digest, new_us, digest(made[0].get())


def graph_row(device, context, queue, repeats, warmup):
    """Attention partition on an engine with a minimal Python USM allocator:
    (median µs, allocations per execute, digest, graph parts)."""
    run, stream, calls, graph_parts = attention_partition(device, context, queue)
    warm_up(run, stream.wait, GRAPH_BATCH, least=warmup // 10 + 1)
    before = calls["malloc"]
    run()
    stream.wait()
    per_execute = calls["malloc"] - before
    poison_usm(queue, *graph_parts[4][1])
    median = median_us(repeats, GRAPH_BATCH, run, stream.wait)
    return median, per_execute, attention_output(graph_parts, queue), graph_parts


def pool_row(device, context, queue, repeats, warmup):
    """The same partition on a warm dnnl.graph.allocators.caching_pool
    (default settings: one in-order queue): (median µs, digest). Checks that
    the pool served every timed execute from its cache."""
    pool = dnnl.graph.allocators.caching_pool()
    run, stream, _, graph_parts = attention_partition(device, context, queue, allocator=pool.allocator)
    warm_up(run, stream.wait, GRAPH_BATCH, least=warmup // 10 + 1)
    poison_usm(queue, *graph_parts[4][1])
    misses = pool.misses
    median = median_us(repeats, GRAPH_BATCH, run, stream.wait)
    if pool.misses != misses:
        raise RuntimeError(f"{POOL_ROW}: the warm pool went to the device {pool.misses - misses} times")
    result = attention_output(graph_parts, queue)
    del run, stream, graph_parts
    pool.release()
    return median, result


def usm_output(queue, tensor):
    """A graph tensor's f32 values, copied to the host."""
    size = tensor.get_logical_tensor().get_mem_size()
    host = np.empty(size // 4, np.float32)
    dnnl.usm.memcpy(queue, host, tensor.get_data_handle(), size).wait()
    return host


def attention_output(graph_parts, queue):
    """A digest of the attention partition's output tensor."""
    return digest(usm_output(queue, graph_parts[4][1][0]))


def attention_partition(device, context, queue, malloc=None, free=None, allocator=None):
    """The graph rows' work, as baseline.cpp does it: (run, stream, malloc
    counter, (engine, compiled partition, partition, tensors(ports), (ins, outs))),
    where run() executes the attention partition once on pattern() USM
    inputs, on an engine whose allocator is `allocator`, or one made of
    `malloc` and `free`, or a minimal Python USM allocator (the counter
    counts its mallocs; it stays 0 otherwise). The tensors' USM storage lives
    as long as tensors(ports) does: keep the graph parts while run() is used."""
    g = dnnl.graph
    lt = g.logical_tensor
    calls = {"malloc": 0}
    device_alloc, usm_free = dnnl.usm.device_alloc, dnnl.usm.free

    def counting_malloc(size, alignment, dev, ctx):
        calls["malloc"] += 1
        return device_alloc(ctx, dev, size, alignment)

    def waiting_free(ptr, dev, ctx, event):
        if event is not None:
            event.wait()
        usm_free(ctx, ptr)

    if allocator is None:
        allocator = g.ocl_interop.make_allocator(malloc or counting_malloc, free or waiting_free)
    engine = g.ocl_interop.make_engine_with_allocator(device, context, allocator)
    stream = dnnl.ocl_interop.make_stream(engine, queue)
    f32, strided = lt.data_type.f32, lt.layout_type.strided
    b, s, d = ATTENTION_SHAPE
    q, k, v = (lt(i, f32, [b, s, d], strided) for i in range(3))
    scores, probs, out = lt(3, f32, [b, s, s], strided), lt(4, f32, [b, s, s], strided), lt(5, f32, [b, s, d], strided)
    qk = g.op(0, g.op.kind.MatMul, [q, k], [scores], "qk")
    qk.set_attr(g.op.attr.transpose_b, True)
    softmax = g.op(1, g.op.kind.SoftMax, [scores], [probs], "softmax")
    softmax.set_attr(g.op.attr.axis, -1)
    graph = g.graph(dnnl.engine.kind.gpu)
    for op in (qk, softmax, g.op(2, g.op.kind.MatMul, [probs, v], [out], "pv")):
        graph.add_op(op)
    graph.finalize()
    part = graph.get_partitions()[0]
    compiled = part.compile(part.get_input_ports(), part.get_output_ports(), engine)
    storage = []

    def tensors(ports):
        result = []
        for port in ports:
            queried = compiled.query_logical_tensor(port.get_id())
            size = queried.get_mem_size()
            storage.append(dnnl.usm.allocation(context, size, "device", device))
            host = pattern(size // 4) if port.get_id() < 3 else np.zeros(size // 4, np.float32)
            dnnl.usm.memcpy(queue, storage[-1].ptr, host, size).wait()
            result.append(g.tensor(queried, engine, storage[-1].ptr))
        return result

    ins, outs = tensors(part.get_input_ports()), tensors(part.get_output_ports())
    execute = compiled.execute

    def run():
        execute(stream, ins, outs)

    return run, stream, calls, (engine, compiled, part, tensors, (ins, outs))


def threaded_us(threads, calls, repeats, work, warm_up_seconds=None, before_timing=lambda: None):
    """Throughput of `threads` threads each running work(t) (its share of
    the calls, ending with a wait on its own stream), released together:
    median over `repeats` of the wall time per call, `calls` in all, from
    the first thread's start of work to the last one's end (each thread
    reads the clock itself). The threads are made once and run untimed
    rounds for `warm_up_seconds` (WARM_UP_SECONDS by default; at least one
    round) first, as baseline.cpp's: what is measured is threads at work, not
    a thread's first calls (a new thread's first graph execute costs 60 µs
    more than later ones in Python, 20 µs in C++: docs/benchmarks.md), nor
    waking and joining threads. `before_timing` runs once between the
    untimed rounds and the timed ones, with every thread waiting."""
    start_gate, end_gate = threading.Barrier(threads + 1), threading.Barrier(threads + 1)
    spans = [None] * threads
    stop, failures = [], []

    def body(t):
        while True:
            start_gate.wait()
            if stop:
                return
            start = time.perf_counter_ns()
            try:
                work(t)
            except BaseException as e:  # reported by the main thread: never a hang at end_gate
                failures.append(e)
            spans[t] = (start, time.perf_counter_ns())
            end_gate.wait()

    pool = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    samples = []
    warm_start, warming = time.perf_counter(), True
    warm_up_seconds = WARM_UP_SECONDS if warm_up_seconds is None else warm_up_seconds
    try:
        while len(samples) < repeats:
            start_gate.wait()
            end_gate.wait()
            if failures:
                raise failures[0]
            if warming:  # untimed rounds for warm_up_seconds, at least one
                warming = time.perf_counter() - warm_start < warm_up_seconds
                if not warming:
                    before_timing()
                continue
            first, last = min(s for s, _ in spans), max(e for _, e in spans)
            samples.append((last - first) / 1e3 / calls)
    finally:
        stop.append(True)
        start_gate.wait()
        for th in pool:
            th.join()
    return median_of(samples)


THREAD_CALLS, THREAD_REPEATS = 20, 7
THREAD_COUNTS = (1, 2, 4)  # baseline.cpp runs the same


def thread_row(kind, n):
    """The name of a thread row: thread_row("graph throughput", 2) is
    "graph throughput, 2 threads", as baseline.cpp names it."""
    return f"{kind}, {n} thread" + ("s" if n > 1 else "")


def graph_thread_work(context, device, graph_parts, n):
    """The graph throughput rows' work for `n` threads, as baseline.cpp's
    graph_threads_us: each thread with its own queue, stream and tensors.
    Returns (partitions(t): THREAD_CALLS executes of the graph parts'
    compiled partition on thread t's stream, then a wait; the queues; the
    (inputs, outputs) of each thread)."""
    graph_engine, compiled, part, tensors, _ = graph_parts
    queues = [cl.CommandQueue(context, device) for _ in range(n)]
    streams = [dnnl.ocl_interop.make_stream(graph_engine, q) for q in queues]
    tensor_sets = [(tensors(part.get_input_ports()), tensors(part.get_output_ports())) for _ in range(n)]

    def partitions(t):
        s, (ins, outs) = streams[t], tensor_sets[t]
        for _ in range(THREAD_CALLS):
            compiled.execute(s, ins, outs)
        s.wait()

    return partitions, queues, tensor_sets


def thread_rows(engine, context, device, graph_parts):
    """1, 2 and 4 threads, each with its own queue and stream, as
    baseline.cpp runs them: a 128 x 128 matmul (shared primitive, per-thread
    memory) and the graph row's partition with its Python allocator (shared,
    per-thread tensors), THREAD_CALLS executes per thread then a wait.
    Every thread's destination is poisoned before the timed rounds. Returns
    (rows, digests of the threads' outputs, one after the other)."""
    oi = dnnl.ocl_interop
    mid = dnnl.memory.desc([128, 128], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
    matmul = dnnl.matmul(dnnl.matmul.primitive_desc(engine, mid, mid, mid))
    rows, digests = {}, {}
    for n in THREAD_COUNTS:
        queues = [cl.CommandQueue(context, device) for _ in range(n)]
        streams = [oi.make_stream(engine, q) for q in queues]
        margs = [{arg: filled_memory(mid, engine) for arg in (dnnl.ARG_SRC, dnnl.ARG_WEIGHTS, dnnl.ARG_DST)}
                 for _ in range(n)]
        partitions, graph_queues, tensor_sets = graph_thread_work(context, device, graph_parts, n)

        # Each n's function runs within its iteration; the defaults bind its lists.
        def matmuls(t, streams=streams, margs=margs):
            s, a = streams[t], margs[t]
            for _ in range(THREAD_CALLS):
                matmul.execute(s, a)
            s.wait()

        matmuls(0)
        partitions(0)
        matmul_name, graph_name = thread_row("matmul throughput", n), thread_row("graph throughput", n)
        # Each row its own turn (baseline.cpp's): its two sides less than a
        # second apart.
        turn("matmul throughput")
        rows[matmul_name] = threaded_us(n, n * THREAD_CALLS, THREAD_REPEATS, matmuls,
                                        before_timing=lambda margs=margs: poison(
                                            *(a[dnnl.ARG_DST] for a in margs)))
        turn("graph throughput")
        rows[graph_name] = threaded_us(n, n * THREAD_CALLS, THREAD_REPEATS, partitions,
                                       before_timing=lambda q=graph_queues, t=tensor_sets: [
                                           poison_usm(queue, *outs) for queue, (_, outs) in zip(q, t)])
        digests[matmul_name] = digest(np.concatenate([dnnl.arrays.read(a[dnnl.ARG_DST]).ravel()
                                                      for a in margs]))
        digests[graph_name] = digest(np.concatenate([usm_output(queue, outs[0])
                                                     for queue, (_, outs) in zip(graph_queues, tensor_sets)]))
    return rows, digests


# A fresh process: the small network's four primitives and a matmul made
# through dnnl.cache.persistent(argv[1]); prints the time of their creation,
# the cache's counters and the digest of what the ReLU it made computes.
_PERSISTENT_CACHE_CHILD = _CHILD_CHECK + textwrap.dedent("""
    import json, sys, time
    import dnnl_ocl_interop as dnnl
    dnnl.emulation.ensure_device()
    import pyopencl as cl

    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    context = cl.Context([device])
    cache = dnnl.cache.persistent(sys.argv[1])
    engine = cache.engine(device, context)
    f32, fi, alg = dnnl.memory.data_type.f32, dnnl.prop_kind.forward_inference, dnnl.algorithm
    tags = {2: dnnl.memory.format_tag.nc, 4: dnnl.memory.format_tag.nchw, 1: dnnl.memory.format_tag.a}
    plain = lambda dims: dnnl.memory.desc(dims, f32, tags[len(dims)])
    n, ic, oc, hw, classes = 8, 3, 16, 32, 10
    src, conv_w, conv_b = plain([n, ic, hw, hw]), plain([oc, ic, 3, 3]), plain([oc])
    conv_dst, pool_dst = plain([n, oc, hw, hw]), plain([n, oc, hw // 2, hw // 2])
    fc_w, fc_b, fc_dst = plain([classes, oc, hw // 2, hw // 2]), plain([classes]), plain([n, classes])
    square = plain([256, 256])
    pds = [dnnl.convolution_forward.primitive_desc(engine, fi, alg.convolution_direct, src, conv_w,
                                                   conv_b, conv_dst, [1, 1], [1, 1], [1, 1]),
           dnnl.eltwise_forward.primitive_desc(engine, fi, alg.eltwise_relu, conv_dst, conv_dst),
           dnnl.pooling_forward.primitive_desc(engine, fi, alg.pooling_max, conv_dst, pool_dst,
                                               [2, 2], [2, 2], [0, 0], [0, 0], [0, 0]),
           dnnl.inner_product_forward.primitive_desc(engine, fi, pool_dst, fc_w, fc_b, fc_dst),
           dnnl.matmul.primitive_desc(engine, square, square, square)]
    start = time.perf_counter_ns()
    made = [cache.primitive(pd) for pd in pds]
    elapsed_us = (time.perf_counter_ns() - start) / 1e3
    check = checked(made[1], engine, cl.CommandQueue(context, device), conv_dst)
    print(json.dumps({"us": elapsed_us, "primitives": len(pds), "counts": cache.counts(),
                      "digest": check}))
""")


def persistent_cache_row():
    """(warm µs, cold µs, {"warm", "cold": digest}): creating five primitives through
    dnnl.cache.persistent in a fresh process with an empty directory (cold:
    compiled and stored), then in another fresh process with the same
    directory (warm: loaded from the stored blobs). Python against Python:
    the row measures what the stored blobs save, not what the bridge costs,
    so the C++ baseline has no counterpart (the binding's microseconds per
    call are the same in both phases, against seconds of compilation).
    Each process then runs the ReLU it made (the digests)."""
    with tempfile.TemporaryDirectory(prefix="dnnl-persistent-cache-") as directory:
        times, digests = {}, {}
        for phase in ("cold", "warm"):
            out = subprocess.run([sys.executable, "-c", _PERSISTENT_CACHE_CHILD, directory],
                                 capture_output=True, text=True, timeout=1800)
            if out.returncode != 0:
                raise RuntimeError(f"{phase} persistent-cache process failed: {out.stderr[-2000:]}")
            report = json.loads(out.stdout.strip().splitlines()[-1])
            n, counts = report["primitives"], report["counts"]
            expected = {"misses": n + 1, "stored": n + 1} if phase == "cold" else {"hits": n + 1}
            if any(counts[k] != v for k, v in expected.items()) or counts["rejected"]:
                raise RuntimeError(f"{phase} persistent-cache process: counters {counts}, "
                                   f"expected {expected} (engine and {n} primitives)")
            times[phase], digests[phase] = report["us"], report["digest"]
    return times["warm"], times["cold"], digests


def single_row(name, iterations, warmup, matmul_size):
    """--only NAME's Python side: ({NAME: µs}, notes, digests), set up for
    that row alone (single_row_cpp is the C++ side; the ops call row's
    reference is in the notes)."""
    device, context = intel_gpu_context()
    queue = cl.CommandQueue(context, device)
    repeats = max(iterations // BATCH, 5)
    notes = {"unit": measure_unit(repeats, warmup)}
    digests = {}
    if name in (OPS_NETWORK_ROW, OPS_REPLAY_ROW):
        py, digests[name] = ops_network_row(queue, replayed=name == OPS_REPLAY_ROW)
    elif name in (CHAIN_OPS_ROW, CHAIN_REPLAY_ROW):
        py, digests[name] = chain_row(queue, replayed=name == CHAIN_REPLAY_ROW)
    elif name == "large matmul":
        engine = dnnl.ocl_interop.make_engine(device, context)
        run_matmul, matmul_dst = large_matmul(engine, dnnl.ocl_interop.make_stream(engine, queue), matmul_size)
        warm_up(run_matmul)
        poison(matmul_dst)
        py = median_us(9, 1, run_matmul)
        digests[name] = digest(dnnl.arrays.read(matmul_dst))
    elif name == GRAPH_ROW:
        py, notes["allocations per execute"], digests[name], _ = graph_row(
            device, context, queue, graph_repeats_of(iterations), warmup)
    elif name == POOL_ROW:
        py, digests[name] = pool_row(device, context, queue, graph_repeats_of(iterations), warmup)
    elif name == OPS_CALL_ROW:
        hand = PYTHON_REFERENCES[name]
        py, notes[hand], digests[name], digests[hand], _, _ = ops_call_row(device, context, queue,
                                                                           repeats, warmup)
    else:
        raise ValueError(f"no Python side of its own for --only {name!r}")
    return {name: py}, notes, digests


def single_row_cpp(name, iterations, warmup, matmul_size):
    """--only NAME's C++ side: (C++ µs, digests, the baseline's rows), the
    same work as single_row's (the ops network against C++'s network,
    CPP_REFERENCES)."""
    if name in (OPS_NETWORK_ROW, OPS_REPLAY_ROW, CHAIN_OPS_ROW, CHAIN_REPLAY_ROW):
        cpp, cpp_digests = run_baseline(15, 3, matmul_size, CPP_REFERENCES[name])
    elif name == "large matmul":
        cpp, cpp_digests = run_baseline(9, 1, matmul_size, name)
    else:
        cpp, cpp_digests = run_baseline(graph_repeats_of(iterations) * GRAPH_BATCH, warmup // 10 + 1,
                                        matmul_size, name)
    return cpp[CPP_REFERENCES.get(name, name)], cpp_digests, cpp


def graph_repeats_of(iterations):
    """Timed batches of the graph rows (python_rows and single_row)."""
    return max(max(iterations // BATCH, 5) * 2, 30)


def python_side_command(args):
    """The command line of one round's Python side: this script with
    --python-side and the round's options."""
    return [sys.executable, os.path.abspath(__file__), "--python-side",
            "--iterations", str(args.iterations), "--warmup", str(args.warmup),
            "--matmul-size", str(args.matmul_size)] + (["--only", args.only] if args.only else [])


def python_side_report(stdout):
    """(rows, notes, digests) of a Python side's output."""
    report = json.loads(stdout.strip().splitlines()[-1])
    return report["rows"], report["notes"], report["digests"]


def python_side(args):
    """One round's Python side, in a fresh process: (rows, notes, digests)
    of python_rows, or of single_row for --only."""
    # stderr passes through (warnings show as they happen); stdout is the JSON
    out = subprocess.run(python_side_command(args), stdout=subprocess.PIPE, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"the Python side's process failed (exit {out.returncode}; its errors above)")
    return python_side_report(out.stdout)


def both_sides_in_turns(args, round_index):
    """One round of the full run: the baseline and the Python side started
    at once, taking turns segment by segment (turns.py); the side going
    first alternates from segment to segment, shifted by one every round.
    Returns (C++ rows, C++ digests, Python rows, notes, Python digests)."""
    def first_of(segment_index):
        return "C++" if (segment_index + round_index) % 2 == 0 else "Python"

    outputs, _ = take_turns({"C++": baseline_command(args.iterations, args.warmup, args.matmul_size),
                             "Python": python_side_command(args)}, first_of)
    return (*baseline_report(outputs["C++"]), *python_side_report(outputs["Python"]))


def print_python_side(args):
    """--python-side: this process is one round's Python side; prints its
    (rows, notes, digests) as one JSON line for python_side."""
    if args.only is None:
        rows, notes, digests = python_rows(args.iterations, args.warmup, args.matmul_size)
        turn(END)
    else:
        rows, notes, digests = single_row(args.only, args.iterations, args.warmup, args.matmul_size)
    print(json.dumps({"rows": rows, "notes": notes, "digests": digests}))


# ------------------------------------------------------------------ verdicts

def bootstrap_interval(values, resamples=10000, confidence=0.95, seed=0):
    """(median, low, high): the median of `values` and a percentile-bootstrap
    confidence interval of it (resampling the rounds)."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(values, size=(resamples, values.size), replace=True), axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(np.median(values)), float(low), float(high)


def verdict(low, high, limit):
    """'meets' when the whole interval is within the goal, 'misses' when it
    is wholly outside, else 'inconclusive' (more --rounds may decide)."""
    if high <= limit:
        return "meets"
    if low > limit:
        return "misses"
    return "inconclusive"


def calls_goal(calls, what, unit_us, cpp_us=None, name=None):
    """A budget of `calls` per-call budgets over C++; for the rows of
    RELATIVE_ROWS, the larger of that and RELATIVE_BUDGET of `cpp_us`."""
    units = calls * PER_CALL_UNITS
    limit = units * unit_us
    text = f"≤ {units} units = {limit:.2f} µs over C++ ({what})"
    if name in RELATIVE_ROWS and cpp_us is not None:
        relative = RELATIVE_BUDGET * cpp_us
        text = (f"≤ the larger of {units} units ({limit:.2f} µs) and {RELATIVE_BUDGET:.0%} of C++'s "
                f"time ({relative:.2f} µs) over C++ ({what})")
        limit = max(limit, relative)
    return text, ("overhead", limit)


def goal_of(name, notes, unit_us, cpp_us=None):
    """(goal text, ("overhead", limit µs) or ("ratio", limit), or None) for a
    row; budgets over C++ in units of `unit_us` (see PER_CALL_UNITS), and
    for the rows of RELATIVE_ROWS at least RELATIVE_BUDGET of the row's C++
    time `cpp_us` (the median over rounds)."""
    if name == "chain of 100 executes":
        return calls_goal(100, "100 calls", unit_us)
    if name == GRAPH_ROW:
        # The row holds one execute() call (its own per-call budget) and the
        # allocator's calls during it (the allocation budget each).
        n = max(notes.get("allocations per execute", 1), 1)
        units = PER_CALL_UNITS + ALLOCATION_UNITS * n
        return (f"≤ {units} units = {units * unit_us:.2f} µs over C++ (1 call + {n} allocation(s) "
                f"× {ALLOCATION_UNITS})", ("overhead", units * unit_us))
    if name == POOL_ROW:
        return (f"≤ {POOL_UNITS} units = {POOL_UNITS * unit_us:.2f} µs over the C pool",
                ("overhead", POOL_UNITS * unit_us))
    if name == "opencl kernel enqueue":
        return "reference (pyopencl vs C)", None
    if name == OPS_CALL_ROW:
        return (f"≤ {OPS_CALL_UNITS} units = {OPS_CALL_UNITS * unit_us:.2f} µs over the same call "
                "by hand (Python reference; no C++ side)", ("overhead", OPS_CALL_UNITS * unit_us))
    if name == OPS_NETWORK_ROW:
        # Four ops calls and a wait over C++'s four executes and a wait; the
        # ratio (issue 25 asked ≤ 1.02) is kept for information: on
        # millisecond work a ratio only catches noise.
        units = 5 * PER_CALL_UNITS + 4 * OPS_CALL_UNITS
        return (f"≤ {units} units = {units * unit_us:.2f} µs over C++'s small network (4 ops "
                "calls and a wait; ratio for information)", ("overhead", units * unit_us))
    if name == OPS_REPLAY_ROW:
        return calls_goal(1, "a replay of the 4 ops calls and a wait, against 4 executes and a wait; "
                          "ratio for information", unit_us)
    if name == CHAIN_OPS_ROW:
        units = 21 * PER_CALL_UNITS + 20 * OPS_CALL_UNITS
        return (f"≤ {units} units = {units * unit_us:.2f} µs over C++'s 20 executes and a wait (20 ops "
                "calls and a wait; ratio for information)", ("overhead", units * unit_us))
    if name == CHAIN_REPLAY_ROW:
        return (f"ratio ≤ {REPLAY_GOAL_RATIO:g} against C++'s 20 executes and a wait (one replay and "
                "a wait)", ("ratio", REPLAY_GOAL_RATIO))
    if name in (OPS_OUT_CPP_ROW, OPS_NEW_CPP_ROW):
        units = OPS_OUT_CPP_UNITS if name == OPS_OUT_CPP_ROW else OPS_NEW_CPP_UNITS
        return (f"≤ {units} units = {units * unit_us:.2f} µs over C++'s execute of the same primitive",
                ("overhead", units * unit_us))
    if name == "large matmul":
        return calls_goal(2, "execute and wait; ratio for information", unit_us, cpp_us, name)
    if name == "small network":
        return calls_goal(5, "4 executes and a wait; ratio for information", unit_us)
    if name in ("primitive creation (cold)", FRESH_COLD_ROW, "primitive creation (cached)"):
        return calls_goal(2, "descriptor and primitive", unit_us, cpp_us, name)
    if "throughput, " in name:
        # Per execute, as the single-thread rows: threads may add no cost of
        # their own (GIL contention) to it. (A ratio of 0.95 would demand 1.8
        # µs for the graph's two Python callables on its 36 µs execute, less
        # than the graph row's own budget, and let the matmul's milliseconds
        # hide 100 µs per call.)
        if name.startswith("graph"):
            n = max(notes.get("allocations per execute", 1), 1)
            units = PER_CALL_UNITS + ALLOCATION_UNITS * n
            return (f"≤ {units} units = {units * unit_us:.2f} µs per execute over C++ (as the graph "
                    "row; ratio for information)", ("overhead", units * unit_us))
        return calls_goal(1, "per execute; ratio for information", unit_us, cpp_us, name)
    if name == PERSISTENT_CACHE_ROW:
        return (f"ratio ≤ {PERSISTENT_CACHE_GOAL_RATIO:g} against cold creation in a fresh process "
                "(Python reference; no C++ side)", ("ratio", PERSISTENT_CACHE_GOAL_RATIO))
    if name == BUSY_ROW:
        return (f"ratio ≤ {BUSY_GOAL_RATIO:g} against Python's execute and wait alone "
                f"(≥ {1 / BUSY_GOAL_RATIO:g} of its solo rate)", ("ratio", BUSY_GOAL_RATIO))
    return calls_goal(1, "1 call", unit_us)


def machine():
    """What the numbers were measured on."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu": model, "cores": os.cpu_count(), "load_average": load, "python": platform.python_version()}


# ---------------------------------------------------------------------- main

def measure_rounds(args):
    """(C++ rounds, Python rounds, notes per round): every row, or --only's.
    Each round's outputs are checked, both sides, before the next round."""
    cpp_rounds, python_rounds, notes_rounds = [], [], []
    expected = expected_outputs(args.matmul_size, kernel_enqueues(args.iterations, args.warmup))
    if args.only is None or args.only not in (PERSISTENT_CACHE_ROW, OPS_CALL_ROW):
        build_baseline()
    for round_index in range(args.rounds):
        cpp, rows, notes = {}, {}, {}
        cpp_digests, digests, cpp_measured = {}, {}, {}
        if args.only is None:
            # Both sides of a row back to back, each going first in turn:
            # neither gets the machine's state after the other's work every
            # time, and a state lasting seconds meets both.
            cpp, cpp_digests, rows, notes, digests = both_sides_in_turns(args, round_index)
            cpp_measured = cpp
        elif args.only == OPS_CALL_ROW:  # both of its sides are Python: one fresh process
            rows, notes, digests = python_side(args)
        elif args.only not in (PERSISTENT_CACHE_ROW, FRESH_COLD_ROW):
            # one side after the other, each going first in every other round
            if round_index % 2 == 0:
                cpp[args.only], cpp_digests, cpp_measured = single_row_cpp(
                    args.only, args.iterations, args.warmup, args.matmul_size)
            rows, notes, digests = python_side(args)
            if round_index % 2 == 1:
                cpp[args.only], cpp_digests, cpp_measured = single_row_cpp(
                    args.only, args.iterations, args.warmup, args.matmul_size)
        else:
            notes["unit"] = measure_unit(5, args.warmup)
        if args.only in (None, FRESH_COLD_ROW):
            rows[FRESH_COLD_ROW], cpp[FRESH_COLD_ROW], fresh = fresh_cold_rows(
                python_first=round_index % 2 == 1)
            digests[FRESH_COLD_ROW] = fresh["Python"]
            cpp_measured = {**cpp_measured, FRESH_COLD_ROW: cpp[FRESH_COLD_ROW]}
            if fresh["C++"] is not None:
                cpp_digests[FRESH_COLD_ROW] = fresh["C++"]
        if args.only in (None, PERSISTENT_CACHE_ROW):
            cold = PYTHON_REFERENCES[PERSISTENT_CACHE_ROW]
            rows[PERSISTENT_CACHE_ROW], notes[cold], cache_digests = persistent_cache_row()
            digests[PERSISTENT_CACHE_ROW], digests[cold] = cache_digests["warm"], cache_digests["cold"]
        check_outputs([("C++", cpp_digests, cpp_measured), ("Python", digests, rows)], expected)
        for row, note in PYTHON_REFERENCES.items():
            if row in rows:
                cpp[row] = notes[note]
        for row, reference in CPP_REFERENCES.items():
            if row in rows and reference in cpp:  # (--only has the reference's time as its own)
                cpp[row] = cpp[reference]
        cpp_rounds.append(cpp)
        python_rounds.append(rows)
        notes_rounds.append(notes)
    return cpp_rounds, python_rounds, notes_rounds


def judged_rows(cpp_rounds, python_rounds, notes_rounds):
    """The table's rows, each judged on the per-round differences (or ratios)."""
    unit_us = median_of([n["unit"] for n in notes_rounds])
    notes = notes_rounds[-1]
    rows = []
    for name in python_rounds[0]:
        py_rounds = [r[name] for r in python_rounds]
        cpp_rounds_of = [r[name] for r in cpp_rounds]
        goal, limit = goal_of(name, notes, unit_us, median_of(cpp_rounds_of))
        # Rounds alternate C++ and Python, so round i of each side shared the
        # machine's state: judge the per-round differences (or ratios).
        overheads = [p - c for p, c in zip(py_rounds, cpp_rounds_of)]
        ratios = [p / c if c else float("inf") for p, c in zip(py_rounds, cpp_rounds_of)]
        overhead = bootstrap_interval(overheads)
        ratio = bootstrap_interval(ratios)
        judged = None
        if limit is not None:
            low, high = (ratio if limit[0] == "ratio" else overhead)[1:]
            judged = verdict(low, high, limit[1])
        rows.append({"name": name, "python_us": round(median_of(py_rounds), 3),
                     "cpp_us": round(median_of(cpp_rounds_of), 3),
                     "overhead_us": round(overhead[0], 3),
                     "overhead_ci95_us": [round(overhead[1], 3), round(overhead[2], 3)],
                     "ratio": round(ratio[0], 4), "ratio_ci95": [round(ratio[1], 4), round(ratio[2], 4)],
                     "goal": goal, "goal_limit": list(limit) if limit else None, "verdict": judged,
                     "python_rounds_us": [round(v, 3) for v in py_rounds],
                     "cpp_rounds_us": [round(v, 3) for v in cpp_rounds_of]})
    return rows, unit_us


def compare(old, new):
    """The rows of report `new` whose overhead over their reference grew
    beyond their interval since report `old`: (lines of the comparison,
    names of the rows that grew). Each run's overheads are divided by its
    own unit when both timed the same unit call, so that runs on machines
    of different speed compare; in µs otherwise (said in the first line).
    A row grew when its new interval lies wholly above its old one; it
    shrank when wholly below; else it is the same within the noise."""
    same_unit = old.get("unit_call") == new.get("unit_call") and old.get("unit_us") and new.get("unit_us")
    scale_old, scale_new = (old["unit_us"], new["unit_us"]) if same_unit else (1.0, 1.0)
    what = f"units of {new['unit_call']}" if same_unit else (
        f"µs (the runs timed different unit calls: {old.get('unit_call', 'dnnl._core._empty()')} "
        f"and {new.get('unit_call', 'dnnl._core._empty()')}; compare runs of one machine)")
    lines = [f"overhead over the reference, in {what}: old median (interval) -> new median (interval)"]
    grew = []
    old_rows = {r["name"]: r for r in old["rows"]}
    for row in new["rows"]:
        before = old_rows.get(row["name"])
        if before is None:
            lines.append(f"  {row['name']}: not in the old run")
            continue
        o_med, o_lo, o_hi = (v / scale_old for v in (before["overhead_us"], *before["overhead_ci95_us"]))
        n_med, n_lo, n_hi = (v / scale_new for v in (row["overhead_us"], *row["overhead_ci95_us"]))
        if n_lo > o_hi:
            state = "GREW"
            grew.append(row["name"])
        elif n_hi < o_lo:
            state = "shrank"
        else:
            state = "same within the noise"
        lines.append(f"  {row['name']}: {o_med:+.3f} ({o_lo:+.3f} … {o_hi:+.3f}) -> "
                     f"{n_med:+.3f} ({n_lo:+.3f} … {n_hi:+.3f}): {state}")
    for name in old_rows.keys() - {r["name"] for r in new["rows"]}:
        lines.append(f"  {name}: not in the new run")
    return lines, grew


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    parser.add_argument("--iterations", type=int, default=2000, help="calls per row (in batches of 100)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--matmul-size", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plot", metavar="PATH", help="also draw each row's ratio and interval "
                                                       "against its goal (PNG; needs matplotlib)")
    parser.add_argument("--only", metavar="NAME", choices=ONLY_ROWS,
                        help=f"measure only this row: one of {ONLY_ROWS}")
    parser.add_argument("--compare", metavar="OLD.json",
                        help="compare the run with an earlier run's JSON (benchmarks/reference.json: "
                             "the reference run); exit 1 when a row's overhead grew beyond its interval")
    parser.add_argument("--from-json", metavar="NEW.json",
                        help="with --compare: compare this run's JSON instead of measuring")
    parser.add_argument("--python-side", action="store_true",
                        help="run one round's Python side in this process and print it as JSON "
                             "(what run.py starts for each round)")
    args = parser.parse_args(argv)
    if args.python_side:
        print_python_side(args)
        return 0
    if args.from_json:
        if not args.compare:
            parser.error("--from-json needs --compare")
        with open(args.from_json) as f:
            report = json.load(f)
    else:
        try:
            report = measure_and_print(args)
        except Exception as e:  # a failed measurement or output check: report and fail
            print(f"benchmark failed: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    if args.compare:
        with open(args.compare) as f:
            old = json.load(f)
        lines, grew = compare(old, report)
        print(f"\ncompared with {args.compare} ({old.get('date', '?')}, {old.get('rounds', '?')} rounds):")
        print("\n".join(lines))
        if grew:
            print(f"\noverhead grew beyond its interval: {', '.join(grew)}")
            return 1
    return 0


def measure_and_print(args):
    """Measures args.rounds rounds, prints the table (and writes --json and
    --plot); returns the report."""
    start_machine = machine()
    cpp_rounds, python_rounds, notes_rounds = measure_rounds(args)
    rows, unit_us = judged_rows(cpp_rounds, python_rounds, notes_rounds)
    # C++ rows with no Python counterpart: references for the docs (what the
    # binding's storage checks cost, measured in C++).
    cpp_only = {name: round(median_of([r[name] for r in cpp_rounds]), 3)
                for name in cpp_rounds[0] if name not in python_rounds[0]}
    version = ".".join(str(x) for x in dnnl.version()[:3])
    report = {"device": DEVICE, "onednn_version": version, "build_type": dnnl.build_type,
              "rounds": args.rounds, "date": time.strftime("%Y-%m-%d"), "unit_call": UNIT_CALL_NAME,
              "unit_us": round(unit_us, 4), "unit_rounds_us": [round(n["unit"], 4) for n in notes_rounds],
              "machine": start_machine, "load_average_at_end": machine()["load_average"],
              "rows": rows, "cpp_only_rows_us": cpp_only}
    print(f"device: {DEVICE}\noneDNN {version}, extension build {dnnl.build_type}, "
          f"{args.rounds} alternating rounds; medians over rounds, 95 % bootstrap intervals\n"
          f"machine: {start_machine['cpu']}, {start_machine['cores']} cores, load average "
          f"{start_machine['load_average']} at the start, {report['load_average_at_end']} at the end\n"
          f"unit ({UNIT_CALL_NAME}, median over rounds): {unit_us:.4f} µs\n")
    print("| row | Python µs | C++ µs | overhead µs (95 % CI) | ratio (95 % CI) | goal | verdict |")
    print("|---|---:|---:|---:|---:|---|:---:|")
    for r in rows:
        mark = {"meets": "meets", "misses": "**misses**", "inconclusive": "inconclusive",
                None: "—"}[r["verdict"]]
        lo, hi = r["overhead_ci95_us"]
        rlo, rhi = r["ratio_ci95"]
        print(f"| {r['name']} | {r['python_us']:.3f} | {r['cpp_us']:.3f} "
              f"| {r['overhead_us']:+.3f} ({lo:+.3f} … {hi:+.3f}) "
              f"| {r['ratio']:.3f} ({rlo:.3f} … {rhi:.3f}) | {r['goal']} | {mark} |")
    if any(r["verdict"] == "inconclusive" for r in rows):
        print("\ninconclusive: the interval straddles the goal; run more --rounds to decide.")
    if cpp_only:
        print("\nC++ only (medians): " + "; ".join(f"{name} {us} µs" for name, us in cpp_only.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.plot:
        plot(report, args.plot)
    return report


def plot(report, path):
    """One horizontal bar per judged row: the median ratio with its 95 %
    interval, on a log scale, and the row's goal as a ratio (an overhead goal
    in µs becomes (C++ + goal) / C++), so a regression shows at a glance."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["rows"] if r["verdict"] is not None]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.4))
    colours = {"meets": "tab:green", "misses": "tab:red", "inconclusive": "tab:orange"}
    for i, r in enumerate(rows):
        ratio, (low, high) = r["ratio"], r["ratio_ci95"]
        ax.errorbar(ratio, i, xerr=[[ratio - low], [high - ratio]], fmt="o", capsize=3,
                    color=colours[r["verdict"]])
        kind, limit = r["goal_limit"]
        goal = limit if kind == "ratio" else (r["cpp_us"] + limit) / r["cpp_us"]
        ax.plot([goal, goal], [i - 0.35, i + 0.35], color="black", linewidth=1.5)
    ax.set_yticks(range(len(rows)), [r["name"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", linewidth=0.5)
    ax.set_xlabel("Python / reference time (median, 95 % interval); bar: goal")
    ax.set_title(f"{report['date']}: oneDNN {report['onednn_version']}, {report['rounds']} rounds "
                 "(green meets, orange inconclusive, red misses)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
