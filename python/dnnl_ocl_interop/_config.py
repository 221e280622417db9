"""What a bug report needs: ``python -m dnnl_ocl_interop`` prints it, and
``--check`` runs a small computation on each device (and on the emulated
one)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import IO, Any, Optional

from . import _core, emulation

_RUNTIME_NAMES = {
    _core.RUNTIME_NONE: "none", _core.RUNTIME_SEQ: "sequential", _core.RUNTIME_OMP: "OpenMP",
    _core.RUNTIME_TBB: "TBB", _core.RUNTIME_THREADPOOL: "threadpool",
    _core.RUNTIME_OCL: "OpenCL", _core.RUNTIME_SYCL: "SYCL",
}


def _runtime(value: int) -> str:
    return _RUNTIME_NAMES.get(value, f"unknown ({value})")


def onednn_origin(library: str) -> str:
    """'bundled' when libdnnl lies inside this package, else 'system'."""
    package_dir = os.path.dirname(os.path.realpath(_core.__file__))
    return "bundled" if os.path.dirname(os.path.realpath(library)) == package_dir else "system"


def _intel_gpus(cl: Any) -> list[Any]:
    """The devices oneDNN's OpenCL engines take: GPUs of Intel platforms."""
    found = []
    for platform in cl.get_platforms():
        if "Intel" not in platform.vendor:
            continue
        try:
            found += platform.get_devices(cl.device_type.GPU)
        except cl.Error:
            pass
    return found


def _opencl_lines() -> tuple[list[str], bool]:
    """The platforms and devices, and whether an Intel GPU is among them."""
    try:
        import pyopencl as cl
        platforms = cl.get_platforms()
    except Exception as exc:  # a report must print even when OpenCL is broken
        return [f"  (cannot list OpenCL platforms: {type(exc).__name__}: {exc})"], False
    lines = []
    intel_gpu = False
    for platform in platforms:
        lines.append(f"  {platform.name} ({platform.vendor}), {platform.version}")
        for device in platform.get_devices():
            kind = " | ".join(name for name in ("GPU", "CPU", "ACCELERATOR")
                              if device.type & getattr(cl.device_type, name)) or str(device.type)
            lines.append(f"    {kind}: {device.name}, driver {device.driver_version}")
            intel_gpu |= "Intel" in platform.vendor and bool(device.type & cl.device_type.GPU)
    return lines or ["  (no OpenCL platform)"], intel_gpu


def _emulation_advice() -> list[str]:
    """What to do on a machine without an Intel GPU."""
    try:
        runtime = emulation.cpu_runtime_path()
        emulation.layer_path()
    except emulation.EmulationError as exc:
        return ["No Intel GPU is visible to OpenCL, and the emulated device is not available: "
                f"{exc} (or pip install 'dnnl_ocl_interop[emulation]')."]
    return [
        "No Intel GPU is visible to OpenCL. The emulated device is available (an Intel GPU",
        f"presented by Intel's CPU OpenCL runtime, {runtime}):",
        "  python -m dnnl_ocl_interop.emulation python your_program.py",
        "  or dnnl.emulation.ensure_device() in the program, before its first OpenCL call;",
        "  python -m dnnl_ocl_interop.emulation python -m dnnl_ocl_interop   shows it,",
        "  python -m dnnl_ocl_interop --check   runs a small computation on it.",
    ]


def show_config(file: Optional[IO[str]] = None) -> None:
    """Print the package and oneDNN versions, where libdnnl was loaded from,
    the OpenCL platforms and devices, and whether the emulated device is on.

    Listing devices makes this process's first OpenCL call when none was made
    yet; to see the emulated device, run
    ``python -m dnnl_ocl_interop.emulation python -m dnnl_ocl_interop``.
    """
    out = file or sys.stdout
    version = _core.version()
    library = _core.library_path()
    print(f"dnnl_ocl_interop {_core.__version__} ({_core.build_type} build)", file=out)
    print(f"Python {sys.version.split()[0]} at {sys.executable}", file=out)
    print(f"oneDNN {version.major}.{version.minor}.{version.patch} (git {version.hash}), "
          f"CPU runtime {_runtime(version.cpu_runtime)}, GPU runtime {_runtime(version.gpu_runtime)}",
          file=out)
    print(f"libdnnl: {library or 'unknown'} ({onednn_origin(library) if library else '?'})", file=out)
    state = emulation._description() if emulation.is_enabled() else "off"
    print(f"emulated device: {state}", file=out)
    print("OpenCL platforms:", file=out)
    lines, intel_gpu = _opencl_lines()
    for line in lines:
        print(line, file=out)
    if not intel_gpu and not emulation.is_enabled():
        for line in _emulation_advice():
            print(line, file=out)


# ------------------------------------------------------------------ --check

CHECK = "a 32x48 by 48x16 f32 matmul with a ReLU post-op, against NumPy"


def _check_device(dnnl: Any, cl: Any, device: Any) -> tuple[bool, str]:
    """Runs CHECK on `device`: (passed, what happened)."""
    import numpy as np

    start = time.perf_counter()
    try:
        context = cl.Context([device])
        queue = cl.CommandQueue(context, device)
        engine = dnnl.ocl_interop.make_engine(device, context)
        stream = dnnl.ocl_interop.make_stream(engine, queue)
        DT, TAG = dnnl.memory.data_type, dnnl.memory.format_tag
        src, wei, dst = (dnnl.memory.desc(dims, DT.f32, TAG.ab)
                         for dims in ([32, 48], [48, 16], [32, 16]))
        ops = dnnl.post_ops()
        ops.append_eltwise(dnnl.algorithm.eltwise_relu, 0.0, 0.0)
        attr = dnnl.primitive_attr()
        attr.set_post_ops(ops)
        pd = dnnl.matmul.primitive_desc(engine, src, wei, dst, attr)
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (32, 48)).astype(np.float32)
        b = rng.uniform(-1, 1, (48, 16)).astype(np.float32)
        mems = {arg: dnnl.memory(d, engine) for arg, d in
                ((dnnl.ARG_SRC, src), (dnnl.ARG_WEIGHTS, wei), (dnnl.ARG_DST, dst))}
        dnnl.arrays.write(mems[dnnl.ARG_SRC], a)
        dnnl.arrays.write(mems[dnnl.ARG_WEIGHTS], b)
        dnnl.matmul(pd).execute(stream, mems)
        stream.wait()
        error = float(np.abs(dnnl.arrays.read(mems[dnnl.ARG_DST]) - np.maximum(a @ b, 0)).max())
    except Exception as exc:  # the report says what failed, whatever it is
        return False, f"failed: {type(exc).__name__}: {exc}"
    took = time.perf_counter() - start
    verdict = "ok" if error <= 1e-4 else "WRONG"
    return error <= 1e-4, (f"{verdict}, max |error| {error:.1e} ({pd.impl_info_str()}, "
                           f"{took:.1f} s with kernel compilation)")


def _check_here(out: IO[str]) -> tuple[int, int]:
    """Runs CHECK on every Intel GPU of this process: (passed, checked)."""
    import pyopencl as cl

    import dnnl_ocl_interop as dnnl
    passed = checked = 0
    try:
        devices = _intel_gpus(cl)
    except Exception:  # no platform: the report above says why
        devices = []
    label = "emulated device" if emulation.is_enabled() else "GPU"
    for i, device in enumerate(devices):
        ok, text = _check_device(dnnl, cl, device)
        print(f"  {label} {i} ({device.name}): {text}", file=out)
        passed += ok
        checked += 1
    return passed, checked


def _check(out: IO[str]) -> int:
    """--check: exit status 0 when every device checked gives the right
    result (and there is at least one), 1 otherwise."""
    print(f"\nChecks ({CHECK}):", file=out)
    out.flush()
    passed, checked = _check_here(out)
    if not emulation.is_enabled():
        if not checked:
            print("  no Intel GPU in this process", file=out)
        try:
            emulation.cpu_runtime_path()
            emulation.layer_path()
        except emulation.EmulationError as exc:
            print(f"  emulated device: not available: {exc}", file=out)
        else:
            child = subprocess.run(
                [sys.executable, "-m", "dnnl_ocl_interop.emulation", sys.executable, "-m",
                 "dnnl_ocl_interop", "--check-this-process"],
                capture_output=True, text=True, timeout=600)
            lines = [line for line in child.stdout.splitlines() if line.strip()]
            for line in lines:
                print(line, file=out)
            if child.returncode not in (0, 1) or not lines:
                print(f"  emulated device: the check's process failed (exit {child.returncode}): "
                      f"{child.stderr.strip()[-500:]}", file=out)
            checked += sum(1 for line in lines if line.strip().startswith("emulated device "))
            passed += sum(1 for line in lines
                          if line.strip().startswith("emulated device ") and "): ok," in line)
    print(f"{passed} of {checked} device(s) passed", file=out)
    return 0 if checked and passed == checked else 1


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m dnnl_ocl_interop [--check]``."""
    parser = argparse.ArgumentParser(
        prog="python -m dnnl_ocl_interop",
        description="Print what a bug report needs: versions, libdnnl, the emulated device, "
                    "the OpenCL platforms and devices.")
    parser.add_argument("--check", action="store_true",
                        help=f"then run {CHECK} on each Intel GPU and on the emulated device "
                             "(in a child process), and report; exit status 1 if any fails")
    parser.add_argument("--check-this-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check_this_process:  # the emulated child of --check: the check lines only
        passed, checked = _check_here(sys.stdout)
        return 0 if checked and passed == checked else 1
    show_config()
    return _check(sys.stdout) if args.check else 0
