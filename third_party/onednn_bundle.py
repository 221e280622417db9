"""Builds the pinned oneDNN release for the package's bundled mode.

No package index carries oneDNN built for the OpenCL GPU runtime, so the
package's build makes one when none is installed (``third_party/onednn.cmake``
calls ``ensure``). The result is kept in a cache directory outside the
checkout, keyed by oneDNN version, build options and compiler, so a second
clone, an editable rebuild or CI reuses it instead of building again.

Source of the build: a local oneDNN checkout named by ``ONEDNN_SOURCE_DIR``,
otherwise upstream's release archive of the pinned tag, checked against the
SHA-256 below before anything is extracted.

Command line::

    python3 third_party/onednn_bundle.py status   # exit 0: a build is cached
    python3 third_party/onednn_bundle.py ensure [--prefix-file F] [--compiler CXX]

Only the standard library is used: this runs inside pip's isolated build
environment too.

pip hides a build's output unless run with ``-v``; ``ensure`` therefore also
writes the lines of a real build (start with the usual duration, progress
with the time left, end) to the controlling terminal when stderr is not it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Iterator, Sequence

# The pinned upstream release. The hash is that of the archive at URL (it is
# also what `git archive --prefix=oneDNN-3.13.1/ v3.13.1 | gzip -n` gives).
VERSION = "3.13.1"
URL = f"https://github.com/uxlfoundation/oneDNN/archive/refs/tags/v{VERSION}.tar.gz"
SHA256 = "911275081f9cc3406cb3e7754a0f7a8200adcbff09439d6cde0a1e543f343c5b"

# What the package needs of oneDNN: the OpenCL GPU runtime and the graph
# component; nothing for the CPU; no tests or examples. Experimental
# profiling lets a stream on the user's profiling-enabled queue report
# per-primitive device times (dnnl.profiling); its cost when no queue
# profiles is measured in docs/benchmarks.md.
BASE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DONEDNN_GPU_RUNTIME=OCL",
    "-DONEDNN_CPU_RUNTIME=NONE",
    "-DONEDNN_BUILD_GRAPH=ON",
    "-DONEDNN_EXPERIMENTAL_PROFILING=ON",
    "-DONEDNN_BUILD_TESTS=OFF",
    "-DONEDNN_BUILD_EXAMPLES=OFF",
    "-DONEDNN_BUILD_DOC=OFF",
    "-DCMAKE_INSTALL_LIBDIR=lib",
)
# Extra CMake options for a development build (e.g.
# "-DONEDNN_ENABLE_PRIMITIVE_GPU_ISA=XEHP"); they are part of the cache key.
EXTRA_OPTIONS_ENV = "DNNL_OCL_INTEROP_ONEDNN_OPTIONS"
SOURCE_ENV = "ONEDNN_SOURCE_DIR"
CACHE_ENV = "DNNL_OCL_INTEROP_CACHE"
USUAL_DURATION = "about 50 minutes on a 2-core machine"
DOWNLOAD_TIMEOUT_S = 20
COMPLETE_STAMP = "dnnl_ocl_interop-build.json"


class BundleError(RuntimeError):
    """A step of the bundled build failed; the message says which and where."""


def cache_root(environ: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    """``$DNNL_OCL_INTEROP_CACHE``, else ``$XDG_CACHE_HOME/dnnl_ocl_interop``,
    else ``~/.cache/dnnl_ocl_interop``."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV]).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "dnnl_ocl_interop"


def compiler_identity(compiler: str) -> str:
    """The resolved compiler path and its version: builds made by different
    compilers do not share a cache entry."""
    path = shutil.which(compiler) or compiler
    real = os.path.realpath(path)
    try:
        version = subprocess.run([real, "-dumpfullversion", "-dumpversion"],
                                 capture_output=True, text=True, timeout=30).stdout.split()
    except OSError as exc:
        raise BundleError(f"the C++ compiler '{compiler}' cannot be run: {exc}") from exc
    return f"{real} {version[0] if version else 'unknown'}"


def source_version(source_dir: Path) -> str:
    """The version a oneDNN source tree declares in its CMakeLists.txt."""
    lists = source_dir / "CMakeLists.txt"
    try:
        text = lists.read_text(errors="replace")
    except OSError as exc:
        raise BundleError(f"{source_dir} is not a oneDNN source tree "
                          f"(cannot read {lists}: {exc.strerror})") from exc
    match = re.search(r'set\(PROJECT_VERSION\s+"([0-9.]+)"\)', text)
    if not match or "oneDNN" not in text:
        raise BundleError(f"{source_dir} is not a oneDNN source tree "
                          f"(no oneDNN PROJECT_VERSION in {lists})")
    return match.group(1)


@dataclasses.dataclass(frozen=True)
class BuildSpec:
    """What identifies one bundled build: equal specs share one cache entry."""

    version: str
    options: tuple[str, ...]
    compiler: str

    @property
    def key(self) -> str:
        blob = json.dumps(dataclasses.asdict(self), sort_keys=True).encode()
        return f"onednn-{self.version}-{hashlib.sha256(blob).hexdigest()[:12]}"

    def entry(self, root: Path) -> Path:
        return root / self.key


def extra_options(environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[str, ...]:
    return tuple(environ.get(EXTRA_OPTIONS_ENV, "").split())


def make_spec(compiler: str, version: str = VERSION,
              extra: Sequence[str] = ()) -> BuildSpec:
    return BuildSpec(version=version, options=BASE_OPTIONS + tuple(extra),
                     compiler=compiler_identity(compiler))


def cached_prefix(spec: BuildSpec, root: Path) -> Path | None:
    """The install prefix of a complete cached build of ``spec``, or None."""
    prefix = spec.entry(root) / "install"
    return prefix if (prefix / COMPLETE_STAMP).is_file() else None


# --- the source --------------------------------------------------------------

def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_archive(url: str, sha256: str, dest: Path,
                     timeout: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Downloads ``url`` to ``dest`` (reusing a file already there when its
    hash is right) and checks its SHA-256. Fails fast, naming ONEDNN_SOURCE_DIR,
    when the network is not there."""
    if dest.is_file() and sha256_of(dest) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + f".part{os.getpid()}")
    log(f"downloading {url}", terminal=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise BundleError(
            f"could not download oneDNN {VERSION} from {url} ({reason}). Without network, "
            f"build from a local checkout of oneDNN's v{VERSION} tag: set {SOURCE_ENV}=/path/to/oneDNN "
            f"(environment, or -Ccmake.define.{SOURCE_ENV}=... for pip)") from exc
    actual = sha256_of(partial)
    if actual != sha256:
        partial.unlink(missing_ok=True)
        raise BundleError(f"the archive from {url} has SHA-256 {actual}, not the pinned "
                          f"{sha256} (third_party/onednn_bundle.py): refusing to build it")
    partial.replace(dest)
    return dest


def extract_archive(archive: Path, into: Path) -> Path:
    """Extracts the archive's single top-level directory into ``into``."""
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        for m in members:
            if m.name.startswith("/") or ".." in Path(m.name).parts or m.islnk() and ".." in m.linkname:
                raise BundleError(f"{archive} has an unsafe member path: {m.name}")
        if len(tops) != 1:
            raise BundleError(f"{archive} does not hold one top-level directory")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:  # Python < 3.12 without the backported filter; paths checked above
            tar.extractall(into)
    return into / tops.pop()


# --- the build ---------------------------------------------------------------

# The process's controlling terminal, when the command line (main) found one
# that stderr is not: pip captures a build's output and shows it only with -v
# or after a failure, but the build runs on pip's terminal, so the lines a
# user waiting on a oneDNN build needs (start, progress, end) go there too.
_terminal: IO[str] | None = None


def open_terminal() -> IO[str] | None:
    """``/dev/tty`` opened for writing when stderr is not a terminal; None
    when stderr is one (it shows everything already) or the process has no
    controlling terminal (ENXIO: CI, cron, a setsid child)."""
    if sys.stderr.isatty():
        return None
    try:
        return open("/dev/tty", "w", encoding="utf-8", errors="replace")
    except OSError:
        return None


def log(message: str, terminal: bool = False) -> None:
    """One line on stderr; with ``terminal``, on the controlling terminal too."""
    line = f"-- oneDNN bundle: {message}"
    print(line, file=sys.stderr, flush=True)
    if terminal and _terminal is not None:
        try:
            _terminal.write(line + "\n")
            _terminal.flush()
        except OSError:
            pass


_NINJA_PROGRESS = re.compile(rb"^\[(\d+)/(\d+)\]")


def progress_line(done: int, total: int, elapsed_s: float) -> str:
    """``[n/N] p%, M min so far, about L min left`` (left: the time so far
    spread over the steps done, applied to the steps to go)."""
    line = f"[{done}/{total}] {100.0 * done / total:.0f}%, {elapsed_s / 60:.0f} min so far"
    if 0 < done < total:
        line += f", about {elapsed_s / done * (total - done) / 60:.0f} min left"
    return line


def run_step(name: str, command: Sequence[str], logfile: Path, progress: bool = False) -> None:
    """Runs one step with its output appended to ``logfile``; with
    ``progress``, echoes Ninja's ``[n/N]`` every 2 % or 60 s, with the time
    so far and an estimate of the time left."""
    with logfile.open("ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        shown_percent, shown_at, started = -100.0, 0.0, time.monotonic()
        for line in proc.stdout:
            out.write(line)
            match = _NINJA_PROGRESS.match(line) if progress else None
            if match:
                done, total = int(match.group(1)), int(match.group(2))
                percent = 100.0 * done / total
                if percent - shown_percent >= 2 or time.monotonic() - shown_at >= 60 or done == total:
                    log(progress_line(done, total, time.monotonic() - started), terminal=True)
                    shown_percent, shown_at = percent, time.monotonic()
        code = proc.wait()
    if code != 0:
        raise BundleError(f"step '{name}' failed (exit {code}); its output is in {logfile}")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One build per cache entry at a time, across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise BundleError(f"'{name}' is needed to build oneDNN and was not found on PATH")
    return found


def build(spec: BuildSpec, source: Path, entry: Path) -> Path:
    """Configures, builds and installs oneDNN from ``source`` into
    ``entry/install``; the build tree is kept on failure (Ninja resumes it)
    and removed on success."""
    build_dir, prefix, logfile = entry / "build", entry / "install", entry / "build.log"
    if prefix.exists():
        shutil.rmtree(prefix)
    entry.mkdir(parents=True, exist_ok=True)
    logfile.write_text(f"oneDNN {spec.version} bundled build\n{json.dumps(dataclasses.asdict(spec), indent=1)}\n")
    compiler_path = spec.compiler.rsplit(" ", 1)[0]
    configure = [tool("cmake"), "-G", "Ninja", "-S", str(source), "-B", str(build_dir),
                 f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DCMAKE_CXX_COMPILER={compiler_path}",
                 *spec.options]
    ccache = shutil.which("ccache")
    if ccache:
        configure += [f"-DCMAKE_C_COMPILER_LAUNCHER={ccache}", f"-DCMAKE_CXX_COMPILER_LAUNCHER={ccache}"]
    tool("ninja")
    log(f"building oneDNN {spec.version} for the OpenCL GPU runtime from {source}: "
        f"{USUAL_DURATION} the first time, then reused from {entry}", terminal=True)
    log(f"full output: {logfile}", terminal=True)
    started = time.monotonic()
    run_step("configure", configure, logfile)
    run_step("build", [tool("cmake"), "--build", str(build_dir)], logfile, progress=True)
    run_step("install", [tool("cmake"), "--install", str(build_dir)], logfile)
    minutes = (time.monotonic() - started) / 60
    stamp = dict(dataclasses.asdict(spec), source=str(source), minutes=round(minutes, 1))
    (prefix / COMPLETE_STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    shutil.rmtree(build_dir, ignore_errors=True)
    log(f"done in {minutes:.0f} minutes; installed in {prefix}", terminal=True)
    return prefix


def ensure(compiler: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The install prefix of a bundled oneDNN, built first when not cached."""
    root = cache_root(environ)
    source_dir = environ.get(SOURCE_ENV)
    source = Path(source_dir).expanduser().resolve() if source_dir else None
    version = source_version(source) if source else VERSION
    spec = make_spec(compiler, version, extra_options(environ))
    prefix = cached_prefix(spec, root)
    if prefix:
        log(f"using the cached build {prefix}")
        return prefix
    entry = spec.entry(root)
    with locked(root / f"{spec.key}.lock"):
        prefix = cached_prefix(spec, root)  # another process may have built it meanwhile
        if prefix:
            return prefix
        if source is None:
            archive = download_archive(URL, SHA256, root / "downloads" / f"oneDNN-{VERSION}.tar.gz")
            source = extract_archive(archive, entry / "src")
        return build(spec, source, entry)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["status", "ensure"])
    parser.add_argument("--compiler", default=os.environ.get("CXX", "c++"),
                        help="C++ compiler (part of the cache key)")
    parser.add_argument("--prefix-file", type=Path,
                        help="write the install prefix to this file")
    args = parser.parse_args(argv)
    global _terminal
    _terminal = open_terminal() if args.command == "ensure" else None
    try:
        if args.command == "status":
            source_dir = os.environ.get(SOURCE_ENV)
            version = source_version(Path(source_dir).expanduser()) if source_dir else VERSION
            spec = make_spec(args.compiler, version, extra_options())
            prefix = cached_prefix(spec, cache_root())
            print(prefix if prefix else f"not built: {spec.entry(cache_root())} "
                  f"(a build takes {USUAL_DURATION})")
            return 0 if prefix else 1
        prefix = ensure(args.compiler)
    except BundleError as exc:
        print(f"oneDNN bundle: error: {exc}", file=sys.stderr)
        return 2
    if args.prefix_file:
        args.prefix_file.write_text(str(prefix))
    print(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
