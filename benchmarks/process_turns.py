"""The same work in several processes taking turns: how much of a row's
spread belongs to the process it runs in rather than to the moment.

Starts --processes Python processes, each set up once (device, context,
queue), and asks them in turn, --turns times, for the median of one
measurement of run.py's "graph execute with allocator" row (run.graph_row,
--batches timed batches). Prints each process's results turn by turn and
its median: processes measured within a second of each other that differ
by more than the turns of one process do show a process's share. run.py
runs each side of each round in a fresh process because of it
(docs/benchmarks.md has the findings).

    python benchmarks/process_turns.py [--processes P] [--turns T] [--batches B]
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import run  # enables the device the test suite would use
import pyopencl as cl

device, context = run.intel_gpu_context()
queue = cl.CommandQueue(context, device)
print("ready", flush=True)
for line in sys.stdin:
    print(run.graph_row(device, context, queue, int(line), 100)[0], flush=True)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--batches", type=int, default=40)
    args = parser.parse_args(argv)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, HERE], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)
                for _ in range(args.processes)]
    try:
        for child in children:
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError("a process failed to set up its device")
        results = [[] for _ in children]
        for _ in range(args.turns):
            for child, got in zip(children, results):
                child.stdin.write(f"{args.batches}\n")
                child.stdin.flush()
                got.append(float(child.stdout.readline()))
    finally:
        for child in children:
            child.stdin.close()
            child.wait()
    print("graph execute with allocator, µs per execute; one line per process, one column per turn")
    for index, got in enumerate(results):
        print(f"process {index}: " + " ".join(f"{v:5.1f}" for v in got) + f"   median {np.median(got):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
