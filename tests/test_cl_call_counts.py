"""The emulation layer's OpenCL call counting
(``DNNL_OCL_INTEROP_COUNT_CL_CALLS``, docs/emulation.md): with the variable
set, a child process that runs a tiny primitive writes a JSON file whose
counts include its kernel launch and the USM extension functions it called
(and the time spent inside them);
without it, no file is written.

Each case runs in a child forced onto the emulated device (the layer does
the counting), whatever device this process uses.
"""

import json
import os
import subprocess
import sys

import pytest

# The counting is built only with DNNL_OCL_INTEROP_TEST_HOOKS (not in wheels).
pytestmark = pytest.mark.test_hooks

VARIABLE = "DNNL_OCL_INTEROP_COUNT_CL_CALLS"

# A ReLU of 64 floats executed EXECUTES times on an in-order queue, on
# memory over a USM device allocation made through dnnl.usm.
EXECUTES = 3
_TINY_PRIMITIVE = f"""
import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import emulation; emulation.ensure_device()
import pyopencl as cl
device = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.GPU)][0]
context = cl.Context([device])
queue = cl.CommandQueue(context, device)
engine = dnnl.ocl_interop.make_engine(device, context)
stream = dnnl.ocl_interop.make_stream(engine, queue)
md = dnnl.memory.desc([64], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
ptr = dnnl.usm.device_alloc(context, device, md.get_size())
src = dnnl.ocl_interop.make_memory(md, engine, dnnl.ocl_interop.memory_kind.usm, ptr)
dst = dnnl.memory(md, engine)
relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
    engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, md, md))
for _ in range({EXECUTES}):
    relu.execute(stream, {{dnnl.ARG_SRC: src, dnnl.ARG_DST: dst}})
stream.wait()
del src
dnnl.usm.free(context, ptr)
print("ok")
"""


def _run(tmp_path, counts_file):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENCL_LAYERS", "OCL_ICD_VENDORS", "DNNL_OCL_INTEROP_EMULATION", VARIABLE)}
    env["DNNL_OCL_INTEROP_DEVICE"] = "emulated"
    if counts_file is not None:
        env[VARIABLE] = str(counts_file)
    child = subprocess.run([sys.executable, "-c", _TINY_PRIMITIVE], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.strip().endswith("ok")
    return child


def _sum(maps):
    total = {}
    for calls in maps:
        for name, n in calls.items():
            total[name] = total.get(name, 0) + n
    return total


def test_counts_written_at_exit(tmp_path):
    counts_file = tmp_path / "counts-%p.json"
    child = _run(tmp_path, counts_file)
    written = list(tmp_path.glob("counts-*.json"))
    assert len(written) == 1, (written, child.stderr[-2000:])
    counts = json.loads(written[0].read_text())
    assert written[0].name == f"counts-{counts['pid']}.json"  # "%p" is the process id
    calls = counts["calls"]
    assert calls.get("clEnqueueNDRangeKernel", 0) >= EXECUTES
    assert calls.get("clSetKernelArg", 0) + calls.get("clSetKernelArgMemPointerINTEL", 0) >= EXECUTES
    # Extension functions handed out by clGetExtensionFunctionAddressForPlatform.
    assert calls.get("clDeviceMemAllocINTEL", 0) >= 1
    assert calls.get("clMemBlockingFreeINTEL", 0) + calls.get("clMemFreeINTEL", 0) >= 1
    assert calls.get("clGetExtensionFunctionAddressForPlatform", 0) >= 1
    assert calls.get("clGetPlatformIDs", 0) >= 1
    # Time inside the calls, only for entries that were called.
    assert set(counts["nanoseconds"]) <= set(calls)
    assert counts["nanoseconds"].get("clEnqueueNDRangeKernel", 0) > 0
    # Totals are the sums over the threads and over the loaders.
    assert _sum(t["calls"] for t in counts["threads"]) == calls
    assert _sum(loader["calls"] for loader in counts["loaders"]) == calls
    main = [t for t in counts["threads"] if t["main"]]
    assert len(main) == 1 and main[0]["tid"] == counts["pid"]
    assert main[0]["calls"].get("clEnqueueNDRangeKernel", 0) >= EXECUTES
    assert 1 <= len(counts["loaders"]) <= 4
    assert all(loader["library"] for loader in counts["loaders"])


def test_no_file_without_the_variable(tmp_path):
    _run(tmp_path, None)
    assert list(tmp_path.iterdir()) == []
