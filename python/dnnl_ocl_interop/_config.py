"""What a bug report needs: ``python -m dnnl_ocl_interop`` prints it."""

from __future__ import annotations

import os
import sys
from typing import IO, Optional

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


def _opencl_lines() -> list[str]:
    try:
        import pyopencl as cl
        platforms = cl.get_platforms()
    except Exception as exc:  # a report must print even when OpenCL is broken
        return [f"  (cannot list OpenCL platforms: {type(exc).__name__}: {exc})"]
    lines = []
    for platform in platforms:
        lines.append(f"  {platform.name} ({platform.vendor}), {platform.version}")
        for device in platform.get_devices():
            kind = " | ".join(name for name in ("GPU", "CPU", "ACCELERATOR")
                              if device.type & getattr(cl.device_type, name)) or str(device.type)
            lines.append(f"    {kind}: {device.name}, driver {device.driver_version}")
    return lines or ["  (no OpenCL platform)"]


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
    for line in _opencl_lines():
        print(line, file=out)
