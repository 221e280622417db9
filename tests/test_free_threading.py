"""The package on a free-threaded Python (3.13t and later, built with
``--disable-gil``).

The compiled module declares that it does not need the GIL
(``Py_MOD_GIL_NOT_USED``, ``py::mod_gil_not_used()`` in ``cpp/module.cpp``),
so importing the package alone, without pyopencl, leaves the GIL off; its
shared state is immutable after import or guarded (docs/api.md, "Threads and
the GIL"). Each check runs in a child process of this interpreter, without
``PYTHON_GIL`` in its environment (the suite's own process has imported
pyopencl, which turns the GIL on: pyopencl does not declare that it runs
without it, and forcing it off crashes pyopencl itself,
tools/pyopencl_without_gil.py; :func:`test_pyopencl_still_turns_the_gil_on`
watches for the day that changes).

On a build with a GIL these tests are skipped, saying so: there is no GIL to
leave off. ``.ci/run`` runs this file on the free-threaded 3.13t when
``tools/free_threaded_python.py`` has it cached (docs/building.md, "A
free-threaded Python"); the thread tests themselves (tests/test_threads.py,
tests/test_stress.py) run on both builds.
"""

import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))

free_threaded_only = pytest.mark.skipif(
    not FREE_THREADED,
    reason=f"Python {sys.version.split()[0]} here has a GIL (Py_GIL_DISABLED is not set): these "
           "tests check that the package leaves a free-threaded Python's GIL off; .ci/run runs "
           "them on the cached 3.13t")


def _child(script, timeout=120):
    """Runs `script` in a new process of this interpreter, without
    PYTHON_GIL, with warnings about the GIL made errors; returns its stdout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"the child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@free_threaded_only
def test_importing_the_package_alone_leaves_the_gil_off():
    out = _child("""
        import sys
        assert not sys._is_gil_enabled(), "the GIL was on before the import"
        import dnnl_ocl_interop as dnnl
        assert "pyopencl" not in sys.modules, "importing the package imported pyopencl"
        print(sys._is_gil_enabled(), dnnl._core.__name__)
    """)
    assert out.split() == ["False", "dnnl_ocl_interop._core"], (
        f"importing dnnl_ocl_interop turned the GIL on: {out!r} (the module must be declared "
        "with py::mod_gil_not_used())")


@free_threaded_only
def test_the_module_declares_that_it_does_not_need_the_gil():
    """The import above could leave the GIL off for another reason (a
    PYTHON_GIL=0 inherited some other way): the module's own slot says it."""
    out = _child("""
        import importlib.util, sys
        spec = importlib.util.find_spec("dnnl_ocl_interop._core")
        import dnnl_ocl_interop._core as core
        print(sys._is_gil_enabled(), core.__spec__.origin == spec.origin)
    """)
    assert out.split() == ["False", "True"], out


@free_threaded_only
def test_pyopencl_still_turns_the_gil_on():
    """Why the suite runs on 3.13t with the GIL (.ci/run): pyopencl, imported
    in a process that has not forced the GIL off, turns it on, as a module
    that does not declare free-threading support does. When a pyopencl
    declares it, this fails: run the 3.13t stage without the GIL then (and
    tools/pyopencl_without_gil.py to see that pyopencl's objects survive
    threads)."""
    out = _child("""
        import sys, warnings
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            import pyopencl
        named = [str(w.message) for w in seen if "pyopencl" in str(w.message)]
        print(sys._is_gil_enabled(), pyopencl.VERSION_TEXT, bool(named))
    """)
    gil, version, warned = out.split()
    assert gil == "True", (
        f"pyopencl {version} left the GIL off: it declares free-threading support now. Run .ci/run's "
        "3.13t stage without the GIL (and docs/building.md, A free-threaded Python, says so)")
    assert warned == "True", f"pyopencl {version} turned the GIL on without its RuntimeWarning: {out!r}"


def test_enum_conversions_met_first_by_many_threads_at_once():
    """The enum caster remembers each member it meets (common/enum_caster.hpp);
    here eight threads meet every eltwise algorithm and data type for the
    first time at once, in a fresh process (on a free-threaded Python with
    the GIL off), converting both ways, each in its own order. Five
    processes, so that the first meetings overlap in more than one way."""
    script = """
        import random, sys, threading
        import dnnl_ocl_interop as dnnl
        gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
        algorithms = [a for name, a in dnnl.algorithm.__members__.items() if name.startswith("eltwise_")]
        types = [getattr(dnnl.memory.data_type, name) for name in ("f32", "f16", "bf16", "s8", "u8", "s32")]
        start = threading.Barrier(8)
        wrong = []

        def convert(index):
            rng = random.Random(index)
            mine_a, mine_t = algorithms[:], types[:]
            rng.shuffle(mine_a)
            rng.shuffle(mine_t)
            start.wait()
            for _ in range(3):
                ops = dnnl.post_ops()
                for a in mine_a:
                    ops.append_eltwise(a, 0.5, 0.25)
                for i, a in enumerate(mine_a):
                    got = ops.get_params_eltwise(i)[0]
                    if got is not a:
                        wrong.append((a, got))
                for t in mine_t:
                    got = dnnl.memory.desc([2, 3], t, dnnl.memory.format_tag.ab).get_data_type()
                    if got is not t:
                        wrong.append((t, got))

        threads = [threading.Thread(target=convert, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(gil, len(algorithms), len(types), wrong)
    """
    for _ in range(5):
        gil, algorithms, types, wrong = _child(script).split(maxsplit=3)
        assert int(algorithms) > 10 and int(types) == 6
        assert wrong.strip() == "[]", f"members converted wrong: {wrong}"
        if FREE_THREADED:
            assert gil == "False", "the GIL was on: the threads did not convert at once"
