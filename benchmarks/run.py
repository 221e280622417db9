"""What the Python bridge costs over the same oneDNN calls in C++.

Runs each row's work through dnnl_ocl_interop and through the C++ baseline
(benchmarks/baseline.cpp, built here when missing), on the device the test
suite would use (the emulated Intel GPU when there is no real one), and
prints one Markdown table: median time per call in each language, the
difference and the ratio, and the goal each row is judged by.

    python benchmarks/run.py [--json PATH] [--iterations N] [--matmul-size N] [--rounds N]

C++ and Python take turns for --rounds rounds. Each round measures a row's
median time per call; a row is judged on the per-round differences (or
ratios) of Python and C++: their median, with a 95 % bootstrap confidence
interval over rounds. It *meets* its goal when the whole interval does,
*misses* when none of it does, and is *inconclusive* otherwise (run more
--rounds). The JSON has every round and the intervals.

Exits non-zero when a measurement failed (not when a goal is missed).
"""

import argparse
import json
import os
import subprocess
import sys
import time

# NumPy's OpenBLAS threads spin on the cores the device shares here; the C++
# side has none. This program does no BLAS work.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dnnl_ocl_interop as dnnl  # noqa: E402

DEVICE = dnnl.emulation.ensure_device()  # before the first OpenCL call

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "benchmarks")
BASELINE = os.path.join(BUILD, "dnnl_ocl_interop_baseline")
BATCH = 100
PER_CALL_GOAL_US = 1.5
MATMUL_GOAL_RATIO = 1.02
ALLOCATION_GOAL_US = 3.0


def median_us(repeats, batch, call, after_batch=lambda: None):
    """Median over `repeats` batches of the mean time of `batch` calls."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(batch):
            call()
        elapsed = time.perf_counter_ns() - start
        after_batch()
        samples.append(elapsed / 1e3 / batch)
    return float(np.median(samples))


def build_baseline():
    if os.path.exists(BASELINE):
        return
    import pybind11
    print(f"building the C++ baseline in {BUILD} ...", file=sys.stderr)
    subprocess.run(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DDNNL_OCL_INTEROP_BUILD_BENCHMARKS=ON", f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", BUILD, "--target", "dnnl_ocl_interop_baseline"], check=True,
                   stdout=subprocess.DEVNULL)


def run_baseline(iterations, warmup, matmul_size):
    out = subprocess.run([BASELINE, str(iterations), str(warmup), str(matmul_size)],
                         capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])["rows"]


def python_rows(iterations, warmup, matmul_size):
    """The Python side: same rows, same work, same timing as baseline.cpp."""
    oi = dnnl.ocl_interop
    repeats = max(iterations // BATCH, 5)
    rows, notes = {}, {}
    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    context = cl.Context([device])
    in_order = cl.CommandQueue(context, device)
    out_of_order = cl.CommandQueue(context, device,
                                   properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    engine = oi.make_engine(device, context)
    s_in, s_ooo = oi.make_stream(engine, in_order), oi.make_stream(engine, out_of_order)

    tiny = dnnl.memory.desc([64], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
    tiny_src, tiny_dst = dnnl.memory(tiny, engine), dnnl.memory(tiny, engine)
    for _ in range(warmup):
        oi.get_memory_kind(tiny_src)
    rows["get_memory_kind"] = median_us(repeats, BATCH, lambda: oi.get_memory_kind(tiny_src))

    usm = dnnl.usm.device_alloc(context, device, tiny.get_size())
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, tiny.get_size())
    usm_kind = oi.memory_kind.usm

    def make_usm():
        oi.make_memory(tiny, engine, usm_kind, usm)

    def make_buffer():
        oi.make_memory(tiny, engine, buffer)

    for _ in range(warmup):
        make_usm()
        make_buffer()
    rows["make_memory(usm)"] = median_us(repeats, BATCH, make_usm)
    rows["make_memory(cl_mem)"] = median_us(repeats, BATCH, make_buffer)

    relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
        engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, tiny, tiny))
    relu_args = {dnnl.ARG_SRC: tiny_src, dnnl.ARG_DST: tiny_dst}
    execute = oi.execute
    for _ in range(warmup):
        execute(relu, s_in, relu_args)
    s_in.wait()
    rows["execute(in-order)"] = median_us(repeats, BATCH, lambda: execute(relu, s_in, relu_args),
                                          s_in.wait)

    def execute_ooo():
        execute(relu, s_ooo, relu_args)  # the returned event is released when dropped

    for _ in range(warmup):
        execute_ooo()
    s_ooo.wait()
    rows["execute(out-of-order)"] = median_us(repeats, BATCH, execute_ooo, s_ooo.wait)

    def chain():
        previous = execute(relu, s_ooo, relu_args)
        for _ in range(99):
            previous = execute(relu, s_ooo, relu_args, [previous])
        previous.wait()

    for _ in range(3):
        chain()
    rows["chain of 100 executes"] = median_us(max(repeats, 15), 1, chain)

    square = dnnl.memory.desc([matmul_size] * 2, dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
    mm_args = {arg: dnnl.memory(square, engine) for arg in (dnnl.ARG_SRC, dnnl.ARG_WEIGHTS, dnnl.ARG_DST)}
    matmul = dnnl.matmul(dnnl.matmul.primitive_desc(engine, square, square, square))

    def run_matmul():
        matmul.execute(s_in, mm_args)
        s_in.wait()

    run_matmul()
    rows["large matmul"] = median_us(9, 1, run_matmul)

    rows["graph execute with allocator"], notes["allocations per execute"] = graph_row(
        device, context, in_order, repeats, warmup)

    program = cl.Program(context, "__kernel void touch(__global float *a) "
                                  "{ a[get_global_id(0)] += 1.0f; }").build()
    kernel = program.touch

    def enqueue():
        kernel.set_arg(0, buffer)
        cl.enqueue_nd_range_kernel(in_order, kernel, (64,), None)

    for _ in range(warmup):
        enqueue()
    in_order.finish()
    rows["opencl kernel enqueue"] = median_us(repeats, BATCH, enqueue, in_order.finish)
    dnnl.usm.free(context, usm)
    return rows, notes


def graph_row(device, context, queue, repeats, warmup):
    """Attention partition on an engine with a minimal Python USM allocator."""
    g = dnnl.graph
    lt = g.logical_tensor
    calls = {"malloc": 0}
    device_alloc, usm_free = dnnl.usm.device_alloc, dnnl.usm.free

    def malloc(size, alignment, dev, ctx):
        calls["malloc"] += 1
        return device_alloc(ctx, dev, size, alignment)

    def free(ptr, dev, ctx, event):
        if event is not None:
            event.wait()
        usm_free(ctx, ptr)

    engine = g.ocl_interop.make_engine_with_allocator(device, context, g.ocl_interop.make_allocator(malloc, free))
    stream = dnnl.ocl_interop.make_stream(engine, queue)
    f32, strided = lt.data_type.f32, lt.layout_type.strided
    q, k, v = (lt(i, f32, [2, 32, 16], strided) for i in range(3))
    scores, probs, out = lt(3, f32, [2, 32, 32], strided), lt(4, f32, [2, 32, 32], strided), lt(5, f32, [2, 32, 16], strided)
    qk = g.op(0, g.op.kind.MatMul, [q, k], [scores], "qk")
    qk.set_attr(g.op.attr.transpose_b, True)
    softmax = g.op(1, g.op.kind.SoftMax, [scores], [probs], "softmax")
    softmax.set_attr(g.op.attr.axis, -1)
    graph = g.graph(dnnl.engine.kind.gpu)
    for op in (qk, softmax, g.op(2, g.op.kind.MatMul, [probs, v], [out], "pv")):
        graph.add_op(op)
    graph.finalize()
    part = graph.get_partitions()[0]
    compiled = part.compile(part.get_input_ports(), part.get_output_ports(), engine)
    storage = []

    def tensors(ports):
        result = []
        for port in ports:
            queried = compiled.query_logical_tensor(port.get_id())
            storage.append(dnnl.usm.allocation(context, queried.get_mem_size(), "device", device))
            result.append(g.tensor(queried, engine, storage[-1].ptr))
        return result

    ins, outs = tensors(part.get_input_ports()), tensors(part.get_output_ports())
    run = compiled.execute
    for _ in range(warmup // 10 + 1):
        run(stream, ins, outs)
    stream.wait()
    before = calls["malloc"]
    run(stream, ins, outs)
    stream.wait()
    per_execute = calls["malloc"] - before
    median = median_us(max(repeats * 2, 30), BATCH // 5, lambda: run(stream, ins, outs), stream.wait)
    return median, per_execute


def bootstrap_interval(values, resamples=10000, confidence=0.95, seed=0):
    """(median, low, high): the median of `values` and a percentile-bootstrap
    confidence interval of it (resampling the rounds)."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(values, size=(resamples, values.size), replace=True), axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(np.median(values)), float(low), float(high)


def verdict(low, high, limit):
    """'meets' when the whole interval is within the goal, 'misses' when it
    is wholly outside, else 'inconclusive' (more --rounds may decide)."""
    if high <= limit:
        return "meets"
    if low > limit:
        return "misses"
    return "inconclusive"


def goal_of(name, notes):
    """(goal text, overhead limit in µs or ratio limit) for a row."""
    if name == "large matmul":
        return f"ratio ≤ {MATMUL_GOAL_RATIO}", ("ratio", MATMUL_GOAL_RATIO)
    if name == "chain of 100 executes":
        return f"≤ {100 * PER_CALL_GOAL_US:g} µs over C++ (100 × {PER_CALL_GOAL_US})", ("overhead", 100 * PER_CALL_GOAL_US)
    if name == "graph execute with allocator":
        # The row holds one execute() call (its own per-call budget) and the
        # allocator's calls during it (the allocation budget each).
        n = max(notes.get("allocations per execute", 1), 1)
        limit = PER_CALL_GOAL_US + ALLOCATION_GOAL_US * n
        return (f"≤ {limit:g} µs over C++ ({PER_CALL_GOAL_US} for the call + {n} allocation(s) "
                f"× {ALLOCATION_GOAL_US})", ("overhead", limit))
    if name == "opencl kernel enqueue":
        return "reference (pyopencl vs C)", None
    return f"≤ {PER_CALL_GOAL_US} µs over C++", ("overhead", PER_CALL_GOAL_US)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    parser.add_argument("--iterations", type=int, default=2000, help="calls per row (in batches of 100)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--matmul-size", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    cpp_rounds, python_rounds = [], []
    try:
        build_baseline()
        for _ in range(args.rounds):
            cpp_rounds.append(run_baseline(args.iterations, args.warmup, args.matmul_size))
            rows, notes = python_rows(args.iterations, args.warmup, args.matmul_size)
            python_rounds.append(rows)
    except Exception as e:  # a failed measurement: report and fail
        print(f"benchmark failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    rows = []
    for name in python_rounds[0]:
        py_rounds = [r[name] for r in python_rounds]
        cpp_rounds_of = [r[name] for r in cpp_rounds]
        goal, limit = goal_of(name, notes)
        # Rounds alternate C++ and Python, so round i of each side shared the
        # machine's state: judge the per-round differences (or ratios).
        overheads = [p - c for p, c in zip(py_rounds, cpp_rounds_of)]
        ratios = [p / c if c else float("inf") for p, c in zip(py_rounds, cpp_rounds_of)]
        overhead = bootstrap_interval(overheads)
        ratio = bootstrap_interval(ratios)
        judged = None
        if limit is not None:
            low, high = (ratio if limit[0] == "ratio" else overhead)[1:]
            judged = verdict(low, high, limit[1])
        rows.append({"name": name, "python_us": round(float(np.median(py_rounds)), 3),
                     "cpp_us": round(float(np.median(cpp_rounds_of)), 3),
                     "overhead_us": round(overhead[0], 3),
                     "overhead_ci95_us": [round(overhead[1], 3), round(overhead[2], 3)],
                     "ratio": round(ratio[0], 4), "ratio_ci95": [round(ratio[1], 4), round(ratio[2], 4)],
                     "goal": goal, "verdict": judged,
                     "python_rounds_us": [round(v, 3) for v in py_rounds],
                     "cpp_rounds_us": [round(v, 3) for v in cpp_rounds_of]})
    version = ".".join(str(x) for x in dnnl.version()[:3])
    report = {"device": DEVICE, "onednn_version": version, "build_type": dnnl.build_type,
              "rounds": args.rounds, "rows": rows}
    print(f"device: {DEVICE}\noneDNN {version}, extension build {dnnl.build_type}, "
          f"{args.rounds} alternating rounds; medians over rounds, 95 % bootstrap intervals\n")
    print("| row | Python µs | C++ µs | overhead µs (95 % CI) | ratio (95 % CI) | goal | verdict |")
    print("|---|---:|---:|---:|---:|---|:---:|")
    for r in rows:
        mark = {"meets": "meets", "misses": "**misses**", "inconclusive": "inconclusive",
                None: "—"}[r["verdict"]]
        lo, hi = r["overhead_ci95_us"]
        rlo, rhi = r["ratio_ci95"]
        print(f"| {r['name']} | {r['python_us']:.3f} | {r['cpp_us']:.3f} "
              f"| {r['overhead_us']:+.3f} ({lo:+.3f} … {hi:+.3f}) "
              f"| {r['ratio']:.3f} ({rlo:.3f} … {rhi:.3f}) | {r['goal']} | {mark} |")
    if any(r["verdict"] == "inconclusive" for r in rows):
        print("\ninconclusive: the interval straddles the goal; run more --rounds to decide.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
