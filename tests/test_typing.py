"""The generated type stubs agree with the package, the examples and the
tests (mypy)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.timeout(600)
def test_mypy_accepts_examples_package_and_tests():
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "examples", "python/dnnl_ocl_interop", "tests"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
