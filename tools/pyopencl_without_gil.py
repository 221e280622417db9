"""pyopencl alone, with the GIL forced off on a free-threaded CPython: threads
making and dropping pyopencl.Event objects, nothing else.

Why it is here: pyopencl (2026.1.4, and its main branch of 2026-06) does not
declare free-threading support, so importing it turns a free-threaded
Python's GIL back on. ``PYTHON_GIL=0`` forces the GIL off all the same, and
then pyopencl's objects are made and freed by several threads at once
through binding code built for a GIL (nanobind's instance table without its
free-threaded locks). This script shows what that does with no
dnnl_ocl_interop code in the process: Intel's CPU OpenCL runtime through the
ICD loader, no layer. docs/building.md ("A free-threaded Python") gives the
runs measured; .ci/run therefore runs the suite on 3.13t with the GIL
pyopencl asks for.

    PYTHON_GIL=0 OCL_ICD_VENDORS=$(DIR/bin/python -c "from dnnl_ocl_interop \\
        import emulation; print(emulation.cpu_runtime_path())") \\
        DIR/bin/python tools/pyopencl_without_gil.py [THREADS] [ITERATIONS]

Prints one line and exits 0 when every thread finished; a crash ends the
process (``Critical nanobind error: ...``, SIGABRT, or SIGSEGV).
"""

import sys
import threading

import pyopencl as cl


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    platform = cl.get_platforms()[0]
    context = cl.Context(platform.get_devices())

    def work() -> None:
        queue = cl.CommandQueue(context)
        for _ in range(iterations):
            cl.enqueue_marker(queue).wait()  # an Event made, waited for, dropped

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    print(f"finished: {threads} threads x {iterations} events, GIL enabled: {gil}, "
          f"{platform.name}, pyopencl {cl.VERSION_TEXT}")


if __name__ == "__main__":
    main()
