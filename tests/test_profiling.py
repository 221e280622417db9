"""dnnl.profiling: a recorder of the primitive and partition executes on
profiling queues, its summary table and its Chrome/Perfetto trace.

The recorded times are checked against what oneDNN itself measures on the
same stream (get_profiling_data: each execute's span from its first kernel's
start to its last kernel's end): an execute's device time is its kernels'
busy time, never more than that span, and its events lie on the queue in
submission order without overlapping. The trace is checked against the
Trace Event Format (the JSON that Perfetto's UI and chrome://tracing open):
a ``traceEvents`` list of complete (``"X"``) events with ``name``, ``cat``,
``ph``, ``ts`` and ``dur`` in µs, integer ``pid``/``tid`` and ``args``, plus
``"M"`` metadata events naming the processes (devices) and threads (queues).
No test asserts on how long anything took.
"""

import gc
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (ALG, CHILD_ENGINE, INFERENCE, allocated_inputs, attention_partition,
                     compile_partition, engine_with_hooked_allocator, plain_desc)

PROFILING = cl.command_queue_properties.PROFILING_ENABLE


@pytest.fixture
def profiling_queue(cl_context, cl_device):
    return cl.CommandQueue(cl_context, cl_device, properties=PROFILING)


@pytest.fixture
def pstream(engine, profiling_queue):
    return dnnl.ocl_interop.make_stream(engine, profiling_queue)


@pytest.fixture
def work(engine):
    """A matmul and an in-place ReLU on 64 x 64 f32 memory."""
    md = plain_desc([64, 64])
    matmul_pd = dnnl.matmul.primitive_desc(engine, md, md, md)
    relu_pd = dnnl.eltwise_forward.primitive_desc(engine, INFERENCE, ALG.eltwise_relu, md, md)
    a, b, c = (dnnl.memory(md, engine) for _ in range(3))
    return {"matmul": (dnnl.matmul(matmul_pd), matmul_pd,
                       {dnnl.ARG_SRC: a, dnnl.ARG_WEIGHTS: b, dnnl.ARG_DST: c}),
            "eltwise": (dnnl.eltwise_forward(relu_pd), relu_pd, {dnnl.ARG_SRC: c, dnnl.ARG_DST: c})}


@pytest.fixture(autouse=True)
def no_recorder_left():
    yield
    if dnnl._core._profiling_active():  # a failed test must not leave one recording
        dnnl._core._profiling_stop()
        pytest.fail("a recorder was left recording")


def run_pair(work, stream, rounds):
    """`rounds` times: the matmul through primitive.execute, the ReLU through
    ocl_interop.execute."""
    matmul, _, matmul_args = work["matmul"]
    relu, _, relu_args = work["eltwise"]
    for _ in range(rounds):
        matmul.execute(stream, matmul_args)
        dnnl.ocl_interop.execute(relu, stream, relu_args)


def test_off_by_default():
    assert dnnl._core._profiling_active() is False


def test_records_what_ran_where_and_when(work, pstream, profiling_queue, cl_device):
    dnnl.reset_profiling(pstream)
    with dnnl.profiling.recorder() as rec:
        run_pair(work, pstream, 4)
    assert not rec.recording and len(rec.executions) == 8
    assert rec.dropped == 0 and rec.unprofiled == 0
    for i, e in enumerate(rec.executions):
        name = "matmul" if i % 2 == 0 else "eltwise"
        pd = work[name][1]
        assert (e.kind, e.name, e.implementation) == ("primitive", name, pd.impl_info_str())
        assert e.queue == profiling_queue.int_ptr
        assert e.device == cl_device.name and e.device_handle == cl_device.int_ptr
        assert e.thread == threading.get_ident()
        assert e.host_start_ns <= e.host_end_ns
        assert "f32 64x64" in e.shapes and e.shapes.startswith("src f32 64x64")
        assert e.kernel_ns is not None and len(e.kernel_ns) >= 1
        assert e.device_start_ns <= e.device_end_ns
        assert e.device_ns == sum(e.kernel_ns) == e.device_end_ns - e.device_start_ns
    assert "weights f32 64x64" in rec.executions[0].shapes
    # one after the other on the in-order queue
    for earlier, later in zip(rec.executions, rec.executions[1:]):
        assert earlier.device_end_ns <= later.device_start_ns
        assert earlier.host_start_ns <= later.host_start_ns
    # oneDNN's own measure of each execute (first kernel start to last
    # kernel end) covers its kernels' busy time
    spans = dnnl.get_profiling_data(pstream, dnnl.profiling_data_kind.time)
    assert len(spans) == 8
    for e, span in zip(rec.executions, spans):
        assert sum(e.kernel_ns) <= span
        if len(e.kernel_ns) == 1:
            assert e.kernel_ns[0] == span


def test_streams_with_the_profiling_flag_are_recorded(engine, work):
    stream = dnnl.stream(engine, dnnl.stream.flags.profiling)
    queue = dnnl.ocl_interop.get_command_queue(stream)
    with dnnl.profiling.recorder() as rec:
        run_pair(work, stream, 1)
    assert [e.name for e in rec.executions] == ["matmul", "eltwise"]
    assert {e.queue for e in rec.executions} == {queue.int_ptr}


def test_queues_without_profiling_are_counted_not_timed(work, stream, engine, cl_ooo_queue):
    ooo = dnnl.ocl_interop.make_stream(engine, cl_ooo_queue)
    with dnnl.profiling.recorder() as rec:
        run_pair(work, stream, 2)
        matmul, _, args = work["matmul"]
        dnnl.ocl_interop.execute(matmul, ooo, args).wait()
    assert rec.executions == [] and rec.unprofiled == 5
    assert "5 executes on queues without profiling not timed" in rec.summary()


def test_partitions_are_recorded(engine, profiling_queue):
    partition = attention_partition(1, 8, 16)
    compiled = compile_partition(partition, engine)
    stream = dnnl.ocl_interop.make_stream(engine, profiling_queue)
    rng = np.random.default_rng(0)
    data = {i: rng.standard_normal((1, 8, 16)).astype(np.float32) for i in range(3)}
    inputs = allocated_inputs(partition, engine, profiling_queue, data)
    outputs = [dnnl.graph.tensor(p, engine, dnnl.MEMORY_ALLOCATE)
               for p in partition.get_output_ports()]
    compiled._label = "attention"
    with dnnl.profiling.recorder() as rec:
        compiled.execute(stream, inputs, outputs)
        dnnl.graph.ocl_interop.execute(compiled, stream, inputs, outputs)
    assert [e.kind for e in rec.executions] == ["partition", "partition"]
    for e in rec.executions:
        assert e.name == "attention" and e.implementation == ""
        assert e.shapes.startswith("in ") and ", out " in e.shapes and "f32 1x8x16" in e.shapes
        assert e.kernel_ns and e.device_start_ns <= e.device_end_ns


def test_patterns_name_their_partitions(engine_with_default_allocator, cl_context, cl_device,
                                        profiling_queue):
    from dnnl_ocl_interop.graph import patterns
    engine = engine_with_default_allocator
    p = patterns.mlp(engine, 8, 16, 32)
    stream = dnnl.ocl_interop.make_stream(engine, profiling_queue)
    buffers = [dnnl.usm.allocation(cl_context, 4 * int(np.prod(s)), device=cl_device)
               for s in p.input_shapes]
    with dnnl.profiling.recorder() as rec:
        p(stream, *(b.ptr for b in buffers))
    assert len(rec.executions) == p.partitions
    for e in rec.executions:
        assert e.name.startswith("mlp") and "ops)" in e.name


@pytest.fixture
def engine_with_default_allocator(cl_device, cl_context):
    return dnnl.graph.ocl_interop.make_engine_with_allocator(cl_device, cl_context,
                                                             dnnl.graph.allocator())


def test_bounded(work, pstream):
    with dnnl.profiling.recorder(max_executes=3) as rec:
        run_pair(work, pstream, 5)
    assert len(rec.executions) == 3 and rec.dropped == 7
    assert "7 executes beyond max_executes=3 not recorded" in rec.summary()


def test_threads_each_on_their_queue(engine, work, cl_context, cl_device):
    streams = [dnnl.ocl_interop.make_stream(engine, cl.CommandQueue(cl_context, cl_device,
                                                                    properties=PROFILING))
               for _ in range(3)]
    # each thread its own destination: the primitives are shared, memory is not
    md = plain_desc([64, 64])
    relu, _, _ = work["eltwise"]
    idents = {}
    barrier = threading.Barrier(3)

    def run(i):
        idents[i] = threading.get_ident()
        mem = dnnl.memory(md, engine)
        barrier.wait()
        for _ in range(10):
            relu.execute(streams[i], {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})

    with dnnl.profiling.recorder() as rec:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(rec.executions) == 30
    for i, s in enumerate(streams):
        queue = dnnl.ocl_interop.get_command_queue(s).int_ptr
        mine = [e for e in rec.executions if e.queue == queue]
        assert len(mine) == 10 and {e.thread for e in mine} == {idents[i]}
        assert all(e.kernel_ns for e in mine)
        for earlier, later in zip(mine, mine[1:]):
            assert earlier.device_end_ns <= later.device_start_ns


def test_a_stop_while_another_thread_executes_on_the_stream_keeps_every_time(work, pstream,
                                                                           capfd):
    """stop() reads oneDNN's kernel times per stream, which oneDNN gives only
    when every kernel on the stream has completed: another thread's executes
    after the recording's end used to make the read fail (every record of the
    stream lost its kernel times, and oneDNN printed an error line)."""
    relu, _, relu_args = work["eltwise"]
    running = threading.Event()
    finished = threading.Event()

    def keep_executing():
        count = 0
        while not finished.is_set():
            relu.execute(pstream, relu_args)
            running.set()
            count += 1
            if count % 20 == 0:
                pstream.wait()  # a bounded backlog

    worker = threading.Thread(target=keep_executing)
    worker.start()
    try:
        running.wait()
        recorded = 0
        for _ in range(15):
            with dnnl.profiling.recorder() as rec:
                time.sleep(0.005)
            assert all(e.kernel_ns for e in rec.executions), \
                sum(not e.kernel_ns for e in rec.executions)
            recorded += len(rec.executions)
    finally:
        finished.set()
        worker.join()
        pstream.wait()
    assert recorded > 0
    assert "CL_PROFILING_INFO_NOT_AVAILABLE" not in capfd.readouterr().out


def test_reset_profiling_while_recording_keeps_the_times(work, pstream):
    with dnnl.profiling.recorder() as rec:
        run_pair(work, pstream, 1)
        dnnl.reset_profiling(pstream)
        run_pair(work, pstream, 1)
    assert len(rec.executions) == 4
    assert all(e.kernel_ns for e in rec.executions)
    assert len(dnnl.get_profiling_data(pstream, dnnl.profiling_data_kind.time)) == 2


def test_a_failed_execute_leaves_no_record(work, pstream, engine):
    matmul, _, args = work["matmul"]
    with dnnl.profiling.recorder() as rec:
        with pytest.raises(dnnl.invalid_arguments):
            matmul.execute(pstream, {dnnl.ARG_SRC: args[dnnl.ARG_SRC]})
        matmul.execute(pstream, args)
    assert len(rec.executions) == 1


def test_one_recorder_at_a_time_and_argument_checks():
    rec = dnnl.profiling.recorder()
    with rec:
        with pytest.raises(dnnl.invalid_arguments, match="already recording"):
            dnnl.profiling.recorder().start()
    with pytest.raises(dnnl.invalid_arguments, match="not recording"):
        rec.stop()
    for bad in (0, -1, sys.maxsize + 1, 2**70):
        with pytest.raises(dnnl.invalid_arguments, match="max_executes must be positive"):
            dnnl.profiling.recorder(bad)
    assert dnnl.profiling.recorder(sys.maxsize).max_executes == sys.maxsize
    with pytest.raises(TypeError, match="max_executes must be an int"):
        dnnl.profiling.recorder(1.5)


@pytest.mark.parametrize("how", ["dropped", "in a reference cycle"])
def test_a_recorder_dropped_while_recording_stops_the_recording(work, pstream, how):
    matmul, _, args = work["matmul"]

    def forgets_to_stop():
        rec = dnnl.profiling.recorder().start()
        if how == "in a reference cycle":
            rec.cycle = rec
        matmul.execute(pstream, args)
        raise RuntimeError("before stop()")

    with pytest.raises(RuntimeError, match="before stop"):
        forgets_to_stop()
    gc.collect()
    assert dnnl._core._profiling_active() is False
    with dnnl.profiling.recorder() as rec:  # the slot is free again
        matmul.execute(pstream, args)
    assert len(rec.executions) == 1


def test_a_stopped_recorder_dropped_later_stops_no_other(work, pstream):
    matmul, _, args = work["matmul"]
    first = dnnl.profiling.recorder().start()
    first.cycle = first
    first.stop()
    second = dnnl.profiling.recorder().start()
    del first
    gc.collect()
    assert second.recording and dnnl._core._profiling_active()
    matmul.execute(pstream, args)
    assert len(second.stop().executions) == 1


# A child that leaves recorders recording: dropped inside a recorded execute
# (the garbage collector running in a Python graph allocator, while the
# execute is in flight and the stop must wait for it), and still alive at
# exit. An exit hook registered before the import runs after the package's.
_LEFT_RECORDING = """
import atexit, gc, sys
atexit.register(lambda: print("at exit, recording:",
                              sys.modules["dnnl_ocl_interop"]._core._profiling_active()))
""" + CHILD_ENGINE + """
import numpy as np
sys.path.insert(0, sys.argv[1])
from helpers import allocated_inputs, attention_partition, compile_partition, engine_with_hooked_allocator
collect_in_malloc = []

def collect_once():
    if collect_in_malloc:
        collect_in_malloc.clear()
        gc.collect()

engine = engine_with_hooked_allocator(device, context, collect_once)
queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
stream = dnnl.ocl_interop.make_stream(engine, queue)
partition = attention_partition(1, 8, 16)
compiled = compile_partition(partition, engine)
inputs = allocated_inputs(partition, engine, queue, {i: np.ones((1, 8, 16), np.float32)
                                                     for i in range(3)})
outputs = [dnnl.graph.tensor(p, engine, dnnl.MEMORY_ALLOCATE) for p in partition.get_output_ports()]
compiled.execute(stream, inputs, outputs)  # allocates what later executes reuse
stream.wait()

gc.disable()
rec = dnnl.profiling.recorder().start()
rec.cycle = rec
del rec
collect_in_malloc.append(True)
compiled.execute(stream, inputs, outputs)  # its scratchpad malloc collects the recorder
stream.wait()
print("after the collection, recording:", dnnl._core._profiling_active())
kept = dnnl.profiling.recorder().start()
compiled.execute(stream, inputs, outputs)
stream.wait()
"""


def test_recorders_left_recording_stop_in_a_collection_inside_an_execute_and_at_exit(tmp_path):
    child = subprocess.run([sys.executable, "-c", _LEFT_RECORDING, os.path.dirname(__file__)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.splitlines() == ["after the collection, recording: False",
                                         "at exit, recording: False"], child.stdout
    assert "Exception ignored" not in child.stderr and "Traceback" not in child.stderr, \
        child.stderr[-3000:]


def test_no_start_while_another_thread_stops(cl_context, cl_device, profiling_queue):
    """stop() waits for the executes in flight before it takes the records
    and counters: a start() meanwhile (from another thread) would clear
    them or hand its own to that stop, so it is refused until the stop
    returns. The execute in flight is held in its Python allocator."""
    entered, release, armed = threading.Event(), threading.Event(), threading.Event()

    def hold_first_malloc():
        if armed.is_set() and not entered.is_set():  # the first malloc of the execute below
            entered.set()
            assert release.wait(60)

    engine = engine_with_hooked_allocator(cl_device, cl_context, hold_first_malloc)
    partition = attention_partition(1, 8, 16)
    compiled = compile_partition(partition, engine)
    stream = dnnl.ocl_interop.make_stream(engine, profiling_queue)
    inputs = allocated_inputs(partition, engine, profiling_queue,
                              {i: np.ones((1, 8, 16), np.float32) for i in range(3)})
    outputs = [dnnl.graph.tensor(p, engine, dnnl.MEMORY_ALLOCATE) for p in partition.get_output_ports()]
    rec = dnnl.profiling.recorder().start()
    armed.set()
    executing = threading.Thread(target=compiled.execute, args=(stream, inputs, outputs))
    executing.start()
    assert entered.wait(60)
    stopping = threading.Thread(target=rec.stop)
    stopping.start()
    refused = ""
    for _ in range(500):  # until the other thread is inside stop()
        try:
            dnnl.profiling.recorder().start().stop()
        except dnnl.error as e:
            if "stopping on another thread" in str(e):
                refused = str(e)
                break
            assert "already recording" in str(e)
        threading.Event().wait(0.01)
    release.set()
    executing.join(60)
    stopping.join(60)
    assert refused and not stopping.is_alive()
    assert [e.kind for e in rec.executions] == ["partition"]  # its records, whole
    with dnnl.profiling.recorder() as later:
        compiled.execute(stream, inputs, outputs)
    stream.wait()
    assert len(later.executions) == 1


def test_summary_table(work, pstream):
    with dnnl.profiling.recorder() as rec:
        run_pair(work, pstream, 3)
    text = rec.summary()
    lines = text.splitlines()
    assert lines[0].startswith("dnnl.profiling: 6 executes on 1 queue, ")
    assert lines[1].split()[:3] == ["what", "implementation", "shapes"]
    rows = {line.split()[0]: line for line in lines[3:]}
    assert set(rows) == {"matmul", "eltwise"}
    assert lines[1].split()[3:] == ["calls", "total", "µs", "median", "µs", "mean", "µs", "min", "µs",
                                    "max", "µs", "share"]
    for name in rows:
        assert work[name][1].impl_info_str() in rows[name]
        times = sorted(e.device_ns / 1e3 for e in rec.executions if e.name == name)
        calls, total, median, mean, low, high = rows[name].split()[-8:-2]  # (the share is "12.3 %")
        assert calls == "3"
        assert (total, median, mean, low, high) == (f"{sum(times):.1f}", f"{times[1]:.1f}",
                                                    f"{sum(times) / 3:.1f}", f"{times[0]:.1f}", f"{times[2]:.1f}")
    shares = [float(line.split()[-2]) for line in lines[3:]]
    assert abs(sum(shares) - 100.0) < 0.2
    total = sum(e.device_ns for e in rec.executions) / 1e3
    assert f"{total:.1f} µs of device time" in lines[0]


def test_the_median_keeps_a_row_from_one_slow_execute():
    """One slow execute moves a row's total, mean and share, not its median
    (a summary of means only once made a row's share jump from 7.7 % to
    44.9 % between two runs over one 8 ms execute)."""
    rec = dnnl.profiling.recorder()
    made = dnnl.profiling.execution
    rec.executions = [made("primitive", "eltwise", "ocl:ref", "src f32 4", 1, "GPU", 1, 0, 1, 0, 10_000, (t,))
                      for t in (10_000, 11_000, 9_000, 8_000_000)]
    row = rec.summary().splitlines()[3].split()
    assert row[-8:-2] == ["4", "8030.0", "10.5", "2007.5", "9.0", "8000.0"]


def test_regions_label_the_executes_their_thread_submits(work, pstream):
    matmul, _, matmul_args = work["matmul"]
    relu, _, relu_args = work["eltwise"]
    in_other_thread = []

    def other():  # a region is its thread's: another thread's executes are not in it
        matmul.execute(pstream, matmul_args)
        in_other_thread.append(threading.get_ident())

    with dnnl.profiling.recorder() as rec:
        matmul.execute(pstream, matmul_args)
        with dnnl.profiling.region("layer 1"):
            relu.execute(pstream, relu_args)
            with dnnl.profiling.region("attention"):
                matmul.execute(pstream, matmul_args)
                thread = threading.Thread(target=other)
                thread.start()
                thread.join()
            relu.execute(pstream, relu_args)
        with dnnl.profiling.region("layer 2"):
            matmul.execute(pstream, matmul_args)
            rec.stop()  # a region still open at stop holds what it saw
    labels = [(e.name, e.region) for e in rec.executions]
    assert sorted(labels) == sorted([("matmul", ""), ("eltwise", "layer 1"), ("matmul", "layer 1/attention"),
                                     ("matmul", ""), ("eltwise", "layer 1"), ("matmul", "layer 2")])
    assert [e.region for e in rec.executions if e.thread == in_other_thread[0]] == [""]
    lines = rec.summary().splitlines()
    assert lines[1].split()[:2] == ["region", "what"]
    labels_shown = {label for label in ("-", "layer 1", "layer 1/attention", "layer 2")
                    for line in lines[3:] if line.startswith(label + " ")}
    assert labels_shown == {"-", "layer 1", "layer 1/attention", "layer 2"}, lines
    trace = rec.trace()
    assert sorted(event["args"].get("region", "") for event in validate_trace(trace)) == \
        sorted(region for _, region in labels)


def test_a_region_outside_a_recording_keeps_nothing_and_names_are_checked(work, pstream):
    with dnnl.profiling.region("before"):
        pass
    with dnnl.profiling.recorder() as rec:
        run_pair(work, pstream, 1)
    assert [e.region for e in rec.executions] == ["", ""]
    for bad in ("", "a/b"):
        with pytest.raises(dnnl.invalid_arguments, match="region's name"):
            dnnl.profiling.region(bad)
    with pytest.raises(TypeError, match="name must be a str"):
        dnnl.profiling.region(3)


def test_shapes_name_the_bias_and_the_post_ops(engine, pstream):
    src, weights, dst = plain_desc([2, 3]), plain_desc([3, 4]), plain_desc([2, 4])
    bias = plain_desc([1, 4])
    ops = dnnl.post_ops()
    ops.append_eltwise(ALG.eltwise_relu, 0.0, 0.0)
    ops.append_binary(ALG.binary_add, dst)
    attr = dnnl.primitive_attr()
    attr.set_post_ops(ops)
    pd = dnnl.matmul.primitive_desc(engine, src, weights, bias, dst, attr)
    memories = {arg: dnnl.memory(md, engine) for arg, md in (
        (dnnl.ARG_SRC, src), (dnnl.ARG_WEIGHTS, weights), (dnnl.ARG_BIAS, bias), (dnnl.ARG_DST, dst),
        (dnnl.ARG_ATTR_MULTIPLE_POST_OP(1) | dnnl.ARG_SRC_1, dst))}
    with dnnl.profiling.recorder() as rec:
        dnnl.matmul(pd).execute(pstream, memories)
    assert rec.executions[0].shapes == ("src f32 2x3, weights f32 3x4, bias f32 1x4, dst f32 2x4, "
                                        "post-ops eltwise_relu + binary_add f32 2x4")


def validate_trace(trace):
    """The Trace Event Format's structure, as Perfetto's JSON importer reads
    it: the JSON object form with ``traceEvents``."""
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    named_processes, named_threads, complete = set(), set(), []
    for event in trace["traceEvents"]:
        assert event["ph"] in ("X", "M"), event
        assert type(event["pid"]) is int and type(event["tid"]) is int
        assert isinstance(event["name"], str) and event["name"]
        assert isinstance(event.get("args", {}), dict)
        if event["ph"] == "M":
            assert event["name"] in ("process_name", "thread_name")
            assert isinstance(event["args"]["name"], str)
            (named_processes if event["name"] == "process_name" else named_threads).add(
                (event["pid"], event["tid"]) if event["name"] == "thread_name" else event["pid"])
        else:
            assert isinstance(event["cat"], str)
            for field in ("ts", "dur"):
                assert isinstance(event[field], (int, float)) and event[field] >= 0
            complete.append(event)
    for event in complete:  # every slice on a named device and queue
        assert event["pid"] in named_processes and (event["pid"], event["tid"]) in named_threads
    # slices of one queue do not overlap (Perfetto would nest them)
    by_track = {}
    for event in complete:
        by_track.setdefault((event["pid"], event["tid"]), []).append(event)
    for events in by_track.values():
        events.sort(key=lambda e: e["ts"])
        for a, b in zip(events, events[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3
    return complete


def test_trace_is_the_trace_event_format(work, pstream, tmp_path, profiling_queue, cl_device):
    with dnnl.profiling.recorder() as rec:
        run_pair(work, pstream, 3)
    path = tmp_path / "trace.json"
    rec.write_trace(path)
    trace = json.loads(path.read_text())  # valid JSON, as written
    assert trace == json.loads(json.dumps(rec.trace()))
    complete = validate_trace(trace)
    assert len(complete) == 6
    assert min(e["ts"] for e in complete) == 0
    origin = min(e.device_start_ns for e in rec.executions)
    for event, e in zip(complete, rec.executions):
        assert event["name"] == f"{e.name} {e.implementation}" and event["cat"] == "primitive"
        # µs from the device's first recorded time (the format's unit)
        assert event["ts"] == pytest.approx((e.device_start_ns - origin) / 1e3)
        assert event["dur"] == pytest.approx(e.device_ns / 1e3)
        assert event["args"]["shapes"] == e.shapes
        assert event["args"]["kernels_us"] == pytest.approx([k / 1e3 for k in e.kernel_ns])
    metadata = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert {"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": {"name": f"{cl_device.name} (device clock)"}} in metadata
    assert any(m["args"]["name"] == f"queue 0x{profiling_queue.int_ptr:x}" for m in metadata)
    assert trace["otherData"]["executes"] == 6


def test_two_devices_of_one_name_are_two_processes_each_on_its_own_clock():
    # Two identical GPUs: one name, two handles, two unrelated clocks.
    rec = dnnl.profiling.recorder()
    made = dnnl.profiling.execution
    rec.executions = [made("primitive", "eltwise", "ocl:ref", "", 0x10, "GPU", 1, 0, 1,
                           5_000, 6_000, (1_000,), 0xA),
                      made("primitive", "eltwise", "ocl:ref", "", 0x20, "GPU", 1, 0, 1,
                           900_000, 902_000, (2_000,), 0xB)]
    trace = rec.trace()
    complete = validate_trace(trace)
    assert [(e["pid"], e["ts"]) for e in complete] == [(1, 0.0), (2, 0.0)]
    processes = {m["pid"]: m["args"]["name"] for m in trace["traceEvents"]
                 if m["name"] == "process_name"}
    assert processes == {1: "GPU 0xa (device clock)", 2: "GPU 0xb (device clock)"}


def test_an_empty_recording_is_a_valid_trace():
    with dnnl.profiling.recorder() as rec:
        pass
    assert validate_trace(rec.trace()) == []
    assert rec.summary().startswith("dnnl.profiling: 0 executes on 0 queues")


# The OpenCL calls of executes with and without a recorder, counted by the
# emulation layer (a child process forced onto the emulated device).
_COUNTED = """
import json, sys
import dnnl_ocl_interop as dnnl
dnnl.emulation.ensure_device()
import pyopencl as cl
device = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.GPU)][0]
context = cl.Context([device])
queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
engine = dnnl.ocl_interop.make_engine(device, context)
stream = dnnl.ocl_interop.make_stream(engine, queue)
md = dnnl.memory.desc([64], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
mem = dnnl.memory(md, engine)
relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
    engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, md, md))
relu.execute(stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})
stream.wait()
recording = sys.argv[1] == "on"
rec = dnnl.profiling.recorder().start() if recording else None
for _ in range(7):
    relu.execute(stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})
if rec:
    rec.stop()
stream.wait()
print(len(rec.executions) if rec else 0)
"""


@pytest.mark.test_hooks
@pytest.mark.parametrize("recording", ["off", "on"])
def test_without_a_recorder_an_execute_makes_no_opencl_call_more(tmp_path, recording):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENCL_LAYERS", "OCL_ICD_VENDORS", "DNNL_OCL_INTEROP_EMULATION")}
    env["DNNL_OCL_INTEROP_DEVICE"] = "emulated"
    env["DNNL_OCL_INTEROP_COUNT_CL_CALLS"] = str(tmp_path / "counts.json")
    child = subprocess.run([sys.executable, "-c", _COUNTED, recording], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    calls = json.loads((tmp_path / "counts.json").read_text())["calls"]
    # Each of the child's two stream.wait() calls enqueues one marker (the
    # short poll before it releases the GIL), whether recording or not.
    markers = calls.get("clEnqueueMarkerWithWaitList", 0) - 2
    if recording == "off":
        assert child.stdout.strip() == "0" and markers == 0
    else:  # two markers around each recorded execute
        assert child.stdout.strip() == "7" and markers == 14
