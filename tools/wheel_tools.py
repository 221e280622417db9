"""Repairs a wheel of this package into a manylinux wheel and checks it.

    python3 tools/wheel_tools.py repair WHEEL -w DIR      # auditwheel repair, then the licences
    python3 tools/wheel_tools.py check WHEEL              # tag, grafted libraries and their licences
    python3 tools/wheel_tools.py ldd SITE_PACKAGES --plat TAG

``repair`` runs ``auditwheel repair`` (the most compatible tag the symbols
allow), which grafts every library outside the manylinux policy (the OpenCL
ICD loader, ``libOpenCL.so.1``) into ``dnnl_ocl_interop.libs/`` under a
hashed name, as pyopencl's wheels carry theirs. auditwheel copies no
licences: this adds each grafted library's licence under
``dnnl_ocl_interop/licenses/<project>/`` (and to RECORD). ``check`` asks
``auditwheel show`` for the tag and lists what is grafted, failing unless
the tag is manylinux and every grafted library and the bundled oneDNN have
their licence in the wheel. ``ldd`` runs ``ldd`` on every shared library of
the installed package and fails unless each library it needs is either in
the manylinux policy of TAG (auditwheel's own list) or a file inside the
installed package. tools/check_wheel.sh runs all three.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Sequence

PACKAGE = "dnnl_ocl_interop"
LIBS_DIR = f"{PACKAGE}.libs"
LICENSES_DIR = f"{PACKAGE}/licenses"

# Where the licence of each library auditwheel may graft comes from, by the
# name before auditwheel's hash: (project, environment variable naming the
# file, default file). The default is Debian's copy (ocl-icd 2.3.1,
# BSD-2-Clause, whose clause 2 asks binary distributions to reproduce it); a
# manylinux image that builds ocl-icd from source names its COPYING instead.
GRAFTED_LICENCES = {
    "libOpenCL": ("ocl-icd", "OCL_ICD_LICENSE", "/usr/share/doc/ocl-icd-libopencl1/copyright"),
}
# Libraries the wheel carries by design (not grafted), and their licences.
BUNDLED_LICENCES = {"libdnnl": "oneDNN"}

# The dynamic loader and the kernel's vDSO are in every process: no policy lists them.
_ALWAYS_THERE = re.compile(r"^(linux-vdso\.so\.\d+|ld-linux[-\w.]*\.so\.\d+)$")


def fail(message: str) -> None:
    print(f"wheel check: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def grafted_name(filename: str) -> str:
    """``libOpenCL-5519dec5.so.1.0.0`` -> ``libOpenCL`` (auditwheel's rename)."""
    return re.sub(r"-[0-9a-f]{8}\.so.*$", "", filename)


def wheel_members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def record_row(arcname: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [arcname, f"sha256={digest}", str(len(data))]


def add_to_wheel(wheel: Path, files: dict[str, bytes]) -> None:
    """Adds ``files`` (archive name -> content) to ``wheel`` in place, with
    their rows in RECORD."""
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
                out.writestr(name, data)
            out.writestr(record, text.getvalue())
    os.replace(tmp, wheel)


def licence_files_for(grafted: Sequence[str]) -> dict[str, bytes]:
    """The licence file of each grafted library, as archive name -> content."""
    files: dict[str, bytes] = {}
    for filename in grafted:
        name = grafted_name(filename)
        if name not in GRAFTED_LICENCES:
            fail(f"auditwheel grafted {filename}, whose licence this script does not know: "
                 f"add it to GRAFTED_LICENCES in tools/wheel_tools.py")
        project, variable, default = GRAFTED_LICENCES[name]
        source = Path(os.environ.get(variable) or default)
        if not source.is_file():
            fail(f"the licence of {filename} ({project}) is not at {source}: set {variable}")
        files[f"{LICENSES_DIR}/{project}/{source.name}"] = source.read_bytes()
    return files


def auditwheel(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("auditwheel")
    command = [exe] if exe else [sys.executable, "-m", "auditwheel"]
    return subprocess.run(command + list(args), capture_output=True, text=True)


def repair(wheel: Path, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    before = set(out_dir.glob("*.whl"))
    result = auditwheel("repair", "-w", str(out_dir), str(wheel))
    print(result.stdout + result.stderr, end="", file=sys.stderr)
    if result.returncode != 0:
        fail(f"auditwheel repair exited {result.returncode}")
    made = sorted(set(out_dir.glob("*.whl")) - before)
    if len(made) != 1:
        fail(f"auditwheel repair made {len(made)} wheels in {out_dir}")
    repaired = made[0]
    grafted = [Path(n).name for n in wheel_members(repaired) if n.startswith(f"{LIBS_DIR}/")]
    add_to_wheel(repaired, licence_files_for(grafted))
    print(f"licences added for {', '.join(grafted) or 'nothing grafted'}", file=sys.stderr)
    return repaired


def check(wheel: Path) -> str:
    """The wheel's manylinux tag, after checking tag, grafted libraries and licences."""
    result = auditwheel("show", "--json", str(wheel))
    if result.returncode != 0:
        fail(f"auditwheel show exited {result.returncode}: {result.stderr}")
    report = json.loads(result.stdout)
    human = auditwheel("show", str(wheel))
    print(human.stdout, end="")
    tag = report["overall_tag"]
    if not tag.startswith("manylinux_"):
        fail(f"auditwheel show: the wheel is consistent only with {tag}")
    if tag not in wheel.name:
        fail(f"{wheel.name} is not tagged {tag}")
    members = wheel_members(wheel)
    grafted = [Path(n).name for n in members if n.startswith(f"{LIBS_DIR}/")]
    licences = [n for n in members if n.startswith(f"{LICENSES_DIR}/")]
    expected = set(licence_files_for(grafted))
    for filename in (Path(n).name for n in members if n.startswith(f"{PACKAGE}/") and ".so" in n):
        base = filename.split(".so")[0]
        if base in BUNDLED_LICENCES:
            expected.add(f"{LICENSES_DIR}/{BUNDLED_LICENCES[base]}/LICENSE")
    missing = sorted(expected - set(licences))
    print(f"tag: {tag}")
    print(f"grafted: {', '.join(grafted) or 'nothing'}")
    print(f"licences: {', '.join(licences)}")
    if missing:
        fail(f"licences missing from {wheel.name}: {missing}")
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
