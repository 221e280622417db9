"""Compiles from several threads at once, each compile on a new OpenCL
context, in processes of their own: the reproduction of the known problem
"Emulated device: the CPU runtime's compiler crashes now and then under
compiles from several threads" (docs/known-problems.md).

    python3 tools/compile_stress.py [--mode MODE] [--threads T] [--compiles N] [--processes P]

Each of P processes starts T threads; each thread, N times, makes a new
context on the device (a real Intel GPU, or the emulated one), an engine on
it and, by --mode:

- ``graph-python`` (default): the attention partition of
  tests/test_threads.py (MatMul, SoftMax, MatMul) compiled for an engine
  whose graph allocator is two Python callables over ``dnnl.usm``, as in
  ``test_two_hundred_allocators_on_their_own_contexts_from_four_threads``;
- ``graph``: the same partition on an engine with oneDNN's own allocator;
- ``matmul``: a matmul primitive.

oneDNN's primitive and compiled-partition caches are off, so every compile
builds its OpenCL programs. Prints each process's exit status (a negative
one is the signal that killed it) and the count of failed processes;
exits 1 when any failed. A process that runs past --timeout seconds is
killed with SIGABRT (a hang).
"""
import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(mode, threads, compiles):
    """One process: `threads` threads, each making `compiles` compiles."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import dnnl_ocl_interop as dnnl
    dnnl.emulation.ensure_device()
    import pyopencl as cl

    g = dnnl.graph
    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    dnnl.set_primitive_cache_capacity(0)
    g.set_compiled_partition_cache_capacity(0)
    if mode != "matmul":
        from helpers import attention_partition, compile_partition
        partition = attention_partition(2, 8, 8)
    md = dnnl.memory.desc([2, 8, 8], dnnl.memory.data_type.f32, dnnl.memory.format_tag.abc)

    def work():
        for _ in range(compiles):
            context = cl.Context([device])
            if mode == "matmul":
                engine = dnnl.ocl_interop.make_engine(device, context)
                dnnl.matmul(dnnl.matmul.primitive_desc(engine, md, md, md))
            elif mode == "graph":
                compile_partition(partition, dnnl.ocl_interop.make_engine(device, context))
            else:
                allocator = g.ocl_interop.make_allocator(
                    lambda size, alignment, dev, ctx: dnnl.usm.device_alloc(ctx, dev, size, alignment),
                    lambda ptr, dev, ctx, event: dnnl.usm.free(ctx, ptr))
                compile_partition(partition, g.ocl_interop.make_engine_with_allocator(device, context, allocator))

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("graph-python", "graph", "matmul"), default="graph-python")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--compiles", type=int, default=60, help="per thread")
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.mode, args.threads, args.compiles)
        return 0
    failed = 0
    for i in range(args.processes):
        start = time.monotonic()
        command = [sys.executable, os.path.abspath(__file__), "--child", "--mode", args.mode,
                   "--threads", str(args.threads), "--compiles", str(args.compiles)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = process.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(6)
            _, err = process.communicate()
            err = f"hung for {args.timeout:.0f} s\n" + err
        status = process.returncode
        failed += status != 0
        last = [line for line in err.splitlines() if line.strip()][-1:] if status else []
        print(f"process {i + 1}: exit status {status} after {time.monotonic() - start:.0f} s"
              + (f" ({last[0][:120]})" if last else ""), flush=True)
    print(f"{failed} of {args.processes} processes failed "
          f"({args.threads} threads x {args.compiles} compiles each, mode {args.mode})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
