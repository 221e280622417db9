"""The bundled-oneDNN recipe (third_party/onednn_bundle.py and onednn.cmake),
tested without the network and without building oneDNN: cache location and
keys, the download's hash check and its fast failure offline, archive
extraction, reuse of a cached build, and the configure step's verdicts on
unsuitable installs."""

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
bundle = load_script("onednn_bundle", ROOT / "third_party" / "onednn_bundle.py")


def _archive(path: Path, members: dict, top="oneDNN-9.9.9") -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return path


def test_pinned_release_is_the_upstream_tag_archive():
    assert bundle.URL == ("https://github.com/uxlfoundation/oneDNN/archive/refs/tags/"
                          f"v{bundle.VERSION}.tar.gz")
    assert len(bundle.SHA256) == 64 and int(bundle.SHA256, 16) >= 0
    assert "-DONEDNN_GPU_RUNTIME=OCL" in bundle.BASE_OPTIONS
    assert "-DONEDNN_BUILD_GRAPH=ON" in bundle.BASE_OPTIONS
    assert "-DONEDNN_CPU_RUNTIME=NONE" in bundle.BASE_OPTIONS


def test_cache_root_precedence(tmp_path):
    assert bundle.cache_root({"DNNL_OCL_INTEROP_CACHE": str(tmp_path / "c"),
                              "XDG_CACHE_HOME": "/x"}) == tmp_path / "c"
    assert bundle.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "dnnl_ocl_interop"
    assert bundle.cache_root({}) == Path.home() / ".cache" / "dnnl_ocl_interop"


def test_cache_key_follows_version_options_and_compiler():
    base = bundle.BuildSpec("3.13.1", bundle.BASE_OPTIONS, "/usr/bin/g++ 12.2.0")
    same = bundle.BuildSpec("3.13.1", tuple(bundle.BASE_OPTIONS), "/usr/bin/g++ 12.2.0")
    assert base.key == same.key and base.key.startswith("onednn-3.13.1-")
    others = [
        bundle.BuildSpec("3.13.0", bundle.BASE_OPTIONS, "/usr/bin/g++ 12.2.0"),
        bundle.BuildSpec("3.13.1", bundle.BASE_OPTIONS + ("-DX=1",), "/usr/bin/g++ 12.2.0"),
        bundle.BuildSpec("3.13.1", bundle.BASE_OPTIONS, "/usr/bin/clang++ 14.0.6"),
    ]
    assert len({base.key, *(o.key for o in others)}) == 4


def test_extra_options_come_from_the_environment():
    assert bundle.extra_options({}) == ()
    assert bundle.extra_options({bundle.EXTRA_OPTIONS_ENV: "-DA=1  -DB=2"}) == ("-DA=1", "-DB=2")


@pytest.mark.needs_build_tools
def test_compiler_identity_resolves_the_compiler():
    identity = bundle.compiler_identity("c++")
    path, version = identity.rsplit(" ", 1)
    assert os.path.isabs(path) and os.path.realpath(path) == path
    assert version[0].isdigit()


def test_download_checks_the_hash(tmp_path):
    archive = _archive(tmp_path / "src.tar.gz", {"CMakeLists.txt": b"x"})
    digest = bundle.sha256_of(archive)
    dest = tmp_path / "cache" / "a.tar.gz"
    assert bundle.download_archive(archive.as_uri(), digest, dest) == dest
    assert dest.read_bytes() == archive.read_bytes()
    # A second call reuses the verified file (the source may be gone).
    archive.unlink()
    assert bundle.download_archive(archive.as_uri(), digest, dest) == dest


def test_download_with_the_wrong_hash_is_refused_and_removed(tmp_path):
    archive = _archive(tmp_path / "src.tar.gz", {"CMakeLists.txt": b"x"})
    dest = tmp_path / "cache" / "a.tar.gz"
    with pytest.raises(bundle.BundleError, match="SHA-256"):
        bundle.download_archive(archive.as_uri(), "0" * 64, dest)
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_download_fails_fast_offline_naming_the_source_variable(tmp_path):
    # Port 9 (discard) on loopback: nothing listens, the connection is refused.
    started = time.monotonic()
    with pytest.raises(bundle.BundleError) as info:
        bundle.download_archive("http://127.0.0.1:9/oneDNN.tar.gz", bundle.SHA256,
                                tmp_path / "a.tar.gz", timeout=5)
    assert time.monotonic() - started < 10
    assert "ONEDNN_SOURCE_DIR" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_extract_returns_the_top_directory(tmp_path):
    archive = _archive(tmp_path / "a.tar.gz", {"CMakeLists.txt": b"hello", "src/x.cpp": b"y"})
    top = bundle.extract_archive(archive, tmp_path / "out")
    assert top == tmp_path / "out" / "oneDNN-9.9.9"
    assert (top / "CMakeLists.txt").read_bytes() == b"hello"


def test_extract_refuses_paths_outside_the_tree(tmp_path):
    archive = _archive(tmp_path / "a.tar.gz", {"../evil": b"x"}, top="")
    with pytest.raises(bundle.BundleError, match="unsafe"):
        bundle.extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "evil").exists()


def test_source_version(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(
        'set(PROJECT_NAME "oneDNN")\nset(PROJECT_VERSION "3.13.1")\n')
    assert bundle.source_version(tmp_path) == "3.13.1"
    with pytest.raises(bundle.BundleError, match="not a oneDNN source tree"):
        bundle.source_version(tmp_path / "missing")
    (tmp_path / "CMakeLists.txt").write_text("project(other)\n")
    with pytest.raises(bundle.BundleError, match="not a oneDNN source tree"):
        bundle.source_version(tmp_path)


def test_a_cached_build_is_reused_without_building(tmp_path, monkeypatch):
    env = {"DNNL_OCL_INTEROP_CACHE": str(tmp_path)}
    spec = bundle.make_spec("c++")
    prefix = spec.entry(tmp_path) / "install"
    prefix.mkdir(parents=True)
    assert bundle.cached_prefix(spec, tmp_path) is None  # no stamp: incomplete
    (prefix / bundle.COMPLETE_STAMP).write_text(json.dumps({"version": spec.version}))

    def no_build(*args, **kwargs):
        raise AssertionError("a cached build must not be rebuilt")

    monkeypatch.setattr(bundle, "build", no_build)
    monkeypatch.setattr(bundle, "download_archive", no_build)
    assert bundle.ensure("c++", env) == prefix


def test_status_command_reports_the_cache(tmp_path):
    env = dict(os.environ, DNNL_OCL_INTEROP_CACHE=str(tmp_path))
    env.pop("ONEDNN_SOURCE_DIR", None)
    env.pop(bundle.EXTRA_OPTIONS_ENV, None)
    env.pop("CXX", None)  # status's default compiler is $CXX, else c++ (as below)
    script = str(ROOT / "third_party" / "onednn_bundle.py")
    missing = subprocess.run([sys.executable, script, "status"], env=env,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "not built" in missing.stdout
    assert bundle.USUAL_DURATION in missing.stdout
    prefix = bundle.make_spec("c++").entry(tmp_path) / "install"
    prefix.mkdir(parents=True)
    (prefix / bundle.COMPLETE_STAMP).write_text("{}")
    found = subprocess.run([sys.executable, script, "status"], env=env,
                           capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.strip() == str(prefix)


# The configure step's verdicts (onednn.cmake) on oneDNN installs that cannot serve.

def _fake_onednn(prefix: Path, version=(3, 13, 1), gpu="DNNL_RUNTIME_OCL", graph=True) -> Path:
    include = prefix / "include" / "oneapi" / "dnnl"
    include.mkdir(parents=True)
    major, minor, patch = version
    (include / "dnnl_version.h").write_text(
        f"#define DNNL_VERSION_MAJOR {major}\n#define DNNL_VERSION_MINOR {minor}\n"
        f"#define DNNL_VERSION_PATCH {patch}\n")
    (include / "dnnl_config.h").write_text(
        f"#define DNNL_GPU_RUNTIME {gpu}\n" + ("#define ONEDNN_BUILD_GRAPH\n" if graph else ""))
    return prefix


def _configure(tmp_path: Path, *defines: str) -> subprocess.CompletedProcess:
    import pybind11
    build = tmp_path / "build"
    return subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
         f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
         f"-DPython_EXECUTABLE={sys.executable}", *defines],
        capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if k != "ONEDNN_SOURCE_DIR"})


@pytest.mark.needs_build_tools
@pytest.mark.parametrize("fake, reason", [
    (dict(version=(3, 12, 4)), "older than 3.13"),
    (dict(gpu="DNNL_RUNTIME_NONE"), "not built for the OpenCL GPU runtime"),
    (dict(graph=False), "without the graph component"),
], ids=["too-old", "no-ocl-runtime", "no-graph"])
def test_system_mode_refuses_an_unsuitable_onednn(tmp_path, fake, reason):
    prefix = _fake_onednn(tmp_path / "prefix", **fake)
    result = _configure(tmp_path, "-DDNNL_OCL_INTEROP_ONEDNN=system",
                        f"-DCMAKE_PREFIX_PATH={prefix}")
    assert result.returncode != 0
    assert reason in result.stderr and "DNNL_OCL_INTEROP_ONEDNN=system" in result.stderr


@pytest.mark.needs_build_tools
def test_system_mode_passes_the_minimum_version(tmp_path):
    """3.13.0, the oldest release the sources compile against, passes the
    version check; this stand-in then fails at find_package, having headers
    and no CMake package."""
    prefix = _fake_onednn(tmp_path / "prefix", version=(3, 13, 0))
    result = _configure(tmp_path, "-DDNNL_OCL_INTEROP_ONEDNN=system",
                        f"-DCMAKE_PREFIX_PATH={prefix}")
    assert result.returncode != 0
    assert "older than" not in result.stderr
    assert 'package configuration file provided by "dnnl"' in result.stderr.replace("\n  ", " ")


@pytest.mark.needs_build_tools
def test_an_unknown_mode_is_refused(tmp_path):
    result = _configure(tmp_path, "-DDNNL_OCL_INTEROP_ONEDNN=maybe")
    assert result.returncode != 0 and "use auto, system or bundled" in result.stderr


@pytest.mark.needs_build_tools
def test_auto_mode_passes_over_an_unsuitable_onednn(tmp_path):
    """auto falls back to the bundled build, which here is pointed at a
    directory that is no oneDNN tree: it fails at once, saying so."""
    prefix = _fake_onednn(tmp_path / "prefix", gpu="DNNL_RUNTIME_NONE")
    not_onednn = tmp_path / "empty"
    not_onednn.mkdir()
    result = _configure(tmp_path, f"-DCMAKE_PREFIX_PATH={prefix}",
                        f"-DONEDNN_SOURCE_DIR={not_onednn}")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "not built for the OpenCL GPU runtime" in output
    assert "building the bundled one" in output
    assert f"{not_onednn} is not a oneDNN source tree" in output
    assert "The bundled oneDNN build failed" in output
