"""The programs the documentation shows run as a reader copies them: the
README's example, and docs/graph.md's blocks, which are one program, each
in a fresh process (which chooses its device as a reader's would:
ensure_device() comes first in each)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def python_blocks(path):
    return _BLOCK.findall(path.read_text())


# document: which of its Python blocks make its program (joined in order)
PROGRAMS = {"README.md": slice(0, 1), "docs/graph.md": slice(None)}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("document", list(PROGRAMS))
def test_the_documents_program_runs(document, tmp_path):
    blocks = python_blocks(ROOT / document)[PROGRAMS[document]]
    assert blocks, f"{document} has no Python block"
    program = "\n".join(blocks)
    run = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True,
                         timeout=540)
    assert run.returncode == 0, f"{document}'s program failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"


def test_the_readme_example_computes_what_it_says():
    """Its last line prints max(x, 0) of the six values it made."""
    import numpy as np

    block = python_blocks(ROOT / "README.md")[0]
    assert "print(y.get())" in block and "np.linspace(-1, 1, 6" in block
    run = subprocess.run([sys.executable, "-c", block.replace("print(y.get())", "print(y.get().tolist())")],
                         capture_output=True, text=True, timeout=540)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.array(eval(run.stdout.strip().splitlines()[-1]))
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(got, np.maximum(x, 0))
