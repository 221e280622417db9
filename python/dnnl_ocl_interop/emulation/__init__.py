"""An emulated Intel GPU for machines without one.

oneDNN's OpenCL engines accept only Intel GPUs. This module presents Intel's
CPU OpenCL runtime (the ``intel-opencl-rt`` package) to oneDNN, and to
pyopencl, as an Intel GPU with the Xe-HP identity, through an OpenCL layer
that ships with this package. oneDNN then runs its real OpenCL C kernels on
a real OpenCL implementation: results are genuine, timings are a CPU's.

Call :func:`enable` before the process makes its first OpenCL call, or run a
command with ``python -m dnnl_ocl_interop.emulation COMMAND [ARGS...]``.
``enable(devices=N)`` (or ``DNNL_OCL_INTEROP_EMULATED_DEVICES=N``) splits the
CPU device into N emulated GPUs, one per share of its cores.
:func:`ensure_device` picks a real Intel GPU when there is one and the
emulated device otherwise (``DNNL_OCL_INTEROP_DEVICE=gpu|emulated`` forces
either).
"""

import glob
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from typing import Optional

__all__ = [
    "EmulationError",
    "cpu_runtime_path",
    "enable",
    "ensure_device",
    "intel_gpu_present",
    "is_enabled",
    "layer_path",
]

_ENABLED_FLAG = "DNNL_OCL_INTEROP_EMULATION"
_DEVICE_CHOICE = "DNNL_OCL_INTEROP_DEVICE"
_DEVICE_COUNT = "DNNL_OCL_INTEROP_EMULATED_DEVICES"  # read by the layer too
_LAYER_FILE = "libdnnl_ocl_interop_emulation_layer.so"
_RUNTIME_FILE = "libintelocl.so"
# Intel's CPU runtime reads, at its start, required sub-group sizes per kernel
# name ("name(size)", comma-separated). oneDNN's reusable softmax kernel
# reduces a work-group of 16 with sub-group reductions without asking for
# sub-groups of 16 (docs/known-problems.md); the runtime would otherwise pick
# 8 for it on hosts without AVX-512, and every row of 17 to 128 would come
# out wrong. Every launch of that kernel has a multiple of 16 work-items.
_REQUIRED_SUB_GROUP_SIZES = "CL_CONFIG_CPU_REQD_SUB_GROUP_SIZE"
_SOFTMAX_KERNEL = "reusable_softmax_fwd_generic"
_SOFTMAX_SUB_GROUP = f"{_SOFTMAX_KERNEL}(16)"
# How the runtime forms sub-groups: by default along dimension 0 of the
# work-group only; -1 forms them from the linear local id, as Intel GPUs do.
# oneDNN's kernels that vectorize along another dimension (a work-group of
# (1, 16, 1), as its transposing reorders are launched) assume the GPU's way:
# with the default, their sub-groups hold one work-item, and the results came
# out wrong or the runtime's compiler crashed (docs/emulation.md).
_SUB_GROUP_CONSTRUCTION = "CL_CONFIG_CPU_SUB_GROUP_CONSTRUCTION"
_LINEAR_SUB_GROUPS = "-1"


class EmulationError(RuntimeError):
    """The emulated device cannot be enabled (runtime missing, too late, ...)."""


def cpu_runtime_path() -> str:
    """Absolute path of the installed Intel CPU OpenCL runtime (libintelocl.so).

    Its own ICD file holds a placeholder path (pip does not run the conda
    post-link step), so the loader is pointed at the library directly.
    """
    candidates = []
    try:
        for entry in importlib.metadata.distribution("intel-opencl-rt").files or []:
            if entry.name == _RUNTIME_FILE:
                candidates.append(str(entry.locate()))
    except importlib.metadata.PackageNotFoundError:
        pass
    candidates.append(os.path.join(sys.prefix, "lib", _RUNTIME_FILE))
    for path in candidates:
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise EmulationError(
        "Intel's CPU OpenCL runtime is not installed: "
        "pip install intel-opencl-rt intel-cmplr-lib-rt tbb"
    )


def layer_path() -> str:
    """Absolute path of the OpenCL layer built and installed with this package."""
    spec = importlib.util.find_spec("dnnl_ocl_interop._core")
    if spec is None or spec.origin is None:
        raise EmulationError("dnnl_ocl_interop._core is not built")
    path = os.path.join(os.path.dirname(spec.origin), _LAYER_FILE)
    if not os.path.isfile(path):
        raise EmulationError(f"the emulation layer is missing: {path}")
    return path


def _icd_library_names() -> set:
    """File names of the OpenCL drivers a loader would open."""
    names = {_RUNTIME_FILE}
    for icd in glob.glob("/etc/OpenCL/vendors/*.icd"):
        try:
            with open(icd) as f:
                names.add(os.path.basename(f.read().strip()))
        except OSError:
            pass
    return names


def _opencl_initialized() -> bool:
    """Whether an OpenCL driver is already loaded into this process: loaders
    open drivers at the first OpenCL call and read their settings only then."""
    try:
        with open("/proc/self/maps") as f:
            mapped = {os.path.basename(line.split()[-1]) for line in f if "/" in line}
    except OSError:
        return False
    drivers = _icd_library_names()
    return any(name in drivers or name.split(".so")[0] + ".so" in drivers for name in mapped)


def _set_runtime_settings() -> None:
    """The CPU runtime's settings the emulated device needs (read at its
    start): softmax's sub-group size and sub-groups formed as a GPU's."""
    os.environ[_REQUIRED_SUB_GROUP_SIZES] = _with_softmax_sub_group(
        os.environ.get(_REQUIRED_SUB_GROUP_SIZES, ""))
    os.environ[_SUB_GROUP_CONSTRUCTION] = _LINEAR_SUB_GROUPS


def _with_softmax_sub_group(setting: str) -> str:
    """`setting` (CL_CONFIG_CPU_REQD_SUB_GROUP_SIZE) with oneDNN's softmax
    kernel asking for sub-groups of 16, unless it names that kernel already."""
    entries = [entry.strip() for entry in setting.split(",") if entry.strip()]
    if not any(entry.split("(")[0].strip() == _SOFTMAX_KERNEL for entry in entries):
        entries.append(_SOFTMAX_SUB_GROUP)
    return ",".join(entries)


def _setup_missing() -> str:
    """What is missing of the environment :func:`enable` sets up for the
    ICD loader ("" when nothing): ``OCL_ICD_VENDORS`` must name an existing
    file (the CPU runtime), ``OPENCL_LAYERS`` an existing emulation layer."""
    missing = []
    runtime = os.environ.get("OCL_ICD_VENDORS", "")
    if not os.path.isfile(runtime):
        missing.append(f"OCL_ICD_VENDORS={runtime!r} names no file" if runtime
                       else "OCL_ICD_VENDORS is not set")
    layers = os.environ.get("OPENCL_LAYERS", "")
    if not any(os.path.basename(layer) == _LAYER_FILE and os.path.isfile(layer)
               for layer in layers.split(os.pathsep)):
        missing.append(f"OPENCL_LAYERS={layers!r} names no existing {_LAYER_FILE}" if layers
                       else "OPENCL_LAYERS is not set")
    return "; ".join(missing)


def is_enabled() -> bool:
    """True when this process (or the one that started it) enabled emulation:
    ``DNNL_OCL_INTEROP_EMULATION=1``, with the loader's variables still
    naming the CPU runtime and the layer. A flag inherited without them (a
    stale one) is not enough: :func:`enable` sets them up again."""
    return os.environ.get(_ENABLED_FLAG) == "1" and not _setup_missing()


def _description() -> str:
    count = os.environ.get(_DEVICE_COUNT, "1") or "1"
    what = ("emulated Intel GPU (Xe-HP identity)" if count == "1"
            else f"{count} emulated Intel GPUs (Xe-HP identity, sub-devices of the CPU device)")
    return (
        f"{what} on Intel's CPU OpenCL runtime "
        f"{os.environ.get('OCL_ICD_VENDORS')} through layer {os.environ.get('OPENCL_LAYERS')}"
    )


def _device_count(devices: Optional[int]) -> int:
    """The number of emulated devices asked for: `devices`, else
    DNNL_OCL_INTEROP_EMULATED_DEVICES, else 1; EmulationError when it is not
    a count between 1 and the number of CPUs this process may run on (the
    CPU device's compute units, which the devices share out)."""
    source = "devices"
    if devices is None:
        value = os.environ.get(_DEVICE_COUNT, "") or "1"
        source = _DEVICE_COUNT
        try:
            devices = int(value, 10)
        except ValueError:
            raise EmulationError(f"{_DEVICE_COUNT} must be a device count, not {value!r}") from None
    if isinstance(devices, bool) or not isinstance(devices, int):
        raise TypeError(f"devices must be an int, not {type(devices).__name__}")
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if not 1 <= devices <= cpus:
        raise EmulationError(
            f"{source}={devices}: the emulated devices share out the CPU device's "
            f"{cpus} compute units, so between 1 and {cpus} devices can be emulated")
    return devices


def enable(devices: Optional[int] = None) -> str:
    """Present Intel's CPU OpenCL runtime as an Intel GPU to this process.

    Sets the ICD loader's ``OCL_ICD_VENDORS`` (only the CPU runtime is
    visible) and ``OPENCL_LAYERS`` (the emulation layer), and adds
    ``reusable_softmax_fwd_generic(16)`` to the CPU runtime's
    ``CL_CONFIG_CPU_REQD_SUB_GROUP_SIZE`` (oneDNN's softmax kernel gets the
    sub-groups of 16 it assumes: docs/known-problems.md), and sets
    ``CL_CONFIG_CPU_SUB_GROUP_CONSTRUCTION=-1`` (sub-groups formed from the
    linear local id, as on Intel GPUs: docs/emulation.md); child processes
    inherit them all. Must run before the first OpenCL call. Returns a one-line
    description; raises :class:`EmulationError` when the runtime is missing
    or OpenCL is already initialized. ``DNNL_OCL_INTEROP_EMULATION=1``
    inherited without the loader's variables (or with ones naming files that
    are gone) is not taken for a device: the setup is done again.

    ``devices=N`` (default: ``DNNL_OCL_INTEROP_EMULATED_DEVICES``, else 1)
    presents N emulated GPUs instead of one: the CPU device split into N
    sub-devices over its compute units, each shown as a root GPU device. N
    may not exceed the CPUs this process runs on (EmulationError). The
    choice is kept in ``DNNL_OCL_INTEROP_EMULATED_DEVICES``, which children
    inherit. Once OpenCL is initialized, asking for another count than the
    process runs with raises EmulationError.
    """
    count = _device_count(devices)
    if is_enabled() and str(count) == (os.environ.get(_DEVICE_COUNT, "") or "1"):
        if not _opencl_initialized():  # inherited: the runtime's settings may be missing
            _set_runtime_settings()
        return _description()
    if _opencl_initialized():
        if is_enabled():
            raise EmulationError(
                f"emulation runs with {os.environ.get(_DEVICE_COUNT, '') or '1'} device(s) "
                f"in this process, and OpenCL is initialized: the count ({count} asked for) "
                "is read at the first OpenCL call")
        stale = ""
        if os.environ.get(_ENABLED_FLAG) == "1":
            stale = (f" ({_ENABLED_FLAG}=1 is set, but {_setup_missing()}: the emulated "
                     "device is not in this process)")
        raise EmulationError(
            f"OpenCL is already initialized in this process{stale}: enable emulation "
            "before the first OpenCL call, or run the program with "
            "python -m dnnl_ocl_interop.emulation"
        )
    runtime = cpu_runtime_path()
    layer = layer_path()
    os.environ["OCL_ICD_VENDORS"] = runtime
    os.environ["OPENCL_LAYERS"] = layer
    _set_runtime_settings()
    if count == 1:  # the default: the environment stays as it always was
        os.environ.pop(_DEVICE_COUNT, None)
    else:
        os.environ[_DEVICE_COUNT] = str(count)
    os.environ[_ENABLED_FLAG] = "1"
    return _description()


_GPU_PROBE = """
import pyopencl as cl
found = [d.name for p in cl.get_platforms() if "Intel" in p.vendor
         for d in p.get_devices() if d.type & cl.device_type.GPU]
print(found[0] if found else "")
"""


def intel_gpu_present() -> str:
    """Name of a real Intel GPU, or "" when there is none.

    Asked in a child process without emulation, so this process's OpenCL
    stays uninitialized and emulation can still be enabled.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in (_ENABLED_FLAG, "OPENCL_LAYERS", "OCL_ICD_VENDORS")}
    try:
        probe = subprocess.run([sys.executable, "-c", _GPU_PROBE], env=env,
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return ""
    return probe.stdout.strip() if probe.returncode == 0 else ""


def _loaders_missing_the_device() -> str:
    """What this process's OpenCL loaders see instead of an Intel GPU ("" when
    both see one): pyopencl's own loader and the system's libOpenCL.so.1,
    which oneDNN uses. A loader reads its settings at its first call, so one
    called before emulation was enabled on a machine without an OpenCL
    driver found no platform, loaded nothing that enable() could detect, and
    keeps finding none."""
    import ctypes

    import pyopencl as cl

    missing = []
    try:
        if not [d for p in cl.get_platforms() if "Intel" in p.vendor for d in p.get_devices()
                if d.type & cl.device_type.GPU]:
            missing.append("pyopencl sees no Intel GPU")
    except cl.Error as e:
        missing.append(f"pyopencl: {e}")
    try:
        count = ctypes.c_uint(0)
        status = ctypes.CDLL("libOpenCL.so.1").clGetPlatformIDs(0, None, ctypes.byref(count))
        if status != 0 or count.value == 0:
            missing.append(f"the system's OpenCL loader finds no platform (status {status})")
    except OSError as e:
        missing.append(f"no system OpenCL loader: {e}")
    return "; ".join(missing)


def ensure_device() -> str:
    """Make an Intel GPU available to this process; returns what is used.

    A real Intel GPU when present, the emulated one otherwise. The
    ``DNNL_OCL_INTEROP_DEVICE`` environment variable can force ``gpu``
    (fail without a real one) or ``emulated``. Having enabled the emulated
    device, checks that this process's OpenCL loaders see it, and raises
    :class:`EmulationError` when they do not (OpenCL was called before, on a
    machine without an OpenCL driver: nothing was loaded that :func:`enable`
    could detect).
    """
    choice = os.environ.get(_DEVICE_CHOICE, "auto")
    if choice not in ("auto", "gpu", "emulated"):
        raise EmulationError(f"{_DEVICE_CHOICE} must be auto, gpu or emulated, not {choice!r}")
    if os.environ.get(_ENABLED_FLAG) != "1" and choice != "emulated":
        gpu = intel_gpu_present()
        if gpu:
            return f"real Intel GPU: {gpu}"
        if choice == "gpu":
            raise EmulationError(f"{_DEVICE_CHOICE}=gpu but no Intel GPU was found")
    description = enable()  # sets up again what a stale flag lacks
    missing = _loaders_missing_the_device()
    if missing:
        raise EmulationError(
            f"OpenCL was initialized in this process before the emulated device was enabled "
            f"({missing}): call ensure_device() before the first OpenCL call (pyopencl's "
            "get_platforms() included), or run the program with python -m dnnl_ocl_interop.emulation. "
            "The emulation's settings are in the environment now, so child processes get the device")
    return description
