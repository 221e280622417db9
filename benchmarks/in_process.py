"""The C++ baseline run inside a Python process: what the process costs,
apart from what the binding does.

benchmarks/baseline.cpp built as a library (target
dnnl_ocl_interop_baseline_module) is entered as ``baseline_main`` from a
Python process that has imported dnnl_ocl_interop, and runs the graph
rows' trace ("graph trace": the attention partition executed one by one,
timestamps at the C allocator's calls) exactly as the baseline program
does. Each round runs, in turns, each in a fresh process:

- C++: the baseline program;
- C++ in Python: the library, in a Python process that imported the
  package (as by default: nothing written into libdnnl);
- C++ in Python, interposer on: the same with the opt-in
  ``DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1``;
- Python: the row's own Python side (allocator_breakdown.python_trace).

Prints the stages allocator_breakdown.py shares between the sides, median
over executes, then over rounds. No binding code runs in the C++ rows: a
difference between the first two is the process's (libraries loaded, what
the package set up at import), not the calls'. docs/benchmarks.md has the
findings.

With --row NAME, a timed row of the baseline ("small network", "large
matmul") instead of the trace, on the three C++ sides only: the median of
its samples per round, then over rounds.

    python benchmarks/in_process.py [--rounds R] [--executes N] [--pool] [--row NAME]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import allocator_breakdown  # noqa: E402
import run  # noqa: E402  (enables the device the test suite would use)

MODULE = os.path.join(run.BUILD, "libdnnl_ocl_interop_baseline_module.so")
WARMUP = 30


def build():
    """The baseline program and its library, brought up to date."""
    run.build_baseline()
    subprocess.run(["cmake", "--build", run.BUILD, "--target", "dnnl_ocl_interop_baseline_module"],
                   check=True, stdout=subprocess.DEVNULL)


def trace_row(pool):
    return "graph trace (caching pool)" if pool else "graph trace"


def module_output(executes, row):
    """In this process: baseline_main's last line of output (JSON) for
    `row` with `executes` iterations, its standard output taken from file
    descriptor 1 meanwhile."""
    import ctypes
    baseline_main = ctypes.CDLL(MODULE).baseline_main
    baseline_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    args = [b"baseline", str(executes).encode(), str(WARMUP).encode(), b"512", row.encode()]
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile("w+") as out:
        os.dup2(out.fileno(), 1)
        try:
            status = baseline_main(len(args), (ctypes.c_char_p * len(args))(*args))
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        text = out.read()
    if status != 0:
        raise RuntimeError(f"baseline_main returned {status}")
    return json.loads(text.strip().splitlines()[-1])


def child_output(child, environment, options):
    """The JSON a fresh process running `child` ("module" or "python") with
    `environment` added to this one's prints last."""
    command = [sys.executable, os.path.abspath(__file__), "--child", child] + options
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1200,
                         env={**os.environ, **environment})
    return json.loads(out.stdout.strip().splitlines()[-1])


# side: None (the baseline program) or (child, environment)
SIDES = {"C++": None, "C++ in Python": ("module", {}),
         "C++ in Python, interposer on": ("module", {"DNNL_OCL_INTEROP_VERBOSE_CAPTURE": "1"}),
         "Python": ("python", {})}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--executes", type=int, default=200)
    parser.add_argument("--pool", action="store_true",
                        help="the pool row's trace: a warm caching_pool against the C pool")
    parser.add_argument("--row", help="a timed row of the baseline instead of the graph trace")
    parser.add_argument("--child", choices=["module", "python"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    row = args.row or trace_row(args.pool)
    if args.child:
        if args.child == "module":
            print(json.dumps(module_output(args.executes, row)))
        else:
            print(json.dumps(allocator_breakdown.python_trace(args.executes, WARMUP, args.pool)))
        return 0
    build()
    sides = {k: v for k, v in SIDES.items() if not args.row or v is None or v[0] == "module"}
    options = ["--executes", str(args.executes)] + (["--pool"] if args.pool else []) + \
        (["--row", args.row] if args.row else [])
    rounds = {side: [] for side in sides}
    for index in range(args.rounds):
        order = list(sides)
        order = order[index % len(order):] + order[:index % len(order)]  # each side first in turn
        for side in order:
            if args.row:
                report = (run.run_baseline(args.executes, WARMUP, 512, args.row)[0] if sides[side] is None
                          else {name: run.median_of(samples) for name, samples in
                                child_output(*sides[side], options)["rows"].items()})
                rounds[side].append({args.row: report[args.row]})
                continue
            if sides[side] is None:
                records = allocator_breakdown.cpp_trace(args.executes, WARMUP, args.pool)
            elif sides[side][0] == "module":
                records = child_output(*sides[side], options)["trace"]
            else:
                records = child_output(*sides[side], options)
            rounds[side].append(allocator_breakdown.intervals([tuple(r) for r in records])[1])
    unit = "iterations" if args.row else "executes"
    print(f"{args.rounds} rounds of {args.executes} {unit}, each side in a fresh process; "
          f"medians over {unit}, then over rounds (µs)\n")
    print("| stage | " + " | ".join(sides) + " |")
    print("|---|" + "---:|" * len(sides))
    names = [args.row] if args.row else [name for name, _, _ in allocator_breakdown.SHARED]
    for name in names:
        cells = [run.median_of([r[name] for r in rounds[side] if name in r]) for side in sides]
        print(f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
