"""The benchmark's output checks see a binding (or a baseline) that does not
do the work: one short round of benchmarks/run.py, both sides, passes its
checks, and the same round with every oneDNN execute made to do nothing
(benchmarks/do_nothing_execute.c preloaded into both sides) fails the check
of every row whose work is an execute, on both sides.

Slow (two rounds of every row, the C++ baseline built when missing): a
minute or two each on the emulated device."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
# One round, few calls: the checks, not the times, are under test.
SHORT_RUN = [sys.executable, str(BENCHMARKS / "run.py"), "--rounds", "1", "--iterations", "500",
             "--warmup", "20", "--matmul-size", "64"]
# The rows whose output comes from oneDNN's execute (the creation rows run
# the primitive they made; the per-call rows make_memory and
# get_memory_kind, and the OpenCL kernel row, execute nothing of oneDNN's).
EXECUTING = ["execute(in-order)", "execute(out-of-order)", "primitive creation (cached)",
             "primitive creation (cold)", "small network", "chain of 100 executes",
             "large matmul", "graph execute with allocator", "graph execute with caching pool",
             "matmul throughput, 1 thread", "matmul throughput, 4 threads", "graph throughput, 1 thread",
             "graph throughput, 4 threads", "primitive creation (cold, fresh process)"]
CPP_ONLY = ["execute and wait"]
# Python rows, and Python references of rows without a C++ side
PYTHON_ONLY = ["small network with ops", "ops call (cached)", "the same call by hand",
               "solo execute and wait", "execute beside a busy thread",
               "primitive creation (persistent cache, warm)", "primitive creation (persistent cache, cold)"]
NOT_EXECUTING = ["get_memory_kind", "make_memory(usm)", "make_memory(cl_mem)", "opencl kernel enqueue"]

pytestmark = [pytest.mark.needs_build_tools, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def do_nothing(tmp_path_factory):
    """The preloadable library whose execute entry points do nothing."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "no C compiler (this test needs build tools)"
    library = tmp_path_factory.mktemp("do_nothing") / "do_nothing_execute.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(library),
                    str(BENCHMARKS / "do_nothing_execute.c"), "-ldl"], check=True)
    return library


def _run(env=None):
    return subprocess.run(SHORT_RUN, capture_output=True, text=True, timeout=1400,
                          env={**os.environ, **(env or {})})


def test_a_short_run_passes_its_output_checks():
    result = _run()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    table = result.stdout
    for row in EXECUTING + NOT_EXECUTING + ["small network with ops", "ops call (cached)",
                                            "execute beside a busy thread",
                                            "primitive creation (persistent cache, warm)"]:
        assert f"| {row} |" in table, row


def test_a_run_whose_executes_do_nothing_fails_the_checks_of_both_sides(do_nothing):
    result = _run({"LD_PRELOAD": str(do_nothing)})
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-5000:]
    failed = set(re.findall(r"^  (C\+\+|Python) row '([^']+)': output differs", result.stderr, re.M))
    assert failed, result.stderr[-5000:]
    missing = [(side, row) for row in EXECUTING for side in ("C++", "Python")
               if (side, row) not in failed]
    missing += [("Python", row) for row in PYTHON_ONLY if ("Python", row) not in failed]
    missing += [("C++", row) for row in CPP_ONLY if ("C++", row) not in failed]
    assert not missing, f"passed its check with executes that do nothing: {missing}\n{result.stderr[-5000:]}"
    # what executes nothing of oneDNN's still passes: the checks tell rows apart
    assert not [row for _, row in failed if row in NOT_EXECUTING], failed
