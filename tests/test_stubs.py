"""The checked-in stubs and docs/reference.md are what the compiled module
says (tools/stubs.py regenerates both; this fails on any difference)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.test_hooks  # the checked-in stubs are the development build's, its test hooks included
@pytest.mark.timeout(300)
def test_stubs_and_reference_match_the_module():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "stubs.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


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
