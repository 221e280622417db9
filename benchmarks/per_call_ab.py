"""The per-call rows of run.py for two builds of the package, in turns.

    python benchmarks/per_call_ab.py A_DIR B_DIR [--rounds N] [--json PATH]

A_DIR and B_DIR each hold an importable ``dnnl_ocl_interop`` package: its
Python files with its built ``_core``, the emulation layer and (for a
bundled build installed with ``$ORIGIN`` as RPATH) ``libdnnl.so.3`` beside
them. The children run with ``python -S`` plus the interpreter's
site-packages, so an editable install does not take the import over.
Each round runs the rows once in a fresh process of each build, in
alternating order, and the rows are judged on the per-round differences
(B minus A, µs) with a 95 % bootstrap interval, as run.py judges Python
against C++. Both builds load the libdnnl their RPATH names.

Rows (run.py's work: a ReLU of 64 floats):
- ``execute(in-order)``, ``execute(out-of-order)``: ``ocl_interop.execute``;
- ``primitive.execute``: the method, in order;
- ``primitive creation (cached)``: descriptor and primitive from oneDNN's cache;
- ``execute(in-order, profiling queue)``: ``ocl_interop.execute`` on a
  user queue with ``CL_QUEUE_PROFILING_ENABLE`` (with oneDNN's experimental
  profiling, oneDNN profiles it: one event kept per kernel until
  ``reset_profiling``, which the row calls after each batch);
- ``... recording`` (only when the build has ``dnnl.profiling``): the same
  with a recorder active (two markers per execute);
- ``ops.relu(x, out=y)``, ``ops.relu(x)``, ``ops.relu(x), pool``: a cached
  ``dnnl.ops`` call on an in-order queue, into ``out=``, making its result
  (pyopencl's default allocator), making it from a
  ``pyopencl.tools.MemoryPool``;
- ``small network with ops`` (µs per network: four ops calls and a
  wait, run.py's ops_network);
- ``unit``: ``gc.isenabled()`` (for budgets in units).
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import bootstrap_interval  # noqa: E402  (the same statistics as run.py)

# Run with python -S: no .pth file runs, so an editable install's import
# hook cannot take "dnnl_ocl_interop" from the directory given.
ROWS = textwrap.dedent("""
    import json, os, sys, sysconfig
    paths = sysconfig.get_paths()
    sys.path[:0] = [sys.argv[1], paths["purelib"], paths["platlib"], sys.argv[2]]
    import dnnl_ocl_interop as dnnl
    assert dnnl.__file__.startswith(sys.argv[1]), (dnnl.__file__, sys.argv[1])
    import run  # run.py's timing (it chooses the device on import)
    import numpy as np
    import pyopencl as cl

    BATCH, REPEATS, WARMUP = 100, 25, 200
    oi = dnnl.ocl_interop

    def median_us(call, after_batch=lambda: None):
        return run.median_us(REPEATS, BATCH, call, after_batch)

    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    context = cl.Context([device])
    props = cl.command_queue_properties
    queues = {"in": cl.CommandQueue(context, device),
              "ooo": cl.CommandQueue(context, device, properties=props.OUT_OF_ORDER_EXEC_MODE_ENABLE),
              "prof": cl.CommandQueue(context, device, properties=props.PROFILING_ENABLE)}
    engine = oi.make_engine(device, context)
    streams = {k: oi.make_stream(engine, q) for k, q in queues.items()}
    tiny = dnnl.memory.desc([64], dnnl.memory.data_type.f32, dnnl.memory.format_tag.a)
    src, dst = dnnl.memory(tiny, engine), dnnl.memory(tiny, engine)
    for mem in (src, dst):
        dnnl.arrays.write(mem, np.zeros(64, np.float32))

    def create():
        return dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
            engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, tiny, tiny))

    relu = create()
    args = {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst}
    rows = {}

    def row(name, call, stream, after=None):
        def after_batch():
            stream.wait()
            if after:
                after()
        for _ in range(WARMUP):
            call()
        after_batch()
        rows[name] = median_us(call, after_batch)

    row("execute(in-order)", lambda: oi.execute(relu, streams["in"], args), streams["in"])
    row("execute(out-of-order)", lambda: oi.execute(relu, streams["ooo"], args), streams["ooo"])
    row("primitive.execute", lambda: relu.execute(streams["in"], args), streams["in"])
    for _ in range(WARMUP):
        create()
    rows["primitive creation (cached)"] = median_us(create)
    reset = lambda: dnnl.reset_profiling(streams["prof"])
    row("execute(in-order, profiling queue)", lambda: oi.execute(relu, streams["prof"], args),
        streams["prof"], reset)
    if hasattr(dnnl, "profiling"):
        recorder = dnnl.profiling.recorder(max_executes=10 ** 7).start()
        row("execute(in-order, profiling queue), recording",
            lambda: oi.execute(relu, streams["prof"], args), streams["prof"])
        recorder.stop()
    from dnnl_ocl_interop import ops
    import pyopencl.array as cla
    import pyopencl.tools as cltools

    in_order = queues["in"]
    x = cla.to_device(in_order, run.pattern(64))
    y = cla.empty_like(x)
    pool = cltools.MemoryPool(cltools.ImmediateAllocator(in_order))
    pooled = cla.to_device(in_order, run.pattern(64), allocator=pool)
    finish = in_order.finish
    for name, call in (("ops.relu(x, out=y)", lambda: ops.relu(x, out=y)),
                       ("ops.relu(x)", lambda: ops.relu(x)),
                       ("ops.relu(x), pool", lambda: ops.relu(pooled))):
        for _ in range(WARMUP):
            call()
        finish()
        rows[name] = median_us(call, finish)
    n, ic, oc, hw, classes = 8, 3, 16, 32, 10
    shapes = dict(x=(n, ic, hw, hw), conv_w=(oc, ic, 3, 3), conv_b=(oc,),
                  fc_w=(classes, oc, hw // 2, hw // 2), fc_b=(classes,))
    inputs = [cla.to_device(in_order, run.pattern(int(np.prod(s))).reshape(s), allocator=pool)
              for s in shapes.values()]
    network = lambda: run.ops_network(in_order, *inputs)
    for _ in range(5):
        network()
    rows["small network with ops"] = run.median_us(15, 1, network)
    import gc
    rows["unit"] = run.median_us(REPEATS, 1000, gc.isenabled)
    print(json.dumps(rows))
""")


def measure(package_dir):
    child = subprocess.run([sys.executable, "-S", "-c", ROWS, os.path.abspath(package_dir),
                            os.path.dirname(os.path.abspath(__file__))],
                           capture_output=True, text=True, timeout=900)
    if child.returncode != 0:
        raise RuntimeError(f"{package_dir}: {child.stderr[-3000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    rounds = []
    for r in range(args.rounds):
        order = [("a", args.a), ("b", args.b)][:: 1 if r % 2 == 0 else -1]
        result = {side: measure(path) for side, path in order}
        rounds.append(result)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"A = {args.a}\nB = {args.b}\n")
    print("| row | A µs | B µs | B − A µs (95 % CI) |")
    print("|---|---:|---:|---:|")
    for name in rounds[0]["a"]:
        if name not in rounds[0]["b"]:
            continue
        a = [r["a"][name] for r in rounds]
        b = [r["b"][name] for r in rounds]
        diff, low, high = bootstrap_interval([y - x for x, y in zip(a, b)])
        print(f"| {name} | {sorted(a)[len(a) // 2]:.3f} | {sorted(b)[len(b) // 2]:.3f} | "
              f"{diff:+.3f} ({low:+.3f} … {high:+.3f}) |")
    for name in rounds[0]["b"]:
        if name not in rounds[0]["a"]:
            b = [r["b"][name] for r in rounds]
            print(f"| {name} | — | {sorted(b)[len(b) // 2]:.3f} | — |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.a, "b": args.b, "rounds": rounds}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
