"""Builds a free-threaded CPython 3.13 (3.13t) and a virtual environment for
it with pyopencl and the package's test dependencies, cached outside the
checkout (docs/building.md, "A free-threaded Python").

Command line::

    python3 tools/free_threaded_python.py status          # exit 0: interpreter and wheels cached
    python3 tools/free_threaded_python.py ensure [--venv DIR]

``ensure`` does what is missing, in order, and nothing when all is there:

1. the interpreter: the upstream tarball of Debian 13's (trixie) ``python3.13``
   source package, fetched with ``apt-get source --download-only`` through a
   ``deb-src`` line of its own (sources only: no binary package comes from
   trixie), checked against the SHA-256 pinned below, configured with
   ``--disable-gil``, built with ``make`` under ``nice`` and installed into
   the cache entry (about 5 minutes on 2 cores);
2. wheels for it of what PyPI has no ``cp313t`` wheel for: pyopencl (from
   its sdist) and siphash24 (pytools' dependency; its sdist's meson build
   clones two subprojects from GitHub, so they are placed into its
   ``subprojects/`` first: checkouts named by ``C_SIPHASH_SOURCE_DIR`` and
   ``C_STDAUX_SOURCE_DIR``, else cloned from GitHub);
3. a virtual environment (``--venv``, default ``ENTRY/venv``) with those
   wheels, NumPy and the package's ``emulation`` and ``test`` extras
   (binary wheels only). The package itself is installed into it by
   ``PYTHON=DIR/bin/python bash .ci/setup``.

Needs Python 3.11 or newer (``tomllib``) to run, apt for a fresh machine's
Debian packages (``sudo`` when not root) and PyPI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "third_party"))
import onednn_bundle as bundle  # noqa: E402  (the cache's location, locks, archives: one home)

# The interpreter: Debian 13's python3.13 source package, its upstream
# tarball (Debian's patches are not applied). The hash is the tarball's as
# Debian's Sources index lists it; python.org's Python-3.13.5.tar.xz is the
# same file.
PYTHON_VERSION = "3.13.5"
DEBIAN_SOURCE_PACKAGE = "python3.13"
DEBIAN_SUITE = "trixie"
ORIG_TARBALL = f"python3.13_{PYTHON_VERSION}.orig.tar.xz"
ORIG_SHA256 = "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640"
# A tarball given instead of the apt download (an offline machine).
SOURCE_ARCHIVE_ENV = "PYTHON_SOURCE_ARCHIVE"
APT_SOURCES_FILE = Path("/etc/apt/sources.list.d/dnnl-ocl-interop-trixie-src.sources")
APT_SOURCES = f"""\
# tools/free_threaded_python.py: the source package of Debian 13's python3.13,
# whose upstream tarball builds a free-threaded CPython. Sources only: no
# binary package comes from {DEBIAN_SUITE}.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: {DEBIAN_SUITE}
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# Debian 12 packages: CPython's optional modules the suite and pip need
# (ssl, ctypes, zlib, bz2, lzma, sqlite3, readline, uuid), and pyopencl's
# build (OpenCL headers and the ICD loader, as .ci/setup installs).
DEBIAN_PACKAGES = ("build-essential", "pkg-config", "git", "libssl-dev", "libffi-dev", "zlib1g-dev",
                   "libbz2-dev", "liblzma-dev", "libsqlite3-dev", "libreadline-dev", "uuid-dev",
                   "opencl-headers", "ocl-icd-opencl-dev")
# What the interpreter must import after the build (a missing -dev package
# makes configure skip a module without failing).
REQUIRED_MODULES = ("ssl", "ctypes", "zlib", "bz2", "lzma", "sqlite3", "readline", "_uuid", "hashlib")
# Measured here (2026-12-06, beside another build): interpreter 4.7 min, wheels 1.3, environment 0.9.
USUAL_DURATION = "about 7 minutes on a 2-core machine"

# PyPI has no cp313t wheel of these: built here from their sdists.
PYOPENCL_VERSION = "2026.1.4"
SIPHASH24_VERSION = "1.9"
SIPHASH24_SHA256 = "0aae53d2074cdddd51d36fac05efb70aa0724654f871c3b1420ca46167b143af"
# siphash24's meson subprojects (the wraps in its sdist's subprojects/):
# wrap name -> (environment variable naming a checkout, repository, tag).
SUBPROJECTS = {
    "libcsiphash-1": ("C_SIPHASH_SOURCE_DIR", "https://github.com/c-util/c-siphash", "v1.1.0"),
    "libcstdaux-1": ("C_STDAUX_SOURCE_DIR", "https://github.com/c-util/c-stdaux", "v1.5.0"),
}
PYPI_SIMPLE = "https://pypi.org/simple"
COMPLETE_STAMP = bundle.COMPLETE_STAMP
VENV_STAMP = "dnnl_ocl_interop-venv.json"
NICE = ("nice", "-n", "10")  # another long build (oneDNN) may share the machine


class BuildError(RuntimeError):
    """A step failed; the message says which and where its output is."""


def log(message: str) -> None:
    print(f"-- free-threaded Python: {message}", file=sys.stderr, flush=True)


def entry_dir(root: Path | None = None) -> Path:
    return (root or bundle.cache_root()) / f"python-3.13t-{PYTHON_VERSION}"


def interpreter(entry: Path) -> Path:
    return entry / "install" / "bin" / "python3.13t"


def wheels(entry: Path) -> list[Path]:
    """The cached wheels, one per package, or fewer when some are missing."""
    found = []
    for name, version in (("pyopencl", PYOPENCL_VERSION), ("siphash24", SIPHASH24_VERSION)):
        found += sorted((entry / "wheels").glob(f"{name}-{version}-cp313-cp313t-*.whl"))[:1]
    return found


def is_built(entry: Path) -> bool:
    return (entry / "install" / COMPLETE_STAMP).is_file() and len(wheels(entry)) == 2


def run(name: str, command: Sequence[str], logfile: Path, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> None:
    """Runs one step with its output appended to ``logfile``."""
    with logfile.open("ab") as out:
        out.write(f"\n$ {' '.join(map(str, command))}\n".encode())
        out.flush()
        code = subprocess.run(list(map(str, command)), stdout=out, stderr=subprocess.STDOUT,
                              cwd=cwd, env=env).returncode
    if code != 0:
        raise BuildError(f"step '{name}' failed (exit {code}); its output is in {logfile}")


def as_root(command: Sequence[str]) -> list[str]:
    if os.geteuid() == 0:
        return list(command)
    if not shutil.which("sudo"):
        raise BuildError(f"'{' '.join(command)}' needs root and sudo was not found")
    return ["sudo", *command]


def install_debian_packages(logfile: Path) -> None:
    missing = [p for p in DEBIAN_PACKAGES
               if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if missing:
        log(f"installing Debian packages: {' '.join(missing)}")
        run("apt-get update", as_root(["apt-get", "update", "-qq"]), logfile)
        run("apt-get install", as_root(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install",
                                        "-y", "-qq", *missing]), logfile)


# --- the interpreter ----------------------------------------------------------

def source_archive(entry: Path, logfile: Path) -> Path:
    """CPython's source tarball: ``$PYTHON_SOURCE_ARCHIVE``, or one already
    downloaded, or Debian's through apt; checked against the pinned hash."""
    given = os.environ.get(SOURCE_ARCHIVE_ENV)
    downloads = entry.parent / "downloads"
    archive = Path(given).expanduser() if given else downloads / ORIG_TARBALL
    if not given and not (archive.is_file() and bundle.sha256_of(archive) == ORIG_SHA256):
        if not APT_SOURCES_FILE.is_file() or APT_SOURCES_FILE.read_text() != APT_SOURCES:
            log(f"adding {APT_SOURCES_FILE} (deb-src {DEBIAN_SUITE})")
            subprocess.run(as_root(["tee", str(APT_SOURCES_FILE)]), input=APT_SOURCES.encode(),
                           stdout=subprocess.DEVNULL, check=True)
        # Only this file's index is refreshed.
        run("apt-get update (deb-src trixie)",
            as_root(["apt-get", "update", "-qq", f"-o=Dir::Etc::sourcelist={APT_SOURCES_FILE}",
                     "-o=Dir::Etc::sourceparts=-", "-o=APT::Get::List-Cleanup=0"]), logfile)
        fetch = downloads / "apt"
        shutil.rmtree(fetch, ignore_errors=True)
        fetch.mkdir(parents=True)
        log(f"downloading Debian's {DEBIAN_SOURCE_PACKAGE} source package ({DEBIAN_SUITE})")
        try:
            run("apt-get source", ["apt-get", "source", "--download-only", DEBIAN_SOURCE_PACKAGE],
                logfile, cwd=fetch)
        except BuildError as exc:
            raise BuildError(f"{exc}. Without Debian's archive, give CPython {PYTHON_VERSION}'s source "
                             f"tarball: {SOURCE_ARCHIVE_ENV}=/path/to/Python-{PYTHON_VERSION}.tar.xz") from exc
        if not (fetch / ORIG_TARBALL).is_file():
            found = ", ".join(p.name for p in fetch.iterdir())
            raise BuildError(f"apt-get source gave {found}, not {ORIG_TARBALL}: Debian's "
                             f"{DEBIAN_SOURCE_PACKAGE} moved to another upstream release; update the "
                             f"pin in tools/free_threaded_python.py")
        (fetch / ORIG_TARBALL).replace(archive)
        shutil.rmtree(fetch)
    if not archive.is_file():
        raise BuildError(f"{SOURCE_ARCHIVE_ENV}={given}: no such file")
    actual = bundle.sha256_of(archive)
    if actual != ORIG_SHA256:
        raise BuildError(f"{archive} has SHA-256 {actual}, not the pinned {ORIG_SHA256} "
                         f"(CPython {PYTHON_VERSION}): refusing to build it")
    return archive


def build_interpreter(entry: Path) -> Path:
    """Configures (``--disable-gil``), builds and installs CPython into
    ``entry/install``, then checks the modules the suite needs."""
    prefix, build_dir, logfile = entry / "install", entry / "build", entry / "build.log"
    entry.mkdir(parents=True, exist_ok=True)
    logfile.write_text(f"free-threaded CPython {PYTHON_VERSION}\n")
    install_debian_packages(logfile)
    archive = source_archive(entry, logfile)
    for stale in (prefix, build_dir):
        shutil.rmtree(stale, ignore_errors=True)
    try:
        source = bundle.extract_archive(archive, entry / "src")
    except bundle.BundleError as exc:
        raise BuildError(str(exc)) from exc
    build_dir.mkdir()
    log(f"building CPython {PYTHON_VERSION} without the GIL from {archive.name} (with pyopencl's wheels: "
        f"{USUAL_DURATION}), then reused from {entry}")
    log(f"full output: {logfile}")
    started = time.monotonic()
    run("configure", [*NICE, source / "configure", f"--prefix={prefix}", "--disable-gil",
                      "--with-ensurepip=install"], logfile, cwd=build_dir)
    run("make", [*NICE, "make", f"-j{os.cpu_count() or 1}"], logfile, cwd=build_dir)
    run("make install", [*NICE, "make", "install"], logfile, cwd=build_dir)
    python = interpreter(entry)
    check = ("import sys, importlib.util; missing = [m for m in sys.argv[1:] if not importlib.util.find_spec(m)]; "
             "assert not missing, f'modules not built: {missing}'; "
             "assert not sys._is_gil_enabled(), 'the GIL is enabled'")
    run("check", [python, "-c", check, *REQUIRED_MODULES], logfile)
    minutes = (time.monotonic() - started) / 60
    stamp = {"python": PYTHON_VERSION, "configure": ["--disable-gil"], "source": str(archive),
             "sha256": ORIG_SHA256, "minutes": round(minutes, 1)}
    (prefix / COMPLETE_STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    shutil.rmtree(build_dir)
    shutil.rmtree(entry / "src")
    log(f"interpreter done in {minutes:.0f} minutes: {python}")
    return python


# --- wheels pyopencl has no cp313t wheel of -------------------------------------

def pypi_sdist(name: str, version: str, sha256: str, dest_dir: Path) -> Path:
    """The sdist of ``name==version`` from PyPI's simple API, hash checked
    (pip cannot download it without building its metadata, which is the
    step that needs the subprojects)."""
    filename = f"{name}-{version}.tar.gz"
    dest = dest_dir / filename
    if dest.is_file() and bundle.sha256_of(dest) == sha256:
        return dest
    index = os.environ.get("PIP_INDEX_URL", PYPI_SIMPLE).rstrip("/")
    page = f"{index}/{name}/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            files = json.load(response)["files"]
        url = urllib.parse.urljoin(page, next(f["url"] for f in files if f["filename"] == filename))
        dest_dir.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
            shutil.copyfileobj(response, out)
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise BuildError(f"could not download {filename} from {page}: {exc!r}") from exc
    actual = bundle.sha256_of(dest)
    if actual != sha256:
        dest.unlink()
        raise BuildError(f"{filename} has SHA-256 {actual}, not the pinned {sha256}")
    return dest


def subproject_source(wrap: str, work: Path, logfile: Path) -> Path:
    """A checkout of the subproject at its tag: the one its variable names
    (checked out at the tag when it is a git repository), else a clone."""
    variable, repository, tag = SUBPROJECTS[wrap]
    given = os.environ.get(variable)
    if given:
        path = Path(given).expanduser()
        if not (path / "meson.build").is_file():
            raise BuildError(f"{variable}={given} is not a checkout of {repository} (no meson.build)")
        if (path / ".git").exists():
            head = subprocess.run(["git", "-C", str(path), "describe", "--tags", "--exact-match"],
                                  capture_output=True, text=True).stdout.strip()
            if head != tag:
                raise BuildError(f"{variable}={given} is at '{head or 'no tag'}', not {tag}: "
                                 f"git -C {given} checkout {tag}")
        return path
    clone = work / wrap
    try:
        run(f"clone {repository}", ["git", "clone", "--quiet", "--depth", "1", "--branch", tag,
                                    repository, clone], logfile,
            env=dict(os.environ, GIT_TERMINAL_PROMPT="0"))
    except BuildError as exc:
        raise BuildError(f"{exc}. Without network access to GitHub, give a checkout of {repository} "
                         f"at {tag}: {variable}=/path/to/checkout") from exc
    return clone


def build_wheels(entry: Path, python: Path) -> None:
    """pyopencl and siphash24 built for the interpreter into ``entry/wheels``;
    everything else they need at build time as binary wheels."""
    out, work, logfile = entry / "wheels", entry / "wheels-build", entry / "wheels.log"
    logfile.write_text(f"wheels for CPython {PYTHON_VERSION} without the GIL\n")
    install_debian_packages(logfile)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pip_wheel = [*NICE, python, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
                 "--only-binary", ":all:", "-w", out]
    started = time.monotonic()
    log(f"building siphash24 {SIPHASH24_VERSION} for it (output: {logfile})")
    sdist = pypi_sdist("siphash24", SIPHASH24_VERSION, SIPHASH24_SHA256, entry.parent / "downloads")
    try:
        source = bundle.extract_archive(sdist, work / "siphash24")
    except bundle.BundleError as exc:
        raise BuildError(str(exc)) from exc
    for wrap in SUBPROJECTS:
        shutil.copytree(subproject_source(wrap, work, logfile), source / "subprojects" / wrap,
                        ignore=shutil.ignore_patterns(".git"))
    run("siphash24 wheel", [*pip_wheel, source], logfile)
    log(f"building pyopencl {PYOPENCL_VERSION} for it")
    run("pyopencl wheel", [*pip_wheel, "--no-binary", "pyopencl", f"pyopencl=={PYOPENCL_VERSION}"], logfile)
    shutil.rmtree(work)
    if len(wheels(entry)) != 2:
        raise BuildError(f"the wheels are not all in {out} after their build; see {logfile}")
    log(f"wheels done in {(time.monotonic() - started) / 60:.1f} minutes: {out}")


# --- the virtual environment ---------------------------------------------------

def requirements() -> list[str]:
    """pyopencl at the version built, the package's dependencies and its
    ``emulation`` and ``test`` extras (pyproject.toml: their one home)."""
    import tomllib  # here: the tests import this file on Python 3.10 too

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [f"pyopencl=={PYOPENCL_VERSION}", *project["dependencies"], *extras["emulation"], *extras["test"]]


def ensure_venv(entry: Path, python: Path, venv: Path) -> Path:
    wanted = {"python": str(python), "requirements": requirements(), "wheels": [p.name for p in wheels(entry)]}
    stamp = venv / VENV_STAMP
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        log(f"using the virtual environment {venv}")
        return venv / "bin" / "python"
    logfile = entry / "venv.log"
    logfile.write_text(f"virtual environment {venv}\n")
    if not (venv / "bin" / "python").exists():
        run("venv", [python, "-m", "venv", venv], logfile)
    log(f"installing pyopencl, NumPy and the test dependencies into {venv} (output: {logfile})")
    run("pip install", [venv / "bin" / "python", "-m", "pip", "install", "--disable-pip-version-check",
                        "--only-binary", ":all:", "--find-links", entry / "wheels", *wanted["requirements"]],
        logfile)
    stamp.write_text(json.dumps(wanted, indent=1) + "\n")
    log(f"virtual environment ready: {venv}")
    return venv / "bin" / "python"


def ensure(venv: Path | None) -> Path:
    entry = entry_dir()
    with bundle.locked(entry.parent / f"{entry.name}.lock"):
        python = interpreter(entry)
        if (entry / "install" / COMPLETE_STAMP).is_file():
            log(f"using the cached interpreter {python}")
        else:
            python = build_interpreter(entry)
        if len(wheels(entry)) != 2:
            build_wheels(entry, python)
        return ensure_venv(entry, python, venv or entry / "venv")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["status", "ensure"])
    parser.add_argument("--venv", type=Path, help="the virtual environment to make or check "
                        "(default: venv/ in the cache entry)")
    args = parser.parse_args(argv)
    if args.command == "status":
        entry = entry_dir()
        print(interpreter(entry) if is_built(entry) else f"not built: {entry} (a build takes {USUAL_DURATION})")
        return 0 if is_built(entry) else 1
    try:
        print(ensure(args.venv.resolve() if args.venv else None))
    except BuildError as exc:
        print(f"free-threaded Python: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
