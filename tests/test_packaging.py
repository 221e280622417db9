"""How the package reaches users (docs/building.md): the plain CMake build
installs an importable package; a oneDNN build tells a user at a terminal
what it is doing under pip's default verbosity; the sdist holds exactly the
tracked files; the wheel repair's own pieces (licences into a wheel, the ldd
verdicts). The repaired wheel itself is checked end to end by
tools/check_wheel.sh, the offline sdist install by tools/check_sdist.sh."""

import csv
import io
import os
import re
import select
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import _config
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
bundle = load_script("onednn_bundle", ROOT / "third_party" / "onednn_bundle.py")
wheel_tools = load_script("wheel_tools", ROOT / "tools" / "wheel_tools.py")
sdist = load_script("sdist", ROOT / "tools" / "sdist.py")
free_threaded_python = load_script("free_threaded_python", ROOT / "tools" / "free_threaded_python.py")


def _run(command, **kwargs):
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{command}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


# --- the supported Python versions ---------------------------------------------


# Free-threaded wheels are released from 3.14 on: the first CPython whose
# free-threaded build is supported (PEP 779), the first cibuildwheel 4 builds
# (it has no cp313t) and the first pyopencl publishes wheels for.
FREE_THREADED_WHEELS_FROM = 14


def test_the_supported_python_versions_agree():
    """requires-python, the classifiers, CMake's floor and the release
    recipe's wheels and checks (docs/building.md) name the same versions,
    the free-threaded ones from FREE_THREADED_WHEELS_FROM on."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    floor = int(re.search(r'^requires-python = ">=3\.(\d+)"$', pyproject, re.M).group(1))
    classified = sorted(int(m) for m in re.findall(r'"Programming Language :: Python :: 3\.(\d+)"', pyproject))
    assert classified and classified == list(range(floor, classified[-1] + 1)), (floor, classified)
    free_threaded = [m for m in classified if m >= FREE_THREADED_WHEELS_FROM]
    assert free_threaded, classified
    cmake = re.search(r"find_package\(Python 3\.(\d+) REQUIRED", (ROOT / "CMakeLists.txt").read_text())
    assert int(cmake.group(1)) == floor
    building = (ROOT / "docs" / "building.md").read_text()
    built = re.findall(r"cp3(\d+)(t?)-manylinux_x86_64", re.search(r'CIBW_BUILD="([^"]+)"', building).group(1))
    assert sorted(int(m) for m, t in built if not t) == classified, built
    assert sorted(int(m) for m, t in built if t) == free_threaded, built
    checked = re.search(r"for v in ([\dt. ]+); do", building).group(1).split()
    assert checked == [f"3.{m}" for m in classified] + [f"3.{m}t" for m in free_threaded], checked
    assert f"Supported: {', '.join(f'3.{m}' for m in classified[:-1])} and 3.{classified[-1]}" \
        in " ".join(building.split())


# The free-threading levels trove-classifiers (2026.9.21.13) knows.
FREE_THREADING_CLASSIFIERS = [f"Programming Language :: Python :: Free Threading :: {level}" for level in
                              ("1 - Unstable", "2 - Beta", "3 - Stable", "4 - Resilient")]


def test_the_free_threading_classifier_agrees_with_the_module():
    """The package says it supports a free-threaded Python (one valid
    "Free Threading" classifier) exactly when its module declares that it
    does not need the GIL (py::mod_gil_not_used() in cpp/module.cpp)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    said = re.findall(r'"(Programming Language :: Python :: Free Threading[^"]*)"', pyproject)
    declared = "py::mod_gil_not_used()" in (ROOT / "cpp" / "module.cpp").read_text()
    assert len(said) == declared, (said, declared)
    assert set(said) <= set(FREE_THREADING_CLASSIFIERS), said


# --- the free-threaded interpreter's script -----------------------------------

def test_free_threaded_python_status_names_the_entry_a_build_would_fill(tmp_path):
    env = dict(os.environ, **{bundle.CACHE_ENV: str(tmp_path)})
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "free_threaded_python.py"), "status"],
                            capture_output=True, text=True, env=env)
    entry = tmp_path / f"python-3.13t-{free_threaded_python.PYTHON_VERSION}"
    assert (result.returncode, result.stdout.split(" (")[0]) == (1, f"not built: {entry}"), result


def _git(*args, cwd):
    _run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd)


@pytest.mark.parametrize("wrap", sorted(free_threaded_python.SUBPROJECTS))
def test_a_subproject_checkout_is_refused_unless_at_its_tag(tmp_path, monkeypatch, wrap):
    """siphash24's subprojects come from checkouts named by environment
    variables (no GitHub here): one without meson.build, or at another tag,
    is refused with the variable and the command that fixes it."""
    variable, repository, tag = free_threaded_python.SUBPROJECTS[wrap]
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.setenv(variable, str(checkout))
    with pytest.raises(free_threaded_python.BuildError, match=f"{variable}=.* \\(no meson.build\\)"):
        free_threaded_python.subproject_source(wrap, tmp_path, tmp_path / "log")
    (checkout / "meson.build").write_text("project('x')\n")
    _git("init", "-q", cwd=checkout)
    _git("add", "meson.build", cwd=checkout)
    _git("commit", "-qm", "x", cwd=checkout)
    _git("tag", "v0.1", cwd=checkout)
    with pytest.raises(free_threaded_python.BuildError, match=f"at 'v0.1', not {tag}: git -C .* checkout {tag}"):
        free_threaded_python.subproject_source(wrap, tmp_path, tmp_path / "log")
    _git("tag", tag, cwd=checkout)
    _git("tag", "-d", "v0.1", cwd=checkout)
    assert free_threaded_python.subproject_source(wrap, tmp_path, tmp_path / "log") == checkout


# --- the plain CMake build ----------------------------------------------------

_COMPUTE = """
import sys
import numpy as np
import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import _config
assert dnnl.__file__.startswith(sys.argv[1]), dnnl.__file__
print("origin", _config.onednn_origin(dnnl._core.library_path()))
print("device", dnnl.emulation.ensure_device())
import pyopencl as cl
device = next(d for p in cl.get_platforms() if "Intel" in p.vendor for d in p.get_devices(cl.device_type.GPU))
context = cl.Context([device])
engine = dnnl.ocl_interop.make_engine(device, context)
stream = dnnl.ocl_interop.make_stream(engine, cl.CommandQueue(context, device))
md = dnnl.memory.desc([4, 8], dnnl.memory.data_type.f32, dnnl.memory.format_tag.ab)
src, dst = dnnl.memory(md, engine), dnnl.memory(md, engine)
values = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
dnnl.arrays.write(src, values)
relu = dnnl.eltwise_forward(dnnl.eltwise_forward.primitive_desc(
    engine, dnnl.prop_kind.forward_inference, dnnl.algorithm.eltwise_relu, md, md))
relu.execute(stream, {dnnl.ARG_SRC: src, dnnl.ARG_DST: dst})
stream.wait()
assert np.array_equal(dnnl.arrays.read(dst), np.maximum(values, 0))
print("relu OK")
"""


def _onednn_defines():
    """The oneDNN this process's module uses, for the CMake build: a system
    install by its prefix; a bundled one from the build cache, which must
    hold it (this test never starts a 50-minute oneDNN build)."""
    library = dnnl._core.library_path()
    if _config.onednn_origin(library) == "system":
        return [f"-DCMAKE_PREFIX_PATH={Path(library).resolve().parent.parent}"], "system"
    env = {k: v for k, v in os.environ.items() if k != bundle.EXTRA_OPTIONS_ENV}
    status = subprocess.run([sys.executable, str(ROOT / "third_party" / "onednn_bundle.py"), "status"],
                            capture_output=True, text=True, env=env)
    if status.returncode != 0:
        pytest.fail(f"no cached bundled oneDNN ({status.stdout.strip()}); build it first (bash .ci/setup)")
    return ["-DDNNL_OCL_INTEROP_ONEDNN=bundled"], "bundled"


@pytest.mark.needs_build_tools
@pytest.mark.timeout(1800)
def test_plain_cmake_build_installs_an_importable_package(tmp_path):
    """cmake -S . -B BUILD -G Ninja; cmake --build BUILD; cmake --install
    BUILD --prefix P: P/dnnl_ocl_interop is the whole package, and a Python
    that has P on its path (and not the editable install) imports it and
    computes. The build directory is fixed, build/cmake-test, configured
    afresh each time (--fresh) and built incrementally (Ninja, and ccache
    shared with the other build directories); the prefix is new."""
    import pybind11

    defines, origin = _onednn_defines()
    build, prefix = ROOT / "build" / "cmake-test", tmp_path / "prefix"
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_SOURCE_DIR", bundle.EXTRA_OPTIONS_ENV)}
    # The compilers scikit-build-core gives pip's builds (Python's own): ccache
    # hashes the compiler's name, so with them this build reuses their objects.
    for variable in ("CC", "CXX"):
        env.setdefault(variable, sysconfig.get_config_var(variable).split()[0])
    configure = _run(["cmake", "--fresh", "-S", ROOT, "-B", build, "-G", "Ninja",
                      f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
                      f"-DPython_EXECUTABLE={sys.executable}", *defines], env=env, timeout=600)
    assert f"oneDNN {'.'.join(map(str, dnnl.version()[:3]))}: {origin}" in configure.stdout
    _run(["cmake", "--build", build], env=env, timeout=1700)
    _run(["cmake", "--install", build, "--prefix", prefix], env=env, timeout=300)

    package = prefix / "dnnl_ocl_interop"
    installed = {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()}
    sources = {p.relative_to(ROOT / "python" / "dnnl_ocl_interop").as_posix()
               for p in (ROOT / "python" / "dnnl_ocl_interop").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".so"}
    assert sources <= installed, sorted(sources - installed)
    assert any(name.startswith("_core.") and name.endswith(".so") for name in installed)
    assert "libdnnl_ocl_interop_emulation_layer.so" in installed
    if origin == "bundled":
        assert {"libdnnl.so.3", "licenses/oneDNN/LICENSE"} <= installed

    # -S: no site-packages hooks (the editable install's finder would import
    # the checkout's build); the dependencies come from site-packages by path.
    path = os.pathsep.join([str(prefix), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    child = subprocess.run([sys.executable, "-S", "-c", _COMPUTE, str(package)], cwd=tmp_path,
                           env=dict(env, PYTHONPATH=path), capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stdout + child.stderr
    assert f"origin {origin}" in child.stdout and "relu OK" in child.stdout


# --- the bundled build's messages under pip -----------------------------------

def _fake_onednn(path: Path, flag: Path) -> Path:
    """A stand-in oneDNN source tree of the pinned version whose build (two
    Ninja steps) waits until ``flag`` exists, then fails."""
    path.mkdir()
    (path / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.21)
project(oneDNN NONE)
set(PROJECT_VERSION "{bundle.VERSION}")
add_custom_command(OUTPUT first COMMAND ${{CMAKE_COMMAND}} -E touch first)
add_custom_target(wait ALL DEPENDS first
  COMMAND ${{CMAKE_COMMAND}} -DFLAG={flag} -P ${{CMAKE_CURRENT_SOURCE_DIR}}/wait.cmake)
""")
    (path / "wait.cmake").write_text("""
foreach(i RANGE 600)
  if(EXISTS "${FLAG}")
    message(FATAL_ERROR "fake oneDNN: the build stops here")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.1)
endforeach()
message(FATAL_ERROR "fake oneDNN: no flag after 60 s")
""")
    return path


def _pip_wheel(tmp_path: Path):
    """pip wheel of the checkout at pip's default verbosity, with an empty
    build cache and the fake oneDNN as ONEDNN_SOURCE_DIR: (command, env, flag)."""
    flag = tmp_path / "flag"
    source = _fake_onednn(tmp_path / "fake-onednn", flag)
    env = {k: v for k, v in os.environ.items()
           if k not in (bundle.EXTRA_OPTIONS_ENV, "PIP_VERBOSE", "PIP_QUIET")}
    env.update({bundle.CACHE_ENV: str(tmp_path / "cache"), bundle.SOURCE_ENV: str(source)})
    command = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
               "--disable-pip-version-check", "-w", str(tmp_path / "dist"),
               f"-Cbuild-dir={tmp_path / 'build'}", "-Ccmake.define.DNNL_OCL_INTEROP_ONEDNN=bundled",
               str(ROOT)]
    return command, env, flag


START = f"-- oneDNN bundle: building oneDNN {bundle.VERSION} for the OpenCL GPU runtime from "


@pytest.mark.needs_build_tools
@pytest.mark.timeout(600)
def test_a_onednn_build_under_pip_shows_on_the_terminal(tmp_path):
    """pip without -v keeps a build's output until it ends; a user at a
    terminal still sees, while oneDNN builds, that it builds, how long it
    usually takes and its progress: onednn_bundle.py writes those lines to
    the controlling terminal (here a pseudo-terminal, as under a shell)."""
    command, env, flag = _pip_wheel(tmp_path)
    master, slave = os.openpty()
    # setsid --ctty: a new session whose controlling terminal is the pty.
    proc = subprocess.Popen(["setsid", "--ctty", "--wait", *command], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=tmp_path, close_fds=True)
    os.close(slave)
    output, seen_while_building = b"", None
    deadline = time.monotonic() + 500
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer is gone
                    break
                if not chunk:
                    break
                output += chunk
            text = output.decode(errors="replace")
            if seen_while_building is None and START in text and "[1/2] 50%" in text:
                seen_while_building = text     # the fake build is still waiting
                flag.touch()
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.wait(timeout=60) != 0
    text = output.decode(errors="replace")
    assert seen_while_building is not None, text[-4000:]
    # The lines came while the build waited (it stopped for the flag, not
    # for want of it), and pip had shown none of the build's output yet:
    log = next((tmp_path / "cache").glob("onednn-*/build.log")).read_text()
    assert "fake oneDNN: the build stops here" in log, log[-4000:]
    assert "The CXX compiler identification" not in seen_while_building
    assert f"{bundle.USUAL_DURATION} the first time" in seen_while_building
    assert "-- oneDNN bundle: full output: " in seen_while_building
    assert "[1/2] 50%, 0 min so far, about 0 min left" in seen_while_building
    # After the failure pip shows all of the output, the error included.
    assert "The CXX compiler identification" in text
    assert "oneDNN bundle: error: step 'build' failed" in text


@pytest.mark.needs_build_tools
@pytest.mark.timeout(600)
def test_a_onednn_build_without_a_terminal_logs_to_stderr_only(tmp_path):
    """With no controlling terminal (CI, a setsid child) /dev/tty cannot be
    opened (ENXIO): the lines go to stderr only, and pip shows them with the
    failure."""
    command, env, flag = _pip_wheel(tmp_path)
    flag.touch()  # the fake build fails at once
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=500, start_new_session=True, stdin=subprocess.DEVNULL)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert START in output and "oneDNN bundle: error: step 'build' failed" in output
    assert "Traceback" not in output


def test_progress_line_estimates_the_time_left():
    assert bundle.progress_line(100, 400, 600.0) == "[100/400] 25%, 10 min so far, about 30 min left"
    assert bundle.progress_line(400, 400, 3000.0) == "[400/400] 100%, 50 min so far"


def test_log_writes_to_the_terminal_only_the_lines_asked_for(tmp_path, monkeypatch, capsys):
    terminal = io.StringIO()
    monkeypatch.setattr(bundle, "_terminal", terminal)
    bundle.log("quiet")
    bundle.log("loud", terminal=True)
    assert capsys.readouterr().err == "-- oneDNN bundle: quiet\n-- oneDNN bundle: loud\n"
    assert terminal.getvalue() == "-- oneDNN bundle: loud\n"


# --- the sdist ---------------------------------------------------------------

@pytest.mark.needs_build_tools
@pytest.mark.timeout(300)
def test_sdist_holds_the_tracked_files_and_nothing_else(tmp_path):
    """tools/sdist.py builds from an export of the tracked files: an
    untracked file in the checkout never reaches the sdist."""
    stray = ROOT / "python" / "dnnl_ocl_interop" / "untracked_stray_file.py"
    stray.write_text("raise ImportError\n")
    try:
        archive = sdist.build_sdist(tmp_path)
    finally:
        stray.unlink()
    with tarfile.open(archive) as tar:
        top = f"dnnl_ocl_interop-{dnnl.__version__}/"
        names = {m.name[len(top):] for m in tar.getmembers() if m.isfile()}
    tracked = set(sdist.tracked_files())
    assert names - tracked == {"PKG-INFO"}, sorted(names - tracked)
    needed = {"pyproject.toml", "CMakeLists.txt", "README.md", "cpp/module.cpp",
              "third_party/onednn_bundle.py", "third_party/onednn.cmake",
              "python/dnnl_ocl_interop/__init__.py", "python/dnnl_ocl_interop/py.typed"}
    assert needed <= names, sorted(needed - names)
    assert not any(n.startswith("build/") or n.endswith(".so") for n in names)


# --- the wheel repair's pieces ----------------------------------------------

def _wheel(path: Path, files: dict) -> Path:
    record = f"{path.name.split('-')[0]}-1.0.dist-info/RECORD"
    with zipfile.ZipFile(path, "w") as z:
        rows = []
        for name, data in files.items():
            z.writestr(name, data)
            rows.append(wheel_tools.record_row(name, data))
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows + [[record, "", ""]])
        z.writestr(record, text.getvalue())
    return path


def test_files_added_to_a_wheel_are_recorded(tmp_path):
    wheel = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"x = 1\n"})
    wheel_tools.add_to_wheel(wheel, {"demo/licenses/thing/COPYING": b"licence text\n",
                                     "demo/libthing.so.1": b"\x7fELF"})
    with zipfile.ZipFile(wheel) as z:
        assert z.read("demo/licenses/thing/COPYING") == b"licence text\n"
        assert z.getinfo("demo/libthing.so.1").external_attr >> 16 == 0o755
        rows = list(csv.reader(io.StringIO(z.read("demo-1.0.dist-info/RECORD").decode())))
        names = z.namelist()
        contents = {name: z.read(name) for name in names}
    assert rows[-1] == ["demo-1.0.dist-info/RECORD", "", ""]
    assert sorted(r[0] for r in rows) == sorted(names)
    for name, digest, size in rows[:-1]:
        assert [name, digest, size] == wheel_tools.record_row(name, contents[name])


def test_every_carried_library_needs_a_known_licence(tmp_path, monkeypatch):
    assert wheel_tools.library_name("libOpenCL-5519dec5.so.1.0.0") == "libOpenCL"
    assert wheel_tools.library_name("libOpenCL.so.1") == "libOpenCL"
    assert wheel_tools.carried_libraries([
        "dnnl_ocl_interop/_core.cpython-311-x86_64-linux-gnu.so", "dnnl_ocl_interop/libdnnl.so.3",
        "dnnl_ocl_interop/libdnnl_ocl_interop_emulation_layer.so", "dnnl_ocl_interop/libOpenCL.so.1",
        "dnnl_ocl_interop.libs/", "dnnl_ocl_interop/__init__.py"]) == ["libOpenCL.so.1", "libdnnl.so.3"]
    licence = tmp_path / "COPYING"
    licence.write_text("BSD-2-Clause\n")
    monkeypatch.setenv("OCL_ICD_LICENSE", str(licence))
    assert wheel_tools.licence_files(["libOpenCL.so.1", "libdnnl.so.3"]) == {
        "dnnl_ocl_interop/licenses/ocl-icd/COPYING": b"BSD-2-Clause\n"}
    with pytest.raises(SystemExit):
        wheel_tools.licence_files(["libfoo-0123abcd.so.2"])
    monkeypatch.setenv("OCL_ICD_LICENSE", str(tmp_path / "missing"))
    with pytest.raises(SystemExit):
        wheel_tools.licence_files(["libOpenCL.so.1"])


def test_the_loader_goes_into_the_package_under_its_own_name(tmp_path, monkeypatch):
    """The loader this process's _core links (oneDNN dlopens it by that
    name) is copied next to _core in the wheel, with its licence."""
    licence = tmp_path / "COPYING"
    licence.write_text("BSD-2-Clause\n")
    monkeypatch.setenv("OCL_ICD_LICENSE", str(licence))
    core = Path(dnnl._core.__file__)
    wheel = _wheel(tmp_path / "dnnl_ocl_interop-1.0-cp311-cp311-linux_x86_64.whl",
                   {f"dnnl_ocl_interop/{core.name}": core.read_bytes()})
    source = Path(wheel_tools.add_loader(wheel))
    with zipfile.ZipFile(wheel) as z:
        loader = z.read("dnnl_ocl_interop/libOpenCL.so.1")
        assert z.read("dnnl_ocl_interop/licenses/ocl-icd/COPYING") == b"BSD-2-Clause\n"
    assert loader == source.read_bytes()
    # the loader this process's _core runs on (the system's, or the copy of
    # it an installed wheel carries) is that library
    with open("/proc/self/maps") as maps:
        mapped = {line.split()[-1] for line in maps if "/libOpenCL.so" in line}
    assert mapped and all(Path(m).read_bytes() == loader for m in mapped), mapped


_ONE_LOADER = """
import dnnl_ocl_interop as dnnl
dnnl.emulation.ensure_device()
import pyopencl as cl
device = next(d for p in cl.get_platforms() if "Intel" in p.vendor for d in p.get_devices(cl.device_type.GPU))
engine = dnnl.ocl_interop.make_engine(device, cl.Context([device]))  # oneDNN's first call
with open("/proc/self/maps") as maps:
    print(sorted({line.split()[-1] for line in maps if "libOpenCL" in line and "pyopencl" not in line}))
"""


def test_one_loader_serves_the_module_and_onednn():
    """oneDNN opens libOpenCL.so.1 by name; it must get the loader _core
    links (the system's, or the copy an installed wheel carries next to
    _core), not a second one: a second loader, first used inside oneDNN's
    first make_engine, would bypass the layers there. pyopencl's own copy
    stays apart."""
    child = subprocess.run([sys.executable, "-c", _ONE_LOADER], capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    loaders = eval(child.stdout.strip().splitlines()[-1])
    assert len(loaders) == 1, loaders
    package = Path(dnnl.__file__).parent
    if (package / "libOpenCL.so.1").exists():  # an installed repaired wheel
        assert Path(loaders[0]).parent == package, loaders


def _fake_site(tmp_path: Path, core: str) -> Path:
    package = tmp_path / "site" / "dnnl_ocl_interop"
    package.mkdir(parents=True)
    shutil.copy(core, package / "_core.cpython-311-x86_64-linux-gnu.so")
    return tmp_path / "site"


def test_ldd_check_accepts_a_module_needing_only_the_policy(tmp_path, capsys):
    """The emulation layer links only the C and C++ runtimes (the policy)."""
    site = _fake_site(tmp_path, dnnl.emulation.layer_path())
    wheel_tools.ldd_check(site, "manylinux_2_34_x86_64")
    assert "[manylinux policy]" in capsys.readouterr().out


def test_ldd_check_refuses_a_library_outside_the_package_and_the_policy(tmp_path, capsys):
    """_core copied alone: libdnnl is not beside it, nor is the OpenCL
    loader a repaired wheel grafts (an unrepaired build finds the system's,
    outside the policy)."""
    site = _fake_site(tmp_path, dnnl._core.__file__)
    with pytest.raises(SystemExit):
        wheel_tools.ldd_check(site, "manylinux_2_34_x86_64")
    err = capsys.readouterr().err
    assert "libdnnl.so.3 => not found" in err and "libOpenCL" in err
