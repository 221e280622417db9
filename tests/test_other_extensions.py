"""Other pybind11 extensions in the process are left as they were: the
binding's ``__new__`` guard (cpp/common/instances.cpp) works through the
module's own metaclass, never through pybind11's default metaclass, which
every pybind11 module of the same internals shares.

A tiny second extension is built here (with the compiler and the pybind11
headers the package is built with) and loaded beside the package in a
fresh process, once before the package's import and once after it.
"""

import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

SECOND = textwrap.dedent("""
    #include <cstdint>
    #include <pybind11/pybind11.h>
    namespace py = pybind11;

    struct thing {
        explicit thing(int value) : value(value) {}
        int value;
    };

    PYBIND11_MODULE(second, m) {
        py::class_<thing>(m, "thing")
            .def(py::init<int>())
            .def_readonly("value", &thing::value);
        // The C slot a metaclass's call goes through: Python shows no change of it.
        m.def("tp_call_of", [](py::handle type) {
            return reinterpret_cast<std::uintptr_t>(
                reinterpret_cast<PyTypeObject *>(type.ptr())->tp_call);
        });
    }
""")

CHILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    first = sys.argv[2]
    results = {}

    def construction(second):
        made = second.thing(7)
        new_alone = second.thing.__new__(second.thing)  # pybind11's own: no guard here

        class Sub(second.thing):
            def __init__(self):
                pass  # pybind11 requires the base __init__: its own TypeError

        try:
            Sub()
            missing_init = None
        except TypeError as e:
            missing_init = str(e)
        return {"value": made.value, "new_alone": type(new_alone).__name__,
                "metaclass": type(second.thing).__name__, "missing_init": missing_init}

    if first == "second":
        import second
        metaclass = type(second.thing)
        before = second.tp_call_of(metaclass)
        results["before"] = construction(second)
        import dnnl_ocl_interop as dnnl
    else:
        import dnnl_ocl_interop as dnnl
        import second
        metaclass = type(second.thing)
        before = second.tp_call_of(metaclass)
    results["tp_call_unchanged"] = second.tp_call_of(metaclass) == before
    results["after"] = construction(second)
    # the package's classes: their own metaclass, a subclass of the shared one
    ours = type(dnnl.engine)
    results["ours"] = {"name": ours.__name__, "base_is_shared": ours.__bases__[0] is metaclass,
                       "tp_call_differs": second.tp_call_of(ours) != second.tp_call_of(metaclass)}
    try:
        dnnl.engine.__new__(dnnl.engine)
        results["ours"]["guarded"] = False
    except TypeError:
        results["ours"]["guarded"] = True
    print(json.dumps(results))
""")


@pytest.fixture(scope="module")
def second_module(tmp_path_factory):
    import pybind11

    where = tmp_path_factory.mktemp("second")
    (where / "second.cpp").write_text(SECOND)
    target = where / ("second" + sysconfig.get_config_var("EXT_SUFFIX"))
    compiler = (sysconfig.get_config_var("CXX") or "c++").split()[0]
    command = [compiler, "-O0", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
               f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}",
               str(where / "second.cpp"), "-o", str(target)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    return where


def run_child(where: Path, first: str) -> dict:
    import json

    child = subprocess.run([sys.executable, "-c", CHILD, str(where), first],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stdout + child.stderr
    return json.loads(child.stdout.splitlines()[-1])


@pytest.mark.needs_build_tools
@pytest.mark.timeout(900)
@pytest.mark.parametrize("first", ["second", "package"])
def test_another_pybind11_module_constructs_as_before(second_module, first):
    r = run_child(second_module, first)
    # pybind11's shared metaclass: its call slot as it was, its classes'
    # construction pybind11's own (no guard, pybind11's missing-__init__ error)
    assert r["tp_call_unchanged"]
    after = r["after"]
    assert after["value"] == 7 and after["new_alone"] == "thing"
    assert after["metaclass"] == "pybind11_type"
    assert after["missing_init"] and "__init__() must be called when overriding __init__" in after["missing_init"]
    if first == "second":
        assert r["before"] == after
    # the package's classes go through their own metaclass, guarded
    assert r["ours"] == {"name": "_guarded_type", "base_is_shared": True, "tp_call_differs": True,
                         "guarded": True}
