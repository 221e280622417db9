"""The checked-in stubs and docs/reference.md are what the compiled module
says (tools/stubs.py regenerates both; this fails on any difference)."""

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.test_hooks  # the checked-in stubs are the development build's, its test hooks included
@pytest.mark.timeout(300)
def test_stubs_and_reference_match_the_module():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "stubs.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


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
