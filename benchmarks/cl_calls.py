"""OpenCL calls per iteration of a benchmark row, Python against C++.

Runs one row's work (the same work as benchmarks/run.py and the C++
baseline, benchmarks/baseline.cpp, do for it) in a fresh process per side,
with the emulation layer counting OpenCL calls
(DNNL_OCL_INTEROP_COUNT_CL_CALLS, docs/emulation.md), and prints a Markdown
table of calls per iteration for each OpenCL entry point, Python against
C++, differences marked, with the time per iteration spent inside each.

    python benchmarks/cl_calls.py [--row large|graph|all] [--iterations N] [--warmup N]
                                  [--matmul-size N] [--json PATH]

Each side runs twice, with N and 2N timed iterations after the same setup
and warm-up; calls per iteration are the difference of the two runs' counts
divided by N, so setup, warm-up and teardown cancel out. Needs the emulated
device (the layer does the counting): it enables it for itself and its
children. The time column is each side's median time per iteration in its
2N run, with counting on.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = {"large": "large matmul", "graph": "graph execute with allocator"}
GRAPH_BATCH = 20  # executes per wait, as in run.py and baseline.cpp
COUNT_VARIABLE = "DNNL_OCL_INTEROP_COUNT_CL_CALLS"


def python_child(row, iterations, warmup, matmul_size):
    """In a fresh process: the row's work through the package, WARMUP calls
    then ITERATIONS timed ones; prints {"rows": {row: median µs}}."""
    sys.path.insert(0, HERE)
    import run  # enables the emulated device before any OpenCL call
    import pyopencl as cl
    import dnnl_ocl_interop as dnnl

    device = next(d for p in cl.get_platforms() if "Intel" in p.vendor
                  for d in p.get_devices(cl.device_type.GPU))
    context = cl.Context([device])
    in_order = cl.CommandQueue(context, device)
    if row == ROWS["large"]:
        engine = dnnl.ocl_interop.make_engine(device, context)
        stream = dnnl.ocl_interop.make_stream(engine, in_order)
        work, _ = run.large_matmul(engine, stream, matmul_size)
        for _ in range(warmup):
            work()
        us = run.median_us(iterations, 1, work)
    else:
        if iterations % GRAPH_BATCH:
            raise SystemExit(f"--iterations must be a multiple of {GRAPH_BATCH} for the graph row")
        # graph_parts holds the tensors' USM storage: keep it while work runs.
        work, stream, _, graph_parts = run.attention_partition(device, context, in_order)
        for _ in range(warmup):
            work()
        stream.wait()
        us = run.median_us(iterations // GRAPH_BATCH, GRAPH_BATCH, work, stream.wait)
        del graph_parts
    print(json.dumps({"rows": {row: us}}))


def counted_run(command, counts_file):
    """Runs `command` with call counting into `counts_file`: (counts, µs)."""
    env = dict(os.environ, **{COUNT_VARIABLE: counts_file})
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({out.returncode}): {out.stderr[-2000:]}")
    with open(counts_file) as f:
        counts = json.load(f)
    rows = json.loads(out.stdout.strip().splitlines()[-1])["rows"]
    us = next(iter(rows.values()))
    # The baseline prints its samples: their median as run.median_of takes it.
    return counts, statistics.median(us) if isinstance(us, list) else us


def per_iteration(low, high, iterations, select):
    """{entry: calls per iteration} from two runs' counts (`select` picks the
    {entry: count} map out of a counts file)."""
    a, b = select(low), select(high)
    return {name: (b.get(name, 0) - a.get(name, 0)) / iterations for name in set(a) | set(b)
            if b.get(name, 0) != a.get(name, 0)}


def by_library(counts, word):
    """The calls that came through the loaders whose library path contains `word`."""
    total = {}
    for loader in counts["loaders"]:
        if word in os.path.basename(loader["library"]):
            for name, n in loader["calls"].items():
                total[name] = total.get(name, 0) + n
    return total


def off_main_thread(counts):
    total = {}
    for thread in counts["threads"]:
        if not thread["main"]:
            for name, n in thread["calls"].items():
                total[name] = total.get(name, 0) + n
    return total


def measure(row, iterations, warmup, matmul_size, baseline):
    """Both sides' counts for N and 2N iterations: a report dict."""
    sides = {"python": lambda n: [sys.executable, os.path.abspath(__file__), "--child", row, str(n),
                                  str(warmup), str(matmul_size)],
             "cpp": lambda n: [baseline, str(n), str(warmup), str(matmul_size), row]}
    report = {"row": row, "iterations": iterations, "warmup": warmup, "sides": {}}
    with tempfile.TemporaryDirectory(prefix="cl-calls-") as directory:
        for side, command in sides.items():
            low, _ = counted_run(command(iterations), os.path.join(directory, f"{side}-1.json"))
            high, us = counted_run(command(2 * iterations), os.path.join(directory, f"{side}-2.json"))
            report["sides"][side] = {
                "us_per_iteration": us,
                "calls": per_iteration(low, high, iterations, lambda c: c["calls"]),
                # Time only of the entries called per iteration: the others'
                # times differ between the two processes by chance.
                "ns_inside": per_iteration(low, high, iterations, lambda c, low=low, high=high: {
                    name: ns for name, ns in c["nanoseconds"].items()
                    if high["calls"].get(name, 0) != low["calls"].get(name, 0)}),
                "off_main_thread": per_iteration(low, high, iterations, off_main_thread),
                "through_pyopencl_loader": per_iteration(low, high, iterations,
                                                         lambda c: by_library(c, "pyopencl")),
                "threads": [{"name": t["name"], "main": t["main"], "calls": sum(t["calls"].values())}
                            for t in high["threads"]],
                "loaders": [loader["library"] for loader in high["loaders"]],
            }
    return report


def fmt(x):
    return "—" if x == 0 else (f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}")


def print_report(report):
    py, cpp = report["sides"]["python"], report["sides"]["cpp"]
    print(f"\n### {report['row']}: OpenCL calls per iteration "
          f"({report['iterations']} vs {2 * report['iterations']} iterations, "
          f"{report['warmup']} warm-up)\n")
    print("| entry point | calls, Python | calls, C++ | Python − C++ | µs inside, Python | µs inside, C++ |")
    print("|---|---:|---:|---:|---:|---:|")
    names = sorted(set(py["calls"]) | set(cpp["calls"]))
    for name in names:
        p, c = py["calls"].get(name, 0), cpp["calls"].get(name, 0)
        tp, tc = py["ns_inside"].get(name, 0) / 1e3, cpp["ns_inside"].get(name, 0) / 1e3
        mark = "**" if abs(p - c) > 1e-9 else ""
        print(f"| {mark}{name}{mark} | {fmt(p)} | {fmt(c)} | {mark}{p - c:+.2f}{mark} "
              f"| {tp:.1f} | {tc:.1f} |")
    cp_, cc = sum(py["calls"].values()), sum(cpp["calls"].values())
    tp, tc = sum(py["ns_inside"].values()) / 1e3, sum(cpp["ns_inside"].values()) / 1e3
    print(f"| all | {fmt(cp_)} | {fmt(cc)} | {cp_ - cc:+.2f} | {tp:.1f} | {tc:.1f} |")
    print(f"\ntime per iteration (median, counting on): Python {py['us_per_iteration']:.1f} µs, "
          f"C++ {cpp['us_per_iteration']:.1f} µs; inside OpenCL (mean over the extra N iterations): "
          f"Python {tp:.1f} µs, C++ {tc:.1f} µs")
    for side, data in (("Python", py), ("C++", cpp)):
        extra = sum(data["off_main_thread"].values())
        threads = ", ".join(f"{t['name'] or '?'}{' (main)' if t['main'] else ''}: {t['calls']}"
                            for t in data["threads"])
        print(f"{side}: loaders {[os.path.basename(path) for path in data['loaders']]}; "
              f"calls per iteration off the main thread: {fmt(extra)}; "
              f"threads that called OpenCL (calls in the 2N run): {threads}")
    via = py["through_pyopencl_loader"]
    if via:
        print("Python, through pyopencl's loader per iteration: "
              + ", ".join(f"{k} {fmt(v)}" for k, v in sorted(via.items())))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", choices=["large", "graph", "all"], default="all")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--matmul-size", type=int, default=512)
    parser.add_argument("--json", metavar="PATH", help="also write the counts as JSON")
    parser.add_argument("--child", nargs=4, metavar=("ROW", "ITERATIONS", "WARMUP", "SIZE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        row, iterations, warmup, size = args.child
        python_child(row, int(iterations), int(warmup), int(size))
        return 0
    if args.iterations % GRAPH_BATCH:
        parser.error(f"--iterations must be a multiple of {GRAPH_BATCH}")
    import dnnl_ocl_interop as dnnl
    # The layer counts: its device must be the one in use (set in os.environ,
    # which the children inherit; this process makes no OpenCL call).
    dnnl.emulation.enable()
    sys.path.insert(0, HERE)
    import run
    run.build_baseline()
    reports = []
    for key in (["large", "graph"] if args.row == "all" else [args.row]):
        reports.append(measure(ROWS[key], args.iterations, args.warmup, args.matmul_size, run.BASELINE))
        print_report(reports[-1])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
