"""Where the "small network with ops" row's time goes: the same network
written five ways, run in turns in one process, on one queue.

- mirrored: the mirrored API on memory oneDNN allocates, made once (as
  run.py's "small network" and C++'s);
- by hand on arrays: the same primitives on memory over pyopencl arrays
  from a pyopencl.tools.MemoryPool, made once;
- ... and markers: the same, with a marker after each execute (what ops
  enqueues on an in-order queue to give its result an event);
- ops, out=: dnnl.ops calls writing into arrays made once;
- ops: dnnl.ops calls making their results (run.py's row).

Each way's time is the median of --samples runs of the network (four calls
and a wait) per round; the table gives the median over --rounds of each
way and of its difference from "mirrored" within a round. Every way's
output is checked against NumPy. docs/benchmarks.md has the findings.

    python benchmarks/ops_network_parts.py [--rounds R] [--samples N]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (enables the device the test suite would use)

import dnnl_ocl_interop as dnnl  # noqa: E402


def network_ways(queue):
    """{way: (run the network once, its output as NumPy)}."""
    import pyopencl as cl
    import pyopencl.array as cla
    import pyopencl.tools as cltools
    from dnnl_ocl_interop import ops
    from dnnl_ocl_interop.ops import _context

    ctx = _context.of_queue(queue)  # the engine and stream ops uses for this queue
    engine, stream = ctx.engine, ctx.stream
    pool = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
    arrays = {}

    def array_memories(descs):
        for name, desc in descs.items():
            shape = tuple(desc.get_dims())
            values = run.pattern(int(np.prod(shape))).reshape(shape) if name[0] != "y" else None
            arrays[name] = (cla.to_device(queue, values, allocator=pool) if values is not None
                            else cla.empty(queue, shape, np.float32, allocator=pool))
        return {name: dnnl.arrays.as_memory(a, engine).memory for name, a in arrays.items()}

    mirrored = run.network_steps(engine, run.network_memories(engine))
    on_arrays = run.network_steps(engine, array_memories)
    queue.finish()
    x, cw, cb, fw, fb, y1, y2, y3 = (arrays[k] for k in ("x", "conv_w", "conv_b", "fc_w", "fc_b",
                                                         "y1", "y2", "y3"))
    result = []

    def steps_way(steps, markers):
        def network():
            for prim, args in steps:
                prim.execute(stream, args)
                if markers:
                    cl.enqueue_marker(queue)
            queue.finish()
        return network

    def ops_out():
        ops.convolution(x, cw, cb, padding=1, out=y1)
        ops.relu(y1, out=y1)
        ops.max_pool(y1, 2, out=y2)
        ops.inner_product(y2, fw, fb, out=y3)
        queue.finish()

    def ops_new():
        result[:] = [run.ops_network(queue, x, cw, cb, fw, fb)]

    last = mirrored[-1][1][dnnl.ARG_DST]
    return {"mirrored": (steps_way(mirrored, False), lambda: dnnl.arrays.read(last)),
            "by hand on arrays": (steps_way(on_arrays, False), y3.get),
            "... and markers": (steps_way(on_arrays, True), y3.get),
            "ops, out=": (ops_out, y3.get),
            "ops": (ops_new, lambda: result[0].get())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args(argv)
    import pyopencl as cl

    device, context = run.intel_gpu_context()
    queue = cl.CommandQueue(context, device)
    ways = network_ways(queue)
    expected = run.network_reference()
    times = {way: [] for way in ways}
    names = list(ways)
    for round_index in range(args.rounds):
        shift = round_index % len(names)  # each way in each position in turn
        for way in names[shift:] + names[:shift]:
            network, output = ways[way]
            for _ in range(3):
                network()
            if round_index == 0:
                run.check_digest("Python", way, run.digest(output()), expected)
            samples = []
            for _ in range(args.samples):
                start = time.perf_counter_ns()
                network()
                samples.append((time.perf_counter_ns() - start) / 1e3)
            times[way].append(float(np.median(samples)))
    base = np.asarray(times["mirrored"])
    print(f"{args.rounds} rounds of {args.samples} networks each; outputs checked against NumPy")
    print("| the network written | µs | over mirrored, µs |")
    print("|---|---:|---:|")
    for way in names:
        over = "—" if way == "mirrored" else f"{float(np.median(np.asarray(times[way]) - base)):+.1f}"
        print(f"| {way} | {float(np.median(times[way])):.1f} | {over} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
