"""fork() after OpenCL was used: the child's OpenCL calls through the binding
raise dnnl.runtime_error at once (OpenCL runtimes are not fork-safe; the CPU
runtime's child would wait forever for threads it does not have), the
parent is unaffected, a child forked before the first OpenCL call works,
and multiprocessing's 'spawn' start method works after OpenCL was used.

Each scenario runs in a child process (a script in a temporary directory,
so that 'spawn' can import it) on the device conftest.py chose, inherited
through the environment; the forked grandchildren report through their
exit status (os._exit) and are killed after a time limit, so a hang fails
the test instead of stalling the suite.
"""

import os
import subprocess
import sys
import textwrap

TESTS = os.path.dirname(os.path.abspath(__file__))

# Shared by the scripts: a matmul on an engine of its own, checked against NumPy.
_COMMON = r"""
import os, sys, time
import numpy as np
import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import emulation
emulation.ensure_device()  # conftest.py's choice, inherited: returns at once

DT, TAG, oi = dnnl.memory.data_type, dnnl.memory.format_tag, dnnl.ocl_interop

def setup():
    import pyopencl as cl
    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    engine = oi.make_engine(device, context)
    return device, context, queue, engine, oi.make_stream(engine, queue)

def matmul(engine, stream, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (8, 12)).astype(np.float32)
    b = rng.uniform(-1, 1, (12, 5)).astype(np.float32)
    mems = []
    for array in (a, b, np.zeros((8, 5), np.float32)):
        m = dnnl.memory(dnnl.memory.desc(list(array.shape), DT.f32, TAG.ab), engine)
        dnnl.arrays.write(m, array)
        mems.append(m)
    pd = dnnl.matmul.primitive_desc(engine, *(m.get_desc() for m in mems))
    dnnl.matmul(pd).execute(stream, {dnnl.ARG_SRC: mems[0], dnnl.ARG_WEIGHTS: mems[1],
                                     dnnl.ARG_DST: mems[2]})
    stream.wait()
    result = dnnl.arrays.read(mems[2])
    np.testing.assert_allclose(result, a @ b, rtol=1e-5, atol=1e-5)
    return result

def wait_child(pid, limit=60):
    # The child's exit status, or 'hung' (it is killed) after `limit` seconds.
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"
"""

_FORK_AFTER_USE = r"""
device, context, queue, engine, stream = setup()
before = matmul(engine, stream, 1)

# Objects made before the fork, for the child to try.
desc = dnnl.memory.desc([4, 4], DT.f32, TAG.ab)
memory = dnnl.memory(desc, engine)
pd = dnnl.eltwise_forward.primitive_desc(engine, dnnl.prop_kind.forward_inference,
                                         dnnl.algorithm.eltwise_relu, desc, desc)
relu = dnnl.eltwise_forward(pd)
g = dnnl.graph
lt = g.logical_tensor
x = lt(0, lt.data_type.f32, [4, 4], lt.layout_type.strided)
y = lt(1, lt.data_type.f32, [4, 4], lt.layout_type.strided)
graph = g.graph(dnnl.engine.kind.gpu)
graph.add_op(g.op(0, g.op.kind.ReLU, [x], [y], "relu"))
graph.finalize()
partition, = graph.get_partitions()
compiled = partition.compile([x], [y], engine)
allocator = g.ocl_interop.make_allocator(lambda *a: 0, lambda *a: None)
ptr = dnnl.usm.device_alloc(context, device, 64)
tensors = [g.tensor(t, engine, ptr) for t in (x, y)]
mapped_memory = dnnl.memory(desc, engine)
mapped = mapped_memory.map_data()

calls = {
    "engine(kind, index)": lambda: dnnl.engine(dnnl.engine.kind.gpu, 0),
    "engine.get_count": lambda: dnnl.engine.get_count(dnnl.engine.kind.gpu),
    "ocl_interop.make_engine": lambda: oi.make_engine(device, context),
    "graph make_engine_with_allocator":
        lambda: g.ocl_interop.make_engine_with_allocator(device, context, allocator),
    "graph make_engine_with_allocator(kind, index)":
        lambda: g.make_engine_with_allocator(dnnl.engine.kind.gpu, 0, g.allocator()),
    "stream(engine)": lambda: dnnl.stream(engine),
    "ocl_interop.make_stream": lambda: oi.make_stream(engine, queue),
    "stream.wait": lambda: stream.wait(),
    "memory(desc, engine)": lambda: dnnl.memory(desc, engine),
    "ocl_interop.make_memory": lambda: oi.make_memory(desc, engine, oi.memory_kind.usm),
    "memory.map_data": lambda: memory.map_data(),
    "memory.unmap_data": lambda: mapped_memory.unmap_data(mapped),
    "memory.set_data_handle": lambda: memory.set_data_handle(dnnl.MEMORY_NONE),
    "primitive_desc": lambda: dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, desc, desc),
    "reorder.primitive_desc": lambda: dnnl.reorder.primitive_desc(engine, desc, engine, desc),
    "primitive": lambda: dnnl.eltwise_forward(pd),
    "primitive.execute": lambda: relu.execute(stream, {dnnl.ARG_SRC: memory,
                                                       dnnl.ARG_DST: memory}),
    "ocl_interop.execute": lambda: oi.execute(relu, stream, {dnnl.ARG_SRC: memory,
                                                            dnnl.ARG_DST: memory}),
    "usm.device_alloc": lambda: dnnl.usm.device_alloc(context, device, 64),
    "usm.memcpy": lambda: dnnl.usm.memcpy(queue, ptr, np.zeros(16, np.float32), 64),
    "usm.free": lambda: dnnl.usm.free(context, ptr),
    "graph compile": lambda: partition.compile([x], [y], engine),
    "graph tensor": lambda: g.tensor(y, engine, dnnl.MEMORY_ALLOCATE),
    "compiled_partition.execute": lambda: compiled.execute(stream, tensors[:1], tensors[1:]),
    "graph.ocl_interop.execute":
        lambda: g.ocl_interop.execute(compiled, stream, tensors[:1], tensors[1:]),
}

failures = []
for name, call in calls.items():
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            start = time.monotonic()
            call()
            code = 1  # no error
        except dnnl.runtime_error as e:
            message = str(e)
            right = ("fork" in message and "not fork-safe" in message and "'spawn'" in message
                     and e.status == dnnl.status.runtime_error)
            code = 0 if right and time.monotonic() - start < 5 else 2
            if not right:
                os.write(2, f"{name}: {message}\n".encode())
        except BaseException as e:
            os.write(2, f"{name}: {type(e).__name__}: {e}\n".encode())
            code = 3
        os._exit(code)
    status = wait_child(pid)
    if status != 0:
        failures.append(f"{name}: " + {1: "no error", 2: "wrong error or too slow",
                                        3: "another exception"}.get(status, str(status)))

# The parent goes on as before.
after = matmul(engine, stream, 1)
np.testing.assert_array_equal(before, after)
print("failures:", failures)
print("PARENT OK")
"""

_FORK_BEFORE_USE = r"""
# No OpenCL call yet (import and the device choice make none): the child
# may use OpenCL itself.
pid = os.fork()
if pid == 0:
    try:
        device, context, queue, engine, stream = setup()
        matmul(engine, stream, 3)
        code = 0
    except BaseException as e:
        os.write(2, f"child: {type(e).__name__}: {e}\n".encode())
        code = 1
    os._exit(code)
status = wait_child(pid, limit=300)
device, context, queue, engine, stream = setup()
matmul(engine, stream, 4)
print("child:", status)
"""

_SPAWN = r"""
import multiprocessing

def work(seed):
    device, context, queue, engine, stream = setup()
    return matmul(engine, stream, seed)

def fork_work(seed):
    try:
        device, context, queue, engine, stream = setup()
        return "no error"
    except dnnl.runtime_error as e:
        return str(e)

if __name__ == "__main__":
    device, context, queue, engine, stream = setup()
    mine = matmul(engine, stream, 5)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(work, [5, 6], chunksize=1)
    np.testing.assert_array_equal(results[0], mine)
    print("spawn ok")
    # The default start method on Linux (fork) after OpenCL was used: the
    # worker's first OpenCL call raises, and says what to do.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        print("fork worker:", pool.apply_async(fork_work, (7,)).get(timeout=120))
    matmul(engine, stream, 8)
    print("parent ok")
"""


def _run(tmp_path, body, timeout=600):
    script = tmp_path / "scenario.py"
    script.write_text(_COMMON + textwrap.dedent(body))
    child = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=timeout, cwd=tmp_path)
    assert child.returncode == 0, (
        f"exit status {child.returncode}\n{child.stdout[-2000:]}\n{child.stderr[-3000:]}")
    return child


def test_fork_after_use_gets_a_clear_error_and_the_parent_goes_on(tmp_path):
    """Every kind of call that reaches OpenCL (engines, streams, memory, USM,
    primitive descriptors and primitives, execute, wait, map_data, graph
    compile, tensors and execute) raises dnnl.runtime_error in a child forked
    after the parent used OpenCL, within seconds; the parent computes the
    same results afterwards."""
    child = _run(tmp_path, _FORK_AFTER_USE)
    assert "failures: []" in child.stdout, child.stdout + child.stderr[-3000:]
    assert "PARENT OK" in child.stdout


def test_fork_before_use_works_in_the_child(tmp_path):
    """A child forked before the process's first OpenCL call uses OpenCL
    normally (and so does the parent afterwards)."""
    child = _run(tmp_path, _FORK_BEFORE_USE)
    assert "child: 0" in child.stdout, child.stdout + child.stderr[-3000:]


def test_spawn_works_and_fork_pool_gets_the_error(tmp_path):
    """multiprocessing with 'spawn' computes in the workers after the parent
    used OpenCL; a 'fork' pool's worker gets the error saying to use
    'spawn' instead of hanging."""
    child = _run(tmp_path, _SPAWN)
    assert "spawn ok" in child.stdout, child.stdout
    fork_line = next(line for line in child.stdout.splitlines()
                     if line.startswith("fork worker:"))
    assert "not fork-safe" in fork_line and "'spawn'" in fork_line, fork_line
    assert "parent ok" in child.stdout
