"""The checked-in stubs and docs/reference.md are what the compiled module
says (tools/stubs.py regenerates both; this fails on any difference), the
released module's: a development build's test hooks are left out of them."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(300)
def test_stubs_and_reference_match_the_module():
    """On any build: the stubs generated from a build with test hooks, the
    hooks left out, are those of a build without them."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "stubs.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _stub_texts():
    stubs = ROOT / "python" / "dnnl_ocl_interop" / "_core"
    return {p: p.read_text() for p in [*sorted(stubs.rglob("*.pyi")), ROOT / "docs" / "reference.md"]}


def test_shipped_stubs_name_no_test_hook():
    """The hooks named in cpp/ (inside #ifdef DNNL_OCL_INTEROP_TEST_HOOKS)
    are the development build's test hooks, and no checked-in stub nor the
    reference names one: a released module has none."""
    tool = load_script("stubs_tool", ROOT / "tools" / "stubs.py")
    hooks = tool.test_hook_names()
    assert {"_cached", "_live_allocators", "_live_allocations",
            "_trace_allocators", "_malloc_and_free"} <= hooks, hooks
    for path, text in _stub_texts().items():
        named = {name for name in hooks if re.search(rf"\b{name}\b", text)}
        assert not named, f"{path.relative_to(ROOT)} names test hooks {sorted(named)}"
    assert "_test_hooks: bool\n" in (ROOT / "python" / "dnnl_ocl_interop" / "_core" / "__init__.pyi").read_text()


@pytest.mark.test_hooks
def test_every_hook_the_sources_name_is_in_the_module():
    """The reading of the sources finds the hooks this build has: each name
    is bound (on the module, a submodule or a class)."""
    import dnnl_ocl_interop as dnnl

    import types

    tool = load_script("stubs_tool", ROOT / "tools" / "stubs.py")
    places, todo = [], [dnnl._core]
    while todo:  # the compiled module, its submodules and their classes
        place = todo.pop()
        places.append(place)
        todo.extend(value for value in vars(place).values()
                    if (isinstance(value, types.ModuleType) and value.__name__.startswith(dnnl._core.__name__)
                        or isinstance(value, type) and value.__module__.startswith(dnnl._core.__name__))
                    and value not in places and value not in todo)
    for name in tool.test_hook_names():
        assert any(name in vars(place) for place in places), name


def test_hooks_are_left_out_with_their_decorators_and_bodies():
    tool = load_script("stubs_tool", ROOT / "tools" / "stubs.py")
    text = ("class a:\n    @staticmethod\n    def _hook(x: int) -> None:\n        \"\"\"\n        doc\n"
            "        \"\"\"\n    def kept(self) -> None:\n        ...\n_flag: bool = True\n"
            "def _other() -> int:\n    ...\ndef public() -> int:\n    ...\n")
    out, found = tool.without(text, {"_hook", "_other", "_flag"})
    assert found == {"_hook", "_other", "_flag"}
    assert out == "class a:\n    def kept(self) -> None:\n        ...\ndef public() -> int:\n    ...\n"


# What pybind11-stubgen 3.0 writes of a flag enum and a DLPack method on each
# Python (seen generating the module's stubs on 3.10, 3.11, 3.12 and 3.13).
_FLAG_310 = "class flags(enum.IntFlag):\n    a = ...\n    def __init__(self) -> None:\n        ...\n"
_FLAG_METHODS_311 = "".join(f"    def {signature}:\n        ...\n" for signature in (
    "__and__(self, other)", "__format__(self, format_spec)", "__invert__(self)", "__or__(self, other)",
    "__rand__(self, other)", "__ror__(self, other)", "__rxor__(self, other)", "__xor__(self, other)"))
_FLAG_311 = _FLAG_310.replace("    def __init__", _FLAG_METHODS_311 + "    def __init__")
_FLAG_312 = _FLAG_311.replace(
    "    def __format__(self, format_spec):\n        ...\n",
    '    def __format__(self, format_spec):\n        """\n        Convert to a string according to format_spec.\n'
    '        """\n')
_CAPSULE = "import enum\n{}import typing\n{}class m:\n    def __dlpack__(self) -> {}.CapsuleType:\n        ...\n"


def test_stubs_are_the_same_whichever_python_generates_them():
    """The stubs and their check do not depend on the Python that runs
    pybind11-stubgen: its enum module adds methods to flag enums (3.11 on),
    with a docstring (3.12 on), and 3.13 names `types.CapsuleType`."""
    corrected = load_script("stubs_tool", ROOT / "tools" / "stubs.py").corrected
    assert corrected(_FLAG_312) == corrected(_FLAG_311) == corrected(_FLAG_310) == _FLAG_310
    before_313 = _CAPSULE.format("", "import typing_extensions\n", "typing_extensions")
    on_313 = _CAPSULE.format("import types\n", "", "types")
    assert corrected(on_313) == corrected(before_313) == before_313
    # a bound method of such a name, with its annotations, is the module's: kept
    bound = _FLAG_310.replace("    def __init__", "    def __or__(self, other: flags) -> flags:\n"
                              "        ...\n    def __init__")
    assert corrected(bound) == bound


def test_opencl_parameters_show_their_pyopencl_types():
    """help() shows the Python types of OpenCL parameters, not `object`."""
    import dnnl_ocl_interop as dnnl

    expectations = {
        dnnl.ocl_interop.make_engine: ["device: pyopencl.Device | int",
                                       "context: pyopencl.Context | int"],
        dnnl.ocl_interop.make_stream: ["queue: pyopencl.CommandQueue | int"],
        dnnl.ocl_interop.set_mem_object: ["mem_object: pyopencl.MemoryObjectHolder | int"],
        dnnl.ocl_interop.execute: ["deps: collections.abc.Sequence[pyopencl.Event | int | None]",
                                   "-> pyopencl.Event | None"],
        dnnl.ocl_interop.get_context: ["-> pyopencl.Context"],
        dnnl.ocl_interop.get_device: ["-> pyopencl.Device"],
        dnnl.ocl_interop.get_command_queue: ["-> pyopencl.CommandQueue"],
        dnnl.ocl_interop.get_mem_object: ["-> pyopencl.Buffer | None"],
        dnnl.graph.ocl_interop.make_engine_with_allocator: ["device: pyopencl.Device | int"],
        dnnl.usm.device_alloc: ["context: pyopencl.Context | int", "device: pyopencl.Device | int"],
        dnnl.usm.memcpy: ["queue: pyopencl.CommandQueue | int"],
    }
    for function, fragments in expectations.items():
        for fragment in fragments:
            assert fragment in function.__doc__, (function.__name__, function.__doc__)
        signature = function.__doc__.split("\n\n")[0]
        for param in ("device", "context", "queue", "mem_object", "deps"):
            assert f"{param}: object" not in signature, signature
