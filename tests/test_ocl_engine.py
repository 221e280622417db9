"""OpenCL interop engines.

Mirrors oneDNN's tests/gtests/ocl/api/test_engine.cpp (BasicInteropC/Cpp,
BinaryKernels): an engine made from the user's device and context reports
them back, retains the context (reference count 2 while the engine lives, 1
after) and, on a partitionable device, retains a sub-device the same way.
Also the engine cache blob (id and blob, make_engine with a blob) and the
runtime-agnostic engine (dnnl.engine(kind.gpu, index)), and a program whose
first oneDNN call is make_engine on pyopencl handles. Invalid device and
context pairs are in test_bad_input.py.
"""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyopencl as cl

import dnnl_ocl_interop as dnnl
from helpers import DT, TAG, oi, sub_device_or_skip


def _small_desc():
    return dnnl.memory.desc([2, 3], DT.f32, TAG.ab)


def _assert_engine_works(engine, context, device):
    """Memory on `engine` moves data to and from the user's OpenCL objects."""
    desc = _small_desc()
    mem = dnnl.memory(desc, engine)
    expected = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    view = mem.map_data()
    view[...] = expected
    mem.unmap_data(view)
    queue = cl.CommandQueue(context, device)
    host = np.zeros_like(expected)
    cl.enqueue_copy(queue, host, oi.get_mem_object(mem))
    queue.finish()
    np.testing.assert_array_equal(host, expected)


def test_make_engine_reports_device_and_context(engine, cl_device, cl_context):
    assert engine.get_kind() == dnnl.engine.kind.gpu
    device = oi.get_device(engine)
    context = oi.get_context(engine)
    assert isinstance(device, cl.Device)
    assert isinstance(context, cl.Context)
    assert device.int_ptr == cl_device.int_ptr
    assert context.int_ptr == cl_context.int_ptr
    assert device == cl_device and context == cl_context


def test_make_engine_from_int_handles(cl_device, cl_context):
    engine = oi.make_engine(cl_device.int_ptr, cl_context.int_ptr)
    assert engine.get_kind() == dnnl.engine.kind.gpu
    assert oi.get_device(engine).int_ptr == cl_device.int_ptr
    assert oi.get_context(engine).int_ptr == cl_context.int_ptr
    _assert_engine_works(engine, cl_context, cl_device)


def test_engine_retains_and_releases_its_context(cl_device):
    context = cl.Context([cl_device])
    assert context.reference_count == 1
    engine = oi.make_engine(cl_device, context)
    assert context.reference_count == 2
    del engine
    gc.collect()
    assert context.reference_count == 1


def test_get_context_returns_an_object_with_its_own_reference(cl_device):
    context = cl.Context([cl_device])
    engine = oi.make_engine(cl_device, context)
    before = context.reference_count
    returned = oi.get_context(engine)
    assert context.reference_count == before + 1
    del returned
    gc.collect()
    assert context.reference_count == before
    # The engine still holds the context it was given.
    assert oi.get_context(engine) == context


def test_engine_keeps_a_dropped_context_alive(cl_device):
    context = cl.Context([cl_device])
    handle = context.int_ptr
    engine = oi.make_engine(cl_device, context)
    del context
    gc.collect()
    kept = oi.get_context(engine)
    assert kept.int_ptr == handle
    # One reference for the engine, one for `kept`.
    assert kept.reference_count == 2
    assert [d.int_ptr for d in kept.devices] == [cl_device.int_ptr]
    _assert_engine_works(engine, kept, cl_device)


def test_streams_and_memories_keep_their_engine_alive(cl_device):
    context = cl.Context([cl_device])
    engine = oi.make_engine(cl_device, context)
    stream = dnnl.stream(engine)
    mem = dnnl.memory(_small_desc(), engine)
    assert stream.get_engine() == engine
    assert mem.get_engine() == engine
    refs = context.reference_count
    del engine
    gc.collect()
    # The stream and the memory each keep the engine, so the context too.
    assert context.reference_count == refs
    assert oi.get_context(stream.get_engine()) == context
    assert oi.get_context(mem.get_engine()) == context
    _assert_engine_works(mem.get_engine(), context, cl_device)
    del stream, mem
    gc.collect()
    assert context.reference_count == 1


def test_engine_on_a_sub_device_retains_it(cl_device):
    # oneDNN's test does this part only when the device can be partitioned.
    sub_device, _all = sub_device_or_skip(cl_device)
    assert sub_device.parent_device == cl_device
    sub_context = cl.Context([sub_device])
    device_refs = sub_device.reference_count
    engine = oi.make_engine(sub_device, sub_context)
    assert sub_device.reference_count == device_refs + 1
    assert oi.get_device(engine) == sub_device
    assert oi.get_context(engine) == sub_context
    _assert_engine_works(engine, sub_context, sub_device)
    del engine
    gc.collect()
    assert sub_device.reference_count == device_refs
    assert sub_context.reference_count == 1


def test_engines_compare_by_identity(engine, cl_device, cl_context):
    assert engine == engine
    assert dnnl.stream(engine).get_engine() == engine
    other = oi.make_engine(cl_device, cl_context)
    assert other != engine
    assert other == other


def test_runtime_agnostic_gpu_engine_is_an_opencl_engine(cl_device):
    assert dnnl.engine.get_count(dnnl.engine.kind.gpu) >= 1
    engine = dnnl.engine(dnnl.engine.kind.gpu, 0)
    assert engine.get_kind() == dnnl.engine.kind.gpu
    device = oi.get_device(engine)
    context = oi.get_context(engine)
    assert device.int_ptr in [d.int_ptr for d in context.devices]
    assert device.int_ptr == cl_device.int_ptr
    _assert_engine_works(engine, context, device)


def test_cache_blob_id_identifies_device_driver_and_platform(cl_device):
    blob_id = oi.get_engine_cache_blob_id(cl_device)
    assert isinstance(blob_id, bytes)
    assert blob_id == oi.get_engine_cache_blob_id(cl_device.int_ptr)
    # oneDNN serializes the platform name, device name and driver version.
    assert cl_device.platform.name.encode() in blob_id
    assert cl_device.name.encode() in blob_id
    assert cl_device.driver_version.encode() in blob_id


def test_make_engine_from_cache_blob(engine, cl_device):
    blob = oi.get_engine_cache_blob(engine)
    assert isinstance(blob, bytes)
    assert len(blob) > 0
    context = cl.Context([cl_device])
    from_blob = oi.make_engine(cl_device, context, blob)
    assert from_blob.get_kind() == dnnl.engine.kind.gpu
    assert oi.get_device(from_blob) == cl_device
    assert oi.get_context(from_blob) == context
    assert context.reference_count == 2  # ours and the engine's
    _assert_engine_works(from_blob, context, cl_device)
    del from_blob
    gc.collect()
    assert context.reference_count == 1


def test_make_engine_from_cache_blob_as_bytearray(engine, cl_device, cl_context):
    # The binding's own TypeError says cache_blob "must be bytes or bytearray".
    blob = bytearray(oi.get_engine_cache_blob(engine))
    from_blob = oi.make_engine(cl_device, cl_context, cache_blob=blob)
    assert oi.get_context(from_blob) == cl_context
    _assert_engine_works(from_blob, cl_context, cl_device)


_FIRST_CALL_SCRIPT = textwrap.dedent("""
    import dnnl_ocl_interop as dnnl
    from dnnl_ocl_interop import emulation
    emulation.ensure_device()
    import pyopencl as cl

    devices = [d for p in cl.get_platforms() if "Intel" in p.vendor
               for d in p.get_devices() if d.type & cl.device_type.GPU]
    context = cl.Context([devices[0]])
    # make_engine is the first oneDNN call that reaches OpenCL.
    engine = dnnl.ocl_interop.make_engine(devices[0], context)
    assert dnnl.ocl_interop.get_device(engine) == devices[0]
    print("engine made")
""")


def test_make_engine_as_first_opencl_call_of_onednn():
    """A program that picks the device in-process (as conftest.py does) and
    calls make_engine before any other oneDNN call gets its engine: oneDNN
    sees the device as pyopencl does, even though pyopencl's handles come
    from another ICD loader."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DNNL_OCL_INTEROP_EMULATION", "OPENCL_LAYERS", "OCL_ICD_VENDORS")}
    run = subprocess.run([sys.executable, "-c", _FIRST_CALL_SCRIPT], env=env,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "engine made" in run.stdout
