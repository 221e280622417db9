"""run.py on two interpreters, a build with a GIL and a free-threaded one, in
one run: the thread rows side by side, and the per-call rows of the
free-threaded build against the GIL build's.

    python benchmarks/interpreters.py --free-threaded PATH [--gil PATH] [--rounds N] [--chunks K]
                                      [--json PATH]

Each interpreter must have the package installed (the free-threaded one by
``PYTHON=PATH bash .ci/setup``: docs/building.md, "A free-threaded
Python"). run.py runs under each in turn, K chunks of N/K rounds each, the
interpreter that goes first alternating by chunk, so that a state of the
machine lasting minutes meets both; the free-threaded one as pyopencl
leaves it: with the GIL, which pyopencl turns on at import until it
declares free-threading support (forcing it off with ``PYTHON_GIL=0``
crashes pyopencl when threads make its objects at once:
docs/building.md, "A free-threaded Python"; the run of docs/benchmarks.md
predates that finding). Each
interpreter's rounds are pooled and judged as run.py judges them (the
per-round ratio or difference against C++, measured in the same round, with
a 95 % bootstrap interval over rounds).

Verdicts:

- a thread row's throughput against C++'s: it *meets* the goal of
  THROUGHPUT_GOAL of C++'s throughput when the whole interval of its ratio
  (Python time over C++ time) is at most 1 / THROUGHPUT_GOAL, *misses* when
  none of it is, and is *inconclusive* otherwise;
- every other row (per call, per network) on the free-threaded build: *no worse* than on the GIL
  build when its overhead over C++ is within the GIL build's interval or
  below it (its median at most the upper end of the GIL build's interval),
  *worse* when its whole interval lies above the GIL build's upper end,
  *inconclusive* otherwise.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (one home for the bootstrap and the verdicts)

THROUGHPUT_GOAL = 0.95
THREAD_KINDS = ("matmul throughput", "graph throughput")


def run_rounds(python, rounds):
    """One run.py of `rounds` rounds under `python`; its JSON report."""
    env = dict(os.environ)
    env.pop("PYTHON_GIL", None)  # each interpreter as pyopencl leaves it
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        done = subprocess.run([python, os.path.join(run.ROOT, "benchmarks", "run.py"), "--rounds",
                               str(rounds), "--json", path], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"run.py under {python} failed:\n{done.stdout}\n{done.stderr}")
        with open(path) as f:
            return json.load(f)


def pooled(reports):
    """{row: (python rounds, C++ rounds)} over the reports of one interpreter."""
    rows = {}
    for report in reports:
        for r in report["rows"]:
            py, cpp = rows.setdefault(r["name"], ([], []))
            py.extend(r["python_rounds_us"])
            cpp.extend(r["cpp_rounds_us"])
    return rows


def judged(py, cpp):
    ratios = [p / c for p, c in zip(py, cpp)]
    overheads = [p - c for p, c in zip(py, cpp)]
    return {"python_us": run.median_of(py), "cpp_us": run.median_of(cpp),
            "ratio": run.bootstrap_interval(ratios), "overhead": run.bootstrap_interval(overheads)}


def compared(free, gil):
    """The per-call verdict of the free-threaded overhead against the GIL build's."""
    median, low, _ = free["overhead"]
    gil_high = gil["overhead"][2]
    if median <= gil_high:
        return "no worse"
    return "**worse**" if low > gil_high else "inconclusive"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gil", default=sys.executable, help="the interpreter with a GIL (default: this one)")
    parser.add_argument("--free-threaded", required=True, help="the free-threaded interpreter")
    parser.add_argument("--rounds", type=int, default=10, help="rounds per interpreter")
    parser.add_argument("--chunks", type=int, default=2, help="alternations of the interpreters")
    parser.add_argument("--json", metavar="PATH", help="also write both reports and the table as JSON")
    args = parser.parse_args(argv)
    sides = {"GIL": args.gil, "free-threaded": args.free_threaded}
    reports = {name: [] for name in sides}
    per_chunk = [args.rounds // args.chunks + (i < args.rounds % args.chunks) for i in range(args.chunks)]
    for chunk, rounds in enumerate(per_chunk):
        order = list(sides) if chunk % 2 == 0 else list(reversed(sides))
        for name in order:
            report = run_rounds(sides[name], rounds)
            reports[name].append(report)
            print(f"chunk {chunk + 1}/{args.chunks}: {name} ({report['machine']['python']}), {rounds} "
                  f"rounds, load {report['machine']['load_average']} → {report['load_average_at_end']}",
                  file=sys.stderr)
    rows = {name: {row: judged(*values) for row, values in pooled(reports[name]).items()} for name in sides}
    gil, free = rows["GIL"], rows["free-threaded"]
    limit = 1 / THROUGHPUT_GOAL
    lines = ["| row | GIL: Python µs | GIL: C++ µs | GIL: ratio (95 % CI) | 3.13t: Python µs | 3.13t: C++ µs "
             f"| 3.13t: ratio (95 % CI) | 3.13t: throughput ≥ {THROUGHPUT_GOAL} of C++'s |",
             "|---|---:|---:|---:|---:|---:|---:|:---:|"]
    for n in run.THREAD_COUNTS:
        for kind in THREAD_KINDS:
            name = run.thread_row(kind, n)
            g, f = gil[name], free[name]
            mark = run.verdict(f["ratio"][1], f["ratio"][2], limit)
            lines.append(f"| {name} | {g['python_us']:.2f} | {g['cpp_us']:.2f} | {g['ratio'][0]:.3f} "
                         f"({g['ratio'][1]:.3f} … {g['ratio'][2]:.3f}) | {f['python_us']:.2f} | {f['cpp_us']:.2f} "
                         f"| {f['ratio'][0]:.3f} ({f['ratio'][1]:.3f} … {f['ratio'][2]:.3f}) "
                         f"| {'**misses**' if mark == 'misses' else mark} |")
    lines += ["", "| per-call row | GIL: overhead µs (95 % CI) | 3.13t: overhead µs (95 % CI) | 3.13t against GIL |",
              "|---|---:|---:|:---:|"]
    thread_rows = {run.thread_row(kind, n) for kind in THREAD_KINDS for n in run.THREAD_COUNTS}
    for name in gil:
        if name in thread_rows or name not in free:
            continue
        g, f = gil[name]["overhead"], free[name]["overhead"]
        lines.append(f"| {name} | {g[0]:+.3f} ({g[1]:+.3f} … {g[2]:+.3f}) | {f[0]:+.3f} ({f[1]:+.3f} … {f[2]:+.3f}) "
                     f"| {compared(free[name], gil[name])} |")
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reports": reports, "table": lines}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
