"""The graph row's time per execute, taken apart in one Python process:
the row with run.py's allocator (USM alloc and blocking free per execute),
the time inside its malloc and free callables, and the same partition with
a pool allocator (malloc returns a kept pointer, free does nothing);
7 alternating rounds of 15 batches of 20 executes. Prints the medians, then
every round. docs/benchmarks.md has the findings.

    python benchmarks/allocator_breakdown.py
"""
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # enables the device the test suite would use
import numpy as np
import pyopencl as cl
import dnnl_ocl_interop as dnnl
device = next(d for p in cl.get_platforms() if "Intel" in p.vendor for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
queue = cl.CommandQueue(context, device)
pc = time.perf_counter_ns
acc = {"malloc": 0, "free": 0, "n": 0}
dev_alloc, usm_free = dnnl.usm.device_alloc, dnnl.usm.free


def malloc(size, alignment, dev, ctx):
    t = pc()
    p = dev_alloc(ctx, dev, size, alignment)
    acc["malloc"] += pc() - t
    acc["n"] += 1
    return p


def free(ptr, dev, ctx, event):
    t = pc()
    if event is not None:
        event.wait()
    usm_free(ctx, ptr)
    acc["free"] += pc() - t


pool = {}


def pmalloc(size, alignment, dev, ctx):
    p = pool.get(size)
    if p is None:
        p = pool[size] = dev_alloc(ctx, dev, size, alignment)
    return p


def pfree(ptr, dev, ctx, event):
    pass


def make(m, f):
    run_once, stream, _, graph_parts = run.attention_partition(device, context, queue, m, f)
    return run_once, stream, graph_parts  # graph_parts keeps the tensors' storage


plain = make(malloc, free)
pooled = make(pmalloc, pfree)
for w, s, _ in (plain, pooled):
    for _ in range(30):
        w()
    s.wait()
res = {"plain": [], "pooled": [], "malloc_us": [], "free_us": []}
for _ in range(7):
    acc.update(malloc=0, free=0, n=0)
    res["plain"].append(run.median_us(15, 20, plain[0], plain[1].wait))
    res["malloc_us"].append(acc["malloc"] / acc["n"] / 1e3)
    res["free_us"].append(acc["free"] / acc["n"] / 1e3)
    res["pooled"].append(run.median_us(15, 20, pooled[0], pooled[1].wait))
print(json.dumps({k: float(np.median(v)) for k, v in res.items()}))
print(json.dumps(res))
