"""Several emulated devices: ``dnnl.emulation.enable(devices=2)`` presents the
CPU runtime's device split in two (sub-devices over its compute units) as
two Intel GPUs, and oneDNN, pyopencl and the binding use them as two GPUs.

The device count is read at a process's first OpenCL call, so everything
runs in child processes started with two devices, whatever device this
process uses: one child runs every scenario below and reports each one's
outcome (a crash fails every test, with the child's output). The scenarios
check results against NumPy:

- the two devices as OpenCL and oneDNN see them;
- matmul halves computed on the two devices, from one thread and from one
  thread per device;
- reorders from one device's memory to the other's (oneDNN's cross-engine
  reorder), with separate contexts and in one context holding both devices;
- USM copies between the devices' memory (in a shared context, and through
  the host between contexts);
- a graph partition per device, each engine with its own Python allocator;
- handles of one device's context refused on the other's engine, with a
  dnnl.error, never a crash.
"""

import json
import os
import subprocess
import sys

import pytest

from dnnl_ocl_interop import emulation

DEVICES = 2
_VARIABLES = ("OPENCL_LAYERS", "OCL_ICD_VENDORS", "DNNL_OCL_INTEROP_EMULATION",
              "DNNL_OCL_INTEROP_EMULATED_DEVICES", "DNNL_OCL_INTEROP_DEVICE")


def _clean_env(**extra):
    """This process's environment without any emulation settings."""
    env = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
    env.update(extra)
    return env


_CHILD = r"""
import json, sys, threading, traceback
import numpy as np
import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import emulation
DESCRIPTION = emulation.enable(devices=int(sys.argv[1]))
import pyopencl as cl

g, goi, oi, usm = dnnl.graph, dnnl.graph.ocl_interop, dnnl.ocl_interop, dnnl.usm
DT, TAG = dnnl.memory.data_type, dnnl.memory.format_tag
results = {}

def scenario(function):
    try:
        outcome = function()
        results[function.__name__] = {"ok": True, "detail": outcome}
    except BaseException:
        results[function.__name__] = {"ok": False, "detail": traceback.format_exc()}
    return function

devices = [d for p in cl.get_platforms() if "Intel" in p.vendor
           for d in p.get_devices(cl.device_type.GPU)]
contexts = [cl.Context([d]) for d in devices]
queues = [cl.CommandQueue(c, d) for c, d in zip(contexts, devices)]
engines = [oi.make_engine(d, c) for d, c in zip(devices, contexts)]
streams = [oi.make_stream(e, q) for e, q in zip(engines, queues)]
rng = np.random.default_rng(12)

def memory(engine, array, tag=None, kind=oi.memory_kind.usm):
    desc = dnnl.memory.desc(list(array.shape), DT.f32,
                            tag or (TAG.ab if array.ndim == 2 else TAG.abc))
    m = oi.make_memory(desc, engine, kind)
    dnnl.arrays.write(m, array)
    return m

@scenario
def two_devices():
    ip_version = (12 << 22) | (50 << 14)
    assert len(devices) == 2, devices
    assert dnnl.engine.get_count(dnnl.engine.kind.gpu) == 2
    assert devices[0] != devices[1]
    import ctypes
    with open("/proc/self/maps") as maps:
        loader = next(line.split()[-1] for line in maps if "/libOpenCL.so" in line)
    ocl = ctypes.CDLL(loader)
    ocl.clGetDeviceInfo.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t,
                                    ctypes.c_void_p, ctypes.c_void_p]
    for i, device in enumerate(devices):
        assert device.type == cl.device_type.GPU, device.type
        assert device.max_compute_units == 512        # a whole Xe-HP tile each
        assert device.parent_device is None           # presented as root devices
        value = ctypes.c_uint()
        assert ocl.clGetDeviceInfo(device.int_ptr, 0x4250, 4, ctypes.byref(value), None) == 0
        assert value.value == ip_version, hex(value.value)
        own = dnnl.engine(dnnl.engine.kind.gpu, i)     # oneDNN's own enumeration
        assert oi.get_device(own).int_ptr == device.int_ptr
        assert oi.get_device(engines[i]).int_ptr == device.int_ptr
    # A context made from the device type holds the two devices.
    both = cl.Context(dev_type=cl.device_type.GPU)
    assert sorted(d.int_ptr for d in both.devices) == sorted(d.int_ptr for d in devices)
    # ALL lists them too; no CPU device is left.
    platform = devices[0].platform
    assert [d.int_ptr for d in platform.get_devices(cl.device_type.ALL)] == \
        [d.int_ptr for d in devices]
    try:
        cpus = platform.get_devices(cl.device_type.CPU)
    except cl.Error:
        cpus = []
    assert cpus == [], cpus
    return DESCRIPTION

M, K, N = 64, 48, 40
a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
expected = a.astype(np.float64) @ b

def matmul_half(i, repeats=1):
    # Returns every memory: oneDNN's work reads them until the stream is
    # waited on (memory dropped earlier is freed under the running kernel).
    half = M // 2
    src = memory(engines[i], a[i * half:(i + 1) * half])
    weights = memory(engines[i], b)
    dst = memory(engines[i], np.zeros((half, N), np.float32))
    pd = dnnl.matmul.primitive_desc(engines[i], src.get_desc(), weights.get_desc(),
                                    dst.get_desc())
    primitive = dnnl.matmul(pd)
    for _ in range(repeats):
        primitive.execute(streams[i], {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: weights,
                                       dnnl.ARG_DST: dst})
    return dst, src, weights

@scenario
def matmul_halves_one_thread():
    outputs = [matmul_half(i) for i in range(2)]  # both submitted, then waited
    for s in streams:
        s.wait()
    result = np.concatenate([dnnl.arrays.read(o[0]) for o in outputs])
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)

@scenario
def matmul_halves_one_thread_per_device():
    outputs, errors = [None, None], []
    def work(i):
        try:
            outputs[i] = matmul_half(i, repeats=3)
            streams[i].wait()
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    result = np.concatenate([dnnl.arrays.read(o[0]) for o in outputs])
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)

def cross_device_reorders(engine_pair, stream0):
    x = rng.uniform(-1, 1, (6, 10)).astype(np.float32)
    done = []
    for kind in (oi.memory_kind.usm, oi.memory_kind.buffer):
        for dst_tag in (TAG.ab, TAG.ba):  # a copy, and a layout change
            src = memory(engine_pair[0], x, kind=kind)
            dst_desc = dnnl.memory.desc([6, 10], DT.f32, dst_tag)
            dst = oi.make_memory(dst_desc, engine_pair[1], kind)
            pd = dnnl.reorder.primitive_desc(engine_pair[0], src.get_desc(),
                                             engine_pair[1], dst_desc)
            assert pd.get_src_engine() == engine_pair[0]
            assert pd.get_dst_engine() == engine_pair[1]
            dnnl.reorder(pd).execute(stream0, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
            stream0.wait()
            np.testing.assert_array_equal(dnnl.arrays.read(dst), x)
            done.append(f"{kind.name} {dst_tag.name}: {pd.impl_info_str()}")
    return done

@scenario
def reorder_between_devices():
    return cross_device_reorders(engines, streams[0])

shared = cl.Context(devices)
shared_queues = [cl.CommandQueue(shared, d) for d in devices]
shared_engines = [oi.make_engine(d, shared) for d in devices]

@scenario
def reorder_between_devices_of_one_context():
    return cross_device_reorders(shared_engines, oi.make_stream(shared_engines[0],
                                                                 shared_queues[0]))

@scenario
def usm_copy_between_devices():
    x = rng.uniform(-1, 1, 256).astype(np.float32)
    # One context holding both devices: device 1's queue copies from device
    # 0's memory into its own.
    with usm.allocation(shared, x.nbytes, "device", devices[0]) as on0, \
            usm.allocation(shared, x.nbytes, "device", devices[1]) as on1:
        usm.memcpy(shared_queues[0], on0.ptr, x, x.nbytes)
        usm.memcpy(shared_queues[1], on1.ptr, on0.ptr, x.nbytes).wait()
        out = np.empty_like(x)
        usm.memcpy(shared_queues[1], out, on1.ptr, x.nbytes)
        np.testing.assert_array_equal(out, x)
    # Separate contexts: through the host.
    with usm.allocation(contexts[0], x.nbytes, "device", devices[0]) as on0, \
            usm.allocation(contexts[1], x.nbytes, "device", devices[1]) as on1:
        usm.memcpy(queues[0], on0.ptr, x, x.nbytes)
        host = np.empty_like(x)
        usm.memcpy(queues[0], host, on0.ptr, x.nbytes)
        usm.memcpy(queues[1], on1.ptr, host, x.nbytes)
        out = np.empty_like(x)
        usm.memcpy(queues[1], out, on1.ptr, x.nbytes)
        np.testing.assert_array_equal(out, x)

@scenario
def graph_engine_per_device():
    lt = g.logical_tensor
    f32, strided = lt.data_type.f32, lt.layout_type.strided
    src, wei = lt(0, f32, [8, 16], strided), lt(1, f32, [16, 4], strided)
    out = lt(2, f32, [8, 4], strided)
    graph = g.graph(dnnl.engine.kind.gpu)
    graph.add_op(g.op(0, g.op.kind.MatMul, [src, wei], [out], "mm"))
    graph.finalize()
    partition, = graph.get_partitions()
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 4)).astype(np.float32)
    seen = []
    for i, (device, context) in enumerate(zip(devices, contexts)):
        calls = []
        def malloc(size, alignment, dev, ctx, calls=calls):
            calls.append((dev.int_ptr, ctx.int_ptr))
            return usm.device_alloc(ctx, dev, size, alignment)
        def free(ptr, dev, ctx, event):
            if event is not None:
                event.wait()
            usm.free(ctx, ptr)
        engine = goi.make_engine_with_allocator(device, context, goi.make_allocator(malloc, free))
        stream = oi.make_stream(engine, queues[i])
        compiled = partition.compile([src, wei], [out], engine)
        keep = [usm.allocation(context, a.nbytes, "device", device) for a in (x, w)]
        for buffer, array in zip(keep, (x, w)):
            usm.memcpy(queues[i], buffer.ptr, array, array.nbytes)
        result_tensor = g.tensor(out, engine, dnnl.MEMORY_ALLOCATE)  # from the allocator
        compiled.execute(stream, [g.tensor(src, engine, keep[0].ptr),
                                  g.tensor(wei, engine, keep[1].ptr)], [result_tensor])
        stream.wait()
        result = np.empty((8, 4), np.float32)
        usm.memcpy(queues[i], result, result_tensor.get_data_handle(), result.nbytes)
        np.testing.assert_allclose(result, x @ w, rtol=1e-5, atol=1e-5)
        assert calls and all(c == (device.int_ptr, context.int_ptr) for c in calls), calls
        seen.append(len(calls))
        del result_tensor, compiled, stream, engine
    return seen

def refused(call, *words):
    try:
        call()
    except dnnl.error as e:
        message = str(e)
        assert all(w in message for w in words), message
        return message
    raise AssertionError(f"not refused: {words}")

@scenario
def handles_of_the_other_device_refused():
    desc = dnnl.memory.desc([4, 6], DT.f32, TAG.ab)
    messages = []
    buffer0 = cl.Buffer(contexts[0], cl.mem_flags.READ_WRITE, desc.get_size())
    messages.append(refused(lambda: oi.make_memory(desc, engines[1], buffer0),
                            "another OpenCL context"))
    messages.append(refused(lambda: dnnl.memory(desc, engines[1], buffer0),
                            "another OpenCL context"))
    with usm.allocation(contexts[0], desc.get_size(), "device", devices[0]) as on0, \
            usm.allocation(contexts[1], desc.get_size(), "device", devices[1]) as on1:
        # A USM pointer of device 0, as USM memory and as a buffer handle, on
        # device 1's engine (the second used to crash the runtime).
        messages.append(refused(lambda: oi.make_memory(desc, engines[1], oi.memory_kind.usm,
                                                       on0.ptr), "not a USM allocation"))
        messages.append(refused(lambda: dnnl.memory(desc, engines[1], on0.ptr),
                                "not a cl_mem"))
        messages.append(refused(lambda: oi.make_memory(desc, engines[1],
                                                       oi.memory_kind.buffer, on0.ptr),
                                "not a cl_mem"))
        messages.append(refused(lambda: usm.memcpy(queues[1], on1.ptr, on0.ptr, 16),
                                "not a USM allocation of the queue's context"))
        messages.append(refused(lambda: usm.fill(queues[1], on0.ptr, b"\0" * 4, 16),
                                "not a USM allocation"))
        m1 = oi.make_memory(desc, engines[1], oi.memory_kind.usm, on1.ptr)
        messages.append(refused(lambda: m1.set_data_handle(on0.ptr), "not a USM allocation"))
    messages.append(refused(lambda: oi.make_stream(engines[1], queues[0]), "stream"))
    messages.append(refused(lambda: oi.make_engine(devices[1], contexts[0]), "engine"))
    pd = dnnl.reorder.primitive_desc(engines[1], desc, engines[1], desc)
    on_1 = [dnnl.memory(desc, engines[1]) for _ in range(2)]
    on_0 = dnnl.memory(desc, engines[0])
    reorder = dnnl.reorder(pd)
    messages.append(refused(lambda: reorder.execute(streams[0], {dnnl.ARG_FROM: on_1[0],
                                                                 dnnl.ARG_TO: on_1[1]}),
                            "stream is on another engine"))
    messages.append(refused(lambda: reorder.execute(streams[1], {dnnl.ARG_FROM: on_0,
                                                                 dnnl.ARG_TO: on_1[1]}),
                            "another engine"))
    marker = cl.enqueue_marker(queues[0])
    messages.append(refused(lambda: oi.execute(reorder, streams[1], {dnnl.ARG_FROM: on_1[0],
                                                                     dnnl.ARG_TO: on_1[1]},
                                               [marker]), "another OpenCL context"))
    cross = dnnl.reorder(dnnl.reorder.primitive_desc(engines[0], desc, engines[1], desc))
    messages.append(refused(lambda: cross.execute(streams[0], {dnnl.ARG_FROM: on_0,
                                                               dnnl.ARG_TO: on_0}),
                            "destination engine"))
    return messages

print("RESULTS " + json.dumps(results))
"""


@pytest.fixture(scope="module")
def child_results():
    """Runs every scenario in one child with two emulated devices."""
    child = subprocess.run([sys.executable, "-c", _CHILD, str(DEVICES)], env=_clean_env(),
                           capture_output=True, text=True, timeout=1200)
    line = next((line for line in child.stdout.splitlines() if line.startswith("RESULTS ")),
                None)
    assert child.returncode == 0 and line, (
        f"exit status {child.returncode} (negative: killed by signal {-child.returncode})\n"
        + child.stdout[-2000:] + child.stderr[-3000:])
    return json.loads(line[len("RESULTS "):])


@pytest.mark.parametrize("name", [
    "two_devices",
    "matmul_halves_one_thread",
    "matmul_halves_one_thread_per_device",
    "reorder_between_devices",
    "reorder_between_devices_of_one_context",
    "usm_copy_between_devices",
    "graph_engine_per_device",
    "handles_of_the_other_device_refused",
])
def test_scenario(child_results, name):
    """Each scenario of the child (see the module docstring) passed."""
    outcome = child_results[name]
    assert outcome["ok"], outcome["detail"]


_COUNT = r"""
import dnnl_ocl_interop as dnnl
import pyopencl as cl
gpus = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.GPU)]
print(len(gpus), dnnl.engine.get_count(dnnl.engine.kind.gpu), dnnl.emulation.is_enabled())
"""


def test_environment_variable_and_command_line():
    """DNNL_OCL_INTEROP_EMULATED_DEVICES=2 with python -m dnnl_ocl_interop.emulation
    gives two devices; without it, one, as always."""
    for value, expected in (("2", "2 2 True"), (None, "1 1 True")):
        extra = {"DNNL_OCL_INTEROP_EMULATED_DEVICES": value} if value else {}
        child = subprocess.run(
            [sys.executable, "-m", "dnnl_ocl_interop.emulation", sys.executable, "-c", _COUNT],
            env=_clean_env(**extra), capture_output=True, text=True, timeout=300)
        assert child.returncode == 0, child.stderr[-3000:]
        assert child.stdout.split("\n")[0] == expected, child.stdout
        if value:
            assert "2 emulated Intel GPUs" in child.stderr


def test_layer_refuses_counts_it_cannot_make():
    """Set up by hand, bypassing enable()'s check, a count beyond the CPU
    device's compute units presents no device at all (and says why on
    stderr), rather than silently one."""
    too_many = len(os.sched_getaffinity(0)) + 1
    env = _clean_env(OCL_ICD_VENDORS=emulation.cpu_runtime_path(),
                     OPENCL_LAYERS=emulation.layer_path(),
                     DNNL_OCL_INTEROP_EMULATED_DEVICES=str(too_many))
    child = subprocess.run([sys.executable, "-c", _COUNT], env=env, capture_output=True,
                           text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.split()[:2] == ["0", "0"], child.stdout
    assert f"DNNL_OCL_INTEROP_EMULATED_DEVICES={too_many}" in child.stderr
    assert "no emulated device is presented" in child.stderr


def test_enable_checks_the_count(monkeypatch):
    """enable() refuses counts it cannot present before touching anything:
    more devices than CPUs, fewer than one, a bad variable, a non-int."""
    cpus = len(os.sched_getaffinity(0))
    for bad in (0, -1, cpus + 1):
        with pytest.raises(emulation.EmulationError, match="between 1 and"):
            emulation.enable(devices=bad)
    with pytest.raises(TypeError):
        emulation.enable(devices=True)
    with pytest.raises(TypeError):
        emulation.enable(devices="2")
    monkeypatch.setenv("DNNL_OCL_INTEROP_EMULATED_DEVICES", "two")
    with pytest.raises(emulation.EmulationError, match="device count"):
        emulation.enable()


def test_count_cannot_change_once_opencl_runs():
    """In a process already running emulation with one device, asking for two
    raises EmulationError (the count was read at the first OpenCL call)."""
    script = (
        "import dnnl_ocl_interop as dnnl\n"
        "from dnnl_ocl_interop import emulation\n"
        "emulation.enable()\n"
        "import pyopencl as cl; cl.get_platforms()\n"
        "emulation.enable()  # the same count: fine\n"
        "try:\n"
        "    emulation.enable(devices=2)\n"
        "except emulation.EmulationError as e:\n"
        "    print('refused:', e)\n")
    child = subprocess.run([sys.executable, "-c", script], env=_clean_env(),
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    assert "refused:" in child.stdout and "1 device(s)" in child.stdout, child.stdout
