"""The graph allocator rows taken apart, stage by stage, Python beside C++.

Runs the attention partition of benchmarks/run.py's "graph execute with
allocator" row (an allocator that allocates USM device memory on every
malloc and frees it with a blocking free) execute by execute, with
timestamps at every stage on both sides:

- Python: the binding records its own stages
  (dnnl.graph.ocl_interop._trace_allocators: the execute binding's entry,
  GIL release, oneDNN's call into the trampoline, GIL taken, the callable
  called and returned, the pointer check, the return to oneDNN, the same for
  free, oneDNN's return, the GIL taken back), and the allocator's callables
  record theirs (entered, the dnnl.usm call returned, left);
- C++: benchmarks/baseline.cpp's row "graph trace" records the C allocator's
  entry and return and the execute's call and return.

Both clocks are CLOCK_MONOTONIC (time.perf_counter_ns and std::chrono::
steady_clock). Prints, for each interval between consecutive stages, its
median over the executes of each round and the median over rounds (Python
and C++ alternate, --rounds times), then the same grouped into the stages
both sides share. docs/benchmarks.md has the findings.

    python benchmarks/allocator_breakdown.py [--executes N] [--rounds R] [--pool] [--json PATH]

--pool takes apart the pool row instead ("graph execute with caching pool":
a warm dnnl.graph.allocators.caching_pool against the same policy in C).
"""
import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (enables the device the test suite would use)

import dnnl_ocl_interop as dnnl  # noqa: E402

# The stages both sides share, each as (name, from stage, to stage).
SHARED = [
    ("execute called → oneDNN calls malloc", "execute: called", "malloc: called by oneDNN"),
    ("malloc (called → returns to oneDNN)", "malloc: called by oneDNN", "malloc: return to oneDNN"),
    ("oneDNN between malloc and free (enqueues the kernels)", "malloc: return to oneDNN",
     "free: called by oneDNN"),
    ("free (called → returns to oneDNN)", "free: called by oneDNN", "free: return to oneDNN"),
    ("free returned → execute returns", "free: return to oneDNN", "execute: returned"),
    ("whole execute", "execute: called", "execute: returned"),
]


def python_trace(executes, warmup, pool=False):
    """One Python round: the merged (stage, ns) records of `executes`
    executes (on a warm dnnl.graph.allocators.caching_pool with `pool`)."""
    marks = []
    now = time.perf_counter_ns
    device_alloc, usm_free = dnnl.usm.device_alloc, dnnl.usm.free

    def malloc(size, alignment, dev, ctx):
        marks.append(("malloc: callable entered", now()))
        ptr = device_alloc(ctx, dev, size, alignment)
        marks.append(("malloc: usm.device_alloc returned", now()))
        return ptr

    def free(ptr, dev, ctx, event):
        marks.append(("free: callable entered", now()))
        if event is not None:
            event.wait()
        usm_free(ctx, ptr)
        marks.append(("free: usm.free returned", now()))

    device, context = run.intel_gpu_context()
    queue = run.cl.CommandQueue(context, device)
    caching_pool = dnnl.graph.allocators.caching_pool() if pool else None
    work, stream, _, parts = run.attention_partition(
        device, context, queue, malloc, free, allocator=caching_pool and caching_pool.allocator)
    for _ in range(warmup):
        work()
    stream.wait()
    marks.clear()
    trace = dnnl.graph.ocl_interop._trace_allocators
    trace(True)
    for _ in range(executes):
        marks.append(("execute: called", now()))
        work()
        marks.append(("execute: returned", now()))
    records = trace(False)
    stream.wait()
    del work, parts
    if caching_pool:
        caching_pool.release()
    return sorted(list(records) + marks, key=lambda r: r[1])


def cpp_trace(executes, warmup, pool=False):
    row = "graph trace (caching pool)" if pool else "graph trace"
    out = subprocess.run([run.BASELINE, str(executes), str(warmup), "0", row],
                         capture_output=True, text=True, check=True, timeout=600)
    return [tuple(r) for r in json.loads(out.stdout.strip().splitlines()[-1])["trace"]]


def per_execute(records):
    """The records split into executes: [[(stage, ns), ...], ...]."""
    executes, current = [], None
    for stage, ns in records:
        if stage == "execute: called":
            current = []
            executes.append(current)
        if current is not None:
            current.append((stage, ns))
    return executes


def intervals(records):
    """{"from → to": median µs} of consecutive stages, and {shared stage:
    median µs}, over the executes of one round."""
    steps, shared = {}, {}
    for ex in per_execute(records):
        at = {stage: ns for stage, ns in ex}
        for (a, ta), (b, tb) in zip(ex, ex[1:]):
            steps.setdefault(f"{a} → {b}", []).append((tb - ta) / 1e3)
        for name, a, b in SHARED:
            if a in at and b in at:
                shared.setdefault(name, []).append((at[b] - at[a]) / 1e3)
    return ({k: run.median_of(v) for k, v in steps.items()},
            {k: run.median_of(v) for k, v in shared.items()})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executes", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--pool", action="store_true",
                        help="the pool row instead: a warm caching_pool against the C pool")
    args = parser.parse_args(argv)
    run.build_baseline()
    rounds = {"python": [], "cpp": []}
    for _ in range(args.rounds):
        rounds["cpp"].append(intervals(cpp_trace(args.executes, args.warmup, args.pool)))
        rounds["python"].append(intervals(python_trace(args.executes, args.warmup, args.pool)))

    def over_rounds(side, which):
        keys = list(dict.fromkeys(k for r in rounds[side] for k in r[which]))
        return {k: run.median_of([r[which][k] for r in rounds[side] if k in r[which]]) for k in keys}

    result = {side: {"steps": over_rounds(side, 0), "shared": over_rounds(side, 1)} for side in rounds}
    print(f"{args.rounds} rounds of {args.executes} executes; medians over executes, then over rounds (µs)\n")
    print("| stage | Python µs | C++ µs | Python − C++ |")
    print("|---|---:|---:|---:|")
    for name, _, _ in SHARED:
        p, c = result["python"]["shared"].get(name), result["cpp"]["shared"].get(name)
        print(f"| {name} | {p:.2f} | {c:.2f} | {p - c:+.2f} |")
    for side in ("python", "cpp"):
        print(f"\n{side}, step by step:\n\n| from → to | µs |\n|---|---:|")
        for k, v in result[side]["steps"].items():
            print(f"| {k} | {v:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": rounds, "medians": result}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
