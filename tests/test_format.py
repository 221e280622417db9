"""The C++ sources follow .clang-format: clang-format (the version pinned in
pyproject.toml's test extra, since its output changes between releases)
finds nothing to change in any file of cpp/."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pinned_version():
    match = re.search(r'"clang-format==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert match, "pyproject.toml's test extra pins no clang-format"
    return match.group(1)


def clang_format():
    """The clang-format of this Python's environment (pip's wheel)."""
    script = Path(sys.executable).with_name("clang-format")
    assert script.exists(), f"clang-format is missing: pip install -e '.[test]' ({script})"
    return str(script)


def sources():
    return sorted(p for p in (ROOT / "cpp").rglob("*") if p.suffix in (".cpp", ".hpp"))


@pytest.mark.timeout(300)
def test_clang_format_is_the_pinned_one():
    out = subprocess.run([clang_format(), "--version"], capture_output=True, text=True, timeout=60)
    assert f"version {pinned_version()}" in out.stdout, out.stdout


@pytest.mark.timeout(300)
def test_every_cpp_file_is_formatted():
    files = sources()
    assert len(files) > 40
    out = subprocess.run([clang_format(), "--dry-run", "--Werror", "--style=file", *map(str, files)],
                         capture_output=True, text=True, timeout=280, cwd=ROOT)
    unformatted = sorted({line.split(":")[0] for line in out.stderr.splitlines() if ": error:" in line})
    assert out.returncode == 0 and not unformatted, (
        f"not formatted as .clang-format says (clang-format -i FILE): {unformatted}\n{out.stderr[-2000:]}")


@pytest.mark.timeout(300)
def test_an_unformatted_file_is_found(tmp_path):
    (tmp_path / ".clang-format").write_text((ROOT / ".clang-format").read_text())
    bad = tmp_path / "bad.cpp"
    bad.write_text("int  f( int x ){return x;}\n")
    out = subprocess.run([clang_format(), "--dry-run", "--Werror", "--style=file", str(bad)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode != 0 and "bad.cpp" in out.stderr
