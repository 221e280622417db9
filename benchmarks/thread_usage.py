"""The graph throughput rows at 1, 2 and 4 threads, with the CPU time and
context switches they cost, Python beside C++.

run.py's "graph throughput" rows time the attention partition executed by
1, 2 and 4 threads (each with its own queue, stream and tensors, 20
executes then a wait). This runs the same work, and around it reads the
process's resource usage (getrusage: user and system CPU time of every
thread, the emulated device's workers included, and voluntary and
involuntary context switches), per execute:

- Python, with the row's allocator (two Python callables calling
  dnnl.usm on every execute), and for contrast with a pool written in
  Python (the same two calls into Python, but no driver call once warm) and
  a warm dnnl.graph.allocators.caching_pool (served in C++: no GIL, no
  driver call);
- C++: benchmarks/baseline.cpp's row "graph threads (usage)", with the C
  allocator of the C++ row.

Sides alternate, --rounds times; each figure is the median over rounds
(the time per execute: of the median of each round's samples). Every
side's last output is checked against NumPy. docs/benchmarks.md has the
findings.

    python benchmarks/thread_usage.py [--rounds R] [--samples N] [--json PATH]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import threading

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (enables the device the test suite would use)

import dnnl_ocl_interop as dnnl  # noqa: E402
import numpy as np  # noqa: E402

THREADS = run.THREAD_COUNTS
CALLS = run.THREAD_CALLS


def usage_now():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime, u.ru_nvcsw, u.ru_nivcsw


def usage_per_call(before, after, calls):
    """{cpu_us, voluntary, involuntary} per call between two usage_now()s."""
    return {"cpu_us": (after[0] - before[0]) * 1e6 / calls,
            "voluntary": (after[1] - before[1]) / calls,
            "involuntary": (after[2] - before[2]) / calls}


def python_pool_allocator():
    """A caching pool written in Python, as a user would: two callables
    (the GIL on every malloc and free) that reuse a block of the same size
    once the event it was freed with has completed (in_order_events gives
    the execute's own frees an event), and call the driver only on a miss."""
    cached, sizes, lock = {}, {}, threading.Lock()  # size -> [(ptr, event)], ptr -> size
    complete = run.cl.command_execution_status.COMPLETE

    def malloc(size, alignment, device, context):
        with lock:
            blocks = cached.get(size, ())
            for i, (ptr, event) in enumerate(blocks):
                if event is not None and event.command_execution_status == complete:
                    del blocks[i]
                    return ptr
        ptr = dnnl.usm.device_alloc(context, device, size, alignment)
        with lock:
            sizes[ptr] = size
        return ptr

    def free(ptr, device, context, event):
        if event is None:  # a dropped tensor: nothing tells when its work ends
            with lock:
                del sizes[ptr]
            dnnl.usm.free(context, ptr)
            return
        with lock:
            cached.setdefault(sizes[ptr], []).append((ptr, event))

    return dnnl.graph.ocl_interop.make_allocator(malloc, free, in_order_events=True)


def python_side(samples, allocator=None):
    """{n: {us, cpu_us, voluntary, involuntary}} of one Python round, with
    the row's Python allocator, "caching_pool" (a warm
    dnnl.graph.allocators.caching_pool) or "python pool"
    (python_pool_allocator); checks the last thread's output."""
    device, context = run.intel_gpu_context()
    queue = run.cl.CommandQueue(context, device)
    # Several queues: blocks freed without an event (in-order executes) must
    # wait for a marker before reuse (the default suits one in-order queue).
    caching_pool = (dnnl.graph.allocators.caching_pool(reuse_without_event=False)
                    if allocator == "caching_pool" else None)
    graph_allocator = (caching_pool.allocator if caching_pool
                       else python_pool_allocator() if allocator == "python pool" else None)
    work, stream, _, parts = run.attention_partition(device, context, queue, allocator=graph_allocator)
    for _ in range(30):
        work()
    stream.wait()
    result = {}
    for n in THREADS:
        partitions, queues, sets = run.graph_thread_work(context, device, parts, n)
        partitions(0)
        before = usage_now()
        # One untimed round before the samples (no warm-up time), counted
        # in the usage per call.
        us = run.threaded_us(n, n * CALLS, samples, partitions, warm_up_seconds=0)
        result[n] = {"us": us, **usage_per_call(before, usage_now(), n * CALLS * (samples + 1))}
        run.check_digest("Python", run.thread_row("graph throughput", n),
                         run.digest(np.concatenate([run.usm_output(q, outs[0])
                                                    for q, (_, outs) in zip(queues, sets)])),
                         run.expected_outputs(0, 0)[run.thread_row("graph throughput", n)])
    del work, stream, parts
    if caching_pool:
        caching_pool.release()
    return result


def cpp_side(samples):
    """The same from the C++ baseline (its C allocator)."""
    out = subprocess.run([run.BASELINE, str(samples), "0", "0", "graph threads (usage)"],
                         capture_output=True, text=True, check=True, timeout=900)
    lines = out.stdout.strip().splitlines()
    usage, report = json.loads(lines[-2])["usage"], json.loads(lines[-1])
    expected = run.expected_outputs(0, 0)
    run.check_outputs([("C++", report["checks"], report["rows"])],
                      {run.thread_row("graph throughput", n): expected[run.thread_row("graph throughput", n)]
                       for n in THREADS})
    result = {}
    for n in THREADS:
        result[n] = {"us": run.median_of(report["rows"][run.thread_row("graph throughput", n)]), **usage[str(n)]}
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=run.THREAD_REPEATS,
                        help="samples per thread count and round (each: 20 executes per thread and a wait)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    run.build_baseline()
    sides = {"Python allocator": lambda: python_side(args.samples),
             "Python pool": lambda: python_side(args.samples, "python pool"),
             "caching_pool": lambda: python_side(args.samples, "caching_pool"),
             "C++": lambda: cpp_side(args.samples)}
    rounds = {name: [] for name in sides}
    for r in range(args.rounds):
        for name, side in (sides.items() if r % 2 == 0 else reversed(sides.items())):
            rounds[name].append(side())
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    medians = {name: {n: {k: run.median_of([rd[n][k] for rd in rs]) for k in ("us", "cpu_us", "voluntary",
                                                                             "involuntary")}
                      for n in THREADS}
               for name, rs in rounds.items()}
    print(f"{args.rounds} rounds, medians per execute (time: wall time per execute of all threads; "
          "CPU: the whole process's, device workers included)")
    print("| threads | side | µs | CPU µs | voluntary switches | involuntary switches |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in THREADS:
        for name in sides:
            m = medians[name][n]
            print(f"| {n} | {name} | {m['us']:.1f} | {m['cpu_us']:.1f} | {m['voluntary']:.2f} | "
                  f"{m['involuntary']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": rounds, "medians": medians}, f, indent=1)


if __name__ == "__main__":
    main()
