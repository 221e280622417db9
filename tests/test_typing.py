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


FLAG_USES = '''
from typing_extensions import assert_type

import dnnl_ocl_interop as dnnl

assert_type(dnnl.stream.flags.in_order | dnnl.stream.flags.profiling, dnnl.stream.flags)
assert_type(dnnl.normalization_flags.use_scale & dnnl.normalization_flags.use_shift, dnnl.normalization_flags)
assert_type(~dnnl.rnn_flags.undef, dnnl.rnn_flags)
assert_type(dnnl.graph.graph_dump_mode.graph ^ dnnl.graph.graph_dump_mode.subgraph, dnnl.graph.graph_dump_mode)
'''


@pytest.mark.timeout(600)
def test_flag_combinations_keep_their_type(tmp_path):
    """Flags combined with | & ^ ~ are flags of their enum to a type checker
    (enum.Flag's own methods, not the untyped copies pybind11-stubgen makes
    of them)."""
    (tmp_path / "flag_uses.py").write_text(FLAG_USES)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "flag_uses.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, MYPYPATH=os.path.join(ROOT, "python")))
    assert result.returncode == 0, result.stdout + result.stderr
