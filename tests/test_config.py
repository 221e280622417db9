"""What a bug report needs: dnnl.show_config() and python -m dnnl_ocl_interop;
the version's one home (pyproject.toml) and oneDNN's version_t."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import _config

ROOT = Path(__file__).resolve().parent.parent


def test_version_comes_from_pyproject():
    declared = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert dnnl.__version__ == declared.group(1) == dnnl._core.__version__


def test_version_t_fields_and_tuple_view():
    v = dnnl.version()
    assert (v.major, v.minor, v.patch) >= (3, 13, 0)  # the minimum (third_party/onednn.cmake)
    assert tuple(v[:3]) == (v.major, v.minor, v.patch) and v[3] == v.hash
    assert len(v) == 4
    major, minor, patch, commit = v
    assert (major, minor, patch, commit) == (v.major, v.minor, v.patch, v.hash)
    assert v.gpu_runtime == dnnl.RUNTIME_OCL
    assert f"major={v.major}" in repr(v)


def test_library_path_is_the_loaded_libdnnl():
    path = dnnl._core.library_path()
    assert os.path.isfile(path) and "libdnnl" in os.path.basename(path)
    with open("/proc/self/maps") as maps:
        assert any(os.path.realpath(path) == os.path.realpath(line.split()[-1])
                   for line in maps if "libdnnl" in line)


def test_origin_is_bundled_exactly_when_libdnnl_is_inside_the_package():
    package_dir = os.path.dirname(os.path.realpath(dnnl._core.__file__))
    inside = os.path.dirname(os.path.realpath(dnnl._core.library_path())) == package_dir
    assert _config.onednn_origin(dnnl._core.library_path()) == ("bundled" if inside else "system")
    assert _config.onednn_origin("/usr/lib/libdnnl.so.3") == "system"
    assert _config.onednn_origin(os.path.join(package_dir, "libdnnl.so.3")) == "bundled"


def test_show_config_in_this_process():
    out = io.StringIO()
    dnnl.show_config(out)
    text = out.getvalue()
    v = dnnl.version()
    assert f"dnnl_ocl_interop {dnnl.__version__}" in text
    assert f"oneDNN {v.major}.{v.minor}.{v.patch} (git {v.hash})" in text
    assert "GPU runtime OpenCL" in text and "CPU runtime " in text
    assert f"libdnnl: {dnnl._core.library_path()}" in text
    assert "OpenCL platforms:" in text and "GPU: " in text


def test_python_dash_m_prints_the_configuration_of_the_emulated_device():
    result = subprocess.run(
        [sys.executable, "-m", "dnnl_ocl_interop.emulation", sys.executable, "-m", "dnnl_ocl_interop"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"dnnl_ocl_interop {dnnl.__version__}")
    library = next(line for line in lines if line.startswith("libdnnl: "))
    assert re.fullmatch(r"libdnnl: /\S+libdnnl\.so\S* \((bundled|system)\)", library), library
    assert any(line.startswith("emulated device: emulated Intel GPU") for line in lines)
    assert any(line.strip().startswith("GPU: ") for line in lines)


# ------------------------------------- a machine without a GPU, and --check

def _without_opencl_devices(tmp_path):
    """This process's environment with no OpenCL driver to load (an empty
    vendors directory) and emulation off: a machine without a GPU."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENCL_LAYERS", "OCL_ICD_VENDORS", "DNNL_OCL_INTEROP_EMULATION",
                        "DNNL_OCL_INTEROP_EMULATED_DEVICES")}
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    env["OCL_ICD_VENDORS"] = str(vendors)
    return env


def test_without_a_gpu_the_report_points_to_the_emulated_device(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dnnl_ocl_interop"], capture_output=True,
                            text=True, timeout=120, cwd=ROOT, env=_without_opencl_devices(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "cannot list OpenCL platforms" in out or "(no OpenCL platform)" in out
    assert "No Intel GPU is visible to OpenCL. The emulated device is available" in out
    assert "python -m dnnl_ocl_interop.emulation python your_program.py" in out
    assert "dnnl.emulation.ensure_device()" in out
    assert "python -m dnnl_ocl_interop --check" in out
    assert dnnl.emulation.cpu_runtime_path() in out


def test_check_runs_a_computation_on_the_emulated_device(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dnnl_ocl_interop", "--check"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT,
                            env=_without_opencl_devices(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "Checks (a 32x48 by 48x16 f32 matmul with a ReLU post-op, against NumPy):" in lines
    assert "  no Intel GPU in this process" in lines
    checked = [line for line in lines if line.startswith("  emulated device 0 (")]
    assert len(checked) == 1 and "): ok, max |error| " in checked[0], result.stdout
    assert lines[-1] == "1 of 1 device(s) passed"


def test_check_reports_a_device_it_cannot_check(tmp_path):
    env = _without_opencl_devices(tmp_path)
    env["DNNL_OCL_INTEROP_EMULATED_DEVICES"] = "100000"  # more than the CPU can be split into
    result = subprocess.run([sys.executable, "-m", "dnnl_ocl_interop", "--check"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "emulated device: the check's process failed (exit 1)" in result.stdout
    assert "between 1 and" in result.stdout  # why, from the emulation module
    assert result.stdout.splitlines()[-1] == "0 of 0 device(s) passed"
